/*
 * target.c: sampler_new() blocks SIGCHLD on its thread (its signalfd reads it) and
 * sampler_free() gives the caller its mask back: unblocked if it was, still blocked if the
 * caller had blocked it itself (attached to a forked child, nonblocking mode: no ptrace).
 * And SAMPLER_EVENT_EXEC: a launched shell that execs another, sampled by stops, is told of
 * once, just before a sample of the new image. In-process defaults (opts.sigchld and
 * opts.raise_nofile false, counter_opts.raise_nofile false): the signal mask, the signalfds
 * and RLIMIT_NOFILE left as they were, a command launched without sigchld still seen to exit,
 * exact mode without it refused (-EINVAL). Skipped, saying so, where perf events or ptrace
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
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
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
	struct sampler_opts o = { .pid = pid, .n_events = 1, .freq = 100, .sigchld = true };
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
				  .sigchld = true, .event_fn = exec_on_event, .event_ctx = &v };
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

/* A second sampling event (opts.leaders): a child that alternates touching fresh pages in
 * touch() and computing in compute(), sampled by cpu-clock with page-faults sampling on its
 * own. Its samples say so (event 1) and weigh their faults (values[1], values[0] 0), land in
 * touch() (the faulting instruction), and are stopped with their thread in exact mode;
 * cpu-clock's carry no faults. */
__attribute__((noinline, section("hwspy_touch"))) static void touch(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, 64 * (size_t) psz, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	for (int i = 0; i < 64; i++)
		p[(size_t) i * (size_t) psz] = 1;
	(void) munmap((void *) p, 64 * (size_t) psz);
}

__attribute__((noinline)) static void compute(void)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < 300000; i++)
		x += i;
}

extern const char __start_hwspy_touch[], __stop_hwspy_touch[];

struct lead_seen {
	size_t cpu, faults, faults_in_touch, faults_stopped, bad;
	size_t faults_at_end;           /* read after the run, at sampler_free()'s release */
	bool ended;
	uint64_t fault_weight;
};

static void lead_on_sample(void *ctx, const struct sample *smp)
{
	struct lead_seen *v = ctx;

	if (smp->n_values != 2 || smp->event > 1) {
		v->bad++;
		return;
	}
	if (smp->event == 0) {
		v->cpu++;
		v->bad += smp->values[0] == 0 || smp->values[1] != 0;
		return;
	}
	v->faults++;
	v->fault_weight += smp->values[1];
	v->bad += smp->values[0] != 0 || smp->values[1] == 0;
	v->faults_in_touch += smp->ip >= (uintptr_t) __start_hwspy_touch &&
			      smp->ip < (uintptr_t) __stop_hwspy_touch;
	v->faults_stopped += smp->stopped;
	v->faults_at_end += v->ended;
}

static void lead_run(bool exact)
{
	struct event_spec ev[2];
	struct sampler_opts o = { .n_events = 2, .freq = 1000, .exact = exact, .leaders = 1u << 1,
				  .stop_budget_pct = 100, .sigchld = exact };
	volatile sig_atomic_t stop = 0;
	struct lead_seen v = { 0 };
	struct sampler *s;
	int r, r_run = -1;
	pid_t pid;

	assert_int_equal(events_parse("cpu-clock", &ev[0]), 0);
	assert_int_equal(events_parse("page-faults", &ev[1]), 0);
	o.events = ev;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;) {
			touch();
			compute();
		}
	}
	o.pid = pid;
	r = sampler_new(&o, &s);
	if (r == 0) {
		r_run = sampler_run(s, lead_on_sample, &v, &stop, 300000000ULL);
		v.ended = true;
		sampler_free(s);
	}
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, NULL, 0);
	if (r == -EACCES || r == -EPERM || r == -ENOENT) {
		fprintf(stderr, "# skip: cannot open perf events or ptrace here (%s)\n", strerror(-r));
		skip();
		return;
	}
	fprintf(stderr, "# %s: %zu cpu-clock samples, %zu page-fault samples (%llu faults), "
		"%zu in touch(), %zu stopped, %zu read at the end, %zu bad\n",
		exact ? "exact" : "nonblocking", v.cpu, v.faults, (unsigned long long) v.fault_weight,
		v.faults_in_touch, v.faults_stopped, v.faults_at_end, v.bad);
	assert_int_equal(r, 0);
	assert_int_equal(r_run, 0);
	assert_int_equal(v.bad, 0);
	assert_true(v.cpu >= 20);
	assert_true(v.faults >= 20);
	/* each weighs about its period (100), what it counted since the thread's last one */
	assert_true(v.fault_weight >= 50 * v.faults && v.fault_weight <= 200 * v.faults);
	assert_true(v.faults_in_touch * 10 >= v.faults * 9);
	/* exact: each sample read during the run under its stop; those whose stop had not come
	 * when the run ended (a busy machine: the signal still pending) are read unstopped at the
	 * release, as sampler_stop() says */
	assert_true(v.faults_stopped == (exact ? v.faults - v.faults_at_end : 0));
	assert_true(v.faults_at_end * 10 <= v.faults);
}

static void test_leader_nonblocking(void **state)
{
	(void) state;
	lead_run(false);
}

static void test_leader_exact(void **state)
{
	(void) state;
	lead_run(true);
}

/* How many signalfds this process holds (anon_inode:[signalfd] in /proc/self/fd). */
static int signalfds(void)
{
	char path[300], link[64];
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	assert_non_null(d);
	while ((de = readdir(d))) {
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = '\0';
		n += strcmp(link, "anon_inode:[signalfd]") == 0;
	}
	(void) closedir(d);
	return n;
}

/* The soft RLIMIT_NOFILE set under the hard one (so that a raise would show): its value, or 0
 * where the hard limit leaves no room. */
static rlim_t lower_nofile(void)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 512)
		return 0;
	rl.rlim_cur = 256;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	return rl.rlim_cur;
}

static rlim_t soft_nofile(void)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	return rl.rlim_cur;
}

/* The defaults leave the process alone: attached (nonblocking) and counting its own process. */
static void test_in_process_defaults(void **state)
{
	struct event_spec ev;
	struct sampler_opts o = { .n_events = 1, .freq = 100 };
	struct counter_opts co = { .n_events = 1 };
	volatile sig_atomic_t stop = 0;
	struct sampler *s = NULL;
	struct counter *c = NULL;
	bool during = true;
	int during_fds = -1, fds0, r, rc = -1;
	rlim_t soft = 0, soft_during = 0, soft_counting = 0;
	sigset_t chld;
	pid_t pid;

	(void) state;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	assert_int_equal(sigprocmask(SIG_UNBLOCK, &chld, NULL), 0);
	assert_int_equal(events_parse("cpu-clock", &ev), 0);
	o.events = &ev;
	co.events = &ev;
	fds0 = signalfds();
	soft = lower_nofile();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	o.pid = pid;
	r = sampler_new(&o, &s);
	if (r == 0) {
		during = chld_blocked();
		during_fds = signalfds();
		soft_during = soft_nofile();
		(void) sampler_run(s, exec_on_sample, &(struct exec_seen) { 0 }, &stop, 50000000ULL);
		sampler_free(s);
	}
	co.pid = getpid();
	if (r == 0 && (rc = counter_new(&co, &c)) == 0) {
		soft_counting = soft_nofile();
		counter_free(c);
	}
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, NULL, 0);
	if (r == -EACCES || r == -EPERM || r == -ENOENT) {
		fprintf(stderr, "# skip: cannot open perf events here (%s)\n", strerror(-r));
		skip();
		return;
	}
	assert_int_equal(r, 0);
	assert_false(during);
	assert_int_equal(during_fds, fds0);
	assert_int_equal(rc, 0);
	if (soft) {
		assert_int_equal(soft_during, soft);
		assert_int_equal(soft_counting, soft);
	} else {
		fprintf(stderr, "# hard RLIMIT_NOFILE under 512: its raise not checked\n");
	}
}

/* Launched without sigchld: the command runs, its exit is seen at a scan (not left running
 * for the whole duration), nothing blocked. Exact mode without sigchld: -EINVAL at once. */
static void test_launch_without_sigchld(void **state)
{
	static char *const argv[] = { "/bin/sh", "-c", "exit 3", NULL };
	struct event_spec ev;
	struct sampler_opts o = { .argv = argv, .n_events = 1, .freq = 100 };
	volatile sig_atomic_t stop = 0;
	struct sampler *s = NULL;
	bool during = true;
	uint64_t t0, took = 0;
	int r, r_run = -1, status = -1;
	sigset_t chld;

	(void) state;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	assert_int_equal(sigprocmask(SIG_UNBLOCK, &chld, NULL), 0);
	assert_int_equal(events_parse("cpu-clock", &ev), 0);
	o.events = &ev;
	o.exact = true;
	assert_int_equal(sampler_new(&o, &s), -EINVAL);
	assert_null(s);
	o.exact = false;
	r = sampler_new(&o, &s);
	if (r == 0) {
		during = chld_blocked();
		t0 = clock_now_ns();
		r_run = sampler_run(s, exec_on_sample, &(struct exec_seen) { 0 }, &stop,
				    5000000000ULL);
		took = clock_now_ns() - t0;
		status = sampler_stats(s)->target_exited ? sampler_stats(s)->exit_status : -1;
		sampler_free(s);
	}
	if (r == -EACCES || r == -EPERM || r == -ENOENT) {
		fprintf(stderr, "# skip: cannot open perf events here (%s)\n", strerror(-r));
		skip();
		return;
	}
	fprintf(stderr, "# launched without sigchld: exit seen after %llu ms\n",
		(unsigned long long) (took / 1000000));
	assert_int_equal(r, 0);
	assert_int_equal(r_run, 0);
	assert_false(during);
	assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 3);
	assert_true(took < 2000000000ULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigchld_mask),
		cmocka_unit_test(test_exec_event),
		cmocka_unit_test(test_leader_nonblocking),
		cmocka_unit_test(test_leader_exact),
		cmocka_unit_test(test_in_process_defaults),
		cmocka_unit_test(test_launch_without_sigchld),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
