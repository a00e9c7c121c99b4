/* base/procfs: NSpid parsing (one level, nested namespaces, malformed lines), a task's id in its
 * own namespace and the list of a process's threads, from a fake /proc tree and from this
 * process's own /proc, and the live thread of a child whose main thread has exited. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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

static void test_syscall_parse(void **state)
{
	struct procfs_syscall sc;

	(void) state;
	assert_int_equal(procfs_syscall_parse("232 0x4 0x7ffc 0x1 0x3e8 0x0 0x0 0x7ffd1000 0x7f12ab\n",
					      &sc), 0);
	assert_int_equal(sc.nr, 232);
	assert_int_equal(sc.args[0], 4);
	assert_int_equal(sc.args[3], 1000);
	assert_int_equal(sc.sp, 0x7ffd1000);
	assert_int_equal(sc.pc, 0x7f12ab);
	/* blocked outside a system call (a page fault): SP and PC alone */
	assert_int_equal(procfs_syscall_parse("-1 0x7ffd2000 0x401000\n", &sc), 0);
	assert_int_equal(sc.nr, -1);
	assert_int_equal(sc.sp, 0x7ffd2000);
	assert_int_equal(sc.pc, 0x401000);
	assert_int_equal(procfs_syscall_parse("running\n", &sc), -EAGAIN);
	assert_int_equal(sc.nr, -2);
	assert_int_equal(procfs_syscall_parse("7 0x1 0x2\n", &sc), -EBADMSG);
	assert_int_equal(sc.nr, -2);
}

/* This thread runs as it reads itself (R); a child blocked in a read of a pipe is S and keeps
 * its switch count while it waits, and its system call is that read. */
static void test_task_sched(void **state)
{
	struct procfs_syscall sc;
	uint64_t sw, sw2;
	int fds[2];
	char st, st2;
	pid_t child;

	(void) state;
	assert_int_equal(procfs_task_sched(getpid(), getpid(), &st, &sw), 0);
	assert_int_equal(st, 'R');
	assert_false(procfs_task_still(st));
	assert_int_equal(procfs_task_sched(getpid(), 1 << 30, &st, &sw), -ENOENT);
	assert_int_equal(pipe(fds), 0);
	child = fork();
	if (child == 0) {
		char c;

		(void) close(fds[1]);
		_exit(read(fds[0], &c, 1) == 1 ? 0 : 1);
	}
	assert_true(child > 0);
	(void) close(fds[0]);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(procfs_task_sched(child, child, &st, &sw), 0);
		if (st == 'S' && procfs_task_syscall(child, child, &sc) == 0 && sc.nr == 0)
			break;
		usleep(10000);
	}
	assert_int_equal(st, 'S');
	assert_true(procfs_task_still(st));
	assert_int_equal(sc.nr, 0);             /* read */
	assert_int_equal(sc.args[0], (uint64_t) fds[0]);
	assert_true(sc.sp != 0 && sc.pc != 0);
	usleep(20000);
	assert_int_equal(procfs_task_sched(child, child, &st2, &sw2), 0);
	assert_int_equal(st2, 'S');
	assert_int_equal(sw2, sw);
	assert_false(procfs_task_signal_pending(child, child));
	assert_int_equal(write(fds[1], "x", 1), 1);
	(void) close(fds[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);
}

static void *sleep_forever(void *arg)
{
	(void) arg;
	for (;;)
		pause();
	return NULL;
}

/* A child whose main thread has called pthread_exit while another thread sleeps on: its
 * leader a zombie, the process alive. */
static pid_t zombie_leader_child(void)
{
	pid_t pid = fork();
	pthread_t t;

	assert_true(pid >= 0);
	if (pid == 0) {
		/* gone with the test, even one that fails midway; holding no pipe of it */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || dup2(open("/dev/null", O_WRONLY), 1) < 0 ||
		    pthread_create(&t, NULL, sleep_forever, NULL) != 0)
			_exit(1);
		pthread_exit(NULL);
	}
	for (int i = 0; i < 2000 && procfs_task_live(pid, 0) != 0; i++) {
		struct timespec ms = { 0, 1000000 };

		(void) nanosleep(&ms, NULL);
	}
	assert_int_equal(procfs_task_live(pid, 0), 0);
	return pid;
}

/* A process whose main thread exited while another runs: its live thread and directory;
 * this process (its leader alive); a process that is gone. */
static void test_live_tid(void **state)
{
	char where[64], want[64];
	pid_t pid, tid = 0;
	int status;

	(void) state;
	assert_int_equal(procfs_task_live(getpid(), 0), 1);
	assert_int_equal(procfs_task_live(getpid(), getpid()), 1);
	assert_int_equal(procfs_live_tid(getpid(), &tid), 0);
	assert_int_equal(tid, getpid());
	assert_int_equal(procfs_mem_dir(getpid(), where, sizeof(where)), 0);
	snprintf(want, sizeof(want), "/proc/%d", (int) getpid());
	assert_string_equal(where, want);
	assert_int_equal(procfs_mem_dir(getpid(), where, 4), -ENAMETOOLONG);

	pid = zombie_leader_child();
	assert_int_equal(procfs_live_tid(pid, &tid), 0);
	assert_true(tid != pid && tid > 0);
	assert_int_equal(procfs_task_live(pid, tid), 1);
	assert_int_equal(procfs_mem_dir(pid, where, sizeof(where)), 0);
	snprintf(want, sizeof(want), "/proc/%d/task/%d", (int) pid, (int) tid);
	assert_string_equal(where, want);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(procfs_live_tid(pid, &tid), -ESRCH);
	assert_int_equal(procfs_mem_dir(pid, where, sizeof(where)), -ESRCH);
	assert_int_equal(procfs_task_live(pid, 0), -ENOENT);
}

/* procfs_tasks(): every thread of this process (a second one started here), counted alone with
 * ret NULL, cut at max, and -ESRCH for a process gone (a child reaped). */
static int tasks_ready[2], tasks_go[2];

static void *tasks_thread(void *arg)
{
	pid_t *tid = arg;
	char c;

	*tid = gettid();
	(void) !write(tasks_ready[1], "r", 1);
	(void) !read(tasks_go[0], &c, 1);       /* until the test is done listing */
	return NULL;
}

static void test_tasks(void **state)
{
	pid_t v[256], tid = 0, gone;
	pthread_t t;
	bool self = false, other = false;
	int n, status;
	char c;

	(void) state;
	assert_int_equal(pipe(tasks_ready), 0);
	assert_int_equal(pipe(tasks_go), 0);
	assert_int_equal(pthread_create(&t, NULL, tasks_thread, &tid), 0);
	assert_int_equal(read(tasks_ready[0], &c, 1), 1);
	n = procfs_tasks(getpid(), v, 256);
	assert_true(n >= 2);
	for (int i = 0; i < n; i++) {
		self |= v[i] == getpid();
		other |= v[i] == tid;
	}
	assert_true(self && other);
	assert_int_equal(procfs_tasks(getpid(), NULL, 256), n);
	assert_int_equal(procfs_tasks(getpid(), v, 1), 1);
	assert_int_equal(write(tasks_go[1], "x", 1), 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (int i = 0; i < 2; i++) {
		(void) close(tasks_ready[i]);
		(void) close(tasks_go[i]);
	}
	gone = fork();
	assert_true(gone >= 0);
	if (gone == 0)
		_exit(0);
	assert_int_equal(waitpid(gone, &status, 0), gone);
	assert_int_equal(procfs_tasks(gone, v, 256), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_fake_tree),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_status_long),
		cmocka_unit_test(test_syscall_parse),
		cmocka_unit_test(test_task_sched),
		cmocka_unit_test(test_live_tid),
		cmocka_unit_test(test_tasks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
