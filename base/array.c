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
