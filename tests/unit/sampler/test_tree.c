/*
 * tree.c: opts.subprocesses on attach. procfs_descendants() gives a process's live descendants, breadth
 * first, zombies and hwspy itself left out, at most max; a sampler attached to a parent
 * blocked in pause() has the children it started before the attach, a grandchild among them,
 * from its start (their threads in its table when sampler_new() returns), samples them, and
 * keeps the samples of one that exits mid-run (its exit told). Skipped, saying so,
 * where perf events are not allowed.
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

#include "base/procfs.h"
#include "sampler/internal.h"

struct ready {
	char tag;
	pid_t pid;
};

static void say(int fd, char tag)
{
	struct ready m = { tag, getpid() };

	if (write(fd, &m, sizeof(m)) != (ssize_t) sizeof(m))
		_exit(1);
}

static void spin(int fd, char tag)
{
	volatile unsigned long n = 0;

	say(fd, tag);
	for (;;)
		n++;
}

static void sleep_forever(int fd, char tag)
{
	say(fd, tag);
	for (;;)
		pause();
}

/* Forks A, whose children are B (spinning, or pausing; its child E the same), C (exited, a
 * zombie A never reaps) and, with spinning, F (spinning); A pauses. The pids into pids['A'] ...
 * once each said it is ready. */
static pid_t make_tree(bool spinning, pid_t pids[128])
{
	void (*run)(int, char) = spinning ? spin : sleep_forever;
	int fds[2], want = spinning ? 5 : 4;
	pid_t a;

	memset(pids, 0, 128 * sizeof(*pids));
	assert_int_equal(pipe(fds), 0);
	a = fork();
	assert_true(a >= 0);
	if (a == 0) {
		siginfo_t si;
		pid_t c;

		(void) close(fds[0]);
		if (fork() == 0) {
			if (fork() == 0)
				run(fds[1], 'E');
			run(fds[1], 'B');
		}
		c = fork();
		if (c == 0)
			_exit(0);
		if (waitid(P_PID, (id_t) c, &si, WEXITED | WNOWAIT) < 0)
			_exit(1);
		{
			struct ready m = { 'C', c };

			if (write(fds[1], &m, sizeof(m)) != (ssize_t) sizeof(m))
				_exit(1);
		}
		if (spinning && fork() == 0)
			spin(fds[1], 'F');
		sleep_forever(fds[1], 'A');
	}
	(void) close(fds[1]);
	for (int got = 0; got < want;) {
		struct ready m;

		if (read(fds[0], &m, sizeof(m)) != (ssize_t) sizeof(m))
			break;
		if (m.tag >= 'A' && m.tag <= 'Z' && !pids[(int) m.tag]) {
			pids[(int) m.tag] = m.pid;
			got++;
		}
	}
	(void) close(fds[0]);
	return a;
}

static void end_tree(pid_t pids[128])
{
	for (int t = 'A'; t <= 'Z'; t++)
		if (pids[t] > 0 && t != 'C')
			(void) kill(pids[t], SIGKILL);
	(void) waitpid(pids['A'], NULL, 0);
}

static bool has(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

static void test_tree_list(void **state)
{
	pid_t pids[128], ret[16];
	size_t n, n_self, n_one;
	pid_t self_tree[16];

	(void) state;
	make_tree(false, pids);
	n = procfs_descendants(pids['A'], ret, 16);
	n_self = procfs_descendants(getpid(), self_tree, 16);
	n_one = procfs_descendants(pids['A'], ret + 8, 1);
	end_tree(pids);
	assert_true(pids['B'] > 0 && pids['C'] > 0 && pids['E'] > 0);
	/* A's children, then theirs; the zombie C never */
	assert_int_equal(n, 2);
	assert_int_equal(ret[0], pids['B']);
	assert_int_equal(ret[1], pids['E']);
	assert_int_equal(n_one, 1);
	assert_int_equal(ret[8], pids['B']);
	/* this process's tree: A first, not this process itself */
	assert_int_equal(n_self, 3);
	assert_int_equal(self_tree[0], pids['A']);
	assert_true(has(self_tree, n_self, pids['B']) && has(self_tree, n_self, pids['E']));
	assert_false(has(self_tree, n_self, getpid()));
}

struct seen {
	pid_t pids[128];
	uint64_t by[128];               /* samples by the tag of their process */
	uint64_t others;                /* samples of a process not in the tree */
	bool f_exit;                    /* SAMPLER_EVENT_CHILD_EXIT of F */
};

static void on_sample(void *ctx, const struct sample *smp)
{
	struct seen *v = ctx;

	for (int t = 'A'; t <= 'Z'; t++) {
		if (v->pids[t] && v->pids[t] == smp->pid) {
			v->by[t]++;
			return;
		}
	}
	v->others++;
}

static void on_event(void *ctx, const struct sampler_event *e)
{
	struct seen *v = ctx;

	if (e->kind == SAMPLER_EVENT_CHILD_EXIT && e->tid == v->pids['F'])
		v->f_exit = true;
}

static void test_attach_tree(void **state)
{
	struct seen v = { 0 };
	struct event_spec ev;
	struct sampler_opts o = { .n_events = 1, .freq = 1000, .subprocesses = true,
				  .event_fn = on_event, .event_ctx = &v };
	volatile sig_atomic_t stop = 0;
	struct sampler *s = NULL;
	int r, r1 = -1, r2 = -1, known_at_start = 0;

	(void) state;
	assert_int_equal(events_parse("cpu-clock", &ev), 0);
	o.events = &ev;
	o.pid = make_tree(true, v.pids);
	r = sampler_new(&o, &s);
	if (r == 0) {
		/* from the start, not once a scan finds them (every 100 ms, two looks) */
		for (int t = 'A'; t <= 'Z'; t++)
			known_at_start += t != 'C' && v.pids[t] && thread_find(s, v.pids[t]);
		r1 = sampler_run(s, on_sample, &v, &stop, 400000000ULL);
		/* F exits mid-run: its samples so far stay, its exit is told */
		(void) kill(v.pids['F'], SIGKILL);
		r2 = sampler_run(s, on_sample, &v, &stop, 300000000ULL);
		sampler_stop(s);
	}
	sampler_free(s);
	end_tree(v.pids);
	if (r == -EACCES || r == -EPERM || r == -ENOENT) {
		fprintf(stderr, "# skip: cannot open perf events here (%s)\n", strerror(-r));
		skip();
		return;
	}
	fprintf(stderr, "# samples: A %llu, B %llu, E %llu, F %llu, others %llu\n",
		(unsigned long long) v.by['A'], (unsigned long long) v.by['B'],
		(unsigned long long) v.by['E'], (unsigned long long) v.by['F'],
		(unsigned long long) v.others);
	assert_int_equal(r, 0);
	assert_int_equal(r1, 0);
	assert_int_equal(r2, 0);
	assert_int_equal(known_at_start, 4);    /* A, B, E, F */
	/* three spinning processes on a loaded machine: a few samples each at the least */
	assert_true(v.by['B'] >= 3);
	assert_true(v.by['E'] >= 3);
	assert_true(v.by['F'] >= 3);
	assert_true(v.f_exit);
	assert_int_equal(v.others, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_list),
		cmocka_unit_test(test_attach_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
