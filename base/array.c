/* array: see array.h */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"

int array_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : (first ? first : 1);
	void *np;

	if (need <= *cap)
		return 0;
	if (elem == 0)
		return -EINVAL;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	memset((char *) np + *cap * elem, 0, (ncap - *cap) * elem);
	*p = np;
	*cap = ncap;
	return 0;
}

size_t array_upper(const void *base, size_t n, size_t elem, size_t key_off, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, (const char *) base + mid * elem + key_off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
