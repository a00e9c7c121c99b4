#include "base/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char buf_empty[1];

void buf_init(struct buf *b)
{
	b->data = buf_empty;
	b->len = 0;
	b->cap = 0;
}

void buf_release(struct buf *b)
{
	if (b->cap)
		free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = '\0';
}

int buf_reserve(struct buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX / 2 - b->len - 1)
		return -ENOMEM;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	p = b->cap ? realloc(b->data, cap) : malloc(cap);
	if (!p)
		return -ENOMEM;
	if (!b->cap)
		p[0] = '\0';
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
	int r = buf_reserve(b, len);

	if (r < 0)
		return r;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
	return buf_append(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list copy;
	int n, r;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0)
		return -EINVAL;
	r = buf_reserve(b, (size_t) n);
	if (r < 0)
		return r;
	vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
	b->len += (size_t) n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

char *buf_detach(struct buf *b)
{
	char *s = b->cap ? b->data : strdup("");

	buf_init(b);
	return s;
}
