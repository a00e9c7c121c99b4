/*
 * late.c: a shared library that tests/integration/test_native.py compiles with cc at run time
 * (liblate.so) and that tests/targets/native_work.py loads with ctypes only after hwspy has
 * attached: its functions must still come out with their names. late_spin(ms) burns about ms
 * milliseconds of CPU in late_inner, called through late_outer.
 */
#include <stdint.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

uint64_t late_inner(uint64_t x);
uint64_t late_outer(uint64_t x);
uint64_t late_spin(int ms);

static volatile uint64_t sink;

NOINLINE uint64_t late_inner(uint64_t x)
{
	for (int i = 0; i < 100000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

NOINLINE uint64_t late_outer(uint64_t x)
{
	uint64_t r = late_inner(x) + 1;

	__asm__ volatile("" ::: "memory");
	return r;
}

uint64_t late_spin(int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		sink += late_outer(sink);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return sink;
}
