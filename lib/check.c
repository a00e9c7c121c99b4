/*
 * check.c: the recording section's checks (hwspy_record_check(), hwspy_record_check_target()):
 * what a recording's options decide before anything is opened, attached or written (the
 * default event: cycles, else cpu-clock; off_cpu's and wall's events; a count event's fixed
 * period), and what they refuse (options that exclude each other, an event that does not open
 * here, kernel samples refused where an event happens in the kernel alone, by stops an event
 * that samples threads as they sleep; no such process, a kernel thread, a command that cannot
 * be run), each a code of enum hwspy_check for the client's words.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/internal.h"
#include "lib/lib.h"
#include "record/record.h"

static int fail(struct hwspy_record_check *c, enum hwspy_check f, size_t ev, int r,
		const char *why)
{
	c->fail = f;
	c->event = ev;
	c->err = r;
	c->usage = f < HWSPY_CHECK_NO_EVENT;
	return lib_fail(r, "%s", why);
}

/* off_cpu: every switch out (context-switches at period 1); wall: cpu-clock at the rate */
static int mode_event(struct hwspy_record_opts *o, struct hwspy_events *ev, bool rate_given,
		      struct hwspy_record_check *c)
{
	const char *name = o->wall ? "cpu-clock" : "context-switches";

	if (o->wall && o->off_cpu)
		return fail(c, HWSPY_CHECK_WALL_OFF_CPU, 0, -EINVAL, "wall holds off_cpu's samples");
	if (o->wall && (ev->n || o->period))
		return fail(c, HWSPY_CHECK_WALL_EVENTS, 0, -EINVAL, "wall takes no events or period");
	if (o->wall && o->mode == HWSPY_RECORD_STOPS)
		return fail(c, HWSPY_CHECK_WALL_STOPS, 0, -EINVAL, "wall cannot stop threads");
	if (o->off_cpu && ev->n)
		return fail(c, HWSPY_CHECK_OFF_CPU_EVENTS, 0, -EINVAL, "off_cpu takes no events");
	if (o->off_cpu && (rate_given || o->period))
		return fail(c, HWSPY_CHECK_OFF_CPU_RATE, 0, -EINVAL, "off_cpu takes every switch");
	if (events_parse(name, &ev->spec[0]) < 0)
		return fail(c, HWSPY_CHECK_NO_EVENT, 0, -ENOENT, "no such event");
	ev->n = 1;
	if (o->off_cpu) {
		o->freq = 0;
		o->period = 1;
	}
	return 0;
}

/* cycles where it opens, else cpu-clock */
static int default_event(struct hwspy_events *ev, struct hwspy_record_check *c)
{
	ev->n = 1;
	if (events_parse("cycles", &ev->spec[0]) == 0 && events_probe(&ev->spec[0], 0) == 0)
		return 0;
	if (events_parse("cpu-clock", &ev->spec[0]) < 0)
		return fail(c, HWSPY_CHECK_NO_EVENT, 0, -ENOENT, "no such event");
	c->default_cpu_clock = true;
	return 0;
}

static int open_events(const struct hwspy_events *ev, struct hwspy_record_check *c)
{
	for (size_t i = 0; i < ev->n; i++) {
		const struct event_spec *e = &ev->spec[i];
		int r = events_probe(e, 0);

		if (r >= 0 || r == -EACCES || r == -EPERM)
			continue;
		if ((r == -ENOENT || r == -EOPNOTSUPP) && (e->kind == EVENT_HARDWARE ||
		     e->kind == EVENT_HW_CACHE || e->kind == EVENT_RAW) && !events_have_hw_pmu())
			return fail(c, HWSPY_CHECK_EVENT_NO_PMU, i, r, "no hardware PMU");
		if (r == -ENOENT || r == -EOPNOTSUPP)
			return fail(c, HWSPY_CHECK_EVENT_UNSUPPORTED, i, r, "not supported here");
		return fail(c, HWSPY_CHECK_EVENT_FAILED, i, r, "cannot open an event");
	}
	return 0;
}

/* Samples of what happens in the kernel alone (off_cpu's and wall's switches, a sampled
 * context-switches or cpu-migrations) where kernel mode is refused (tried on the calling
 * process, as the target's own user would be): refused now, rather than a user-space-only
 * run that samples nothing. */
static int kernel_events(const struct hwspy_record_opts *o, const struct hwspy_events *ev,
			 struct hwspy_record_check *c)
{
	const struct event_spec *e = &ev->spec[0];
	struct event_spec probe = *e;
	int r;

	c->migrations = e->attr.type == PERF_TYPE_SOFTWARE &&
			e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS && !o->off_cpu && !o->wall;
	if (o->off_cpu || o->wall) {
		if (events_parse("context-switches", &probe) < 0)
			return 0;
	} else if (!record_event_kernel_only(e)) {
		return 0;
	} else if (e->attr.exclude_kernel) {
		return fail(c, HWSPY_CHECK_USER_KERNEL_ONLY, 0, -EINVAL, "':u' counts none of it");
	}
	r = events_probe(&probe, 0);
	if (r != -EACCES && r != -EPERM)
		return 0;
	return fail(c, HWSPY_CHECK_KERNEL_REFUSED, 0, r, "kernel samples refused");
}

int hwspy_record_check(struct hwspy_record_opts *o, struct hwspy_events *ev, bool rate_given,
		       struct hwspy_record_check *c)
{
	uint64_t period;
	int r;

	lib_reason_clear();
	*c = (struct hwspy_record_check) { 0 };
	o->events = ev;
	if ((o->wall || o->off_cpu) && (r = mode_event(o, ev, rate_given, c)) < 0)
		return r;
	if (!ev->n && (r = default_event(ev, c)) < 0)
		return r;
	if ((r = open_events(ev, c)) < 0 || (r = kernel_events(o, ev, c)) < 0)
		return r;
	/* a count event samples at a fixed period: the kernel's rate control sizes periods from
	 * bursts and stalls on them, and the totals come out wrong */
	period = events_default_period(&ev->spec[0].attr);
	if (!o->off_cpu && period && o->freq) {
		c->period = period;
		if (rate_given)
			return fail(c, HWSPY_CHECK_COUNT_RATE, 0, -EINVAL, "a count event takes no rate");
		o->freq = 0;
		o->period = period;
	}
	if (o->mode == HWSPY_RECORD_STOPS && record_event_samples_asleep(&ev->spec[0]))
		return fail(c, HWSPY_CHECK_STOPS_ASLEEP, 0, -EINVAL, "a stop would interrupt a sleep");
	return 0;
}

/* 0 if argv0 names an executable as execvp(3) would find it, else -errno */
static int find_command(const char *argv0)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(argv0, '/'))
		return access(argv0, X_OK) == 0 ? 0 : -errno;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		if (len && len + strlen(argv0) + 2 <= sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int) len, path, argv0);
			if (access(buf, X_OK) == 0)
				return 0;
		}
		path += len + (path[len] == ':');
	}
	return -ENOENT;
}

int hwspy_record_check_target(const struct hwspy_record_opts *o, struct hwspy_record_check *c)
{
	int r;

	lib_reason_clear();
	*c = (struct hwspy_record_check) { 0 };
	if (o->pid > 0 && kill(o->pid, 0) < 0 && errno == ESRCH)
		return fail(c, HWSPY_CHECK_NO_PROCESS, 0, -ESRCH, "no such process");
	if (o->pid > 0 && hwspy_kernel_thread(o->pid) == 1)
		return fail(c, HWSPY_CHECK_KERNEL_THREAD, 0, -EINVAL, "a kernel thread");
	if (o->argv && (r = find_command(o->argv[0])) < 0)
		return fail(c, HWSPY_CHECK_COMMAND, 0, r, "cannot run the command");
	return 0;
}
