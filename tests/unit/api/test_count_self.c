/*
 * test_count_self: include/hwspy.h's counting of the calling process, as an in-process client
 * (the Python package, the monitor) does it: this program includes hwspy.h alone and links
 * libhwspy. It counts page-faults and task-clock of its own process while it touches 64 MiB of
 * fresh memory, half from the main thread and half from a thread started after counting
 * began (counted by inheritance), and once more with the counting started and read from a
 * thread that is not the main one while the main thread touches the memory. Each time the
 * faults counted are at least the pages touched, the values read live grow, and the
 * process's signal mask, SIGCHLD disposition and RLIMIT_NOFILE are as they were. Run under
 * ASan/LSan in the sanitizer build: everything hwspy_count_free() frees.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/hwspy.h"

#define HALF (32u << 20)                /* bytes touched by each of two threads */

/* What the library must leave as it found it. */
struct process_state {
	sigset_t mask;
	struct sigaction chld;
	struct rlimit nofile;
};

static void state_get(struct process_state *s)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &s->mask), 0);
	assert_int_equal(sigaction(SIGCHLD, NULL, &s->chld), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &s->nofile), 0);
}

static void state_same(const struct process_state *a)
{
	struct process_state b;

	state_get(&b);
	for (int sig = 1; sig < SIGRTMIN; sig++)
		assert_int_equal(sigismember(&a->mask, sig), sigismember(&b.mask, sig));
	assert_true(a->chld.sa_handler == b.chld.sa_handler);
	assert_int_equal(a->chld.sa_flags, b.chld.sa_flags);
	assert_int_equal(a->nofile.rlim_cur, b.nofile.rlim_cur);
	assert_int_equal(a->nofile.rlim_max, b.nofile.rlim_max);
}

/* Touches len fresh bytes, one write per page: how many pages. */
static size_t touch(size_t len)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	size_t pages = 0;

	assert_true(p != MAP_FAILED);
	for (size_t off = 0; off < len; off += (size_t) psz, pages++)
		p[off] = (char) off;
	assert_int_equal(munmap((void *) p, len), 0);
	return pages;
}

static void *touch_thread(void *arg)
{
	*(size_t *) arg = touch(HALF);
	return NULL;
}

/* The value of event name among c's last reading, counted (fails the test if not). */
static double value_of(const struct hwspy_count *c, const char *name)
{
	size_t n;
	const struct hwspy_count_event *e = hwspy_count_events(c, &n);

	for (size_t i = 0; i < n; i++)
		if (!strncmp(e[i].name, name, strlen(name))) {
			if (!e[i].counted)
				fail_msg("'%s' was not counted: %s", name, strerror(-e[i].error));
			return e[i].value;
		}
	fail_msg("no event '%s'", name);
	return 0;
}

/* A new counter of this process, or NULL where this machine does not let it count (skip). */
static struct hwspy_count *count_self(void)
{
	struct hwspy_count_opts o = { .events = "page-faults,task-clock",
				      .user_only_fallback = true };
	struct hwspy_count *c = NULL;
	int r = hwspy_count_new(&o, &c);

	assert_int_equal(r, 0);
	r = hwspy_count_start(c, 0, NULL);
	if (r == -EACCES || r == -EPERM || r == -ENOENT || r == -ENOSYS) {
		printf("# cannot count this process here: %s\n", hwspy_reason());
		hwspy_count_free(c);
		return NULL;
	}
	assert_int_equal(r, 0);
	assert_int_equal(hwspy_count_pid(c), getpid());
	return c;
}

static void test_main_and_new_thread(void **state)
{
	struct process_state before;
	struct hwspy_count *c;
	struct hwspy_count_stats st;
	pthread_t th;
	size_t pages_thread = 0, pages_main, n;
	double first, faults;

	(void) state;
	state_get(&before);
	c = count_self();
	if (!c)
		skip();
	state_same(&before);
	pages_main = touch(HALF);
	assert_int_equal(hwspy_count_read(c), 0);
	first = value_of(c, "page-faults");
	assert_true(first >= (double) pages_main);
	/* a thread started after the counting began: counted with its creator's counters */
	assert_int_equal(pthread_create(&th, NULL, touch_thread, &pages_thread), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(hwspy_count_stop(c), 0);
	faults = value_of(c, "page-faults");
	print_message("# %.0f page faults for %zu pages touched\n", faults,
		      pages_main + pages_thread);
	assert_true(faults >= (double) (pages_main + pages_thread));
	assert_true(faults > first);
	assert_true(value_of(c, "task-clock") > 0);
	hwspy_count_stats(c, &st);
	assert_true(st.wall_ns > 0);
	assert_false(st.target_exited);
	(void) hwspy_count_threads(c, &n);
	assert_true(n >= 1);
	hwspy_count_free(c);
	state_same(&before);
}

/* Counting started, read and stopped from a thread that is not the main one. */
struct from_thread {
	pthread_barrier_t started, touched;
	struct hwspy_count *c;
	double faults;
	int r;
	bool skipped;
};

static void *counting_thread(void *arg)
{
	struct from_thread *f = arg;

	f->c = count_self();
	f->skipped = !f->c;
	pthread_barrier_wait(&f->started);
	pthread_barrier_wait(&f->touched);
	if (f->c) {
		f->r = hwspy_count_stop(f->c);
		f->faults = f->r ? NAN : value_of(f->c, "page-faults");
		hwspy_count_free(f->c);
	}
	return NULL;
}

static void test_from_other_thread(void **state)
{
	struct process_state before;
	struct from_thread f = { 0 };
	pthread_t th;
	size_t pages;

	(void) state;
	state_get(&before);
	assert_int_equal(pthread_barrier_init(&f.started, NULL, 2), 0);
	assert_int_equal(pthread_barrier_init(&f.touched, NULL, 2), 0);
	assert_int_equal(pthread_create(&th, NULL, counting_thread, &f), 0);
	pthread_barrier_wait(&f.started);
	pages = f.skipped ? 0 : touch(2 * HALF);
	pthread_barrier_wait(&f.touched);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_barrier_destroy(&f.started);
	pthread_barrier_destroy(&f.touched);
	if (f.skipped)
		skip();
	assert_int_equal(f.r, 0);
	print_message("# %.0f page faults for %zu pages touched by the main thread\n", f.faults,
		      pages);
	assert_true(f.faults >= (double) pages);
	state_same(&before);
}

/* The derived metrics and the findings are data: a clock's CPUs, the page-fault rate's finding
 * when it is over its threshold, none named without a sampling run. */
static void test_findings(void **state)
{
	struct hwspy_count *c;
	struct hwspy_findings *f = calloc(1, sizeof(*f));
	size_t n;
	const struct hwspy_count_event *e;

	(void) state;
	assert_non_null(f);
	c = count_self();
	if (!c) {
		free(f);
		skip();
	}
	(void) touch(HALF);
	assert_int_equal(hwspy_count_stop(c), 0);
	e = hwspy_count_events(c, &n);
	assert_int_equal(n, 2);
	assert_true(isnan(e[0].cpus));
	assert_true(e[1].cpus > 0);
	assert_int_equal(hwspy_count_findings(c, f), 0);
	for (size_t i = 0; i < f->n; i++) {
		assert_non_null(f->f[i].id);
		assert_int_equal(f->f[i].n_functions, 0);
	}
	hwspy_count_free(c);
	free(f);
}

int main(void)
{
	struct rlimit nofile;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_main_and_new_thread),
		cmocka_unit_test(test_from_other_thread),
		cmocka_unit_test(test_findings),
	};

	/* a soft limit under the hard one, so that a library raising it would be seen */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur == nofile.rlim_max &&
	    nofile.rlim_cur > 64) {
		nofile.rlim_cur -= 1;
		(void) setrlimit(RLIMIT_NOFILE, &nofile);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
