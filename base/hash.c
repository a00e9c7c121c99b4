#include "base/hash.h"

#include <string.h>

uint64_t hash_u64(uint64_t x)
{
	/* splitmix64 finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return hash_u64(h);
}

static uint64_t rotl(uint64_t x, unsigned k)
{
	return x << k | x >> (64 - k);
}

uint64_t hash_mem(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = hash_u64(seed ^ len), w;

	/* each word multiplied, rotated and multiplied into the state (a murmur-style round) */
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = rotl(h ^ rotl(w * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL, 27) * 5 +
		    0x52dce729;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h ^= rotl(w * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
	}
	return hash_u64(h);
}
