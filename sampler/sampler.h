/*
 * sampler: perf events on every thread of a target process, and the samples they produce.
 *
 * One API per header: event names -> attrs in events.h, the capture program in capture.h,
 * counting in count.h, and here the sampler. The sampler (perf.c: events and rings of a thread, ring.c: record decoding, target.c: attach,
 * launch, run loop and teardown, tracer.c: exact mode's ptrace thread, tree.c: the target's
 * child processes at an attach) attaches to a running
 * process (every thread, and threads started later) or launches a command and starts counting
 * at its exec, opens one event group per thread (events[0] samples, the others are read with
 * every sample, or sample on their own: opts.leaders), drains the mmap rings and hands each decoded sample to a callback. What else
 * the caller must know of comes as events (struct sampler_event, opts.event_fn): an exec of the
 * target, a thread getting the capture program (whose root the caller then gives).
 * Counting mode (count.h) opens the same events as counters only, for the totals of
 * `hwspy stat`.
 *
 * Rings: one per thread in exact mode by stops (perthread.c: each thread's fd signals that
 * thread); one per CPU with the capture and in nonblocking mode (percpu.c: perf's layout,
 * every attached thread's group opened on each CPU with inherit=1, so that threads created
 * later carry the events, the capture program included, and are learned from
 * PERF_RECORD_FORK; locked memory then follows the CPUs, while fds are CPUs x events per
 * attached thread: where those are more than RLIMIT_NOFILE leaves and more than a ring per
 * thread takes, a ring per thread). The two are implementations of one internal interface
 * (struct ring_layout), chosen once in sampler_new().
 *
 * Without exact mode (nonblocking), the rings are read on a tick of half the sampling interval
 * (1 to 5 ms), not at each sample: waking the reader for every sample costs the sampled
 * thread far more (its interrupt sends the wakeup), so reads are late by half a tick on
 * average.
 *
 * Exact mode, three ways:
 * - signal (sigcapture.h; opts.signal): the calling process's own threads, without BPF or
 *   privileges (perf_event_paranoid 2 lets a process sample itself in user space): each
 *   sampling event has perf's sigtrap, and a SIGTRAP handler copies the overflowing thread's
 *   frames at the overflow, as the capture program does; the sample arrives with that copy
 *   (sample->capture), the same record. User space only (the events get exclude_kernel), so no
 *   system call is ever interrupted. Needs opts.pid == getpid(); refused (-EBUSY) where the
 *   host has a SIGTRAP handler of its own (sampler_signal_probe()). The threads that call
 *   sampler_new() and sampler_run() are left out (their signals dropped at once).
 * - capture (capture.h; opts.capture): a BPF program on each
 *   thread's sampling event copies the thread's frames at the overflow, in the kernel; the
 *   sample arrives with that copy (sample->capture). Nothing is stopped. Needs CAP_BPF +
 *   CAP_PERFMON (or root).
 * - stops (opts.exact): each sample also stops the thread that caused it (the event's fd
 *   signals that thread; a PTRACE_SEIZE tracer sees the signal-delivery-stop), the callback
 *   runs while the thread is stopped (sample->stopped), then the thread is resumed with the
 *   signal suppressed. Stops have no side effects: the signal is one the target does not
 *   catch and whose delivery does nothing (SIGURG, SIGWINCH, or one it ignores),
 *   so that one reaching it anyway (hwspy killed) is harmless; no thread is ever interrupted
 *   or left stopped. Every ptrace call runs on a tracer thread of the sampler (sampler_new(),
 *   sampler_run(), sampler_stop() hand it their work and wait: callbacks run on that thread
 *   meanwhile, and the caller's signals are blocked so that they interrupt the tracer's wait).
 *   Teardown disables every event, answers every stop of ours, then ends the tracer thread,
 *   which lets every running thread go without waking it (no PTRACE_INTERRUPT: that makes
 *   epoll_wait, recv with a timeout, sigtimedwait ... fail with EINTR in the target).
 *
 * No thread is left out silently. sampler_new() raises the soft RLIMIT_NOFILE to the hard one
 * where opts.raise_nofile asks (after a launched command is forked: the command keeps its own
 * limit). A thread whose events
 * cannot be opened or mapped for lack of a resource (file descriptors, locked memory, memory,
 * room in the thread table) is counted in stats.threads_failed_by[] under its reason and the
 * others are sampled on; sampler_new() fails only when no thread at all could be set up. A ring
 * whose mmap goes over the locked-memory limit is retried at half its size, down to a floor
 * that still holds two of the largest records (sample with its stack copy, capture record);
 * the threads given a smaller ring are counted in stats.threads_shrunk, and threads opened
 * after that start at the smaller size.
 *
 * Errors (negative errno): -ESRCH no such process, -EPERM ptrace refused (exact mode only:
 * another tracer, Yama, no CAP_SYS_PTRACE; retry with exact = false), -EBUSY no harmless
 * signal to stop the target with (exact mode only: it catches SIGURG and SIGWINCH and ignores
 * none; retry with exact = false), -EACCES perf events not allowed (perf_event_paranoid,
 * CAP_PERFMON), -ENOENT event not supported by this machine (no PMU), -EINVAL bad attr,
 * -ENOEXEC/-ENOENT command could not be executed (launch), and when no thread could be set
 * up: -ENOBUFS its ring, even at the floor, is over the locked-memory limit (RLIMIT_MEMLOCK
 * beyond kernel.perf_event_mlock_kb; mmap says EPERM), -EMFILE / -ENFILE out of file
 * descriptors, -ENOMEM. Library code never prints.
 */
#ifndef HWSPY_SAMPLER_H
#define HWSPY_SAMPLER_H

#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/events.h"     /* opts.events */
#include "sampler/capture.h"    /* sample.capture, opts.capture_spec */

#define SAMPLER_MAX_EVENTS 8

/* How events[i] of a sampler with opts o samples (0 < i, a bit of o->leaders): at
 * events[i].attr.sample_period where the caller set one, else at events_default_period() for an
 * event that counts occurrences (its samples then weigh what it counted, as events[0]'s do),
 * else at o->freq samples per second (SAMPLER_LEADER_FREQ where o samples at a period). */
#define SAMPLER_LEADER_FREQ 100
struct sampler_opts;
void sampler_leader_rate(const struct sampler_opts *o, size_t i, uint64_t *ret_freq,
			 uint64_t *ret_period);

/* ---- the sampler -------------------------------------------------------------------------- */

struct sampler;
struct sampler_capture_spec;

/* What the sampler tells its caller besides samples, through opts.event_fn(opts.event_ctx, e).
 * e (and e->sampler's use) is valid only during the call.
 * - SAMPLER_EVENT_EXEC: the target exec'd a new program (exact mode: the tracer sees it; tid is
 *   the target's pid), so what the caller knows of its image is stale. Told on the thread that
 *   runs the sample callback (the tracer thread in exact mode), just before the first sample
 *   handed over after the exec was seen, in stream order: it is not told until such a sample
 *   comes (an exec followed by no sample is never told), and several execs before one sample
 *   are told once. stats.execs counts every exec. The receiver may do what a sample callback
 *   may (sampler_break(), sampler_capture_set_root(), the getters).
 * - SAMPLER_EVENT_CAPTURE_THREAD: the capture program is being put on thread tid's events (its
 *   events open, the program is loaded or replaced by sampler_capture_start(), or, per CPU,
 *   the thread is learned from its PERF_RECORD_FORK). The receiver answers from inside the
 *   call with sampler_capture_set_root(e->sampler, tid, root) if it knows tid's root; the
 *   thread's entry is made with that root once the call returns (no answer, or 0: no root yet,
 *   and per CPU a root the program found itself stays). Told on the thread inside the sampler
 *   call at work: sampler_new() (before it returns: the receiver has the sampler only as
 *   e->sampler), sampler_capture_start(), sampler_run() or sampler_stop() (threads found
 *   meanwhile); a capture sampler has no tracer thread. The receiver may call
 *   sampler_capture_set_root() (for any thread), sampler_pid() and sampler_stats(), nothing
 *   else of the sampler. */
enum sampler_event_kind {
	SAMPLER_EVENT_EXEC,
	SAMPLER_EVENT_CAPTURE_THREAD,
	/* opts.off_cpu or opts.wall: thread tid was switched out at time_ns (told just after the
	 * sample of that switch; preempted: it was still runnable, an involuntary switch), or in
	 * again.
	 * In stream order per CPU ring: a thread's switch-in and its next switch-out (the
	 * sample) come in that order, but across rings a switch-in may come before the
	 * switch-out it follows. The receiver may do what a sample callback may. */
	SAMPLER_EVENT_SWITCH_OUT,
	SAMPLER_EVENT_SWITCH_IN,
	/* opts.off_cpu or opts.wall: every ring was read through: each record written before
	 * time_ns (of any thread, on any CPU) has been handed over by now */
	SAMPLER_EVENT_DRAINED,
	/* opts.subprocesses: process tid (a child's pid, or a grandchild's) exec'd a new program
	 * (what was known of its image is stale), or exited. In stream order. */
	SAMPLER_EVENT_CHILD_EXEC,
	SAMPLER_EVENT_CHILD_EXIT,
};

struct sampler_event {
	enum sampler_event_kind kind;
	pid_t tid;
	struct sampler *sampler;        /* the sampler telling it (also within sampler_new()) */
	uint64_t time_ns;               /* switches: CLOCK_MONOTONIC, as samples' time_ns */
	bool preempted;                 /* SAMPLER_EVENT_SWITCH_OUT: involuntary */
};

typedef void (*sampler_event_fn)(void *ctx, const struct sampler_event *e);

struct sampler_opts {
	pid_t pid;                      /* attach to this process, or 0 */
	char *const *argv;              /* launch this command (argv[0] searched in PATH), or NULL */
	const struct event_spec *events;/* events[0] samples; others are counted in its group,
	                                 * read with each of its samples, unless leaders says */
	size_t n_events;                /* 1..SAMPLER_MAX_EVENTS */
	uint64_t freq;                  /* samples per second (frequency mode), or 0 */
	uint64_t period;                /* fixed period, used when freq == 0 */
	/* Bit i (0 < i < n_events): events[i] samples on its own, not read at events[0]'s
	 * samples: an event of its own per thread (a group of one), at its own rate
	 * (sampler_leader_rate()), its samples in the same ring, told apart by their id
	 * (PERF_SAMPLE_IDENTIFIER, as opts.wall's switch event) and handed over with
	 * sample.event = i, so that what such an event counts is credited to the code that made it
	 * overflow, not to the code events[0] happens to sample next. With the capture, its
	 * overflows are captured as events[0]'s are; by stops, each stops its thread (one that
	 * overflows as threads go to sleep, a context switch or a migration, does not: its samples
	 * are read after it, not stopped). Not with off_cpu. */
	uint32_t leaders;
	bool exact;                     /* stop the sampled thread at each sample (needs ptrace) */
	unsigned stop_budget_pct;       /* exact: the stop budget, 1-100 (100: none; 0: the default,
	                                 * SAMPLER_STOP_BUDGET_PCT) */
	bool capture;                   /* ready the events for sampler_capture_start() (not with
	                                 * exact); rings are then read in batches, not per sample */
	const struct sampler_capture_spec *capture_spec; /* and start it at once (the interpreter
	                                 * is known): sampler_capture_start() before any event opens,
	                                 * so no sample goes uncaptured; its failure is not
	                                 * sampler_new()'s (see sampler_capturing()) */
	bool signal;                    /* exact by a signal in the calling process (see above;
	                                 * not with exact, capture, argv, off_cpu, wall,
	                                 * subprocesses, kernel_callchain); capture_spec and
	                                 * sampler_capture_start() then start it */
	sampler_event_fn event_fn;      /* told of execs and of threads getting the capture
	                                 * program (struct sampler_event), or NULL */
	void *event_ctx;
	/* launch: exec_fn(exec_ctx, pid) runs inside sampler_new() while the command is stopped
	 * at its exec, its events open, before it runs an instruction of the new program (on the
	 * tracer thread in exact mode), so that what else must count from the exec (hwspy stat's
	 * counters) starts there too. NULL: none. */
	void (*exec_fn)(void *ctx, pid_t pid);
	void *exec_ctx;
	uint32_t stack_user_size;       /* bytes of user stack to copy per sample (0: none) */
	uint64_t regs_user_mask;        /* with stack_user_size: the user registers sampled with
	                                 * each stack copy (attr.sample_regs_user, perf's PERF_REG_*
	                                 * bits, those the caller's unwinder reads; nonzero, else the
	                                 * kernel refuses the event: -EINVAL) */
	bool kernel_callchain;          /* PERF_SAMPLE_CALLCHAIN with kernel frames */
	bool wall;                      /* events[0] samples the CPU (cpu-clock); a switch event of
	                                 * its own per thread (context-switches, period 1) adds
	                                 * the switches off the CPU as samples (sample.off_cpu), as
	                                 * opts.off_cpu describes, their user stack copies
	                                 * switch_stack_size bytes (0: none) */
	uint32_t switch_stack_size;
	bool subprocesses;              /* the processes the target starts (and theirs) carry its
	                                 * events too (per CPU, which this forces), and attached,
	                                 * those it started before (its tree, tree.c) get events
	                                 * of their own: their samples come with their own pid,
	                                 * their execs and exits as events
	                                 * (SAMPLER_EVENT_CHILD_*); the capture program gets their
	                                 * threads' roots from the caller only */
	bool off_cpu;                   /* events[0] is context-switches at period 1: a sample at
	                                 * every switch-out of a target thread, in the kernel
	                                 * (never excluded), with its kernel callchain and the user
	                                 * registers (regs_user_mask, and the first syscall argument
	                                 * SAMPLER_OFF_CPU_ARG_REG), and the switches told as
	                                 * events (SAMPLER_EVENT_SWITCH_*). With the capture on
	                                 * x86-64: neither, its records saying why instead
	                                 * (sample_capture.wait; before capture_spec is given, a
	                                 * program of that alone) */
	unsigned ring_pages;            /* data pages per ring (power of two; 0 = default) */
	unsigned read_ms;               /* capture: the rings read at least this often (0: at a
	                                 * ring's watermark, the run's end, at least every 1 s;
	                                 * every 100 ms with off_cpu or wall) */
	/* What the sampler may do to the calling process (false, the default: nothing; a command,
	 * which owns its process, sets both): */
	bool sigchld;                   /* block SIGCHLD on the calling thread and read it through
	                                 * a signalfd (see sampler_new()): needed by exact mode
	                                 * (-EINVAL without); without it, a launched command's exit
	                                 * is seen at the next look for threads (within 100 ms)
	                                 * rather than at once, and the caller must not reap it */
	bool raise_nofile;              /* raise the process's soft RLIMIT_NOFILE to the hard one
	                                 * (see "No thread is left out" above); without it, the
	                                 * events fit under the limit as it is */
};

/* The register of a switch-out sample's first syscall argument (perf's x86-64 DI): a read's or
 * a select's first argument, the fd or nfds */
#define SAMPLER_OFF_CPU_ARG_REG 5

/* At a ptrace stop of thread tid that a stop of ours caused: if the system call it was in failed
 * with EINTR having done nothing (one of those the kernel does not restart, not close() nor
 * connect()), and the thread is just past its `syscall` instruction, the call is made again,
 * as the kernel does for ERESTARTNOINTR. True if it was. The caller must know the EINTR is
 * its own (no signal of the target's was delivered at this stop). */
bool sampler_undo_eintr(pid_t tid);

struct sample {
	pid_t pid, tid;
	uint64_t time_ns;               /* CLOCK_MONOTONIC, as clock_gettime gives it */
	uint64_t ip;
	uint64_t values[SAMPLER_MAX_EVENTS]; /* values[0] = period of this sample, or for a
	                                      * software event that counts occurrences (faults,
	                                      * switches, migrations) what it counted on this thread
	                                      * since its last sample (periods of such an event do
	                                      * not add up to its count in frequency mode, in perf
	                                      * neither); values[i] = what event i counted on this
	                                      * thread since its last sample */
	size_t n_values;
	size_t event;                   /* the event whose overflow this is: 0, or a bit of
	                                 * opts.leaders, whose sample weighs values[event] (its
	                                 * period, or what it counted since its last sample on this
	                                 * thread), every other value 0 (off-CPU samples: 0) */
	bool stopped;                   /* the thread is stopped while the callback runs (exact) */
	bool off_cpu;                   /* a switch off the CPU: opts.off_cpu's samples, opts.wall's
	                                 * switch event's (values: 1, then 0s) */
	bool user;                      /* the sample IP is in user space */
	const uint64_t *callchain;      /* PERF_SAMPLE_CALLCHAIN (with PERF_CONTEXT_* markers) */
	size_t n_callchain;
	const uint64_t *regs;           /* user regs (PERF_SAMPLE_REGS_USER), NULL if none */
	size_t n_regs;
	const void *stack;              /* user stack copy, NULL if none */
	size_t stack_size;
	const struct sample_capture *capture; /* what the capture program copied at this sample's
	                                 * overflow; NULL if it did not run for it */
};

/* Why a thread was left out (not sampled at all). */
enum sampler_fail {
	SAMPLER_FAIL_FILES,             /* out of file descriptors (RLIMIT_NOFILE; -EMFILE/-ENFILE) */
	SAMPLER_FAIL_MEMLOCK,           /* its ring, even at the floor, over the locked-memory limit */
	SAMPLER_FAIL_MEMORY,            /* -ENOMEM */
	SAMPLER_FAIL_TABLE,             /* more threads than the sampler tracks (-E2BIG) */
	SAMPLER_FAIL_PTRACE,            /* exact mode: it could not be seized */
	SAMPLER_FAIL_OTHER,             /* another error: threads_failed_errno */
	SAMPLER_FAIL_N
};

struct sampler_stats {
	uint64_t samples;               /* samples handed to the callback */
	uint64_t lost;                  /* samples the kernel lost (PERF_RECORD_LOST) */
	uint64_t lost_switches;         /* opts.wall: of those, records of the switch event (its
	                                 * samples off the CPU and their switch records), as the
	                                 * kernel counts them per event (PERF_FORMAT_LOST, read at
	                                 * its close); the rest were the CPU event's or the
	                                 * capture's */
	bool switch_lost_known;         /* ... the kernel counts them (Linux 6.0+) */
	uint64_t throttled;             /* PERF_RECORD_THROTTLE records */
	uint64_t stops;                 /* exact mode: signal-delivery-stops handled */
	uint64_t stops_without_sample;  /* stops that found no sample in the ring */
	uint64_t signals_forwarded;     /* other signals passed on to the target unchanged */
	uint64_t eintr_undone;          /* exact mode: system calls our signal made fail with
	                                 * EINTR (a sample as they were about to sleep), made
	                                 * again at the stop */
	uint64_t budget_late;           /* exact mode: samples read late, without a stop, because
	                                 * their thread had spent more than the stop budget of the
	                                 * last SAMPLER_STOP_WINDOW_MS stopped by us */
	uint64_t budget_trips;          /* ... times a thread went over that budget */
	uint64_t signal_changes;        /* exact mode: the target began to catch our signal,
	                                 * and another harmless one took its place */
	uint64_t threads_seen;          /* distinct threads that had events opened */
	uint64_t threads_failed;        /* threads left out: the sum of threads_failed_by[] */
	uint64_t threads_failed_by[SAMPLER_FAIL_N]; /* ... by reason */
	int threads_failed_errno;       /* the last SAMPLER_FAIL_OTHER error (negative errno) */
	uint64_t threads_shrunk;        /* threads given a smaller ring than asked (memlock) */
	unsigned cpu_rings;             /* per-CPU layout: rings mapped, one per CPU (else 0) */
	unsigned cpu_rings_shrunk;      /* ... of which smaller than asked (memlock) */
	unsigned ring_pages;            /* data pages per ring asked for */
	unsigned ring_pages_min;        /* the fewest data pages a thread's ring got (0: none) */
	uint64_t start_ns;              /* when the events began to count (CLOCK_MONOTONIC): a
	                                 * launch's exec, or the attach's first thread opened */
	uint64_t execs;                 /* the target exec'd a new program (SAMPLER_EVENT_EXEC) */
	uint64_t captured;              /* samples that came with a capture */
	uint64_t capture_mismatched;    /* capture records not followed by their sample (dropped) */
	unsigned capture_max_nodes;     /* the most nodes a capture copies (0: none started) */
	/* how the capture knows a code it read before unread (capture.h's version_at): 0 it
	 * does not, 1 + spec.version_kind */
	int capture_versions;
	uint64_t capture_ids_missed;    /* captured nodes whose code's identity the program left
	                                 * out and the reader did not hold (capture_ids.c): their
	                                 * code checked against memory instead */
	uint64_t capture_threads_failed;/* times a thread could not get the capture program (no
	                                 * free slot, it exited): its samples come uncaptured */
	/* opts.signal: SIGTRAPs of ours handled (seen), of those with a record made (taken), dropped at once (excluded: the
	 * caller's threads), dropped for want of room (a thread's ring full, or no slot left),
	 * not ours (passed on as the disposition found would), records whose sample was lost
	 * (unpaired); the handler's time making records, in all and at most */
	uint64_t signal_seen, signal_taken, signal_excluded, signal_dropped, signal_foreign, signal_unpaired;
	uint64_t signal_self;           /* samples of those excluded threads, dropped as read */
	uint64_t signal_ns_total, signal_ns_max;
	/* opts.signal: samples read before their signal's record, held a while (latehold.c), and
	 * of those, the ones whose record came while they were held (the rest: read late) */
	uint64_t signal_held, signal_held_paired;
	bool target_exited;             /* the target process ended during the run */
	int exit_status;                /* its wait status, if it was our child */
};

/* Exact mode by stops: the most of a thread's time its stops may take (by default; see
 * opts.stop_budget_pct), measured per thread
 * over a sliding window (CLOCK_MONOTONIC time stopped, from its sample to its resume, against
 * the time elapsed, since the thread's events opened if that is shorter). Past it the thread's
 * signal is off and its samples are read late, without a stop (stats.budget_late), until the
 * share is back under the budget: a stop can cause the next sample (a page fault that our
 * pending signal makes the kernel retry) and would otherwise hold the target at one spot. */
#define SAMPLER_STOP_BUDGET_PCT 5
#define SAMPLER_STOP_WINDOW_MS 1000

typedef void (*sampler_sample_fn)(void *ctx, const struct sample *s);

/* Whether opts.signal can work in this process: 0, -EBUSY (the host has a SIGTRAP handler, or
 * another sampler uses it), -ENOTSUP (not x86-64). */
int sampler_signal_probe(void);

/* Creates the sampler and attaches or launches (a launched command runs from its exec on,
 * opts.exec_fn called just before; its samples wait in the rings until sampler_run()).
 * Errors as above; on error nothing is left attached or running (nor SIGCHLD blocked).
 * With opts.sigchld (else the signal mask is left alone and no signalfd is made), SIGCHLD is
 * blocked on the calling thread (read through a signalfd: ptrace stops, the launched
 * command's exit) until sampler_free(), which unblocks it if the caller had not blocked it
 * itself: free samplers on the thread that made them, the last made first. */
int sampler_new(const struct sampler_opts *opts, struct sampler **ret);
/* The target's pid (the launched child's, in launch mode). */
pid_t sampler_pid(const struct sampler *s);
/* Samples until *stop is set, duration_ns (0: no limit) has passed, or the target exits.
 * Returns 0, or -errno on a failure that ended sampling early (samples so far were delivered;
 * -EBUSY: exact mode, the target began to catch every harmless signal). */
int sampler_run(struct sampler *s, sampler_sample_fn fn, void *ctx, volatile sig_atomic_t *stop,
		uint64_t duration_ns);
/* Exact mode: releases the target completely, as sampler_stop() does but keeping the events
 * (disabled): nothing of hwspy then stops or traces it, so hwspy itself may stop (SIGTSTP)
 * without freezing it. sampler_resume() (or the next sampler_run()) re-attaches, threads
 * started meanwhile included, and sampling goes on. No-ops in the other modes, where nothing
 * is traced and a stopped hwspy costs the target nothing (a ring that fills loses samples,
 * counted). Returns 0; sampler_resume() -errno as sampler_new() (-EBUSY: the target now
 * catches every harmless signal). */
int sampler_pause(struct sampler *s);
int sampler_resume(struct sampler *s);
/* From the callback: sampler_run() returns once the samples at hand are handed over (0), so
 * that its caller can act before sampling on (e.g. start a capture). */
void sampler_break(struct sampler *s);
/* Exact mode: fn(ctx) runs right after each stopped thread is resumed, so work that does not
 * need the stop (unwinding a stack copy, symbol lookups) can be done off the target's time. */
void sampler_set_resumed_fn(struct sampler *s, void (*fn)(void *ctx));
/* Ends sampling: disables every event, hands the samples still in the rings to the run's
 * callback (not stopped), closes the events and detaches, resuming every thread. Stats stay
 * readable. A launched child is left running. Idempotent. */
void sampler_stop(struct sampler *s);
/* Wakes a sampler_run() now blocked in another thread (or the next one, if none is), so that
 * it looks at its stop flag at once instead of at its next ring read (up to 100 ms): set the
 * flag, then call this. Any thread; async-signal-safe (a write(2) to an eventfd; errno kept). */
void sampler_wake(struct sampler *s);
/* sampler_stop() if not done, then frees, and (opts.sigchld) gives the calling thread back
 * SIGCHLD as it was before sampler_new(). NULL is a no-op. */
void sampler_free(struct sampler *s);
const struct sampler_stats *sampler_stats(const struct sampler *s);

/* Counting (count.h) is its own API; included here for the clients written against the one
 * sampler.h of before (cli/stat), until they include count.h themselves. */
#include "sampler/count.h"

#endif
