/* hwspy.h's live table, through include/hwspy.h alone (linked with libhwspy): frames named by a
 * callback (each id asked once), self and total with a recursion, frames of one text as one
 * row, native rows hidden, threads and their cycle, zeroing, the event and ratio columns, the
 * header and rows as text of a width, the errors with their reasons; the target readers (CPU
 * time, switches, name) on this process; top's key steps, the table as text, a recorder's
 * table and the rates from two readings. */
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

#include "include/hwspy.h"

/* frames 0 a, 1 b, 2 c (Python), 3 and 4 memcpy at two addresses (native, one text) */
static const char *const names[] = {
	"a (w.py:1)", "b (w.py:5)", "c (w.py:9)", "memcpy [libc.so.6]", "memcpy [libc.so.6]",
};
#define N_FRAMES (sizeof(names) / sizeof(names[0]))

struct namer {
	unsigned asked[N_FRAMES + 8];
};

static const char *frame_name(void *ctx, uint32_t id)
{
	struct namer *n = ctx;

	if (id < N_FRAMES + 8)
		n->asked[id]++;
	return id < N_FRAMES ? names[id] : NULL;
}

static bool frame_native(void *ctx, uint32_t id)
{
	(void) ctx;
	return id >= 3;
}

static struct hwspy_table *new_table(struct namer *n, const char *const *events, size_t ne)
{
	struct hwspy_table_opts o = {
		.events = events, .n_events = ne, .frame_name = frame_name,
		.frame_native = frame_native, .ctx = n,
	};
	struct hwspy_table *t = NULL;

	assert_int_equal(hwspy_table_new(&o, &t), 0);
	assert_non_null(t);
	return t;
}

static void add(struct hwspy_table *t, uint32_t tid, const uint32_t *frames, size_t depth,
		uint64_t weight)
{
	uint64_t v[2] = { 1, weight };

	assert_int_equal(hwspy_table_add(t, tid, frames, depth, v, 2), 0);
}

/* The view's row of frame id, or SIZE_MAX. */
static size_t row_of(const struct hwspy_table *t, uint32_t id)
{
	for (size_t i = 0; i < hwspy_table_rows(t); i++)
		if (hwspy_table_row_frame(t, i) == id)
			return i;
	return SIZE_MAX;
}

static void test_sums_threads_zero(void **state)
{
	static const char *const ev[] = { "cpu-clock" };
	struct namer n = { { 0 } };
	struct hwspy_table *t = new_table(&n, ev, 1);
	struct hwspy_table_view_opts vo = { .tid = HWSPY_TABLE_ALL_THREADS,
					    .sort = HWSPY_TABLE_COL_SELF };
	uint32_t ab[] = { 0, 1 }, ac[] = { 0, 2 }, abba[] = { 0, 1, 1, 0 };
	double d;
	(void) state;

	for (int i = 0; i < 3; i++)
		add(t, 1, ab, 2, 10);
	add(t, 1, ac, 2, 10);
	add(t, 2, abba, 4, 10);
	assert_int_equal(hwspy_table_samples(t), 5);
	/* each frame named once, however often it came */
	assert_int_equal(n.asked[0], 1);
	assert_int_equal(n.asked[1], 1);
	assert_int_equal(n.asked[2], 1);
	assert_int_equal(hwspy_table_view(t, &vo), 0);
	assert_int_equal(hwspy_table_rows(t), 3);
	assert_int_equal(hwspy_table_sort_column(t), HWSPY_TABLE_COL_SELF);
	/* by self: b (30 of 50), a (10, total 50), c (10, total 10) */
	assert_int_equal(hwspy_table_row_frame(t, 0), 1);
	assert_int_equal(hwspy_table_row_frame(t, 1), 0);
	assert_int_equal(hwspy_table_row_frame(t, 2), 2);
	assert_int_equal(hwspy_table_row_self(t, row_of(t, 0))[1], 10);
	assert_int_equal(hwspy_table_row_total(t, row_of(t, 0))[1], 50);
	assert_int_equal(hwspy_table_row_total(t, row_of(t, 0))[0], 5);
	assert_int_equal(hwspy_table_row_total(t, row_of(t, 1))[1], 40);
	assert_null(hwspy_table_row_self(t, 3));
	assert_int_equal(hwspy_table_row_frame(t, 3), UINT32_MAX);
	assert_true(hwspy_table_value(t, 0, HWSPY_TABLE_COL_SELF, &d) && d > 59.99 && d < 60.01);
	assert_true(hwspy_table_value(t, 1, HWSPY_TABLE_COL_TOTAL, &d) && d > 99.99);
	assert_false(hwspy_table_value(t, 3, HWSPY_TABLE_COL_SELF, &d));
	/* threads: 1, 2; the cycle all, 1, 2, all */
	assert_int_equal(hwspy_table_n_threads(t), 2);
	assert_int_equal(hwspy_table_thread(t, 1), 2);
	assert_int_equal(hwspy_table_thread(t, 2), HWSPY_TABLE_ALL_THREADS);
	assert_int_equal(hwspy_table_next_thread(t, HWSPY_TABLE_ALL_THREADS), 1);
	assert_int_equal(hwspy_table_next_thread(t, 2), HWSPY_TABLE_ALL_THREADS);
	vo.tid = 2;
	vo.sort = HWSPY_TABLE_COL_TOTAL;
	assert_int_equal(hwspy_table_view(t, &vo), 0);
	assert_int_equal(hwspy_table_rows(t), 2);
	assert_int_equal(row_of(t, 2), SIZE_MAX);
	vo.tid = 7;
	assert_int_equal(hwspy_table_view(t, &vo), -EINVAL);
	assert_string_equal(hwspy_reason(), "no thread 7 in the table");
	assert_int_equal(hwspy_table_rows(t), 0);
	/* zeroed: no samples, no rows, the threads kept */
	hwspy_table_zero(t);
	assert_int_equal(hwspy_table_samples(t), 0);
	assert_int_equal(hwspy_table_n_threads(t), 2);
	vo.tid = HWSPY_TABLE_ALL_THREADS;
	assert_int_equal(hwspy_table_view(t, &vo), 0);
	assert_int_equal(hwspy_table_rows(t), 0);
	hwspy_table_free(t);
	hwspy_table_free(NULL);
}

static void test_native_and_errors(void **state)
{
	static const char *const ev[] = { "cpu-clock" };
	struct namer n = { { 0 } };
	struct hwspy_table *t = new_table(&n, ev, 1);
	struct hwspy_table_view_opts vo = { .tid = HWSPY_TABLE_ALL_THREADS };
	uint32_t s1[] = { 0, 3 }, s2[] = { 0, 4 }, bad[] = { 0, 9 };
	uint64_t v[2] = { 1, 10 };
	(void) state;

	add(t, 1, s1, 2, 10);
	add(t, 1, s2, 2, 10);
	assert_int_equal(hwspy_table_view(t, &vo), 0);
	assert_int_equal(hwspy_table_rows(t), 2);       /* memcpy twice: one row, its first id */
	assert_int_equal(hwspy_table_row_frame(t, 0), 3);
	assert_int_equal(hwspy_table_row_self(t, 0)[1], 20);
	vo.hide_native = true;
	assert_int_equal(hwspy_table_view(t, &vo), 0);
	assert_int_equal(hwspy_table_rows(t), 1);
	assert_int_equal(hwspy_table_row_frame(t, 0), 0);
	/* refused adds count nothing, and say why */
	assert_int_equal(hwspy_table_add(t, 1, bad, 2, v, 2), -EINVAL);
	assert_string_equal(hwspy_reason(), "a sample holds a frame id with no name");
	assert_int_equal(hwspy_table_add(t, 1, s1, 2, v, 3), -EINVAL);
	assert_string_equal(hwspy_reason(), "a sample of 3 values to a table of 2");
	assert_int_equal(hwspy_table_add(t, 1, s1, 0, v, 2), -EINVAL);
	assert_int_equal(hwspy_table_add(t, HWSPY_TABLE_ALL_THREADS, s1, 2, v, 2), -EINVAL);
	assert_int_equal(hwspy_table_samples(t), 2);
	assert_int_equal(hwspy_table_add(t, 1, s1, 2, v, 2), 0);
	assert_string_equal(hwspy_reason(), "");
	hwspy_table_free(t);
	{
		struct hwspy_table_opts o = { .events = ev, .n_events = 0, .frame_name = frame_name };
		struct hwspy_table *u = (struct hwspy_table *) &o;

		assert_int_equal(hwspy_table_new(&o, &u), -EINVAL);
		assert_null(u);
		assert_true(strlen(hwspy_reason()) > 0);
		o.n_events = 1;
		o.frame_name = NULL;
		assert_int_equal(hwspy_table_new(&o, &u), -EINVAL);
	}
}

static void test_columns_and_text(void **state)
{
	static const char *const ev[] = { "cycles", "instructions", "cache-misses",
					  "cache-references" };
	static const char *const ev2[] = { "cycles", "instructions" };
	struct namer n = { { 0 } };
	struct hwspy_table *t = new_table(&n, ev, 4);
	struct hwspy_table_view_opts vo = { .tid = HWSPY_TABLE_ALL_THREADS, .sort = 5 };
	uint32_t sa[] = { 0 }, sb[] = { 1 };
	uint64_t va[] = { 1, 1000, 2000, 10, 100 }, vb[] = { 1, 3000, 1500, 0, 0 };
	const char *text;
	double d;
	(void) state;

	assert_int_equal(hwspy_table_n_columns(t), 8);
	assert_string_equal(hwspy_table_column_name(t, 0), "self%");
	assert_string_equal(hwspy_table_column_name(t, 1), "total%");
	assert_string_equal(hwspy_table_column_name(t, 2), "instructions%");
	assert_string_equal(hwspy_table_column_name(t, 5), "IPC");
	assert_string_equal(hwspy_table_column_name(t, 6), "cache-misses/1k-instr");
	assert_string_equal(hwspy_table_column_name(t, 7), "cache miss%");
	assert_null(hwspy_table_column_name(t, 8));
	assert_int_equal(hwspy_table_add(t, 1, sa, 1, va, 5), 0);
	assert_int_equal(hwspy_table_add(t, 1, sb, 1, vb, 5), 0);
	assert_int_equal(hwspy_table_view(t, &vo), 0);          /* by IPC: a 2.0, b 0.5 */
	assert_int_equal(hwspy_table_row_frame(t, 0), 0);
	assert_true(hwspy_table_value(t, 0, 5, &d) && d == 2.0);
	assert_true(hwspy_table_value(t, 1, 5, &d) && d == 0.5);
	assert_true(hwspy_table_value(t, 0, 7, &d) && d == 10.0);
	assert_false(hwspy_table_value(t, 1, 7, &d));           /* no references: undefined */
	hwspy_table_free(t);

	/* text: every column without a limit; cut to a width with ".." */
	t = new_table(&n, ev2, 2);
	vo.sort = HWSPY_TABLE_COL_TOTAL;
	{
		uint64_t v[] = { 1, 100, 50 };

		assert_int_equal(hwspy_table_add(t, 1, sa, 1, v, 3), 0);
	}
	assert_int_equal(hwspy_table_view(t, &vo), 0);
	assert_int_equal(hwspy_table_fit(t, 0), 4);
	assert_int_equal(hwspy_table_header_text(t, 0, &text), 0);
	assert_string_equal(text, "  self% *total%  instructions%     IPC function");
	assert_int_equal(hwspy_table_row_text(t, 0, 0, &text), 0);
	assert_string_equal(text, "  100.0   100.0          100.0    0.50 a (w.py:1)");
	assert_int_equal(hwspy_table_fit(t, 27), 0);
	assert_int_equal(hwspy_table_fit(t, 28), 1);
	assert_int_equal(hwspy_table_fit(t, 40), 2);
	assert_int_equal(hwspy_table_row_text(t, 0, 20, &text), 0);
	assert_string_equal(text, "a (w.py:1)");
	assert_int_equal(hwspy_table_row_text(t, 0, 8, &text), 0);
	assert_string_equal(text, "a (w.p..");
	assert_int_equal(hwspy_table_header_text(t, 40, &text), 0);
	assert_string_equal(text, "  self% *total% function");
	assert_int_equal(hwspy_table_row_text(t, 1, 0, &text), -EINVAL);
	assert_string_equal(text, "");
	hwspy_table_free(t);
}

/* (topshrink) The steps of top's keys: the sort column within its bounds, self and total, the
 * thread cycle, native rows; the table as text with a row limit. */
static void test_steps_and_text(void **state)
{
	static const char *const ev[] = { "cycles", "instructions", "cache-misses",
					  "cache-references" };
	struct namer n = { { 0 } };
	struct hwspy_table *t = new_table(&n, ev, 4);
	struct hwspy_table_view_opts vo = { .tid = HWSPY_TABLE_ALL_THREADS };
	uint32_t sa[] = { 0 }, sb[] = { 1 }, sc[] = { 3 };
	uint64_t v[] = { 1, 1000, 2000, 10, 100 };
	const char *text;
	(void) state;

	hwspy_table_step(t, &vo, HWSPY_TABLE_SORT_LEFT);
	assert_int_equal(vo.sort, 0);
	for (int i = 0; i < 10; i++)
		hwspy_table_step(t, &vo, HWSPY_TABLE_SORT_RIGHT);
	assert_int_equal(vo.sort, 7);                           /* the last of 8 columns */
	hwspy_table_step(t, &vo, HWSPY_TABLE_SORT_LEFT);
	assert_int_equal(vo.sort, 6);
	hwspy_table_step(t, &vo, HWSPY_TABLE_SORT_SELF);
	assert_int_equal(vo.sort, HWSPY_TABLE_COL_SELF);
	hwspy_table_step(t, &vo, HWSPY_TABLE_SORT_TOTAL);
	assert_int_equal(vo.sort, HWSPY_TABLE_COL_TOTAL);
	hwspy_table_step(t, &vo, HWSPY_TABLE_NEXT_THREAD);
	assert_int_equal(vo.tid, HWSPY_TABLE_ALL_THREADS);      /* no thread yet */
	assert_int_equal(hwspy_table_add(t, 7, sa, 1, v, 5), 0);
	assert_int_equal(hwspy_table_add(t, 3, sb, 1, v, 5), 0);
	assert_int_equal(hwspy_table_add(t, 3, sc, 1, v, 5), 0);
	hwspy_table_step(t, &vo, HWSPY_TABLE_NEXT_THREAD);
	assert_int_equal(vo.tid, 3);
	hwspy_table_step(t, &vo, HWSPY_TABLE_NEXT_THREAD);
	assert_int_equal(vo.tid, 7);
	hwspy_table_step(t, &vo, HWSPY_TABLE_NEXT_THREAD);
	assert_int_equal(vo.tid, HWSPY_TABLE_ALL_THREADS);
	hwspy_table_step(t, &vo, HWSPY_TABLE_NATIVE);
	assert_true(vo.hide_native);
	hwspy_table_step(t, &vo, HWSPY_TABLE_NATIVE);
	assert_false(vo.hide_native);

	vo.sort = HWSPY_TABLE_COL_SELF;
	assert_int_equal(hwspy_table_view(t, &vo), 0);
	assert_int_equal(hwspy_table_rows(t), 3);
	for (size_t max = 0; max < 3; max++) {
		char want[1024] = "";

		assert_int_equal(hwspy_table_header_text(t, 0, &text), 0);
		strcat(strcat(want, text), "\n");
		for (size_t i = 0; i < (max ? max : 3); i++) {
			assert_int_equal(hwspy_table_row_text(t, i, 0, &text), 0);
			strcat(strcat(want, text), "\n");
		}
		assert_int_equal(hwspy_table_text(t, max, &text), 0);
		assert_string_equal(text, want);
	}
	hwspy_table_free(t);
}

/* This process: CPU time that grows with work, one thread's switches, its name; a pid that is
 * not there. */
static void test_target(void **state)
{
	struct hwspy_switches sw;
	uint64_t before, after;
	volatile uint64_t x = 0;
	char comm[32];
	struct timespec t0, t1;
	(void) state;

	assert_int_equal(hwspy_target_cpu_ns(getpid(), &before), 0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 1000000; i++)
			x += (uint64_t) i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 50000000L);
	assert_int_equal(hwspy_target_cpu_ns(getpid(), &after), 0);
	assert_true(after > before);
	assert_int_equal(hwspy_target_switches(getpid(), 256, &sw), 0);
	assert_int_equal(sw.read, 1);
	assert_int_equal(sw.listed, 1);
	assert_int_equal(hwspy_target_comm(getpid(), comm, sizeof(comm)), 0);
	assert_string_equal(comm, "test_api_table");
	assert_int_equal(hwspy_target_cpu_ns(0x3fffffff, &after), -ESRCH);
	assert_true(strstr(hwspy_reason(), "no such process") != NULL);
	assert_int_equal(hwspy_target_switches(0x3fffffff, 256, &sw), -ESRCH);
	assert_int_equal(hwspy_target_comm(0x3fffffff, comm, sizeof(comm)), -ESRCH);
}

/* (topshrink) A table of a recorder's profile (attached to this process, not started): its
 * events' columns, a frame the profile does not have refused; the rates from two readings of
 * this process: none at the first, then samples, CPU and switches, a count that went down (a
 * thread gone) a rate of 0. */
static void test_recording_and_rates(void **state)
{
	struct hwspy_record_opts o;
	struct hwspy_recorder *rec = NULL;
	struct hwspy_table *t = NULL;
	struct hwspy_live_rates q = { 0 };
	uint32_t frames[] = { 1000000 };
	uint64_t v[] = { 1, 1 };
	struct hwspy_sample s = { .tid = 1, .frames = frames, .depth = 1, .values = v,
				  .n_values = 2 };
	struct timespec t0, t1;
	volatile uint64_t x = 0;
	(void) state;

	hwspy_record_opts_init(&o);
	o.pid = getpid();
	assert_int_equal(hwspy_recorder_new(&o, NULL, NULL, &rec), 0);
	assert_int_equal(hwspy_table_new_recording(rec, &t), 0);
	assert_int_equal(hwspy_table_n_columns(t), 2);
	assert_string_equal(hwspy_table_column_name(t, 1), "total%");
	assert_int_equal(hwspy_table_add_sample(t, &s), -EINVAL);       /* no such frame */
	assert_int_equal(hwspy_table_samples(t), 0);
	if (hwspy_profile_n_frames(hwspy_recorder_profile(rec)) > 0) {
		/* a frame the profile has (its own, made before any sample): named as its text */
		struct hwspy_table_view_opts vo = { .tid = HWSPY_TABLE_ALL_THREADS };
		char want[256];
		const char *text;

		frames[0] = 0;
		assert_true(hwspy_profile_frame_text(hwspy_recorder_profile(rec), 0, want,
						     sizeof(want)) >= 0);
		assert_int_equal(hwspy_table_add_sample(t, &s), 0);
		assert_int_equal(hwspy_table_view(t, &vo), 0);
		assert_int_equal(hwspy_table_row_text(t, 0, 0, &text), 0);
		assert_string_equal(text + strlen(text) - strlen(want), want);
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	hwspy_live_rates_read(&q, rec, (uint64_t) t0.tv_sec * 1000000000ULL + (uint64_t) t0.tv_nsec);
	assert_false(q.samples_ok || q.cpu_ok || q.sw_ok);
	assert_string_equal(q.comm, "test_api_table");
	assert_true(q.cores >= 1);
	q.sw.involuntary = UINT64_MAX;  /* as if a thread with many had exited since */
	do {
		for (int i = 0; i < 1000000; i++)
			x += (uint64_t) i;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 100000000L);
	hwspy_live_rates_read(&q, rec, (uint64_t) t1.tv_sec * 1000000000ULL + (uint64_t) t1.tv_nsec);
	assert_true(q.samples_ok && q.samples_s == 0);
	assert_true(q.cpu_ok && q.cpu_pct > 0);
	assert_true(q.sw_ok && q.sw.read == 1 && q.invol_s == 0);
	assert_int_equal(q.lost, 0);
	hwspy_table_free(t);
	hwspy_recorder_free(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sums_threads_zero),
		cmocka_unit_test(test_native_and_errors),
		cmocka_unit_test(test_columns_and_text),
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_steps_and_text),
		cmocka_unit_test(test_recording_and_rates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
