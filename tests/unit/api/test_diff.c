/* hwspy.h's steps of `hwspy diff` and convert's pprof limit, through include/hwspy.h alone
 * (linked with libhwspy): two folded files read, merged and checked (a side with no samples, an
 * unreadable one, unrelated programs, --force), the "only in" test of each side's events, the
 * event --weight picks, the diff format by name and by file name; and the facts of a value
 * over pprof's limit. Everything freed (LeakSanitizer under the sanitizer build). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "include/hwspy.h"

/* A temporary file holding text: its path (static buffers, one per slot). */
static const char *file_of(int slot, const char *text)
{
	static char paths[4][64];
	FILE *f;
	int fd;

	snprintf(paths[slot], sizeof(paths[slot]), "/tmp/hwspy-test-diff-XXXXXX");
	fd = mkstemp(paths[slot]);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return paths[slot];
}

static void test_comparable(void **state)
{
	const char *paths[2] = { file_of(0, "main;a;b 5\nmain;c 3\n"),
				 file_of(1, "main;a;b 2\nmain;c 6\n") };
	struct hwspy_diff_files d;

	(void) state;
	assert_int_equal(hwspy_diff_files_read(paths, NULL, &d), 0);
	assert_int_equal(d.problem, HWSPY_DIFF_COMPARABLE);
	assert_non_null(d.merged);
	assert_int_equal(hwspy_diff_n_events(d.merged), 1);
	assert_true(hwspy_diff_compares(d.merged, d.in[0], 0));        /* unnamed counts pair */
	assert_int_equal(hwspy_diff_find_event(d.merged, NULL), 0);
	assert_int_equal(hwspy_diff_find_event(d.merged, "nope"), -ENOENT);
	assert_int_equal(hwspy_diff_files_check(&d, false), 0);
	hwspy_diff_files_release(&d);
	hwspy_diff_files_release(&d);   /* twice: nothing left to free */
	unlink(paths[0]);
	unlink(paths[1]);
}

static void test_problems(void **state)
{
	const char *some = file_of(0, "main;a 5\n"), *none = file_of(1, ""),
		   *other = file_of(2, "x;y 5\n");
	const char *empty_after[2] = { some, none }, *missing[2] = { "/nonexistent/x", some },
		   *unrelated[2] = { some, other };
	struct hwspy_diff_files d;

	(void) state;
	assert_true(hwspy_diff_files_read(empty_after, NULL, &d) < 0);
	assert_int_equal(d.problem, HWSPY_DIFF_EMPTY);
	assert_int_equal(d.side, 1);
	assert_null(d.merged);
	hwspy_diff_files_release(&d);

	assert_true(hwspy_diff_files_read(missing, NULL, &d) < 0);
	assert_int_equal(d.problem, HWSPY_DIFF_UNREADABLE);
	assert_int_equal(d.side, 0);
	assert_non_null(strstr(hwspy_reason(), "/nonexistent/x"));
	hwspy_diff_files_release(&d);

	assert_int_equal(hwspy_diff_files_read(unrelated, NULL, &d), 0);
	assert_int_equal(hwspy_diff_files_check(&d, false), -EDOM);
	assert_int_equal(d.problem, HWSPY_DIFF_UNRELATED);
	assert_int_equal(d.event, 0);
	assert_true(d.common[0] < HWSPY_DIFF_MIN_COMMON && d.common[1] < HWSPY_DIFF_MIN_COMMON);
	assert_int_equal(hwspy_diff_files_check(&d, true), 0);          /* --force */
	assert_int_equal(d.problem, HWSPY_DIFF_COMPARABLE);
	hwspy_diff_files_release(&d);
	unlink(some);
	unlink(none);
	unlink(other);
}

static void test_formats(void **state)
{
	enum hwspy_diff_format f;

	(void) state;
	assert_int_equal(hwspy_diff_format_parse("txt", &f), 0);
	assert_int_equal(f, HWSPY_DIFF_TABLE);
	assert_int_equal(hwspy_diff_format_parse("svg", &f), 0);
	assert_int_equal(f, HWSPY_DIFF_SVG);
	assert_int_equal(hwspy_diff_format_parse("folded", &f), 0);
	assert_int_equal(f, HWSPY_DIFF_FOLDED);
	assert_int_equal(hwspy_diff_format_parse("pprof", &f), -EINVAL);
	assert_int_equal(hwspy_diff_format_of_path("a.svg"), HWSPY_DIFF_SVG);
	assert_int_equal(hwspy_diff_format_of_path("a.collapsed"), HWSPY_DIFF_FOLDED);
	assert_int_equal(hwspy_diff_format_of_path("a.folded"), HWSPY_DIFF_FOLDED);
	assert_int_equal(hwspy_diff_format_of_path("svg"), HWSPY_DIFF_TABLE);
}

static void test_pprof_limit(void **state)
{
	const char *fits = file_of(0, "a;b 5\n"), *one = file_of(1, "a;b 9223372036854775808\n"),
		   *sum = file_of(2, "a;b 9223372036854775807\na;c 1\n");
	struct hwspy_pprof_limit l;
	struct hwspy_profile *p;

	(void) state;
	assert_int_equal(hwspy_profile_load(fits, &p), 0);
	assert_int_equal(hwspy_profile_pprof_limit(p, &l), -ENOENT);
	hwspy_profile_free(p);
	assert_int_equal(hwspy_profile_load(one, &p), 0);
	assert_int_equal(hwspy_profile_pprof_limit(p, &l), 0);
	assert_false(l.sum);
	assert_true(l.value == 9223372036854775808ull && l.limit == INT64_MAX);
	assert_string_equal(l.event, l.col ? hwspy_profile_event(p, l.col - 1) : "samples");
	hwspy_profile_free(p);
	assert_int_equal(hwspy_profile_load(sum, &p), 0);
	assert_int_equal(hwspy_profile_pprof_limit(p, &l), 0);
	assert_true(l.sum);
	hwspy_profile_free(p);
	unlink(fits);
	unlink(one);
	unlink(sum);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comparable),
		cmocka_unit_test(test_problems),
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_pprof_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
