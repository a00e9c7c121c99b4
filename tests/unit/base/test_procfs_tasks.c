/* base/procfs.c's task lister and what hwspy top reads of its target, on a fake /proc tree:
 * the tasks listed (bounded, counted), CPU ticks from a stat line whose comm holds ') ',
 * context switches summed over the tasks, the cap on tasks read; this process's own. */
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

#include "base/procfs.h"

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

	assert_int_equal(procfs_cpu_ticks(root, 42, &ticks), 0);
	assert_int_equal(ticks, 200);
	assert_int_equal(procfs_cpu_ticks(root, 43, &ticks), -EBADMSG);
	assert_int_equal(procfs_cpu_ticks(root, 44, &ticks), -ENOENT);
}

static void test_switches(void **state)
{
	struct procfs_switches sw;
	(void) state;

	assert_int_equal(procfs_switches(root, 42, 256, &sw), 0);
	assert_int_equal(sw.voluntary, 60);
	assert_int_equal(sw.involuntary, 6);
	assert_int_equal(sw.read, 3);
	assert_int_equal(sw.seen, 3);
	/* at most 2 tasks read, all 3 listed */
	assert_int_equal(procfs_switches(root, 42, 2, &sw), 0);
	assert_int_equal(sw.read, 2);
	assert_int_equal(sw.seen, 3);
	assert_true(sw.voluntary >= 30 && sw.voluntary <= 50);
	assert_int_equal(procfs_switches(root, 44, 2, &sw), -ENOENT);
}

/* The one lister: tids in the directory's order, not-a-tid entries skipped, max of them, how
 * many there are counted past max; a process that is not there. */
static void test_tasks(void **state)
{
	pid_t tids[8];
	size_t seen = 99;
	int n;
	(void) state;

	dir("42/task/junk");
	n = procfs_tasks_at(root, 42, tids, 8, &seen);
	assert_int_equal(n, 3);
	assert_int_equal(seen, 3);
	for (int i = 0; i < n; i++)
		assert_true(tids[i] >= 42 && tids[i] <= 44);
	assert_true(tids[0] != tids[1] && tids[1] != tids[2] && tids[0] != tids[2]);
	assert_int_equal(procfs_tasks_at(root, 42, tids, 1, &seen), 1);
	assert_int_equal(seen, 3);
	assert_int_equal(procfs_tasks_at(root, 42, tids, 2, NULL), 2);
	assert_int_equal(procfs_tasks_at(root, 42, NULL, 8, &seen), 3);   /* only counted */
	assert_int_equal(procfs_tasks_at(root, 44, tids, 8, &seen), -ESRCH);
	assert_int_equal(seen, 0);
	/* this process: one thread, itself */
	assert_int_equal(procfs_tasks(getpid(), tids, 8), 1);
	assert_int_equal(tids[0], getpid());
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/42/task/junk", root);
		assert_int_equal(rmdir(path), 0);
	}
}

/* This process's main thread's switches (it has slept: setup wrote files), its name. */
static void test_task_switches_and_comm(void **state)
{
	uint64_t v = 0, nv = 0;
	char comm[64], want[64];
	FILE *f;
	(void) state;

	assert_int_equal(procfs_task_switches(getpid(), getpid(), &v, &nv), 0);
	assert_true(v + nv > 0);
	assert_int_equal(procfs_comm(getpid(), comm, sizeof(comm)), 0);
	f = fopen("/proc/self/comm", "re");
	assert_non_null(f);
	assert_non_null(fgets(want, sizeof(want), f));
	fclose(f);
	want[strcspn(want, "\n")] = '\0';
	assert_string_equal(comm, want);
	assert_int_equal(procfs_comm(0, comm, sizeof(comm)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_switches),
		cmocka_unit_test(test_tasks),
		cmocka_unit_test(test_task_switches_and_comm),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
