/*
 * fallback: the mode a recording runs in and the fallbacks when the target or the machine
 * refuses (record.h, "The mode and its fallbacks"): told to the caller as notes, never said.
 */
#include <errno.h>

#include "record/internal.h"

static void note(const struct record_fallback *f, enum record_note n, int err, const char *name)
{
	if (f->note_fn)
		f->note_fn(f->note_ctx, n, err, name);
}

bool record_event_kernel_only(const struct event_spec *e)
{
	return e->attr.type == PERF_TYPE_SOFTWARE &&
	       (e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
		e->attr.config == PERF_COUNT_SW_CGROUP_SWITCHES ||
		e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS);
}

bool record_event_samples_asleep(const struct event_spec *e)
{
	return e->kind == EVENT_TRACEPOINT ||
	       (e->attr.type == PERF_TYPE_SOFTWARE &&
		(e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
		 e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS));
}

bool record_events_user_only(struct event_spec *events, size_t n)
{
	bool changed = false;

	for (size_t i = 0; i < n; i++) {
		struct perf_event_attr *a = &events[i].attr;

		if (!a->exclude_kernel || !a->exclude_hv)
			changed = true;
		a->exclude_kernel = 1;
		a->exclude_hv = 1;
	}
	return changed;
}

/* The signal mode records user space alone, no switch, no other process (sampler.h) */
static bool record_signal_fits(const struct record_opts *o)
{
	return !o->kernel && !o->off_cpu && !o->wall && !o->gil_waits && !o->subprocesses &&
	       !o->argv && !record_event_samples_asleep(&o->events[0]) &&
	       !record_event_kernel_only(&o->events[0]);
}

enum record_mode recorder_choose_mode(struct recorder *rec, const struct record_fallback *f)
{
	const struct record_opts *o = &rec->opts;
	const struct event_spec *e = &o->events[0];
	enum record_mode m = f->mode;
	bool nonblocking = m == RECORD_NONBLOCKING, stops = m == RECORD_STOPS && !f->auto_mode;

	if (f->auto_mode && e->kind == EVENT_TRACEPOINT) {
		/* the capture is a perf-event program, which the kernel attaches to software and
		 * hardware events only; a stop where a thread goes to sleep would interrupt its call */
		note(f, RECORD_NOTE_TRACEPOINT, 0, e->name);
		nonblocking = true;
	}
	if (f->auto_mode && !nonblocking && !stops) {
		int r = sampler_capture_probe();

		int sr = f->self ? sampler_signal_probe() : -EINVAL;

		if (r == 0) {
			m = RECORD_CAPTURE;
		} else if (f->self && record_signal_fits(o) && sr == 0) {
			/* the calling process: a signal copies its frames at the overflow */
			note(f, RECORD_NOTE_SIGNAL, r, NULL);
			m = RECORD_SIGNAL;
		} else if (record_event_samples_asleep(e) || o->wall || f->self) {
			/* --wall samples every switch off the CPU too; the calling process is never
			 * stopped */
			note(f, RECORD_NOTE_NO_CAPTURE_ASLEEP, r, NULL);
			if (f->self && record_signal_fits(o))
				note(f, RECORD_NOTE_NO_SIGNAL, sr, NULL);
			nonblocking = true;
		} else {
			note(f, RECORD_NOTE_NO_CAPTURE, r, NULL);
			m = RECORD_STOPS;
		}
	}
	if (nonblocking)
		m = RECORD_NONBLOCKING;
	recorder_set_mode(rec, m);
	return m;
}

int recorder_start_fallback(struct recorder *rec, const struct record_fallback *f,
			    struct event_spec *events)
{
	const struct record_opts *o = &rec->opts;
	int r = recorder_start(rec);

	if (r == -EBUSY && recorder_mode(rec) == RECORD_SIGNAL) {
		/* a SIGTRAP handler of the host's came meanwhile: it keeps it */
		note(f, RECORD_NOTE_NO_SIGNAL, r, NULL);
		recorder_set_mode(rec, RECORD_NONBLOCKING);
		r = recorder_start(rec);
	}
	if ((r == -EPERM || r == -EBUSY) && recorder_mode(rec) == RECORD_STOPS) {
		note(f, r == -EBUSY ? RECORD_NOTE_STOPS_BUSY : RECORD_NOTE_STOPS_REFUSED, r, NULL);
		recorder_set_mode(rec, RECORD_NONBLOCKING);
		r = recorder_start(rec);
	}
	/* as perf does: where kernel-mode counting is refused, count user space only; not for
	 * switches sampled (--off-cpu, --wall, -e context-switches), which happen in the kernel */
	if (r == -EACCES && !o->kernel && !o->off_cpu && !o->wall &&
	    !record_event_kernel_only(&events[0]) && record_events_user_only(events, o->n_events)) {
		note(f, RECORD_NOTE_USER_ONLY, r, NULL);
		r = recorder_start(rec);
	}
	return r;
}
