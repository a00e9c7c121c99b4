/*
 * count.c: include/hwspy.h's counting and findings over analysis/'s counting session
 * (analysis/stat.h): the public types translated from and to the stage's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stat.h"
#include "lib/internal.h"

struct hwspy_count {
	struct stat_count s;
	bool started;
	struct stat_totals t;           /* the last reading (t.threads, t.gil its own) */
	struct hwspy_count_event ev[STAT_MAX_EVENTS];
	size_t n_ev;
	struct hwspy_count_thread *threads;
	size_t n_threads;
	struct hwspy_gil_wait *gil;     /* t.gil's, public */
	struct stat_gil_wait *gil_in;   /* the sampling run's, copied */
	size_t n_gil_in;
	struct hwspy_count_sampling sampling;
	bool have_sampling;
};

int hwspy_count_new(const struct hwspy_count_opts *o, struct hwspy_count **ret)
{
	struct stat_count_opts so = { 0 };
	struct hwspy_count *c;
	char bad[96];
	int r;

	lib_reason_clear();
	*ret = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return lib_fail(-ENOMEM, "out of memory");
	if (o)
		so = (struct stat_count_opts) {
			.events = o->events, .user_only_fallback = o->user_only_fallback,
			.raise_nofile = o->raise_nofile, .python_names = o->python_names,
		};
	r = stat_count_init(&c->s, &so, bad, sizeof(bad));
	if (r < 0) {
		free(c);
		if (r == -E2BIG)
			return lib_fail(r, "at most %d events", COUNTER_MAX_EVENTS);
		if (r == -ENOENT)
			return lib_fail(r, "unknown event '%s'", bad);
		return lib_fail(r, "'%s' is no list of events (EV[,EV...])", o && o->events ?
				o->events : "");
	}
	/* the events chosen, not counted yet */
	for (size_t i = 0; i < c->s.s.n_events && i < STAT_MAX_EVENTS; i++) {
		snprintf(c->ev[i].name, sizeof(c->ev[i].name), "%s", c->s.s.events[i].name);
		c->ev[i].listed = c->s.s.listed[i];
		c->ev[i].error = -ENODATA;
		c->n_ev++;
	}
	c->t.voluntary = c->t.involuntary = -1;
	*ret = c;
	return 0;
}

static void totals_release(struct hwspy_count *c)
{
	free(c->t.threads);
	free(c->t.gil);
	c->t = (struct stat_totals) { .voluntary = -1, .involuntary = -1 };
	free(c->threads);
	c->threads = NULL;
	c->n_threads = 0;
	free(c->gil);
	c->gil = NULL;
}

void hwspy_count_free(struct hwspy_count *c)
{
	if (!c)
		return;
	stat_count_release(&c->s);
	totals_release(c);
	free(c->gil_in);
	free(c);
}

bool hwspy_count_user_only(const struct hwspy_count *c)
{
	return c->s.s.user_only;
}

int hwspy_count_start(struct hwspy_count *c, pid_t pid, char *const *argv)
{
	int r;

	lib_reason_clear();
	if (pid < 0)
		return lib_fail(-EINVAL, "no process with pid %d", (int) pid);
	r = stat_count_start(&c->s, pid, argv);
	if (r == -ESRCH)
		return lib_fail(r, "no process with pid %d", (int) pid);
	if (r == -ENOENT && !argv)
		return lib_fail(r, "none of the events opens on this machine");
	if (r < 0)
		return lib_fail_errno(r, "cannot count events of %s%s%s", argv ? "'" : "",
				      argv ? argv[0] : pid ? "that process" : "this process",
				      argv ? "'" : "");
	c->started = true;
	return 0;
}

pid_t hwspy_count_pid(const struct hwspy_count *c)
{
	return c->s.pid;
}

void hwspy_count_tick(struct hwspy_count *c)
{
	stat_count_tick(&c->s);
}

int hwspy_count_run(struct hwspy_count *c, volatile sig_atomic_t *stop, uint64_t duration_ns)
{
	int r;

	lib_reason_clear();
	if (!c->started)
		return lib_fail(-EINVAL, "counting has not started");
	r = stat_count_run(&c->s, stop, duration_ns);
	return r < 0 ? lib_fail_errno(r, "counting failed") : 0;
}

/* The sampling run's thread names through the public callback. */
static const char *sampling_name(void *ctx, pid_t tid)
{
	const struct hwspy_count *c = ctx;

	return c->sampling.thread_name ? c->sampling.thread_name(c->sampling.ctx, tid) : NULL;
}

static void event_out(const struct stat_totals *t, const struct stat_event *e,
		      struct hwspy_count_event *ret)
{
	struct stat_derived d;

	stat_derive(t, e, &d);
	*ret = (struct hwspy_count_event) {
		.counted = e->counted, .error = e->error, .listed = e->listed,
		.hardware = e->hardware, .split = e->split, .value = e->value, .raw = e->raw,
		.enabled_ns = e->enabled_ns, .running_ns = e->running_ns,
		.per_second = d.per_second, .cpus = d.cpus, .ipc = d.ipc, .ghz = d.ghz,
		.mpki = d.mpki, .miss_rate = d.miss_rate,
	};
	snprintf(ret->name, sizeof(ret->name), "%s", e->name);
	snprintf(ret->reference, sizeof(ret->reference), "%s", d.reference);
}

/* The last reading's totals and their public form. */
static int totals(struct hwspy_count *c)
{
	struct stat_names names = { .name = sampling_name, .ctx = c };
	const struct hwspy_count_sampling *s = c->have_sampling ? &c->sampling : NULL;
	int r;

	totals_release(c);
	r = stat_count_totals(&c->s, &c->t, &names);
	if (r >= 0 && s)
		r = stat_gil_waits(&c->t, c->gil_in, c->n_gil_in, s->gil_measured, c->s.pid,
				   &names);
	if (r < 0)
		return lib_fail(r, "out of memory");
	c->t.samples = s ? s->samples : 0;
	c->t.sampled = c->t.samples > 0;
	c->n_ev = c->t.n_ev;
	for (size_t i = 0; i < c->t.n_ev; i++)
		event_out(&c->t, &c->t.ev[i], &c->ev[i]);
	c->threads = c->t.n_threads ? calloc(c->t.n_threads, sizeof(*c->threads)) : NULL;
	c->gil = c->t.n_gil ? calloc(c->t.n_gil, sizeof(*c->gil)) : NULL;
	if ((c->t.n_threads && !c->threads) || (c->t.n_gil && !c->gil))
		return lib_fail(-ENOMEM, "out of memory");
	for (size_t k = 0; k < c->t.n_threads; k++) {
		const struct stat_thread *th = &c->t.threads[k];
		struct hwspy_count_thread *x = &c->threads[k];

		*x = (struct hwspy_count_thread) { .tid = th->tid, .task_clock_ns = th->task_clock_ns,
						   .switches = th->switches };
		snprintf(x->name, sizeof(x->name), "%s", th->name);
		for (size_t i = 0; i < HWSPY_COUNT_MAX_EVENTS; i++)
			x->value[i] = i < c->s.s.n_events ? th->value[i] : NAN;
	}
	c->n_threads = c->t.n_threads;
	for (size_t k = 0; k < c->t.n_gil; k++) {
		c->gil[k] = (struct hwspy_gil_wait) { .tid = c->t.gil[k].tid,
						      .wait_ns = c->t.gil[k].wait_ns,
						      .cpu_ns = c->t.gil[k].cpu_ns };
		snprintf(c->gil[k].name, sizeof(c->gil[k].name), "%s", c->t.gil[k].name);
	}
	return 0;
}

int hwspy_count_read(struct hwspy_count *c)
{
	lib_reason_clear();
	if (!c->started)
		return lib_fail(-EINVAL, "counting has not started");
	stat_count_read(&c->s);
	return totals(c);
}

int hwspy_count_stop(struct hwspy_count *c)
{
	lib_reason_clear();
	if (!c->started)
		return lib_fail(-EINVAL, "counting has not started");
	stat_count_stop(&c->s);
	return totals(c);
}

const struct hwspy_count_event *hwspy_count_events(const struct hwspy_count *c, size_t *ret_n)
{
	*ret_n = c->n_ev;
	return c->ev;
}

const struct hwspy_count_thread *hwspy_count_threads(const struct hwspy_count *c, size_t *ret_n)
{
	*ret_n = c->n_threads;
	return c->threads;
}

const struct hwspy_gil_wait *hwspy_count_gil_waits(const struct hwspy_count *c, size_t *ret_n)
{
	*ret_n = c->t.n_gil;
	return c->gil;
}

void hwspy_count_stats(const struct hwspy_count *c, struct hwspy_count_stats *ret)
{
	const struct counter_stats *cs = c->s.ctr ? counter_stats(c->s.ctr) : NULL;

	*ret = (struct hwspy_count_stats) {
		.voluntary = c->t.voluntary, .involuntary = c->t.involuntary,
		.user_only = c->s.s.user_only, .hardware_pmu = c->t.have_pmu,
	};
	if (!cs)
		return;
	ret->wall_ns = cs->wall_ns;
	ret->threads = cs->threads;
	ret->threads_failed = cs->threads_failed;
	ret->threads_raced = cs->threads_raced;
	ret->target_exited = cs->target_exited;
	ret->exit_status = cs->exit_status;
}

int hwspy_count_report(struct hwspy_count *c, const struct hwspy_count_sampling *s)
{
	lib_reason_clear();
	free(c->gil_in);
	c->gil_in = NULL;
	c->n_gil_in = 0;
	c->have_sampling = s != NULL;
	if (!s)
		return c->started ? totals(c) : 0;
	c->sampling = *s;
	c->sampling.gil = NULL;
	if (s->n_gil) {
		c->gil_in = calloc(s->n_gil, sizeof(*c->gil_in));
		if (!c->gil_in)
			return lib_fail(-ENOMEM, "out of memory");
		for (size_t i = 0; i < s->n_gil; i++)
			c->gil_in[i] = (struct stat_gil_wait) { .tid = s->gil[i].tid,
								.wait_ns = s->gil[i].wait_ns,
								.cpu_ns = s->gil[i].cpu_ns };
		c->n_gil_in = s->n_gil;
	}
	return c->started ? totals(c) : 0;
}

/* ---- findings ---- */

/* struct stat_attribution's callback over the public one. */
static size_t functions(void *ctx, const char *ev, struct stat_func *ret, size_t max,
			uint64_t *ret_samples)
{
	const struct hwspy_count *c = ctx;
	struct hwspy_function f[STAT_MAX_FUNCS];
	size_t n;

	*ret_samples = 0;
	if (max > STAT_MAX_FUNCS)
		max = STAT_MAX_FUNCS;
	memset(f, 0, sizeof(f));
	n = c->sampling.functions(c->sampling.ctx, ev, f, max, ret_samples);
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++) {
		ret[i] = (struct stat_func) { .share = f[i].share, .samples = f[i].samples,
					      .tid = f[i].tid };
		snprintf(ret[i].text, sizeof(ret[i].text), "%.*s", (int) sizeof(ret[i].text) - 1,
			 f[i].text);
	}
	return n;
}

/* The findings of the last reading, the stage's. */
static void find(struct hwspy_count *c, struct stat_findings *ret)
{
	struct stat_attribution attr = { .functions = functions, .ctx = c };

	stat_find(&c->t, c->have_sampling && c->sampling.functions ? &attr : NULL, ret);
}

int hwspy_count_findings(struct hwspy_count *c, struct hwspy_findings *ret)
{
	struct stat_findings *f = calloc(1, sizeof(*f));

	lib_reason_clear();
	memset(ret, 0, sizeof(*ret));
	if (!f)
		return lib_fail(-ENOMEM, "out of memory");
	find(c, f);
	for (size_t i = 0; i < f->n; i++) {
		const struct stat_finding *x = &f->f[i];
		struct hwspy_finding *y = &ret->f[i];

		*y = (struct hwspy_finding) {
			.id = x->id, .metric = x->metric, .value = x->value,
			.threshold = x->threshold, .above = x->cmp == STAT_ABOVE, .unit = x->unit,
			.meaning = x->meaning, .advice = x->advice, .event = x->event,
			.n_functions = x->n_funcs, .samples = x->samples, .threads = x->threads,
		};
		for (size_t k = 0; k < x->n_funcs; k++) {
			y->functions[k] = (struct hwspy_function) {
				.share = x->funcs[k].share, .samples = x->funcs[k].samples,
				.tid = x->funcs[k].tid,
			};
			snprintf(y->functions[k].text, sizeof(y->functions[k].text), "%.*s",
				 (int) sizeof(y->functions[k].text) - 1, x->funcs[k].text);
		}
	}
	ret->n = f->n;
	for (size_t i = 0; i < f->n_unmeasured; i++)
		ret->u[i] = (struct hwspy_unmeasured) { .id = f->u[i].id, .metric = f->u[i].metric,
							.missing_event = f->u[i].missing,
							.error = f->u[i].error };
	ret->n_unmeasured = f->n_unmeasured;
	free(f);
	return 0;
}

static int write_report(struct hwspy_count *c, const char *target, FILE *out, bool json)
{
	struct stat_findings *f = calloc(1, sizeof(*f));
	int r = 0;

	lib_reason_clear();
	if (!f)
		return lib_fail(-ENOMEM, "out of memory");
	snprintf(c->t.target, sizeof(c->t.target), "%s", target ? target : "");
	find(c, f);
	if (json)
		r = stat_report_json(&c->t, f, out);
	else
		stat_report_text(&c->t, f, out);
	free(f);
	if (r >= 0 && (fflush(out) == EOF || ferror(out)))
		r = -EIO;
	return r < 0 ? lib_fail_errno(r, "cannot write the report") : 0;
}

int hwspy_count_write_text(struct hwspy_count *c, const char *target, FILE *out)
{
	return write_report(c, target, out, false);
}

int hwspy_count_write_json(struct hwspy_count *c, const char *target, FILE *out)
{
	return write_report(c, target, out, true);
}

bool hwspy_finding_rule(size_t i, struct hwspy_rule *ret)
{
	struct stat_rule_info r;

	if (!stat_rule(i, &r, ret->how, sizeof(ret->how)))
		return false;
	ret->id = r.id;
	ret->metric = r.metric;
	ret->unit = r.unit;
	ret->meaning = r.meaning;
	ret->advice = r.advice;
	ret->source = r.source;
	ret->by = r.by;
	ret->above = r.cmp == STAT_ABOVE;
	ret->threads = r.threads;
	ret->threshold = r.threshold;
	return true;
}

int hwspy_findings_explain(FILE *out)
{
	lib_reason_clear();
	stat_explain(out);
	if (fflush(out) == EOF || ferror(out))
		return lib_fail(-EIO, "cannot write the rules");
	return 0;
}
