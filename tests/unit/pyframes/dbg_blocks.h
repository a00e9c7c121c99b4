/*
 * dbg_blocks.h: two real _Py_DebugOffsets blocks, for the tests of layout.c and the fuzzer
 * (tests/fuzz/). They are the initial _PyRuntime bytes of pyenv's 3.13.0 libpython3.13.so.1.0
 * and Debian's 3.14.10 python3.14 (read from the file's section holding _PyRuntime), from byte
 * 8 on (after the cookie "xdebugpy"). make_block() lays one out as PY_DEBUG_OFFSETS_MAX bytes.
 */
#ifndef HWSPY_TESTS_DBG_BLOCKS_H
#define HWSPY_TESTS_DBG_BLOCKS_H

#include <stdint.h>
#include <string.h>

#include "pyframes/pyframes_internal.h"

static const uint64_t dbg313_words[] = { /* from byte 8: version, free_threaded, sections */
	51183856, 0, 283320, 608, 632, 194968, 7272, 7264,
	7344, 7400, 7656, 7640, 7648, 16, 7752, 0,
	7768, 7760, 304, 0, 8, 16, 72, 152,
	160, 232, 32, 80, 8, 0, 56, 72,
	70, 208, 112, 120, 128, 136, 68, 52,
	96, 104, 200, 16, 8, 416, 24, 88,
	168, 32, 24, 16, 40, 24, 16, 48,
	32, 40, 24, 16, 32, 16, 24, 40,
	16, 32, 64, 32, 16, 40, 240, 200,
};
static const uint64_t dbg314_words[] = { /* from byte 8: version, free_threaded, sections */
	51251952, 0, 316616, 784, 808, 225864, 7280, 7272,
	7344, 7360, 7408, 7688, 7672, 7680, 16, 7784,
	0, 7800, 7792, 7992, 0, 832, 0, 8,
	16, 72, 152, 160, 232, 32, 88, 8,
	0, 56, 80, 74, 64, 0, 216, 112,
	120, 128, 136, 68, 52, 96, 104, 208,
	0, 16, 8, 416, 24, 88, 168, 40,
	32, 16, 40, 24, 16, 200, 24, 40,
	32, 48, 32, 40, 24, 16, 32, 16,
	24, 40, 16, 32, 64, 32, 16, 40,
	264, 192, 160, 24, 72, 67, 0, 8,
	24, 304, 8076, 0, 4, 512,
};

static inline size_t make_block(unsigned char *b, const uint64_t *words, size_t nwords)
{
	memset(b, 0, PY_DEBUG_OFFSETS_MAX);
	memcpy(b, "xdebugpy", 8);
	memcpy(b + 8, words, nwords * 8);
	return PY_DEBUG_OFFSETS_MAX;
}

#endif
