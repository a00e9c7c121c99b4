/*
 * monitor_metrics.c: hwspy monitor's series (lib/monitor.h), as /metrics serves them. Names,
 * units and help follow Prometheus' conventions: counters end in _total, times are seconds,
 * ratios are ratios; every series carries the --label pairs first, then pid and process.
 * Counters are the process's since it was picked up (a restart is a new pid: new series);
 * the ratios, findings and hottest functions are the last finished interval's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "lib/internal.h"
#include "lib/monitor.h"
#include "output/metrics.h"
#include "record/waitsample.h"

enum fam {
	F_BUILD, F_SELF_CPU, F_SELF_RSS, F_WATCHED, F_SCRAPES, F_PROFILES, F_PROFILES_FAILED,
	F_UP, F_INFO, F_EVENTS, F_CPU, F_SAMPLES, F_LOST, F_OFF_CPU, F_IPC, F_CPUS, F_MPKI,
	F_MISS, F_FINDING, F_TOP, F_N
};

static const struct {
	const char *name;
	enum metric_type type;
	const char *unit, *help;
} fams[F_N] = {
	[F_BUILD] = { "hwspy_build_info", METRIC_GAUGE, "", "hwspy's version (the value is 1)" },
	[F_SELF_CPU] = { "hwspy_self_cpu_seconds", METRIC_COUNTER, "seconds",
			 "CPU time hwspy monitor itself used (user and system)" },
	[F_SELF_RSS] = { "hwspy_self_max_resident_bytes", METRIC_GAUGE, "bytes",
			 "hwspy monitor's own peak resident memory" },
	[F_WATCHED] = { "hwspy_watched_processes", METRIC_GAUGE, "",
			"processes watched now" },
	[F_SCRAPES] = { "hwspy_scrapes", METRIC_COUNTER, "", "scrapes of /metrics served" },
	[F_PROFILES] = { "hwspy_profiles_written", METRIC_COUNTER, "",
			 "pprof profiles written to the profile directory" },
	[F_PROFILES_FAILED] = { "hwspy_profiles_failed", METRIC_COUNTER, "",
				"pprof profiles that could not be written" },
	[F_UP] = { "hwspy_target_up", METRIC_GAUGE, "",
		   "1 where the process is counted, 0 where hwspy cannot read it" },
	[F_INFO] = { "hwspy_target_info", METRIC_GAUGE, "",
		     "the process's Python, how it is sampled, and why not (the value is 1)" },
	[F_EVENTS] = { "hwspy_events", METRIC_COUNTER, "",
		       "events counted in the process since it was picked up (perf's names)" },
	[F_CPU] = { "hwspy_cpu_seconds", METRIC_COUNTER, "seconds",
		    "CPU time of the process's threads (task-clock) since it was picked up" },
	[F_SAMPLES] = { "hwspy_samples", METRIC_COUNTER, "",
			"samples taken of the process" },
	[F_LOST] = { "hwspy_samples_lost", METRIC_COUNTER, "",
		     "samples of the process the kernel lost (its ring full)" },
	[F_OFF_CPU] = { "hwspy_off_cpu_seconds", METRIC_COUNTER, "seconds",
			"time the process's threads spent off the CPU, by what they waited "
			"for (GIL: waiting to take the GIL), sampled from /proc" },
	[F_IPC] = { "hwspy_instructions_per_cycle", METRIC_GAUGE, "",
		    "instructions per cycle over the last interval" },
	[F_CPUS] = { "hwspy_cpus_utilized", METRIC_GAUGE, "",
		     "CPUs the process kept busy over the last interval (task-clock / wall)" },
	[F_MPKI] = { "hwspy_misses_per_kilo_instructions", METRIC_GAUGE, "",
		     "misses of the event per 1000 instructions over the last interval" },
	[F_MISS] = { "hwspy_miss_ratio", METRIC_GAUGE, "",
		     "misses of the event over its references, over the last interval" },
	[F_FINDING] = { "hwspy_finding", METRIC_GAUGE, "",
			"a finding of hwspy stat that holds over the last interval: its "
			"metric's value" },
	[F_TOP] = { "hwspy_top_function_ratio", METRIC_GAUGE, "",
		    "share of the sampled event's weight in the function's own code over the "
		    "last interval (the hottest functions only)" },
};

/* Adds one sample: labels = the process's (pid, process) then extra pairs, NULL-ended. */
static int add(struct metrics *mt, const size_t *fam_id, enum fam f, const struct watch *w,
	       const char *const *extra, double v)
{
	const char *labels[24];
	char pid[16];
	size_t n = 0;

	if (w) {
		snprintf(pid, sizeof(pid), "%d", (int) w->pid);
		labels[n++] = "pid";
		labels[n++] = pid;
		labels[n++] = "process";
		labels[n++] = w->process;
	}
	for (size_t i = 0; extra && extra[i] && n < 22; i++)
		labels[n++] = extra[i];
	labels[n] = NULL;
	n = (size_t) metrics_add(mt, fam_id[f], labels, v);
	return (int) n == -EEXIST ? 0 : (int) n;        /* a second function of one name */
}

static int self_series(struct hwspy_monitor *m, struct metrics *mt, const size_t *id)
{
	const char *ver[] = { "version", hwspy_version(), NULL };
	struct rusage ru;
	int r = add(mt, id, F_BUILD, NULL, ver, 1);

	if (r == 0 && getrusage(RUSAGE_SELF, &ru) == 0) {
		double cpu = (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			     (double) ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;

		r = add(mt, id, F_SELF_CPU, NULL, NULL, cpu);
		if (r == 0)
			r = add(mt, id, F_SELF_RSS, NULL, NULL, (double) ru.ru_maxrss * 1024.0);
	}
	if (r == 0)
		r = add(mt, id, F_WATCHED, NULL, NULL, (double) m->n);
	if (r == 0)
		r = add(mt, id, F_SCRAPES, NULL, NULL, (double) m->scrapes);
	if (r == 0)
		r = add(mt, id, F_PROFILES, NULL, NULL, (double) m->profiles_written);
	if (r == 0)
		r = add(mt, id, F_PROFILES_FAILED, NULL, NULL, (double) m->profiles_failed);
	return r;
}

/* The counters, read now. */
static int count_series(struct watch *w, struct metrics *mt, const size_t *id)
{
	const struct hwspy_count_event *ev;
	size_t n;
	int r = 0;

	if (!w->count || hwspy_count_read(w->count) < 0)
		return 0;
	ev = hwspy_count_events(w->count, &n);
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *l[] = { "event", ev[i].name, NULL };

		if (!ev[i].counted)
			continue;
		if (!strncmp(ev[i].name, "task-clock", 10))
			r = add(mt, id, F_CPU, w, NULL, ev[i].value / 1e9);
		else if (strncmp(ev[i].name, "cpu-clock", 9))
			r = add(mt, id, F_EVENTS, w, l, ev[i].value);
	}
	return r;
}

static int interval_series(struct watch *w, struct metrics *mt, const size_t *id)
{
	const struct mon_ratios *q = &w->ratios;
	int r = 0;

	if (!w->have_interval)
		return 0;
	if (!isnan(q->ipc))
		r = add(mt, id, F_IPC, w, NULL, q->ipc);
	if (r == 0 && !isnan(q->cpus))
		r = add(mt, id, F_CPUS, w, NULL, q->cpus);
	for (size_t i = 0; i < q->n_miss && r == 0; i++) {
		const char *l[] = { "event", q->miss[i].event, NULL };

		r = add(mt, id, F_MPKI, w, l, q->miss[i].mpki);
		if (r == 0 && !isnan(q->miss[i].miss_ratio))
			r = add(mt, id, F_MISS, w, l, q->miss[i].miss_ratio);
	}
	for (size_t i = 0; i < w->findings.n && r == 0; i++) {
		const struct hwspy_finding *f = &w->findings.f[i];
		const char *l[] = { "finding", f->id, "metric", f->metric, NULL };

		r = add(mt, id, F_FINDING, w, l, f->value);
	}
	return r;
}

static int sampling_series(struct watch *w, struct metrics *mt, const size_t *id)
{
	const char *names[64];
	uint64_t ns[64], samples, lost;
	size_t n = w->waits ? waitsample_reasons(w->waits, names, ns, 64) : 0;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		const char *l[] = { "reason", names[i], NULL };

		if (strcmp(names[i], "running"))
			r = add(mt, id, F_OFF_CPU, w, l, ns[i] / 1e9);
	}
	pthread_mutex_lock(&w->lock);
	samples = w->samples;
	lost = w->lost_base + w->lost;
	pthread_mutex_unlock(&w->lock);
	if (r == 0 && w->rec)
		r = add(mt, id, F_SAMPLES, w, NULL, (double) samples);
	if (r == 0 && w->rec)
		r = add(mt, id, F_LOST, w, NULL, (double) lost);
	for (size_t i = 0; i < w->n_top && r == 0 && w->rec; i++) {
		const struct mon_top *t = &w->top[i];
		const char *l[] = { "event", hwspy_events_name(w->m->sample_events, t->event),
				    "function", t->function, "file", t->file, NULL };

		r = add(mt, id, F_TOP, w, l, t->share);
	}
	return r;
}

static int watch_series(struct watch *w, struct metrics *mt, const size_t *id)
{
	int st = atomic_load(&w->state);
	const char *why = w->unreadable ? w->why : st == WATCH_NOT_SAMPLED ? w->sample_why : "";
	const char *mode = w->unreadable ? "none" : st == WATCH_SAMPLING ? w->mode
			   : st == WATCH_STARTING ? "starting" : "counting";
	const char *info[] = { "python", st == WATCH_SAMPLING ? w->python : "", "mode", mode,
			       "error", why, NULL };
	int r = add(mt, id, F_UP, w, NULL, w->unreadable ? 0 : 1);

	if (r == 0)
		r = add(mt, id, F_INFO, w, info, 1);
	if (r == 0 && !w->unreadable)
		r = count_series(w, mt, id);
	if (r == 0 && !w->unreadable)
		r = interval_series(w, mt, id);
	if (r == 0 && !w->unreadable)
		r = sampling_series(w, mt, id);
	return r;
}

int mon_write_metrics(struct hwspy_monitor *m, bool openmetrics, FILE *out)
{
	struct metrics *mt = metrics_new();
	size_t id[F_N];
	int r = mt ? metrics_set_common(mt, (const char *const *) m->labels) : -ENOMEM;

	for (size_t f = 0; f < F_N && r == 0; f++)
		r = metrics_family(mt, fams[f].name, fams[f].type, fams[f].unit, fams[f].help,
				   &id[f]);
	if (r == 0)
		r = self_series(m, mt, id);
	for (size_t i = 0; i < m->n && r == 0; i++)
		r = watch_series(m->w[i], mt, id);
	if (r == 0)
		r = metrics_write(mt, openmetrics, out);
	metrics_free(mt);
	return r < 0 ? lib_fail(r, "cannot build the metrics: %s", strerror(-r)) : 0;
}
