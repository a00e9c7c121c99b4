/* utf8: the UTF-8 scanner shared by the writers. */
#include "output/utf8.h"

size_t utf8_len(const unsigned char *s, size_t n, size_t *ret_skip)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	*ret_skip = 1;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;      /* no UTF-16 surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;      /* nothing past U+10FFFF */
	for (i = 1; i < len && i < n; i++) {
		unsigned char c = s[i];
		if (i == 1 ? c < lo || c > hi : c < 0x80 || c > 0xbf)
			break;
	}
	if (i == len)
		return len;
	*ret_skip = i;
	return 0;
}
