/*
 * gil: whether each sample's thread held the GIL (from its capture, else read live), the
 * capture program made again once what it lacked turns up (the GIL, the GC's flag), the
 * --gil filter, and each thread's GIL counts (record.h, struct record_gil_thread). Every
 * finished sample passes record_gil_sink() on its way to the caller's sink, so the off-CPU
 * samples too, which weigh their [wait: GIL] time there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/clock.h"
#include "record/internal.h"

int record_gil_at_sample(struct recorder *rec, const struct sample *s)
{
	const struct sample_capture *c = s->capture;
	struct pyframes_gil g;
	uint64_t tstate;

	if (c && rec->capture_gen == rec->pf_gen && c->gil_known)
		return c->gil_held ? RECORD_GIL_HELD : RECORD_GIL_FREE;
	/* live: exact while the thread is stopped, else as late as the sample's read; one read
	 * long after (a launched command's first samples, waiting for its interpreter to be
	 * found) says nothing of the sample: the thread may have let the GIL go since */
	if (!rec->pf || pyframes_gil(rec->pf, &g) < 0 || !g.known)
		return RECORD_GIL_UNKNOWN;
	rec->stats.gil_live++;
	rec->stats.gil_late += !s->stopped;
	if (!s->stopped && s->time_ns && clock_now_ns() > s->time_ns + RECORD_STALE_READ_NS)
		return RECORD_GIL_UNKNOWN;
	if (!g.locked)
		return RECORD_GIL_FREE;
	if (pyframes_thread_state(rec->pf, s->tid, &tstate) < 0)
		return RECORD_GIL_UNKNOWN;
	return g.holder == tstate ? RECORD_GIL_HELD : RECORD_GIL_FREE;
}

int record_gil_capture_late(struct recorder *rec)
{
	struct sampler_capture_spec ss;
	int r;

	if ((rec->capture_gil && rec->capture_gc) || rec->stats.capture_error ||
	    rec->capture_gil_tries >= RECORD_GIL_TRIES)
		return 0;
	rec->capture_gil_tries++;
	r = record_capture_spec(rec, &ss);
	/* made again only for what the program lacks and has turned up since */
	if (r < 0 || !((ss.gil_at && !rec->capture_gil) || (ss.gc_at && !rec->capture_gc)))
		return r;
	ss.n_extras = rec->capture_extras;      /* what this kernel took */
	r = sampler_capture_start(rec->sampler, &ss);
	if (r >= 0) {
		rec->capture_gil = ss.gil_at != 0;
		rec->capture_gc = ss.gc_at != 0;
	} else {
		rec->capture_gil_tries = RECORD_GIL_TRIES;      /* the program as it was goes on */
	}
	return r;
}

/* The thread's counts, made at its first sample (NULL: out of memory, or too many threads). */
static struct record_gil_thread *gil_thread(struct recorder *rec, pid_t tid)
{
	struct record_gils *g = &rec->gil;
	struct record_gil_thread *t;

	if (g->last < g->n && g->t[g->last].tid == tid)
		return &g->t[g->last];
	for (size_t i = 0; i < g->n; i++) {
		if (g->t[i].tid == tid) {
			g->last = i;
			return &g->t[i];
		}
	}
	if (g->n == RECORD_GIL_MAX_THREADS)
		return NULL;
	if (array_grow((void **) &g->t, &g->cap, g->n + 1, sizeof(*g->t), 16) < 0)
		return NULL;
	t = &g->t[g->n];
	*t = (struct record_gil_thread) { .tid = tid };
	g->last = g->n++;
	return t;
}

/* Whether an off-CPU sample's leaf is the GIL's wait (wait.c names it so). */
static bool waits_for_gil(const struct recorder *rec, const struct record_sample *s)
{
	const struct profile_frame *f;

	if (!s->depth)
		return false;
	f = profile_frame(rec->prof, s->frames[s->depth - 1]);
	return f && f->kind == FRAME_WAIT && f->name && !strcmp(f->name, RECORD_GIL_WAIT_FRAME);
}

int record_gil_sink(void *ctx, const struct record_sample *s)
{
	struct recorder *rec = ctx;
	struct record_gil_thread *t = gil_thread(rec, s->tid);
	uint64_t w = s->n_values > 1 ? s->values[1] : 0;

	if (!t) {
		rec->stats.gil_untallied++;
	} else if (s->off_cpu) {
		/* values[1]: the time until its thread ran again */
		t->off_ns += w;
		if (waits_for_gil(rec, s))
			t->gil_wait_ns += w;
		if (!t->first_ns || s->time_ns < t->first_ns)
			t->first_ns = s->time_ns;
		if (s->time_ns + w > t->last_ns)
			t->last_ns = s->time_ns + w;
	} else {
		t->samples++;
		t->weight += w;
		t->known += s->gil != RECORD_GIL_UNKNOWN;
		t->held += s->gil == RECORD_GIL_HELD;
	}
	if (s->off_cpu && rec->opts.gil_waits && !rec->opts.wall && !rec->opts.off_cpu)
		return 0;               /* counted for the GIL, not profiled */
	if (rec->opts.gil_only && s->gil != RECORD_GIL_HELD) {
		if (s->gil == RECORD_GIL_UNKNOWN)
			rec->stats.gil_dropped_unknown++;
		else
			rec->stats.gil_dropped_free++;
		return 0;
	}
	return rec->user_sink.sample(rec->user_sink.ctx, s);
}

void record_gil_free(struct recorder *rec)
{
	free(rec->gil.t);
	rec->gil = (struct record_gils) { 0 };
}
