/*
 * Internal to sampler/: the counter object that count.c (events, groups, values) and
 * count_target.c (attach, launch, the run) share, and counting's test-only entry points. Not
 * for other modules; the public side is count.h.
 */
#ifndef HWSPY_SAMPLER_COUNT_INTERNAL_H
#define HWSPY_SAMPLER_COUNT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/count.h"
#include "sampler/internal.h"

/* What an event is in the layout chosen on the first thread (and kept for every other). */
enum count_role {
	COUNT_NONE,                     /* did not open (error[i] says why) */
	COUNT_ALONE,                    /* opened alone (a group of one, or split) */
	COUNT_LEAD,                     /* leads a group of several */
	COUNT_MEMBER,                   /* in lead[i]'s group */
};

struct count_thread {
	pid_t tid;
	int fds[COUNTER_MAX_EVENTS];    /* -1: not open (or closed at the stop) */
	struct counter_value v[COUNTER_MAX_EVENTS];
	/* opts.skip_idle: the thread's watch (count.c, "reading") */
	int watch_fd;                   /* -1: none (every reading reads the thread) */
	struct perf_event_mmap_page *watch;
	uint32_t watch_lock;            /* its user page's lock before the last reading */
	bool read_once;                 /* the thread was read (since its watch opened) */
	bool idle;                      /* ... and was off the CPU at that reading */
	bool gone;                      /* ... after it exited: its values are final */
};

struct counter {
	struct counter_opts opts;
	struct counter_sys sys;
	size_t n_events;
	struct event_spec events[COUNTER_MAX_EVENTS]; /* attr's exclude_guest/host dropped where
	                                 * the event opens only without them (as perf does) */
	size_t group_of[COUNTER_MAX_EVENTS]; /* the first event with the same group number */
	enum count_role role[COUNTER_MAX_EVENTS];
	size_t lead[COUNTER_MAX_EVENTS];/* a member's leader; the event itself otherwise */
	bool split[COUNTER_MAX_EVENTS];
	bool ran[COUNTER_MAX_EVENTS];   /* a leader's group ran on some thread (no split needed) */
	int error[COUNTER_MAX_EVENTS];
	bool chosen;                    /* the roles are chosen */
	bool at_exec;                   /* the events open with enable_on_exec */
	bool started;                   /* counting runs: events opened now count at once */
	bool stopped;
	pid_t pid;
	bool launched;                  /* pid is our child, forked by counter_new() */
	bool released;                  /* ... and let go to its exec */
	int exec_pipe;                  /* the launched child's exec errno (see target.c), or -1 */
	int pidfd;                      /* the target, to wait for its exit, or -1 */
	int fd_limit;                   /* RLIMIT_NOFILE, raised if opts.raise_nofile */
	struct count_thread *threads;
	size_t n_threads, cap_threads;
	uint64_t start_ns, end_ns;
	struct counter_stats stats;
	struct counter_value totals[COUNTER_MAX_EVENTS];
};

/* count.c */
/* Tests only: the perf_event_attr counter_new() opens events[i] with (leader: it leads its
 * group), checked against `perf stat -vv`. */
void counter_attr(const struct event_spec *e, bool leader, bool at_exec, struct perf_event_attr *ret);
/* Whether err is a thread's failure (gone, out of fds or memory), not an event's. */
bool count_thread_error(int err);
/* A new entry of the table for tid (fds -1, not counted until opened), or NULL. */
struct count_thread *count_thread_new(struct counter *c, pid_t tid);
/* Opens thread t's events (the last entry of the table; the roles chosen here on the first
 * one): 0, or -errno, t's fds closed and t dropped from the table. */
int count_thread_open(struct counter *c, struct count_thread *t);
/* Enables (or disables) every group of every thread: each leader's fd and each event alone. */
void count_enable_all(struct counter *c, bool on);
/* Reads every thread's values. */
void count_read_all(struct counter *c);
/* Splits the groups that were enabled but never ran on any thread (their events reopened
 * alone, counting from now on): how many. Reads only the groups not yet seen running. */
int count_split_idle(struct counter *c);

/* count_target.c */
/* Attach (every thread, the race handled), or the child's one thread (at_exec, launch). */
int count_attach(struct counter *c);
int count_launch(struct counter *c);
/* Lets a launched child exec and waits for the exec: 0, or its errno (it exited). */
int count_release(struct counter *c);
/* Waits up to timeout_ms for the target's exit: true if it exited (its status kept). */
bool count_wait_exit(struct counter *c, int timeout_ms);
/* The end of counter_free() for a launched child never let go: killed and reaped. */
void count_drop_child(struct counter *c);

#endif
