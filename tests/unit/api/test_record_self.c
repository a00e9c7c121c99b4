/*
 * test_record_self: libhwspy records its own process from a thread that is not the main one,
 * while the main thread burns CPU in api_test_burn(); through include/hwspy.h alone. The folded
 * flame graph written has api_test_burn in it, and no stack of the recording thread (each
 * stack's root is its thread: [thread TID NAME]). Nothing stops the process (no ptrace of
 * itself), SIGCHLD stays unblocked and RLIMIT_NOFILE as it was, and everything is freed (the
 * ASan build's LeakSanitizer checks).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/hwspy.h"
#include "tests/unit/api/api_test.h"

static volatile int burning = 1;
static volatile double sink_value;

__attribute__((noinline)) static void api_test_burn(void)
{
	double x = 1.0;

	while (burning) {
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.5;
		sink_value = x;
	}
}

struct rec_result {
	enum hwspy_record_mode ask;
	int r;
	char why[512];
	pid_t tid;                      /* the recording thread's */
	char path[64];
	struct hwspy_record_stats st;
	int mode;
	bool sigchld_blocked;           /* SIGCHLD blocked on the recording thread while it ran */
	bool nofile_changed;            /* RLIMIT_NOFILE changed by the start */
};

static void *record_thread(void *arg)
{
	struct rec_result *res = arg;
	struct hwspy_record_opts o;
	struct hwspy_recorder *rec = NULL;
	struct hwspy_run run = { .duration_ns = 1000000000ULL };
	int r;

	struct rlimit before, after;
	sigset_t mask;

	res->tid = gettid();
	(void) getrlimit(RLIMIT_NOFILE, &before);
	hwspy_record_opts_init(&o);
	o.self = true;
	o.native = true;
	o.threads = true;
	o.freq = 200;
	o.mode = res->ask;
	r = hwspy_recorder_new(&o, NULL, NULL, &rec);
	if (r >= 0)
		r = hwspy_recorder_start(rec);
	if (r >= 0) {
		/* a library in someone's process: no signal taken, no limit raised */
		(void) pthread_sigmask(SIG_SETMASK, NULL, &mask);
		res->sigchld_blocked = sigismember(&mask, SIGCHLD) == 1;
		(void) getrlimit(RLIMIT_NOFILE, &after);
		res->nofile_changed = after.rlim_cur != before.rlim_cur;
		res->mode = hwspy_recorder_mode(rec);
		r = hwspy_recorder_run(rec, &run);
	}
	if (r >= 0) {
		hwspy_recorder_stats(rec, &res->st);
		r = hwspy_profile_write_file(hwspy_recorder_profile(rec), HWSPY_FORMAT_FOLDED, NULL,
					     res->path);
	}
	res->r = r;
	if (r < 0)
		snprintf(res->why, sizeof(res->why), "%s", hwspy_reason());
	hwspy_recorder_free(rec);
	burning = 0;
	return NULL;
}

static void record_self(enum hwspy_record_mode mode)
{
	struct rec_result res = { .ask = mode };
	char mine[64], theirs[64];
	pthread_t t;
	char *folded;

	burning = 1;
	snprintf(res.path, sizeof(res.path), "/tmp/hwspy-api-self-%d.folded", (int) getpid());
	assert_int_equal(pthread_create(&t, NULL, record_thread, &res), 0);
	api_test_burn();
	pthread_join(t, NULL);
	if (res.r == -EACCES || res.r == -EPERM)
		skip();         /* perf events refused to this user even on itself */
	if (res.r < 0)
		fail_msg("recording the calling process failed: %d %s", res.r, res.why);
	assert_int_not_equal(res.mode, HWSPY_RECORD_STOPS);
	assert_false(res.sigchld_blocked);
	assert_false(res.nofile_changed);
	folded = slurp(res.path);
	(void) unlink(res.path);
	assert_non_null(folded);
	printf("# %llu samples, %llu of the recording thread left out, mode %d\n",
	       (unsigned long long) res.st.samples, (unsigned long long) res.st.excluded, res.mode);
	assert_true(res.st.samples > 10);
	/* the burning function, on the main thread */
	snprintf(mine, sizeof(mine), "[thread %d ", (int) getpid());
	assert_non_null(strstr(folded, "api_test_burn"));
	assert_non_null(strstr(folded, mine));
	/* not one stack of the recording thread */
	snprintf(theirs, sizeof(theirs), "[thread %d ", (int) res.tid);
	if (strstr(folded, theirs))
		fail_msg("the recording thread %d is in the profile:\n%s", (int) res.tid, folded);
	assert_null(strstr(folded, "record_thread"));
	free(folded);
}

/* the mode chosen: the BPF capture where allowed (root here), else nonblocking */
static void test_record_self_auto(void **state)
{
	(void) state;
	record_self(HWSPY_RECORD_AUTO);
}

/* the mode an unprivileged user gets: each stack read just after its sample */
static void test_record_self_nonblocking(void **state)
{
	(void) state;
	record_self(HWSPY_RECORD_NONBLOCKING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_self_auto),
		cmocka_unit_test(test_record_self_nonblocking),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
