/* hwspy top's /proc reads (cli/top_proc.c) on a fake /proc tree: CPU ticks from a stat line
 * whose comm holds ') ', context switches summed over the tasks, the cap on tasks read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/top_proc.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
	(void) state;
	snprintf(root, sizeof(root), "/tmp/hwspy-top-proc-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	dir("42");
	dir("42/task");
	/* comm "a) (b": the last ')' ends it; utime 150, stime 50 */
	put("42/stat", "42 (a) (b) R 1 42 42 0 -1 4194304 100 0 0 0 150 50 0 0 20 0 3 0 1 2 3\n");
	for (int i = 0; i < 3; i++) {
		char rel[64], text[256];
		snprintf(rel, sizeof(rel), "42/task/%d", 42 + i);
		dir(rel);
		snprintf(rel, sizeof(rel), "42/task/%d/status", 42 + i);
		snprintf(text, sizeof(text), "Name:\tpython3\nState:\tR (running)\n"
			 "voluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n",
			 10 * (i + 1), i + 1);
		put(rel, text);
	}
	dir("43");
	put("43/stat", "43 (x) R 1 2\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void) state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_cpu(void **state)
{
	uint64_t ticks = 0;
	(void) state;

	assert_int_equal(top_proc_cpu(root, 42, &ticks), 0);
	assert_int_equal(ticks, 200);
	assert_int_equal(top_proc_cpu(root, 43, &ticks), -EBADMSG);
	assert_int_equal(top_proc_cpu(root, 44, &ticks), -ENOENT);
}

static void test_switches(void **state)
{
	struct top_switches sw;
	(void) state;

	assert_int_equal(top_proc_switches(root, 42, TOP_PROC_MAX_TASKS, &sw), 0);
	assert_int_equal(sw.voluntary, 60);
	assert_int_equal(sw.involuntary, 6);
	assert_int_equal(sw.read, 3);
	assert_int_equal(sw.seen, 3);
	/* at most 2 tasks read, all 3 listed */
	assert_int_equal(top_proc_switches(root, 42, 2, &sw), 0);
	assert_int_equal(sw.read, 2);
	assert_int_equal(sw.seen, 3);
	assert_true(sw.voluntary >= 30 && sw.voluntary <= 50);
	assert_int_equal(top_proc_switches(root, 44, 2, &sw), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_switches),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
