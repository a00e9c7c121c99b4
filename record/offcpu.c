/*
 * offcpu: --off-cpu. Every switch-out of a target thread is a sample (the sampler's
 * context-switch event, its Python stack captured at the switch); it weighs the nanoseconds
 * until that thread is switched in again, which the switch records tell (sampler events,
 * perf's timestamps). Its stack waits here, resolved and with its reason named
 * (record_wait_reason()), until that time is known.
 *
 * Per CPU, each CPU's ring is read in turn, so a thread's records come in time order within a
 * ring but not across rings: its switch-in (on CPU B) may be read before the switch-out it
 * follows (on CPU A), or after later ones. A waiting sample is settled by the first switch-in
 * of its thread after it once that switch-in is older than the sampler's horizon (every ring
 * read through since: SAMPLER_EVENT_DRAINED), so that no earlier one can still come; and
 * only after another record came in, so that the switch-out record just after the sample
 * (same ring) has told whether it was involuntary ([preempted]). At the end of the run, a
 * thread still waiting weighs until the end.
 *
 * Waits under way when hwspy attaches (record_offcpu_initial(), at the run's start, the events
 * open; with --subprocesses in every process of the target's tree): each thread blocked then whose switch count does not move while its stack is read is
 * a sample at the recording's start, with that stack and the reason /proc gives, weighing
 * until the thread's first switch-in as any other. Unless a switch-out of that thread was
 * sampled before the read ended: it blocked once the events were open, and that sample covers
 * its wait; the one at the start is then dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/procfs.h"
#include "record/internal.h"

#define OFFCPU_MAX_WAITING 65536        /* samples waiting per thread, at most */
#define OFFCPU_MAX_THREADS 65536
#define OFFCPU_PREEMPT_WINDOW_NS 1000000 /* a switch-out record within this of its sample */
#define OFFCPU_INITIAL_MAX 65536        /* threads of a process looked at for waits under way */
#define OFFCPU_TREE_MAX 256             /* --subprocesses: processes of the tree looked at */

struct waiting {
	uint64_t out_ns;
	bool preempted;
	uint32_t *ids;                  /* its stack, its reason the last */
	size_t depth, cap;
	uint64_t read_end_ns;           /* its stack read after the sample, by then (0: at it) */
	bool initial;                   /* a wait under way at the start (its stack read then) */
	uint64_t ran_ns;                /* the first time after out_ns the thread was seen to run
	                                 * (a sample on the CPU, its next switch-out; 0: none) */
	size_t n_prefix;                /* ... the root frames before that stack */
	uint64_t values[SAMPLER_MAX_EVENTS + 1];
	size_t n_values;
};

struct offcpu_thread {
	pid_t tid;
	struct waiting *w;              /* ascending by out_ns; cap_w buffers, n_waiting used */
	size_t n_waiting, cap_w;
	uint64_t *ins;                  /* switch-ins not spent yet, ascending */
	size_t n_ins, cap_ins;
};

struct offcpu {
	struct offcpu_thread *t;
	size_t n, cap;
	uint32_t *index;                /* open addressing by tid: 1 + the thread's place, 0 empty */
	size_t index_size;
	uint32_t preempted_frame;
	uint64_t last_ns;               /* the latest time of a sample or switch seen */
	uint64_t horizon;               /* every record before it has been read */
};

/* The slot of tid in the index (size a power of two): its thread's, or the empty one to take. */
static uint32_t *index_slot(const struct offcpu *oc, pid_t tid)
{
	size_t mask = oc->index_size - 1, i = ((uint32_t) tid * 2654435761u) & mask;

	while (oc->index[i] && oc->t[oc->index[i] - 1].tid != tid)
		i = (i + 1) & mask;
	return &oc->index[i];
}

/* The index at twice the threads' room: -ENOMEM, or 0. */
static int index_grow(struct offcpu *oc)
{
	uint32_t *old = oc->index;
	size_t size = oc->index_size ? oc->index_size * 2 : 128;

	oc->index = calloc(size, sizeof(*oc->index));
	if (!oc->index) {
		oc->index = old;
		return -ENOMEM;
	}
	oc->index_size = size;
	for (size_t i = 0; i < oc->n; i++)
		*index_slot(oc, oc->t[i].tid) = (uint32_t) i + 1;
	free(old);
	return 0;
}

static struct offcpu_thread *thread_of(struct recorder *rec, pid_t tid)
{
	struct offcpu *oc = rec->offcpu;
	struct offcpu_thread *t;
	uint32_t *slot;

	if (oc->index_size) {
		slot = index_slot(oc, tid);
		if (*slot)
			return &oc->t[*slot - 1];
	}
	if (oc->n == OFFCPU_MAX_THREADS)
		return NULL;
	if (2 * (oc->n + 1) > oc->index_size && index_grow(oc) < 0)
		return NULL;
	if (array_grow((void **) &oc->t, &oc->cap, oc->n + 1, sizeof(*oc->t), 64) < 0)
		return NULL;
	t = &oc->t[oc->n];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	*index_slot(oc, tid) = (uint32_t) ++oc->n;
	return t;
}

/* Adds a switch-in of t, in order (they mostly come in order). */
static int ins_add(struct offcpu_thread *t, uint64_t time)
{
	size_t i;

	if (t->n_ins == t->cap_ins && t->cap_ins * 2 > OFFCPU_MAX_WAITING)
		return -E2BIG;
	if (array_grow((void **) &t->ins, &t->cap_ins, t->n_ins + 1, sizeof(*t->ins), 16) < 0)
		return -ENOMEM;
	for (i = t->n_ins; i > 0 && t->ins[i - 1] > time; i--)
		t->ins[i] = t->ins[i - 1];
	t->ins[i] = time;
	t->n_ins++;
	return 0;
}

/* The first switch-in of t after from and at most until (0: any); 0 if none. */
static uint64_t ins_next(const struct offcpu_thread *t, uint64_t from, uint64_t until)
{
	for (size_t i = 0; i < t->n_ins; i++)
		if (t->ins[i] > from && (!until || t->ins[i] <= until))
			return t->ins[i];
	return 0;
}

/* Drops the switch-ins no waiting sample can take: those before the oldest waiting one, or
 * with none waiting, before the horizon (a sample read later is newer than it). */
static void ins_forget(struct offcpu_thread *t, uint64_t horizon)
{
	uint64_t before = t->n_waiting ? t->w[0].out_ns : horizon;
	size_t k = 0;

	while (k < t->n_ins && t->ins[k] <= before)
		k++;
	if (k)          /* none yet: t->ins may be NULL */
		memmove(t->ins, t->ins + k, (t->n_ins - k) * sizeof(*t->ins));
	t->n_ins -= k;
}

int record_offcpu_init(struct recorder *rec)
{
	struct profile_frame f = { .kind = FRAME_WAIT, .name = "[preempted]" };

	rec->offcpu = calloc(1, sizeof(*rec->offcpu));
	if (!rec->offcpu)
		return -ENOMEM;
	return profile_frame_id(rec->prof, &f, &rec->offcpu->preempted_frame);
}

void record_offcpu_free(struct recorder *rec)
{
	struct offcpu *oc = rec->offcpu;

	if (!oc)
		return;
	for (size_t i = 0; i < oc->n; i++) {
		for (size_t k = 0; k < oc->t[i].cap_w; k++)
			free(oc->t[i].w[k].ids);
		free(oc->t[i].w);
		free(oc->t[i].ins);
	}
	free(oc->t);
	free(oc->index);
	free(oc);
	rec->offcpu = NULL;
}

/* t's waiting sample k, weighing in_ns - its switch-out, to the sink; it leaves the queue. */
static void settle(struct recorder *rec, struct offcpu_thread *t, size_t k, uint64_t in_ns)
{
	struct waiting *w = &t->w[k], done;
	struct record_sample out;

	if (w->read_end_ns && in_ns <= w->read_end_ns) {
		/* read late, after the thread ran again: another wait's stack, maybe */
		rec->stats.off_cpu_stale++;
		w->ids[w->n_prefix] = rec->unknown_frame;
		w->ids[w->n_prefix + 1] = w->ids[w->depth - 1];
		w->depth = w->n_prefix + 2;
	}
	if (w->preempted)
		w->ids[w->depth - 1] = rec->offcpu->preempted_frame;
	w->values[1] = in_ns > w->out_ns ? in_ns - w->out_ns : 0;
	out = (struct record_sample) {
		.tid = t->tid, .time_ns = w->out_ns, .frames = w->ids, .depth = w->depth,
		.values = w->values, .n_values = w->n_values, .off_cpu = true,
	};
	rec->stats.off_cpu_ns += w->values[1];
	if (rec->sink.sample(rec->sink.ctx, &out) < 0)
		rec->stats.add_failed++;
	/* its buffer goes to the end of the queue, for a later sample */
	done = *w;
	memmove(&t->w[k], &t->w[k + 1], (t->n_waiting - k - 1) * sizeof(*w));
	t->w[--t->n_waiting] = done;
}

/* Settles each waiting sample of t whose switch-in is known for sure: before the horizon. */
static void settle_known(struct recorder *rec, struct offcpu_thread *t, uint64_t horizon)
{
	size_t k = 0;

	while (k < t->n_waiting) {
		struct waiting *w = &t->w[k];
		uint64_t in = ins_next(t, w->out_ns, horizon);

		if (in && (!w->ran_ns || in <= w->ran_ns)) {
			settle(rec, t, k, in);
		} else if (w->ran_ns && w->ran_ns <= horizon) {
			/* its switch-in was lost (the ring overflowed): it ran by then */
			rec->stats.off_cpu_capped++;
			settle(rec, t, k, w->ran_ns);
		} else {
			k++;
		}
	}
	ins_forget(t, horizon);
}

void record_offcpu_sample(struct recorder *rec, const struct record_sample *s, const char *reason,
			 uint64_t read_end_ns, size_t n_prefix, bool initial)
{
	struct offcpu *oc = rec->offcpu;
	struct offcpu_thread *t = thread_of(rec, s->tid);
	struct profile_frame f = { .kind = FRAME_WAIT, .name = reason };
	struct waiting *w, hold;
	uint32_t reason_id;
	size_t k;

	if (s->time_ns > oc->last_ns)
		oc->last_ns = s->time_ns;
	if (!t || profile_frame_id(rec->prof, &f, &reason_id) < 0) {
		rec->stats.add_failed++;
		return;
	}
	/* a switch-out sampled before a wait under way at the start was read: it covers that
	 * wait (the thread blocked with the events open), which is dropped */
	for (k = 0; !initial && k < t->n_waiting; k++)
		if (t->w[k].initial && t->w[k].read_end_ns >= s->time_ns) {
			struct waiting gone = t->w[k];

			memmove(&t->w[k], &t->w[k + 1], (t->n_waiting - k - 1) * sizeof(*t->w));
			t->w[--t->n_waiting] = gone;
			rec->stats.off_cpu_initial--;
			break;
		}
	if (t->n_waiting == OFFCPU_MAX_WAITING) {
		/* never settled (its switch-ins lost): until this one, at the most */
		settle(rec, t, 0, s->time_ns);
	}
	/* the new part zeroed: a buffer past n_waiting has no ids yet */
	if (array_grow((void **) &t->w, &t->cap_w, t->n_waiting + 1, sizeof(*t->w), 8) < 0) {
		rec->stats.add_failed++;
		return;
	}
	w = &t->w[t->n_waiting];
	if (array_grow((void **) &w->ids, &w->cap, s->depth + 1, sizeof(*w->ids), 64) < 0) {
		rec->stats.add_failed++;
		return;
	}
	memcpy(w->ids, s->frames, s->depth * sizeof(*w->ids));
	w->ids[s->depth] = reason_id;
	w->depth = s->depth + 1;
	w->n_values = s->n_values < SAMPLER_MAX_EVENTS + 1 ? s->n_values : SAMPLER_MAX_EVENTS + 1;
	memcpy(w->values, s->values, w->n_values * sizeof(*w->values));
	w->out_ns = s->time_ns;
	w->preempted = false;
	w->read_end_ns = n_prefix + 1 < w->depth || initial ? read_end_ns : 0;
	w->n_prefix = n_prefix;
	w->initial = initial;
	w->ran_ns = 0;
	/* in time order: one read from another ring may be older than those waiting */
	hold = *w;
	for (k = t->n_waiting; k > 0 && t->w[k - 1].out_ns > hold.out_ns; k--)
		t->w[k] = t->w[k - 1];
	t->w[k] = hold;
	t->n_waiting++;
	/* a switch-out: the thread ran just before it */
	record_offcpu_ran(rec, s->tid, s->time_ns);
}

void record_offcpu_ran(struct recorder *rec, pid_t tid, uint64_t time_ns)
{
	struct offcpu *oc = rec->offcpu;
	struct offcpu_thread *t;
	uint32_t *slot;

	if (!oc || !oc->index_size)
		return;
	slot = index_slot(oc, tid);
	if (!*slot)
		return;
	t = &oc->t[*slot - 1];
	for (size_t k = 0; k < t->n_waiting && t->w[k].out_ns < time_ns; k++)
		if (!t->w[k].ran_ns || time_ns < t->w[k].ran_ns)
			t->w[k].ran_ns = time_ns;
}

void record_offcpu_switch(struct recorder *rec, const struct sampler_event *e)
{
	struct offcpu *oc = rec->offcpu;
	struct offcpu_thread *t;

	if (!oc)
		return;
	if (e->time_ns > oc->last_ns)
		oc->last_ns = e->time_ns;
	if (e->kind == SAMPLER_EVENT_DRAINED) {
		oc->horizon = e->time_ns;
		for (size_t i = 0; i < oc->n; i++)
			settle_known(rec, &oc->t[i], oc->horizon);
		return;
	}
	t = thread_of(rec, e->tid);
	if (!t)
		return;
	if (e->kind == SAMPLER_EVENT_SWITCH_IN) {
		if (ins_add(t, e->time_ns) < 0)
			rec->stats.off_cpu_unmatched++;
		return;
	}
	/* the record of a switch-out follows its sample, in its ring */
	for (size_t k = t->n_waiting; k > 0; k--) {
		struct waiting *w = &t->w[k - 1];

		if (e->time_ns >= w->out_ns && e->time_ns - w->out_ns < OFFCPU_PREEMPT_WINDOW_NS) {
			w->preempted = e->preempted;
			break;
		}
	}
}

void record_offcpu_end(struct recorder *rec, bool exited)
{
	struct offcpu *oc = rec->offcpu;
	uint64_t end;

	if (!oc)
		return;
	/* a thread still switched out waits until the end: of the run, or of the target */
	end = exited ? oc->last_ns : clock_now_ns();
	for (size_t i = 0; i < oc->n; i++) {
		struct offcpu_thread *t = &oc->t[i];

		while (t->n_waiting) {
			uint64_t from = t->w[0].out_ns, in = ins_next(t, from, 0);
			uint64_t ran = t->w[0].ran_ns;

			if (ran && (!in || ran < in)) {
				rec->stats.off_cpu_capped++;
				in = ran;
			}
			settle(rec, t, 0, in ? in : end > from ? end : from);
		}
	}
}

/* --native: a blocked thread's stack from the SP its system call left, into stack (size bytes),
 * and that SP and PC as its registers: the bytes copied. */
static size_t blocked_stack(pid_t pid, const struct procfs_syscall *sc, uint64_t *regs,
			    void *stack, size_t size)
{
	struct iovec local = { stack, size };
	struct iovec remote = { (void *) (uintptr_t) sc->sp, size };
	ssize_t got;

	if (!sc->sp || !sc->pc || !stack)
		return 0;
	/* a partial read ends at the top of the stack's mapping */
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got <= 0)
		return 0;
	memset(regs, 0, REGS_USER_N * sizeof(*regs));
	regs[REGS_SP] = sc->sp;
	regs[REGS_IP] = sc->pc;
	return (size_t) got;
}

/* The waits under way in process pid (the target, or a child with --subprocesses) whose
 * interpreter is pf; stack: --native's buffer (or NULL). */
static void initial_waits(struct recorder *rec, pid_t pid, struct pyframes *pf, void *stack)
{
	pid_t *tids = malloc(OFFCPU_INITIAL_MAX * sizeof(*tids));
	int n_tids = tids ? procfs_tasks(pid, tids, OFFCPU_INITIAL_MAX) : -ENOMEM;

	rec->in_child = pid != rec->pid;
	for (int i = 0; i < n_tids; i++) {
		struct sample s = { .pid = pid, .tid = tids[i], .time_ns = rec->run_start_ns,
				    .off_cpu = true };
		struct pyframes_cut cut = { 0 };
		struct procfs_syscall sc;
		uint64_t regs[REGS_USER_N], before, after;
		char state, words[192], reason[224];
		size_t n = 0;
		int r = -ENOENT;

		if (procfs_task_sched(pid, s.tid, &state, &before) < 0 ||
		    !procfs_task_still(state) || procfs_task_syscall(pid, s.tid, &sc) < 0)
			continue;
		if (pf)
			r = pyframes_thread_stack(pf, s.tid, rec->pyf, MAX_PY_FRAMES, &n, &cut);
		s.stack_size = rec->in_child ? 0 :
			       blocked_stack(pid, &sc, regs, stack, rec->opts.stack_size);
		if (s.stack_size) {
			s.stack = stack;
			s.regs = regs;
			s.n_regs = REGS_USER_N;
			s.ip = sc.pc;
			s.user = true;
		}
		/* blocked all along the read: this is the stack of the wait it is in */
		if (procfs_task_sched(pid, s.tid, &state, &after) < 0 ||
		    !procfs_task_still(state) || after != before)
			continue;
		wait_words_proc(pid, state, &sc, record_gil_addr(rec, pid), &rec->fd_cache,
				clock_now_ns(), words, sizeof(words));
		snprintf(reason, sizeof(reason), "[wait: %s]", words);
		record_finish_wait(rec, &s, r, n, &cut, reason, clock_now_ns());
		rec->stats.off_cpu_initial++;
	}
	rec->in_child = false;
	free(tids);
}

void record_offcpu_initial(struct recorder *rec)
{
	pid_t tree[OFFCPU_TREE_MAX];
	void *stack = NULL;
	size_t n = 0;

	if (!rec->offcpu || !rec->opts.pid || !(rec->opts.off_cpu || rec->opts.wall) || !rec->pf)
		return;
	if (rec->opts.native)
		stack = malloc(rec->opts.stack_size);
	initial_waits(rec, rec->pid, rec->pf, stack);
	/* --subprocesses: the processes it started before the attach, and theirs */
	if (rec->opts.subprocesses)
		n = procfs_descendants(rec->pid, tree, OFFCPU_TREE_MAX);
	for (size_t i = 0; i < n; i++)
		initial_waits(rec, tree[i], record_proc_python(rec, tree[i]), stack);
	free(stack);
}
