/*
 * strpool: interned strings. strpool_intern() returns the pool's one copy of a string, so
 * equal strings come back as the same pointer (compare pointers, hash pointers); copies live in
 * 64 KiB chunks until strpool_release(). An open-addressing set (FNV-1a, hash_bytes) finds
 * them. Not thread-safe; a pool belongs to its owner's object.
 */
#ifndef HWSPY_BASE_STRPOOL_H
#define HWSPY_BASE_STRPOOL_H

#include <stddef.h>

struct strpool {
	char **chunks;
	size_t n_chunks, cap_chunks, chunk_used;
	const char **slots;   /* open-addressing set of interned strings */
	size_t n_slots, n_used;
};

void strpool_init(struct strpool *p);
void strpool_release(struct strpool *p);
/* The pooled copy of s[0..len) (NUL-terminated; s needs no NUL), or NULL on ENOMEM. */
const char *strpool_intern(struct strpool *p, const char *s, size_t len);

/* The pooled copy of s[0..len) if it was interned, else NULL. */
const char *strpool_find(const struct strpool *p, const char *s, size_t len);

#endif
