/* base/procfs: NSpid parsing (one level, nested namespaces, malformed lines), a task's id in its
 * own namespace and the list of a process's threads, from a fake /proc tree and from this
 * process's own /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/procfs.h"

static char dir[64];

static void test_parse(void **state)
{
	pid_t id = 0;
	int levels = 0;

	(void) state;
	assert_int_equal(procfs_nspid_parse("Name:\tpython3\nPid:\t19460\nNSpid:\t19460\n", &id, &levels), 0);
	assert_int_equal(id, 19460);
	assert_int_equal(levels, 1);
	/* unshare -p: the host's id, then the namespace's */
	assert_int_equal(procfs_nspid_parse("Pid:\t19460\nNSpid:\t19460\t1\nNSpgid:\t1\n", &id, &levels), 0);
	assert_int_equal(id, 1);
	assert_int_equal(levels, 2);
	assert_int_equal(procfs_nspid_parse("NSpid:\t7 5 3\n", &id, NULL), 0);
	assert_int_equal(id, 3);
	/* no line (a kernel before 4.1); "NSpid" only at a line's start; no trailing newline */
	assert_int_equal(procfs_nspid_parse("Pid:\t1\nTgid:\t1\n", &id, NULL), -ENOENT);
	assert_int_equal(procfs_nspid_parse("XNSpid:\t5\n", &id, NULL), -ENOENT);
	assert_int_equal(procfs_nspid_parse("NSpid:\t5\t6", &id, NULL), 0);
	assert_int_equal(id, 6);
	/* malformed: empty, not a number, zero, negative, too big, too many levels */
	assert_int_equal(procfs_nspid_parse("NSpid:\t\n", &id, NULL), -EBADMSG);
	assert_int_equal(procfs_nspid_parse("NSpid:\tx\n", &id, NULL), -EBADMSG);
	assert_int_equal(procfs_nspid_parse("NSpid:\t0\n", &id, NULL), -EBADMSG);
	assert_int_equal(procfs_nspid_parse("NSpid:\t-3\n", &id, NULL), -EBADMSG);
	assert_int_equal(procfs_nspid_parse("NSpid:\t99999999999999999999\n", &id, NULL), -EBADMSG);
	assert_int_equal(procfs_nspid_parse("NSpid:\t5 6x\n", &id, NULL), -EBADMSG);
	{
		char many[256] = "NSpid:";

		for (int i = 0; i < 40; i++)
			strcat(many, " 1");
		assert_int_equal(procfs_nspid_parse(many, &id, NULL), -EBADMSG);
	}
}

static void put_status(pid_t pid, pid_t tid, const char *nspid)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", dir, (int) pid);
	(void) mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/task", dir, (int) pid);
	(void) mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/task/%d", dir, (int) pid, (int) tid);
	(void) mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/task/%d/status", dir, (int) pid, (int) tid);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "Name:\tpython3\nPid:\t%d\nNSpid:\t%s\nVmRSS:\t1 kB\n", (int) tid, nspid);
	assert_int_equal(fclose(f), 0);
}

static void test_fake_tree(void **state)
{
	pid_t id, ids[8];
	size_t n;
	int levels;
	char path[256];

	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/test_procfs.XXXXXX");
	assert_non_null(mkdtemp(dir));
	put_status(500, 500, "500\t1");
	put_status(500, 503, "503\t9");
	put_status(500, 501, "501\t4");
	snprintf(path, sizeof(path), "%s/500/task/junk", dir);
	assert_int_equal(mkdir(path, 0755), 0);    /* not a tid: skipped */
	assert_int_equal(procfs_ns_tid(dir, 500, 503, &id, &levels), 0);
	assert_int_equal(id, 9);
	assert_int_equal(levels, 2);
	assert_int_equal(procfs_ns_tid(dir, 500, 502, &id, NULL), -ENOENT);
	assert_int_equal(procfs_ns_tids(dir, 500, ids, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 4);
	assert_int_equal(ids[2], 9);
	assert_int_equal(procfs_ns_tids(dir, 500, ids, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(procfs_ns_tids(dir, 600, ids, 8, &n), -ENOENT);
	assert_int_equal(n, 0);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		assert_int_equal(system(cmd), 0);
	}
}

static void test_self(void **state)
{
	pid_t id, ids[4];
	size_t n;
	int levels;

	(void) state;
	assert_int_equal(procfs_ns_tid("/proc", getpid(), getpid(), &id, &levels), 0);
	/* this process as its own /proc sees it: the same id, one level */
	assert_int_equal(id, getpid());
	assert_int_equal(levels, 1);
	assert_int_equal(procfs_ns_tids("/proc", getpid(), ids, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], getpid());
}

/* A number of this process's own status file: by process and by thread; a line it has not,
 * a line that is no number, a process that is not there. */
static void test_status_long(void **state)
{
	long v = -1;

	(void) state;
	assert_int_equal(procfs_status_long(getpid(), 0, "Tgid", &v), 0);
	assert_int_equal(v, getpid());
	assert_int_equal(procfs_status_long(getpid(), getpid(), "Pid", &v), 0);
	assert_int_equal(v, getpid());
	assert_int_equal(procfs_status_long(getpid(), 0, "PPid", &v), 0);
	assert_int_equal(v, getppid());
	assert_int_equal(procfs_status_long(getpid(), 0, "NoSuchLine", &v), -ENOENT);
	assert_int_equal(procfs_status_long(getpid(), 0, "Name", &v), -EBADMSG);
	/* "Tgi" is the start of a key, not a key */
	assert_int_equal(procfs_status_long(getpid(), 0, "Tgi", &v), -ENOENT);
	assert_int_equal(procfs_status_long(1 << 30, 0, "Tgid", &v), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_fake_tree),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_status_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
