/*
 * clock: the one monotonic clock every stage reads (CLOCK_MONOTONIC, the clock perf samples
 * are stamped with when attr.use_clockid asks for it), in nanoseconds. Cannot fail on Linux.
 */
#ifndef HWSPY_BASE_CLOCK_H
#define HWSPY_BASE_CLOCK_H

#include <stdint.h>

uint64_t clock_now_ns(void);
/* CLOCK_MONOTONIC_COARSE: a tick's precision (1-4 ms), a fraction of the cost, for ages and
 * timeouts checked on every sample. */
uint64_t clock_coarse_ns(void);

#endif
