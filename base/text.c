/* text: text cut to a width (text.h). */
#include <errno.h>
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
