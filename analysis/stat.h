/*
 * analysis/stat.h: counting sessions and what is made of their counts (the analysis stage's
 * header; lib/count.c puts include/hwspy.h's counting and findings over it).
 *
 * Files: count.c (the events chosen, their groups, user space only where kernel mode is
 * refused, the totals and the threads from the counter, their names), count_session.c (a
 * counting session: the counter started on a pid, a launched command or the calling process,
 * /proc's switches followed, read live, stopped), count_sample.c (the sampling run beside the
 * counters: its events, and its samples by event and innermost Python function: what findings
 * name functions by; lib/count.c records it), rules.c (the
 * findings: one table of thresholds), report.c (the derived metrics, perf stat's table and the
 * findings in words), report_json.c (the same as one JSON object: `hwspy stat --json`).
 * Data only: nothing here prints; the writers write to the FILE they are given.
 *
 * Units: every count as the counter gave it, scaled for multiplexing; task-clock in ns; times
 * in ns. A value that was not measured is not counted (struct stat_event.counted false), never
 * 0.
 */
#ifndef HWSPY_ANALYSIS_STAT_H
#define HWSPY_ANALYSIS_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "output/profile.h"
#include "record/record.h"
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
	double value[COUNTER_MAX_EVENTS];       /* each event's, scaled (NaN: not counted) */
};

/* A function named behind a finding: its share of the finding's event in the sampling run, from
 * the samples that event took itself (it samples on its own: record_opts.leaders); or, for the
 * GIL finding, a thread and its share of the run spent waiting (tid set). */
struct stat_func {
	char text[256];                 /* "shuffle_rows (/src/app/train.py:12)", "MainThread" */
	char label[256];                /* a function as people read it: its file module-relative,
	                                 * output/label.h ("shuffle_rows (train.py:12)"; "": text) */
	double share;                   /* 0..1 */
	uint64_t samples;               /* the event's samples in it */
	pid_t tid;                      /* a thread named (0: a function) */
};

/* What a rule can name functions by: per event of the sampling run, the innermost Python
 * function of each of the samples that event took (stat_functions() over a struct stat_tally;
 * NULL: no sampling run). */
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

/* ---- rules.c: findings ------------------------------------------------------------------ */

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
/* The rules, their thresholds and where each comes from (--explain), written to out. */
void stat_explain(FILE *out);
/* Rule i of the table (0 <= i < stat_n_rules()), as data: false past the last. how: the
 * metric's formula in words, into buf[0..size). */
struct stat_rule_info {
	const char *id, *metric, *unit, *meaning, *advice, *source;
	const char *by;                 /* the event it names functions by (NULL: none) */
	enum stat_cmp cmp;
	double threshold;
	bool threads;                   /* names threads (the GIL rule) */
	const char *how;                /* the metric's formula in words (in the caller's buf) */
};
size_t stat_n_rules(void);
bool stat_rule(size_t i, struct stat_rule_info *ret, char *buf, size_t size);
/* The event names the rules use (for the default list and the sampling group). */
size_t stat_rule_events(const char **ret, size_t max);

/* ---- report.c, report_json.c ------------------------------------------------------------ */

/* The metrics derived from event e of t (NaN where they do not apply or are not counted). */
struct stat_derived {
	double cpus;                    /* a clock (task-clock, cpu-clock): CPUs used, value / wall */
	double ipc;                     /* instructions: instructions per cycle */
	double ghz;                     /* cycles: cycles per ns of task-clock */
	double mpki;                    /* a miss event: misses per 1k instructions */
	char reference[112];            /* ... the event of t it is a share of, by output/ratios.h's
	                                 * one map ("": none of t's) */
	double miss_rate;               /* ... misses per reference, in % */
	double per_second;              /* value per second of wall time */
};
void stat_derive(const struct stat_totals *t, const struct stat_event *e, struct stat_derived *ret);

/* perf stat's table, then the findings in plain words, each function by its label
 * (full_paths: by its text, the full path). */
void stat_report_text(const struct stat_totals *t, const struct stat_findings *f, bool full_paths,
		      FILE *out);
/* The same as one JSON object (README: "hwspy stat --json"), each function by its text: data,
 * with full paths as the folded and pprof outputs keep them. 0 or -errno. */
int stat_report_json(const struct stat_totals *t, const struct stat_findings *f, FILE *out);


/* threads whose /proc switches are followed, at most (a read of each per 250 ms) */
#define STAT_SWITCH_THREADS 1024

struct stat_setup {
	struct event_spec events[COUNTER_MAX_EVENTS];
	unsigned groups[COUNTER_MAX_EVENTS];
	bool listed[COUNTER_MAX_EVENTS];        /* shown in the table */
	size_t n_events;
	bool user_only;                 /* every event counts user space only (stat_user_only()) */
};

/* The default events (perf stat's and the rules'), each marked listed if it opens here. 0 or
 * -EINVAL. */
int stat_default_events(struct stat_setup *s);
/* Groups: instructions with cycles, X-misses with its reference event, the others alone. */
void stat_groups(struct stat_setup *s);
/* Groups for counting the calling process (its marks read every thread's groups at each
 * block's start and end, so each group is a read() per thread): every software-context event
 * (software, tracepoint) joins ONE group, the first of them its leader; the hardware groups
 * stay as stat_groups() made them. Software events are not put into a hardware group: they
 * would then count only while the PMU schedules it (estimates where it multiplexes, nothing
 * where it never runs, and no counter_run() splits idle groups in-process), and they are
 * exact alone. Call after stat_groups(). */
void stat_groups_self(struct stat_setup *s);
/* Where kernel-mode counting is refused (kernel.perf_event_paranoid >= 2 without CAP_PERFMON,
 * tried on hwspy itself, as the target's own user is) and user space is not: every event set
 * to count user space only (':u'), as perf stat does, s->user_only set, and (defaults: the
 * default events) those that open so listed; true if so. The events that happen in the kernel
 * alone (context-switches, cpu-migrations) are then not counted (stat_totals_fill()). */
bool stat_user_only(struct stat_setup *s, bool defaults);
/* Whether e happens in the kernel alone (context-switches, cgroup-switches, cpu-migrations):
 * counted in user space alone it is 0. */
bool stat_kernel_only(const struct event_spec *e);
/* Makes e count user space only where s does (the sampling run's events). */
void stat_user_only_event(const struct stat_setup *s, struct event_spec *e);

/* Each thread's voluntary and involuntary switches: the first reading and the last. A thread
 * first seen after the first reading counts from 0. */
struct stat_switches {
	pid_t tid;
	int64_t first_vol, first_invol, vol, invol;
};
struct stat_switch_log {
	struct stat_switches *t;
	size_t n, cap;
	bool started_late;              /* a reading was taken: threads seen now are new */
};
void stat_switches_read(struct stat_switch_log *l, pid_t pid);
/* The sums since the first reading (-1: no thread read). */
void stat_switches_sum(const struct stat_switch_log *l, int64_t *vol, int64_t *invol);
void stat_switches_release(struct stat_switch_log *l);

/* The threads' Python names (threading's registry), read from the live target pid: what a
 * thread is called in the report. *ret (allocated, the caller's to free) and *ret_n; none
 * (NULL, 0) where the target runs no Python hwspy can read, or has gone. */
void stat_python_names(pid_t pid, struct pyframes_thread_name **ret, size_t *ret_n);

/* Each thread's name: its Python name (py[0..n_py), from stat_python_names()), else name()'s
 * (the sampling run's; NULL, or NULL back: none), else its /proc comm. */
struct stat_names {
	const struct pyframes_thread_name *py;
	size_t n_py;
	const char *(*name)(void *ctx, pid_t tid);
	void *ctx;
};

/* t's events and threads from the stopped counter c. 0 or -ENOMEM (t->threads is the caller's
 * to free). */
int stat_totals_fill(struct stat_totals *t, const struct stat_setup *s, struct counter *c,
		     const struct stat_names *names);
/* Values to make totals of without reading a counter (an interval of the calling process's
 * counting: lib/count.c's marks): thread k's tid tids[k], its event i v[k * s->n_events + i]
 * (raw and times; error, split as the counter gave them; scaled made here from raw and times,
 * as perf stat's estimate), the wall time, pid for /proc's names. */
struct stat_values {
	const pid_t *tids;
	const struct counter_value *v;
	size_t n_threads;
	uint64_t wall_ns;
	pid_t pid;
};
/* As stat_totals_fill(), from in. 0 or -ENOMEM. */
int stat_totals_from(struct stat_totals *t, const struct stat_setup *s,
		     const struct stat_values *in, const struct stat_names *names);
/* The threads' time waiting for the GIL (t->gil, allocated, sorted longest first, named) from
 * in[0..n) (tid, wait_ns, cpu_ns: < 0 where the sampling run does not know it, then the
 * thread's own task-clock where it has one), measured: the sampling run took the switches off
 * the CPU (record_opts.gil_waits; not in exact mode by stops); pid: the process, for /proc's
 * names. 0 or -ENOMEM. */
int stat_gil_waits(struct stat_totals *t, const struct stat_gil_wait *in, size_t n,
		   bool measured, pid_t pid, const struct stat_names *names);

/* The sampling run beside the counters (count_sample.c): its events, cycles (cpu-clock without
 * a PMU) first, then each event a finding names functions by that s counts and that opens here,
 * each sampling on its own (bit i of *ret_leaders: record_opts.leaders), so that a function is
 * named by the samples its own event took where it ran, not by counts read at the CPU's
 * samples, which credit whatever ran at the next one; user space only where s counts so, and
 * then no event that happens in the kernel alone. How many (1 .. max) into ret. */
size_t stat_sampling_events(const struct stat_setup *s, struct event_spec *ret, size_t max,
			    uint32_t *ret_leaders);

/* The sampling run's samples by the event that took each (every event of the run samples on
 * its own) and the innermost Python function each ran (names: the run's events, prof its
 * profile, whose frames the samples name, set once the recorder is made). */
/* count_sample.c */
struct stat_tally {
	const struct profile *prof;
	const struct event_spec *events;
	size_t n_events;
	uint64_t late;                  /* stacks read after their sample in an exact mode
	                                 * (before the capture started: maybe a later one's): not
	                                 * credited, only counted */
	struct stat_tally_event {
		uint64_t *samples, *weight;     /* by frame id, cap of them */
		size_t cap;
		uint64_t n_samples, n_weight;   /* of those with a Python frame */
	} ev[SAMPLER_MAX_EVENTS];
	bool failed;                    /* out of memory: what was counted is short */
};
/* One finished sample: frames (root first) of prof, values[1 + event] what event took; late:
 * read after it in an exact mode. 0, or -ENOMEM. */
int stat_tally_add(struct stat_tally *t, const uint32_t *frames, size_t depth,
		   const uint64_t *values, size_t n_values, size_t event, bool late);
void stat_tally_release(struct stat_tally *t);
/* struct stat_attribution's callback over a tally (ctx). */
size_t stat_functions(void *ctx, const char *ev, struct stat_func *ret, size_t max,
		      uint64_t *ret_samples);

/* ---- count_session.c: a counting session --------------------------------------------------
 *
 * The counters (sampler.h's counting mode) on a process's every thread (and the threads it
 * starts later: inherit), on a command launched and counted from its exec, or on the calling
 * process itself; its threads' switches by kind followed from /proc (at each tick); read live
 * or stopped; then the totals (stat_count_totals()). Nothing here blocks a signal, installs a
 * handler or changes a limit, unless opts.raise_nofile. */
struct stat_count_opts {
	const char *events;             /* "EV[,EV...]"; NULL: the defaults that open here */
	bool user_only_fallback;        /* where kernel mode is refused, user space only (':u'),
	                                 * as perf stat does (stat_user_only()) */
	bool raise_nofile;              /* soft RLIMIT_NOFILE raised to the hard one */
	bool python_names;              /* at the stop, the threads' Python names (pyframes) */
};
struct stat_count {
	struct stat_count_opts o;
	struct stat_setup s;
	struct counter *ctr;
	struct stat_switch_log sw;
	struct pyframes_thread_name *pynames;   /* the threads' Python names, at the stop */
	size_t n_pynames;
	pid_t pid;                      /* the counted process (0: not started) */
	bool stopped;
};
/* The events chosen (o->events, or the defaults), their groups, user space only where asked
 * and needed. 0, -E2BIG (more than COUNTER_MAX_EVENTS), -EINVAL (no list of events),
 * -ENOENT (an event hwspy does not know: its name into bad[0..size)). */
int stat_count_init(struct stat_count *c, const struct stat_count_opts *o, char *bad,
		    size_t size);
/* Starts counting: pid > 0 that process; argv (pid 0) a command launched (counted from its
 * exec, once stat_count_run() lets it go); neither: the calling process (its events grouped
 * by stat_groups_self()). Errors as counter_new()'s. */
int stat_count_start(struct stat_count *c, pid_t pid, char *const *argv);
/* The threads' switches read once (what stat_count_run() does each 250 ms; something else
 * that runs meanwhile, a sampling run, calls it). */
void stat_count_tick(struct stat_count *c);
/* Counts until *stop (may be NULL), duration_ns (0: none) or the target's end, in slices
 * (ticks); a launched command starts here. 0 or -errno. */
int stat_count_run(struct stat_count *c, volatile sig_atomic_t *stop, uint64_t duration_ns);
/* Reads every counter now, counting going on: stat_count_totals() gives these. */
void stat_count_read(struct stat_count *c);
/* Reads every counter now, nothing else (no /proc): what a block of the calling process
 * reads at its start and end (microseconds: one read per group per thread counted). */
void stat_count_read_counters(struct stat_count *c);
/* Stops counting: the last tick, the final values, the threads' Python names (o.python_names,
 * the target still there). Idempotent. */
void stat_count_stop(struct stat_count *c);
/* t's events, threads (named by names, whose py the session fills), switches and wall time
 * from the last reading: 0 or -ENOMEM (t->threads is the caller's to free). */
int stat_count_totals(struct stat_count *c, struct stat_totals *t, struct stat_names *names);
/* Frees everything; counting stopped first. A command launched and never let go is killed. */
void stat_count_release(struct stat_count *c);

#endif
