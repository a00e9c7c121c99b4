/* record/discover on this machine's /proc: options refused (no criterion, a regex that does not
 * compile, with its reason), a child found by a distinctive name (prctl(PR_SET_NAME)) and its
 * identity (start time, as /proc/PID/stat says, the same at each scan), never hwspy itself, by
 * command line (full) and not by name, a process whose main thread has exited while another
 * runs, by pids (a pid that does not exist, a zombie, a thread's
 * id are absent), all Python processes (by the exe's name; a copy of a shared-libpython
 * interpreter under another name, by its mappings; Debian's python3.11 run through ld.so, by
 * its mapped executable's name; one whose main thread has exited), never sleep(1), and max. Prints the cost of a scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/discover.h"

#define MAX 4096

static struct discovered found[MAX];

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}

/* /proc/PID/stat field 22, read here on its own */
static uint64_t start_time_of(pid_t pid)
{
	char path[64], text[1024], *p;
	unsigned long long v = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	f = fopen(path, "re");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	p = strrchr(text, ')');
	assert_non_null(p);
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	assert_non_null(p);
	assert_int_equal(sscanf(p + 1, "%llu", &v), 1);
	return v;
}

static const struct discovered *find(size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (found[i].pid == pid)
			return &found[i];
	return NULL;
}

/* A scan with o: how many found (asserted to succeed, sorted). */
static size_t scan_with(const struct discover_opts *o)
{
	struct discover *d;
	size_t n = 0;

	assert_int_equal(discover_new(o, &d, NULL), 0);
	assert_true(discover_scan(d, found, MAX, &n) >= 0);
	for (size_t i = 1; i < n; i++)
		assert_true(found[i - 1].pid < found[i].pid);
	discover_free(d);
	return n;
}

/* Scans with o until pid is found (or not, want false) for up to 10 s (an interpreter that
 * starts on a busy machine): whether it was. */
static bool wait_for(const struct discover_opts *o, pid_t pid, bool want)
{
	for (int i = 0; i < 1000; i++) {
		if ((find(scan_with(o), pid) != NULL) == want)
			return want;
		usleep(10000);
	}
	return !want;
}

/* A child named name (prctl), or running argv, stopped with kill_child(). */
static pid_t start_child(const char *name, char *const argv[])
{
	int ready[2], in[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe(in), 0);  /* its stdin, never written: a read there waits */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void) prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (name)
			(void) prctl(PR_SET_NAME, name);
		if (!argv)
			(void) write(ready[1], "x", 1);
		if (argv) {
			int devnull = open("/dev/null", O_RDWR);

			(void) dup2(in[0], 0);
			(void) dup2(devnull, 1);
			(void) dup2(devnull, 2);
			execv(argv[0], argv);   /* ready closes at the exec */
			_exit(127);
		}
		for (;;)
			pause();
	}
	(void) close(ready[1]);
	(void) read(ready[0], &c, 1);
	(void) close(ready[0]);
	(void) close(in[0]);
	(void) fcntl(in[1], F_SETFD, FD_CLOEXEC);       /* kept open until the test ends */
	return pid;
}

static void kill_child(pid_t pid)
{
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, NULL, 0);
}

static void test_refused(void **state)
{
	struct discover_opts o = { .name_regex = "worker(" };
	struct discover_error err;
	struct discover *d = (struct discover *) 1;
	pid_t zero = 0;

	(void) state;
	assert_int_equal(discover_new(&o, &d, &err), -EINVAL);
	assert_null(d);
	assert_true(strlen(err.reason) > 0);
	print_message("# bad regex: %s\n", err.reason);
	o = (struct discover_opts) { .full = true };
	assert_int_equal(discover_new(&o, &d, &err), -EINVAL);
	assert_non_null(strstr(err.reason, "criterion"));
	assert_int_equal(discover_new(NULL, &d, NULL), -EINVAL);
	o = (struct discover_opts) { .pids = &zero, .n_pids = 1 };
	assert_int_equal(discover_new(&o, &d, NULL), -EINVAL);
	o = (struct discover_opts) { .name_regex = "^worker-[0-9]+$" };
	assert_int_equal(discover_new(&o, &d, &err), 0);
	assert_string_equal(err.reason, "");
	discover_free(d);
	discover_free(NULL);
}

static void test_name(void **state)
{
	char name[16], re[96], exe[256], self[64];
	struct discover_opts o = { .name_regex = re };
	const struct discovered *m;
	struct discover *d;
	uint64_t start;
	pid_t pid;
	size_t n;
	ssize_t len;

	(void) state;
	snprintf(name, sizeof(name), "hwdisc%d", (int) getpid() % 1000000);
	pid = start_child(name, NULL);
	snprintf(re, sizeof(re), "disc%d$", (int) getpid() % 1000000);   /* unanchored */
	assert_int_equal(discover_new(&o, &d, NULL), 0);
	assert_int_equal(discover_scan(d, found, MAX, &n), 1);
	assert_int_equal(n, 1);
	m = &found[0];
	assert_int_equal(m->pid, pid);
	assert_string_equal(m->comm, name);
	start = start_time_of(pid);
	assert_int_equal(m->start_time, start);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	assert_string_equal(m->exe, exe);
	/* the same process at the next scan (its entry kept): the same identity */
	assert_int_equal(discover_scan(d, found, MAX, &n), 1);
	assert_int_equal(found[0].start_time, start);
	/* gone: absent */
	kill_child(pid);
	assert_int_equal(discover_scan(d, found, MAX, &n), 0);
	discover_free(d);
	/* hwspy itself never, even when its name matches */
	assert_int_equal(prctl(PR_GET_NAME, self), 0);
	snprintf(re, sizeof(re), "^%s$", self);
	n = scan_with(&o);
	assert_null(find(n, getpid()));
	/* kernel threads never: kthreadd (pid 2) is one */
	snprintf(re, sizeof(re), "kthreadd|ksoftirqd");
	assert_int_equal(scan_with(&o), 0);
}

static void test_full(void **state)
{
	char marker[64], cmd[128], re[128];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct discover_opts o = { .name_regex = re, .full = true };
	const struct discovered *m;
	pid_t pid;
	size_t n;

	(void) state;
	snprintf(marker, sizeof(marker), "hwspy-full-%d", (int) getpid());
	/* the shell's builtin read waits: no child of its own has its command line */
	snprintf(cmd, sizeof(cmd), "read x; : %s", marker);
	pid = start_child(NULL, argv);
	snprintf(re, sizeof(re), "-c read x; : %s$", marker);       /* NULs read as spaces */
	assert_true(wait_for(&o, pid, true));
	n = scan_with(&o);
	assert_int_equal(n, 1);
	m = find(n, pid);
	assert_non_null(m);
	assert_string_equal(m->comm, "sh");
	/* not by name alone */
	o.full = false;
	assert_null(find(scan_with(&o), pid));
	kill_child(pid);
}

static void *parked(void *arg)
{
	*(volatile pid_t *) arg = (pid_t) syscall(SYS_gettid);
	for (;;)
		pause();
	return NULL;
}

static void *lives_on(void *arg)
{
	(void) arg;
	for (;;)
		pause();
	return NULL;
}

/* Until process pid's main thread has exited (its /proc/PID/stat says Z), 10 s at most. */
static void wait_leader_exited(pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		char path[64], text[512] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
		f = fopen(path, "re");
		assert_non_null(f);
		text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
		fclose(f);
		if (strstr(text, ") Z "))
			return;
		usleep(10000);
	}
	fail_msg("the main thread of %d has not exited", (int) pid);
}

/* A process whose main thread has exited (pthread_exit) while another runs: its leader a
 * zombie, the process not: found, its exe read through the live thread. */
static void test_leader_gone(void **state)
{
	char name[16], re[32], exe[256];
	struct discover_opts o = { .name_regex = re };
	int ready[2];
	pid_t pid;
	size_t n;
	ssize_t len;
	char c;

	(void) state;
	snprintf(name, sizeof(name), "hwlead%d", (int) getpid() % 1000000);
	snprintf(re, sizeof(re), "^%s$", name);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		(void) prctl(PR_SET_PDEATHSIG, SIGKILL);
		(void) prctl(PR_SET_NAME, name);
		pthread_create(&t, NULL, lives_on, NULL);
		(void) write(ready[1], "x", 1);
		pthread_exit(NULL);
	}
	(void) close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	(void) close(ready[0]);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	wait_leader_exited(pid);
	n = scan_with(&o);
	assert_int_equal(n, 1);
	assert_int_equal(found[0].pid, pid);
	assert_string_equal(found[0].exe, exe);
	kill_child(pid);
}

static void test_pids(void **state)
{
	pid_t pids[4], tid = 0;
	struct discover_opts o = { .pids = pids, .n_pids = 4 };
	pthread_t t;
	size_t n;

	(void) state;
	assert_int_equal(pthread_create(&t, NULL, parked, &tid), 0);
	while (!tid)
		usleep(1000);
	pids[0] = start_child("hwdiscpid", NULL);
	pids[1] = 1 << 29;      /* beyond any pid_max: no such process */
	pids[2] = getpid();     /* hwspy itself: never */
	pids[3] = tid;          /* a thread's id: no process */
	n = scan_with(&o);
	assert_int_equal(n, 1);
	assert_int_equal(found[0].pid, pids[0]);
	assert_string_equal(found[0].comm, "hwdiscpid");
	assert_int_equal(found[0].start_time, start_time_of(pids[0]));
	/* a zombie: absent */
	(void) kill(pids[0], SIGKILL);
	{
		char path[64], text[512];
		bool zombie = false;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int) pids[0]);
		for (int i = 0; i < 300 && !zombie; i++) {
			FILE *f = fopen(path, "re");
			size_t len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;

			if (f)
				fclose(f);
			text[len] = '\0';
			zombie = strstr(text, ") Z ") != NULL;
			if (!zombie)
				usleep(10000);
		}
		assert_true(zombie);
	}
	assert_int_equal(scan_with(&o), 0);
	/* the same with a name too (the /proc listing): still absent */
	o.name_regex = "^hwdiscpid$";
	assert_int_equal(scan_with(&o), 0);
	(void) waitpid(pids[0], NULL, 0);
	pthread_cancel(t);
	pthread_join(t, NULL);
}

/* A copy of a shared-libpython interpreter of pyenv's named "notpy" into dir: 0, or -1. */
static int copy_interpreter(const char *dir, char *ret, size_t size)
{
	char cmd[1024];
	glob_t g;
	int r = -1;

	if (glob("/root/.pyenv/versions/3.1[0-9]*/bin/python3.1[0-9]", 0, NULL, &g) != 0)
		return -1;
	for (size_t i = 0; i < g.gl_pathc && r < 0; i++) {
		snprintf(ret, size, "%s/notpy", dir);
		snprintf(cmd, sizeof(cmd), "readelf -d '%s' 2>/dev/null | grep -q 'libpython3' && "
			 "cp '%s' '%s'", g.gl_pathv[i], g.gl_pathv[i], ret);
		r = system(cmd) == 0 ? 0 : -1;
	}
	globfree(&g);
	return r;
}

static void test_all_python(void **state)
{
	struct discover_opts o = { .all_python = true };
	char *py[] = { "/usr/bin/python3.11", "-c", "import time; time.sleep(30)", NULL };
	char *loaded[] = { "/lib64/ld-linux-x86-64.so.2", "/usr/bin/python3.11", "-c",
			   "import time; time.sleep(30)", NULL };
	char *sl[] = { "/bin/sleep", "30", NULL };
	/* its main thread gone (pthread_exit through ctypes: the GIL let go), a thread sleeps */
	char *headless[] = { "/usr/bin/python3.11", "-c", "import threading, time, ctypes; "
			     "threading.Thread(target=time.sleep, args=(30,)).start(); "
			     "ctypes.CDLL(None).pthread_exit(None)", NULL };
	char dir[] = "/tmp/test_discover.XXXXXX", notpy[512], cmd[600];
	char *copy[] = { notpy, "-c", "import time; time.sleep(30)", NULL };
	pid_t p_py = 0, p_loaded = 0, p_sleep, p_copy = 0, p_headless = 0;
	const struct discovered *m;
	size_t n;

	(void) state;
	p_sleep = start_child(NULL, sl);
	if (access(py[0], X_OK) == 0)
		p_py = start_child(NULL, py);
	else
		print_message("# no %s here: not run by its name\n", py[0]);
	if (access(loaded[0], X_OK) == 0 && access(py[0], X_OK) == 0)
		p_loaded = start_child(NULL, loaded);
	if (access(py[0], X_OK) == 0)
		p_headless = start_child(NULL, headless);
	assert_non_null(mkdtemp(dir));
	if (copy_interpreter(dir, notpy, sizeof(notpy)) == 0)
		p_copy = start_child(NULL, copy);
	else
		print_message("# no pyenv interpreter with libpython here: not run by mappings\n");
	if (p_py)
		assert_true(wait_for(&o, p_py, true));
	if (p_loaded) {
		assert_true(wait_for(&o, p_loaded, true));
		m = find(scan_with(&o), p_loaded);
		assert_non_null(m);
		assert_non_null(strstr(m->exe, "ld-linux"));
	}
	if (p_copy) {
		assert_true(wait_for(&o, p_copy, true));
		m = find(scan_with(&o), p_copy);
		assert_non_null(m);
		assert_string_equal(m->exe, notpy);
	}
	if (p_headless) {
		wait_leader_exited(p_headless);
		assert_true(wait_for(&o, p_headless, true));
		m = find(scan_with(&o), p_headless);
		assert_non_null(m);
		assert_string_equal(m->exe, py[0]);
	}
	n = scan_with(&o);
	assert_null(find(n, p_sleep));
	assert_null(find(n, getpid()));
	/* max: the lowest pids */
	if (n >= 2) {
		pid_t lowest = found[0].pid;
		struct discover *d;
		size_t k;

		assert_int_equal(discover_new(&o, &d, NULL), 0);
		assert_int_equal(discover_scan(d, found, 1, &k), 1);
		assert_int_equal(found[0].pid, lowest);
		assert_int_equal(discover_scan(d, found, 0, &k), 0);
		discover_free(d);
	}
	kill_child(p_sleep);
	if (p_py)
		kill_child(p_py);
	if (p_loaded)
		kill_child(p_loaded);
	if (p_copy)
		kill_child(p_copy);
	if (p_headless)
		kill_child(p_headless);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The cost of a scan of this machine's /proc: the first (every stat read, every mappings
 * judged) and the next ones (entries kept). */
static void test_cost(void **state)
{
	static const struct { const char *what; struct discover_opts o; } kinds[] = {
		{ "--all-python", { .all_python = true } },
		{ "--name", { .name_regex = "^python" } },
		{ "--name --full", { .name_regex = "python", .full = true } },
	};
	DIR *proc = opendir("/proc");
	struct dirent *e;
	size_t procs = 0, n;

	(void) state;
	assert_non_null(proc);
	while ((e = readdir(proc)))
		procs += e->d_name[0] >= '1' && e->d_name[0] <= '9';
	closedir(proc);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct discover *d;
		uint64_t t0, t1, t2;
		int rounds = 20;

		assert_int_equal(discover_new(&kinds[k].o, &d, NULL), 0);
		t0 = now_ns();
		assert_true(discover_scan(d, found, MAX, &n) >= 0);
		t1 = now_ns();
		for (int i = 0; i < rounds; i++)
			assert_true(discover_scan(d, found, MAX, &n) >= 0);
		t2 = now_ns();
		print_message("# discover_scan %-14s %zu processes: first %.0f us, then %.0f us "
			      "(%.0f us per 100 processes)\n", kinds[k].what, procs,
			      (double) (t1 - t0) / 1e3, (double) (t2 - t1) / 1e3 / rounds,
			      (double) (t2 - t1) / 1e3 / rounds * 100.0 / (double) procs);
		discover_free(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_pids),
		cmocka_unit_test(test_leader_gone),
		cmocka_unit_test(test_all_python),
		cmocka_unit_test(test_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
