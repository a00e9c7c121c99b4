/* Unwinding a snapshot of this very thread, taken inside a known chain of noinline functions,
 * with both unwinders; then what a lookup of every frame says. Prints us per unwind. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "symbolizer/symbolizer.h"
#include "snapshot.h"

#define NOINLINE __attribute__((noinline, noclone))

static NOINLINE int chain_c(struct snapshot *s)
{
	snapshot_regs(s->regs);
	snapshot_stack(s);
	__asm__ volatile("" ::: "memory");
	return (int)(s->size > 0);
}

static NOINLINE int chain_b(struct snapshot *s)
{
	int r = chain_c(s);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static NOINLINE int chain_a(struct snapshot *s)
{
	int r = chain_b(s);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Names of every frame (inline ones included), outermost last. */
static size_t names_of(struct symbolizer *sym, const uint64_t *ips, size_t n, const char **names,
		       size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < max; i++) {
		struct native_frame f[8];
		size_t nf = 0;

		if (symbolizer_lookup(sym, ips[i], i > 0, f, 8, &nf) < 0)
			continue;
		for (size_t j = 0; j < nf && k < max; j++)
			names[k++] = f[j].name ? f[j].name : "?";
	}
	return k;
}

static void check_chain(struct symbolizer *sym, enum symbolizer_unwinder which,
			const struct snapshot *s, const char *test_fn)
{
	uint64_t ips[128];
	const char *names[256];
	size_t n = 0, k, at = SIZE_MAX;
	bool main_found = false;

	symbolizer_set_unwinder(sym, which);
	assert_int_equal(symbolizer_unwind(sym, s->regs, 20, s->stack, s->size, ips, 128, &n), 0);
	assert_true(n >= 5);
	assert_int_equal(ips[0], s->regs[8]);
	k = names_of(sym, ips, n, names, 256);
	for (size_t i = 0; i + 3 < k && at == SIZE_MAX; i++)
		if (strcmp(names[i], "chain_c") == 0)
			at = i;
	if (at == SIZE_MAX || at + 3 >= k) {
		for (size_t i = 0; i < k; i++)
			print_message("# %zu %s\n", i, names[i]);
		fail_msg("chain_c not found (%s)", which == UNWIND_LIBDW ? "libdw" : "libunwind");
	}
	assert_string_equal(names[at + 1], "chain_b");
	assert_string_equal(names[at + 2], "chain_a");
	assert_string_equal(names[at + 3], test_fn);
	for (size_t i = at; i < k; i++)
		main_found |= strcmp(names[i], "main") == 0;
	assert_true(main_found);
}

static void test_own_stack(void **state)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	struct symbolizer *sym = NULL;

	(void) state;
	assert_non_null(s);
	assert_int_equal(chain_a(s), 3);
	assert_true(s->size > 256);
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	check_chain(sym, UNWIND_LIBDW, s, "test_own_stack");
	check_chain(sym, UNWIND_LIBUNWIND, s, "test_own_stack");
	assert_true(symbolizer_stats(sym)->unwinds == 2);
	/* the module set changes under an attached libdw state and a warm libunwind cache: a
	 * library not loaded yet (the ASan build links libstdc++) */
	{
		static const char *const libs[] = { "libstdc++.so.6", "libexpat.so.1", "libanl.so.1" };
		uint64_t modules = symbolizer_stats(sym)->modules;
		void *h = NULL;

		for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]) && !h; i++)
			if (!dlopen(libs[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))
				h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);

		if (h) {
			assert_int_equal(symbolizer_refresh(sym), 0);
			assert_true(symbolizer_stats(sym)->modules > modules);
			check_chain(sym, UNWIND_LIBDW, s, "test_own_stack");
			check_chain(sym, UNWIND_LIBUNWIND, s, "test_own_stack");
			dlclose(h);
		}
	}
	symbolizer_free(sym);
	free(s);
}

static void test_bad_input(void **state)
{
	struct symbolizer *sym = NULL;
	uint64_t regs[20] = { 0 }, ips[4];
	unsigned char stack[64] = { 0 };
	size_t n = 99;

	(void) state;
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	assert_int_equal(symbolizer_unwind(sym, regs, 3, stack, sizeof(stack), ips, 4, &n), -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(symbolizer_unwind(sym, regs, 20, stack, 0, ips, 4, &n), -EINVAL);
	/* garbage registers and stack: no crash, the IP comes back */
	for (int w = 0; w < 2; w++) {
		symbolizer_set_unwinder(sym, w ? UNWIND_LIBUNWIND : UNWIND_LIBDW);
		regs[8] = 0xdeadbeef000;
		regs[7] = 0x7fff00000000;
		memset(stack, 0x41, sizeof(stack));
		assert_int_equal(symbolizer_unwind(sym, regs, 20, stack, sizeof(stack), ips, 4, &n), 0);
		assert_int_equal(n, 1);
		assert_int_equal(ips[0], regs[8]);
		/* a real IP, SP pointing at a stack of return addresses into itself */
		regs[8] = (uint64_t)(uintptr_t)&chain_b;
		for (size_t i = 0; i < sizeof(stack); i += 8)
			memcpy(stack + i, &regs[8], 8);
		assert_int_equal(symbolizer_unwind(sym, regs, 20, stack, sizeof(stack), ips, 4, &n), 0);
		assert_true(n >= 1 && n <= 4);
	}
	assert_int_equal(symbolizer_lookup(sym, 0, false, NULL, 0, &n), -ENOENT);
	symbolizer_free(sym);
	symbolizer_free(NULL);
}

static void test_timing(void **state)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	struct symbolizer *sym = NULL;
	uint64_t ips[128];
	size_t n = 0;

	(void) state;
	assert_non_null(s);
	chain_a(s);
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	for (int w = 0; w < 2; w++) {
		enum symbolizer_unwinder which = w ? UNWIND_LIBUNWIND : UNWIND_LIBDW;
		const int iters = 2000;
		double t0, t1, t2;

		symbolizer_set_unwinder(sym, which);
		/* warm: CFI, symbol tables, DWARF (libc6-dbg's compressed sections are inflated on
		 * the first lookup: milliseconds) */
		symbolizer_unwind(sym, s->regs, 20, s->stack, s->size, ips, 128, &n);
		for (size_t j = 0; j < n; j++) {
			struct native_frame f[8];
			size_t nf;

			symbolizer_lookup(sym, ips[j], j > 0, f, 8, &nf);
		}
		t0 = now_us();
		for (int i = 0; i < iters; i++)
			symbolizer_unwind(sym, s->regs, 20, s->stack, s->size, ips, 128, &n);
		t1 = now_us();
		for (int i = 0; i < iters; i++) {
			symbolizer_unwind(sym, s->regs, 20, s->stack, s->size, ips, 128, &n);
			for (size_t j = 0; j < n; j++) {
				struct native_frame f[8];
				size_t nf;

				symbolizer_lookup(sym, ips[j], j > 0, f, 8, &nf);
			}
		}
		t2 = now_us();
		print_message("# own stack, %s: %zu frames, %.2f us/unwind, %.2f us/unwind+lookups\n",
			      w ? "libunwind" : "libdw", n, (t1 - t0) / iters, (t2 - t1) / iters);
	}
	symbolizer_free(sym);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_stack),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_timing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
