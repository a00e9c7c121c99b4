/*
 * events.c: the events section of hwspy.h over sampler/'s event names (events_parse() and the
 * table): a list of parsed events behind a handle, their facts, the PMUs and tracefs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/internal.h"
#include "lib/lib.h"
#include "output/ratios.h"
#include "record/record.h"
#include "sampler/events.h"

int hwspy_events_new(struct hwspy_events **ret)
{
	lib_reason_clear();
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : lib_fail(-ENOMEM, "out of memory");
}

void hwspy_events_free(struct hwspy_events *ev)
{
	free(ev);
}

int hwspy_events_add(struct hwspy_events *ev, const char *name)
{
	int r;

	lib_reason_clear();
	if (ev->n == HWSPY_MAX_EVENTS)
		return lib_fail(-E2BIG, "more than %d events", HWSPY_MAX_EVENTS);
	r = events_parse(name, &ev->spec[ev->n]);
	if (r == -ENOENT)
		return lib_fail(r, "unknown event '%s'", name);
	if (r < 0)
		return lib_fail(r, "malformed event '%s'", name);
	return (int) ev->n++;
}

int hwspy_events_add_list(struct hwspy_events *ev, const char *list)
{
	char items[HWSPY_MAX_EVENTS][96];
	int n = events_split(list, items, HWSPY_MAX_EVENTS - ev->n);

	lib_reason_clear();
	if (n == -E2BIG)
		return lib_fail(n, "more than %d events", HWSPY_MAX_EVENTS);
	if (n < 0)
		return lib_fail(n, "malformed event list '%s'", list);
	for (int i = 0; i < n; i++) {
		int r = hwspy_events_add(ev, items[i]);

		if (r < 0)
			return r;
	}
	return n;
}

size_t hwspy_events_count(const struct hwspy_events *ev)
{
	return ev->n;
}

const char *hwspy_events_name(const struct hwspy_events *ev, size_t i)
{
	return i < ev->n ? ev->spec[i].name : NULL;
}

static enum hwspy_event_kind public_kind(enum event_kind k)
{
	switch (k) {
	case EVENT_HARDWARE: return HWSPY_EVENT_HARDWARE;
	case EVENT_HW_CACHE: return HWSPY_EVENT_HW_CACHE;
	case EVENT_SOFTWARE: return HWSPY_EVENT_SOFTWARE;
	case EVENT_RAW: return HWSPY_EVENT_RAW;
	case EVENT_PMU: return HWSPY_EVENT_PMU;
	default: return HWSPY_EVENT_TRACEPOINT;
	}
}

static enum event_kind internal_kind(enum hwspy_event_kind k)
{
	switch (k) {
	case HWSPY_EVENT_HARDWARE: return EVENT_HARDWARE;
	case HWSPY_EVENT_HW_CACHE: return EVENT_HW_CACHE;
	case HWSPY_EVENT_SOFTWARE: return EVENT_SOFTWARE;
	case HWSPY_EVENT_RAW: return EVENT_RAW;
	case HWSPY_EVENT_PMU: return EVENT_PMU;
	default: return EVENT_TRACEPOINT;
	}
}

enum hwspy_event_kind hwspy_events_kind(const struct hwspy_events *ev, size_t i)
{
	return public_kind(ev->spec[i].kind);
}

const char *hwspy_event_kind_name(enum hwspy_event_kind kind)
{
	return event_kind_name(internal_kind(kind));
}

bool hwspy_events_counts_occurrences(const struct hwspy_events *ev, size_t i)
{
	return events_counts_occurrences(&ev->spec[i].attr);
}

bool hwspy_events_kernel_only(const struct hwspy_events *ev, size_t i)
{
	return record_event_kernel_only(&ev->spec[i]);
}

bool hwspy_events_samples_asleep(const struct hwspy_events *ev, size_t i)
{
	return record_event_samples_asleep(&ev->spec[i]);
}

bool hwspy_events_user_only(const struct hwspy_events *ev, size_t i)
{
	return ev->spec[i].attr.exclude_kernel;
}

bool hwspy_events_set_user_only(struct hwspy_events *ev, size_t i)
{
	return record_events_user_only(&ev->spec[i], 1);
}

int hwspy_events_probe(const struct hwspy_events *ev, size_t i, pid_t pid)
{
	int r;

	lib_reason_clear();
	r = events_probe(&ev->spec[i], pid);
	if (r == -ENOENT)
		return lib_fail(r, "event '%s' is not supported on this machine", ev->spec[i].name);
	return r < 0 ? lib_fail_errno(r, "cannot open event '%s'", ev->spec[i].name) : 0;
}

enum hwspy_probe_result hwspy_event_probe_name(const char *name, int *ret_error)
{
	struct event_spec spec;
	enum event_kind kind;
	bool user_only = false;
	int r;

	*ret_error = 0;
	if (events_parse(name, &spec) < 0)
		return HWSPY_PROBE_UNPARSED;
	kind = spec.kind;
	r = events_probe(&spec, 0);
	if (r == -EACCES || r == -EPERM) {
		/* perf_event_paranoid >= 2 refuses kernel counting to unprivileged users: try
		 * user space only (this also tells "no such event" from "not allowed") */
		(void) record_events_user_only(&spec, 1);
		r = events_probe(&spec, 0);
		user_only = true;
	}
	*ret_error = r;
	if (r == 0)
		return user_only ? HWSPY_PROBE_USER_ONLY : HWSPY_PROBE_OK;
	if (r == -ENOENT || r == -EOPNOTSUPP)
		return !events_have_hw_pmu() && (kind == EVENT_HARDWARE || kind == EVENT_HW_CACHE ||
						 kind == EVENT_RAW) ? HWSPY_PROBE_NO_PMU
		       : HWSPY_PROBE_UNSUPPORTED;
	if (r == -EACCES || r == -EPERM)
		return HWSPY_PROBE_NOT_ALLOWED;
	return r == -EINVAL ? HWSPY_PROBE_INVALID : HWSPY_PROBE_ERROR;
}

/* sampler/'s table in the public struct, made once (a static table: nothing to free) */
static struct hwspy_event_info *table;
static size_t table_n;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_make(void)
{
	size_t n;
	const struct event_info *in = events_table(&n);
	struct hwspy_event_info *t = calloc(n ? n : 1, sizeof(*t));

	if (!t)
		return;
	for (size_t i = 0; i < n; i++)
		t[i] = (struct hwspy_event_info) { .name = in[i].name, .alias = in[i].alias,
						   .kind = public_kind(in[i].kind), .desc = in[i].desc };
	table = t;
	table_n = n;
}

const struct hwspy_event_info *hwspy_event_table(size_t *ret_n)
{
	(void) pthread_once(&table_once, table_make);
	*ret_n = table ? table_n : 0;
	return table;
}

size_t hwspy_events_suggest(const char *name, const char **ret_names, size_t max)
{
	return events_suggest(name, ret_names, max);
}

size_t hwspy_pmus(char (*ret)[64], size_t max)
{
	return events_list_pmus(ret, max);
}

int hwspy_pmu_type(const char *pmu, unsigned *ret)
{
	struct event_spec spec;
	char probe[96];

	/* "PMU//" parses to an attr holding the PMU's type number */
	snprintf(probe, sizeof(probe), "%s//", pmu);
	if (events_parse(probe, &spec) < 0)
		return -ENOENT;
	*ret = spec.attr.type;
	return 0;
}

bool hwspy_have_hw_pmu(void)
{
	return events_have_hw_pmu();
}

const char *hwspy_event_no_pmu(const char *name, const char **ret_family)
{
	struct event_spec spec;
	const char *family, *advice = NULL;

	if (events_parse(name, &spec) == 0)
		advice = events_no_pmu(&spec, &family);
	if (ret_family)
		*ret_family = advice ? family : NULL;
	return advice;
}

int hwspy_tracefs_state(void)
{
	return events_tracefs();
}

int hwspy_events_split(const char *list, char (*ret)[96], size_t max)
{
	return events_split(list, ret, max);
}

bool hwspy_events_counts_on_cpu(const struct hwspy_events *ev, size_t i)
{
	const struct event_spec *e = &ev->spec[i];

	if (e->kind == EVENT_HARDWARE || e->kind == EVENT_HW_CACHE || e->kind == EVENT_RAW)
		return true;
	return e->attr.type == PERF_TYPE_SOFTWARE && (e->attr.config == PERF_COUNT_SW_CPU_CLOCK ||
						      e->attr.config == PERF_COUNT_SW_TASK_CLOCK);
}

/* A frame's ratio is of its own samples of each event, not of counts read at events[0]'s
 * samples (those would credit a function with what ran just before it); a tracepoint stays a
 * member (no capture attaches to it). */
uint32_t hwspy_events_color_leaders(const struct hwspy_events *ev, const char *metric)
{
	const char *names[HWSPY_MAX_EVENTS];
	uint32_t leaders = 0;
	struct profile *p;
	struct ratio q;

	if (!metric || ev->n < 2)
		return 0;
	for (size_t i = 0; i < ev->n; i++)
		names[i] = ev->spec[i].name;
	p = profile_new(names, ev->n);
	if (p && ratio_metric(p, metric, &q, NULL) == 0) {
		size_t cols[] = { q.num, q.den };

		for (size_t k = 0; k < 2; k++)
			if (cols[k] > 1 && ev->spec[cols[k] - 1].kind != EVENT_TRACEPOINT)
				leaders |= 1u << (cols[k] - 1);
	}
	profile_free(p);
	return leaders;
}

size_t hwspy_events_working(const char **ret, size_t max)
{
	size_t n, shown = 0;
	const struct event_info *tab = events_table(&n);

	for (size_t i = 0; i < n && shown < max; i++) {
		struct event_spec spec;

		if (tab[i].kind != EVENT_SOFTWARE || events_parse(tab[i].name, &spec) < 0 ||
		    events_probe(&spec, 0) < 0)
			continue;
		ret[shown++] = tab[i].name;
	}
	return shown;
}
