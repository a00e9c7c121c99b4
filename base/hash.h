/*
 * hash: 64-bit hashing of byte strings and integers for the interning tables (not for
 * untrusted-input DoS resistance, only for distribution).
 *
 * hash_bytes() is FNV-1a with a final avalanche, one byte at a time; its values are stable
 * (the SVG writer derives colours from them), so it must not change. hash_mem() reads 8 bytes
 * at a time, several times faster on long keys; use it for tables whose layout nothing outside
 * them depends on: its values may change between versions.
 */
#ifndef HWSPY_BASE_HASH_H
#define HWSPY_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);
uint64_t hash_mem(const void *data, size_t len, uint64_t seed);
uint64_t hash_u64(uint64_t x);

#endif
