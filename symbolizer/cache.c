/*
 * cache.c: a cache of lookups (struct addr_cache): two 64-bit keys -> a copy of the frames found,
 * open addressing with linear probing. It grows by doubling from SYM_CACHE_MIN slots and keeps
 * every key (the code addresses of a target are finite) up to SYM_CACHE_MAX slots, then starts
 * over. The symbolizer keeps two (by address; by build-id and file address).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "symbolizer/symbolizer_internal.h"

int cache_init(struct addr_cache *c)
{
	c->slots = calloc(SYM_CACHE_MIN, sizeof(*c->slots));
	c->size = c->slots ? SYM_CACHE_MIN : 0;
	c->used = 0;
	return c->slots ? 0 : -ENOMEM;
}

void cache_flush(struct addr_cache *c)
{
	for (size_t i = 0; i < c->size; i++)
		free(c->slots[i].frames);
	if (c->slots)
		memset(c->slots, 0, c->size * sizeof(*c->slots));
	c->used = 0;
}

void cache_release(struct addr_cache *c)
{
	cache_flush(c);
	free(c->slots);
	c->slots = NULL;
	c->size = 0;
}

static size_t cache_slot(uint64_t k1, uint64_t k2, size_t mask)
{
	return hash_u64(k1 ^ hash_u64(k2)) & mask;
}

const struct cache_entry *cache_find(const struct addr_cache *c, uint64_t k1, uint64_t k2)
{
	size_t mask = c->size - 1, j;

	if (c->size == 0)
		return NULL;
	for (j = cache_slot(k1, k2, mask); c->slots[j].k1 != 0; j = (j + 1) & mask)
		if (c->slots[j].k1 == k1 && c->slots[j].k2 == k2)
			return &c->slots[j];
	return NULL;
}

static int cache_grow(struct addr_cache *c)
{
	size_t n = c->size * 2, mask = n - 1;
	struct cache_entry *v = calloc(n, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < c->size; i++) {
		size_t j;

		if (c->slots[i].k1 == 0)
			continue;
		for (j = cache_slot(c->slots[i].k1, c->slots[i].k2, mask); v[j].k1 != 0;
		     j = (j + 1) & mask)
			;
		v[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = v;
	c->size = n;
	return 0;
}

void cache_store(struct addr_cache *c, uint64_t k1, uint64_t k2, const struct native_frame *f,
		 size_t n)
{
	struct native_frame *copy;
	size_t mask, j;

	if (c->size == 0)
		return;
	if ((c->used + 1) * 2 > c->size && (c->size >= SYM_CACHE_MAX || cache_grow(c) < 0))
		cache_flush(c);
	copy = malloc(n * sizeof(*copy));
	if (!copy)
		return;
	memcpy(copy, f, n * sizeof(*copy));
	mask = c->size - 1;
	for (j = cache_slot(k1, k2, mask); c->slots[j].k1 != 0; j = (j + 1) & mask)
		;
	c->slots[j] = (struct cache_entry) { k1, k2, (uint32_t) n, copy };
	c->used++;
}
