/*
 * offcpu: --off-cpu. Every switch-out of a target thread is a sample (the sampler's
 * context-switch event, its Python stack captured at the switch); it weighs the nanoseconds
 * until that thread is switched in again, which the switch records tell (sampler events,
 * perf's timestamps). Its stack waits here, resolved and with its reason named
 * (record_wait_reason()), until that time is known: at the thread's next switch-out, whose
 * ring holds the switch-in before it (the thread ran on that CPU in between), so that the
 * switch-in between the two is known whichever CPU rings were read first; or at the end of
 * the run (a thread still waiting then weighs until the end). An involuntary switch, told
 * by its switch-out record just after the sample, makes the leaf [preempted] instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "record/internal.h"

#define OFFCPU_INS 8                    /* switch-ins kept per thread, not matched yet */
#define OFFCPU_MAX_THREADS 65536
#define OFFCPU_PREEMPT_WINDOW_NS 1000000 /* a switch-out record within this of its sample */

struct offcpu_thread {
	pid_t tid;
	bool pending, preempted;
	uint64_t out_ns;
	uint32_t *ids;                  /* the waiting sample's stack, its reason the last */
	size_t depth, cap;
	uint64_t values[SAMPLER_MAX_EVENTS + 1];
	size_t n_values;
	uint64_t ins[OFFCPU_INS];       /* ascending */
	size_t n_ins;
};

struct offcpu {
	struct offcpu_thread *t;
	size_t n, cap, last;
	uint32_t preempted_frame;
	uint64_t last_ns;               /* the latest time of a sample or switch seen */
};

static struct offcpu_thread *thread_of(struct recorder *rec, pid_t tid, bool add)
{
	struct offcpu *oc = rec->offcpu;
	struct offcpu_thread *t;

	if (oc->last < oc->n && oc->t[oc->last].tid == tid)
		return &oc->t[oc->last];
	for (size_t i = 0; i < oc->n; i++) {
		if (oc->t[i].tid == tid) {
			oc->last = i;
			return &oc->t[i];
		}
	}
	if (!add || oc->n == OFFCPU_MAX_THREADS)
		return NULL;
	if (oc->n == oc->cap) {
		size_t cap = oc->cap ? oc->cap * 2 : 64;
		struct offcpu_thread *v = realloc(oc->t, cap * sizeof(*v));

		if (!v)
			return NULL;
		oc->t = v;
		oc->cap = cap;
	}
	t = &oc->t[oc->n];
	*t = (struct offcpu_thread) { .tid = tid };
	oc->last = oc->n++;
	return t;
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
	for (size_t i = 0; i < oc->n; i++)
		free(oc->t[i].ids);
	free(oc->t);
	free(oc);
	rec->offcpu = NULL;
}

/* The waiting sample of t, weighing in_ns - its switch-out, to the sink. */
static void emit(struct recorder *rec, struct offcpu_thread *t, uint64_t in_ns)
{
	struct record_sample out;

	t->pending = false;
	if (t->preempted)
		t->ids[t->depth - 1] = rec->offcpu->preempted_frame;
	t->values[1] = in_ns > t->out_ns ? in_ns - t->out_ns : 0;
	out = (struct record_sample) {
		.tid = t->tid, .time_ns = t->out_ns, .frames = t->ids, .depth = t->depth,
		.values = t->values, .n_values = t->n_values,
	};
	rec->stats.off_cpu_ns += t->values[1];
	if (rec->sink.sample(rec->sink.ctx, &out) < 0)
		rec->stats.add_failed++;
}

/* The first switch-in of t after its switch-out, at most until (0: any); 0 if none. */
static uint64_t first_in(const struct offcpu_thread *t, uint64_t until)
{
	for (size_t i = 0; i < t->n_ins; i++)
		if (t->ins[i] > t->out_ns && (!until || t->ins[i] <= until))
			return t->ins[i];
	return 0;
}

/* Switch-ins up to t's switch-out are spent. */
static void forget_ins(struct offcpu_thread *t)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n_ins; i++)
		if (t->ins[i] > t->out_ns)
			t->ins[k++] = t->ins[i];
	t->n_ins = k;
}

void record_offcpu_sample(struct recorder *rec, const struct record_sample *s, const char *reason)
{
	struct offcpu *oc = rec->offcpu;
	struct offcpu_thread *t = thread_of(rec, s->tid, true);
	struct profile_frame f = { .kind = FRAME_WAIT, .name = reason };
	uint32_t reason_id;

	if (s->time_ns > oc->last_ns)
		oc->last_ns = s->time_ns;
	if (!t || profile_frame_id(rec->prof, &f, &reason_id) < 0) {
		rec->stats.add_failed++;
		return;
	}
	if (t->pending) {
		/* it ran in between: its switch-in came first in this sample's ring (lost, if
		 * none: then it ran by now at the latest) */
		uint64_t in = first_in(t, s->time_ns);

		emit(rec, t, in ? in : s->time_ns);
	}
	if (t->cap < s->depth + 1) {
		uint32_t *v = realloc(t->ids, (s->depth + 1) * sizeof(*v));

		if (!v) {
			rec->stats.add_failed++;
			return;
		}
		t->ids = v;
		t->cap = s->depth + 1;
	}
	memcpy(t->ids, s->frames, s->depth * sizeof(*t->ids));
	t->ids[s->depth] = reason_id;
	t->depth = s->depth + 1;
	t->n_values = s->n_values < SAMPLER_MAX_EVENTS + 1 ? s->n_values : SAMPLER_MAX_EVENTS + 1;
	memcpy(t->values, s->values, t->n_values * sizeof(*t->values));
	t->out_ns = s->time_ns;
	t->preempted = false;
	t->pending = true;
	forget_ins(t);
}

void record_offcpu_switch(struct recorder *rec, const struct sampler_event *e)
{
	struct offcpu *oc = rec->offcpu;
	struct offcpu_thread *t;
	size_t i;

	if (!oc)
		return;
	if (e->time_ns > oc->last_ns)
		oc->last_ns = e->time_ns;
	t = thread_of(rec, e->tid, e->kind == SAMPLER_EVENT_SWITCH_IN);
	if (!t)
		return;
	if (e->kind == SAMPLER_EVENT_SWITCH_OUT) {
		if (t->pending && e->time_ns >= t->out_ns &&
		    e->time_ns - t->out_ns < OFFCPU_PREEMPT_WINDOW_NS)
			t->preempted = e->preempted;
		return;
	}
	if (t->n_ins == OFFCPU_INS) {
		memmove(t->ins, t->ins + 1, (OFFCPU_INS - 1) * sizeof(*t->ins));
		t->n_ins--;
	}
	for (i = t->n_ins; i > 0 && t->ins[i - 1] > e->time_ns; i--)
		t->ins[i] = t->ins[i - 1];
	t->ins[i] = e->time_ns;
	t->n_ins++;
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
		uint64_t in;

		if (!t->pending)
			continue;
		in = first_in(t, 0);
		emit(rec, t, in ? in : end > t->out_ns ? end : t->out_ns);
	}
}
