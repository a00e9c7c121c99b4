/* A live check: perf_event_open (cpu-clock, REGS_USER + 16 KiB STACK_USER) on a child process,
 * every sample unwound with both unwinders and symbolized. Prints, per target, us per unwind,
 * frames found, how many samples reach main / the libc start frames, and the warm cost of
 * unwind + symbolize per sample. Targets: tests/targets/native/hot.c (argv[1]), Debian's
 * python3.11 and pyenv's 3.11 running hashlib (skipped where absent). */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "symbolizer/symbolizer.h"

#define RING_PAGES 512
#define STACK_BYTES 16384
#define MAX_SAMPLES 4000
#define MAX_IPS 128

static const char *hot_path;

struct sample {
	uint64_t regs[20];
	unsigned char *stack;
	size_t size;
};

struct result {
	size_t samples;
	double us_unwind[2];
	double frames[2];
	size_t reach_main[2], reach_start[2];
	size_t same;
	double us_unwind_warm[2];
	double us_sample_warm;
	double hit_rate;
	size_t chain_ok;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void ring_copy(const unsigned char *data, size_t mask, uint64_t pos, void *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)dst)[i] = data[(pos + i) & mask];
}

/* Drains the ring into samples[]; returns the new count. */
static size_t drain(struct perf_event_mmap_page *meta, struct sample *samples, size_t n)
{
	const unsigned char *data = (const unsigned char *)meta + meta->data_offset;
	size_t mask = meta->data_size - 1;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE), tail = meta->data_tail;
	static unsigned char rec[65536];   /* h.size is 16 bits */

	while (tail < head) {
		struct perf_event_header h;

		ring_copy(data, mask, tail, &h, sizeof(h));
		if (h.size < sizeof(h))
			break;
		ring_copy(data, mask, tail, rec, h.size);
		tail += h.size;
		if (h.type == PERF_RECORD_SAMPLE && n < MAX_SAMPLES) {
			const unsigned char *p = rec + sizeof(h);
			uint64_t abi, size, dyn;
			struct sample *s = &samples[n];

			p += 8 + 8;   /* ip, pid/tid */
			memcpy(&abi, p, 8);
			p += 8;
			if (abi == 0)
				continue;
			memcpy(s->regs, p, sizeof(s->regs));
			p += sizeof(s->regs);
			memcpy(&size, p, 8);
			p += 8;
			if (size == 0 || size > STACK_BYTES)
				continue;
			memcpy(&dyn, p + size, 8);
			if (dyn > size)
				dyn = size;
			s->stack = malloc(dyn ? dyn : 1);
			memcpy(s->stack, p, dyn);
			s->size = dyn;
			if (s->size >= 64)
				n++;
			else
				free(s->stack);
		}
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

static bool is_start(const char *name)
{
	return strcmp(name, "__libc_start_main") == 0 || strcmp(name, "__libc_start_call_main") == 0 ||
	       strcmp(name, "_start") == 0;
}

/* Runs argv under sampling for `seconds`, symbolizes; false if perf events are refused. */
static bool run_target(char *const argv[], double seconds, const char *const *chain,
		       struct result *res)
{
	struct perf_event_attr a;
	struct perf_event_mmap_page *meta;
	struct sample *samples = calloc(MAX_SAMPLES, sizeof(*samples));
	struct symbolizer *sym = NULL;
	size_t n = 0, mmap_size = (size_t)(RING_PAGES + 1) * 4096;
	int go[2], fd, status;
	pid_t child;
	double t0;
	char c = 0;

	memset(res, 0, sizeof(*res));
	assert_non_null(samples);
	assert_int_equal(pipe(go), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(go[0]);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.freq = 1;
	a.sample_freq = 999;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = REGS_USER_MASK;
	a.sample_stack_user = STACK_BYTES;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.wakeup_events = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, child, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		print_message("# skip: perf_event_open: %s\n", strerror(errno));
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		free(samples);
		return false;
	}
	meta = mmap(NULL, mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(meta != MAP_FAILED);
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	t0 = now_us();
	while (now_us() - t0 < seconds * 1e6) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		poll(&p, 1, 50);
		n = drain(meta, samples, n);
	}
	/* the target keeps running (it was started for longer): its mappings are there to read */
	assert_int_equal(symbolizer_new(child, &sym), 0);
	close(fd);
	res->samples = n;

	for (int w = 0; w < 2; w++) {
		double t = 0, frames = 0;

		symbolizer_set_unwinder(sym, w ? UNWIND_LIBUNWIND : UNWIND_LIBDW);
		for (size_t i = 0; i < n; i++) {
			uint64_t ips[MAX_IPS];
			size_t k = 0;
			bool main_seen = false, start_seen = false;
			const char *names[MAX_IPS];
			double t1 = now_us();

			assert_int_equal(symbolizer_unwind(sym, samples[i].regs, 20, samples[i].stack,
							   samples[i].size, ips, MAX_IPS, &k), 0);
			t += now_us() - t1;
			frames += (double)k;
			for (size_t j = 0; j < k; j++) {
				struct native_frame f[16];
				size_t nf = 0;

				names[j] = "?";
				if (symbolizer_lookup(sym, ips[j], j > 0, f, 16, &nf) < 0 || nf == 0 ||
				    !f[nf - 1].name)
					continue;
				names[j] = f[nf - 1].name;
				main_seen |= strcmp(names[j], "main") == 0;
				start_seen |= is_start(names[j]);
			}
			res->reach_main[w] += main_seen;
			res->reach_start[w] += start_seen;
			if (w == 0 && chain) {
				/* the chain, outermost last, somewhere in the stack */
				for (size_t j = 0; j < k; j++) {
					size_t m = 0;

					while (chain[m] && j + m < k && strcmp(names[j + m], chain[m]) == 0)
						m++;
					if (!chain[m]) {
						res->chain_ok++;
						break;
					}
				}
			}
		}
		res->us_unwind[w] = n ? t / (double)n : 0;
		res->frames[w] = n ? frames / (double)n : 0;
	}
	/* warm: both unwinders and the lookups have seen every sample once */
	for (int w = 0; w < 2; w++) {
		double t1 = now_us();

		symbolizer_set_unwinder(sym, w ? UNWIND_LIBUNWIND : UNWIND_LIBDW);
		for (size_t i = 0; i < n; i++) {
			uint64_t ips[MAX_IPS];
			size_t k = 0;

			symbolizer_unwind(sym, samples[i].regs, 20, samples[i].stack, samples[i].size, ips,
					  MAX_IPS, &k);
		}
		res->us_unwind_warm[w] = n ? (now_us() - t1) / (double)n : 0;
	}
	symbolizer_set_unwinder(sym, UNWIND_LIBDW);
	{
		double t1 = now_us();

		for (size_t i = 0; i < n; i++) {
			uint64_t ips[MAX_IPS];
			size_t k = 0;

			symbolizer_unwind(sym, samples[i].regs, 20, samples[i].stack, samples[i].size, ips,
					  MAX_IPS, &k);
			for (size_t j = 0; j < k; j++) {
				struct native_frame f[16];
				size_t nf;

				symbolizer_lookup(sym, ips[j], j > 0, f, 16, &nf);
			}
		}
		res->us_sample_warm = n ? (now_us() - t1) / (double)n : 0;
	}
	res->hit_rate = symbolizer_stats(sym)->lookups ?
		100.0 * symbolizer_stats(sym)->cache_hits / symbolizer_stats(sym)->lookups : 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t x[MAX_IPS], y[MAX_IPS];
		size_t kx = 0, ky = 0;

		symbolizer_set_unwinder(sym, UNWIND_LIBDW);
		symbolizer_unwind(sym, samples[i].regs, 20, samples[i].stack, samples[i].size, x, MAX_IPS, &kx);
		symbolizer_set_unwinder(sym, UNWIND_LIBUNWIND);
		symbolizer_unwind(sym, samples[i].regs, 20, samples[i].stack, samples[i].size, y, MAX_IPS, &ky);
		res->same += kx == ky && memcmp(x, y, kx * sizeof(uint64_t)) == 0;
	}
	symbolizer_free(sym);
	munmap(meta, mmap_size);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	for (size_t i = 0; i < n; i++)
		free(samples[i].stack);
	free(samples);
	return true;
}

static void report(const char *what, const struct result *r)
{
	print_message("# %s: %zu samples; both unwinders agree on %zu\n", what, r->samples, r->same);
	for (int w = 0; w < 2; w++)
		print_message("#   %-9s %6.2f us/unwind cold, %6.2f warm, %5.1f frames, main %zu (%.0f%%), libc start %zu (%.0f%%)\n",
			      w ? "libunwind" : "libdw", r->us_unwind[w], r->us_unwind_warm[w], r->frames[w], r->reach_main[w],
			      r->samples ? 100.0 * r->reach_main[w] / r->samples : 0, r->reach_start[w],
			      r->samples ? 100.0 * r->reach_start[w] / r->samples : 0);
	print_message("#   warm unwind (libdw) + symbolize: %.2f us/sample (address cache hits %.1f%%)\n",
		      r->us_sample_warm, r->hit_rate);
}

static void test_native(void **state)
{
	char *argv[] = { (char *)hot_path, "4", NULL };
	static const char *const chain[] = { "hot_leaf", "hot_middle", "hot_outer", "main", NULL };
	struct result r;

	(void) state;
	if (!hot_path || access(hot_path, X_OK) != 0) {
		print_message("# skip: no target program given\n");
		skip();
	}
	if (!run_target(argv, 1.5, chain, &r))
		skip();
	report("native hot.c", &r);
	assert_true(r.samples > 100);
	for (int w = 0; w < 2; w++) {
		assert_true(r.reach_main[w] * 100 >= r.samples * 95);
		assert_true(r.reach_start[w] * 100 >= r.samples * 95);
	}
	assert_true(r.chain_ok * 100 >= r.samples * 80);
}

static void python_target(const char *python, const char *what)
{
	char *argv[] = { (char *)python, "-c",
			 "import hashlib, time\n"
			 "t = time.time()\n"
			 "while time.time() - t < 4:\n"
			 "    hashlib.sha256(b'x' * 100000).digest()\n"
			 "    sorted(range(20000), key=lambda v: -v)\n",
			 NULL };
	struct result r;

	if (access(python, X_OK) != 0) {
		print_message("# skip: no %s\n", python);
		skip();
	}
	if (!run_target(argv, 1.5, NULL, &r))
		skip();
	report(what, &r);
	assert_true(r.samples > 100);
	for (int w = 0; w < 2; w++)
		assert_true(r.reach_start[w] * 100 >= r.samples * 90);
}

static void test_debian_python(void **state)
{
	(void) state;
	python_target("/usr/bin/python3.11", "Debian python3.11 (stripped, static libpython)");
}

static void test_pyenv_python(void **state)
{
	(void) state;
	python_target("/root/.pyenv/versions/3.11.7/bin/python3.11", "pyenv python3.11.7 (libpython + DWARF)");
}

static void test_pyenv_python312(void **state)
{
	(void) state;
	python_target("/root/.pyenv/versions/3.12.1/bin/python3.12", "pyenv python3.12.1 (libpython + DWARF)");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native),
		cmocka_unit_test(test_debian_python),
		cmocka_unit_test(test_pyenv_python),
		cmocka_unit_test(test_pyenv_python312),
	};

	hot_path = argc > 1 ? argv[1] : NULL;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
