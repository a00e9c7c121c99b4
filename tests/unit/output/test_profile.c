/* The profile model: interning of frames and stacks, value vectors, totals. */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "output/profile.h"

static void test_frames_interned(void **state)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1);
	char name[16];
	uint32_t a, b, c, d;
	(void) state;

	assert_non_null(p);
	strcpy(name, "f");
	struct profile_frame f = { FRAME_PYTHON, name, "x.py", 3, NULL };
	assert_int_equal(profile_frame_id(p, &f, &a), 0);
	strcpy(name, "g");      /* the profile copied the string */
	assert_string_equal(profile_frame(p, a)->name, "f");
	strcpy(name, "f");
	assert_int_equal(profile_frame_id(p, &f, &b), 0);
	assert_int_equal(a, b);
	f.line = 4;
	assert_int_equal(profile_frame_id(p, &f, &c), 0);
	assert_int_not_equal(a, c);
	f.kind = FRAME_NATIVE;
	f.line = 3;
	assert_int_equal(profile_frame_id(p, &f, &d), 0);
	assert_int_not_equal(a, d);
	assert_int_equal(profile_n_frames(p), 3);
	f.name = NULL;
	assert_int_equal(profile_frame_id(p, &f, &d), -22);
	profile_free(p);
}

/* Thread names, and a thread frame renamed once the thread's own name is known. */
static void test_thread_names(void **state)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1);
	struct profile_frame t = { FRAME_THREAD, "[thread 7 python3]", NULL, 0, NULL };
	struct profile_frame g = { FRAME_PYTHON, "g", "x.py", 1, NULL };
	struct profile_frame o = { FRAME_THREAD, "[thread 8 other]", NULL, 0, NULL };
	uint32_t a, b, c, d, e;
	char name[32];
	(void) state;

	assert_non_null(p);
	assert_null(profile_thread_name(p, 7));
	strcpy(name, "python3");
	assert_int_equal(profile_set_thread_name(p, 7, name), 0);
	strcpy(name, "x");      /* copied */
	assert_string_equal(profile_thread_name(p, 7), "python3");
	assert_int_equal(profile_set_thread_name(p, 7, "MainThread"), 0);
	assert_string_equal(profile_thread_name(p, 7), "MainThread");
	assert_null(profile_thread_name(p, 8));

	assert_int_equal(profile_frame_id(p, &t, &a), 0);
	assert_int_equal(profile_frame_id(p, &g, &b), 0);
	assert_int_equal(profile_frame_id(p, &o, &e), 0);
	assert_int_equal(profile_frame_rename(p, a, "[thread 7 MainThread]"), 0);
	assert_string_equal(profile_frame(p, a)->name, "[thread 7 MainThread]");
	/* found by its new name, not by its old one; the others still found */
	t.name = "[thread 7 MainThread]";
	assert_int_equal(profile_frame_id(p, &t, &c), 0);
	assert_int_equal(c, a);
	assert_int_equal(profile_frame_id(p, &g, &d), 0);
	assert_int_equal(d, b);
	t.name = "[thread 7 python3]";
	assert_int_equal(profile_frame_id(p, &t, &c), 0);
	assert_int_not_equal(c, a);
	assert_int_equal(profile_frame_rename(p, e, "[thread 7 MainThread]"), -EEXIST);
	assert_int_equal(profile_frame_rename(p, 99, "x"), -EINVAL);
	assert_int_equal(profile_n_frames(p), 4);
	profile_free(p);
}

static void test_stacks_and_values(void **state)
{
	const char *ev[] = { "cpu-clock", "page-faults" };
	struct profile *p = profile_new(ev, 2);
	uint32_t ids[3];
	uint64_t v1[3] = { 1, 1000, 2 }, v2[3] = { 1, 500, 0 };
	(void) state;

	for (int i = 0; i < 3; i++) {
		char n[8];
		snprintf(n, sizeof(n), "f%d", i);
		struct profile_frame f = { .kind = FRAME_PYTHON, .name = n, .file = "a.py", .line = i + 1 };
		assert_int_equal(profile_frame_id(p, &f, &ids[i]), 0);
	}
	assert_int_equal(profile_add(p, 7, ids, 3, v1), 0);
	assert_int_equal(profile_add(p, 7, ids, 3, v2), 0);
	assert_int_equal(profile_add(p, 8, ids, 3, v2), 0);   /* another thread: another stack */
	assert_int_equal(profile_add(p, 7, ids, 2, v2), 0);
	assert_int_equal(profile_n_stacks(p), 3);
	assert_int_equal(profile_values(p, 0)[0], 2);
	assert_int_equal(profile_values(p, 0)[1], 1500);
	assert_int_equal(profile_values(p, 0)[2], 2);
	assert_int_equal(profile_total(p, 0), 4);
	assert_int_equal(profile_total(p, 1), 2500);
	assert_int_equal(profile_total(p, 2), 2);
	assert_int_equal(profile_stack(p, 1)->tid, 8);
	assert_int_equal(profile_stack(p, 2)->depth, 2);
	/* bad input: unknown frame id, empty stack */
	uint32_t bad = 99;
	assert_int_equal(profile_add(p, 7, &bad, 1, v1), -22);
	assert_int_equal(profile_add(p, 7, ids, 0, v1), -22);
	assert_int_equal(profile_find_event(p, "page-faults"), 1);
	assert_int_equal(profile_find_event(p, "page-faults:u"), 1);
	assert_int_equal(profile_find_event(p, "cycles"), -2);
	profile_free(p);
}

static void test_many_stacks(void **state)
{
	const char *ev[] = { "cycles" };
	struct profile *p = profile_new(ev, 1);
	uint64_t v[2] = { 1, 10 };
	(void) state;

	/* 20000 distinct stacks over 100 frames: the tables grow and keep every stack */
	uint32_t fr[100];
	for (int i = 0; i < 100; i++) {
		char n[8];
		snprintf(n, sizeof(n), "f%d", i);
		struct profile_frame f = { .kind = FRAME_NATIVE, .name = n };
		assert_int_equal(profile_frame_id(p, &f, &fr[i]), 0);
	}
	for (int i = 0; i < 20000; i++) {
		uint32_t st[3] = { fr[i % 100], fr[(i / 100) % 100], fr[(i / 7) % 100] };
		assert_int_equal(profile_add(p, 1, st, 3, v), 0);
	}
	for (int i = 0; i < 20000; i++) {
		uint32_t st[3] = { fr[i % 100], fr[(i / 100) % 100], fr[(i / 7) % 100] };
		assert_int_equal(profile_add(p, 1, st, 3, v), 0);
	}
	assert_int_equal(profile_total(p, 0), 40000);
	assert_true(profile_n_stacks(p) <= 20000);
	for (size_t i = 0; i < profile_n_stacks(p); i++)
		assert_true(profile_values(p, i)[0] % 2 == 0);
	profile_free(p);
}

static void test_build_ids(void **state)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1);
	const char *mod = NULL;
	char name[16] = "libz.so.1";
	(void) state;

	assert_non_null(p);
	assert_null(profile_build_id(p, "libz.so.1"));        /* nothing interned yet */
	assert_int_equal(profile_n_build_ids(p), 0);
	assert_int_equal(profile_set_build_id(p, name, "8D3Fa0"), 0);
	strcpy(name, "x");      /* copied */
	assert_string_equal(profile_build_id(p, "libz.so.1"), "8d3fa0");
	assert_null(profile_build_id(p, "libc.so.6"));
	assert_null(profile_build_id(p, "cpu-clock"));        /* interned, but no build-id */
	assert_int_equal(profile_set_build_id(p, "libc.so.6", "00ff"), 0);
	assert_int_equal(profile_set_build_id(p, "libz.so.1", "abcd"), 0);      /* replaced */
	assert_int_equal(profile_n_build_ids(p), 2);
	assert_string_equal(profile_build_id_at(p, 0, &mod), "abcd");
	assert_string_equal(mod, "libz.so.1");
	assert_string_equal(profile_build_id_at(p, 1, &mod), "00ff");
	assert_string_equal(mod, "libc.so.6");
	assert_null(profile_build_id_at(p, 2, &mod));
	/* dropped: the others keep their order; dropping what has none changes nothing */
	assert_int_equal(profile_set_build_id(p, "ld.so", "beef"), 0);
	profile_drop_build_id(p, "libc.so.6");
	profile_drop_build_id(p, "libc.so.6");
	profile_drop_build_id(p, "nosuchmodule");
	profile_drop_build_id(p, NULL);
	assert_null(profile_build_id(p, "libc.so.6"));
	assert_int_equal(profile_n_build_ids(p), 2);
	assert_string_equal(profile_build_id_at(p, 0, &mod), "abcd");
	assert_string_equal(profile_build_id_at(p, 1, &mod), "beef");
	assert_string_equal(mod, "ld.so");
	profile_drop_build_id(p, "ld.so");
	assert_int_equal(profile_set_build_id(p, "libc.so.6", "00ff"), 0);
	/* not hex, odd, empty, too long, no module */
	assert_int_equal(profile_set_build_id(p, "m", "abcg"), -EINVAL);
	assert_int_equal(profile_set_build_id(p, "m", "abc"), -EINVAL);
	assert_int_equal(profile_set_build_id(p, "m", ""), -EINVAL);
	assert_int_equal(profile_set_build_id(p, "m", NULL), -EINVAL);
	assert_int_equal(profile_set_build_id(p, "", "ab"), -EINVAL);
	assert_int_equal(profile_set_build_id(p, NULL, "ab"), -EINVAL);
	char big[PROFILE_MAX_BUILD_ID + 3];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(profile_set_build_id(p, "m", big), -EINVAL);
	big[PROFILE_MAX_BUILD_ID] = '\0';
	assert_int_equal(profile_set_build_id(p, "m", big), 0);
	assert_int_equal(profile_n_build_ids(p), 3);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_interned),
		cmocka_unit_test(test_stacks_and_values),
		cmocka_unit_test(test_thread_names),
		cmocka_unit_test(test_many_stacks),
		cmocka_unit_test(test_build_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
