/*
 * target.c: sampler_new() blocks SIGCHLD on its thread (its signalfd reads it) and
 * sampler_free() gives the caller its mask back: unblocked if it was, still blocked if the
 * caller had blocked it itself. Attaches to a forked child (nonblocking mode: no ptrace);
 * skipped, saying so, where perf events are not allowed.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/sampler.h"

static bool chld_blocked(void)
{
	sigset_t now;

	return sigprocmask(SIG_BLOCK, NULL, &now) == 0 && sigismember(&now, SIGCHLD);
}

/* sampler_new() and sampler_free() on a sleeping child: whether SIGCHLD was blocked between,
 * and after; sampler_new()'s error */
static int new_free(pid_t pid, bool *ret_during, bool *ret_after)
{
	struct event_spec ev;
	struct sampler_opts o = { .pid = pid, .n_events = 1, .freq = 100 };
	struct sampler *s;
	int r;

	assert_int_equal(events_parse("cpu-clock", &ev), 0);
	o.events = &ev;
	r = sampler_new(&o, &s);
	if (r < 0)
		return r;
	*ret_during = chld_blocked();
	sampler_free(s);
	*ret_after = chld_blocked();
	return 0;
}

static void test_sigchld_mask(void **state)
{
	sigset_t chld;
	bool during = false, after = true, during2 = false, after2 = false;
	int status, made, made2 = -1;
	pid_t pid;

	(void) state;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	assert_int_equal(sigprocmask(SIG_UNBLOCK, &chld, NULL), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	made = new_free(pid, &during, &after);
	if (made == 0) {
		/* blocked by the caller already: it stays so */
		(void) sigprocmask(SIG_BLOCK, &chld, NULL);
		made2 = new_free(pid, &during2, &after2);
		(void) sigprocmask(SIG_UNBLOCK, &chld, NULL);
	}
	/* no assertion before this: a failure must not leave the child behind */
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, &status, 0);
	if (made == -EACCES || made == -EPERM || made == -ENOENT) {
		fprintf(stderr, "# skip: cannot open perf events here (%s)\n", strerror(-made));
		skip();
		return;
	}
	assert_int_equal(made, 0);
	assert_true(during);
	assert_false(after);
	assert_int_equal(made2, 0);
	assert_true(during2);
	assert_true(after2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigchld_mask),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
