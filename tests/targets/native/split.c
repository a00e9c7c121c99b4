/*
 * split.c: a non-Python target for the --native integration tests (tests/integration/
 * test_native.py compiles it with cc at run time). main calls two noinline functions of
 * different cost, split_heavy (3 units of work per round) and split_light (1 unit), for argv[1]
 * seconds of CPU time (default 2), timing every call with the thread's CPU clock; at the end it
 * prints "heavy_ns light_ns" so that the test compares the profile with measured shares.
 * With argv[2] = "wait" it prints "ready" and waits for a line on stdin before it starts (the
 * test attaches first).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define UNIT 200000

uint64_t split_heavy(uint64_t x);
uint64_t split_light(uint64_t x);

static volatile uint64_t sink;

NOINLINE uint64_t split_heavy(uint64_t x)
{
	for (int i = 0; i < 3 * UNIT; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

NOINLINE uint64_t split_light(uint64_t x)
{
	for (int i = 0; i < UNIT; i++) {
		x = x * 2862933555777941757ULL + 3037000493ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x ^ 1;
}

static int64_t cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int64_t heavy = 0, light = 0, t0, t1, t2, end;
	char line[64];

	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			return 1;
	}
	end = cpu_ns() + (int64_t)(seconds * 1e9);
	do {
		t0 = cpu_ns();
		sink += split_heavy(sink);
		t1 = cpu_ns();
		sink += split_light(sink);
		t2 = cpu_ns();
		heavy += t1 - t0;
		light += t2 - t1;
	} while (t2 < end);
	printf("%lld %lld\n", (long long)heavy, (long long)light);
	return 0;
}
