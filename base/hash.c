#include "base/hash.h"

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
