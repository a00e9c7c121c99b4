/*
 * hash: 64-bit hashing of byte strings and integers for the interning tables (FNV-1a with a
 * final avalanche; not for untrusted-input DoS resistance, only for distribution).
 */
#ifndef HWSPY_BASE_HASH_H
#define HWSPY_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);
uint64_t hash_u64(uint64_t x);

#endif
