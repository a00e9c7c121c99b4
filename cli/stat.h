/*
 * stat (cli): what `hwspy stat`'s files share. cmd_stat.c runs the counters (sampler.h's
 * counting mode) and, unless --no-profile, a light sampling run beside them (the recorder);
 * stat_rules.c turns the totals into findings by one table of thresholds; stat_report.c
 * writes the table, the findings and the JSON. Internal to cli/.
 *
 * Units: every count as the counter gave it, scaled for multiplexing; task-clock in ns; times
 * in ns. A value that was not measured is not counted (struct stat_event.counted false), never
 * 0.
 */
#ifndef HWSPY_CLI_STAT_H
#define HWSPY_CLI_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sampler/sampler.h"

#define STAT_MAX_EVENTS 24
#define STAT_MAX_FUNCS 3                /* functions named per finding */
#define STAT_MAX_FINDINGS 16
/* A function's share of an event is said only from this many samples of that event on: a share
 * of n samples is off by up to 1.96 x sqrt(0.25 / n) (95%), +-18 points at 30 */
#define STAT_MIN_SAMPLES 30

struct stat_event {
	char name[96];
	bool counted;                   /* it opened and ran */
	int error;                      /* why not (counted false): -ENOENT no such event here ... */
	double value;                   /* scaled */
	uint64_t raw, enabled_ns, running_ns;
	bool split;                     /* its group was split to be scheduled */
	bool hardware;                  /* a PMU event (hardware, cache, raw, pmu) */
	bool listed;                    /* in the table: asked for, or a default that opens here */
};

struct stat_thread {
	pid_t tid;
	char name[128];
	double task_clock_ns;           /* < 0: not counted */
	double switches;                /* context-switches (< 0: not counted) */
};

/* A function named behind a finding: its share of the finding's event in the sampling run, from
 * the samples that event took itself (it samples on its own: record_opts.leaders); or, for the
 * GIL finding, a thread and its share of the run spent waiting (tid set). */
struct stat_func {
	char text[256];                 /* "shuffle_rows (train.py:12)", "MainThread" */
	double share;                   /* 0..1 */
	uint64_t samples;               /* the event's samples in it */
	pid_t tid;                      /* a thread named (0: a function) */
};

/* What a rule can name functions by: per event of the sampling run, the innermost Python
 * function of each of the samples that event took (cmd_stat.c fills it; NULL: no sampling
 * run). */
struct stat_attribution {
	/* up to max functions for event name ev, largest share first, each >= 5%, none from
	 * fewer than STAT_MIN_SAMPLES samples: how many; *ret_samples: the event's samples in
	 * Python code (0: it was not sampled) */
	size_t (*functions)(void *ctx, const char *ev, struct stat_func *ret, size_t max,
			    uint64_t *ret_samples);
	void *ctx;
};

/* A thread's time waiting for the GIL, from the sampling run's switches off the CPU whose
 * reason is [wait: GIL] (record_opts.gil_waits). */
struct stat_gil_wait {
	pid_t tid;
	char name[128];
	double wait_ns;
	double cpu_ns;                  /* its time on the CPU (< 0: not known) */
};

struct stat_totals {
	char target[320];
	uint64_t wall_ns;
	struct stat_event ev[STAT_MAX_EVENTS];
	size_t n_ev;
	int64_t voluntary, involuntary; /* context switches from /proc (< 0: not known) */
	struct stat_thread *threads;    /* per thread, by task-clock, largest first */
	size_t n_threads;
	bool have_pmu;                  /* the machine exposes a hardware PMU */
	bool user_only;                 /* every event counted user space only (kernel mode
	                                 * refused): a switch or a migration is not counted */
	bool sampled;                   /* a sampling run named the functions */
	uint64_t samples;               /* ... its samples */
	struct stat_gil_wait *gil;      /* threads that waited for the GIL, longest first */
	size_t n_gil;
	bool gil_measured;              /* the sampling run took the switches off the CPU */
};

/* Whether a and b name one event, ":modifiers" ignored ("cycles:u" is "cycles"). */
bool stat_same_event(const char *a, const char *b);
/* The event named name among t's (so matched), counted or not; NULL: not asked. */
const struct stat_event *stat_event(const struct stat_totals *t, const char *name);

/* ---- stat_rules.c: findings ------------------------------------------------------------ */

enum stat_cmp { STAT_ABOVE, STAT_BELOW };

struct stat_finding {
	const char *id;                 /* "high-llc-mpki" (stable: the JSON's) */
	const char *metric;             /* "LLC-load-misses per 1k instructions" */
	double value, threshold;
	enum stat_cmp cmp;
	const char *unit;               /* "", "%", "/s", " cores" */
	const char *meaning;            /* "the program waits: I/O, locks, sleep" */
	const char *advice;             /* what to do next */
	const char *event;              /* the event its functions are named by (NULL: none) */
	struct stat_func funcs[STAT_MAX_FUNCS];
	size_t n_funcs;
	uint64_t samples;               /* the event's samples in Python code the shares are of (0
	                                 * with n_funcs 0: none taken; under STAT_MIN_SAMPLES: too
	                                 * few to name a function) */
	bool threads;                   /* funcs are threads (the GIL finding) */
};

/* A finding that could not be looked for: its rule, and why (one phrase). */
struct stat_unmeasured {
	const char *id, *metric;
	const char *missing;            /* the event it needs that was not counted */
	int error;
};

struct stat_findings {
	struct stat_finding f[STAT_MAX_FINDINGS];
	size_t n;
	struct stat_unmeasured u[STAT_MAX_FINDINGS];
	size_t n_unmeasured;
};

/* The findings t's counts support (attr may be NULL: none named). */
void stat_find(const struct stat_totals *t, const struct stat_attribution *attr,
	       struct stat_findings *ret);
/* The rules, their thresholds and where each comes from (--explain). */
void stat_explain(FILE *out);
/* The event names the rules use (for the default list and the sampling group). */
size_t stat_rule_events(const char **ret, size_t max);

/* ---- stat_report.c ---------------------------------------------------------------------- */

/* perf stat's table, then the findings in plain words. */
void stat_report_text(const struct stat_totals *t, const struct stat_findings *f, FILE *out);
/* The same as one JSON object (README: "hwspy stat --json"). 0 or -errno. */
int stat_report_json(const struct stat_totals *t, const struct stat_findings *f, FILE *out);

#endif
