/*
 * buf: a growable, always NUL-terminated byte buffer (after git's strbuf).
 *
 * struct buf is embedded: buf_init() / buf_release(). Appending functions return 0 or -ENOMEM;
 * on failure the buffer keeps its previous contents. data is never NULL after buf_init().
 */
#ifndef HWSPY_BASE_BUF_H
#define HWSPY_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

void buf_init(struct buf *b);
void buf_release(struct buf *b);
void buf_reset(struct buf *b);
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Hands the string to the caller (who frees it) and leaves b empty but usable. */
char *buf_detach(struct buf *b);

#endif
