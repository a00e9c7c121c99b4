/*
 * test_count_mark: include/hwspy.h's marks, the cheap readings of the calling process's
 * counting that a block (the Python package's `with hwspy.count(...)`) takes at its start and
 * end. Counting page-faults and task-clock of this process, it touches fresh pages between
 * marks and checks: an interval counts its pages (and not many more); a pause (two intervals
 * added, the work between them left out) excludes the paused pages; a thread started after
 * counting began and still running when the interval ends is counted (inherited counters read
 * live, not only once the thread exits); the metrics and threads of hwspy_count_use()'s
 * reading are the interval's; a mark read many times costs microseconds; the software events
 * are one group (the same times enabled and running).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/hwspy.h"

#define PAGES 4096

static size_t touch(size_t pages)
{
	size_t psz = (size_t) sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, pages * psz, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	for (size_t i = 0; i < pages; i++)
		p[i * psz] = 1;
	assert_int_equal(munmap((void *) p, pages * psz), 0);
	return pages;
}

static struct hwspy_count *self_count(void)
{
	struct hwspy_count_opts o = { .events = "page-faults,task-clock",
				      .user_only_fallback = true };
	struct hwspy_count *c;

	assert_int_equal(hwspy_count_new(&o, &c), 0);
	assert_int_equal(hwspy_count_start(c, 0, NULL), 0);
	return c;
}

static double faults_of(struct hwspy_count *c, const struct hwspy_count_mark *sum)
{
	const struct hwspy_count_event *ev;
	size_t n;

	assert_int_equal(hwspy_count_use(c, sum), 0);
	ev = hwspy_count_events(c, &n);
	assert_int_equal(n, 2);
	assert_string_equal(ev[0].name, "page-faults");
	assert_true(ev[0].counted);
	assert_true(ev[1].counted);
	return ev[0].value;
}

/* One interval, then the same with a pause in it. */
static void test_interval_and_pause(void **state)
{
	struct hwspy_count *c = self_count();
	struct hwspy_count_mark *a, *b, *sum;
	const struct hwspy_count_event *ev;
	double f;
	size_t n;

	(void) state;
	assert_int_equal(hwspy_count_mark_new(c, &a), 0);
	assert_int_equal(hwspy_count_mark_new(c, &b), 0);
	assert_int_equal(hwspy_count_mark_new(c, &sum), 0);
	assert_int_equal(hwspy_count_mark_read(c, a), 0);
	touch(PAGES);
	assert_int_equal(hwspy_count_mark_read(c, b), 0);
	hwspy_count_mark_add(sum, a, b);
	f = faults_of(c, sum);
	print_message("# one interval: %.0f faults for %d pages\n", f, PAGES);
	assert_true(f >= PAGES && f < PAGES * 1.2);   /* ASan: +1/8 shadow pages */
	ev = hwspy_count_events(c, &n);
	assert_true(ev[1].value > 0 && ev[1].cpus > 0);     /* task-clock, CPUs used */
	assert_true(ev[0].enabled_ns > 0);

	/* a pause: PAGES counted, 2 * PAGES while paused, PAGES counted */
	assert_int_equal(hwspy_count_mark_read(c, a), 0);
	touch(PAGES);
	assert_int_equal(hwspy_count_mark_read(c, b), 0);
	hwspy_count_mark_add(sum, a, b);
	touch(2 * PAGES);
	assert_int_equal(hwspy_count_mark_read(c, a), 0);
	touch(PAGES);
	assert_int_equal(hwspy_count_mark_read(c, b), 0);
	hwspy_count_mark_add(sum, a, b);
	f = faults_of(c, sum);
	print_message("# three intervals, a pause between two: %.0f faults for %d pages counted, "
		      "%d paused\n", f, 3 * PAGES, 2 * PAGES);
	assert_true(f >= 3 * PAGES && f < 3 * PAGES * 1.2);
	hwspy_count_mark_free(a);
	hwspy_count_mark_free(b);
	hwspy_count_mark_free(sum);
	hwspy_count_free(c);
}

struct live {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool touched, done;
};

static void *live_thread(void *arg)
{
	struct live *l = arg;

	touch(PAGES);
	pthread_mutex_lock(&l->lock);
	l->touched = true;
	pthread_cond_broadcast(&l->cond);
	while (!l->done)
		pthread_cond_wait(&l->cond, &l->lock);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* A thread started after the start, still alive at the interval's end. */
static void test_live_thread(void **state)
{
	struct live l = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false };
	struct hwspy_count *c = self_count();
	struct hwspy_count_mark *a, *b, *sum;
	pthread_t t;
	double f;

	(void) state;
	assert_int_equal(hwspy_count_mark_new(c, &a), 0);
	assert_int_equal(hwspy_count_mark_new(c, &b), 0);
	assert_int_equal(hwspy_count_mark_new(c, &sum), 0);
	assert_int_equal(hwspy_count_mark_read(c, a), 0);
	assert_int_equal(pthread_create(&t, NULL, live_thread, &l), 0);
	pthread_mutex_lock(&l.lock);
	while (!l.touched)
		pthread_cond_wait(&l.cond, &l.lock);
	pthread_mutex_unlock(&l.lock);
	assert_int_equal(hwspy_count_mark_read(c, b), 0);  /* the thread still runs */
	hwspy_count_mark_add(sum, a, b);
	f = faults_of(c, sum);
	print_message("# %.0f faults for %d pages touched by a live thread started meanwhile\n",
		      f, PAGES);
	assert_true(f >= PAGES);
	pthread_mutex_lock(&l.lock);
	l.done = true;
	pthread_cond_broadcast(&l.cond);
	pthread_mutex_unlock(&l.lock);
	assert_int_equal(pthread_join(t, NULL), 0);
	hwspy_count_mark_free(a);
	hwspy_count_mark_free(b);
	hwspy_count_mark_free(sum);
	hwspy_count_free(c);
}

/* A mark of another counting, or before the start: -EINVAL; a reading costs microseconds. */
static void test_misuse_and_cost(void **state)
{
	struct hwspy_count_opts o = { .events = "page-faults", .user_only_fallback = true };
	struct hwspy_count *c = self_count(), *d;
	struct hwspy_count_mark *m, *x = NULL;
	struct timespec t0, t1;
	double us;

	(void) state;
	assert_int_equal(hwspy_count_new(&o, &d), 0);
	assert_int_equal(hwspy_count_mark_new(d, &x), -EINVAL);
	assert_null(x);
	assert_int_equal(hwspy_count_mark_new(c, &m), 0);
	assert_int_equal(hwspy_count_start(d, 0, NULL), 0);
	assert_int_equal(hwspy_count_mark_read(d, m), -EINVAL);
	assert_int_equal(hwspy_count_use(d, m), -EINVAL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(hwspy_count_mark_read(c, m), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = ((double) (t1.tv_sec - t0.tv_sec) * 1e9 + (double) (t1.tv_nsec - t0.tv_nsec)) / 1e3 /
	     1000;
	print_message("# a mark read in %.2f us (2 events, %ld threads)\n", us, 1L);
	assert_true(us < 1000);
	hwspy_count_mark_free(m);
	hwspy_count_mark_free(NULL);
	hwspy_count_free(d);
	hwspy_count_free(c);
}

/* The calling process's software events are one group (one read() per thread for a mark):
 * every one reads the same time enabled and running, to the nanosecond (events in groups of
 * their own are enabled and read at different moments). A hardware event in the list (none
 * opens here) does not keep them apart. */
static void test_one_group(void **state)
{
	struct hwspy_count_opts o = {
		.events = "task-clock,cycles,page-faults,minor-faults,context-switches",
		.user_only_fallback = true,
	};
	const struct hwspy_count_event *ev;
	struct hwspy_count *c;
	size_t n, counted = 0, first = 0;

	(void) state;
	assert_int_equal(hwspy_count_new(&o, &c), 0);
	assert_int_equal(hwspy_count_start(c, 0, NULL), 0);
	touch(64);
	assert_int_equal(hwspy_count_read(c), 0);
	ev = hwspy_count_events(c, &n);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++) {
		if (!ev[i].counted)
			continue;
		if (!counted++)
			first = i;
		print_message("# %s: enabled %.0f ns, running %.0f ns\n", ev[i].name,
			      (double) ev[i].enabled_ns, (double) ev[i].running_ns);
		assert_true(ev[i].enabled_ns > 0);
		assert_true(ev[i].enabled_ns == ev[first].enabled_ns);
		assert_true(ev[i].running_ns == ev[first].running_ns);
		assert_false(ev[i].split);
	}
	assert_true(counted >= 4);      /* the software ones */
	hwspy_count_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_and_pause),
		cmocka_unit_test(test_live_thread),
		cmocka_unit_test(test_misuse_and_cost),
		cmocka_unit_test(test_one_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
