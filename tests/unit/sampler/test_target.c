/*
 * target.c: sampler_new() blocks SIGCHLD on its thread (its signalfd reads it) and
 * sampler_free() gives the caller its mask back: unblocked if it was, still blocked if the
 * caller had blocked it itself (attached to a forked child, nonblocking mode: no ptrace).
 * And SAMPLER_EVENT_EXEC: a launched shell that execs another, sampled by stops, is told of
 * once, just before a sample of the new image. Skipped, saying so, where perf events or ptrace
 * are not allowed.
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

struct exec_seen {
	size_t samples, execs, exec_then_sample, bad;
	bool pending;                   /* an EXEC told, no sample since */
	struct sampler *s;
};

static void exec_on_sample(void *ctx, const struct sample *smp)
{
	struct exec_seen *v = ctx;

	(void) smp;
	v->samples++;
	v->exec_then_sample += v->pending;
	v->pending = false;
}

static void exec_on_event(void *ctx, const struct sampler_event *e)
{
	struct exec_seen *v = ctx;

	/* told once per batch of execs, before the sample that follows, by the sampler at work */
	if (e->kind != SAMPLER_EVENT_EXEC || v->pending || e->sampler != v->s ||
	    e->tid != sampler_pid(e->sampler))
		v->bad++;
	v->execs++;
	v->pending = true;
}

static void test_exec_event(void **state)
{
	/* the command exec's a shell that spins for a second or so */
	static char *const argv[] = { "/bin/sh", "-c",
		"exec /bin/sh -c 'i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done'", NULL };
	struct exec_seen v = { 0 };
	struct event_spec ev;
	struct sampler_opts o = { .argv = argv, .n_events = 1, .freq = 500, .exact = true,
				  .event_fn = exec_on_event, .event_ctx = &v };
	volatile sig_atomic_t stop = 0;
	uint64_t execs = 0;
	int r, r_run = -1;

	(void) state;
	assert_int_equal(events_parse("cpu-clock", &ev), 0);
	o.events = &ev;
	r = sampler_new(&o, &v.s);
	if (r == -EACCES || r == -EPERM || r == -ENOENT) {
		fprintf(stderr, "# skip: cannot open perf events or ptrace here (%s)\n", strerror(-r));
		skip();
		return;
	}
	assert_int_equal(r, 0);
	r_run = sampler_run(v.s, exec_on_sample, &v, &stop, 400000000ULL);
	execs = sampler_stats(v.s)->execs;
	sampler_stop(v.s);
	(void) kill(sampler_pid(v.s), SIGKILL);
	(void) waitpid(sampler_pid(v.s), NULL, 0);
	sampler_free(v.s);
	assert_int_equal(r_run, 0);
	assert_int_equal(v.bad, 0);
	assert_int_equal(execs, 1);
	assert_int_equal(v.execs, 1);
	assert_int_equal(v.exec_then_sample, 1);
	assert_true(v.samples >= 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigchld_mask),
		cmocka_unit_test(test_exec_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
