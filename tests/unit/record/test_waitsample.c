/* record/waitsample, wait_label_proc() and wait_words()'s fd cache: the labels of waits of
 * this process's own fds and made-up syscall lines; an fd's words kept from a read after a
 * wait's start, read again for a later one; and a real child whose threads sleep in
 * nanosleep, block reading a pipe, wait on a futex inside a pretended GIL state and another
 * outside it, and spin: after a few ticks each has its reason's total ("sleep", "read
 * (pipe)", "GIL", "futex (lock)") and the spinner "running", and the reader, given a byte,
 * sleeps: its new wait counted as such (not the one kept from the last tick); gone, the
 * child's tick says -ESRCH. Prints the cost of a tick per thread (a child of 64 sleeping
 * threads). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/procfs.h"
#include "record/record.h"
#include "record/waitsample.h"

#define DT_NS 10000000ull
#define SLEEPERS 64

/* the same address in the child (a fork): the "GIL state" and a lock elsewhere */
static uint32_t gil_state[8] __attribute__((aligned(64)));
static uint32_t other_lock;
static volatile int spin_sink;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}

static const char *label(char state, long nr, uint64_t arg, uint64_t gil)
{
	static char buf[WAIT_LABEL_MAX];
	struct procfs_syscall sc = { .nr = nr, .args = { arg } };

	wait_label_proc(getpid(), state, &sc, gil, buf, sizeof(buf));
	return buf;
}

static void test_labels(void **state)
{
	int p[2], s[2], f;
	char tmp[] = "/tmp/test_waitsample.XXXXXX";

	(void) state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	f = mkstemp(tmp);
	assert_true(f >= 0);
	(void) unlink(tmp);
	/* by the fd: its kind alone, no number, no path */
	assert_string_equal(label('S', 0, (uint64_t) p[0], 0), "read (pipe)");
	assert_string_equal(label('S', 1, (uint64_t) p[1], 0), "write (pipe)");
	assert_string_equal(label('S', 17, (uint64_t) s[0], 0), "read (socket)");
	assert_string_equal(label('D', 1, (uint64_t) f, 0), "write (file)");
	assert_string_equal(label('S', 0, 1000000, 0), "read (?)");
	/* the table's words */
	assert_string_equal(label('S', 230, 0, 0), "sleep");
	assert_string_equal(label('S', 23, 0, 0), "sleep");         /* select() without fds */
	assert_string_equal(label('S', 7, 0, 0), "poll/epoll/select");
	assert_string_equal(label('S', 232, 5, 0), "poll/epoll/select");
	assert_string_equal(label('S', 45, 3, 0), "recv socket");
	assert_string_equal(label('S', 288, 3, 0), "accept socket");
	assert_string_equal(label('S', 61, 0, 0), "wait child");
	assert_string_equal(label('S', 202, 0x1010, 0x1000), "GIL");
	assert_string_equal(label('S', 202, 0x9000, 0x1000), "futex (lock)");
	assert_string_equal(label('S', 202, 0x1010, 0), "futex (lock)");
	assert_string_equal(label('S', 128, 0, 0), "rt_sigtimedwait");
	/* outside the table, outside a call, stopped */
	assert_string_equal(label('S', 500, 0, 0), "syscall 500");
	assert_string_equal(label('S', 100000, 0, 0), "unknown");
	assert_string_equal(label('S', -2, 0, 0), "unknown");
	assert_string_equal(label('D', -1, 0, 0), "page fault (I/O)");
	assert_string_equal(label('T', 230, 0, 0), "stopped");
	(void) close(p[0]);
	(void) close(p[1]);
	(void) close(s[0]);
	(void) close(s[1]);
	(void) close(f);
}

/* wait_words()'s fd cache: an fd's words read at or after a wait's start serve that wait; a
 * wait that started after the read reads the fd again (here, a pipe's fd made a file's). */
static void test_fd_cache(void **state)
{
	static struct wait_fd_cache cache;
	char buf[192], want_pipe[64], want_file[256], tmp[] = "/tmp/test_waitsample.XXXXXX";
	int p[2], f;
	uint64_t t0;

	(void) state;
	assert_int_equal(pipe(p), 0);
	f = mkstemp(tmp);
	assert_true(f >= 0);
	snprintf(want_pipe, sizeof(want_pipe), "read fd %d (pipe)", p[0]);
	snprintf(want_file, sizeof(want_file), "read fd %d (%s)", p[0], tmp);
	t0 = now_ns();
	wait_words(getpid(), "read", p[0], 0, &cache, t0, buf, sizeof(buf));
	assert_string_equal(buf, want_pipe);
	assert_int_equal(dup2(f, p[0]), p[0]);
	/* a wait that began before the read: what the read said (no later read could be truer) */
	wait_words(getpid(), "read", p[0], 0, &cache, t0, buf, sizeof(buf));
	assert_string_equal(buf, want_pipe);
	/* one that began after it: read again */
	wait_words(getpid(), "read", p[0], 0, &cache, now_ns(), buf, sizeof(buf));
	assert_string_equal(buf, want_file);
	wait_words(getpid(), "read", p[0], 0, &cache, t0, buf, sizeof(buf));
	assert_string_equal(buf, want_file);
	/* another process's fd of that number is not this one's */
	wait_words(getppid(), "read", p[0], 0, &cache, t0, buf, sizeof(buf));
	assert_string_not_equal(buf, want_file);
	/* without a cache: read each time */
	wait_words(getpid(), "read", p[0], 0, NULL, 0, buf, sizeof(buf));
	assert_string_equal(buf, want_file);
	(void) unlink(tmp);
	(void) close(p[0]);
	(void) close(p[1]);
	(void) close(f);
}

static void *sleeper(void *arg)
{
	struct timespec t = { 1000, 0 };

	(void) arg;
	for (;;)
		nanosleep(&t, NULL);
	return NULL;
}

/* reads a byte of the test's pipe, then sleeps */
static void *reader(void *arg)
{
	char c;

	(void) read(*(int *) arg, &c, 1);
	return sleeper(NULL);
}

static void *futex_waiter(void *arg)
{
	for (;;)
		syscall(SYS_futex, (uint32_t *) arg, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

static int wake[2];      /* the child's reader reads wake[0] */

/* The child: one sleeper (or SLEEPERS of them), a reader of wake[0], the two futex waiters,
 * and its main thread spinning. Says it is ready on ready. */
static pid_t start_child(int sleepers)
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(wake), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		(void) prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < sleepers; i++)
			pthread_create(&t, NULL, sleeper, NULL);
		pthread_create(&t, NULL, reader, &wake[0]);
		pthread_create(&t, NULL, futex_waiter, &gil_state[2]);
		pthread_create(&t, NULL, futex_waiter, &other_lock);
		(void) write(ready[1], "x", 1);
		for (;;)
			spin_sink++;
	}
	(void) close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	(void) close(ready[0]);
	(void) close(wake[0]);
	return pid;
}

static void stop_child(pid_t pid)
{
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, NULL, 0);
	(void) close(wake[1]);
}

static uint64_t total(const struct waitsample *w, const char *name)
{
	const char *names[WAITSAMPLE_NAMES];
	uint64_t ns[WAITSAMPLE_NAMES];
	size_t n = waitsample_reasons(w, names, ns, WAITSAMPLE_NAMES);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return ns[i];
	return 0;
}

static void test_child(void **state)
{
	static const char *const want[] = { "sleep", "read (pipe)", "GIL", "futex (lock)",
					     "running" };
	const char *names[WAITSAMPLE_NAMES];
	uint64_t ns[WAITSAMPLE_NAMES], before[5];
	struct waitsample *w;
	pid_t pid = start_child(1);
	bool all = false;
	size_t n;

	(void) state;
	assert_int_equal(waitsample_new(pid, &w), 0);
	waitsample_set_gil(w, (uint64_t) (uintptr_t) gil_state);
	/* until every thread is in its wait (at most 5 s on a busy machine) */
	for (int i = 0; i < 500 && !all; i++) {
		assert_int_equal(waitsample_tick(w, DT_NS), 0);
		all = true;
		for (size_t k = 0; k < 5; k++)
			all = all && total(w, want[k]) > 0;
		if (!all)
			usleep(10000);
	}
	assert_true(all);
	for (size_t k = 0; k < 5; k++)
		before[k] = total(w, want[k]);
	for (int i = 0; i < 5; i++)
		assert_int_equal(waitsample_tick(w, DT_NS), 0);
	/* each thread in the same wait at each tick: one dt each; the spinner runnable */
	for (size_t k = 0; k < 5; k++) {
		print_message("# %-14s %llu ms\n", want[k],
			      (unsigned long long) (total(w, want[k]) / 1000000));
		assert_int_equal(total(w, want[k]) - before[k], 5 * DT_NS);
	}
	/* the reader reads its byte and sleeps: a wait of its own since (its switches moved),
	 * no longer "read (pipe)"; then two sleepers a tick */
	assert_int_equal(write(wake[1], "x", 1), 1);
	usleep(200000);         /* no tick sees it run: only its switches tell */
	all = false;
	for (int i = 0; i < 500 && !all; i++) {
		uint64_t read_ns = total(w, "read (pipe)"), sleep_ns = total(w, "sleep");

		assert_int_equal(waitsample_tick(w, DT_NS), 0);
		all = total(w, "read (pipe)") == read_ns && total(w, "sleep") == sleep_ns + 2 * DT_NS;
		if (!all)
			usleep(10000);
	}
	assert_true(all);
	/* each name once, "running" first */
	n = waitsample_reasons(w, names, ns, WAITSAMPLE_NAMES);
	assert_string_equal(names[0], "running");
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			assert_string_not_equal(names[i], names[j]);
	assert_int_equal(waitsample_reasons(w, names, ns, 2), 2);
	stop_child(pid);
	assert_int_equal(waitsample_tick(w, DT_NS), -ESRCH);
	waitsample_free(w);
	waitsample_free(NULL);
	assert_int_equal(waitsample_new(0, &w), -EINVAL);
}

static void test_cost(void **state)
{
	struct waitsample *w;
	pid_t pid = start_child(SLEEPERS);
	uint64_t t0, t1, looked, lost;
	int threads = SLEEPERS + 4, ticks = 20;     /* and the reader, 2 futex waiters, main */

	(void) state;
	assert_int_equal(waitsample_new(pid, &w), 0);
	usleep(50000);
	assert_int_equal(waitsample_tick(w, DT_NS), 0);
	t0 = now_ns();
	for (int i = 0; i < ticks; i++)
		assert_int_equal(waitsample_tick(w, DT_NS), 0);
	t1 = now_ns();
	waitsample_counts(w, &looked, &lost);
	assert_int_equal(looked, (uint64_t) (ticks + 1) * (uint64_t) threads);
	print_message("# waitsample_tick: %.1f us per thread (%d threads, %d ticks)\n",
		      (double) (t1 - t0) / 1e3 / ticks / threads, threads, ticks);
	assert_true(total(w, "sleep") >= (uint64_t) ticks * SLEEPERS * DT_NS);
	stop_child(pid);
	waitsample_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_fd_cache),
		cmocka_unit_test(test_child),
		cmocka_unit_test(test_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
