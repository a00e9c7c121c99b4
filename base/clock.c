#include <time.h>

#include "base/clock.h"

static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

uint64_t clock_now_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

uint64_t clock_coarse_ns(void)
{
	return read_ns(CLOCK_MONOTONIC_COARSE);
}
