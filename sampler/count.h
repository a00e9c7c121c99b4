/*
 * count: counting mode (count.c: events, groups, values; count_target.c: attach, launch, the
 * run; their shared object in count_internal.h).
 *
 * Counting mode: the totals behind `hwspy stat`, as `perf stat` counts them. Every event is
 * opened as a counter (no sampling, no ring) on every thread of the target, in groups
 * (opts.groups), inherit=1 so that threads (and child processes) started later count in the
 * counters of the thread that started them. Nothing stops the target or sends it a signal;
 * counter_stop() closes every fd, so nothing of hwspy is left on it.
 *
 * Groups: each group's leader reads PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED |
 * TOTAL_TIME_RUNNING (Linux allows GROUP with inherit for counting; where a kernel refuses
 * the combination, -EINVAL at the leader's open, every event is read from its own fd with the
 * two times instead: stats.group_read says which). A group the PMU cannot schedule whole is
 * split, its events opened alone (value.split): where a member's open fails with EINVAL or
 * ENOSPC in the group and that event opens alone (more events than the PMU has counters, a
 * mix of two hardware PMUs; software events and msr/ always group), and where counter_run()
 * finds a group that was enabled yet never ran (checked every 100 ms until it has run on
 * some thread: it is reopened alone, counting from then on, on the threads that have counters
 * of their own; what threads that inherited the group's counters count is lost). Without
 * counter_run() such a group is only told (never_ran). An event that does not open with perf's
 * exclude_guest retries without it, as perf does (msr/ refuses the exclusion bits).
 *
 * Attach (opts.pid): the threads of /proc/PID/task get their groups (each its own, disabled
 * until every one is open, then enabled: the counting's start). A thread started meanwhile is
 * never counted twice, and missed only where nothing can tell (threads_raced), by when its
 * number was given out (numbers wrapping at pid_max): /proc/sys/kernel/ns_last_pid is read
 * before the first listing (B) and after the last open (A), then the tasks are listed again. A
 * thread the second listing finds and the first did not: numbered up to B, it existed (half
 * made) before any counter did, inherited none, and gets its own; numbered after A, it began
 * after every thread listed had counters, so its creator's counters count it (inherit): it gets
 * none (unless its creator was one of those unlisted threads, which got its counters only
 * after: a window of microseconds, taken as closed). Where ns_last_pid cannot be read, every
 * such thread is raced. Between B and A it was started while the counters opened: it inherited
 * iff its creator's opened first, which nothing tells; it is taken as inherited (its creator is
 * likeliest a thread opened before it: /proc lists by age) and counted in stats.threads_raced,
 * where the caller can say the totals may miss it. A thread that exits keeps its final counts
 * (its fds stay open until counter_stop()); a thread whose counters cannot be opened for want
 * of fds (after the soft RLIMIT_NOFILE is raised to the hard one, where opts.raise_nofile
 * asks) or because it vanished is counted in stats.threads_failed.
 *
 * Launch (opts.argv, pid 0): forked, the child waits before its exec while the counters are
 * opened on it (disabled, enable_on_exec, inherit); counter_run() lets it exec (one never let
 * go is killed and reaped by counter_free(): it was to run counted). at_exec: the
 * same on a child the caller forked and holds stopped before its exec (as sampler_new()'s
 * launch leaves one): counting starts at the exec, once the caller lets it go.
 *
 * Values (struct counter_value): raw as counted, its times, scaled = raw * enabled / running
 * (perf stat's estimate where the PMU multiplexed), per thread and summed over the threads;
 * error says why an event did not open on any thread (-ENOENT no such event here, ...).
 */
#ifndef HWSPY_SAMPLER_COUNT_H
#define HWSPY_SAMPLER_COUNT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/events.h"

#define COUNTER_MAX_EVENTS 32
struct counter_sys;
struct counter_opts {
	pid_t pid;                      /* count every thread of pid (threads it starts later are
	                                 * counted with the thread that started them: inherit) */
	bool at_exec;                   /* pid is a launched child stopped before its exec (as the
	                                 * sampler's launch leaves it, see sampler_new()/recorder):
	                                 * count from its exec on (enable_on_exec), one thread */
	char *const *argv;              /* or, pid 0: launch this command (argv[0] searched in PATH),
	                                 * counting from its exec; it keeps its stdin/stdout/stderr */
	const struct event_spec *events;/* from events_parse() */
	const unsigned *groups;         /* events[i] is in group groups[i]: events with one number
	                                 * open as one perf group, the first of them its leader;
	                                 * NULL: each event alone */
	size_t n_events;                /* 1..COUNTER_MAX_EVENTS */
	/* added: tests only, the open and read system calls (sampler/internal.h); NULL: the
	 * kernel's */
	const struct counter_sys *sys;
	bool skip_idle;                 /* a reading skips the threads that have not run since
	                                 * the last (count.c, "reading": a task-clock watch per
	                                 * thread, an fd and two pages more); for a process
	                                 * that reads itself often (hwspy.count's blocks) */
	bool raise_nofile;              /* raise the process's soft RLIMIT_NOFILE to the hard one
	                                 * (a command sets it; false: the limit is left as it is).
	                                 * Counting blocks no signal (it waits on a pidfd): it has
	                                 * no sigchld to ask for */
};
struct counter_value {
	uint64_t raw;                   /* what the counter counted */
	uint64_t enabled_ns, running_ns;/* time enabled and time running (multiplexing) */
	double scaled;                  /* raw * enabled / running, the estimate perf stat prints;
	                                 * raw where running == enabled; 0 where running is 0 */
	int error;                      /* 0, or why it was not counted at all: -ENOENT (no such
	                                 * event on this machine), -EACCES, -EOPNOTSUPP, -EINVAL ... */
	bool split;                     /* its group could not be scheduled whole and its events
	                                 * were opened alone instead */
	bool never_ran;                 /* enabled but running_ns 0 (never scheduled) */
};
struct counter_stats {
	uint64_t wall_ns;               /* from counting's start (attach, or exec) to its end
	                                 * (at_exec: from counter_new()'s return, launch: from
	                                 * the release, each just before the exec) */
	unsigned threads;               /* threads opened (counter_n_threads) */
	unsigned threads_failed;        /* threads whose counters could not be opened (gone, fds) */
	bool target_exited;
	int exit_status;                /* wait status of a command counter_new() launched */
	/* added to the API stat is written against: */
	unsigned threads_raced;         /* attach: threads started while the counters opened, taken
	                                 * as counted by their creator's (see above) */
	bool group_read;                /* groups read with PERF_FORMAT_GROUP (else fd by fd) */
	uint64_t reads, reads_skipped;  /* threads read by readings, and skipped (skip_idle) */
	unsigned watched;               /* skip_idle: threads with a watch */
};
struct counter;
/* Opens every event on every thread (attach), or launches argv / takes the stopped child
 * (counting starts at its exec, once counter_run() or the caller lets it go). Errors:
 * -ESRCH no such process, -EACCES/-EPERM not allowed, -ENOENT none of the events opens here,
 * -ENOEXEC/-ENOENT the command cannot be run, -EMFILE, -ENOMEM. An event that does not open
 * (no PMU here ...) is no error of counter_new() as long as one does: its value says why. */
int counter_new(const struct counter_opts *o, struct counter **ret);
pid_t counter_pid(const struct counter *c);
/* Counts until *stop is set, duration_ns has passed (0: no limit), or the target exits
 * (a launched command starts here). 0 or -errno. Not needed when something else (the
 * recorder) runs meanwhile: the kernel counts by itself; counter_stop() then reads. */
int counter_run(struct counter *c, volatile sig_atomic_t *stop, uint64_t duration_ns);
/* Ends counting: disables and reads every counter (final values), closes the events. A
 * launched command is left running (its pid from counter_pid()). Idempotent. */
void counter_stop(struct counter *c);
/* Reads every counter now, counting going on (a live reading): counter_totals() and
 * counter_thread() then give these values, and stats.wall_ns the time since counting started.
 * Nothing after counter_stop(). */
void counter_read(struct counter *c);
/* After counter_stop() (or counter_read()): event i's values summed over every thread (n_events entries), each
 * thread's scaled on its own and added; and thread k's (0 <= k < counter_n_threads()): its
 * tid returned, its values into ret. */
void counter_totals(const struct counter *c, struct counter_value *ret);
size_t counter_n_threads(const struct counter *c);
pid_t counter_thread(const struct counter *c, size_t k, struct counter_value *ret);
const struct counter_stats *counter_stats(const struct counter *c);
void counter_free(struct counter *c);       /* stops first; NULL a no-op */

#endif
