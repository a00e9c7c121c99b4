/*
 * tracer: exact mode by ptrace stops, all of it on one thread of ours, the tracer.
 *
 * Only the thread that seized a tracee may operate on it, and when that thread exits the
 * kernel detaches every tracee without waking those that are not in a ptrace-stop. That is
 * the one way to let a running or blocked thread go without a PTRACE_INTERRUPT, which makes
 * calls the kernel does not restart (epoll_wait, recv with a timeout, sigtimedwait ...)
 * return EINTR in the target. So every ptrace call (attach and launch, the stops of
 * sampler_run(), the release) runs on a tracer thread, as a job the caller hands over and
 * waits for (tracer_call()): callbacks then run on that thread while the caller waits, so
 * callers see no concurrency. While a job runs the caller blocks every signal, so that the
 * user's Ctrl-C or Ctrl-Z interrupts the tracer's wait at once.
 *
 * Release (sampler_stop(), sampler_pause()): no more signals of ours (events disabled, their
 * O_ASYNC cleared), every stop waiting for us answered with a detach (ours suppressed,
 * another signal passed on), the threads that still have a signal of ours pending given
 * the time to stop for it, then the tracer thread exits and the kernel lets the rest go.
 *
 * The signal (pick_signal()) must be harmless wherever a stop cannot catch it (hwspy killed,
 * a stop it did not reach in time): a signal whose default action is to ignore it and that
 * the target does not catch (SIGURG, SIGWINCH), or one the target ignores (SIG_IGN). None:
 * exact mode by stops is refused (-EBUSY). Re-checked as sampling goes: the target may
 * install a handler later (SigBlk is no reason to move: glibc blocks every signal for an
 * instant in each pthread_create).
 *
 * One-shot stops (stop.h: the snapshot's, `hwspy dump`) run on the same engine: a tracer thread
 * of their own (tracer_thread_*(), the jobs' sampler NULL), the same undo of an EINTR at the
 * stop (undo_at_stop()) and the same release (release_stopped()); see the last part of this file.
 *
 * The stop budget (SAMPLER_STOP_BUDGET_PCT, sampler.h): each stop of ours is timed, from the
 * first sample it finds in the thread's ring (the overflow that raised our signal; or from when
 * the tracer saw the stop, if none) to the thread's resume, into per-thread buckets of a
 * sliding window. A thread past the budget has its signal turned off: its samples wait in its
 * ring and are read late, on a short tick, without stopping it, until its share of time
 * stopped is back under the budget. Without it a stop can feed itself: a page fault during
 * which our signal arrives is abandoned and retried by the kernel, which counts it again, and
 * at -c 1 every retry is the next sample and the next stop (a 0.2 s start-up took minutes).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/procfs.h"
#include "sampler/internal.h"
#include "sampler/stop.h"

#define TEARDOWN_TIMEOUT_NS 3000000000ULL
#define SIGNAL_CHECK_NS 100000000ULL    /* re-check the target's handlers this often */
#define RESEIZE_TRIES 200               /* x 1 ms: the previous tracer thread still exiting */
#define TRACER_EXIT_TRIES 1000          /* x 1 ms */
#define WINDOW_NS (SAMPLER_STOP_WINDOW_MS * 1000000ULL)
#define BUCKET_NS (WINDOW_NS / STOP_BUCKETS)
#define LATE_TICK_MS 2                  /* an over-budget thread's ring is read this often */
#define LATE_CHUNK 16                   /* ... this many samples at a time, between stops */

/* ---- the tracer thread and its jobs ---- */

static void *tracer_main(void *arg)
{
	struct tracer *tr = arg;

	tr->tid = gettid();
	pthread_mutex_lock(&tr->lock);
	for (;;) {
		while (tr->state != TRACER_POSTED && !tr->quit)
			pthread_cond_wait(&tr->cond, &tr->lock);
		if (tr->state != TRACER_POSTED)
			break;
		pthread_mutex_unlock(&tr->lock);
		tr->ret = tr->job(tr->s, tr->arg);
		pthread_mutex_lock(&tr->lock);
		tr->state = TRACER_DONE;
		pthread_cond_broadcast(&tr->cond);
	}
	pthread_mutex_unlock(&tr->lock);
	/* exiting detaches every tracee still attached, waking none that runs */
	return NULL;
}

/* Starts tr's thread; its jobs get s (NULL for a one-shot stop) as their first argument. */
static int tracer_thread_start(struct tracer *tr, struct sampler *s)
{
	int r;

	if (!tr->init) {
		if (pthread_mutex_init(&tr->lock, NULL) || pthread_cond_init(&tr->cond, NULL))
			return -ENOMEM;
		tr->init = true;
	}
	tr->s = s;
	tr->quit = false;
	tr->state = TRACER_IDLE;
	/* the new thread inherits our mask (the sampler's: SIGCHLD blocked, read through s->sigfd) */
	r = pthread_create(&tr->thread, NULL, tracer_main, tr);
	if (r)
		return -r;
	tr->running = true;
	return 0;
}

/* Runs job on tr's thread (started) and waits for it, with the signals of block blocked
 * meanwhile (NULL: none). */
static int tracer_thread_call(struct tracer *tr, int (*job)(struct sampler *s, void *arg),
			      void *arg, const sigset_t *block)
{
	sigset_t old;
	int r;

	if (block)
		pthread_sigmask(SIG_BLOCK, block, &old);
	pthread_mutex_lock(&tr->lock);
	tr->job = job;
	tr->arg = arg;
	tr->state = TRACER_POSTED;
	pthread_cond_broadcast(&tr->cond);
	while (tr->state != TRACER_DONE)
		pthread_cond_wait(&tr->cond, &tr->lock);
	tr->state = TRACER_IDLE;
	r = tr->ret;
	pthread_mutex_unlock(&tr->lock);
	if (block)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* Ends tr's thread: the kernel lets go of every tracee it still has. */
static void tracer_thread_end(struct tracer *tr)
{
	if (!tr->running)
		return;
	pthread_mutex_lock(&tr->lock);
	tr->quit = true;
	pthread_cond_broadcast(&tr->cond);
	pthread_mutex_unlock(&tr->lock);
	(void) pthread_join(tr->thread, NULL);
	/* the join returns before the kernel has let the tracees go (exit_ptrace comes later in
	 * the thread's exit): wait until the thread is gone, so that a new tracer (the retry of
	 * sampler_new(), sampler_resume(), the next stop) can seize them at once */
	for (int i = 0; i < TRACER_EXIT_TRIES && tgkill(getpid(), tr->tid, 0) == 0; i++)
		(void) usleep(1000);
	tr->running = false;
}

static void tracer_thread_release(struct tracer *tr)
{
	if (tr->init) {
		pthread_mutex_destroy(&tr->lock);
		pthread_cond_destroy(&tr->cond);
		tr->init = false;
	}
}

int tracer_start(struct sampler *s)
{
	return tracer_thread_start(&s->tracer, s);
}

int tracer_call(struct sampler *s, int (*job)(struct sampler *s, void *arg), void *arg)
{
	sigset_t all;

	if (!s->tracer.running)
		return job(s, arg);
	/* the user's Ctrl-C or Ctrl-Z interrupts the tracer's wait, not ours */
	sigfillset(&all);
	return tracer_thread_call(&s->tracer, job, arg, &all);
}

void tracer_end(struct sampler *s)
{
	if (!s->tracer.running)
		return;
	tracer_thread_end(&s->tracer);
	for (size_t i = 0; i < s->n_threads; i++)
		s->threads[i].traced = false;
}

void tracer_release_resources(struct sampler *s)
{
	tracer_thread_release(&s->tracer);
}

/* ---- /proc reads ---- */

/* Fields of /proc/PID/task/TID/status (tid 0: /proc/PID/status): the signal masks, the
 * tracer, the state letter. -ESRCH if it is gone. */
struct task_status {
	unsigned long long pnd, shd_pnd, blk, ign, cgt;
	long tracer;
	char state;
};

static int task_status(pid_t pid, pid_t tid, struct task_status *ret)
{
	char path[80], line[256];
	FILE *f;

	memset(ret, 0, sizeof(*ret));
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SigPnd: %llx", &ret->pnd) == 1 ||
		    sscanf(line, "ShdPnd: %llx", &ret->shd_pnd) == 1 ||
		    sscanf(line, "SigBlk: %llx", &ret->blk) == 1 ||
		    sscanf(line, "SigIgn: %llx", &ret->ign) == 1 ||
		    sscanf(line, "SigCgt: %llx", &ret->cgt) == 1 ||
		    sscanf(line, "TracerPid: %ld", &ret->tracer) == 1)
			continue;
		(void) sscanf(line, "State: %c", &ret->state);
	}
	fclose(f);
	return ret->state ? 0 : -ESRCH;
}

static unsigned long long sigbit(int sig)
{
	return sig >= 1 && sig <= 64 ? 1ULL << (sig - 1) : 0;
}

int tracer_task_owner(pid_t pid, pid_t tid, pid_t *ret_tracer)
{
	struct task_status st;
	int r = task_status(pid, tid, &st);

	if (r < 0)
		return r;
	if (st.state == 'Z' || st.state == 'X')
		return -ESRCH;
	*ret_tracer = (pid_t) st.tracer;
	return 0;
}

/* ---- the signal ---- */

int pick_signal(pid_t pid, int avoid)
{
	static const int default_ignored[] = { SIGURG, SIGWINCH };
	struct task_status st;
	unsigned long long bad;

	if (task_status(pid, 0, &st) < 0)
		return SIGURG;          /* gone: the attach fails anyway */
	/* preferably one its main thread does not block (a blocked one stops the thread only
	 * once unblocked); but a mask is per thread and often all blocked for an instant
	 * (glibc's pthread_create, CPython's fork): not a reason to refuse */
	for (int pass = 0; pass < 2; pass++) {
		bad = st.cgt | (pass ? 0 : st.blk) | sigbit(avoid);
		for (size_t i = 0; i < sizeof(default_ignored) / sizeof(default_ignored[0]); i++)
			if (!(bad & sigbit(default_ignored[i])))
				return default_ignored[i];
		/* one the target ignores: delivered (hwspy gone), it is discarded */
		for (int sig = 1; sig <= 64; sig++) {
			if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == SIGCONT ||
			    sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU || sig == SIGTRAP)
				continue;
			if ((st.ign & sigbit(sig)) && !(bad & sigbit(sig)))
				return sig;
		}
	}
	return 0;
}

/* The target now catches our signal: move to another harmless one (stops for the old one
 * still count as ours), or -EBUSY if there is none. */
static int check_signal(struct sampler *s)
{
	struct task_status st;
	int sig;

	if (task_status(s->pid, 0, &st) < 0 || !(st.cgt & sigbit(s->signo)))
		return 0;
	sig = pick_signal(s->pid, s->signo);
	if (!sig)
		return -EBUSY;
	s->old_signo = s->signo;
	s->signo = sig;
	s->stats.signal_changes++;
	for (size_t i = 0; i < s->n_threads; i++)
		if (s->threads[i].alive && !s->threads[i].budget.over)
			(void) perf_thread_signal(s, &s->threads[i], true);
	return 0;
}

/* ---- the stop budget ---- */

/* Whether the thread has spent more than the budget of the window that ends at now stopped
 * by us (the window starts no earlier than its events opened). */
static bool budget_over(const struct sampler *s, const struct stop_budget *b, uint64_t now)
{
	unsigned pct = s->opts.stop_budget_pct ? s->opts.stop_budget_pct : SAMPLER_STOP_BUDGET_PCT;
	uint64_t cur = now / BUCKET_NS, stopped = 0, span = now > b->since_ns ? now - b->since_ns : 0;

	for (size_t i = 0; i < STOP_BUCKETS; i++)
		if (b->bucket[i] <= cur && b->bucket[i] + STOP_BUCKETS > cur)
			stopped += b->stopped_ns[i];
	if (span > WINDOW_NS)
		span = WINDOW_NS;
	return pct < 100 && stopped * 100 > span * pct;
}

/* A stop of t from start to end: counted, and t's signal turned off if that puts it over. */
static void budget_stop(struct sampler *s, struct thread *t, uint64_t start, uint64_t end)
{
	struct stop_budget *b = &t->budget;
	uint64_t n = end / BUCKET_NS;
	size_t slot = (size_t) (n % STOP_BUCKETS);

	if (b->bucket[slot] != n) {
		b->bucket[slot] = n;
		b->stopped_ns[slot] = 0;
	}
	b->stopped_ns[slot] += end > start ? end - start : 0;
	b->resumed_ns = end;
	if (!b->over && budget_over(s, b, end) && perf_thread_signal(s, t, false) == 0) {
		b->over = true;
		s->stats.budget_trips++;
	}
}

/* Hands over (up to max of) the samples waiting in the ring of t, a thread over budget: read
 * late. Whether more are waiting. */
static bool budget_drain(struct sampler *s, struct thread *t, unsigned max)
{
	uint64_t before = s->stats.samples;
	bool more = perf_thread_drain_some(s, t, false, max);

	s->stats.budget_late += s->stats.samples - before;
	return more;
}

/* Reads the rings of the threads over budget, a few samples each, so that a stop waiting
 * meanwhile (a signal sent before the thread went over) is not kept waiting long; turns their
 * signal on again once their share is back under the budget and their ring is read. Whether a
 * thread is still over; *ret_more: samples still wait in a ring. */
static bool budget_tick(struct sampler *s, bool *ret_more)
{
	uint64_t now = clock_now_ns();
	bool any = false;

	*ret_more = false;
	for (size_t i = 0; i < s->n_threads; i++) {
		struct thread *t = &s->threads[i];
		bool more;

		if (!t->alive || !t->budget.over)
			continue;
		more = budget_drain(s, t, LATE_CHUNK);
		*ret_more |= more;
		if (!more && !budget_over(s, &t->budget, now) && perf_thread_signal(s, t, true) == 0) {
			t->budget.over = false;
			t->budget.resumed_ns = now;     /* its ring was read up to here */
			continue;
		}
		any = true;
	}
	return any;
}

/* ---- handling ptrace stops ---- */

static bool our_signal(struct sampler *s, pid_t tid, struct thread *t, int sig)
{
	siginfo_t si;

	if (!t || (sig != s->signo && sig != s->old_signo))
		return false;
	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) < 0)
		return false;
	if (si.si_signo != sig || si.si_code <= 0)
		return false;
	return perf_thread_signals_by(s, t, si.si_fd);
}

/* System calls that fail with EINTR, and are not restarted by the kernel, when a signal is
 * pending as they would sleep, having done nothing: x86-64 numbers. (Not close(): its EINTR
 * comes after the descriptor is gone; nor connect(), which goes on without the caller.) */
static bool eintr_restartable(long nr)
{
	switch (nr) {
	case 0: case 1: case 19: case 20:        /* read write readv writev (timeouts) */
	case 43: case 44: case 45: case 46: case 47: /* accept sendto recvfrom sendmsg recvmsg */
	case 65: case 69: case 70:               /* semop msgsnd msgrcv */
	case 128:                                /* rt_sigtimedwait */
	case 202: case 208:                      /* futex io_getevents */
	case 220: case 232:                      /* semtimedop epoll_wait */
	case 242: case 243:                      /* mq_timedsend mq_timedreceive */
	case 281: case 288: case 299: case 307:  /* epoll_pwait accept4 recvmmsg sendmmsg */
	case 333: case 441:                      /* io_pgetevents epoll_pwait2 */
		return true;
	default:
		return false;
	}
}

bool sampler_undo_eintr(pid_t tid)
{
	struct user_regs_struct regs;
	long word;

	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
		return false;
	if ((long long) regs.rax != -EINTR || (long long) regs.orig_rax < 0 ||
	    !eintr_restartable((long) regs.orig_rax) || regs.rip < 2)
		return false;
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, tid, (void *) (regs.rip - 2), 0);
	if (errno || (word & 0xffff) != 0x050f)          /* syscall: 0f 05 */
		return false;
	regs.rax = regs.orig_rax;
	regs.rip -= 2;
	return ptrace(PTRACE_SETREGS, tid, 0, &regs) == 0;
}

/* At a stop of ours (a signal's, an interrupt's): if it made the system call the thread was in
 * fail with EINTR (it came as the call was about to sleep), the call is made again
 * (sampler_undo_eintr()), so the target never sees an EINTR it did not cause; not where a
 * signal of the target's own is its cause too (theirs: one passed on at this same exit, or
 * pending for the thread: its EINTR is then the target's, and a handler frame may be set up).
 * True if undone. The one undo of the sampler's stops and of the one-shot stops. */
static bool undo_at_stop(pid_t tid, bool theirs)
{
	return !theirs && sampler_undo_eintr(tid);
}

/* Lets a thread in a ptrace-stop of ours go, passing on sig (0: none), the signal it stopped
 * for if it was not ours. The one release of the sampler's stops and of the one-shot stops. */
static int release_stopped(pid_t tid, int sig)
{
	return ptrace(PTRACE_DETACH, tid, 0, sig) < 0 ? -errno : 0;
}

/* At a stop for our signal (a sample in a system call's kernel entry): undo_at_stop(), theirs
 * where a signal of the target's was passed on at this same exit. Counted in
 * stats.eintr_undone. */
static void undo_eintr(struct sampler *s, pid_t tid, struct thread *t)
{
	bool forwarded = t->forwarded;

	t->forwarded = false;
	if (undo_at_stop(tid, forwarded))
		s->stats.eintr_undone++;
}

static void handle_wait(struct sampler *s, pid_t tid, int status)
{
	struct thread *t = thread_find(s, tid);
	int event = status >> 16, r;
	unsigned long msg;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (t)
			thread_gone(s, t);
		if (tid == s->pid)
			target_ended(s, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	switch (event) {
	case PTRACE_EVENT_CLONE:
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0 && !thread_find(s, (pid_t) msg)) {
			r = thread_add(s, (pid_t) msg, true);
			if (r < 0 && r != -ESRCH)
				perf_thread_failed(s, (pid_t) msg, perf_fail_reason(r), r);
		}
		(void) ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	case PTRACE_EVENT_EXEC:
		s->stats.execs++;
		/* every other thread is gone; the events of the process restart on its new image */
		for (size_t i = 0; i < s->n_threads; i++)
			if (s->threads[i].alive)
				thread_gone(s, &s->threads[i]);
		r = thread_add(s, s->pid, true);
		if (r < 0)
			perf_thread_failed(s, s->pid, perf_fail_reason(r), r);
		else
			s->stats.threads_seen--;        /* the same process, a new image */
		(void) ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	case PTRACE_EVENT_STOP: {
		int sig = WSTOPSIG(status);
		r = t ? 0 : thread_add(s, tid, true);
		if (r < 0 && r != -ESRCH)
			perf_thread_failed(s, tid, perf_fail_reason(r), r);
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			(void) ptrace(PTRACE_LISTEN, tid, 0, 0);      /* job control: stay stopped */
		else
			(void) ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	case 0:
		break;
	default:
		(void) ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	/* signal-delivery-stop */
	if (our_signal(s, tid, t, WSTOPSIG(status))) {
		uint64_t before = s->stats.samples, seen = clock_now_ns(), start;

		s->stats.stops++;
		if (t->budget.over) {
			/* sent before its thread went over budget: its samples are read late */
			undo_eintr(s, tid, t);
			(void) ptrace(PTRACE_CONT, tid, 0, 0);
			return;
		}
		t->budget.first_sample_ns = 0;
		perf_thread_drain(s, t, true);
		if (s->stats.samples == before)
			s->stats.stops_without_sample++;
		/* stopped since the overflow that signalled, if this stop found its sample (not
		 * before its last resume: older samples waited in the ring) */
		start = t->budget.first_sample_ns && t->budget.first_sample_ns < seen
			? t->budget.first_sample_ns : seen;
		if (start < t->budget.resumed_ns)
			start = t->budget.resumed_ns;
		undo_eintr(s, tid, t);
		(void) ptrace(PTRACE_CONT, tid, 0, 0);
		budget_stop(s, t, start, clock_now_ns());
		if (s->resumed)
			s->resumed(s->ctx);
		return;
	}
	s->stats.signals_forwarded++;
	if (t)
		t->forwarded = true;
	(void) ptrace(PTRACE_CONT, tid, 0, WSTOPSIG(status));
}

static void read_sigfd(struct sampler *s)
{
	struct signalfd_siginfo fdsi;

	while (read(s->sigfd, &fdsi, sizeof(fdsi)) == sizeof(fdsi))
		;
}

static void reap(struct sampler *s)
{
	int status;
	pid_t tid;

	read_sigfd(s);
	for (int i = 0; i < 4096; i++) {
		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid <= 0)
			break;
		handle_wait(s, tid, status);
	}
}

/* The job of sampler_run() in exact mode. */
int tracer_run(struct sampler *s, void *arg)
{
	const struct tracer_run_args *a = arg;
	uint64_t start = clock_now_ns(), now, last_check = start;
	bool late = false, more = false;

	while (!*a->stop && !s->stats.target_exited && !s->brk) {
		struct pollfd pfd[2] = { { .fd = s->sigfd, .events = POLLIN },
					 { .fd = s->wake_fd, .events = POLLIN } };
		int timeout = sampler_wait_ms(start, a->duration_ns, 0);

		if (timeout < 0)
			break;
		if (late && timeout > LATE_TICK_MS)
			timeout = more ? 0 : LATE_TICK_MS;
		now = clock_now_ns();
		if (now - last_check >= SIGNAL_CHECK_NS) {
			last_check = now;
			if (check_signal(s) < 0)
				return -EBUSY;
		}
		(void) poll(pfd, 2, timeout);
		sampler_wake_clear(s, pfd[1].revents);
		reap(s);
		late = budget_tick(s, &more);
	}
	return 0;
}

/* ---- release and re-attach ---- */

static struct thread *traced_thread(struct sampler *s, pid_t tid)
{
	for (size_t i = 0; i < s->n_threads; i++)
		if (s->threads[i].tid == tid && s->threads[i].traced)
			return &s->threads[i];
	return NULL;
}

/* Answers every stop waiting for us with a detach: ours suppressed, another signal passed
 * on. A thread created meanwhile is let go by the tracer's exit. */
static void detach_stopped(struct sampler *s)
{
	int status;
	pid_t tid;

	read_sigfd(s);
	for (int i = 0; i < 4096; i++) {
		struct thread *t;
		int sig = 0;

		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid <= 0)
			break;
		t = traced_thread(s, tid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (t)
				t->traced = false;
			if (tid == s->pid)
				target_ended(s, status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if ((status >> 16) == 0 && !our_signal(s, tid, t, WSTOPSIG(status))) {
			sig = WSTOPSIG(status);
			s->stats.signals_forwarded++;
		} else if ((status >> 16) == 0 && t) {
			undo_eintr(s, tid, t);
		}
		if (release_stopped(tid, sig) == 0 && t)
			t->traced = false;
	}
}

/* Whether a still traced thread has a signal of ours pending (it will stop for it). */
static bool ours_pending(struct sampler *s)
{
	unsigned long long mask = sigbit(s->signo) | sigbit(s->old_signo);

	for (size_t i = 0; i < s->n_threads; i++) {
		struct task_status st;
		if (!s->threads[i].traced)
			continue;
		if (task_status(s->pid, s->threads[i].tid, &st) < 0 || st.state == 'Z' ||
		    st.state == 'X') {
			s->threads[i].traced = false;
			continue;
		}
		if ((st.pnd | st.shd_pnd) & mask)
			return true;
	}
	return false;
}

/* The job of sampler_stop() and sampler_pause(): nothing of ours left to reach the target
 * once the tracer thread exits. The events stay open (disabled). */
int tracer_release(struct sampler *s, void *arg)
{
	uint64_t deadline = clock_now_ns() + TEARDOWN_TIMEOUT_NS;

	(void) arg;
	for (size_t i = 0; i < s->n_threads; i++) {
		perf_thread_disable(&s->threads[i]);
		(void) perf_thread_signal(s, &s->threads[i], false);
	}
	if (s->fn) {
		for (size_t i = 0; i < s->n_threads; i++)
			if (s->threads[i].alive && s->threads[i].budget.over)
				(void) budget_drain(s, &s->threads[i], 1u << 16);
		drain_all(s);
	}
	for (;;) {
		struct pollfd pfd = { .fd = s->sigfd, .events = POLLIN };

		detach_stopped(s);
		if (!ours_pending(s) || clock_now_ns() >= deadline)
			break;
		(void) poll(&pfd, 1, 5);
	}
	detach_stopped(s);
	return 0;
}

/* The job of sampler_resume(): seize the known threads again, re-enable their events, and
 * add the threads started meanwhile. */
int tracer_reattach(struct sampler *s, void *arg)
{
	(void) arg;
	for (size_t i = 0; i < s->n_threads; i++) {
		struct thread *t = &s->threads[i];
		int r = -EPERM;

		if (!t->alive)
			continue;
		/* the previous tracer thread may not have let it go yet */
		for (int k = 0; k < RESEIZE_TRIES && r == -EPERM; k++) {
			r = ptrace(PTRACE_SEIZE, t->tid, 0, PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC) < 0
				? -errno : 0;
			if (r == -EPERM)
				(void) usleep(1000);
		}
		if (r < 0) {
			thread_gone(s, t);
			continue;
		}
		t->traced = true;
	}
	if (!thread_find(s, s->pid) && !proc_alive(s->pid)) {
		target_ended(s, 0);
		return 0;
	}
	if (check_signal(s) < 0)
		return -EBUSY;
	for (size_t i = 0; i < s->n_threads; i++) {
		struct thread *t = &s->threads[i];
		if (!t->alive)
			continue;
		if (!t->budget.over)
			(void) perf_thread_signal(s, t, true);
		(void) perf_thread_enable(s, t);
	}
	(void) scan_threads(s, false);
	return 0;
}

/* ---- one-shot stops (stop.h) ---- */

#define STOP_WAIT_NS 200000000ull       /* a thread not stopped by then is read as it runs */
#define STOP_POLL_NS 20000              /* between checks for stops */

struct stop_own {
	bool seized;
	int sig;                /* a signal that stopped it, passed on at the release */
};

struct stop {
	pid_t pid;
	bool native, hold_signals;
	stop_restarts_fn restarts;
	size_t n;
	struct stopped_thread *t;
	struct stop_own *own;
	struct tracer tr;               /* the engine's thread: every ptrace call of this stop */
	pid_t tracer;                   /* the first refusal's tracer */
	uint64_t stopped_at, released_at;       /* the first interrupt, the last detach */
	sigset_t old_mask;
	bool ended;
};

/* A thread just stopped by our interrupt: if the call it was entering failed with EINTR
 * because of it, the call is made again (undo_at_stop(): theirs where a signal of the
 * target's is pending for it) and the thread let go now, unread. */
static void stop_undo_now(struct stop *st, struct stopped_thread *t, struct stop_own *o)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &regs) < 0 || (long long) regs.rax != -EINTR ||
	    (long long) regs.orig_rax < 0)
		return;
	if (!undo_at_stop(t->tid, procfs_task_signal_pending(st->pid, t->tid)))
		return;
	(void) release_stopped(t->tid, 0);
	o->seized = false;
	t->stopped = false;
	t->rewound = true;
}

/* Waits for the stops of the interrupted threads, STOP_WAIT_NS at most: each seized thread's
 * own wait (never another child of the caller's). */
static void stop_wait(struct stop *st, size_t pending)
{
	uint64_t deadline = clock_now_ns() + STOP_WAIT_NS;
	struct timespec nap = { 0, STOP_POLL_NS };

	while (pending > 0 && clock_now_ns() < deadline) {
		bool any = false;

		for (size_t i = 0; i < st->n && pending > 0; i++) {
			struct stopped_thread *t = &st->t[i];
			struct stop_own *o = &st->own[i];
			int status;
			pid_t tid;

			if (!o->seized || t->stopped)
				continue;
			tid = waitpid(t->tid, &status, __WALL | WNOHANG);
			if (tid < 0 && errno != EINTR) {
				o->seized = false;      /* gone, reaped by the kernel */
				pending--;
				continue;
			}
			if (tid <= 0)
				continue;
			any = true;
			if (WIFEXITED(status) || WIFSIGNALED(status)) {
				o->seized = false;
				pending--;
				continue;
			}
			if (!WIFSTOPPED(status))
				continue;
			t->stopped = true;
			pending--;
			if ((status >> 16) == PTRACE_EVENT_STOP)
				stop_undo_now(st, t, o);
			else if ((status >> 16) == 0)
				o->sig = WSTOPSIG(status);
		}
		if (!any)
			(void) nanosleep(&nap, NULL);
	}
}

/* A stopped thread's registers, in perf's REGS_USER order (stop.h), and its stack from SP. */
static void stop_take_native(struct stop *st, struct stopped_thread *t)
{
	struct user_regs_struct r;
	struct iovec local, remote;
	ssize_t got;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return;
	{
		const uint64_t v[] = {
			r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp, r.rip, r.eflags,
			r.cs, r.ss, r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15,
		};
		_Static_assert(sizeof(v) / sizeof(v[0]) == REGS_USER_N, "REGS_USER_MASK");
		memcpy(t->regs, v, sizeof(v));
	}
	t->regs_ok = true;
	t->stack = malloc(STOP_STACK_COPY);
	if (!t->stack)
		return;
	local = (struct iovec) { t->stack, STOP_STACK_COPY };
	remote = (struct iovec) { (void *) (uintptr_t) r.rsp, STOP_STACK_COPY };
	/* a partial read ends at the top of the stack's mapping */
	got = process_vm_readv(st->pid, &local, 1, &remote, 1, 0);
	if (got <= 0) {
		free(t->stack);
		t->stack = NULL;
		return;
	}
	t->stack_len = (size_t) got;
}

/* Seizes and interrupts each thread that runs now (one found waiting by then is left alone: it
 * is read as it waits): how many were interrupted, or -EPERM where every thread it tried
 * refused (st->tracer the first refusal's tracer) and none was seized. */
static int stop_running(struct stop *st)
{
	size_t pending = 0, refused = 0, seized = 0;

	for (size_t i = 0; i < st->n; i++) {
		pid_t tid = st->t[i].tid;
		struct procfs_syscall sc;
		uint64_t switches;
		char state;

		if (procfs_task_sched(st->pid, tid, &state, &switches) < 0)
			continue;       /* gone */
		/* waiting now in a call that would not go on by itself after a stop: read as it
		 * waits */
		if (procfs_task_still(state) &&
		    (state != 'S' || procfs_task_syscall(st->pid, tid, &sc) < 0 ||
		     !st->restarts(st->pid, &sc)))
			continue;
		/* runnable inside such a call (woken, its timeout just over, waiting for a CPU):
		 * an interrupt now would make it fail with EINTR, and made again it would wait its
		 * whole timeout once more; it is looked at in the next round */
		if (state == 'R' && procfs_task_syscall(st->pid, tid, &sc) == 0 && sc.nr >= 0 &&
		    !st->restarts(st->pid, &sc))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
			if (errno != ESRCH && !refused++)
				(void) tracer_task_owner(st->pid, tid, &st->tracer);
			continue;
		}
		st->own[i].seized = true;
		seized++;
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0)
			pending++;
	}
	return refused && !seized ? -EPERM : (int) pending;
}

/* The job that stops: on the stop's tracer thread. */
static int stop_job(struct sampler *s, void *arg)
{
	struct stop *st = arg;
	int r;

	(void) s;
	st->stopped_at = clock_now_ns();
	r = stop_running(st);
	if (r < 0)
		return r;
	stop_wait(st, (size_t) r);
	for (size_t i = 0; st->native && i < st->n; i++)
		if (st->own[i].seized && st->t[i].stopped)
			stop_take_native(st, &st->t[i]);
	return 0;
}

/* The job that lets go: every stopped thread detached (a signal that stopped it passed on);
 * the tracer thread's exit then lets go the ones that had not stopped yet. */
static int stop_release_job(struct sampler *s, void *arg)
{
	struct stop *st = arg;

	(void) s;
	for (size_t i = 0; i < st->n; i++) {
		if (!st->own[i].seized || !st->t[i].stopped)
			continue;
		/* a stopped thread has run nothing since its stop: no EINTR to undo here */
		(void) release_stopped(st->t[i].tid, st->own[i].sig);
	}
	st->released_at = clock_now_ns();
	return 0;
}

static void stop_release_memory(struct stop *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->t[i].stack);
	free(st->t);
	free(st->own);
	tracer_thread_release(&st->tr);
	free(st);
}

int stop_begin(pid_t pid, const pid_t *tids, size_t n, bool native, bool hold_signals,
	       stop_restarts_fn restarts, struct stop **ret, pid_t *ret_tracer)
{
	struct stop *st = calloc(1, sizeof(*st));
	int r;

	*ret = NULL;
	*ret_tracer = 0;
	if (!st)
		return -ENOMEM;
	st->pid = pid;
	st->native = native;
	st->hold_signals = hold_signals;
	st->restarts = restarts;
	st->n = n;
	st->t = calloc(n ? n : 1, sizeof(*st->t));
	st->own = calloc(n ? n : 1, sizeof(*st->own));
	if (!st->t || !st->own) {
		stop_release_memory(st);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		st->t[i].tid = tids[i];
	if (hold_signals) {
		sigset_t quit;

		/* the tracer thread inherits the mask: the caller's quit signals wait for the
		 * release */
		sigemptyset(&quit);
		sigaddset(&quit, SIGINT);
		sigaddset(&quit, SIGTERM);
		sigaddset(&quit, SIGHUP);
		sigaddset(&quit, SIGQUIT);
		sigaddset(&quit, SIGTSTP);
		pthread_sigmask(SIG_BLOCK, &quit, &st->old_mask);
	}
	r = tracer_thread_start(&st->tr, NULL);
	if (r < 0) {
		if (hold_signals)
			pthread_sigmask(SIG_SETMASK, &st->old_mask, NULL);
		st->ended = true;
		stop_release_memory(st);
		return r;
	}
	r = tracer_thread_call(&st->tr, stop_job, st, NULL);
	if (r < 0) {
		*ret_tracer = st->tracer;
		stop_free(st);
		return r;
	}
	*ret = st;
	return 0;
}

const struct stopped_thread *stop_thread(const struct stop *st, size_t i)
{
	return i < st->n ? &st->t[i] : NULL;
}

uint64_t stop_end(struct stop *st)
{
	if (!st->ended) {
		(void) tracer_thread_call(&st->tr, stop_release_job, st, NULL);
		/* exiting detaches the rest: threads that had not stopped yet go on unstopped */
		tracer_thread_end(&st->tr);
		st->ended = true;
		if (st->hold_signals)
			pthread_sigmask(SIG_SETMASK, &st->old_mask, NULL);
	}
	return st->stopped_at ? st->released_at - st->stopped_at : 0;
}

void stop_free(struct stop *st)
{
	if (!st)
		return;
	(void) stop_end(st);
	stop_release_memory(st);
}
