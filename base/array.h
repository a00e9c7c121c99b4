/*
 * array: the one way an array of fixed-size elements grows (after git's ALLOC_GROW).
 *
 *   if (array_grow((void **) &v, &cap, n + 1, sizeof(*v), 64) < 0)
 *           return -ENOMEM;
 *
 * array_grow() makes room for at least need elements in *p, whose capacity is *cap elements:
 * nothing where there is room already; else the capacity doubles (from first where it was 0)
 * until need fits, and *p is reallocated, the new part zeroed. 0, or -ENOMEM (also when the
 * size in bytes would overflow): *p and *cap are then unchanged, the elements still there.
 *
 * array_upper() searches n elements sorted by a uint64_t key at key_off in each (a symbol's
 * start, a range's low end): the index of the first whose key is above key, n where none is;
 * the element before it, if any, is the last whose key is at or below key.
 */
#ifndef HWSPY_BASE_ARRAY_H
#define HWSPY_BASE_ARRAY_H

#include <stddef.h>
#include <stdint.h>

int array_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first);
size_t array_upper(const void *base, size_t n, size_t elem, size_t key_off, uint64_t key);

#endif
