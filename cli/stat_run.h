/*
 * stat_run (cli): the measuring side of hwspy stat (stat_collect.c), between cmd_stat.c and
 * the report: the events and their groups, context switches by kind from /proc, the totals
 * from the counter, the functions behind an event from the sampling run's profile. Internal
 * to cli/.
 */
#ifndef HWSPY_CLI_STAT_RUN_H
#define HWSPY_CLI_STAT_RUN_H

#include "cli/stat.h"
#include "output/profile.h"
#include "record/record.h"
#include "sampler/sampler.h"

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
/* Where kernel-mode counting is refused (kernel.perf_event_paranoid >= 2 without CAP_PERFMON,
 * tried on hwspy itself, as the target's own user is) and user space is not: every event set
 * to count user space only (':u'), as perf stat does, s->user_only set, and (defaults: the
 * default events) those that open so listed; true if so. The events that happen in the kernel
 * alone (context-switches, cpu-migrations) are then not counted (stat_totals_fill()). */
bool stat_user_only(struct stat_setup *s, bool defaults);
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

/* Each thread's name: its Python name (names[0..n), from stat_python_names()), else the
 * sampling run's (prof, may be NULL), else its /proc comm. */
struct stat_names {
	const struct pyframes_thread_name *py;
	size_t n_py;
	const struct profile *prof;
};

/* t's events and threads from the stopped counter c. 0 or -ENOMEM (t->threads is the caller's
 * to free). */
int stat_totals_fill(struct stat_totals *t, const struct stat_setup *s, struct counter *c,
		     const struct stat_names *names);
/* The threads' time waiting for the GIL (t->gil, allocated), from rec's switches off the CPU
 * (record_opts.gil_waits); not measured in exact mode by stops. */
void stat_gil_waits(struct stat_totals *t, struct recorder *rec, const struct stat_names *names);

/* The sampling run's samples by the event that took each (record_sample.event: every event
 * of the run samples on its own) and the innermost Python function each ran: the recorder's
 * sink (stat_tally_sample, ctx the tally; names the run's events, prof its profile, whose
 * frames the samples name, set once the recorder is made). */
struct stat_tally {
	const struct profile *prof;
	const struct event_spec *events;
	size_t n_events;
	struct recorder *rec;           /* in an exact mode, a stack read after its sample (before
	                                 * the capture started: read late, maybe a later one's) is
	                                 * not credited, only counted in late */
	uint64_t late;
	struct stat_tally_event {
		uint64_t *samples, *weight;     /* by frame id, cap of them */
		size_t cap;
		uint64_t n_samples, n_weight;   /* of those with a Python frame */
	} ev[SAMPLER_MAX_EVENTS];
	bool failed;                    /* out of memory: what was counted is short */
};
int stat_tally_sample(void *ctx, const struct record_sample *s);
void stat_tally_release(struct stat_tally *t);
/* struct stat_attribution's callback over a tally (ctx). */
size_t stat_functions(void *ctx, const char *ev, struct stat_func *ret, size_t max,
		      uint64_t *ret_samples);

#endif
