/* diff: merging BEFORE and AFTER, the function table, the `stack before after` lines and the
 * differential SVG, number by number, normalised and raw. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "output/output.h"
#include "output_test.h"

/* cpu-clock 1000 and page-faults 50 in 2.5 s, on two threads:
 *   main:10;load:20;read   300     main:10;load:21   200     main:10;compute:30   500 */
static struct profile *before_profile(void)
{
	const char *ev[] = { "cpu-clock", "page-faults" };
	struct profile *p = profile_new(ev, 2);
	uint32_t t1, t2, m, l20, l21, rd, c30;

	assert_non_null(p);
	t1 = frame(p, FRAME_THREAD, "[thread 11 python3]", NULL, 0, NULL);
	t2 = frame(p, FRAME_THREAD, "[thread 12 worker]", NULL, 0, NULL);
	m = frame(p, FRAME_PYTHON, "main", "app.py", 10, NULL);
	l20 = frame(p, FRAME_PYTHON, "load", "app.py", 20, NULL);
	l21 = frame(p, FRAME_PYTHON, "load", "app.py", 21, NULL);
	rd = frame(p, FRAME_NATIVE, "read", NULL, 0, "libc.so.6");
	c30 = frame(p, FRAME_PYTHON, "compute", "app.py", 30, NULL);
	assert_int_equal(profile_add(p, 11, (uint32_t[]) { t1, m, l20, rd }, 4,
				     (uint64_t[]) { 3, 300, 30 }), 0);
	assert_int_equal(profile_add(p, 11, (uint32_t[]) { t1, m, l21 }, 3,
				     (uint64_t[]) { 2, 200, 20 }), 0);
	assert_int_equal(profile_add(p, 12, (uint32_t[]) { t2, m, c30 }, 3,
				     (uint64_t[]) { 5, 500, 0 }), 0);
	assert_int_equal(profile_set_target(p, "before.pb.gz"), 0);
	profile_meta(p)->duration_ns = 2500000000ull;
	return p;
}

/* instructions and cpu-clock 2000 in 2 s (lines moved, collate new):
 *   main:10;load:22;read 100   main:10;compute:30 500   main:10;collate:40 400
 *   main:10;compute:31 1000 */
static struct profile *after_profile(void)
{
	const char *ev[] = { "instructions", "cpu-clock" };
	struct profile *p = profile_new(ev, 2);
	uint32_t t, m, l22, rd, c30, c31, col;

	assert_non_null(p);
	t = frame(p, FRAME_THREAD, "[thread 99 python3]", NULL, 0, NULL);
	m = frame(p, FRAME_PYTHON, "main", "app.py", 10, NULL);
	l22 = frame(p, FRAME_PYTHON, "load", "app.py", 22, NULL);
	rd = frame(p, FRAME_NATIVE, "read", NULL, 0, "libc.so.6");
	c30 = frame(p, FRAME_PYTHON, "compute", "app.py", 30, NULL);
	c31 = frame(p, FRAME_PYTHON, "compute", "app.py", 31, NULL);
	col = frame(p, FRAME_PYTHON, "collate", "app.py", 40, NULL);
	assert_int_equal(profile_add(p, 99, (uint32_t[]) { t, m, l22, rd }, 4,
				     (uint64_t[]) { 1, 7, 100 }), 0);
	assert_int_equal(profile_add(p, 99, (uint32_t[]) { t, m, c30 }, 3,
				     (uint64_t[]) { 5, 7, 500 }), 0);
	assert_int_equal(profile_add(p, 0, (uint32_t[]) { m, col }, 2,
				     (uint64_t[]) { 4, 7, 400 }), 0);
	assert_int_equal(profile_add(p, 99, (uint32_t[]) { t, m, c31 }, 3,
				     (uint64_t[]) { 10, 7, 1000 }), 0);
	assert_int_equal(profile_set_target(p, "after.pb.gz"), 0);
	profile_meta(p)->duration_ns = 2000000000ull;
	return p;
}

static struct profile *merged(bool ignore_lines, bool raw)
{
	struct profile *b = before_profile(), *a = after_profile(), *m = NULL;
	struct diff_opts o = { .ignore_lines = ignore_lines, .raw = raw };

	assert_int_equal(diff_merge(b, a, &o, &m), 0);
	profile_free(b);
	profile_free(a);
	return m;
}

static char *capture(int (*fn)(const struct profile *, size_t, const struct diff_opts *, FILE *),
		     const struct profile *m, const struct diff_opts *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(fn(m, 0, o, f), 0);
	fclose(f);
	return text;
}

static void test_merge_events(void **state)
{
	struct profile *m = merged(false, false);

	(void) state;
	/* only cpu-clock is shared; its BEFORE and AFTER columns */
	assert_int_equal(diff_n_events(m), 1);
	assert_string_equal(profile_event(m, 0)->name, "cpu-clock");
	assert_string_equal(profile_event(m, 1)->name, "cpu-clock");
	assert_int_equal(profile_total(m, diff_before_col(0)), 1000);
	assert_int_equal(profile_total(m, diff_after_col(0)), 2000);
	assert_int_equal(profile_total(m, 0), 20);      /* AFTER's samples */
	assert_string_equal(profile_meta_const(m)->target, "before.pb.gz -> after.pb.gz");
	/* thread frames are gone, every stack on thread 0 */
	for (size_t i = 0; i < profile_n_stacks(m); i++)
		assert_int_equal(profile_stack(m, i)->tid, 0);
	for (uint32_t f = 0; f < profile_n_frames(m); f++)
		assert_int_not_equal(profile_frame(m, f)->kind, FRAME_THREAD);
	profile_free(m);
}

static void test_merge_no_shared_event(void **state)
{
	const char *pf = "page-faults", *cc = "cpu-clock", *samples = "samples";
	struct profile *b = profile_new(&pf, 1), *a = profile_new(&cc, 1), *f = profile_new(&samples, 1);
	struct profile *m = NULL;
	uint32_t x;

	(void) state;
	x = frame(a, FRAME_PYTHON, "x", "x.py", 1, NULL);
	assert_int_equal(profile_add(a, 0, &x, 1, (uint64_t[]) { 1, 5 }), 0);
	assert_int_equal(diff_merge(b, a, NULL, &m), -ENOENT);
	/* a folded file's unnamed counts pair with the other side's first event */
	x = frame(f, FRAME_PYTHON, "x", "x.py", 1, NULL);
	assert_int_equal(profile_add(f, 0, &x, 1, (uint64_t[]) { 3, 3 }), 0);
	assert_int_equal(diff_merge(f, a, NULL, &m), 0);
	assert_int_equal(diff_n_events(m), 1);
	assert_string_equal(profile_event(m, 0)->name, "cpu-clock");
	assert_int_equal(profile_total(m, 1), 3);
	assert_int_equal(profile_total(m, 2), 5);
	profile_free(m);
	profile_free(b);
	profile_free(a);
	profile_free(f);
}

static const struct diff_func *find(const struct diff_func *rows, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].name, name))
			return &rows[i];
	fail_msg("no function '%s'", name);
	return NULL;
}

static void test_functions_normalised(void **state)
{
	struct profile *m = merged(false, false);
	struct diff_opts o = { 0 };
	struct diff_func *rows = NULL;
	const struct diff_func *f;
	size_t n = 0;

	(void) state;
	assert_int_equal(diff_functions(m, 0, &o, &rows, &n), 0);
	assert_int_equal(n, 5);
	/* ranked by |self delta|, then |total delta|, then name */
	assert_string_equal(rows[0].name, "compute (app.py)");
	assert_string_equal(rows[1].name, "read [libc.so.6]");
	assert_string_equal(rows[2].name, "load (app.py)");
	assert_string_equal(rows[3].name, "collate (app.py)");
	assert_string_equal(rows[4].name, "main (app.py)");
	/* load: self 200 -> 0, total 500 -> 100; of 1000 and of 2000 */
	f = find(rows, n, "load (app.py)");
	assert_int_equal(f->self_before, 200);
	assert_int_equal(f->self_after, 0);
	assert_int_equal(f->total_before, 500);
	assert_int_equal(f->total_after, 100);
	assert_float_equal(f->self_delta, -20.0, 1e-9);
	assert_float_equal(f->total_delta, -45.0, 1e-9);
	/* compute: both lines count as one function: 500 -> 1500 */
	f = find(rows, n, "compute (app.py)");
	assert_int_equal(f->self_after, 1500);
	assert_float_equal(f->self_delta, 25.0, 1e-9);
	f = find(rows, n, "read [libc.so.6]");
	assert_float_equal(f->self_delta, -25.0, 1e-9);
	assert_float_equal(f->total_delta, -25.0, 1e-9);
	f = find(rows, n, "collate (app.py)");
	assert_float_equal(f->total_delta, 20.0, 1e-9);
	f = find(rows, n, "main (app.py)");
	assert_int_equal(f->total_before, 1000);
	assert_int_equal(f->total_after, 2000);
	assert_float_equal(f->total_delta, 0.0, 1e-9);
	free(rows);
	profile_free(m);
}

static void test_functions_raw(void **state)
{
	struct profile *m = merged(false, true);
	struct diff_opts o = { .raw = true };
	struct diff_func *rows = NULL;
	size_t n = 0;

	(void) state;
	assert_int_equal(diff_functions(m, 0, &o, &rows, &n), 0);
	assert_int_equal(n, 5);
	/* shares of BEFORE's 1000: compute 50% -> 150%, collate 0 -> 40%, load 50% -> 10% (self
	 * 20% -> 0), read 30% -> 10%, main 100% -> 200% (self 0) */
	assert_string_equal(rows[0].name, "compute (app.py)");
	assert_float_equal(rows[0].total_delta, 100.0, 1e-9);
	assert_string_equal(rows[1].name, "collate (app.py)");
	assert_float_equal(rows[1].self_delta, 40.0, 1e-9);
	assert_string_equal(rows[2].name, "load (app.py)");
	assert_float_equal(rows[2].total_delta, -40.0, 1e-9);
	assert_float_equal(rows[2].self_delta, -20.0, 1e-9);
	assert_string_equal(rows[3].name, "read [libc.so.6]");
	assert_float_equal(rows[3].self_delta, -20.0, 1e-9);
	assert_string_equal(rows[4].name, "main (app.py)");
	assert_float_equal(rows[4].total_delta, 100.0, 1e-9);
	assert_float_equal(rows[4].self_delta, 0.0, 1e-9);
	free(rows);
	profile_free(m);
}

static void test_folded_lines(void **state)
{
	struct diff_opts norm = { 0 }, raw = { .raw = true }, il = { .ignore_lines = true };
	struct profile *m = merged(false, false);
	char *t;

	(void) state;
	/* BEFORE scaled to AFTER's total: x2 */
	t = capture(diff_folded_write, m, &norm);
	assert_string_equal(t,
		"main (app.py:10);collate (app.py:40) 0 400\n"
		"main (app.py:10);compute (app.py:30) 1000 500\n"
		"main (app.py:10);compute (app.py:31) 0 1000\n"
		"main (app.py:10);load (app.py:20);read [libc.so.6] 600 0\n"
		"main (app.py:10);load (app.py:21) 400 0\n"
		"main (app.py:10);load (app.py:22);read [libc.so.6] 0 100\n");
	free(t);
	t = capture(diff_folded_write, m, &raw);
	assert_non_null(strstr(t, "main (app.py:10);compute (app.py:30) 500 500\n"));
	assert_non_null(strstr(t, "main (app.py:10);load (app.py:21) 200 0\n"));
	free(t);
	profile_free(m);
	/* --ignore-lines: a moved line still matches */
	m = merged(true, false);
	t = capture(diff_folded_write, m, &il);
	assert_string_equal(t,
		"main (app.py);collate (app.py) 0 400\n"
		"main (app.py);compute (app.py) 1000 1500\n"
		"main (app.py);load (app.py) 400 0\n"
		"main (app.py);load (app.py);read [libc.so.6] 600 100\n");
	free(t);
	profile_free(m);
}

static int table(const struct profile *m, size_t event, const struct diff_opts *o, FILE *out)
{
	struct diff_side b = { "before.pb.gz", 2500000000ull }, a = { "after.pb.gz", 2000000000ull };

	(void) event;
	return diff_table_write(m, &b, &a, o, 3, out);
}

static int table_opts(const struct profile *m, size_t event, const struct diff_opts *o,
		      FILE *out)
{
	(void) event;
	return diff_table_write(m, NULL, NULL, o, 0, out);
}

static void test_table(void **state)
{
	struct profile *m = merged(false, false);
	struct diff_opts o = { 0 };
	char *t;

	(void) state;
	t = capture(table, m, &o);
	/* the headline, in cpu-clock's nanoseconds, with rates: 1000 ns in 2.5 s, 2000 in 2 s */
	assert_non_null(strstr(t, "\ncpu-clock: 1.00 \xc2\xb5s -> 2.00 \xc2\xb5s of CPU, +100.0% "
				  "(0.00 CPUs -> 0.00 CPUs, +150.0%)\n"));
	/* the deltas of a time event in seconds */
	assert_non_null(strstr(t, "\n      %       %     pts          s        %       %     pts"
				  "          s\n"));
	/* the top row: load, self 20% -> 0%, total 50% -> 5%: -900 ns (500 scaled x2) */
	assert_non_null(strstr(t, "  20.00    0.00  -20.00     -4e-07    50.00    5.00  -45.00"
				  "     -9e-07  load (app.py)\n"));
	/* three rows asked for, five functions, one of them (main) unchanged */
	assert_non_null(strstr(t, "(1 more function changed; --top N shows more)\n"));
	assert_null(strstr(t, "main (app.py)"));
	free(t);
	profile_free(m);
}

/* BEFORE of event eb weighing tb, AFTER of ea weighing ta (one frame each), merged; their
 * headline with these durations and plain flags. */
static char *headline(const char *eb, uint64_t tb, const char *ea, uint64_t ta, uint64_t db,
		      uint64_t da)
{
	struct profile *b = profile_new(&eb, 1), *a = profile_new(&ea, 1), *m = NULL;
	struct diff_side sb = { "b", db, !strcmp(eb, "samples") }, sa = { "a", da,
									  !strcmp(ea, "samples") };
	struct buf out;
	uint32_t x;
	char *text;

	x = frame(b, FRAME_PYTHON, "x", "x.py", 1, NULL);
	assert_int_equal(profile_add(b, 0, &x, 1, (uint64_t[]) { 1, tb }), 0);
	x = frame(a, FRAME_PYTHON, "x", "x.py", 1, NULL);
	assert_int_equal(profile_add(a, 0, &x, 1, (uint64_t[]) { 1, ta }), 0);
	assert_int_equal(diff_merge(b, a, NULL, &m), 0);
	buf_init(&out);
	assert_int_equal(diff_headline(m, 0, &sb, &sa, &out), 0);
	assert_int_equal(diff_headline(m, 1, &sb, &sa, &out), -EINVAL);
	text = strdup(out.data);
	buf_release(&out);
	profile_free(m);
	profile_free(a);
	profile_free(b);
	return text;
}

/* The headline in the event's unit: seconds of CPU and CPUs for cpu-clock, off the CPU and
 * threads waiting, wall time and threads, SI counts and per second for a count event, plain
 * numbers for a folded file's counts, and no change at all for a folded file against a unit. */
static void test_headline(void **state)
{
	static const struct {
		const char *eb, *ea;
		uint64_t tb, ta, db, da;
		const char *want;
	} cases[] = {
		{ "cpu-clock", "cpu-clock", 3140000000ull, 1180000000ull, 2000000000ull, 2000000000ull,
		  "cpu-clock: 3.14 s -> 1.18 s of CPU, -62.4% (1.57 CPUs -> 0.59 CPUs, -62.4%)" },
		{ "task-clock:u", "task-clock:u", 31400000000ull, 11800000000ull, 0, 0,
		  "task-clock:u: 31.4 s -> 11.8 s of CPU, -62.4%" },
		/* a tenth apart or more: each in its unit */
		{ "cpu-clock", "cpu-clock", 3140000000ull, 18200000ull, 0, 0,
		  "cpu-clock: 3.14 s -> 18.2 ms of CPU, -99.4%" },
		{ "off-cpu", "off-cpu", 2500000000ull, 5000000000ull, 1000000000ull, 1000000000ull,
		  "off-cpu: 2.50 s -> 5.00 s off the CPU, +100.0% (2.50 threads waiting -> 5.00 "
		  "threads waiting, +100.0%)" },
		{ "wall", "wall", 4000000000ull, 4000000000ull, 2000000000ull, 1000000000ull,
		  "wall: 4.00 s -> 4.00 s of wall time, +0.0% (2.00 threads -> 4.00 threads, +100.0%)" },
		{ "cache-misses", "cache-misses", 1200000000ull, 800000000ull, 10000000000ull,
		  10000000000ull, "cache-misses: 1.20 G -> 0.80 G, -33.3% (120 M/s -> 80 M/s, -33.3%)" },
		{ "page-faults", "page-faults", 10300, 20600, 1000000000ull, 2000000000ull,
		  "page-faults: 10,300 -> 20,600, +100.0% (10,300/s -> 10,300/s, +0.0%)" },
		{ "samples", "samples", 1000, 2000, 0, 0, "samples: 1,000 -> 2,000, +100.0%" },
		{ "samples", "samples", 375000000ull, 445000000ull, 0, 0,
		  "samples: 375 M -> 445 M, +18.7%" },
		{ "samples", "cpu-clock", 1000, 3140000000ull, 0, 2000000000ull,
		  "cpu-clock: 1,000 -> 3.14 G (BEFORE is a folded file's counts, of no known unit: "
		  "compare the shares)" },
	};

	(void) state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = headline(cases[i].eb, cases[i].tb, cases[i].ea, cases[i].ta, cases[i].db,
				   cases[i].da);

		assert_string_equal(t, cases[i].want);
		free(t);
	}
}

/* Native code without symbols, "MODULE+0xOFF" with its module beside it or not: one function per
 * module by default, one per offset with native_offsets; a symbol plus an offset in another
 * module ("foo+0x10 [libc.so.6]") is a function of its own either way. */
static void test_native_modules(void **state)
{
	const char *ev = "cpu-clock";
	struct profile *b = profile_new(&ev, 1), *a = profile_new(&ev, 1), *m = NULL;
	struct diff_opts folded = { 0 }, offsets = { .native_offsets = true };
	struct diff_func *rows = NULL;
	const struct diff_func *f;
	char *t;
	size_t n = 0;
	uint32_t x, o1, o2, o3, sym, full;

	(void) state;
	x = frame(b, FRAME_PYTHON, "main", "app.py", 1, NULL);
	o1 = frame(b, FRAME_NATIVE, "_umath.so+0x1a2b", NULL, 0, "_umath.so");
	o2 = frame(b, FRAME_NATIVE, "_umath.so+0x3c4d", NULL, 0, "_umath.so");
	sym = frame(b, FRAME_NATIVE, "foo+0x10", NULL, 0, "libc.so.6");
	assert_int_equal(profile_add(b, 0, (uint32_t[]) { x, o1 }, 2, (uint64_t[]) { 1, 300 }), 0);
	/* o2 under o1: the module once in that stack's total */
	assert_int_equal(profile_add(b, 0, (uint32_t[]) { x, o1, o2 }, 3,
				     (uint64_t[]) { 1, 200 }), 0);
	assert_int_equal(profile_add(b, 0, (uint32_t[]) { x, sym }, 2, (uint64_t[]) { 1, 500 }), 0);
	/* AFTER: a folded file without the module beside the name, and one by its path */
	x = frame(a, FRAME_PYTHON, "main", "app.py", 1, NULL);
	o3 = frame(a, FRAME_NATIVE, "_umath.so+0x5e6f", NULL, 0, NULL);
	full = frame(a, FRAME_NATIVE, "/venv/lib/_umath.so+0x10", NULL, 0, "_umath.so");
	sym = frame(a, FRAME_NATIVE, "foo+0x10", NULL, 0, "libc.so.6");
	assert_int_equal(profile_add(a, 0, (uint32_t[]) { x, o3 }, 2, (uint64_t[]) { 1, 100 }), 0);
	assert_int_equal(profile_add(a, 0, (uint32_t[]) { x, full }, 2, (uint64_t[]) { 1, 100 }), 0);
	assert_int_equal(profile_add(a, 0, (uint32_t[]) { x, sym }, 2, (uint64_t[]) { 1, 800 }), 0);
	assert_int_equal(diff_merge(b, a, NULL, &m), 0);

	assert_int_equal(diff_functions(m, 0, &folded, &rows, &n), 0);
	f = find(rows, n, "[_umath.so]");
	assert_true(f->native_module);
	assert_int_equal(f->self_before, 500);
	assert_int_equal(f->total_before, 500);
	assert_int_equal(f->self_after, 100);   /* o3 (no module beside it) */
	f = find(rows, n, "[/venv/lib/_umath.so]");
	assert_true(f->native_module);
	assert_int_equal(f->self_after, 100);
	f = find(rows, n, "foo+0x10 [libc.so.6]");
	assert_false(f->native_module);
	assert_int_equal(n, 4);                 /* main, the two modules, foo */
	free(rows);
	t = capture(table_opts, m, &folded);
	assert_non_null(strstr(t, "  [_umath.so]\n"));
	assert_non_null(strstr(t, "\n([_umath.so]: the module's code without symbols, in one row; "
				  "--native-offsets splits it by address)\n"));
	free(t);

	assert_int_equal(diff_functions(m, 0, &offsets, &rows, &n), 0);
	assert_int_equal(n, 6);
	f = find(rows, n, "_umath.so+0x1a2b");
	assert_false(f->native_module);
	assert_int_equal(f->total_before, 500);
	assert_int_equal(find(rows, n, "_umath.so+0x3c4d")->self_before, 200);
	assert_int_equal(find(rows, n, "_umath.so+0x5e6f")->self_after, 100);
	free(rows);
	t = capture(table_opts, m, &offsets);
	assert_null(strstr(t, "--native-offsets"));
	free(t);
	profile_free(m);
	profile_free(a);
	profile_free(b);
}

static void test_common(void **state)
{
	const char *ev = "cpu-clock";
	struct profile *m = merged(false, false), *x = profile_new(&ev, 1), *y = profile_new(&ev, 1);
	struct profile *u = NULL;
	double cb, ca;
	uint32_t f;

	(void) state;
	assert_int_equal(diff_common(m, 0, &cb, &ca), 0);
	assert_float_equal(cb, 1.0, 1e-9);      /* main is in every stack of both */
	assert_float_equal(ca, 1.0, 1e-9);
	f = frame(x, FRAME_PYTHON, "train", "model.py", 3, NULL);
	assert_int_equal(profile_add(x, 0, &f, 1, (uint64_t[]) { 1, 10 }), 0);
	f = frame(y, FRAME_PYTHON, "serve", "web.py", 3, NULL);
	assert_int_equal(profile_add(y, 0, &f, 1, (uint64_t[]) { 1, 10 }), 0);
	assert_int_equal(diff_merge(x, y, NULL, &u), 0);
	assert_int_equal(diff_common(u, 0, &cb, &ca), 0);
	assert_float_equal(cb, 0.0, 1e-9);
	assert_float_equal(ca, 0.0, 1e-9);
	profile_free(u);
	profile_free(x);
	profile_free(y);
	profile_free(m);
}

static char *diff_svg(const struct profile *m, bool negate, bool raw)
{
	struct svg_opts so = { .column = diff_before_col(0), .diff = true, .negate = negate,
			       .diff_raw = raw };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(svg_write(m, &so, f), 0);
	fclose(f);
	return text;
}

/* The <g> of the frame whose tooltip starts with name, up to its </g>. */
static char *frame_g(const char *svg, const char *name)
{
	char key[256];
	const char *s, *e;

	snprintf(key, sizeof(key), "<g><title>%s\n", name);
	s = strstr(svg, key);
	if (!s)
		return NULL;
	e = strstr(s, "</g>");
	assert_non_null(e);
	return strndup(s, (size_t) (e - s));
}

static void test_svg(void **state)
{
	struct profile *m = merged(true, false);
	char *svg = diff_svg(m, false, false), *g;

	(void) state;
	/* load: 500 of 1000 -> 100 of 2000, the largest change: full blue */
	g = frame_g(svg, "load (app.py)");
	assert_non_null(g);
	assert_non_null(strstr(g, "\nbefore: 500 (50.00%)\nafter: 100 (5.00%)\n"
				  "delta: -900 (-45.00 pts)</title>"));
	assert_non_null(strstr(g, "fill=\"rgb(0,0,255)\""));
	free(g);
	/* compute: 50% -> 75%: red at 25/45 */
	g = frame_g(svg, "compute (app.py)");
	assert_non_null(g);
	assert_non_null(strstr(g, "delta: +500 (+25.00 pts)"));
	assert_non_null(strstr(g, "fill=\"rgb(255,113,113)\""));
	free(g);
	/* main: unchanged, white; and the width is AFTER's: the whole graph */
	g = frame_g(svg, "main (app.py)");
	assert_non_null(g);
	assert_non_null(strstr(g, "fill=\"rgb(255,255,255)\""));
	assert_non_null(strstr(g, "width=\"1180.00\""));
	free(g);
	/* collate is only in AFTER: drawn */
	assert_non_null(strstr(svg, "<g><title>collate (app.py)\n"));
	/* the subtitle: the headline (the total change), then what is compared */
	assert_non_null(strstr(svg, "<text id=\"subtitle\" x=\"600\" y=\"44\">cpu-clock: 1.00 "
				  "\xc2\xb5s -&gt; 2.00 \xc2\xb5s of CPU, +100.0%; before.pb.gz -&gt; "
				  "after.pb.gz; widths from AFTER, red grew, blue shrank; shares of each "
				  "total</text>"));
	/* load's full blue takes a white label, main's white and compute's light red black */
	g = frame_g(svg, "load (app.py)");
	assert_non_null(strstr(g, "<text class=\"on-dark\" x="));
	free(g);
	g = frame_g(svg, "compute (app.py)");
	assert_non_null(strstr(g, "<text x="));
	free(g);
	g = frame_g(svg, "main (app.py)");
	assert_non_null(strstr(g, "<text x="));
	free(g);
	assert_int_equal(assert_labels_legible(svg, NULL), 6);     /* all and 5 functions */
	free(svg);

	/* --negate: BEFORE's widths: collate is not drawn, load is half the graph */
	svg = diff_svg(m, true, false);
	assert_null(strstr(svg, "<g><title>collate (app.py)\n"));
	g = frame_g(svg, "load (app.py)");
	assert_non_null(g);
	assert_non_null(strstr(g, "width=\"590.00\""));
	assert_non_null(strstr(g, "fill=\"rgb(0,0,255)\""));
	free(g);
	free(svg);
	profile_free(m);

	/* raw: shares of BEFORE's total; main grew from 100% to 200% */
	m = merged(true, true);
	svg = diff_svg(m, false, true);
	g = frame_g(svg, "main (app.py)");
	assert_non_null(g);
	assert_non_null(strstr(g, "\nbefore: 1,000 (100.00%)\nafter: 2,000 (200.00%)\n"
				  "delta: +1,000 (+100.00 pts)"));
	free(g);
	free(svg);
	profile_free(m);
}

/* Every label legible on its box (WCAG contrast 4.5:1 or more) over the whole red and blue
 * scale: 41 functions whose shares change from -20 to +20 steps, in the subtitle the rates of
 * known durations. */
static void test_svg_labels(void **state)
{
	const char *ev = "cpu-clock";
	struct profile *b = profile_new(&ev, 1), *a = profile_new(&ev, 1), *m = NULL;
	struct diff_side sides[2] = { { "b", 1000000000ull, false }, { "a", 1000000000ull, false } };
	struct svg_opts so = { .column = diff_before_col(0), .diff = true, .diff_sides = sides };
	char name[16], *text = NULL;
	size_t len = 0, white = 0;
	FILE *f;

	(void) state;
	for (int i = 0; i <= 40; i++) {
		uint32_t x;

		snprintf(name, sizeof(name), "f%02d", i);
		x = frame(b, FRAME_PYTHON, name, "app.py", 1, NULL);
		assert_int_equal(profile_add(b, 0, &x, 1, (uint64_t[]) { 1, 1000000 }), 0);
		x = frame(a, FRAME_PYTHON, name, "app.py", 1, NULL);
		assert_int_equal(profile_add(a, 0, &x, 1,
					     (uint64_t[]) { 1, (uint64_t) (1000000 + 45000 * (i - 20)) }),
				 0);
	}
	assert_int_equal(diff_merge(b, a, NULL, &m), 0);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(svg_write(m, &so, f), 0);
	fclose(f);
	assert_int_equal(assert_labels_legible(text, &white), 42);
	assert_true(white >= 4 && white < 40);  /* the deepest blues and reds only */
	assert_non_null(strstr(text, ">cpu-clock: 41.0 ms -&gt; 41.0 ms of CPU, +0.0% (0.04 CPUs "
				     "-&gt; 0.04 CPUs, +0.0%); widths"));
	free(text);
	profile_free(m);
	profile_free(a);
	profile_free(b);
}

/* One script's profile taken in checkout DIR with its numpy in virtualenv VENV: app.py's main
 * calls pkg/m.py's work (weight w) and numpy's dot (weight d). */
static struct profile *checkout_profile(const char *dir, const char *venv, uint64_t w,
					uint64_t d)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1);
	char app[128], m[128], np[160];
	uint32_t fm, fw, fd;

	assert_non_null(p);
	snprintf(app, sizeof(app), "%s/app.py", dir);
	snprintf(m, sizeof(m), "%s/pkg/m.py", dir);
	snprintf(np, sizeof(np), "%s/lib/python3.11/site-packages/numpy/linalg.py", venv);
	fm = frame(p, FRAME_PYTHON, "main", app, 10, NULL);
	fw = frame(p, FRAME_PYTHON, "work", m, 3, NULL);
	fd = frame(p, FRAME_PYTHON, "dot", np, 7, NULL);
	assert_int_equal(profile_add(p, 1, (uint32_t[]) { fm, fw }, 2, (uint64_t[]) { w, w }), 0);
	assert_int_equal(profile_add(p, 1, (uint32_t[]) { fm, fd }, 2, (uint64_t[]) { d, d }), 0);
	return p;
}

/* Profiles of one script from two checkouts and two virtualenvs match function for function;
 * with exact_paths none of them does. */
static void test_checkouts(void **state)
{
	struct profile *b = checkout_profile("/tmp/x/v1", "/tmp/x/venv1", 600, 400);
	struct profile *a = checkout_profile("/tmp/x/v2", "/tmp/x/venv2", 300, 700);
	struct profile *m;
	struct diff_func *rows;
	size_t n;
	double cb, ca;

	(void) state;
	assert_int_equal(diff_merge(b, a, NULL, &m), 0);
	assert_int_equal(diff_functions(m, 0, NULL, &rows, &n), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		assert_true(rows[i].total_before > 0 && rows[i].total_after > 0);
		assert_null(strstr(rows[i].name, "/tmp/"));
	}
	assert_string_equal(rows[0].name, "dot (numpy/linalg.py)");
	assert_string_equal(rows[1].name, "work (pkg/m.py)");
	assert_string_equal(rows[2].name, "main (app.py)");
	assert_int_equal(diff_common(m, 0, &cb, &ca), 0);
	assert_true(cb == 1.0 && ca == 1.0);
	free(rows);
	profile_free(m);

	assert_int_equal(diff_merge(b, a, &(struct diff_opts) { .exact_paths = true }, &m), 0);
	assert_int_equal(diff_functions(m, 0, NULL, &rows, &n), 0);
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++)
		assert_true((rows[i].total_before == 0) != (rows[i].total_after == 0));
	free(rows);
	profile_free(m);
	profile_free(b);
	profile_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_events),
		cmocka_unit_test(test_merge_no_shared_event),
		cmocka_unit_test(test_functions_normalised),
		cmocka_unit_test(test_functions_raw),
		cmocka_unit_test(test_folded_lines),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_headline),
		cmocka_unit_test(test_native_modules),
		cmocka_unit_test(test_svg_labels),
		cmocka_unit_test(test_common),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_checkouts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
