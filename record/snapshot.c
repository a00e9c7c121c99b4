/*
 * snapshot: every thread's stack of a process, once, as data (see snapshot.h): the threads from
 * base/procfs.c's lister, their states from /proc, the waiting ones read as they wait, the
 * running ones under a one-shot stop of the sampler's ptrace engine (sampler/stop.h), the wait
 * words from the one table (wait.c), the native frames unwound, symbolized and merged with the
 * Python frames (merge.h) after the release.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "base/procfs.h"
#include "record/merge.h"
#include "record/record.h"
#include "record/snapshot.h"

#define TORN_TRIES    20        /* a running thread: walks before giving up (torn) */
#define BLOCKED_TRIES 3         /* a blocked thread: reads before it is taken as running */
#define ROUNDS        3         /* reads of waiting threads, then stops of running ones */
#define NATIVE_INLINE 8         /* frames one address may stand for (inlined calls) */

/* ---- what a thread does, from /proc ---- */

/* Thread tid of pid: state and switches (in one read of its status, first), system call,
 * name. 0 or -ESRCH (gone). */
static int task_read(pid_t pid, pid_t tid, struct snapshot_task *ret)
{
	struct procfs_syscall sc;
	char path[96];
	size_t n;
	FILE *f;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->sc.nr = -2;
	/* the state and the switch count first, in one read: what a read of the thread's
	 * memory after this call is checked against (procfs_task_sched() again) */
	r = procfs_task_sched(pid, tid, &ret->state, &ret->switches);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int) pid, (int) tid);
	f = fopen(path, "re");
	if (f) {
		n = fread(ret->comm, 1, sizeof(ret->comm) - 1, f);
		ret->comm[n] = '\0';
		fclose(f);
		ret->comm[strcspn(ret->comm, "\n")] = '\0';
	}
	if (procfs_task_syscall(pid, tid, &sc) == 0)
		ret->sc = sc;
	return 0;
}

/* Thread t as read again at the stop (now: stat says 't' then, syscall what the stop
 * interrupted): in a system call (waiting on it) or not (running), unless what t read before
 * the stop can only be seen then (a page fault's I/O, a job-control stop). */
static void task_at_stop(struct snapshot_task *t, const struct snapshot_task *now)
{
	if ((t->state == 'D' && t->sc.nr == -1) || t->state == 'T' || t->state == 'Z')
		return;
	if (now->sc.nr < -1)
		return;
	t->sc = now->sc;
	t->state = now->sc.nr >= 0 ? 'S' : 'R';
}

/* /proc/PID/cmdline with its NULs as blanks, cut to fit. */
static void read_command(pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t n = 0;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0' || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = '\0';
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

/* The threads of the process (at most SNAPSHOT_MAX_THREADS), sorted. */
static int list_threads(struct snapshot_process *p)
{
	pid_t *tids = malloc(SNAPSHOT_MAX_THREADS * sizeof(*tids));
	int r;

	if (!tids)
		return -ENOMEM;
	r = procfs_tasks(p->pid, tids, SNAPSHOT_MAX_THREADS);
	if (r <= 0) {
		free(tids);
		return r == 0 ? -ESRCH : r;
	}
	qsort(tids, (size_t) r, sizeof(*tids), cmp_pid);
	p->t = calloc((size_t) r, sizeof(*p->t));
	if (!p->t) {
		free(tids);
		return -ENOMEM;
	}
	for (int i = 0; i < r; i++)
		p->t[i].tid = tids[i];
	p->n = (size_t) r;
	free(tids);
	return 0;
}

/* ---- reading the threads ---- */

/* One walk of a thread's Python stack into t (its frames copied out of buf), tries times at
 * most while torn (-EAGAIN, verify on). Returns the walk's result. */
static int walk_thread(struct snapshot_process *p, struct snapshot_thread *t,
		       struct py_frame *buf, int tries)
{
	size_t n = 0;
	int r = -EAGAIN;

	free(t->frames);
	t->frames = NULL;
	t->n_frames = 0;
	memset(&t->cut, 0, sizeof(t->cut));
	for (int i = 0; i < tries && r == -EAGAIN; i++)
		r = pyframes_thread_stack(p->pf, t->tid, buf, SNAPSHOT_FRAMES_MAX, &n, &t->cut);
	t->walk = r;
	if (pyframes_thread_state(p->pf, t->tid, &t->tstate) < 0)
		t->tstate = 0;
	if (r < 0 || n == 0)
		return r;
	t->frames = malloc(n * sizeof(*t->frames));
	if (!t->frames) {
		t->walk = -ENOMEM;
		return -ENOMEM;
	}
	memcpy(t->frames, buf, n * sizeof(*t->frames));
	t->n_frames = n;
	return r;
}

/* native, a blocked thread: its stack from the SP its system call (or fault) left, and that
 * SP and PC as its registers (the others unknown: the unwinder needs these two to start). */
static void copy_blocked_stack(struct snapshot_process *p, struct snapshot_thread *t)
{
	struct iovec local, remote;
	ssize_t got;

	t->regs_ok = false;
	if (!t->task.sc.sp || !t->task.sc.pc)
		return;
	if (!t->stack) {
		t->stack = malloc(STOP_STACK_COPY);
		if (!t->stack)
			return;
	}
	local = (struct iovec) { t->stack, STOP_STACK_COPY };
	remote = (struct iovec) { (void *) (uintptr_t) t->task.sc.sp, STOP_STACK_COPY };
	/* a partial read ends at the top of the stack's mapping */
	got = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	if (got <= 0)
		return;
	t->stack_len = (size_t) got;
	memset(t->regs, 0, sizeof(t->regs));
	t->regs[STOP_REG_SP] = t->task.sc.sp;
	t->regs[STOP_REG_IP] = t->task.sc.pc;
	t->regs_ok = true;
}

/* A thread blocked in the kernel, read without a stop: its state and switch count before the
 * read (t->task; read afresh first where fresh is false) and after it say whether it ran
 * meanwhile; then it is read again (it may have gone back to its wait), BLOCKED_TRIES times
 * at most. True when read so. */
static bool read_blocked(struct snapshot_process *p, bool native, struct snapshot_thread *t,
			 struct py_frame *buf, bool fresh)
{
	for (int i = 0; i < BLOCKED_TRIES; i++) {
		uint64_t switches;
		char state;
		int r;

		if ((i > 0 || !fresh) && task_read(p->pid, t->tid, &t->task) < 0)
			return false;
		/* a wait the kernel restarts after a stop is stopped with the running threads:
		 * one instant for all of them (the GIL's waiters and its holder) */
		if (!procfs_task_still(t->task.state) ||
		    (t->task.state == 'S' && wait_restarts(p->pid, &t->task.sc)))
			return false;
		r = walk_thread(p, t, buf, 1);
		if (native)
			copy_blocked_stack(p, t);
		if (procfs_task_sched(p->pid, t->tid, &state, &switches) < 0)
			return false;
		/* the interpreter's list of threads, which running threads change, may tear too */
		if ((r == -EAGAIN || r == -EFAULT) && i + 1 < BLOCKED_TRIES)
			continue;
		if (procfs_task_still(state) && switches == t->task.switches) {
			t->how = SNAPSHOT_READ_BLOCKED;
			return true;
		}
	}
	return false;
}

static int fail(struct snapshot_process *p, enum snapshot_step step, int r)
{
	p->failed = step;
	p->error = r;
	return r;
}

/* The threads not read yet that run, stopped: their walks (and, gil not NULL, the GIL) under
 * the stop. 0, or the failure (p->failed). */
static int read_stopped(struct snapshot_process *p, const struct snapshot_opts *o,
			struct pyframes_gil *gil, struct py_frame *buf)
{
	pid_t *tids = malloc(p->n * sizeof(*tids));
	size_t *which = malloc(p->n * sizeof(*which)), n = 0;
	struct stop *st = NULL;
	int r;

	if (!tids || !which) {
		free(tids);
		free(which);
		return fail(p, SNAPSHOT_FAILED_READ, -ENOMEM);
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].how == SNAPSHOT_READ_NONE && p->t[i].task.state != 'Z' &&
		    p->t[i].task.state != 'X') {
			which[n] = i;
			tids[n++] = p->t[i].tid;
		}
	r = n ? stop_begin(p->pid, tids, n, o->native, o->hold_signals, wait_restarts, &st,
			   &p->tracer) : 0;
	free(tids);
	if (r < 0) {
		free(which);
		return fail(p, SNAPSHOT_FAILED_STOP, r);
	}
	for (size_t k = 0; k < n; k++) {
		const struct stopped_thread *s = stop_thread(st, k);
		struct snapshot_thread *t = &p->t[which[k]];
		struct snapshot_task now;

		if (!s->stopped)
			continue;
		p->n_stopped++;
		if (task_read(p->pid, t->tid, &now) == 0)
			task_at_stop(&t->task, &now);
		(void) walk_thread(p, t, buf, 1);
		t->how = SNAPSHOT_READ_STOPPED;
		t->gil_read = gil != NULL;
		if (s->regs_ok && s->stack) {
			memcpy(t->regs, s->regs, sizeof(t->regs));
			t->regs_ok = true;
			free(t->stack);
			t->stack = malloc(s->stack_len);
			if (t->stack)
				memcpy(t->stack, s->stack, s->stack_len);
			t->stack_len = t->stack ? s->stack_len : 0;
		}
	}
	if (gil && pyframes_gil(p->pf, gil) < 0)
		gil->known = false;
	if (st)
		p->stopped_ns += stop_end(st);
	stop_free(st);
	free(which);
	return 0;
}

/* After the GIL was read (under the stop): a thread read as it waited that has not run since
 * was waiting as read when the GIL was read too, so the two agree (one cannot show waiting
 * for the GIL it holds). One that ran is read again; its GIL is then not known. */
static void recheck_blocked(struct snapshot_process *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct snapshot_thread *t = &p->t[i];
		uint64_t switches;
		char state;

		if (t->how != SNAPSHOT_READ_BLOCKED)
			continue;
		if (procfs_task_sched(p->pid, t->tid, &state, &switches) == 0 &&
		    procfs_task_still(state) && switches == t->task.switches) {
			t->gil_read = true;
			continue;
		}
		t->how = SNAPSHOT_READ_NONE;
		p->n_blocked--;
	}
}

/* native: each thread's native frames, unwound from the copy of its stack, symbolized, and
 * merged with its Python frames. */
static int native_frames(struct snapshot_process *p)
{
	const char *slash = strrchr(p->info.binary, '/');
	const char *interp = p->info.binary[0] ? (slash ? slash + 1 : p->info.binary) : NULL;

	for (size_t i = 0; p->sym && i < p->n; i++) {
		struct snapshot_thread *t = &p->t[i];
		struct native_frame *nf;
		size_t n = 0, max, scratch;

		if (!t->regs_ok || !t->stack)
			continue;
		t->native_ok = symbolizer_unwind(p->sym, t->regs, REGS_USER_N, t->stack,
						 t->stack_len, t->ips, SNAPSHOT_NATIVE_MAX,
						 &t->n_ips) >= 0;
		if (!t->n_ips)
			continue;
		t->native = calloc(t->n_ips * NATIVE_INLINE, sizeof(*t->native));
		nf = calloc(t->n_ips * NATIVE_INLINE, sizeof(*nf));
		if (!t->native || !nf) {
			free(nf);
			return -ENOMEM;
		}
		for (size_t k = 0; k < t->n_ips; k++) {
			size_t got = 0;

			if (symbolizer_lookup(p->sym, t->ips[k], k > 0, nf + n, NATIVE_INLINE,
					      &got) < 0)
				got = 0;
			if (got == 0) {
				nf[n] = (struct native_frame) { .addr = t->ips[k] };
				t->native[n] = (struct snapshot_native) { .addr = t->ips[k],
									  .nf = nf[n] };
				n++;
				continue;
			}
			for (size_t j = 0; j < got; j++, n++)
				t->native[n] = (struct snapshot_native) { .addr = t->ips[k],
									  .symbolized = true,
									  .nf = nf[n] };
		}
		t->n_native = n;
		/* the merged stack (merge.h), root first */
		max = n + t->n_frames + 1;
		scratch = n * MERGE_SCRATCH_PER_FRAME;
		t->merged = calloc(max, sizeof(*t->merged));
		t->scratch = malloc(scratch ? scratch : 1);
		if (!t->merged || !t->scratch) {
			free(nf);
			return -ENOMEM;
		}
		{
			struct merge_in in = {
				.native = nf, .n_native = n, .py = t->frames, .n_py = t->n_frames,
				.interp_module = interp, .py_truncated = t->cut.n || t->cut.more,
				.scratch = t->scratch, .scratch_size = scratch,
			};

			t->merge = merge_stacks(&in, t->merged, max, &t->n_merged);
			if (t->merge < 0 && t->merge != -E2BIG)
				t->n_merged = 0;
		}
		free(nf);
	}
	return 0;
}

/* Every thread's stack and the GIL. Without nonblocking, in rounds: the threads that wait
 * read as they wait, then the ones that run under a stop (the GIL read then, in the first); a
 * thread that was neither when its turn came (it began to run or to wait) is left to the next
 * round. What is left after ROUNDS is read as it runs. 0, or the failure. */
static int read_all(struct snapshot_process *p, const struct snapshot_opts *o,
		    struct pyframes_gil *gil)
{
	struct py_frame *buf = malloc(SNAPSHOT_FRAMES_MAX * sizeof(*buf));
	int r;

	if (!buf)
		return fail(p, SNAPSHOT_FAILED_READ, -ENOMEM);
	for (int round = 0; !o->nonblocking && round < ROUNDS; round++) {
		size_t left = 0;

		for (size_t i = 0; i < p->n; i++) {
			if (p->t[i].how == SNAPSHOT_READ_NONE &&
			    read_blocked(p, o->native, &p->t[i], buf, round == 0))
				p->n_blocked++;
			left += p->t[i].how == SNAPSHOT_READ_NONE;
		}
		if (round > 0 && !left)
			break;
		r = read_stopped(p, o, round == 0 ? gil : NULL, buf);
		if (r < 0) {
			free(buf);
			return r;
		}
		if (round == 0)
			recheck_blocked(p);
	}
	/* what is left is read as it runs, each walk checked and retried when torn */
	pyframes_set_verify(p->pf, true);
	for (size_t i = 0; i < p->n; i++) {
		struct snapshot_thread *t = &p->t[i];

		if (t->how != SNAPSHOT_READ_NONE)
			continue;
		(void) walk_thread(p, t, buf, TORN_TRIES);
		t->how = SNAPSHOT_READ_RUNNING;
		t->gil_read = o->nonblocking;
		t->regs_ok = false;
		p->n_running++;
	}
	pyframes_set_verify(p->pf, false);
	free(buf);
	if (o->nonblocking && pyframes_gil(p->pf, gil) < 0)
		gil->known = false;
	return 0;
}

/* After the release: Python's names of the threads (else the OS's), each one's GIL and the
 * reason a waiting one waits. */
static void describe(struct snapshot_process *p, const struct pyframes_gil *gil,
		     uint64_t gil_addr)
{
	struct pyframes_thread_name *names = calloc(SNAPSHOT_MAX_THREADS, sizeof(*names));
	size_t n_names = 0;

	if (!names || pyframes_thread_names(p->pf, names, SNAPSHOT_MAX_THREADS, &n_names) < 0)
		n_names = 0;
	for (size_t i = 0; i < p->n; i++) {
		struct snapshot_thread *t = &p->t[i];

		snprintf(t->name, sizeof(t->name), "%s", t->task.comm);
		for (size_t k = 0; k < n_names; k++)
			if (names[k].tid == t->tid)
				snprintf(t->name, sizeof(t->name), "%s", names[k].name);
		t->gil = !gil->known || !t->gil_read ? -1
			 : gil->locked && t->tstate && gil->holder == t->tstate;
		t->waiting = t->task.state != 'R';
		if (t->waiting)
			wait_words_proc(p->pid, t->task.state, &t->task.sc, gil_addr, NULL, 0,
					t->wait, sizeof(t->wait));
		/* a thread waiting in the GIL's own futexes holds it no more: the read fell
		 * between take_gil()'s locked = 1 and its store of the new holder (the one it
		 * replaces waits on switch_cond there), so who holds it is not known */
		if (t->gil == 1 && t->waiting && t->task.sc.nr == SYS_futex &&
		    wait_in_gil(t->task.sc.args[0], gil_addr))
			t->gil = 0;
	}
	free(names);
}

/* Opens the process's interpreter and reads everything: 0, or the failure (p->failed). */
static int take_process(struct snapshot_process *p, const struct snapshot_opts *o)
{
	struct pyframes_gil gil = { 0 };
	uint64_t gil_addr = 0;
	uint32_t lo, ho;
	int r;

	if (kill(p->pid, 0) < 0 && errno == ESRCH)
		return fail(p, SNAPSHOT_FAILED_TARGET, -ESRCH);
	r = remote_mem_open_pid(p->pid, &p->mem);
	if (r < 0)
		return fail(p, SNAPSHOT_FAILED_TARGET, r);
	p->mem_open = true;
	r = pyframes_open_settled(p->pid, &p->mem, &p->pf, &p->info);
	if (r < 0)
		return fail(p, SNAPSHOT_FAILED_TARGET, r);
	p->info = *pyframes_info(p->pf);
	read_command(p->pid, p->command, sizeof(p->command));
	r = list_threads(p);
	if (r < 0)
		return fail(p, r == -ENOMEM ? SNAPSHOT_FAILED_READ : SNAPSHOT_FAILED_TARGET, r);
	for (size_t i = 0; i < p->n; i++)
		(void) task_read(p->pid, p->t[i].tid, &p->t[i].task);
	if (pyframes_gil_spec(p->pf, &gil_addr, &lo, &ho) < 0)
		gil_addr = 0;
	r = read_all(p, o, &gil);
	if (r < 0)
		return r;
	if (o->native) {
		r = symbolizer_new(p->pid, &p->sym);
		if (r < 0)
			p->native_error = r;
		else if (native_frames(p) < 0)
			return fail(p, SNAPSHOT_FAILED_READ, -ENOMEM);
	}
	describe(p, &gil, gil_addr);
	return 0;
}

static void process_release(struct snapshot_process *p)
{
	for (size_t i = 0; p->t && i < p->n; i++) {
		struct snapshot_thread *t = &p->t[i];

		free(t->frames);
		free(t->stack);
		free(t->native);
		free(t->merged);
		free(t->scratch);
	}
	free(p->t);
	symbolizer_free(p->sym);
	pyframes_free(p->pf);
	if (p->mem_open)
		remote_mem_close(&p->mem);
}

int snapshot_take(pid_t pid, const struct snapshot_opts *opts, struct snapshot **ret)
{
	pid_t tree[SNAPSHOT_MAX_PROCESSES];
	struct snapshot *s = calloc(1, sizeof(*s));
	size_t n = 1;

	*ret = NULL;
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	tree[0] = pid;
	if (opts->subprocesses)
		n = 1 + procfs_descendants(pid, tree + 1, SNAPSHOT_MAX_PROCESSES - 1);
	s->p = calloc(n, sizeof(*s->p));
	if (!s->p) {
		free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct snapshot_process *p = &s->p[s->n++];

		p->pid = tree[i];
		if (take_process(p, opts) < 0 && i == 0)
			break;          /* the target itself: no tree */
		if (p->error)
			read_command(p->pid, p->command, sizeof(p->command));
	}
	*ret = s;
	return 0;
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		process_release(&s->p[i]);
	free(s->p);
	free(s);
}
