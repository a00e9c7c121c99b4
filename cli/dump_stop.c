/*
 * dump_stop: the stop of `hwspy dump`: the target's running threads (and those waiting in calls
 * the kernel restarts after a stop) held still while their stacks are read, for as short a time
 * as the read takes, with no side effect the target could see (the others are read without a
 * stop: dump.h).
 *
 * Every ptrace call runs on one thread of ours (only the thread that seized a tracee may
 * operate on it), and that thread's exit is the release of last resort: the kernel then
 * detaches every tracee, waking those in a ptrace-stop and clearing the interrupt still
 * pending in the others, so no thread of the target is ever left stopped, even if hwspy is
 * killed (sampler/tracer.c relies on the same). hwspy's own SIGINT, SIGTERM, SIGHUP, SIGQUIT and
 * SIGTSTP wait, blocked, until the threads are let go.
 *
 * Order: each thread's state read again just before it is seized and interrupted (one that
 * waits by then in a call that would not go on by itself is left alone: it is read as it
 * waits), then a wait (STOP_WAIT_NS at most)
 * for each stop. A refusal ends it all only where no thread could be seized. A running thread
 * stops where it runs, with nothing to undo: calls the kernel restarts by itself (futex, read
 * on a pipe, nanosleep, poll ...) go on with what is left of their timeout when it resumes,
 * even if hwspy is killed first. One case needs an undo: a thread the interrupt caught as it
 * entered a call that fails with EINTR instead (epoll_wait, recv with a timeout, sigtimedwait
 * ...). That is seen as soon as it stops (its registers: the call's result -EINTR), and undone
 * there and then, the call made again (sampler_undo_eintr()), and the thread let go at once
 * (dump_stopped.rewound): only the microseconds between its stop and the undo depend on hwspy,
 * not the whole stop. Not where a signal of the target's is pending for it: the EINTR is then
 * that signal's too, and left. A signal that reached a thread meanwhile (a signal-delivery-stop)
 * is passed on at the detach.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "base/procfs.h"
#include "cli/dump.h"
#include "record/record.h"
#include "sampler/sampler.h"

#define STOP_WAIT_NS 200000000ull      /* a thread not stopped by then is read as it runs */
#define POLL_NS 20000                   /* between checks for stops */

struct ds_thread {
	bool seized;
	int sig;                /* a signal that stopped it, passed on at the detach */
};

enum ds_phase { DS_STOPPING, DS_STOPPED, DS_RELEASE };

struct dump_stop {
	pid_t pid;
	bool native;
	size_t n;
	struct dump_stopped *t;
	struct ds_thread *own;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum ds_phase phase;
	int err;
	pid_t tracer;
	uint64_t stopped_at, released_at;       /* the first interrupt, the last detach */
	sigset_t old_mask;
	bool ended;
};

static struct dump_stopped *find(struct dump_stop *ds, pid_t tid, struct ds_thread **ret_own)
{
	for (size_t i = 0; i < ds->n; i++)
		if (ds->t[i].tid == tid && ds->own[i].seized) {
			*ret_own = &ds->own[i];
			return &ds->t[i];
		}
	return NULL;
}

/* A thread just stopped by our interrupt: if the call it was entering failed with EINTR
 * because of it, the call is made again and the thread let go now, unread. */
static void undo_now(struct dump_stop *ds, struct dump_stopped *t, struct ds_thread *o)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &regs) < 0 || (long long) regs.rax != -EINTR ||
	    (long long) regs.orig_rax < 0)
		return;
	if (procfs_task_signal_pending(ds->pid, t->tid) || !sampler_undo_eintr(t->tid))
		return;
	(void) ptrace(PTRACE_DETACH, t->tid, 0, 0);
	o->seized = false;
	t->stopped = false;
	t->rewound = true;
}

/* Waits for the stops of the interrupted threads, STOP_WAIT_NS at most. */
static void wait_stops(struct dump_stop *ds, size_t pending)
{
	uint64_t deadline = clock_now_ns() + STOP_WAIT_NS;
	struct timespec nap = { 0, POLL_NS };

	while (pending > 0 && clock_now_ns() < deadline) {
		struct dump_stopped *t;
		struct ds_thread *o;
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);

		if (tid < 0)
			return;
		if (tid == 0) {
			(void) nanosleep(&nap, NULL);
			continue;
		}
		t = find(ds, tid, &o);
		if (!t)
			continue;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			o->seized = false;
			if (!t->stopped)
				pending--;
			continue;
		}
		if (!WIFSTOPPED(status) || t->stopped)
			continue;
		t->stopped = true;
		pending--;
		if ((status >> 16) == PTRACE_EVENT_STOP)
			undo_now(ds, t, o);
		else if ((status >> 16) == 0)
			o->sig = WSTOPSIG(status);
	}
}

/* A stopped thread's registers, in perf's REGS_USER order (dump.h), and its stack from SP. */
static void take_native(struct dump_stop *ds, struct dump_stopped *t)
{
	struct user_regs_struct r;
	struct iovec local, remote;
	ssize_t got;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return;
	{
		const uint64_t v[DUMP_N_REGS] = {
			r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp, r.rip, r.eflags,
			r.cs, r.ss, r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15,
		};
		memcpy(t->regs, v, sizeof(v));
	}
	t->regs_ok = true;
	t->stack = malloc(DUMP_STACK_COPY);
	if (!t->stack)
		return;
	local = (struct iovec) { t->stack, DUMP_STACK_COPY };
	remote = (struct iovec) { (void *) (uintptr_t) r.rsp, DUMP_STACK_COPY };
	/* a partial read ends at the top of the stack's mapping */
	got = process_vm_readv(ds->pid, &local, 1, &remote, 1, 0);
	if (got <= 0) {
		free(t->stack);
		t->stack = NULL;
		return;
	}
	t->stack_len = (size_t) got;
}

/* The pid of the tracer of a thread of the target, 0 when none. */
static pid_t tracer_of(pid_t pid, pid_t tid)
{
	long tracer = 0;

	return procfs_status_long(pid, tid, "TracerPid", &tracer) == 0 ? (pid_t) tracer : 0;
}

/* Seizes and interrupts each thread that runs now (one found waiting by then is left alone:
 * it is read as it waits, dump.h): how many were interrupted, or -EPERM where every thread it
 * tried refused (ds->tracer the first refusal's tracer) and none was seized. */
static int stop_running(struct dump_stop *ds)
{
	size_t pending = 0, refused = 0, seized = 0;

	for (size_t i = 0; i < ds->n; i++) {
		pid_t tid = ds->t[i].tid;
		struct procfs_syscall sc;
		uint64_t switches;
		char state;

		if (procfs_task_sched(ds->pid, tid, &state, &switches) < 0)
			continue;       /* gone */
		/* waiting now in a call that would not go on by itself after a stop: read as it
		 * waits */
		if (procfs_task_still(state) &&
		    (state != 'S' || procfs_task_syscall(ds->pid, tid, &sc) < 0 ||
		     !wait_restarts(ds->pid, &sc)))
			continue;
		/* runnable inside such a call (woken, its timeout just over, waiting for a CPU):
		 * an interrupt now would make it fail with EINTR, and made again it would wait its
		 * whole timeout once more; it is looked at in the next round */
		if (state == 'R' && procfs_task_syscall(ds->pid, tid, &sc) == 0 && sc.nr >= 0 &&
		    !wait_restarts(ds->pid, &sc))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
			if (errno != ESRCH && !refused++)
				ds->tracer = tracer_of(ds->pid, tid);
			continue;
		}
		ds->own[i].seized = true;
		seized++;
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0)
			pending++;
	}
	return refused && !seized ? -EPERM : (int) pending;
}

static void release_all(struct dump_stop *ds)
{
	for (size_t i = 0; i < ds->n; i++) {
		if (!ds->own[i].seized || !ds->t[i].stopped)
			continue;
		/* a stopped thread has run nothing since its stop: no EINTR to undo here */
		(void) ptrace(PTRACE_DETACH, ds->t[i].tid, 0, ds->own[i].sig);
	}
}

static void set_phase(struct dump_stop *ds, enum ds_phase phase)
{
	pthread_mutex_lock(&ds->lock);
	ds->phase = phase;
	pthread_cond_broadcast(&ds->cond);
	pthread_mutex_unlock(&ds->lock);
}

static void *stop_main(void *arg)
{
	struct dump_stop *ds = arg;
	int r;

	ds->stopped_at = clock_now_ns();
	r = stop_running(ds);
	ds->err = r < 0 ? r : 0;
	if (r >= 0) {
		wait_stops(ds, (size_t) r);
		for (size_t i = 0; ds->native && i < ds->n; i++)
			if (ds->own[i].seized && ds->t[i].stopped)
				take_native(ds, &ds->t[i]);
	}
	set_phase(ds, DS_STOPPED);
	pthread_mutex_lock(&ds->lock);
	while (ds->phase != DS_RELEASE)
		pthread_cond_wait(&ds->cond, &ds->lock);
	pthread_mutex_unlock(&ds->lock);
	release_all(ds);
	ds->released_at = clock_now_ns();
	/* exiting detaches the rest: threads that had not stopped yet go on unstopped */
	return NULL;
}

static void ds_free(struct dump_stop *ds)
{
	for (size_t i = 0; i < ds->n; i++)
		free(ds->t[i].stack);
	free(ds->t);
	free(ds->own);
	free(ds);
}

int dump_stop_begin(pid_t pid, const pid_t *tids, size_t n, bool native, struct dump_stop **ret,
		    pid_t *ret_tracer)
{
	struct dump_stop *ds = calloc(1, sizeof(*ds));
	sigset_t quit;
	int r;

	*ret = NULL;
	*ret_tracer = 0;
	if (!ds)
		return -ENOMEM;
	ds->pid = pid;
	ds->native = native;
	ds->n = n;
	ds->t = calloc(n ? n : 1, sizeof(*ds->t));
	ds->own = calloc(n ? n : 1, sizeof(*ds->own));
	if (!ds->t || !ds->own) {
		ds_free(ds);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		ds->t[i].tid = tids[i];
	pthread_mutex_init(&ds->lock, NULL);
	pthread_cond_init(&ds->cond, NULL);
	/* the stop thread inherits the mask: hwspy's own quit signals wait for the release */
	sigemptyset(&quit);
	sigaddset(&quit, SIGINT);
	sigaddset(&quit, SIGTERM);
	sigaddset(&quit, SIGHUP);
	sigaddset(&quit, SIGQUIT);
	sigaddset(&quit, SIGTSTP);
	pthread_sigmask(SIG_BLOCK, &quit, &ds->old_mask);
	r = pthread_create(&ds->thread, NULL, stop_main, ds);
	if (r) {
		pthread_sigmask(SIG_SETMASK, &ds->old_mask, NULL);
		pthread_mutex_destroy(&ds->lock);
		pthread_cond_destroy(&ds->cond);
		ds_free(ds);
		return -r;
	}
	pthread_mutex_lock(&ds->lock);
	while (ds->phase == DS_STOPPING)
		pthread_cond_wait(&ds->cond, &ds->lock);
	pthread_mutex_unlock(&ds->lock);
	if (ds->err < 0) {
		r = ds->err;
		*ret_tracer = ds->tracer;
		dump_stop_free(ds);
		return r;
	}
	*ret = ds;
	return 0;
}

const struct dump_stopped *dump_stop_thread(const struct dump_stop *ds, size_t i)
{
	return i < ds->n ? &ds->t[i] : NULL;
}

uint64_t dump_stop_end(struct dump_stop *ds)
{
	if (ds->ended)
		return ds->stopped_at ? ds->released_at - ds->stopped_at : 0;
	set_phase(ds, DS_RELEASE);
	(void) pthread_join(ds->thread, NULL);
	ds->ended = true;
	pthread_mutex_destroy(&ds->lock);
	pthread_cond_destroy(&ds->cond);
	pthread_sigmask(SIG_SETMASK, &ds->old_mask, NULL);
	return ds->stopped_at ? ds->released_at - ds->stopped_at : 0;
}

void dump_stop_free(struct dump_stop *ds)
{
	if (!ds)
		return;
	(void) dump_stop_end(ds);
	ds_free(ds);
}
