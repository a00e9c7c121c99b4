/*
 * jit.c: a native target that runs code from anonymous executable memory, as a JIT does, and
 * names it in /tmp/perf-PID.map (PID as getpid() gives it: 1 in a PID namespace of its own).
 * jit.c [SECONDS] copies jit_template() (a leaf with no references outside itself) into an
 * mmap'd region, writes "ADDR SIZE jit_spin" to the map, prints "ready" and calls the copy
 * until SECONDS (default 60) have passed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define JIT_BYTES 256

typedef uint64_t (*jit_fn)(uint64_t x, uint64_t n);

uint64_t jit_template(uint64_t x, uint64_t n);

__attribute__((noinline)) uint64_t jit_template(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + i;
	return x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 60.0;
	char path[64];
	void *code;
	FILE *f;
	jit_fn fn;
	time_t end = time(NULL) + (time_t) seconds;
	volatile uint64_t sink = 1;

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, (const void *) (uintptr_t) jit_template, JIT_BYTES);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0)
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int) getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %x jit_spin\n", (unsigned long) (uintptr_t) code, JIT_BYTES);
	fclose(f);
	printf("ready\n");
	fflush(stdout);
	memcpy(&fn, &code, sizeof(fn));
	while (time(NULL) < end)
		sink = fn(sink, 1000000);
	return 0;
}
