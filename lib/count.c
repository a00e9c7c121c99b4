/*
 * count.c: include/hwspy.h's counting and findings over analysis/'s counting session
 * (analysis/stat.h): the public types translated from and to the stage's; and the sampling run
 * beside the counters (opts.sampling): a recording (lib/record.c's hwspy_recorder: the mode
 * and its fallbacks, told as notes) whose samples analysis/'s tally takes, started with the
 * counters (a launched command counted from its exec), its part of the report taken from it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/stat.h"
#include "lib/internal.h"
#include "lib/lib.h"

#define SAMPLING_RATE 100               /* the sampling run's samples per second per thread */

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
	/* the sampling run beside the counters (opts.sampling) */
	struct hwspy_count_opts o;      /* o.events not kept */
	struct hwspy_events sev;        /* its events */
	uint32_t leaders;
	struct hwspy_recorder *rec;     /* NULL: none runs */
	struct stat_tally tally;        /* its samples, by event and function */
	bool own;                       /* the report's sampling part is the run's */
	bool launch;                    /* the run launches the command */
	bool launched;                  /* ... and did */
	int sampling_error;             /* why an attached target is counted alone */
	int exec_error;                 /* the counters' at the launched command's exec */
	enum hwspy_count_failed failed;
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
	if (o) {
		c->o = *o;
		c->o.events = NULL;
	}
	if (c->o.sampling)
		c->sev.n = stat_sampling_events(&c->s.s, c->sev.spec, HWSPY_MAX_EVENTS, &c->leaders);
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
	hwspy_recorder_free(c->rec);
	stat_tally_release(&c->tally);
	stat_count_release(&c->s);
	totals_release(c);
	free(c->gil_in);
	free(c);
}

bool hwspy_count_user_only(const struct hwspy_count *c)
{
	return c->s.s.user_only;
}

static int counters_start(struct hwspy_count *c, pid_t pid, char *const *argv)
{
	int r;

	c->failed = HWSPY_COUNT_FAILED_COUNTERS;
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

/* ---- the sampling run beside the counters ---- */

static int tally_sink(void *ctx, const struct hwspy_sample *s)
{
	struct hwspy_count *c = ctx;
	/* in an exact mode, a stack read after its sample (before the capture started: maybe a
	 * later one's) is not credited */
	bool late = s->late_ns && hwspy_recorder_mode(c->rec) != HWSPY_RECORD_NONBLOCKING;

	return stat_tally_add(&c->tally, s->frames, s->depth, s->values, s->n_values, s->event,
			      late);
}

/* The recording's notes, passed on; user space only with the run's events that then count
 * nothing. */
static void run_note(void *ctx, enum hwspy_note n, int err, const char *detail)
{
	struct hwspy_count *c = ctx;
	char none[160] = "";
	size_t len = 0;

	if (!c->o.note_fn)
		return;
	for (size_t i = 1; n == HWSPY_NOTE_USER_ONLY && i < c->sev.n; i++) {
		int k;

		if (!stat_kernel_only(&c->sev.spec[i]))
			continue;
		k = snprintf(none + len, sizeof(none) - len, "%s'%s'", len ? ", " : "",
			     c->sev.spec[i].name);
		if (k < 0 || (size_t) k >= sizeof(none) - len) {
			none[len] = '\0';
			break;
		}
		len += (size_t) k;
	}
	c->o.note_fn(c->o.note_ctx, n, err, n == HWSPY_NOTE_USER_ONLY ? none : detail);
}

/* The launched command, stopped at its exec by the run's launch: its counters open now, so
 * they count from the exec. */
static void on_exec(void *ctx, pid_t pid)
{
	struct hwspy_count *c = ctx;

	c->exec_error = stat_count_start(&c->s, pid, NULL);
	c->started |= c->exec_error >= 0;
}

static int sampling_new(struct hwspy_count *c, pid_t pid, char *const *argv)
{
	struct hwspy_record_opts ro;
	int r;

	hwspy_record_opts_init(&ro);
	ro.pid = pid;
	ro.argv = argv;
	ro.events = &c->sev;
	ro.freq = SAMPLING_RATE;
	ro.leaders = c->leaders;
	ro.mode = c->o.sampling_mode;
	ro.function = true;
	/* each thread's share of its time waiting for the GIL, from the switches off the CPU:
	 * kernel samples, none in user space alone */
	ro.gil_waits = !c->s.s.user_only;
	ro.sigchld = c->o.sigchld;
	ro.raise_nofile = c->o.raise_nofile;
	ro.note_fn = run_note;
	ro.note_ctx = c;
	ro.exec_fn = argv ? on_exec : NULL;
	ro.exec_ctx = c;
	r = hwspy_recorder_new(&ro, tally_sink, c, &c->rec);
	if (r < 0) {
		c->failed = r == -ENOMEM ? HWSPY_COUNT_FAILED_MEMORY : HWSPY_COUNT_FAILED_SAMPLING;
		return r;
	}
	c->tally = (struct stat_tally) {
		.prof = hwspy_recorder_profile(c->rec)->p, .events = c->sev.spec,
		.n_events = c->sev.n,
	};
	return 0;
}

/* The run's events opened (the command launched, its counters opened at its exec). */
static int sampling_start(struct hwspy_count *c, char *const *argv)
{
	int r = hwspy_recorder_start(c->rec);

	if (r == -ENOENT)
		r = lib_fail(r, "event '%s' cannot be opened on this machine", c->sev.spec[0].name);
	if (r < 0) {
		c->failed = HWSPY_COUNT_FAILED_SAMPLING;
		return r;
	}
	c->launched = argv != NULL;
	if (argv && !c->started) {
		r = c->exec_error ? c->exec_error : -ECHILD;
		c->failed = HWSPY_COUNT_FAILED_COUNTERS;
		return lib_fail_errno(r, "cannot count events of '%s'", argv[0]);
	}
	return 0;
}

/* Attached: the interpreter and mappings read; a target without a Python hwspy can read is
 * counted alone. */
static int sampling_attach(struct hwspy_count *c, pid_t pid)
{
	struct hwspy_python py;
	int r = sampling_new(c, pid, NULL);

	if (r < 0)
		return r;
	r = hwspy_recorder_open(c->rec);
	if (r >= 0)
		return sampling_start(c, NULL);
	hwspy_recorder_python(c->rec, &py);
	if (py.result >= 0) {
		c->failed = HWSPY_COUNT_FAILED_MAPPINGS;
		return r;
	}
	if (py.result == -EPERM || py.result == -EACCES || py.result == -ESRCH) {
		c->failed = HWSPY_COUNT_FAILED_COUNTERS;
		return r;
	}
	lib_reason_clear();
	c->sampling_error = py.result;
	hwspy_recorder_free(c->rec);
	c->rec = NULL;
	stat_tally_release(&c->tally);
	return 0;
}

int hwspy_count_start(struct hwspy_count *c, pid_t pid, char *const *argv)
{
	int r;

	lib_reason_clear();
	if (c->o.sampling && c->rec)
		return lib_fail(-EBUSY, "counting has started already");
	if (c->o.sampling && !pid && !argv) {
		c->failed = HWSPY_COUNT_FAILED_SAMPLING;
		return lib_fail(-EINVAL, "no sampling run beside the counters of the calling "
				"process");
	}
	if (c->o.sampling && !pid) {
		c->launch = true;
		r = sampling_new(c, 0, argv);
		return r < 0 ? r : sampling_start(c, argv);
	}
	r = counters_start(c, pid, argv);
	if (r < 0 || !c->o.sampling)
		return r;
	return sampling_attach(c, pid);
}

enum hwspy_count_failed hwspy_count_failed(const struct hwspy_count *c)
{
	return c->failed;
}

int hwspy_count_sampling_error(const struct hwspy_count *c)
{
	return c->sampling_error;
}

struct hwspy_recorder *hwspy_count_recorder(struct hwspy_count *c)
{
	return c->rec;
}

pid_t hwspy_count_pid(const struct hwspy_count *c)
{
	if (c->launch)
		return c->launched ? hwspy_recorder_pid(c->rec) : 0;
	return c->s.pid;
}

void hwspy_count_tick(struct hwspy_count *c)
{
	stat_count_tick(&c->s);
}

/* The run's slice: the threads' switches followed, then the caller's. */
static int run_slice(void *ctx, struct hwspy_recorder *rec, int r)
{
	struct hwspy_count *c = ctx;

	(void) rec;
	stat_count_tick(&c->s);
	return c->o.slice_fn ? c->o.slice_fn(c->o.slice_ctx, c, r) : r;
}

int hwspy_count_run(struct hwspy_count *c, volatile sig_atomic_t *stop, uint64_t duration_ns)
{
	int r;

	lib_reason_clear();
	if (!c->started)
		return lib_fail(-EINVAL, "counting has not started");
	if (c->rec) {
		struct hwspy_run run = {
			.stop = stop, .duration_ns = duration_ns, .slice_fn = run_slice, .ctx = c,
		};

		return hwspy_recorder_run(c->rec, &run);
	}
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

/* The public form of c->t (filled): events, threads, GIL waits. */
static int totals_out(struct hwspy_count *c)
{
	const struct hwspy_count_sampling *s = c->have_sampling ? &c->sampling : NULL;

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
	return totals_out(c);
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
	if (!c->started) {
		if (c->rec)
			hwspy_recorder_stop(c->rec);
		return lib_fail(-EINVAL, "counting has not started");
	}
	stat_count_stop(&c->s);
	if (c->rec)
		hwspy_recorder_stop(c->rec);
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
	ret->threads_watched = cs->watched;
	ret->reads = cs->reads;
	ret->reads_skipped = cs->reads_skipped;
	ret->target_exited = cs->target_exited;
	ret->exit_status = cs->exit_status;
	if (c->launched) {
		/* the run's command: the sampler reaps it */
		struct hwspy_record_stats rs;

		hwspy_recorder_stats(c->rec, &rs);
		ret->target_exited = rs.target_exited;
		ret->exit_status = rs.exit_status;
	}
}

/* ---- marks: blocks of the calling process ---- */

struct hwspy_count_mark {
	const struct hwspy_count *c;    /* made for */
	size_t n_threads, n_events;
	uint64_t wall_ns;               /* a reading: CLOCK_MONOTONIC; a sum: the intervals' */
	pid_t *tids;
	struct counter_value *v;        /* n_threads x n_events */
};

int hwspy_count_mark_new(const struct hwspy_count *c, struct hwspy_count_mark **ret)
{
	struct hwspy_count_mark *m;

	lib_reason_clear();
	*ret = NULL;
	if (!c->started || !c->s.ctr || c->s.stopped)
		return lib_fail(-EINVAL, "counting has not started");
	m = calloc(1, sizeof(*m));
	if (!m)
		return lib_fail(-ENOMEM, "out of memory");
	m->c = c;
	m->n_threads = counter_n_threads(c->s.ctr);
	m->n_events = c->s.s.n_events;
	m->tids = calloc(m->n_threads + 1, sizeof(*m->tids));
	m->v = calloc(m->n_threads * m->n_events + 1, sizeof(*m->v));
	if (!m->tids || !m->v) {
		hwspy_count_mark_free(m);
		return lib_fail(-ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < m->n_threads; k++)
		m->tids[k] = counter_thread(c->s.ctr, k, &m->v[k * m->n_events]);
	for (size_t k = 0; k < m->n_threads * m->n_events; k++) {
		int error = m->v[k].error;
		bool split = m->v[k].split;

		m->v[k] = (struct counter_value) { .error = error, .split = split };
	}
	*ret = m;
	return 0;
}

void hwspy_count_mark_free(struct hwspy_count_mark *m)
{
	if (!m)
		return;
	free(m->tids);
	free(m->v);
	free(m);
}

int hwspy_count_mark_read(struct hwspy_count *c, struct hwspy_count_mark *m)
{
	struct timespec ts;
	size_t n;

	if (m->c != c || !c->s.ctr || c->s.stopped)
		return lib_fail(-EINVAL, "counting has not started");
	stat_count_read_counters(&c->s);
	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	m->wall_ns = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
	n = counter_n_threads(c->s.ctr);
	if (n > m->n_threads)
		n = m->n_threads;
	for (size_t k = 0; k < n; k++)
		m->tids[k] = counter_thread(c->s.ctr, k, &m->v[k * m->n_events]);
	return 0;
}

static uint64_t delta(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

void hwspy_count_mark_add(struct hwspy_count_mark *sum, const struct hwspy_count_mark *from,
			  const struct hwspy_count_mark *to)
{
	size_t n = sum->n_threads * sum->n_events;

	if (from->n_threads * from->n_events < n || to->n_threads * to->n_events < n ||
	    from->n_events != sum->n_events || to->n_events != sum->n_events)
		return;
	sum->wall_ns += delta(from->wall_ns, to->wall_ns);
	for (size_t k = 0; k < sum->n_threads; k++)
		sum->tids[k] = to->tids[k];
	for (size_t k = 0; k < n; k++) {
		struct counter_value *s = &sum->v[k];
		const struct counter_value *a = &from->v[k], *b = &to->v[k];

		s->raw += delta(a->raw, b->raw);
		s->enabled_ns += delta(a->enabled_ns, b->enabled_ns);
		s->running_ns += delta(a->running_ns, b->running_ns);
		s->error = b->error;
		s->split = b->split;
	}
}

int hwspy_count_use(struct hwspy_count *c, const struct hwspy_count_mark *sum)
{
	struct stat_names names = { 0 };
	struct stat_values in = {
		.tids = sum->tids, .v = sum->v, .n_threads = sum->n_threads,
		.wall_ns = sum->wall_ns, .pid = c->s.pid,
	};
	int r;

	lib_reason_clear();
	if (sum->c != c || sum->n_events != c->s.s.n_events)
		return lib_fail(-EINVAL, "a mark of another counting");
	totals_release(c);
	c->have_sampling = false;
	c->t.user_only = c->s.s.user_only;
	c->t.have_pmu = hwspy_have_hw_pmu();
	r = stat_totals_from(&c->t, &c->s.s, &in, &names);
	if (r < 0)
		return lib_fail(r, "out of memory");
	return totals_out(c);
}

/* A thread's name in the sampling run's profile. */
static const char *own_name(void *ctx, pid_t tid)
{
	struct hwspy_count *c = ctx;

	return profile_thread_name(hwspy_recorder_profile(c->rec)->p, (uint32_t) tid);
}

/* The sampling run's part: the threads' names, their waits for the GIL (a thread's time on the
 * CPU: the run's where its sampling event counts time, the sum of its periods), the functions
 * behind the findings (the tally's). */
static int own_report(struct hwspy_count *c)
{
	const struct profile_event *e = profile_event(hwspy_recorder_profile(c->rec)->p, 0);
	bool time = e && profile_event_is_time(e->name);
	size_t n = hwspy_recorder_gil_threads(c->rec, NULL, 0);
	struct hwspy_gil_thread *g = n ? calloc(n, sizeof(*g)) : NULL;
	struct hwspy_gil_wait *w = n ? calloc(n, sizeof(*w)) : NULL;
	struct hwspy_record_stats rs;
	struct hwspy_count_sampling s = { .thread_name = own_name, .ctx = c, .gil = w };
	int r;

	if (n && (!g || !w)) {
		free(g);
		free(w);
		return lib_fail(-ENOMEM, "out of memory");
	}
	n = hwspy_recorder_gil_threads(c->rec, g, n);
	hwspy_recorder_stats(c->rec, &rs);
	s.samples = rs.samples;
	/* stops are not taken at a switch */
	s.gil_measured = hwspy_recorder_mode(c->rec) != HWSPY_RECORD_STOPS;
	for (size_t i = 0; i < n; i++)
		if (g[i].gil_wait_ns)
			w[s.n_gil++] = (struct hwspy_gil_wait) {
				.tid = g[i].tid, .wait_ns = (double) g[i].gil_wait_ns,
				.cpu_ns = time ? (double) g[i].weight : -1,
			};
	r = hwspy_count_report(c, &s);
	c->own = true;
	free(g);
	free(w);
	return r;
}

int hwspy_count_report(struct hwspy_count *c, const struct hwspy_count_sampling *s)
{
	lib_reason_clear();
	c->own = false;
	if (!s && c->rec)
		return own_report(c);
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

	if (c->own)
		attr = (struct stat_attribution) { .functions = stat_functions, .ctx = &c->tally };
	stat_find(&c->t, c->have_sampling && (c->own || c->sampling.functions) ? &attr : NULL,
		  ret);
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
		stat_report_text(&c->t, f, c->o.full_paths, out);
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
