/*
 * count_sample: a sampling run's samples by the event that took each and the innermost Python
 * function each ran (analysis/stat.h's struct stat_tally): the recorder's sink, and what the
 * findings name functions by (stat_functions()).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stat.h"
#include "base/array.h"
#include "base/buf.h"
#include "output/output.h"

/* Room in e's counts for frame id: false if out of memory. */
static bool tally_room(struct stat_tally_event *e, uint32_t id)
{
	size_t cap_a = e->cap, cap_b = e->cap;

	/* samples and weight share cap, their new parts zeroed: it moves once both have grown */
	if (array_grow((void **) &e->samples, &cap_a, (size_t) id + 1, sizeof(*e->samples), 64) < 0 ||
	    array_grow((void **) &e->weight, &cap_b, (size_t) id + 1, sizeof(*e->weight), 64) < 0)
		return false;
	e->cap = cap_a;
	return true;
}

int stat_tally_sample(void *ctx, const struct record_sample *s)
{
	struct stat_tally *t = ctx;
	struct stat_tally_event *e;

	if (!t->prof || s->event >= t->n_events || 1 + s->event >= s->n_values)
		return 0;
	if (s->late_ns && t->rec && recorder_mode(t->rec) != RECORD_NONBLOCKING) {
		t->late++;
		return 0;
	}
	e = &t->ev[s->event];
	/* the sample's weight to its innermost Python frame */
	for (size_t d = s->depth; d-- > 0;) {
		if (profile_frame(t->prof, s->frames[d])->kind != FRAME_PYTHON)
			continue;
		if (!tally_room(e, s->frames[d])) {
			t->failed = true;
			return -ENOMEM;
		}
		e->samples[s->frames[d]]++;
		e->weight[s->frames[d]] += s->values[1 + s->event];
		e->n_samples++;
		e->n_weight += s->values[1 + s->event];
		break;
	}
	return 0;
}

void stat_tally_release(struct stat_tally *t)
{
	for (size_t i = 0; i < SAMPLER_MAX_EVENTS; i++) {
		free(t->ev[i].samples);
		free(t->ev[i].weight);
	}
	memset(t->ev, 0, sizeof(t->ev));
}

size_t stat_functions(void *ctx, const char *ev, struct stat_func *ret, size_t max,
		      uint64_t *ret_samples)
{
	const struct stat_tally *t = ctx;
	const struct stat_tally_event *e = NULL;
	size_t n = 0;
	bool *named;
	struct buf text;

	*ret_samples = 0;
	for (size_t i = 0; i < t->n_events && !e; i++)
		if (stat_same_event(t->events[i].name, ev))
			e = &t->ev[i];
	if (!e || !e->n_weight)
		return 0;
	*ret_samples = e->n_samples;
	if (e->n_samples < STAT_MIN_SAMPLES)
		return 0;
	named = calloc(e->cap, sizeof(*named));
	if (!named)
		return 0;
	buf_init(&text);
	while (n < max) {
		size_t best = SIZE_MAX;

		for (size_t id = 0; id < e->cap; id++)
			if (!named[id] && e->weight[id] &&
			    (best == SIZE_MAX || e->weight[id] > e->weight[best]))
				best = id;
		if (best == SIZE_MAX || (double) e->weight[best] < 0.05 * (double) e->n_weight)
			break;
		named[best] = true;
		buf_reset(&text);
		(void) folded_frame_text(profile_frame(t->prof, (uint32_t) best), &text);
		ret[n] = (struct stat_func) {
			.share = (double) e->weight[best] / (double) e->n_weight,
			.samples = e->samples[best],
		};
		snprintf(ret[n].text, sizeof(ret[n].text), "%s", text.len ? text.data : "?");
		n++;
	}
	buf_release(&text);
	free(named);
	return n;
}
