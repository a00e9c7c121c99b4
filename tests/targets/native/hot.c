/*
 * hot.c: a native target for the symbolizer's live test: a known chain of noinline functions
 * (main -> outer -> middle -> leaf) spinning for argv[1] seconds (default 2), so that samples
 * of it unwind to main through known frames.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

uint64_t hot_leaf(uint64_t x);
uint64_t hot_middle(uint64_t x);
uint64_t hot_outer(uint64_t x);

static volatile uint64_t sink;

NOINLINE uint64_t hot_leaf(uint64_t x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	__asm__ volatile("" ::: "memory");
	return x;
}

NOINLINE uint64_t hot_middle(uint64_t x)
{
	uint64_t r = hot_leaf(x) ^ hot_leaf(x + 1);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

NOINLINE uint64_t hot_outer(uint64_t x)
{
	uint64_t r = hot_middle(x) + hot_middle(x * 3);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += hot_outer(sink);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
