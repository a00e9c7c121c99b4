/* text: text cut to a width, numbers for a message (text.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"

int text_cut(struct buf *out, const char *s, int room)
{
	size_t len = strlen(s), chars = 0, seen = 0, keep = 0;

	for (size_t i = 0; i < len; i++)
		chars += ((unsigned char) s[i] & 0xc0) != 0x80;
	if (room < 0 || chars <= (size_t) room)
		return buf_append(out, s, len);
	if (room < 2)
		return room ? buf_putc(out, '.') : 0;
	for (size_t i = 0; i < len; i++) {
		if (((unsigned char) s[i] & 0xc0) != 0x80 && seen++ == (size_t) room - 2)
			break;
		keep = i + 1;
	}
	if (buf_append(out, s, keep) < 0)
		return -ENOMEM;
	return buf_puts(out, "..");
}

char *text_grouped(char *buf, size_t size, uint64_t v)
{
	char d[24];
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long) v);
	size_t k = 0;

	for (int i = 0; i < n && k + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = d[i];
	}
	if (size)
		buf[k] = '\0';
	return buf;
}

char *text_size(char *buf, size_t size, uint64_t v)
{
	if (v < 1000)
		snprintf(buf, size, "%llu bytes", (unsigned long long) v);
	else if (v < 1000000)
		snprintf(buf, size, "%.1f kB", (double) v / 1e3);
	else if (v < 1000000000)
		snprintf(buf, size, "%.1f MB", (double) v / 1e6);
	else
		snprintf(buf, size, "%.1f GB", (double) v / 1e9);
	return buf;
}
