/*
 * target: attaching to a process (every thread, and threads started later) or launching a
 * command, the nonblocking run loop, and the teardown. In exact mode every ptrace call runs
 * on the tracer thread (tracer.c): attach and launch are handed to it as a job.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/procfs.h"
#include "sampler/internal.h"

#define SCAN_INTERVAL_NS 100000000ULL   /* look for new threads (nonblocking mode) */
#define SCAN_BACKSTOP_NS 1000000000ULL  /* ... where events inherit and a pidfd tells the exit */
#define CAPTURE_CUT_RECENT_NS 1000000000ULL /* ... not while deeper stacks came this recently */
#define THREAD_BORN_RECENT_NS 1000000000ULL /* ... nor while threads came this recently */
#define CAPTURE_TICK_MS 1000            /* capture mode's longest poll: the rings' watermark
                                         * and the caller's slices wake it sooner */
#define CAPTURE_CUT_TICK_MS 50         /* ... its poll while deeper stacks come */
/* Nonblocking mode reads the rings on a tick: half the sampling interval, within these bounds
 * (reads are late by half a tick on average; each tick costs us a wakeup) */
#define READ_TICK_MIN_MS 1
#define READ_TICK_MAX_MS 5
#define MAX_THREADS 65536

/* ---- threads ---- */

struct thread *thread_find(struct sampler *s, pid_t tid)
{
	for (size_t i = 0; i < s->n_threads; i++)
		if (s->threads[i].tid == tid && s->threads[i].alive)
			return &s->threads[i];
	return NULL;
}

/* A free entry of the table (cleared, tid set, not counted yet), or NULL (-E2BIG / -ENOMEM in
 * *ret_err). */
static struct thread *thread_slot(struct sampler *s, pid_t tid, int *ret_err)
{
	struct thread *t = NULL;

	/* the entry of a thread gone, if any (a target that churns threads never fills the table;
	 * a per-CPU thread gone keeps its events, inherited by others, until the end) */
	for (size_t i = 0; i < s->n_threads && !t; i++)
		if (!s->threads[i].alive && !s->threads[i].traced && !s->threads[i].cpu_fds)
			t = &s->threads[i];
	if (!t && s->n_threads == s->cap_threads) {
		*ret_err = s->cap_threads * 2 > MAX_THREADS ? -E2BIG : -ENOMEM;
		if (s->cap_threads * 2 > MAX_THREADS ||
		    array_grow((void **) &s->threads, &s->cap_threads, s->n_threads + 1,
			       sizeof(*s->threads), 16) < 0)
			return NULL;
	}
	if (t)
		free(t->cpu_last);      /* an inherited thread's, gone */
	else
		t = &s->threads[s->n_threads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	s->thread_born_ns = clock_now_ns();
	for (size_t i = 0; i < SAMPLER_MAX_EVENTS; i++)
		t->fds[i] = -1;
	t->out_fd = -1;
	t->slot = -1;
	return t;
}

/* Makes t (from thread_slot()) a live entry of the table. */
static void thread_live(struct sampler *s, struct thread *t)
{
	t->alive = true;
	if (t == &s->threads[s->n_threads])
		s->n_threads++;
	s->stats.threads_seen++;
}

/* Adds tid and opens its events. The thread must already be traced in exact mode. */
int thread_add(struct sampler *s, pid_t tid, bool traced)
{
	struct thread *t;
	int r = 0;

	t = thread_slot(s, tid, &r);
	if (!t)
		return r;
	t->traced = traced;
	r = perf_thread_open(s, t);
	if (r < 0)
		return r;
	thread_live(s, t);
	return 0;
}

struct thread *sampler_thread_get(struct sampler *s, pid_t tid, bool add)
{
	struct thread *t = NULL;
	int r = 0;

	for (size_t i = 0; i < s->n_threads; i++)
		if (s->threads[i].tid == tid && s->threads[i].alive)
			return &s->threads[i];
	/* a thread taken for gone (its exit record read before its last samples): the same
	 * entry again, with its counters' last totals, never a fresh one that would weigh its
	 * next samples by the whole count since the events opened */
	for (size_t i = 0; add && i < s->n_threads; i++) {
		t = &s->threads[i];
		if (t->tid == tid && !t->traced && t->cpu_last) {
			t->alive = true;
			return t;
		}
	}
	t = NULL;
	if (add)
		t = thread_slot(s, tid, &r);
	if (!t)
		return NULL;
	t->inherited = true;
	thread_live(s, t);
	return t;
}

void thread_gone(struct sampler *s, struct thread *t)
{
	perf_thread_drain(s, t, false);
	perf_thread_close(s, t);
	t->alive = false;
	t->traced = false;
}

bool proc_alive(pid_t pid)
{
	char path[64], buf[512];
	pid_t tid;
	ssize_t n;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	(void) close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return false;
	if (p[2] != 'Z' && p[2] != 'X')
		return true;
	/* a main thread that exited (pthread_exit) while other threads run on is a zombie: the
	 * process lives as long as one of them does */
	return procfs_live_tid(pid, &tid) == 0;
}

/* PTRACE_SEIZE of thread tid: 0, -ESRCH (gone, or exiting: its EPERM is no refusal), -EPERM.
 * A thread born of one we trace is already ours (auto-attached, its clone event not yet
 * read): 0 too. */
static int seize(struct sampler *s, pid_t tid)
{
	pid_t tracer;
	int r;

	if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC) == 0)
		return 0;
	r = -errno;
	if (r != -EPERM)
		return r;
	if (tracer_task_owner(s->pid, tid, &tracer) < 0)
		return -ESRCH;
	if (s->tracer.running && tracer == s->tracer.tid)
		return 0;
	return r;
}

/* Whether thread_add() failed for want of a resource (the thread is counted and left out,
 * the others are sampled), not for a reason that stops the whole attach. */
static bool resource_error(int r)
{
	return perf_fail_reason(r) != SAMPLER_FAIL_OTHER;
}

/* Finds threads not yet known and adds them (seizing them first in exact mode). Returns how
 * many were added; when none was and some were left out, the last one's error. */
int scan_threads(struct sampler *s, bool fail_hard)
{
	pid_t tids[4096];
	int n, added = 0, r, err = 0;
	/* per CPU, after the attach: new threads come with inherited events (and a FORK record,
	 * written just after the thread shows in /proc); one unknown in two scans in a row has
	 * none: it was started by a thread left out */
	bool second_look = s->layout->inherit && !fail_hard;
	pid_t *unknown = second_look ? malloc(sizeof(tids)) : NULL;
	size_t n_unknown = 0;

	if (second_look && !unknown)
		return -ENOMEM;

	for (int round = 0; round < 8; round++) {
		int new = 0;
		n = procfs_tasks(s->pid, tids, sizeof(tids) / sizeof(tids[0]));
		if (n < 0) {
			free(unknown);
			return n;
		}
		/* just after an attach, the processes it started too: a thread of one started
		 * while the attach listed them may have inherited no events (tree.c) */
		if (second_look && s->tree_scans)
			n = (int) tree_tasks(s, tids, (size_t) n, sizeof(tids) / sizeof(tids[0]));
		if (round == 0 && s->n_left_out && (size_t) n < sizeof(tids) / sizeof(tids[0])) {
			qsort(tids, (size_t) n, sizeof(*tids), perf_cmp_tid);
			perf_left_out_prune(s, tids, (size_t) n);
		}
		for (int i = 0; i < n; i++) {
			bool traced = false;
			if (thread_find(s, tids[i]) || perf_thread_left_out(s, tids[i]))
				continue;
			/* bsearch() of none: s->unknown may be NULL, which bsearch may not get */
			if (second_look && (!s->n_unknown ||
					    !bsearch(&tids[i], s->unknown, s->n_unknown,
						     sizeof(*tids), perf_cmp_tid))) {
				unknown[n_unknown++] = tids[i];
				continue;
			}
			if (s->opts.exact) {
				r = seize(s, tids[i]);
				if (r == -ESRCH)
					continue;
				if (r < 0) {
					if (fail_hard)
						return r == -EPERM || r == -EACCES ? -EPERM : r;
					perf_thread_failed(s, tids[i], SAMPLER_FAIL_PTRACE, r);
					continue;
				}
				traced = true;
			}
			r = thread_add(s, tids[i], traced);
			if (r < 0) {
				/* a seized thread runs: only the tracer thread's exit lets it go
				 * without interrupting it (tracer.c) */
				if (r == -ESRCH)
					continue;
				if (fail_hard && !resource_error(r))
					return r == -EPERM ? -EACCES : r;
				perf_thread_failed(s, tids[i], perf_fail_reason(r), r);
				err = r;
				continue;
			}
			new++;
		}
		added += new;
		if (!new || second_look)
			break;
	}
	if (second_look) {
		qsort(unknown, n_unknown, sizeof(*unknown), perf_cmp_tid);
		free(s->unknown);
		s->unknown = unknown;
		s->n_unknown = n_unknown;
	}
	return added || !err ? added : err;
}

/* ---- launching ---- */

/* Whether a launched command gets a process group of its own (so that ending it ends what it
 * started): not where the caller's group is its terminal's foreground one, where Ctrl-C and
 * Ctrl-Z must reach the command and it may read the terminal. */
static bool own_group(void)
{
	int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	bool own = true;

	if (fd >= 0) {
		own = tcgetpgrp(fd) != getpgrp();
		(void) close(fd);
	}
	return own;
}

int target_fork_stopped(char *const *argv, pid_t *ret_pid, int *ret_pipe)
{
	int pipefd[2], err = 0, status, r;
	bool own = own_group();
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		(void) close(pipefd[0]);
		(void) close(pipefd[1]);
		return r;
	}
	if (pid == 0) {
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		(void) close(pipefd[0]);
		if (own)
			(void) setpgid(0, 0);
		raise(SIGSTOP);         /* the parent seizes us here, or opens its counters */
		execvp(argv[0], argv);
		err = errno;
		(void) !write(pipefd[1], &err, sizeof(err));
		_exit(127);
	}
	(void) close(pipefd[1]);
	if (own)
		(void) setpgid(pid, pid);       /* as the child does: whichever runs first */
	if (waitpid(pid, &status, WUNTRACED) < 0 || !WIFSTOPPED(status)) {
		(void) kill(pid, SIGKILL);
		(void) waitpid(pid, &status, __WALL);
		(void) close(pipefd[0]);
		return -ECHILD;
	}
	*ret_pid = pid;
	*ret_pipe = pipefd[0];
	return 0;
}

/* Forks the command, stopped before its exec; *ret_pipe then reads the exec's errno. On the
 * caller's thread, not the tracer's: the command's parent thread must live as long as hwspy
 * (a command with PR_SET_PDEATHSIG would get its signal when the tracer thread ends). */
static int launch_fork(struct sampler *s, int *ret_pipe)
{
	pid_t pid;
	int r = target_fork_stopped(s->opts.argv, &pid, ret_pipe);

	if (r < 0)
		return r;
	s->pid = pid;
	s->launched = true;
	return 0;
}

/* Seizes the forked command and lets it run to its exec (the tracer's part of a launch).
 * Closes exec_pipe. */
static int launch_exec(struct sampler *s, int exec_pipe)
{
	int err = 0, status, r;
	pid_t pid = s->pid;
	ssize_t n;

	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE) < 0) {
		r = -errno;
		(void) kill(pid, SIGKILL);
		goto fail;
	}
	(void) kill(pid, SIGCONT);
	for (int i = 0; i < 64; i++) {
		if (waitpid(pid, &status, __WALL) < 0) {
			r = -errno;
			goto fail;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			n = read(exec_pipe, &err, sizeof(err));
			r = n == sizeof(err) && err ? -err : -ECHILD;
			s->stats.target_exited = true;
			s->stats.exit_status = status;
			goto fail;
		}
		if ((status >> 16) == PTRACE_EVENT_EXEC) {
			(void) close(exec_pipe);
			return 0;
		}
		if ((status >> 16) == 0 && WSTOPSIG(status) != SIGSTOP)
			(void) ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(status));
		else
			(void) ptrace(PTRACE_CONT, pid, 0, 0);
	}
	r = -ECHILD;
	(void) kill(pid, SIGKILL);
fail:
	(void) close(exec_pipe);
	if (!s->stats.target_exited)
		(void) waitpid(pid, &status, __WALL);
	s->pid = 0;
	return r;
}

/* ---- setup ---- */

/* Launches or attaches (in exact mode, on the tracer thread). */
static int start_job(struct sampler *s, void *arg)
{
	pid_t tree[TREE_MAX_PROCS];
	size_t n_tree = 0;
	int r;

	if (s->opts.argv) {
		r = launch_exec(s, *(int *) arg);
		if (r < 0)
			return r;
		if (s->opts.exact && !(s->signo = pick_signal(s->pid, 0)))
			return -EBUSY;
		s->stats.start_ns = clock_now_ns();
		r = thread_add(s, s->pid, true);
		if (r < 0)
			return r == -EPERM ? -EACCES : r;
		if (s->opts.exec_fn)
			s->opts.exec_fn(s->opts.exec_ctx, s->pid);
		if (!s->opts.exact) {
			s->threads[0].traced = false;
			(void) ptrace(PTRACE_DETACH, s->pid, 0, 0);
		} else {
			(void) ptrace(PTRACE_CONT, s->pid, 0, 0);
		}
		/* counting runs from here; samples wait in the ring until sampler_run() */
		return 0;
	}
	s->pid = s->opts.pid;
	/* before the look at it, so that it is this process's (none: its exit is seen at a scan) */
	if (!s->opts.signal)
		s->pid_fd = (int) syscall(SYS_pidfd_open, s->pid, 0);
	if ((kill(s->pid, 0) < 0 && errno == ESRCH) || !proc_alive(s->pid))
		return -ESRCH;
	if (s->opts.exact && !(s->signo = pick_signal(s->pid, 0)))
		return -EBUSY;
	/* the processes it started before now: listed before any event opens (tree.c) */
	if (s->opts.subprocesses && s->layout->inherit)
		n_tree = procfs_descendants(s->pid, tree, TREE_MAX_PROCS);
	s->stats.start_ns = clock_now_ns();
	r = scan_threads(s, true);
	if (r > 0)
		tree_attach(s, tree, n_tree);
	return r == 0 ? -ESRCH : r < 0 ? r : 0;
}

/* The events' attributes and, asked, the capture, before any event opens. */
static void attrs_and_capture(struct sampler *s)
{
	const struct sampler_opts *opts = &s->opts;
	int r = 0;

#if defined(__x86_64__)
	/* a switch's reason from the registers the program reads (capture_prog.c), from the first
	 * switch: launched, by a program of those alone until the interpreter is known */
	s->capture.switch_regs = (opts->off_cpu || opts->wall) && opts->capture;
#endif
	perf_build_attrs(s);
	/* per CPU, the events carry the entry from their open (capture.c); its error, if any, is
	 * sampler_capture_start()'s */
	if (opts->capture && s->capture.percpu)
		(void) capture_entry_load(&s->capture);
	if (opts->capture && opts->capture_spec)
		r = s->capture_error = sampler_capture_start(s, opts->capture_spec);
	else if (s->capture.switch_regs)
		r = capture_start_regs(s);
	if (r < 0 && s->capture.switch_regs) {
		s->capture.switch_regs = false;         /* the events are not open yet: the callchain */
		perf_build_attrs(s);
	}
}

int sampler_new(const struct sampler_opts *opts, struct sampler **ret)
{
	struct sampler *s;
	sigset_t chld, caller;
	int r, exec_pipe = -1;

	*ret = NULL;
	if (opts->n_events == 0 || opts->n_events > SAMPLER_MAX_EVENTS ||
	    (!opts->pid) == (!opts->argv) || (!opts->freq && !opts->period) ||
	    (opts->exact && opts->capture) ||
	    /* a ptrace stop is seen through the SIGCHLD signalfd only */
	    (opts->exact && !opts->sigchld) ||
	    /* a stop as a thread switches out would interrupt the call it sleeps in */
	    (opts->exact && (opts->wall || opts->off_cpu)) ||
	    /* the calling process's own threads, user space only */
	    (opts->signal && (opts->exact || opts->capture || opts->argv || opts->off_cpu ||
			      opts->wall || opts->subprocesses || opts->kernel_callchain ||
			      opts->pid != getpid())) ||
	    (opts->leaders && (opts->off_cpu || (opts->leaders & 1) ||
			       opts->leaders >> opts->n_events)))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	memcpy(s->events, opts->events, opts->n_events * sizeof(*s->events));
	s->opts.events = s->events;
	s->sigfd = s->pid_fd = -1;
	s->capture = (struct capture) CAPTURE_INIT;
	s->scratch = malloc(RING_SCRATCH_SIZE);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!s->scratch || s->wake_fd < 0) {
		r = s->wake_fd < 0 ? -errno : -ENOMEM;
		if (s->wake_fd >= 0)
			(void) close(s->wake_fd);
		free(s->scratch);
		free(s);
		return r;
	}
	s->layout = ring_layout_choose(s);
	s->capture.percpu = s->layout == &ring_per_cpu;
	if ((r = s->layout->init(s)) < 0) {
		sampler_free(s);
		return r;
	}
	if (opts->signal) {
		/* the handler before any event can overflow; the caller's thread left out */
		r = sigcap_open(&s->sig, &s->sig_cookie);
		if (r < 0) {
			sampler_free(s);
			return r;
		}
		sigcap_exclude(s->sig, gettid());
		if ((r = late_init(s)) < 0) {
			sampler_free(s);
			return r;
		}
		if (opts->capture_spec)
			s->capture_error = sampler_capture_start(s, opts->capture_spec);
	}
	attrs_and_capture(s);

	/* ptrace stops and child exits wake the loop through this fd (asked: it blocks SIGCHLD
	 * on this thread; without it a launched command's exit is seen at the next scan) */
	if (opts->sigchld) {
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		if (sigprocmask(SIG_BLOCK, &chld, &caller) == 0)
			s->chld_blocked = !sigismember(&caller, SIGCHLD);
		s->sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
		if (s->sigfd < 0) {
			r = -errno;
			goto fail;
		}
	}

	if (opts->exact) {
		r = tracer_start(s);
		if (r < 0)
			goto fail;
	}
	if (opts->argv) {
		r = launch_fork(s, &exec_pipe);
		if (r < 0)
			goto fail;
	}
	perf_raise_nofile(s);    /* not before the fork: the command keeps its own limit */
	r = tracer_call(s, start_job, &exec_pipe);
	if (r < 0)
		goto fail;
	s->last_scan_ns = clock_now_ns();
	*ret = s;
	return 0;
fail:
	if (s->launched && s->pid > 0 && !s->stats.target_exited) {
		/* the command was to run profiled: it does not run at all */
		(void) kill(s->pid, SIGKILL);
		for (size_t i = 0; i < s->n_threads; i++)
			s->threads[i].traced = false;
		(void) waitpid(s->pid, NULL, __WALL);
	}
	sampler_free(s);
	return r;
}

void sampler_tell(struct sampler *s, enum sampler_event_kind kind, pid_t tid)
{
	struct sampler_event e = { .kind = kind, .tid = tid, .sampler = s };

	if (s->opts.event_fn)
		s->opts.event_fn(s->opts.event_ctx, &e);
}

void sampler_break(struct sampler *s)
{
	s->brk = true;
}

void sampler_set_resumed_fn(struct sampler *s, void (*fn)(void *ctx))
{
	s->resumed = fn;
}

pid_t sampler_pid(const struct sampler *s)
{
	return s->pid;
}

const struct sampler_stats *sampler_stats(const struct sampler *s)
{
	return &s->stats;
}

void target_ended(struct sampler *s, int status)
{
	s->stats.target_exited = true;
	s->stats.exit_status = status;
}

/* ---- nonblocking mode ---- */

void drain_all(struct sampler *s)
{
	struct sampler_event e = { .kind = SAMPLER_EVENT_DRAINED, .sampler = s };

	/* every record written before now is read by the end of this pass, whatever its ring */
	e.time_ns = clock_now_ns();
	s->layout->drain(s);
	/* the samples held for their signal's record: those it came for, those too old */
	late_retry(s, 0, s->stopped);
	if (s->sig) {
		sigcap_sweep(s->sig, e.time_ns);        /* the slots of threads gone, read */
		sigcap_stats(s->sig, &s->stats);
	}
	if ((s->opts.off_cpu || s->opts.wall) && s->opts.event_fn)
		s->opts.event_fn(s->opts.event_ctx, &e);
}

static void check_exit_nonblocking(struct sampler *s)
{
	int status;
	bool any = false;

	if (s->launched) {
		if (waitpid(s->pid, &status, WNOHANG) == s->pid && (WIFEXITED(status) || WIFSIGNALED(status)))
			target_ended(s, status);
		return;
	}
	for (size_t i = 0; i < s->n_threads; i++)
		any |= s->threads[i].alive;
	if (!any || !proc_alive(s->pid))
		target_ended(s, 0);
}

/* How often the run loop looks for threads in /proc and at the target's end. Per CPU, a new
 * thread comes with its inherited events and its FORK record, and the pidfd wakes the poll at
 * the exit: the scan is a backstop there, unless a thread seen once awaits its second look or
 * the processes an attach found are still being looked at (tree.c). */
static uint64_t scan_interval_ns(const struct sampler *s)
{
	if (s->layout->inherit && s->pid_fd >= 0 && !s->n_unknown && !s->tree_scans)
		return SCAN_BACKSTOP_NS;
	return SCAN_INTERVAL_NS + (s->opts.capture ? s->opts.read_ms * 1000000ULL : 0);
}

/* The longest poll of a run loop not by stops. Capture mode reads its rings when they fill
 * (their watermark) and at the caller's slices, unless stacks deeper than the capture came in
 * the last second (below), or threads (the first ones included), or the switches are sampled
 * too: their reasons are told from what the thread's fds are when the record is read
 * (offcpu.c), and --gil reads the GIL of a sample without it in its capture live, so those
 * read often. */
static unsigned read_cap_ms(const struct sampler *s, uint64_t now)
{
	const struct sampler_opts *o = &s->opts;

	if (!o->capture)
		return 0;
	if (o->read_ms)
		return o->read_ms;
	/* a stack deeper than its capture has its outer frames read when its record is read: while
	 * such stacks come, soon, before the thread returns from them: not at the watermark alone,
	 * which 3.14's 12 KiB records of 128 nodes reach far less often than their 28 KiB with
	 * every identity did (test_capture.py's 1000-deep recursion had returned, read 100 ms late,
	 * for 10 of its last 37 samples at 100 Hz; 50 ms: 4-5). Each wakeup costs a few hundred us
	 * of hwspy's CPU on this VM: 20 ms took depth 300 from ~100 to 165-190 us a sample */
	if (s->capture_cut_ns && now - s->capture_cut_ns < CAPTURE_CUT_RECENT_NS)
		return CAPTURE_CUT_TICK_MS;
	/* a new thread's name is read (its Python name, else its comm) when its first sample is:
	 * read 250 ms late, a thread that lived 200 ms was gone, its name with it (the caller's
	 * slice: pyprofile-threads failed 2-6 runs in 20) */
	if (now - s->thread_born_ns < THREAD_BORN_RECENT_NS)
		return 0;
	return o->off_cpu || o->wall ? 0 : CAPTURE_TICK_MS;
}

static int read_tick_ms(const struct sampler_opts *o)
{
	int ms = o->freq ? (int) (500 / o->freq) : READ_TICK_MAX_MS;  /* half an interval */

	return ms < READ_TICK_MIN_MS ? READ_TICK_MIN_MS : ms > READ_TICK_MAX_MS ? READ_TICK_MAX_MS : ms;
}

int sampler_run(struct sampler *s, sampler_sample_fn fn, void *ctx, volatile sig_atomic_t *stop,
		uint64_t duration_ns)
{
	uint64_t start = clock_now_ns(), now;

	s->fn = fn;
	s->ctx = ctx;
	s->brk = false;
	if (s->sig)
		sigcap_exclude(s->sig, gettid());       /* the thread that reads the rings */
	if (s->opts.exact) {
		struct tracer_run_args a = { .stop = stop, .duration_ns = duration_ns };
		int r = s->paused ? sampler_resume(s) : 0;

		return r < 0 ? r : tracer_call(s, tracer_run, &a);
	}
	while (!*stop && !s->stats.target_exited && !s->brk) {
		int timeout = sampler_wait_ms(start, duration_ns, read_cap_ms(s, clock_now_ns()));

		if (timeout < 0)
			break;
		/* the rings wake us only when an eighth full: capture rings are read every
		 * 100 ms, nonblocking ones every tick (reads late by up to a tick) */
		int tick = s->opts.capture ? timeout : read_tick_ms(&s->opts);
		bool chld = s->layout->poll(s, timeout < tick ? timeout : tick);

		drain_all(s);
		now = clock_now_ns();
		if (chld || now - s->last_scan_ns >= scan_interval_ns(s)) {
			s->last_scan_ns = now;
			(void) scan_threads(s, false);
			check_exit_nonblocking(s);
		}
	}
	return 0;
}

/* ---- teardown ---- */

void sampler_stop(struct sampler *s)
{
	if (s->stopped)
		return;
	s->stopped = true;
	if (s->tracer.running) {
		/* no new signals first, then the samples still waiting, then every stop of ours
		 * answered; the tracer thread's exit lets every thread go (tracer.c) */
		(void) tracer_call(s, tracer_release, NULL);
		tracer_end(s);
	} else {
		for (size_t i = 0; i < s->n_threads; i++)
			perf_thread_disable(&s->threads[i]);
		if (s->fn)
			drain_all(s);
	}
	for (size_t i = 0; i < s->n_threads; i++)
		perf_thread_close(s, &s->threads[i]);
	if (s->sig) {
		/* no event left to signal: the disposition as it was */
		sigcap_stats(s->sig, &s->stats);
		sigcap_close(s->sig);
		s->sig = NULL;
	}
}

void sampler_wake(struct sampler *s)
{
	uint64_t one = 1;
	int saved = errno;

	/* the counter only grows: a full one (2^64 - 2 wake-ups unread) is awake anyway */
	(void) !write(s->wake_fd, &one, sizeof(one));
	errno = saved;
}

void sampler_wake_clear(struct sampler *s, short revents)
{
	uint64_t n;

	if (revents & POLLIN)
		(void) !read(s->wake_fd, &n, sizeof(n));
}

void sampler_poll_head(const struct sampler *s, struct pollfd *pfd)
{
	pfd[0] = (struct pollfd) { .fd = s->sigfd, .events = POLLIN };
	pfd[1] = (struct pollfd) { .fd = s->pid_fd, .events = POLLIN };
}

bool sampler_poll_head_read(struct sampler *s, const struct pollfd *pfd)
{
	struct signalfd_siginfo fdsi;
	bool changed = false;

	/* a SIGCHLD left unread would keep the signalfd readable and the poll from ever
	 * sleeping again: read it */
	if (pfd[0].revents & POLLIN)
		while (read(s->sigfd, &fdsi, sizeof(fdsi)) == sizeof(fdsi))
			changed = true;
	if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) {
		(void) close(s->pid_fd);
		s->pid_fd = -1;
		changed = true;
	}
	return changed;
}

int sampler_signal_probe(void)
{
	return sigcap_probe();
}

int sampler_pause(struct sampler *s)
{
	if (!s->tracer.running || s->stopped)
		return 0;
	(void) tracer_call(s, tracer_release, NULL);
	tracer_end(s);
	s->paused = true;
	return 0;
}

int sampler_resume(struct sampler *s)
{
	int r;

	if (!s->paused || s->stopped)
		return 0;
	s->paused = false;
	r = tracer_start(s);
	return r < 0 ? r : tracer_call(s, tracer_reattach, NULL);
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	sampler_stop(s);
	if (s->sigfd >= 0)
		(void) close(s->sigfd);
	if (s->pid_fd >= 0)
		(void) close(s->pid_fd);
	if (s->wake_fd >= 0)
		(void) close(s->wake_fd);
	if (s->chld_blocked) {
		/* the caller's mask again (a SIGCHLD still pending now reaches its disposition) */
		sigset_t chld;

		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		(void) sigprocmask(SIG_UNBLOCK, &chld, NULL);
	}
	free(s->switch_ids);
	free(s->lead_ids);
	capture_close(&s->capture);
	tracer_release_resources(s);
	if (s->layout)
		s->layout->free(s);
	free(s->unknown);
	free(s->left_out);
	free(s->threads);
	free(s->scratch);
	late_free(s);
	free(s);
}
