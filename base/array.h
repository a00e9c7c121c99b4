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
 */
#ifndef HWSPY_BASE_ARRAY_H
#define HWSPY_BASE_ARRAY_H

#include <stddef.h>

int array_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first);

#endif
