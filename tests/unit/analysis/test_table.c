/* hwspy top's table (analysis/table.c): a sample stream summed per (thread, function), self
 * against total with recursion, the sort keys, the thread filter and its cycle, zeroing, rows
 * of one text merged, native rows hidden, the derived columns, and the text of a row cut to a
 * width. Frames are a profile's (output/profile.h), named as `top` names them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/table.h"
#include "base/buf.h"
#include "output/output.h"
#include "output/profile.h"

struct fixture {
	struct profile *p;
	struct table *t;
	struct buf name;                /* frame_name()'s */
	uint32_t a, b, c, n1, n2;       /* Python a, b, c; native n1, n2 (one text) */
};

static const char *frame_name(void *ctx, uint32_t id)
{
	struct fixture *x = ctx;

	if (id >= profile_n_frames(x->p))
		return NULL;
	buf_reset(&x->name);
	return folded_frame_text(profile_frame(x->p, id), &x->name) < 0 ? NULL : x->name.data;
}

static bool frame_native(void *ctx, uint32_t id)
{
	struct fixture *x = ctx;
	const struct profile_frame *f = profile_frame(x->p, id);

	return f && (f->kind == FRAME_NATIVE || f->kind == FRAME_KERNEL);
}

static uint32_t frame(struct profile *p, enum frame_kind kind, const char *name, int line,
		      const char *module)
{
	struct profile_frame f = {
		.kind = kind, .name = name, .file = kind == FRAME_PYTHON ? "w.py" : NULL,
		.line = line, .module = module,
	};
	uint32_t id;

	assert_int_equal(profile_frame_id(p, &f, &id), 0);
	return id;
}

static void setup_events(struct fixture *x, const char *const *events, size_t n)
{
	x->p = profile_new(events, n);
	assert_non_null(x->p);
	x->a = frame(x->p, FRAME_PYTHON, "a", 1, NULL);
	x->b = frame(x->p, FRAME_PYTHON, "b", 5, NULL);
	x->c = frame(x->p, FRAME_PYTHON, "c", 9, NULL);
	x->n1 = frame(x->p, FRAME_NATIVE, "memcpy", 10, "libc.so.6");
	x->n2 = frame(x->p, FRAME_NATIVE, "memcpy", 20, "libc.so.6");
	{
		struct table_opts o = { .events = events, .n_events = n, .frame_name = frame_name,
					.frame_native = frame_native, .ctx = x };
		buf_init(&x->name);
		assert_int_equal(table_new(&o, &x->t), 0);
	}
}

static void teardown(struct fixture *x)
{
	table_free(x->t);
	profile_free(x->p);
	buf_release(&x->name);
}

static void add(struct fixture *x, uint32_t tid, const uint32_t *frames, size_t depth,
		uint64_t weight)
{
	uint64_t v[2] = { 1, weight };

	assert_int_equal(table_add(x->t, tid, frames, depth, v, 2), 0);
}

/* tid 1: a;b three times, a;c once; tid 2: a;b;b;a (a recursion through b) */
static void stream(struct fixture *x)
{
	uint32_t ab[] = { x->a, x->b }, ac[] = { x->a, x->c };
	uint32_t abba[] = { x->a, x->b, x->b, x->a };

	for (int i = 0; i < 3; i++)
		add(x, 1, ab, 2, 10);
	add(x, 1, ac, 2, 10);
	add(x, 2, abba, 4, 10);
}

static const struct table_row *row_of(const struct table_view *v, uint32_t frame)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->rows[i].frame == frame)
			return &v->rows[i];
	return NULL;
}

static void test_self_total_recursion(void **state)
{
	static const char *const ev[] = { "cpu-clock" };
	struct fixture x;
	struct table_view v = { 0 };
	struct table_view_opts vo = { .tid = TABLE_ALL_THREADS, .sort = TABLE_COL_SELF };
	double d;
	(void) state;

	setup_events(&x, ev, 1);
	stream(&x);
	assert_int_equal(table_samples(x.t), 5);
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.n, 3);
	assert_int_equal(v.sum[0], 5);
	assert_int_equal(v.sum[1], 50);
	/* a: the leaf once (a;b;b;a), on every stack once however often it recurs */
	assert_int_equal(row_of(&v, x.a)->self[1], 10);
	assert_int_equal(row_of(&v, x.a)->total[1], 50);
	assert_int_equal(row_of(&v, x.a)->total[0], 5);
	assert_int_equal(row_of(&v, x.b)->self[1], 30);
	assert_int_equal(row_of(&v, x.b)->total[1], 40);
	assert_int_equal(row_of(&v, x.c)->self[1], 10);
	assert_int_equal(row_of(&v, x.c)->total[1], 10);
	/* by self: b (60%), then a and c (20% each) in total order */
	assert_int_equal(v.rows[0].frame, x.b);
	assert_int_equal(v.rows[1].frame, x.a);
	assert_int_equal(v.rows[2].frame, x.c);
	assert_true(table_view_value(x.t, &v, 0, TABLE_COL_SELF, &d));
	assert_true(d > 59.99 && d < 60.01);
	assert_true(table_view_value(x.t, &v, 1, TABLE_COL_TOTAL, &d));
	assert_true(d > 99.99 && d < 100.01);
	/* by total: a (100%), b (80%), c (20%) */
	vo.sort = TABLE_COL_TOTAL;
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.sort, TABLE_COL_TOTAL);
	assert_int_equal(v.rows[0].frame, x.a);
	assert_int_equal(v.rows[1].frame, x.b);
	assert_int_equal(v.rows[2].frame, x.c);
	/* a column past the last: self */
	vo.sort = 99;
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.sort, TABLE_COL_SELF);
	table_view_release(&v);
	teardown(&x);
}

static void test_threads_and_zero(void **state)
{
	static const char *const ev[] = { "cpu-clock" };
	struct fixture x;
	struct table_view v = { 0 };
	struct table_view_opts vo = { .tid = 2, .sort = TABLE_COL_SELF };
	uint32_t ab[] = { 0, 0 };
	(void) state;

	setup_events(&x, ev, 1);
	stream(&x);
	assert_int_equal(table_n_threads(x.t), 2);
	assert_int_equal(table_thread(x.t, 0), 1);
	assert_int_equal(table_thread(x.t, 1), 2);
	/* the 'T' cycle: all, 1, 2, all */
	assert_int_equal(table_next_thread(x.t, TABLE_ALL_THREADS), 1);
	assert_int_equal(table_next_thread(x.t, 1), 2);
	assert_int_equal(table_next_thread(x.t, 2), TABLE_ALL_THREADS);
	/* thread 2 alone: a (self 10, total 10) and b (total 10); c is thread 1's */
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.n, 2);
	assert_int_equal(v.sum[1], 10);
	assert_int_equal(v.rows[0].frame, x.a);
	assert_int_equal(row_of(&v, x.a)->total[1], 10);
	assert_int_equal(row_of(&v, x.b)->self[1], 0);
	assert_null(row_of(&v, x.c));
	vo.tid = 7;
	assert_int_equal(table_view(x.t, &vo, &v), -EINVAL);
	/* zeroed: no rows, no samples, the threads kept; counting again from 0 */
	table_zero(x.t);
	assert_int_equal(table_samples(x.t), 0);
	assert_int_equal(table_n_threads(x.t), 2);
	vo.tid = TABLE_ALL_THREADS;
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.n, 0);
	ab[0] = x.a;
	ab[1] = x.c;
	add(&x, 1, ab, 2, 7);
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.n, 2);
	assert_int_equal(v.rows[0].frame, x.c);
	assert_int_equal(v.rows[0].self[1], 7);
	assert_int_equal(v.sum[1], 7);
	table_view_release(&v);
	teardown(&x);
}

static void test_native_rows(void **state)
{
	static const char *const ev[] = { "cpu-clock" };
	struct fixture x;
	struct table_view v = { 0 };
	struct table_view_opts vo = { .tid = TABLE_ALL_THREADS, .sort = TABLE_COL_SELF };
	uint32_t s1[] = { 0, 0 }, s2[] = { 0, 0 };
	(void) state;

	setup_events(&x, ev, 1);
	s1[0] = s2[0] = x.a;
	s1[1] = x.n1;
	s2[1] = x.n2;
	add(&x, 1, s1, 2, 10);
	add(&x, 1, s2, 2, 10);
	/* memcpy [libc.so.6] at two addresses: one row */
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.n, 2);
	assert_int_equal(v.rows[0].frame, x.n1);
	assert_int_equal(v.rows[0].self[1], 20);
	vo.hide_native = true;
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.n, 1);
	assert_int_equal(v.rows[0].frame, x.a);
	assert_int_equal(v.rows[0].total[1], 20);
	table_view_release(&v);
	teardown(&x);
}

static void test_event_and_ratio_columns(void **state)
{
	static const char *const ev[] = { "cycles", "instructions", "cache-misses", "cache-references" };
	struct fixture x;
	struct table_view v = { 0 };
	struct table_view_opts vo = { .tid = TABLE_ALL_THREADS, .sort = TABLE_COL_SELF };
	uint32_t sa[] = { 0 }, sb[] = { 0 };
	uint64_t va[] = { 1, 1000, 2000, 10, 100 }, vb[] = { 1, 3000, 1500, 0, 0 };
	double d;
	(void) state;

	setup_events(&x, ev, 4);
	sa[0] = x.a;
	sb[0] = x.b;
	assert_int_equal(table_n_columns(x.t), 8);
	assert_string_equal(table_column_name(x.t, 2), "instructions%");
	assert_string_equal(table_column_name(x.t, 4), "cache-references%");
	assert_string_equal(table_column_name(x.t, 5), "IPC");
	assert_string_equal(table_column_name(x.t, 6), "cache-misses/1k-instr");
	assert_string_equal(table_column_name(x.t, 7), "cache miss%");
	assert_null(table_column_name(x.t, 8));
	assert_int_equal(table_add(x.t, 1, sa, 1, va, 5), 0);
	assert_int_equal(table_add(x.t, 1, sb, 1, vb, 5), 0);
	assert_int_equal(table_add(x.t, 1, sb, 1, vb, 4), -EINVAL);
	sb[0] = 999;
	assert_int_equal(table_add(x.t, 1, sb, 1, vb, 5), -EINVAL);
	assert_int_equal(table_samples(x.t), 2);
	/* by IPC: a (2.0) before b (0.5) */
	vo.sort = 5;
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.rows[0].frame, x.a);
	assert_true(table_view_value(x.t, &v, 0, 5, &d) && d == 2.0);
	assert_true(table_view_value(x.t, &v, 1, 5, &d) && d == 0.5);
	assert_true(table_view_value(x.t, &v, 0, 6, &d) && d == 5.0);    /* 10 per 2000 */
	assert_true(table_view_value(x.t, &v, 0, 7, &d) && d == 10.0);   /* 10 of 100 */
	assert_false(table_view_value(x.t, &v, 1, 7, &d));               /* no references */
	assert_true(table_view_value(x.t, &v, 0, 2, &d) && d > 57.1 && d < 57.2);  /* 2000/3500 */
	/* by the sort column, the undefined last: b has no miss rate */
	vo.sort = 7;
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	assert_int_equal(v.rows[0].frame, x.a);
	assert_false(v.rows[1].has_key);
	table_view_release(&v);
	teardown(&x);
}

static void test_text_fits(void **state)
{
	static const char *const ev[] = { "cycles", "instructions" };
	struct fixture x;
	struct table_view v = { 0 };
	struct table_view_opts vo = { .tid = TABLE_ALL_THREADS, .sort = TABLE_COL_TOTAL };
	uint32_t s[] = { 0 };
	uint64_t val[] = { 1, 100, 50 };
	struct buf b;
	(void) state;

	setup_events(&x, ev, 2);
	s[0] = frame(x.p, FRAME_PYTHON, "a_function_with_a_long_name_é_and_more", 3, NULL);
	assert_int_equal(table_add(x.t, 1, s, 1, val, 3), 0);
	assert_int_equal(table_view(x.t, &vo, &v), 0);
	buf_init(&b);
	/* no limit: every column, the whole name */
	assert_int_equal(table_fit(x.t, 0), 4);
	assert_int_equal(table_header_text(x.t, &v, 0, &b), 0);
	assert_string_equal(b.data, "  self% *total%  instructions%     IPC function");
	buf_reset(&b);
	assert_int_equal(table_row_text(x.t, &v, 0, 0, &b), 0);
	assert_string_equal(b.data, "  100.0   100.0          100.0    0.50 "
				    "a_function_with_a_long_name_é_and_more (w.py:3)");
	/* 40 columns: self and total (8 + 8; instructions% needs 15 more, and the name 20) and
	 * 24 of the name, cut with ".." */
	assert_int_equal(table_fit(x.t, 40), 2);
	buf_reset(&b);
	assert_int_equal(table_row_text(x.t, &v, 0, 40, &b), 0);
	assert_string_equal(b.data, "  100.0   100.0 a_function_with_a_long..");
	/* a cut inside the UTF-8 name: whole characters */
	buf_reset(&b);
	assert_int_equal(table_row_text(x.t, &v, 0, 47, &b), 0);
	assert_string_equal(b.data, "  100.0   100.0 a_function_with_a_long_name_é..");
	/* too narrow for any column: the name alone */
	assert_int_equal(table_fit(x.t, 10), 0);
	buf_reset(&b);
	assert_int_equal(table_row_text(x.t, &v, 0, 10, &b), 0);
	assert_string_equal(b.data, "a_functi..");
	buf_release(&b);
	table_view_release(&v);
	teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_total_recursion),
		cmocka_unit_test(test_threads_and_zero),
		cmocka_unit_test(test_native_rows),
		cmocka_unit_test(test_event_and_ratio_columns),
		cmocka_unit_test(test_text_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
