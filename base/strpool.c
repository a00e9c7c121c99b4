/*
 * strpool: see strpool.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/strpool.h"

#define POOL_CHUNK (64u << 10)

void strpool_init(struct strpool *p)
{
	memset(p, 0, sizeof(*p));
}

void strpool_release(struct strpool *p)
{
	for (size_t i = 0; i < p->n_chunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}

static char *pool_alloc(struct strpool *p, size_t n)
{
	char *c;
	size_t size;

	if (p->n_chunks > 0 && n <= POOL_CHUNK - p->chunk_used && n < POOL_CHUNK / 4) {
		c = p->chunks[p->n_chunks - 1] + p->chunk_used;
		p->chunk_used += n;
		return c;
	}
	size = n < POOL_CHUNK / 4 ? POOL_CHUNK : n;
	c = malloc(size);
	if (!c)
		return NULL;
	if (array_grow((void **) &p->chunks, &p->cap_chunks, p->n_chunks + 1,
		       sizeof(*p->chunks), 16) < 0) {
		free(c);
		return NULL;
	}
	if (size == POOL_CHUNK || p->n_chunks == 0) {
		p->chunks[p->n_chunks++] = c;
		p->chunk_used = size == POOL_CHUNK ? n : size;
	} else {
		/* a big string gets its own chunk, kept below the current one */
		p->chunks[p->n_chunks] = p->chunks[p->n_chunks - 1];
		p->chunks[p->n_chunks - 1] = c;
		p->n_chunks++;
	}
	return c;
}

static int pool_grow(struct strpool *p)
{
	size_t n = p->n_slots ? p->n_slots * 2 : 1024;
	const char **slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_slots; i++) {
		const char *s = p->slots[i];
		size_t j;

		if (!s)
			continue;
		j = hash_bytes(s, strlen(s), 0) & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = s;
	}
	free(p->slots);
	p->slots = slots;
	p->n_slots = n;
	return 0;
}

/* The slot of s[0..len) in p's set: the string's, or the empty one where it would go. */
static size_t pool_slot(const struct strpool *p, const char *s, size_t len)
{
	size_t j = hash_bytes(s, len, 0) & (p->n_slots - 1);

	while (p->slots[j] && (strncmp(p->slots[j], s, len) != 0 || p->slots[j][len] != '\0'))
		j = (j + 1) & (p->n_slots - 1);
	return j;
}

const char *strpool_find(const struct strpool *p, const char *s, size_t len)
{
	return p->n_slots ? p->slots[pool_slot(p, s, len)] : NULL;
}

const char *strpool_intern(struct strpool *p, const char *s, size_t len)
{
	size_t j;
	char *c;

	if ((p->n_used + 1) * 2 > p->n_slots && pool_grow(p) < 0)
		return NULL;
	j = pool_slot(p, s, len);
	if (p->slots[j])
		return p->slots[j];
	c = pool_alloc(p, len + 1);
	if (!c)
		return NULL;
	memcpy(c, s, len);
	c[len] = '\0';
	p->slots[j] = c;
	p->n_used++;
	return c;
}

