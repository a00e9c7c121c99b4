/*
 * count_sample: the sampling run beside the counters: its events (stat_sampling_events()), its
 * samples by the event that took each and the innermost Python function each ran
 * (analysis/stat.h's struct stat_tally), and what the findings name functions by
 * (stat_functions()).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stat.h"
#include "base/array.h"
#include "base/buf.h"
#include "output/label.h"
#include "output/output.h"

#define RULE_EVENTS 16                  /* the events the findings name functions by, at most */

size_t stat_sampling_events(const struct stat_setup *s, struct event_spec *ret, size_t max,
			    uint32_t *ret_leaders)
{
	const char *names[RULE_EVENTS];
	size_t n = 0, n_ret = 1, n_ev = s->n_events < STAT_MAX_EVENTS ? s->n_events : STAT_MAX_EVENTS;
	struct stat_rule_info rule;
	char how[512];

	*ret_leaders = 0;
	/* the events the findings name functions by, each once */
	for (size_t i = 0; n < RULE_EVENTS && stat_rule(i, &rule, how, sizeof(how)); i++) {
		bool seen = false;

		for (size_t k = 0; rule.by && k < n; k++)
			seen |= !strcmp(names[k], rule.by);
		if (rule.by && !seen)
			names[n++] = rule.by;
	}
	if (events_parse("cycles", &ret[0]) < 0 ||
	    (stat_user_only_event(s, &ret[0]), events_probe(&ret[0], 0) < 0)) {
		(void) events_parse("cpu-clock", &ret[0]);
		stat_user_only_event(s, &ret[0]);
	}
	for (size_t i = 0; i < n && n_ret < max; i++) {
		struct event_spec *e = &ret[n_ret];
		bool counted = false;

		for (size_t k = 0; k < n_ev; k++)
			counted |= stat_same_event(s->events[k].name, names[i]);
		if (!counted || stat_same_event(names[i], ret[0].name) ||
		    events_parse(names[i], e) < 0)
			continue;
		stat_user_only_event(s, e);
		/* in user space alone a switch counts none: not a column to name functions by */
		if ((s->user_only && stat_kernel_only(e)) || events_probe(e, 0) < 0)
			continue;
		*ret_leaders |= 1u << n_ret;
		n_ret++;
	}
	return n_ret;
}

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

int stat_tally_add(struct stat_tally *t, const uint32_t *frames, size_t depth,
		   const uint64_t *values, size_t n_values, size_t event, bool late)
{
	struct stat_tally_event *e;

	if (!t->prof || event >= t->n_events || 1 + event >= n_values)
		return 0;
	if (late) {
		t->late++;
		return 0;
	}
	e = &t->ev[event];
	/* the sample's weight to its innermost Python frame */
	for (size_t d = depth; d-- > 0;) {
		if (profile_frame(t->prof, frames[d])->kind != FRAME_PYTHON)
			continue;
		if (!tally_room(e, frames[d])) {
			t->failed = true;
			return -ENOMEM;
		}
		e->samples[frames[d]]++;
		e->weight[frames[d]] += values[1 + event];
		e->n_samples++;
		e->n_weight += values[1 + event];
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
	struct label_paths lp;
	size_t n = 0;
	bool *named;
	struct buf text, label;

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
	buf_init(&label);
	label_paths_init(&lp, t->prof);
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
		buf_reset(&label);
		(void) folded_frame_text(profile_frame(t->prof, (uint32_t) best), &text);
		(void) label_frame(profile_frame(t->prof, (uint32_t) best), &lp, &label);
		ret[n] = (struct stat_func) {
			.share = (double) e->weight[best] / (double) e->n_weight,
			.samples = e->samples[best],
		};
		snprintf(ret[n].text, sizeof(ret[n].text), "%s", text.len ? text.data : "?");
		snprintf(ret[n].label, sizeof(ret[n].label), "%s", label.len ? label.data : "");
		n++;
	}
	buf_release(&text);
	buf_release(&label);
	free(named);
	return n;
}
