/*
 * hwspy.h: libhwspy, the engine of hwspy as one library. The commands (cli/), the Python
 * package and the monitor are its clients and include nothing else of it.
 *
 * What it does: events (parse, probe, list); counting (a process, or the calling one: totals
 * per event and per thread, derived metrics); recording (a process, a launched command or the
 * calling one: samples turned into stacks of Python, native and kernel frames, each finished
 * sample handed to a sink, or kept in a profile); the snapshot of every thread's stack (dump);
 * the findings (a diagnosis from counts and a profile, as data); the live table `top` shows;
 * writing and reading every profile format.
 *
 * The contract, for every function below:
 * - Errors: functions returning int return >= 0 on success and -errno on failure. The failure's
 *   reason, in words a user can act on ("event 'cycles' is not supported on this machine (no
 *   hardware PMU)"), is hwspy_reason()'s until the next hwspy call on the same thread. Domain
 *   meanings reuse errno: -ESRCH the target is gone, -EPERM / -EACCES not allowed, -ENOENT no
 *   such event or no interpreter, -ENOTSUP an unsupported Python or event, -EINVAL a bad
 *   argument, -ENOMEM.
 * - The library never prints, never exits, never installs a signal handler, blocks no signal of
 *   the caller's and changes no resource limit, unless an option says so (the command line's
 *   own choices are options of the same functions).
 * - Handles are opaque and the caller's: hwspy_X_new()/hwspy_X_free() (free(NULL) is a no-op),
 *   everything they allocated freed by their _free. Strings and arrays a handle returns stay
 *   valid until the next call on that handle, unless said otherwise.
 * - Threads: a handle is used by one thread at a time; different handles may be used from
 *   different threads. What blocks, and for how long, is said at each function. Callbacks run on
 *   the thread that called the function that runs them, unless said otherwise.
 * - Units: every count as the kernel gave it, scaled for multiplexing where said; times in
 *   nanoseconds.
 */
#ifndef HWSPY_H
#define HWSPY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== common ================================================================================ */

/* The library's version, "0.1.0". */
const char *hwspy_version(void);
/* Why the last failing hwspy call on this thread failed, in one line (no trailing newline);
 * "" when there is nothing to say. */
const char *hwspy_reason(void);

/* ==== events ================================================================================ */

/* Events by name, as perf names them: "cpu-clock", "cycles:u", "L1-dcache-load-misses",
 * "r01c2", "pmu/event=0x3c/", "sched:sched_switch". A list is an opaque handle holding each
 * event parsed (the perf attributes stay inside the library); the recording takes one. */
#define HWSPY_MAX_EVENTS 8              /* events one recording samples and reads */

enum hwspy_event_kind {
	HWSPY_EVENT_HARDWARE,
	HWSPY_EVENT_HW_CACHE,
	HWSPY_EVENT_SOFTWARE,
	HWSPY_EVENT_RAW,                /* r<hex> */
	HWSPY_EVENT_PMU,                /* pmu/.../ from sysfs */
	HWSPY_EVENT_TRACEPOINT,         /* subsys:name from tracefs */
};

/* One named event of the table `hwspy list` prints (raw and pmu forms are not in it). */
struct hwspy_event_info {
	const char *name;               /* "cycles", "page-faults" */
	const char *alias;              /* another accepted name, or NULL */
	enum hwspy_event_kind kind;
	const char *desc;               /* one line */
};

struct hwspy_events;

/* An empty list: 0, or -ENOMEM. */
int hwspy_events_new(struct hwspy_events **ret);
void hwspy_events_free(struct hwspy_events *ev);
/* Parses NAME[:MODIFIERS] and appends it: its index (>= 0), or -ENOENT unknown name, -EINVAL
 * malformed, -E2BIG the list is full (HWSPY_MAX_EVENTS). Opens nothing. */
int hwspy_events_add(struct hwspy_events *ev, const char *name);
/* Parses a comma-separated list ("cpu-clock,page-faults:u"; a pmu/a=1,b=2/ keeps its commas)
 * and appends each: how many, or as hwspy_events_add() (the reason names the event). */
int hwspy_events_add_list(struct hwspy_events *ev, const char *list);
size_t hwspy_events_count(const struct hwspy_events *ev);
const char *hwspy_events_name(const struct hwspy_events *ev, size_t i);
enum hwspy_event_kind hwspy_events_kind(const struct hwspy_events *ev, size_t i);
const char *hwspy_event_kind_name(enum hwspy_event_kind kind);
/* Facts of event i: it counts occurrences (faults, switches), not time; it happens in the kernel
 * alone (switches, migrations: as ':u' it counts nothing); it overflows as its thread goes to
 * sleep (a switch out, a scheduler tracepoint); it counts user space only (':u'). */
bool hwspy_events_counts_occurrences(const struct hwspy_events *ev, size_t i);
bool hwspy_events_kernel_only(const struct hwspy_events *ev, size_t i);
bool hwspy_events_samples_asleep(const struct hwspy_events *ev, size_t i);
bool hwspy_events_user_only(const struct hwspy_events *ev, size_t i);
/* Makes event i count user space only (':u'): true if it counted kernel mode before. */
bool hwspy_events_set_user_only(struct hwspy_events *ev, size_t i);
/* Opens event i as a counter on pid (0: the calling process) and closes it again: 0 if it
 * opens on this machine, else -errno (-ENOENT: no such event here, e.g. no hardware PMU;
 * -EACCES: not allowed). Blocks for one perf_event_open. */
int hwspy_events_probe(const struct hwspy_events *ev, size_t i, pid_t pid);
/* The table of named events: *ret_n of them, static. */
const struct hwspy_event_info *hwspy_event_table(size_t *ret_n);
/* Up to max known names closest to name (for "did you mean"), best first: how many. */
size_t hwspy_events_suggest(const char *name, const char **ret_names, size_t max);
/* The machine's PMUs (/sys/bus/event_source/devices), names into ret: how many. */
size_t hwspy_pmus(char (*ret)[64], size_t max);
/* PMU's type number (perf_event_attr.type of its events): 0, or -ENOENT. */
int hwspy_pmu_type(const char *pmu, unsigned *ret);
/* Whether the machine has a hardware PMU (no: a VM without one; hardware events -ENOENT). */
bool hwspy_have_hw_pmu(void);
/* What to do instead of event name (a hardware, cache or raw event) on a machine without a
 * hardware PMU, one clause ("sample '-e cpu-clock' instead: CPU time, the closest software
 * event"; where no software event comes near, '-e cpu-clock' for where the time goes and
 * 'hwspy stat'), and its family into *ret_family for lists that group them ("cycles",
 * "instructions", "cache", "TLB", "branch", "NUMA"; NULL: none; ret_family may be NULL): the
 * clause (static), or NULL for an event that needs no hardware PMU or does not parse. */
const char *hwspy_event_no_pmu(const char *name, const char **ret_family);
/* Whether tracepoints can be looked up (tracefs mounted and readable): 0, or -errno; with
 * words for a message (short: the form `hwspy list` prints) into hwspy_tracefs_words(). */
int hwspy_tracefs_state(void);
const char *hwspy_tracefs_words(int r, bool short_form);
/* (diffconv) What probing an event by name found (`hwspy list`): it parses, then opens as a
 * counter on the calling process, and where kernel counting is not allowed, as user space only
 * (':u') - which also tells "no such event" from "not allowed". */
enum hwspy_probe_result {
	HWSPY_PROBE_OK,
	HWSPY_PROBE_USER_ONLY,          /* opens as NAME:u only (perf_event_paranoid) */
	HWSPY_PROBE_NO_PMU,             /* a hardware, cache or raw event on a machine without a
	                                 * hardware PMU */
	HWSPY_PROBE_UNSUPPORTED,        /* not supported here (-ENOENT, -EOPNOTSUPP) */
	HWSPY_PROBE_NOT_ALLOWED,        /* -EACCES, -EPERM even as ':u' */
	HWSPY_PROBE_INVALID,            /* -EINVAL: the kernel refused its attributes */
	HWSPY_PROBE_ERROR,              /* another -errno (*ret_error) */
	HWSPY_PROBE_UNPARSED,           /* name is no event hwspy parses */
};
/* Probes name; *ret_error: the open's 0 or -errno. Blocks for one or two perf_event_open. */
enum hwspy_probe_result hwspy_event_probe_name(const char *name, int *ret_error);

/* recpath: what a command line's -e and its checks need */
/* The items of a comma-separated list as hwspy_events_add_list() splits them (a pmu/a=1,b=2/
 * keeps its commas) into ret: how many, -E2BIG (more than max), -EINVAL (an empty item). */
int hwspy_events_split(const char *list, char (*ret)[96], size_t max);
/* Event i counts only while its thread runs on a CPU (time or instructions: a hardware, cache
 * or raw event, cpu-clock, task-clock). */
bool hwspy_events_counts_on_cpu(const struct hwspy_events *ev, size_t i);
/* The events among ev's (past the first; no tracepoint) that a color metric ("ipc", "mpki",
 * "A/B") is the ratio of, as bits for hwspy_record_opts.leaders: 0 for none. */
uint32_t hwspy_events_color_leaders(const struct hwspy_events *ev, const char *metric);
/* Up to max names of the table's software events that open here (static): how many. */
size_t hwspy_events_working(const char **ret, size_t max);

/* ==== recording ============================================================================= */

/* Sampling a process and turning each sample into a stack of Python, native and kernel frames:
 * a process by pid, a command launched, or the calling process itself.
 *
 *   hwspy_record_opts_init(&o); o.pid = PID;  (or o.argv, or o.self)
 *   hwspy_recorder_new(&o, sink, ctx, &rec);  nothing opened yet
 *   hwspy_recorder_start(rec);                attach (the interpreter found) or launch, the mode
 *                                             chosen and fallen back from (notes), events opened
 *   hwspy_recorder_run(rec, &run);            samples until stopped, the duration or the end
 *   hwspy_recorder_profile(rec) / stats what was recorded
 *   hwspy_recorder_free(rec);
 *
 * Modes: exact by a BPF capture where allowed (nothing stopped), else exact by ptrace stops of
 * the sampled thread, else nonblocking (each stack read just after its sample). AUTO tries them
 * in that order and says each fallback through opts.note_fn; stops are read through SIGCHLD,
 * so without opts.sigchld (and always for the calling process, self) nothing is stopped:
 * capture or nonblocking. Recording the calling process works from any thread:
 * the threads that call this recorder's functions, and any the library starts, are left out
 * of its samples (stats.excluded counts what they had).
 *
 * Side effects are the options': SIGCHLD is blocked on the calling thread (read through a
 * signalfd) only with opts.sigchld, RLIMIT_NOFILE raised only with opts.raise_nofile, both
 * false by default (a library inside someone's process); the command line sets both. No signal
 * handler is installed but in HWSPY_RECORD_SIGNAL: the caller owns the stop flag.
 *
 * HWSPY_RECORD_SIGNAL (self, user space only; what AUTO takes for self where BPF is refused, as
 * for an unprivileged user at perf_event_paranoid 2): each sampling event sends SIGTRAP to the
 * thread whose counter overflowed (perf's sigtrap), and a handler copies that thread's Python
 * frames then, through process_vm_readv on the process itself (a bad pointer is an error, never
 * a crash): exact samples (stats.captured), nothing stopped. The events overflow in user mode
 * only, so the signal never interrupts a system call (no EINTR; SA_RESTART besides). The
 * handler is installed at start and stays for the process's life (a signal of the events can
 * come after their close): it drops those and gives any other SIGTRAP the disposition found
 * (the default action: a core dump, as before); a process that has a SIGTRAP handler of its own
 * keeps it and is recorded nonblocking (HWSPY_NOTE_NO_SIGNAL).
 * The recorder's threads are not sampled (their signals dropped: stats.signal_excluded). */

enum hwspy_record_mode {
	HWSPY_RECORD_AUTO,              /* capture, else stops, else nonblocking (notes say which) */
	HWSPY_RECORD_CAPTURE,
	HWSPY_RECORD_STOPS,             /* --ptrace (needs opts.sigchld) */
	HWSPY_RECORD_NONBLOCKING,       /* --nonblocking */
	HWSPY_RECORD_SIGNAL,            /* self only: exact without BPF nor privileges; AUTO's
	                                 * choice for self where BPF is refused (see below) */
};

/* What the recorder chose or fell back to on its own, told as it happens (opts.note_fn) so that
 * a client says it in its own words. err: an -errno where one goes with it; detail: a phrase
 * or a name (never NULL, maybe ""). */
enum hwspy_note {
	HWSPY_NOTE_NOT_PYTHON,          /* attach with native: no interpreter, native frames only */
	HWSPY_NOTE_TRACEPOINT,          /* events[0] (detail) is a tracepoint: nonblocking */
	HWSPY_NOTE_NO_CAPTURE_ASLEEP,   /* no BPF capture (detail: why), and a stop as a thread
	                                 * goes to sleep would interrupt it: nonblocking */
	HWSPY_NOTE_NO_CAPTURE,          /* no BPF capture (detail: why): stops */
	HWSPY_NOTE_STOPS_BUSY,          /* no harmless signal to stop with: nonblocking */
	HWSPY_NOTE_STOPS_REFUSED,       /* ptrace refused: nonblocking */
	HWSPY_NOTE_USER_ONLY,           /* kernel-mode counting refused: user space only (':u') */
	HWSPY_NOTE_CAPTURE_FAILED,      /* the capture (err) did not start: nonblocking reads */
	HWSPY_NOTE_SHIM_EXEC,           /* attach: the target was a shell (detail: its exe, a
	                                 * pyenv shim?) that exec'd Python: that is recorded */
	HWSPY_NOTE_SIGNAL,              /* self: no BPF capture (detail: why), exact by a SIGTRAP
	                                 * handler instead (HWSPY_RECORD_SIGNAL) */
	HWSPY_NOTE_NO_SIGNAL,           /* self: no signal mode (err -EBUSY: the process has a
	                                 * SIGTRAP handler of its own, kept): nonblocking */
};
typedef void (*hwspy_note_fn)(void *ctx, enum hwspy_note note, int err, const char *detail);

struct hwspy_record_opts {
	pid_t pid;                      /* attach to this process, or 0 */
	char *const *argv;              /* or launch this command (argv[0] searched in PATH) */
	bool self;                      /* or the calling process */
	const struct hwspy_events *events;  /* events[0] samples; NULL: cpu-clock. Copied (the
	                                 * user-space-only fallback sets ':u' on the copy) */
	uint64_t freq, period;          /* samples a second, or a fixed period (freq 0); both 0:
	                                 * 100 Hz */
	uint32_t leaders;               /* bit i: events[i] samples on its own, at its own rate */
	enum hwspy_record_mode mode;
	unsigned stop_budget;           /* stops: their share of a thread's time, % (0: 5) */
	bool function;                  /* one frame per function (its first line) */
	bool threads;                   /* a root frame per thread: [thread TID NAME] */
	bool native;                    /* native frames (DWARF unwinding of a stack copy) */
	uint32_t stack_size;            /* ... of this many bytes (0: 32768) */
	bool kernel;                    /* kernel frames at the leaf */
	bool off_cpu;                   /* events[0] is context-switches at period 1 */
	bool wall;                      /* events[0] is cpu-clock, with the switches off the CPU */
	bool subprocesses;              /* follow the processes the target starts */
	bool gil_only;                  /* only samples whose thread held the GIL */
	bool gil_waits;                 /* the switches off the CPU sampled too (not by stops), for
	                                 * each thread's GIL waits (hwspy_recorder_gil_threads()),
	                                 * not for the samples */
	size_t log_bytes;               /* keep the time-ordered sample log (speedscope) up to this */
	unsigned ring_pages;            /* data pages per ring, a power of two (0: the mode's
	                                 * default; fewer where the locked-memory limit says) */
	unsigned read_ms;               /* capture: the rings read at least this often, ms (0: at
	                                 * each 250 ms slice, sooner where a ring fills up; every
	                                 * 100 ms where switches are sampled: --off-cpu, --wall,
	                                 * gil_waits) */
	bool sigchld;                   /* may block SIGCHLD on the calling thread (signalfd): stops
	                                 * need it; without, a launched command's exit is seen
	                                 * within 100 ms and the caller must not reap it */
	bool raise_nofile;              /* may raise the soft RLIMIT_NOFILE to the hard one */
	hwspy_note_fn note_fn;          /* told of each choice and fallback; NULL: none */
	void *note_ctx;
	/* launch: runs inside hwspy_recorder_start() while the command is stopped at its exec */
	void (*exec_fn)(void *ctx, pid_t pid);
	void *exec_ctx;
};
void hwspy_record_opts_init(struct hwspy_record_opts *o);

/* Whether a sample's thread held the GIL: from its capture, else read live (late by as much as
 * the read); unknown without a GIL (free-threaded), a failed read, or a switch off the CPU. */
enum hwspy_gil {
	HWSPY_GIL_UNKNOWN,
	HWSPY_GIL_FREE,                 /* not held by this thread */
	HWSPY_GIL_HELD,
};

/* One finished sample, handed to the sink. Valid during the call only. */
struct hwspy_sample {
	pid_t tid;
	uint64_t time_ns;               /* CLOCK_MONOTONIC */
	const uint32_t *frames;         /* ids of hwspy_recorder_profile()'s frames, root first */
	size_t depth;
	const uint64_t *values;         /* [0] 1 (the sample), [1 + i] what event i counted */
	size_t n_values;
	size_t event;                   /* the event whose sample this is (0, or a leader) */
	bool off_cpu;                   /* a switch off the CPU: values[1] its time off it (ns) */
	enum hwspy_gil gil;             /* whether its thread held the GIL at the sample */
	uint64_t late_ns;               /* its Python stack read this long after the sample (no
	                                 * capture, no stop: maybe a later one); 0: at it */
};
/* < 0: the sample could not be kept (stats.add_failed). Runs on the thread running the
 * recorder. */
typedef int (*hwspy_sample_fn)(void *ctx, const struct hwspy_sample *s);

struct hwspy_recorder;

/* The recorder for opts (copied, its events too). sink NULL: every sample goes into the
 * recorder's own profile (hwspy_recorder_profile()). 0, -EINVAL (no target, two targets, more
 * events than HWSPY_MAX_EVENTS), -ENOMEM. */
int hwspy_recorder_new(const struct hwspy_record_opts *opts, hwspy_sample_fn sink, void *ctx,
		       struct hwspy_recorder **ret);
void hwspy_recorder_free(struct hwspy_recorder *rec);
/* Attach (pid or self): opens the target's memory, finds its interpreter and reads its
 * mappings. 0, or -ESRCH, -EPERM/-EACCES, -ENOENT (no interpreter: no error with native, a
 * note), -ENOTSUP, -EBADMSG; hwspy_recorder_python() says more. Called by
 * hwspy_recorder_start() when not called before. Blocks while symbols load (--native: a
 * second or so). */
int hwspy_recorder_open(struct hwspy_recorder *rec);
/* Chooses the mode (AUTO's fallbacks as notes) and opens the events on every thread, launching
 * the command (it runs from its exec on; its samples wait until hwspy_recorder_run()). 0, or
 * -ESRCH, -EPERM/-EACCES (not allowed), -ENOENT (the event
 * does not open here, or the command cannot be run), -ENOBUFS (locked memory), -EMFILE,
 * -ENOMEM: nothing is left attached or running then. Called again after a failure, it
 * tries afresh. */
int hwspy_recorder_start(struct hwspy_recorder *rec);
/* The mode it runs in (after start), and the target's pid (a launched command's once
 * started; self: getpid()). */
enum hwspy_record_mode hwspy_recorder_mode(const struct hwspy_recorder *rec);
pid_t hwspy_recorder_pid(const struct hwspy_recorder *rec);

struct hwspy_run {
	volatile sig_atomic_t *stop;    /* ends the run when set (NULL: none) */
	uint64_t duration_ns;           /* 0: until stopped or the target ends */
	/* after each slice (250 ms at most) with its result r: 0 goes on, < 0 ends the run with
	 * that result; may call hwspy_recorder_pause()/resume(). NULL: r decides. */
	int (*slice_fn)(void *ctx, struct hwspy_recorder *rec, int r);
	void *ctx;
	/* the slices' length: 0, 250 ms (a progress line's refresh); longer (at most 1 s), fewer
	 * wakeups of the recorder's own where nothing needs them sooner: it keeps 250 ms while
	 * a thread's Python name is still looked for */
	uint64_t slice_ns;
};
/* Samples until run->stop, the duration, the target's end or a Python hwspy cannot read; then
 * ends sampling and finishes every sample (a launched command is left running). Blocks that
 * long. 0, or the slice's failure (-EBUSY: stops, the target caught every signal). */
int hwspy_recorder_run(struct hwspy_recorder *rec, const struct hwspy_run *run);
/* Stops mode: lets go of the target and takes it again (a Ctrl-Z of the caller's). */
int hwspy_recorder_pause(struct hwspy_recorder *rec);
int hwspy_recorder_resume(struct hwspy_recorder *rec);
/* Ends sampling now (idempotent). */
void hwspy_recorder_stop(struct hwspy_recorder *rec);
/* Wakes a hwspy_recorder_run() that another thread runs, so that it sees run->stop at once
 * (set the flag first) rather than at its next read of the rings (up to 100 ms later): the run
 * then ends sampling and returns as it would have. Callable from any thread once
 * hwspy_recorder_start() has returned, and from a signal handler (async-signal-safe: a write
 * to an eventfd); a wake with no run waiting makes the next wait return at once. */
void hwspy_recorder_wake(struct hwspy_recorder *rec);

/* The interpreter found (attach: after open; launch: as it is mapped). */
struct hwspy_python {
	int result;                     /* the last lookup: 0 found, -ENOENT none (yet) ... */
	int fatal;                      /* -ENOTSUP, -EBADMSG: one hwspy cannot read (ended run) */
	bool found;
	int major, minor, micro;
	const char *version;            /* "3.11.7" ("" unknown) */
	const char *binary;             /* the file holding _PyRuntime ("" unknown) */
	const char *error;              /* -EBADMSG: the field refused and why ("" else) */
};
void hwspy_recorder_python(const struct hwspy_recorder *rec, struct hwspy_python *ret);
/* What process pid runs, for a message: its executable's path (/proc/PID/exe's link text,
 * never followed; a live thread's where the main thread is gone) into buf, and whether that is
 * a shell or env (a script interpreter, perhaps a pyenv shim about to exec Python) into
 * *ret_shell (may be NULL): 0, -ESRCH, -errno. */
int hwspy_process_exe(pid_t pid, char *buf, size_t size, bool *ret_shell);
/* "pid 12 (/usr/bin/sleep)" for a message, or "pid 12" where its exe is unreadable, into buf. */
const char *hwspy_pid_name(pid_t pid, char *buf, size_t size);

/* Why threads were left out, by reason (stats.threads_failed_by). */
enum hwspy_thread_fail {
	HWSPY_FAIL_FILES,               /* out of file descriptors (RLIMIT_NOFILE) */
	HWSPY_FAIL_MEMLOCK,             /* its ring over the locked-memory limit */
	HWSPY_FAIL_MEMORY,
	HWSPY_FAIL_TABLE,               /* more threads than tracked */
	HWSPY_FAIL_PTRACE,              /* stops: it could not be seized */
	HWSPY_FAIL_OTHER,               /* threads_failed_errno */
	HWSPY_FAIL_N
};

/* Every number a recording's summary says (a copy, hwspy_recorder_stats()). */
struct hwspy_record_stats {
	bool started;                   /* the events opened (the sampler's numbers are real) */
	/* the sampler */
	uint64_t samples, lost, lost_switches, throttled;
	bool switch_lost_known;
	uint64_t stops, stops_without_sample, signals_forwarded, eintr_undone;
	uint64_t budget_late, budget_trips, signal_changes;
	uint64_t threads_seen, threads_failed, threads_failed_by[HWSPY_FAIL_N];
	int threads_failed_errno;
	uint64_t threads_shrunk;
	unsigned cpu_rings, cpu_rings_shrunk, ring_pages, ring_pages_min;
	uint64_t execs, captured_by_sampler, capture_mismatched, capture_threads_failed;
	bool target_exited;
	int exit_status;                /* its wait status, a launched command */
	/* the interpreter's frame walks (0 without one) */
	uint64_t py_walks, py_torn, py_unreadable, py_no_thread, py_truncated;
	/* the native unwinder (0 without one) */
	bool have_symbolizer;
	/* the recorder */
	uint64_t elapsed_ns;
	uint64_t dropped_torn, dropped_unreadable, no_python, read_after_exit, merge_failed;
	uint64_t late_unfit, unwound, unwound_frames, kernel_frames, captured, uncaptured;
	uint64_t not_unwound_maps, not_unwound_stack;
	uint64_t captured_cut, truncated, truncated_gone, add_failed;
	uint64_t captured_dropped;      /* of captured, dropped (dropped_torn + _unreadable's) */
	uint64_t capture_ids_missed;    /* captured frames whose code's identity was lost */
	/* how the BPF capture knows a code object it read before without reading it again: 0
	 * it does not (each frame's read), 1 by CPython 3.12's code versions (while the
	 * interpreter makes no code), 2 by 3.14's count of codes freed (while it frees none) */
	int capture_versions;
	unsigned capture_frames;        /* the most Python frames a BPF capture copies: 384 with
	                                 * bpf_loop (5.17+; past the 128th without their code's
	                                 * identity, read from memory), else 128 */
	size_t n_late;
	uint32_t late_median_us, late_p99_us, late_max_us;
	uint64_t off_cpu_ns, processes;
	bool target_sampled;
	uint64_t off_cpu_unmatched, off_cpu_capped, off_cpu_initial, off_cpu_stale;
	uint64_t off_cpu_regs, off_cpu_regs_unknown;
	uint64_t gil_live, gil_late, gil_dropped_free, gil_dropped_unknown, gil_untallied;
	int capture_error;
	uint64_t capture_failures;
	uint64_t excluded;              /* self: samples of the recorder's own threads, left out */
	/* HWSPY_RECORD_SIGNAL: signals of the recorder's handled, of those that made a record, dropped at once (the recorder's
	 * threads), dropped for want of room, not the recorder's (passed on), records whose sample
	 * was lost; the handler's time, in all and at most (ns) */
	uint64_t signal_seen, signal_taken, signal_excluded, signal_dropped, signal_foreign, signal_unpaired;
	uint64_t signal_ns_total, signal_ns_max;
};
void hwspy_recorder_stats(struct hwspy_recorder *rec, struct hwspy_record_stats *ret);

/* A thread's GIL counts (--gil's summary): see struct record_gil_thread's words. */
struct hwspy_gil_thread {
	pid_t tid;
	uint64_t samples, weight, known, held;
	uint64_t off_ns, gil_wait_ns, first_ns, last_ns;
};
/* Each thread's so far, into ret (up to max): how many there are. */
size_t hwspy_recorder_gil_threads(const struct hwspy_recorder *rec, struct hwspy_gil_thread *ret,
				  size_t max);

/* A launched command once sampling has ended (hwspy_recorder_run() leaves it running): it is
 * waited for, and ended if it does not end by itself: SIGTERM (no KeyboardInterrupt traceback
 * from Python), SIGKILL after grace seconds. Where sampling ended on the user's signal
 * (interrupted), it gets SIGINT first, as timeout(1) ends one (not sent again where a Ctrl-C on
 * the terminal reached it already: tty_sigint), SIGTERM after grace, SIGKILL after grace more;
 * SIGKILL at once when *quits changes (the caller got another SIGINT/SIGTERM/SIGHUP); with
 * keep_running it is left as it is. Each signal reaches what the command started too: its
 * process group, which a launch gives it unless the caller's group is the terminal's
 * foreground one (there they share it: Ctrl-C, Ctrl-Z and the terminal reach the command), or
 * else its descendants in its group; where it ended by itself first, they are left alone. Blocks
 * until it ended (and its own group did, up to the SIGKILL). Notes through note_fn: WAITING
 * (after half a second, seconds to SIGTERM), WAITING_KILL (seconds to SIGKILL), KILLING (quits
 * changed). */
struct hwspy_child {
	pid_t pid;
	const char *name;               /* the caller's name of it (its command) for its lines */
	bool ended;                     /* status is its wait status */
	int status;
	int sent;                       /* the last signal sent to it (0: none) */
	bool kept;                      /* left running (keep_running) */
	bool as_asked;                  /* ended because sampling did, not interrupted: its exit
	                                 * code is 0 whatever signal it took */
};
enum hwspy_child_note {
	HWSPY_CHILD_WAITING,
	HWSPY_CHILD_KILLING,
	HWSPY_CHILD_WAITING_KILL,
};
struct hwspy_child_end_opts {
	double grace;                   /* seconds between the signals (the command line's: 5) */
	bool keep_running;
	bool interrupted;               /* sampling ended on the user's SIGINT/SIGTERM/SIGHUP */
	bool tty_sigint;
	volatile sig_atomic_t *quits;   /* NULL: none */
	void (*note_fn)(void *ctx, enum hwspy_child_note note, double seconds);
	void *note_ctx;
};
void hwspy_child_end(struct hwspy_child *c, const struct hwspy_child_end_opts *o);
/* The recorder's launched command ended as above (sampling ended first; what the sampler
 * reaped already counts): how it ended into *c, which it fills whole. */
void hwspy_recorder_end_command(struct hwspy_recorder *rec, const struct hwspy_child_end_opts *o,
				struct hwspy_child *c);
/* Its exit status: 128+N if signal N killed it, 0 if kept running, not ended, or ended as
 * asked. */
int hwspy_child_exit_code(const struct hwspy_child *c);

/* The machine's facts behind a refusal, as data and phrases for a client's own message. */
/* kernel.perf_event_paranoid, or INT_MIN where it cannot be read. */
int hwspy_paranoid(void);
/* The limits a perf ring and a thread's events meet (-1: unlimited, or unreadable for
 * perf_mlock_kib). */
struct hwspy_limits {
	long long memlock_kib;          /* RLIMIT_MEMLOCK's soft limit ('ulimit -l') */
	long long perf_mlock_kib;       /* kernel.perf_event_mlock_kb, per CPU */
	long long nofile;               /* RLIMIT_NOFILE's soft limit ('ulimit -n') */
};
void hwspy_limits(struct hwspy_limits *ret);
/* Whether pid is a kernel thread: 1, 0, or -errno (its status unreadable). */
int hwspy_kernel_thread(pid_t pid);
/* Who owns pid: its real uid into *ret_uid, and whether /proc/PID is another's than that (not
 * dumpable: set-uid, or PR_SET_DUMPABLE 0). 0, or -errno. */
int hwspy_process_owner(pid_t pid, long *ret_uid, bool *ret_not_dumpable);
/* Why a root caller may not read pid (ptrace refused), as a phrase into buf: no
 * CAP_SYS_PTRACE, root of a user namespace only, Yama ptrace_scope 3, a security module. */
void hwspy_root_denied_words(pid_t pid, char *buf, size_t size);
/* Why the BPF capture was refused with r (-errno), as a phrase into buf. */
void hwspy_bpf_refused_words(int r, char *buf, size_t size);

/* recpath: the options checked before anything is opened, attached or written, as a command
 * line checks them: the decisions taken (the default event, a count event's period, the event
 * of off_cpu and wall) made in *o and *ev, and a refusal said as a code for the client's
 * words (and in hwspy_reason()). */
enum hwspy_check {
	HWSPY_CHECK_OK,
	/* options that exclude each other (usage errors) */
	HWSPY_CHECK_OFF_CPU_EVENTS,     /* off_cpu with events of the caller's */
	HWSPY_CHECK_OFF_CPU_RATE,       /* off_cpu with a rate given or a period */
	HWSPY_CHECK_WALL_OFF_CPU,       /* wall and off_cpu */
	HWSPY_CHECK_WALL_EVENTS,        /* wall with events or a period */
	HWSPY_CHECK_WALL_STOPS,         /* wall by stops */
	HWSPY_CHECK_USER_KERNEL_ONLY,   /* event 0 happens in the kernel alone, and is ':u' */
	HWSPY_CHECK_COUNT_RATE,         /* event 0 counts occurrences: a rate given (period: its
	                                 * default) */
	HWSPY_CHECK_STOPS_ASLEEP,       /* by stops, event 0 samples threads as they sleep */
	/* refusals of the machine or the target */
	HWSPY_CHECK_NO_EVENT,           /* the default event does not parse */
	HWSPY_CHECK_EVENT_NO_PMU,       /* event (index) needs a hardware PMU, and there is none */
	HWSPY_CHECK_EVENT_UNSUPPORTED,  /* event does not open on this machine */
	HWSPY_CHECK_EVENT_FAILED,       /* event does not open: err */
	HWSPY_CHECK_KERNEL_REFUSED,     /* kernel samples of switches (off_cpu, wall) or of event 0
	                                 * (kernel alone) refused: hwspy_paranoid() says why */
	HWSPY_CHECK_NO_PROCESS,         /* no process pid */
	HWSPY_CHECK_KERNEL_THREAD,      /* pid is a kernel thread */
	HWSPY_CHECK_COMMAND,            /* argv[0] cannot be run: err */
};
struct hwspy_record_check {
	enum hwspy_check fail;
	bool usage;                     /* fail is a usage error */
	size_t event;                   /* the event fail names */
	int err;
	uint64_t period;                /* COUNT_RATE: event 0's default period */
	bool migrations;                /* a kernel-only event counts migrations (else switches) */
	bool default_cpu_clock;         /* no event given, no hardware PMU: cpu-clock chosen */
};
/* The options and events (*o's events set to ev, the default or off_cpu's and wall's event
 * put in ev; freq and period set for a count event; rate_given: the caller's freq was asked
 * for): 0, or -EINVAL (a usage error), -ENOENT, -EACCES, -errno and ret->fail. Blocks for a
 * perf_event_open per event. */
int hwspy_record_check(struct hwspy_record_opts *o, struct hwspy_events *ev, bool rate_given,
		       struct hwspy_record_check *ret);
/* The target exists and is no kernel thread (pid), or the command can be run as execvp(3)
 * would find it (argv): 0, or -ESRCH, -EINVAL, -errno and ret->fail. */
int hwspy_record_check_target(const struct hwspy_record_opts *o, struct hwspy_record_check *ret);
/* The recorder's bounds, for a client's words (lib/record.c holds them to record/'s). */
#define HWSPY_MAX_PY_FRAMES 4096        /* Python frames kept of a stack, the innermost */
#define HWSPY_STALE_READ_MS 50          /* a stack read later than this is taken for a later one */
#define HWSPY_STOP_BUDGET_PCT 5         /* stop_budget's default */
#define HWSPY_STOP_WINDOW_MS 1000       /* ... over this window */
#define HWSPY_DEFAULT_STACK_SIZE 32768
#define HWSPY_PY_UNKNOWN "[python]"     /* Python code no one can name any more */

/* (argsshrink) After hwspy_recorder_run(): its run's metadata put in the recorder's profile
 * (hwspy_profile_set_run(): started as the run did, its length, samples lost and dropped,
 * threads seen; the threads left out, and why: missed_why, NULL for no words). Then whether
 * the profile is worth writing: 0; 1 when no sample was taken; or the interpreter's failure
 * (for hwspy_python's words): one hwspy cannot read, or a launched command gone before an
 * interpreter was found (not Python: -ENOENT where the lookup said nothing else), unless
 * native. */
void hwspy_recorder_note_run(struct hwspy_recorder *rec, const char *missed_why);
int hwspy_recorder_verdict(struct hwspy_recorder *rec);
/* (summary) What a client says of a recording, its refusals and its end, as data: lines, each a
 * code for the client's words (a format whose conversions take, each kind in its order, the
 * line's integers n (signed ones as int64_t), reals x, names s and words w: %w is the words of
 * another code, a phrase the line chose), what the words leave to the data. A line's err is an
 * -errno the words end with (0: none); more: the line goes on with the next one's words. Each
 * function below writes up to max lines into ret and returns how many there are; names point
 * into the caller's strings, the recorder, or a buffer valid until the next such call. */
enum hwspy_line_code {
	/* the summary of a run, in its order */
	HWSPY_L_SAMPLED, HWSPY_L_SAMPLED_OFF_CPU, HWSPY_L_COUNTS, HWSPY_L_DROPPED,
	HWSPY_L_SPEEDSCOPE_LOG, HWSPY_L_NATIVE, HWSPY_L_NOT_UNWOUND, HWSPY_L_MERGE_FAILED, HWSPY_L_LATE_UNFIT,
	HWSPY_L_NO_KERNEL_FRAMES, HWSPY_L_TRUNCATED, HWSPY_L_TRUNCATED_GONE, HWSPY_L_NO_PYTHON,
	HWSPY_L_AFTER_EXIT, HWSPY_L_SUBPROCESSES, HWSPY_L_OFF_CPU_WAITED, HWSPY_L_OFF_CPU_CAPPED,
	HWSPY_L_OFF_CPU_INITIAL, HWSPY_L_OFF_CPU_STALE, HWSPY_L_OFF_CPU_REGS, HWSPY_L_EXACT_CAPTURE,
	HWSPY_L_CAPTURE_CUT, HWSPY_L_CAPTURE_DROPPED, HWSPY_L_CAPTURE_VERSIONS,
	HWSPY_L_EXACT_STOPS, HWSPY_L_EINTR_UNDONE, HWSPY_L_BUDGET_LATE, HWSPY_L_LATE,
	HWSPY_L_GIL_DROPPED, HWSPY_L_GIL_LATE, HWSPY_L_GIL_WAITED, HWSPY_L_GIL_HELD,
	HWSPY_L_GIL_UNKNOWN, HWSPY_L_GIL_MORE, HWSPY_L_GIL_WAITED_ALL, HWSPY_L_THREADS_FAILED,
	HWSPY_L_CPU_RINGS_SHRUNK, HWSPY_L_THREADS_SHRUNK, HWSPY_L_CAPTURE_THREADS_FAILED,
	HWSPY_L_LOST_OFF_CPU, HWSPY_L_LOST, HWSPY_L_LOST_WALL_UNKNOWN, HWSPY_L_LOST_WALL,
	HWSPY_L_THROTTLED, HWSPY_L_ADD_FAILED, HWSPY_L_WROTE,
	/* a run without a sample; the progress line (with a duration, without) */
	HWSPY_L_EMPTY_WALL, HWSPY_L_EMPTY_OFF_CPU, HWSPY_L_EMPTY_ON_CPU, HWSPY_L_EMPTY_EVENT,
	HWSPY_L_PROGRESS_FOR, HWSPY_L_PROGRESS,
	/* a start stopped by a limit; the limits, and the threads they left out */
	HWSPY_L_LIMIT_RING, HWSPY_L_RING_TAIL, HWSPY_L_LIMIT_FILES, HWSPY_L_FILES_TAIL,
	HWSPY_L_START_FAILED, HWSPY_L_MEMLOCK, HWSPY_L_MLOCK_KB, HWSPY_L_PER_CPU, HWSPY_L_NOFILE,
	HWSPY_L_KIB, HWSPY_L_NUMBER, HWSPY_L_UNLIMITED, HWSPY_L_UNREADABLE, HWSPY_L_MISSED_FILES,
	HWSPY_L_MISSED_MEMLOCK, HWSPY_L_MISSED_MEMORY, HWSPY_L_MISSED_TABLE, HWSPY_L_MISSED_PTRACE,
	HWSPY_L_MISSED_OTHER, HWSPY_L_CLOSE, HWSPY_L_SEP, HWSPY_L_NAME,
	/* an interpreter not read; a target not allowed */
	HWSPY_L_PY_UNSUPPORTED, HWSPY_L_PY_NONE, HWSPY_L_PY_BADMSG, HWSPY_L_PY_FAILED,
	HWSPY_L_PERM_KERNEL, HWSPY_L_PERM_ROOT, HWSPY_L_PERM_UID, HWSPY_L_PERM_PARANOID,
	HWSPY_L_PERM_DUMPABLE, HWSPY_L_PERM_REFUSED,
	/* a snapshot's process not read */
	HWSPY_L_DUMP_READ, HWSPY_L_DUMP_TRACED, HWSPY_L_DUMP_PTRACE, HWSPY_L_DUMP_STOP,
	HWSPY_L_DUMP_NATIVE,
	/* hwspy_record_check()'s refusals (by enum hwspy_check) */
	HWSPY_L_OFF_CPU_EVENTS, HWSPY_L_OFF_CPU_RATE, HWSPY_L_WALL_OFF_CPU, HWSPY_L_WALL_EVENTS,
	HWSPY_L_WALL_STOPS, HWSPY_L_USER_KERNEL_ONLY, HWSPY_L_COUNT_RATE, HWSPY_L_STOPS_ASLEEP,
	HWSPY_L_EVENT_NO_PMU, HWSPY_L_EVENT_UNSUPPORTED, HWSPY_L_EVENT_FAILED, HWSPY_L_KR_OPTION_HEAD,
	HWSPY_L_KR_EVENT_HEAD, HWSPY_L_KR_ALLOWED, HWSPY_L_KR_OPTION, HWSPY_L_KR_EVENT,
	HWSPY_L_NO_PROCESS, HWSPY_L_KERNEL_THREAD, HWSPY_L_COMMAND,
	/* a launched command's end */
	HWSPY_L_CHILD_WAITING, HWSPY_L_CHILD_KILLING,   /* hwspy_child_end()'s notes */
	HWSPY_L_CHILD_KEPT, HWSPY_L_CHILD_ENDED, HWSPY_L_CHILD_KILLED, HWSPY_L_CHILD_EXITED,
	HWSPY_L_CHILD_STOPPED,                          /* ended as asked, sampling over */
	/* the phrases lines choose (%w) */
	HWSPY_W_NONE, HWSPY_W_PYTHON, HWSPY_W_EVERY, HWSPY_W_HZ, HWSPY_W_EVENTS, HWSPY_W_WALL,
	HWSPY_W_TARGET_AMONG, HWSPY_W_TARGET_NONE, HWSPY_W_LATE_CAPTURE, HWSPY_W_LATE_NONBLOCKING,
	HWSPY_W_LATE_STOPS, HWSPY_W_NO_GIL, HWSPY_W_SPACE, HWSPY_W_RAISE, HWSPY_W_LOWER_RATE,
	HWSPY_W_LARGER_PERIOD, HWSPY_W_WALL_FEWER, HWSPY_W_TOO_FEW, HWSPY_W_NO, HWSPY_W_FILE_MAX,
	HWSPY_W_UNKNOWN_VERSION, HWSPY_W_SWITCH, HWSPY_W_MIGRATION, HWSPY_W_A_SWITCH,
	HWSPY_W_A_MIGRATION, HWSPY_W_AFTER_SIG, HWSPY_W_QUOTE, HWSPY_W_STDOUT,
	HWSPY_W_NATIVE_ALONE, HWSPY_W_SHELL, HWSPY_W_DUMP_READS,       /* PY_NONE's advice */
	HWSPY_W_CODES_MADE, HWSPY_W_CODES_FREED,
	HWSPY_L_N
};
struct hwspy_line {
	enum hwspy_line_code code;
	bool more;
	bool detail;                    /* a summary's detail: a short summary leaves it out */
	int err;
	uint64_t n[6];
	double x[4];
	const char *s[3];
	enum hwspy_line_code w[4];
};
/* Lines l[0..n) in the client's words (words[code], HWSPY_L_N of them), one after another:
 * each line's format with its data as above. A string of the caller's to free; NULL: out of
 * memory. */
char *hwspy_lines_text(const char *const *words, const struct hwspy_line *l, size_t n);
/* A run's summary (after hwspy_recorder_run(); the threads left out read from the profile's
 * metadata), its line when it took no sample, and the progress line (duration 0: none). target
 * names it, path where the profile went (NULL: standard output), event its first event as the
 * caller gave it, col the column the profile was weighed by (0: the first event's). A short
 * summary (its lines not detail) says what was sampled, what was lost or left out, what changes
 * what the profile means, and what was written with its totals. */
struct hwspy_summary_opts {
	const char *target, *path, *event;
	double duration;
	size_t col;
};
size_t hwspy_recorder_summary(struct hwspy_recorder *rec, const struct hwspy_summary_opts *o,
			      struct hwspy_line *ret, size_t max);
size_t hwspy_recorder_empty_lines(struct hwspy_recorder *rec, const struct hwspy_summary_opts *o,
				  struct hwspy_line *ret, size_t max);
size_t hwspy_recorder_progress_lines(struct hwspy_recorder *rec,
				     const struct hwspy_summary_opts *o, struct hwspy_line *ret,
				     size_t max);
/* hwspy_recorder_start()'s r for target: the limit that stopped it (-ENOBUFS, -EMFILE,
 * -ENFILE), else r; the reasons st's threads were left out, with the limits behind them. */
size_t hwspy_limit_lines(int r, const char *target, struct hwspy_line *ret, size_t max);
size_t hwspy_threads_missed_lines(const struct hwspy_record_stats *st, struct hwspy_line *ret,
				  size_t max);
/* r, the interpreter lookup's result for what (-ENOTSUP, -ENOENT, -EBADMSG, other); why target
 * (pid) may not be profiled (kernel: its kernel frames); a refusal of hwspy_record_check() or
 * hwspy_record_check_target() for o and its events ev as the caller gave them. */
size_t hwspy_python_lines(int r, const struct hwspy_recorder *rec, const char *what,
			  struct hwspy_line *ret, size_t max);
size_t hwspy_permission_lines(const char *target, pid_t pid, bool kernel, struct hwspy_line *ret,
			      size_t max);
size_t hwspy_check_lines(const struct hwspy_record_check *c, const struct hwspy_record_opts *o,
			 const struct hwspy_events *ev, struct hwspy_line *ret, size_t max);
/* Why the snapshot's process p was not read whole: the target (HWSPY_SNAPSHOT_FAILED_TARGET),
 * a stop or a read that failed, its mappings unread (none: 0). */
struct hwspy_snapshot_process;
size_t hwspy_snapshot_lines(const struct hwspy_snapshot_process *p, struct hwspy_line *ret,
			    size_t max);
/* How the launched command c (named name) ended, or that it was kept running (none: 0). */
size_t hwspy_child_lines(const struct hwspy_child *c, const char *name, struct hwspy_line *ret,
			 size_t max);
/* kernel.perf_event_paranoid as a name for a message: "kernel.perf_event_paranoid=2" (without
 * "=N" where it cannot be read), into buf. */
const char *hwspy_paranoid_words(char *buf, size_t size);

/* ==== profiles and outputs ================================================================== */

/* A profile: stacks of frames with a value per event, their threads and the run's metadata;
 * read from a file of any format hwspy reads (folded, pprof) or a recorder's own. Written in
 * any format: folded, speedscope, SVG flame graph, pprof. */
struct hwspy_profile;

/* The recorder's profile (the recorder's: not freed by the caller; valid until it is freed). */
struct hwspy_profile *hwspy_recorder_profile(struct hwspy_recorder *rec);
/* Reads the file at path ("-": standard input), its format told by its content (pprof's
 * bytes, else folded text): 0, or -errno with the reason's one line: "cannot read 'NAME':
 * ...", "NAME:LINE: ...; a folded line is ...", "'NAME' is not a folded file: it looks like
 * ...", "NAME: not a valid pprof profile: ...", "out of memory reading 'NAME'". */
int hwspy_profile_load(const char *path, struct hwspy_profile **ret);
/* A profile from hwspy_profile_load() or hwspy_profile_diff(); NULL a no-op. */
void hwspy_profile_free(struct hwspy_profile *p);

size_t hwspy_profile_n_events(const struct hwspy_profile *p);
const char *hwspy_profile_event(const struct hwspy_profile *p, size_t i);
/* What p holds, in words for a "wrote" line, into buf (snprintf's way): its samples, stacks and
 * column col's total in its unit ("66 samples in 7 stacks, cpu-clock 0.66 s"; an event that
 * counts: "page-faults 2,700"; col 0, or a folded file's unnamed counts: "7 stacks, total
 * 700,000,000"). The length, as snprintf. */
int hwspy_profile_totals_words(const struct hwspy_profile *p, size_t col, char *buf,
			       size_t size);
/* -ENOENT, or its index */
int hwspy_profile_find_event(const struct hwspy_profile *p, const char *name);
size_t hwspy_profile_n_frames(const struct hwspy_profile *p);
enum hwspy_frame_kind {
	HWSPY_FRAME_PYTHON,
	HWSPY_FRAME_NATIVE,
	HWSPY_FRAME_KERNEL,
	HWSPY_FRAME_THREAD,             /* a root frame naming the thread or the process */
	HWSPY_FRAME_SPECIAL,            /* "[native]", "[unknown]", "[idle]" ... */
	HWSPY_FRAME_WAIT,               /* why a thread was off the CPU: "[wait: GIL]" ... */
};
struct hwspy_frame {
	enum hwspy_frame_kind kind;
	const char *name;               /* never NULL */
	const char *file;               /* NULL if unknown */
	int line;                       /* 0 if unknown */
	const char *module;             /* a native frame's shared object, NULL if unknown */
};
/* Frame id (a sample's frames[k]) into ret, its strings the profile's (valid until it next
 * changes: a recorder's, until the next sample): 0, or -ENOENT for no such id. */
int hwspy_profile_frame(const struct hwspy_profile *p, uint32_t id, struct hwspy_frame *ret);
/* Stack i (< n_stacks): its thread, frames (root first) and depth; its values (n_events + 1:
 * [0] samples, [1 + e] event e) returned. */
const uint64_t *hwspy_profile_stack(const struct hwspy_profile *p, size_t i, pid_t *ret_tid,
				    const uint32_t **ret_frames, size_t *ret_depth);
/* A thread's name as recorded, or NULL. */
const char *hwspy_profile_thread_name(const struct hwspy_profile *p, pid_t tid);
size_t hwspy_profile_n_stacks(const struct hwspy_profile *p);
/* The run's metadata (0 / "" where unknown). */
struct hwspy_profile_meta {
	const char *target, *python;
	uint64_t duration_ns, start_time_ns, lost, dropped, threads, threads_missed;
	const char *threads_missed_why;
};
void hwspy_profile_meta(const struct hwspy_profile *p, struct hwspy_profile_meta *ret);
/* Sets the target's words; the run's numbers (start: the wall clock, ns since the epoch); the
 * threads left out and why. 0 or -ENOMEM. */
int hwspy_profile_set_target(struct hwspy_profile *p, const char *target);
void hwspy_profile_set_run(struct hwspy_profile *p, uint64_t start_time_ns, uint64_t duration_ns,
			   uint64_t lost, uint64_t dropped, uint64_t threads);
int hwspy_profile_set_threads_missed(struct hwspy_profile *p, uint64_t n, const char *why);

/* Column col's total over every stack (col 0: samples, 1 + e: event e). */
uint64_t hwspy_profile_total(const struct hwspy_profile *p, size_t col);

/* The --color-by metric (SVG): "ipc", "mpki" or "A/B" (two events), checked in form alone (p
 * NULL) or against p's events. 0, or -EINVAL (its form: err->why) / -ENOENT (no such event in
 * p: err->at and err->len mark the name in metric; 0 len: err->why says what is wrong). */
struct hwspy_color_error {
	const char *why;
	size_t at, len;
};
int hwspy_color_check(const struct hwspy_profile *p, const char *metric,
		      struct hwspy_color_error *err);

/* Differences between BEFORE and AFTER (two profiles of one program): one merged profile whose
 * shared event e has BEFORE's values in column 1 + 2e and AFTER's in 2 + 2e (both named as in
 * AFTER: hwspy_profile_event(merged, 2e)); every frame matched by its text, a Python file by
 * its module-relative path unless exact_paths (the merged profile holds it so); each side's shares
 * of its own total unless raw. -ENOENT when no event is shared. hwspy_diff_write()'s headline
 * (table, SVG subtitle) is in the event's unit, but for a side that is a folded file's counts
 * (its one event "samples"): no unit, plain numbers. */
struct hwspy_diff_opts {
	bool ignore_lines;              /* match Python frames by function and file only */
	bool raw;                       /* counts as they are, shares of BEFORE's total */
	bool native_offsets;            /* table: native code without a symbol by its offset
	                                 * ("mod.so+0x1a2b"), not one row per module */
	bool exact_paths;               /* match Python files by full path, not by the path below
	                                 * their sys.path entry (or their scripts' directory) */
};
int hwspy_profile_diff(const struct hwspy_profile *before, const struct hwspy_profile *after,
		       const struct hwspy_diff_opts *o, struct hwspy_profile **ret);
size_t hwspy_diff_n_events(const struct hwspy_profile *merged);
/* The fraction (0..1) of BEFORE's and AFTER's weight of shared event e in stacks with a
 * function both sides have: near 0 for unrelated programs. 0 or -errno. */
int hwspy_diff_common(const struct hwspy_profile *merged, size_t e, double *ret_before,
		      double *ret_after);
enum hwspy_diff_format {
	HWSPY_DIFF_TABLE,               /* per event, the functions whose share changed most */
	HWSPY_DIFF_SVG,                 /* a differential flame graph */
	HWSPY_DIFF_FOLDED,              /* 'stack before after' lines (difffolded.pl's) */
};
struct hwspy_diff_write_opts {
	enum hwspy_diff_format format;
	size_t event;                   /* the shared event the graph and the lines show */
	struct hwspy_diff_opts diff;
	const char *title;              /* SVG (NULL: "Differential Flame Graph") */
	bool icicle, negate;            /* SVG: root at the top; BEFORE's widths */
	double min_width;               /* SVG: px (0: the default) */
	size_t top;                     /* table: rows per event (0: 20) */
	const char *before_name, *after_name;   /* table: what each side is */
	uint64_t before_ns, after_ns;   /* table, SVG subtitle: each side's duration (0: unknown) */
	bool full_paths;                /* SVG: labels with full paths */
};
int hwspy_diff_write(const struct hwspy_profile *merged, const struct hwspy_diff_write_opts *o,
		     FILE *out);

enum hwspy_format {
	HWSPY_FORMAT_FOLDED,            /* .folded, .txt, any other name */
	HWSPY_FORMAT_SPEEDSCOPE,        /* .speedscope.json */
	HWSPY_FORMAT_SVG,               /* .svg */
	HWSPY_FORMAT_PPROF,             /* .pb.gz, .pprof */
};
/* "folded", "speedscope", "svg", "pprof": 0, or -EINVAL. */
int hwspy_format_parse(const char *name, enum hwspy_format *ret);
enum hwspy_format hwspy_format_of_path(const char *path);
const char *hwspy_format_name(enum hwspy_format f);

struct hwspy_write_opts {
	const char *weight;             /* the event folded and SVG weigh by (NULL: the first) */
	const char *title;              /* SVG */
	bool icicle;                    /* SVG: root at the top */
	double min_width;               /* SVG: px, narrower frames left out (0: the default) */
	const char *color_by;           /* SVG: a ratio of two events (NULL: by kind) */
	const char *command_line;       /* pprof's comments */
	bool full_paths;                /* SVG: labels with full paths, not module-relative */
	const char *const *labels;      /* pprof: NULL-terminated key, value pairs, string labels
	                                 * on every sample (`go tool pprof -tags`); NULL: none */
	const char *const *comments;    /* pprof: NULL-terminated extra comment lines; NULL: none */
};
/* Writes p as f into out (zeroed opts: the defaults; NULL too). 0, or -ENOENT (weight names
 * no event of p), -errno of the writing. */
int hwspy_profile_write(const struct hwspy_profile *p, enum hwspy_format f,
			const struct hwspy_write_opts *o, FILE *out);
/* The same into the file at path, put in place whole (a temporary file renamed) or not at all:
 * 0 or -errno. */
int hwspy_profile_write_file(const struct hwspy_profile *p, enum hwspy_format f,
			     const struct hwspy_write_opts *o, const char *path);
/* recpath: a frame's text as the folded format writes it ("fn (file.py:12)", "[native]" ...)
 * into buf (snprintf's way): its length (>= size: cut), or -ENOENT for no such id. */
int hwspy_profile_frame_text(const struct hwspy_profile *p, uint32_t id, char *buf, size_t size);
/* Whether the time-ordered sample log (speedscope) kept every sample (else it passed
 * opts.log_bytes: the writers use the merged stacks alone). */
bool hwspy_profile_log_complete(const struct hwspy_profile *p);
/* (diffconv) Why p cannot be written as pprof (hwspy_profile_write()'s -EOVERFLOW there: pprof
 * holds 64-bit signed values): the first value of column col (0: samples, 1 + e: event e, named
 * event) over limit (sum false), or taking the column's total past it (sum true). 0 with the
 * facts in *ret, or -ENOENT when every value fits. */
struct hwspy_pprof_limit {
	size_t col;
	const char *event;              /* "samples" for column 0 */
	uint64_t value;
	bool sum;
	int64_t limit;                  /* INT64_MAX */
};
int hwspy_profile_pprof_limit(const struct hwspy_profile *p, struct hwspy_pprof_limit *ret);

/* (diffconv) `hwspy diff`'s steps over two files: read, merged, checked. */
#define HWSPY_DIFF_MIN_COMMON 0.05      /* below this share of an event's weight in functions
                                         * both sides have, on both, they are unrelated */
enum hwspy_diff_problem {
	HWSPY_DIFF_COMPARABLE,
	HWSPY_DIFF_UNREADABLE,          /* side's file (hwspy_reason() says why) */
	HWSPY_DIFF_EMPTY,               /* side's file holds no samples */
	HWSPY_DIFF_NOTHING_SHARED,      /* no event in both (in[] hold each side's) */
	HWSPY_DIFF_ZERO,                /* shared event `event` is 0 on side */
	HWSPY_DIFF_UNRELATED,           /* shared event `event`: common[] under
	                                 * HWSPY_DIFF_MIN_COMMON on both sides */
	HWSPY_DIFF_FAILED,              /* error (-ENOMEM ...) */
};
struct hwspy_diff_files {
	struct hwspy_profile *in[2];    /* BEFORE and AFTER as read (target: its path), or NULL */
	uint64_t duration_ns[2];        /* each side's run (0: unknown) */
	struct hwspy_profile *merged;   /* hwspy_profile_diff() of them, or NULL */
	enum hwspy_diff_problem problem;
	int side;                       /* 0 BEFORE, 1 AFTER: whose problem it is */
	size_t event;                   /* ZERO, UNRELATED: the shared event */
	double common[2];               /* UNRELATED: hwspy_diff_common() of it */
	int error;                      /* the -errno returned */
};
/* Reads paths[0] then paths[1] ("-": standard input, for one of them), each checked to hold
 * samples, and merges them: 0 (merged set), or -errno and problem UNREADABLE, EMPTY,
 * NOTHING_SHARED (-ENOENT) or FAILED. *ret to release with hwspy_diff_files_release() in
 * either case. */
int hwspy_diff_files_read(const char *const paths[2], const struct hwspy_diff_opts *o,
			  struct hwspy_diff_files *ret);
/* Whether each shared event of d->merged compares: weight on both sides, and unless force,
 * enough of it in functions both have. 0, or -EDOM (problem ZERO, UNRELATED), -errno (FAILED). */
int hwspy_diff_files_check(struct hwspy_diff_files *d, bool force);
void hwspy_diff_files_release(struct hwspy_diff_files *d);
/* Shared event e of d->merged, each side's total of it in its unit and the change, in words
 * into buf ("cpu-clock 0.70 s -> 0.66 s, -6%"; a folded file's counts: "total 1,000 -> 2,000,
 * +100%"): 0, or -ENOENT where a side's total is not known (or BEFORE's is 0). */
int hwspy_diff_totals_words(const struct hwspy_diff_files *d, size_t e, char *buf, size_t size);
/* Whether event e of side (an input of merged) is compared: in a shared pair, or the unnamed
 * counts of a folded file. */
bool hwspy_diff_compares(const struct hwspy_profile *merged, const struct hwspy_profile *side,
			 size_t e);
/* The shared event name picks (its name, or its name without ':modifiers'): its index, 0 for
 * NULL, or -ENOENT. */
int hwspy_diff_find_event(const struct hwspy_profile *merged, const char *name);
/* "table" (or "txt"), "svg", "folded": 0, or -EINVAL; a file name's (.svg; .folded or
 * .collapsed; else the table). */
int hwspy_diff_format_parse(const char *name, enum hwspy_diff_format *ret);
enum hwspy_diff_format hwspy_diff_format_of_path(const char *path);
/* (argsshrink) The file a command line writes when none is named: "hwspy-PID.EXT", EXT as f
 * asks (folded, speedscope.json, svg, pb.gz), into buf (snprintf's way). */
void hwspy_output_default(pid_t pid, enum hwspy_format f, char *buf, size_t size);
/* ==== snapshot ============================================================================== */

/* The current stack of every thread of a Python process, once (what `hwspy dump` prints): per
 * thread its id and name, whether it holds the GIL, running or waiting (and on what, in the
 * words --off-cpu uses), its Python frames innermost first and, with native, its native frames
 * already symbolized and the two merged into one stack.
 * A thread waiting in a call that an interruption would end (epoll, a socket with a timeout
 * ...) is read as it waits (it cannot change its stack); the others are stopped (ptrace) while
 * their stacks are read, a fraction of a millisecond for a few threads, then let go: nothing is
 * left for the target to notice, not even if the caller is killed mid-stop. nonblocking stops
 * nothing: each walk is verified and retried when torn. Blocks for the reads and the stop
 * (typically milliseconds; a thread that will not stop is waited for 0.2 s at most). Needs
 * ptrace and process_vm_readv on the target (root, or the same user under Yama scope 0). */
struct hwspy_snapshot;

/* Options; all false by default (a zeroed struct). */
struct hwspy_snapshot_opts {
	bool native;            /* native frames too (not with nonblocking: -EINVAL) */
	bool nonblocking;       /* stop nothing: read the stacks as the threads run */
	bool subprocesses;      /* the processes pid started too (and theirs), each in turn */
	bool hold_signals;      /* the calling thread's SIGINT, SIGTERM, SIGHUP, SIGQUIT and
	                         * SIGTSTP blocked while threads are stopped, so that they wait
	                         * for the release (the command line's choice) */
	bool full_paths;        /* hwspy_snapshot_write_text(): Python files by their full paths,
	                         * not module-relative (the JSON and the structs always have them) */
};

/* How a thread's stack was read */
enum hwspy_snapshot_read {
	HWSPY_SNAPSHOT_READ_WAITING = 1,        /* blocked in the kernel all along the read */
	HWSPY_SNAPSHOT_READ_STOPPED,            /* under a stop */
	HWSPY_SNAPSHOT_READ_RUNNING,            /* as it ran: a verified walk, not an instant's */
};

/* Where reading a process failed */
enum hwspy_snapshot_step {
	HWSPY_SNAPSHOT_OK,
	HWSPY_SNAPSHOT_FAILED_TARGET,   /* the process or its interpreter: -ESRCH gone, -EPERM /
	                                 * -EACCES not allowed, -ENOENT not a Python process,
	                                 * -ENOTSUP unsupported Python, -EBADMSG (python_error) */
	HWSPY_SNAPSHOT_FAILED_STOP,     /* the stop: -EPERM (tracer: the tracer's pid, or 0: Yama,
	                                 * no CAP_SYS_PTRACE) ... */
	HWSPY_SNAPSHOT_FAILED_READ,     /* -ENOMEM */
};

struct hwspy_py_frame {
	const char *function;   /* qualified name (3.11+) or name */
	const char *file;
	int line;
};

struct hwspy_native_frame {
	uint64_t address;       /* the return address (or the PC, innermost) looked up */
	bool symbolized;        /* false: nothing is known of it (every field below NULL / 0) */
	const char *function;   /* NULL: no symbol (module + module_offset then) */
	const char *module;     /* basename of the mapped file, or NULL */
	const char *file;       /* source file where debug info says, else NULL */
	int line;               /* 0: unknown */
	uint64_t module_offset;
};

/* A frame of a merged stack (Python frames in place of the interpreter's eval loops): struct
 * hwspy_frame of "profiles and outputs" (PYTHON, NATIVE or SPECIAL here) */

struct hwspy_snapshot_thread {
	pid_t tid;
	const char *name;               /* Python's name of the thread, else the OS's */
	enum hwspy_snapshot_read read;
	bool waiting;                   /* not running, not runnable */
	const char *wait;               /* why it waits ("read fd 5 (pipe)", "recv socket",
	                                 * "futex (lock)", "GIL", "sleep" ...); "" when running */
	int gil;                        /* 1 holds it, 0 not, -1 unknown */
	int error;                      /* 0, or why its Python stack is missing: -ENOENT no
	                                 * thread state, -EAGAIN torn at every read, -EFAULT
	                                 * unreadable, -ESRCH gone */
	const char *error_words;        /* ... in words ("no Python thread state"), or NULL */
	const struct hwspy_py_frame *frames;    /* innermost first */
	size_t n_frames;
	uint64_t frames_cut;            /* outer frames left out (at least, if frames_cut_more) */
	bool frames_cut_more;
	bool native_ok;                 /* native: its stack was unwound */
	const struct hwspy_native_frame *native;        /* innermost first */
	size_t n_native;
	const struct hwspy_frame *merged;       /* native: root first */
	size_t n_merged;
};

struct hwspy_snapshot_process {
	pid_t pid;
	const char *command;            /* its command line, blanks between the arguments */
	enum hwspy_snapshot_step failed;
	int error;                      /* 0, or -errno: the process could not be read */
	const char *reason;             /* ... in a few words ("gone", "not a Python process",
	                                 * "unsupported Python", "not allowed"; "" for a failed
	                                 * stop or read) */
	pid_t tracer;                   /* HWSPY_SNAPSHOT_FAILED_STOP: another tracer, or 0 */
	const char *python_version;     /* "3.12.1" ("" unknown; set with -ENOTSUP too) */
	const char *python_path;        /* the file that holds the interpreter */
	const char *python_error;       /* -EBADMSG: what is wrong with the interpreter's data */
	int native_error;               /* native: its mappings could not be read (-errno): no
	                                 * native frames */
	const struct hwspy_snapshot_thread *threads;    /* sorted by tid */
	size_t n_threads;
	size_t n_waiting, n_stopped, n_running;         /* how the threads were read */
	uint64_t stopped_ns;            /* how long threads were stopped */
};

/* Takes the snapshot of process pid (and of its tree, subprocesses): 0 and *ret, to free with
 * hwspy_snapshot_free(), even where a process could not be read (its failed and error say why;
 * with subprocesses no process after a target that could not be read); -EINVAL (pid <= 0,
 * native with nonblocking), -ENOMEM. */
int hwspy_snapshot_new(pid_t pid, const struct hwspy_snapshot_opts *opts,
		       struct hwspy_snapshot **ret);
/* The processes, the target first: how many, *ret the array (valid until the free). */
size_t hwspy_snapshot_processes(const struct hwspy_snapshot *s,
				const struct hwspy_snapshot_process **ret);
/* Writes the snapshot as `hwspy dump --json` does (one object, or {"processes": [...]} with
 * subprocesses; a newline at the end). 0, or -EIO (the stream's error). */
int hwspy_snapshot_write_json(const struct hwspy_snapshot *s, FILE *f);
void hwspy_snapshot_free(struct hwspy_snapshot *s);
/* (diffconv) Writes the snapshot as `hwspy dump` prints it: per process its pid and command, its
 * Python, how its threads were read, then each thread (id, name, GIL, running or waiting and on
 * what, its Python frames innermost first, each file by its module-relative path as a flame
 * graph's labels name it, unless opts.full_paths; native frames when asked); a process after
 * the first that could not be read as "(cannot dump it: REASON)"; a blank line between. 0, or
 * -EIO (the stream's error). */
int hwspy_snapshot_write_text(const struct hwspy_snapshot *s, FILE *f);
/* ==== counting ============================================================================== */
/*
 * Counting, as perf stat counts: each event a counter (no sampling, nothing stopped, no signal
 * sent) on every thread of a process, threads it starts later counted with the thread that
 * started them (inherit); on a command launched, counted from its exec; or on the calling
 * process itself (pid 0, argv NULL), from any of its threads. In-process, the library starts no
 * thread, blocks and handles no signal and leaves RLIMIT_NOFILE as it is (unless raise_nofile);
 * it holds one file descriptor per event per thread counted, until hwspy_count_stop().
 *
 * A session: hwspy_count_new() (the events chosen), hwspy_count_start(), then any of
 * hwspy_count_read() (live) and hwspy_count_run() (blocks: counts in slices, following the
 * threads' context switches from /proc), hwspy_count_stop() (the final values), the values
 * (hwspy_count_events(), hwspy_count_threads(), hwspy_count_stats()), the findings, the report.
 * A value not measured is said (counted false, error why), never given as 0.
 */
#define HWSPY_COUNT_MAX_EVENTS 32
struct hwspy_count;
/* Zero is the default of each. */
struct hwspy_count_opts {
	const char *events;             /* "task-clock,page-faults" (perf's names, ":u" ...); NULL:
	                                 * perf stat's defaults and the findings' events, those that
	                                 * open here listed */
	bool user_only_fallback;        /* where kernel mode is refused (perf_event_paranoid >= 2
	                                 * without CAP_PERFMON) and user space is not: count user
	                                 * space only (':u'), as perf stat does */
	bool raise_nofile;              /* raise the soft RLIMIT_NOFILE to the hard one (a command
	                                 * counting a process of many threads) */
	bool python_names;              /* at the stop, name threads by their Python names (reads
	                                 * the target's memory) */
	/* A light sampling run beside the counters (the recording's, 100 samples a second per
	 * thread, one frame per function), which names the functions behind the findings, each
	 * thread's waits for the GIL and the threads: started by hwspy_count_start() with the
	 * counters (a command launched by it, held at its exec while its counters open), run by
	 * hwspy_count_run(), its part of the report taken by hwspy_count_report(c, NULL). An
	 * attached target that runs no Python hwspy can read is counted alone
	 * (hwspy_count_sampling_error()). Not for the calling process. */
	bool sampling;
	enum hwspy_record_mode sampling_mode;   /* AUTO: capture, else stops, else nonblocking */
	bool sigchld;                   /* the run may block SIGCHLD on the calling thread (stops
	                                 * need it; struct hwspy_record_opts.sigchld) */
	hwspy_note_fn note_fn;          /* the run's choices and fallbacks, as the recording's
	                                 * (HWSPY_NOTE_USER_ONLY's detail: its events that count
	                                 * nothing in user space, "'context-switches', ..." or "") */
	void *note_ctx;
	/* after each slice of the run (250 ms at most) with its result r: as struct
	 * hwspy_run.slice_fn (hwspy_count_recorder() pauses and resumes); NULL: r decides */
	int (*slice_fn)(void *ctx, struct hwspy_count *c, int r);
	void *slice_ctx;
	bool full_paths;                /* the text report names Python files by their full paths,
	                                 * not module-relative (the JSON always has full paths) */
};
/* One event's values (scaled for multiplexing as perf stat does) and the metrics derived from
 * them and the others (NaN where they do not apply or are not counted). */
struct hwspy_count_event {
	char name[96];
	bool counted;                   /* it opened and ran */
	int error;                      /* why not: -ENOENT not supported here, -EACCES kernel-only
	                                 * event counted in user space only ... */
	bool listed;                    /* asked for, or a default that opens here */
	bool hardware;                  /* a PMU event (hardware, cache, raw, pmu) */
	bool split;                     /* its group could not be scheduled whole */
	double value;
	uint64_t raw, enabled_ns, running_ns;
	double per_second;              /* value per second of wall time */
	double cpus;                    /* task-clock, cpu-clock: CPUs used */
	double ipc;                     /* instructions: per cycle */
	double ghz;                     /* cycles: per ns of task-clock */
	double mpki;                    /* X-misses: per 1k instructions */
	char reference[112];            /* X-misses: the event counted it is a share of
	                                 * (cache-references, X-loads ...; "": none) */
	double miss_rate;               /* X-misses: in % of reference */
};
/* One thread's values, by task-clock, largest first. */
struct hwspy_count_thread {
	pid_t tid;
	char name[128];                 /* Python's, else the sampling run's, else /proc's comm */
	double task_clock_ns;           /* < 0: not counted */
	double switches;                /* context-switches (< 0: not counted) */
	double value[HWSPY_COUNT_MAX_EVENTS];   /* each event's, as hwspy_count_events() (NaN:
	                                 * not counted) */
};
struct hwspy_count_stats {
	uint64_t wall_ns;               /* counting so far (start or exec to the reading) */
	unsigned threads;               /* threads with counters of their own */
	unsigned threads_failed;        /* threads whose counters could not be opened */
	unsigned threads_raced;         /* started while the counters opened, taken as counted */
	/* the calling process's counting (marks): threads watched, so that a reading skips them
	 * while they have not run since the last one; threads read by readings, and skipped */
	unsigned threads_watched;
	uint64_t reads, reads_skipped;
	bool target_exited;             /* (the sampling run's launched command: once the run has
	                                 * ended, hwspy_count_stop()) */
	int exit_status;                /* wait status of a command it launched */
	int64_t voluntary, involuntary; /* context switches from /proc (< 0: not known) */
	bool user_only;                 /* every event counts user space only */
	bool hardware_pmu;              /* the machine exposes a hardware PMU */
};
/* A thread's time waiting for the GIL, measured by a sampling run beside the counters. */
struct hwspy_gil_wait {
	pid_t tid;
	char name[128];                 /* filled by hwspy_count_report() */
	double wait_ns;
	double cpu_ns;                  /* its time on the CPU (< 0: not known: its task-clock) */
};
struct hwspy_function;
/* What a sampling run beside the counters adds (the CLI's light one; callbacks run on the
 * calling thread, inside hwspy_count_report() and hwspy_count_findings()). */
struct hwspy_count_sampling {
	/* a thread's name where Python's is not known (NULL back: none) */
	const char *(*thread_name)(void *ctx, pid_t tid);
	/* up to max functions behind event ev, largest share first: how many; *ret_samples the
	 * event's samples in Python code (0: not sampled) */
	size_t (*functions)(void *ctx, const char *ev, struct hwspy_function *ret, size_t max,
			    uint64_t *ret_samples);
	void *ctx;
	uint64_t samples;               /* its samples (0: it named none) */
	const struct hwspy_gil_wait *gil;   /* copied */
	size_t n_gil;
	bool gil_measured;              /* it took the switches off the CPU */
};

/* The events chosen (and the sampling run's). -E2BIG (more than HWSPY_COUNT_MAX_EVENTS), -EINVAL
 * (no list of events, sampling the calling process), -ENOENT (an unknown event:
 * hwspy_reason() "unknown event 'NAME'"), -ENOMEM. */
int hwspy_count_new(const struct hwspy_count_opts *o, struct hwspy_count **ret);
void hwspy_count_free(struct hwspy_count *c);   /* stops first; NULL a no-op */
/* Whether every event counts user space only (user_only_fallback applied). */
bool hwspy_count_user_only(const struct hwspy_count *c);
/* Starts counting: pid > 0 that process; argv (pid 0) a command launched, counted from its
 * exec (it starts in hwspy_count_run()); neither: the calling process. -ESRCH no such process,
 * -EACCES/-EPERM not allowed, -ENOENT none of the events opens (or no such command), -EBUSY
 * started already, -EMFILE, -ENOMEM. */
int hwspy_count_start(struct hwspy_count *c, pid_t pid, char *const *argv);
/* Where hwspy_count_start() failed (with opts.sampling): the counters, or the target as the
 * sampling run found it (-ESRCH, -EPERM, -EACCES: as the counters'); the target's mappings,
 * read for the run; the run's events (-ESRCH gone since, -EPERM/-EACCES, -ENOENT its event:
 * hwspy_reason() "event 'NAME' cannot be opened on this machine", -ENOBUFS, -EMFILE ...: a
 * limit), or out of memory. A command launched by the run whose counters then failed is left
 * running: hwspy_count_pid() names it, hwspy_count_stop() and hwspy_count_stats() say whether
 * it has ended. */
enum hwspy_count_failed {
	HWSPY_COUNT_FAILED_COUNTERS,
	HWSPY_COUNT_FAILED_MAPPINGS,
	HWSPY_COUNT_FAILED_SAMPLING,
	HWSPY_COUNT_FAILED_MEMORY,
};
enum hwspy_count_failed hwspy_count_failed(const struct hwspy_count *c);
/* Why an attached target is counted without the sampling run asked for (after the start): 0
 * (it runs, or none was asked), -ENOENT no interpreter found, else why its Python cannot be
 * read (-ENOTSUP, -EBADMSG ...). */
int hwspy_count_sampling_error(const struct hwspy_count *c);
/* The sampling run's recorder (NULL: none runs): its mode, stats, pause and resume. c's. */
struct hwspy_recorder *hwspy_count_recorder(struct hwspy_count *c);
/* The counted process (a launched command's, once started). */
pid_t hwspy_count_pid(const struct hwspy_count *c);
/* Follows the threads' context switches once (where something else waits meanwhile). */
void hwspy_count_tick(struct hwspy_count *c);
/* Counts until *stop (NULL: none), duration_ns (0: none) or the target's end; blocks. With the
 * sampling run: samples meanwhile, the threads' switches followed at each slice; ends early
 * where the run does (its failure, or the slice function's, returned). */
int hwspy_count_run(struct hwspy_count *c, volatile sig_atomic_t *stop, uint64_t duration_ns);
/* The values now, counting going on; and after the stop, the final ones (the sampling run
 * ended too, first). 0, -ENOMEM. */
int hwspy_count_read(struct hwspy_count *c);
int hwspy_count_stop(struct hwspy_count *c);
/* The values of the last reading, valid until the next call on c. Before any: the events
 * chosen, not counted. */
const struct hwspy_count_event *hwspy_count_events(const struct hwspy_count *c, size_t *ret_n);
const struct hwspy_count_thread *hwspy_count_threads(const struct hwspy_count *c, size_t *ret_n);
void hwspy_count_stats(const struct hwspy_count *c, struct hwspy_count_stats *ret);
/* The last reading again with a sampling run's part (s NULL: opts.sampling's own run, if any):
 * thread names, the GIL waits, the functions the findings name. 0, -ENOMEM. */
int hwspy_count_report(struct hwspy_count *c, const struct hwspy_count_sampling *s);
const struct hwspy_gil_wait *hwspy_count_gil_waits(const struct hwspy_count *c, size_t *ret_n);
/* The report of the last reading (target: how it is named, "pid 123"): perf stat's table, the
 * threads, the findings in plain words; or as one JSON object (README: "hwspy stat --json").
 * 0, -EIO, -ENOMEM. */
int hwspy_count_write_text(struct hwspy_count *c, const char *target, FILE *out);
int hwspy_count_write_json(struct hwspy_count *c, const char *target, FILE *out);

/* Blocks of the calling process (the Python package's `with hwspy.count(...)`): counted once
 * (hwspy_count_start(c, 0, NULL), kept open) and read at the start and end of each block,
 * cheaply. A mark holds every counter's values at one moment, per thread counted:
 * hwspy_count_mark_read() reads each group of each thread once (no /proc, no allocation:
 * microseconds). A mark is also a sum of intervals: hwspy_count_mark_add() adds the difference
 * of two readings (a block, its pauses left out; blocks nest, each its own marks).
 * hwspy_count_use() makes a sum c's last reading: hwspy_count_events() (values, times, metrics),
 * hwspy_count_threads() and hwspy_count_findings() then give the interval's. Threads started
 * after the start are counted in the counters of the thread that started them (inherit), live
 * ones included: their values are in that thread's row. A mark is made for c (after its start)
 * and freed before it. */
struct hwspy_count_mark;
/* A mark of c's size, all zero (an empty sum): 0, -EINVAL (not counting), -ENOMEM. */
int hwspy_count_mark_new(const struct hwspy_count *c, struct hwspy_count_mark **ret);
void hwspy_count_mark_free(struct hwspy_count_mark *m);         /* NULL a no-op */
/* m := every counter's values now (and the monotonic time). 0, -EINVAL (not counting, or m
 * not made for c). */
int hwspy_count_mark_read(struct hwspy_count *c, struct hwspy_count_mark *m);
/* sum += to - from (from read before to; a counter that went backwards adds 0). */
void hwspy_count_mark_add(struct hwspy_count_mark *sum, const struct hwspy_count_mark *from,
			  const struct hwspy_count_mark *to);
/* c's last reading := sum (thread names from /proc). 0, -EINVAL, -ENOMEM. */
int hwspy_count_use(struct hwspy_count *c, const struct hwspy_count_mark *sum);

/* ==== findings ============================================================================== */
/*
 * What counts mean, as data: each rule a metric of the counts, a threshold with its source,
 * what crossing it means and what to do next, and the Python functions (or threads) behind it
 * where a sampling run named them. Strings are the library's, static.
 */
#define HWSPY_FINDING_FUNCTIONS 3
#define HWSPY_FINDINGS_MAX 16
/* A function behind a finding (its share of the finding's event's samples), or for the GIL
 * finding a thread (tid set) and its share of its time spent waiting. */
struct hwspy_function {
	char text[256];                 /* "shuffle_rows (train.py:12)", "MainThread" */
	double share;                   /* 0..1 */
	uint64_t samples;
	pid_t tid;                      /* a thread (0: a function) */
};
struct hwspy_finding {
	const char *id;                 /* "high-llc-mpki" (stable) */
	const char *metric;             /* "LLC-load-misses per 1k instructions" */
	double value, threshold;
	bool above;                     /* value > threshold (else below) */
	const char *unit;               /* "", "%", "/s", " cores" */
	const char *meaning, *advice;
	const char *event;              /* the event its functions are named by (NULL: none) */
	struct hwspy_function functions[HWSPY_FINDING_FUNCTIONS];
	size_t n_functions;
	uint64_t samples;               /* the event's samples the shares are of */
	bool threads;                   /* functions are threads */
};
/* A rule that could not be applied: the event it needs was not counted (error why). */
struct hwspy_unmeasured {
	const char *id, *metric, *missing_event;
	int error;
};
struct hwspy_findings {
	struct hwspy_finding f[HWSPY_FINDINGS_MAX];
	size_t n;
	struct hwspy_unmeasured u[HWSPY_FINDINGS_MAX];
	size_t n_unmeasured;
};
/* The findings of c's last reading (with hwspy_count_report()'s sampling part, if any). */
int hwspy_count_findings(struct hwspy_count *c, struct hwspy_findings *ret);
/* Rule i (0, 1 ...) as data: false past the last. how: its formula in words. */
struct hwspy_rule {
	const char *id, *metric, *unit, *meaning, *advice, *source;
	const char *by;                 /* the event it names functions by (NULL: none) */
	bool above, threads;
	double threshold;
	char how[512];
};
bool hwspy_finding_rule(size_t i, struct hwspy_rule *ret);
/* The rules, thresholds and their sources in words (`hwspy stat --explain`) into out. 0, -EIO. */
int hwspy_findings_explain(FILE *out);
/* ==== live table ============================================================================ */

/*
 * What `hwspy top` shows, as data: the finished samples of a recording summed per (thread,
 * function) into self and total value vectors, the columns those allow, a view of the rows
 * (one thread or all, native rows shown or not) sorted by any column, and each row and the
 * column header as text of a given width. Fed from a recording's sink (frame ids, values, tid).
 *
 * Values: a sample has 1 + n_events values: [0] the sample (1), [1 + i] what event i counted.
 * A frame's self vector adds the samples it was the leaf of, its total vector every sample it
 * was on, once per sample however often it recurs in that stack.
 *
 * Frames are the caller's ids (a recording's profile's), named by the callbacks of
 * struct hwspy_table_opts, each called once per id, the first time a sample holds it, on the
 * thread calling hwspy_table_add(): frame_name() the text its row shows (valid until the next
 * call; NULL: no such frame), frame_native() whether it is a native or kernel frame (NULL: none
 * is). Frames of one text (a native function seen at two addresses) are one row, under the
 * first id of that text.
 *
 * Columns, in this order: "self%" and "total%" (event 0's share of the view's total), one
 * "NAME%" per further event (its self share), then one per ratio derived from the events
 * ("IPC", "NAME/1k-instr", "NAME miss%"), on each row's self vector. A value is undefined (shown
 * "-") where its denominator is 0.
 *
 * The view is the table's: hwspy_table_view() builds it; its rows, values and texts stay valid
 * until the next hwspy_table_add(), hwspy_table_zero() or hwspy_table_view(); a text returned
 * until the next call on the table. Nothing here blocks but for memory.
 */
struct hwspy_table;

#define HWSPY_TABLE_ALL_THREADS UINT32_MAX      /* hwspy_table_view_opts.tid: every thread */
#define HWSPY_TABLE_COL_SELF 0
#define HWSPY_TABLE_COL_TOTAL 1

struct hwspy_table_opts {
	const char *const *events;      /* the events' names, the sampling one first (copied) */
	size_t n_events;                /* 1 .. 8 */
	const char *(*frame_name)(void *ctx, uint32_t id);
	bool (*frame_native)(void *ctx, uint32_t id);   /* may be NULL */
	void *ctx;
};

/* An empty table: 0, -EINVAL (no events or more than 8, no frame_name), -ENOMEM. */
int hwspy_table_new(const struct hwspy_table_opts *o, struct hwspy_table **ret);
void hwspy_table_free(struct hwspy_table *t);
/* One finished sample: frames root first (depth >= 1), n_values = 1 + n_events values. 0,
 * -EINVAL (n_values, tid HWSPY_TABLE_ALL_THREADS, a frame frame_name() does not name), -ENOMEM;
 * a failed add changes no count. */
int hwspy_table_add(struct hwspy_table *t, uint32_t tid, const uint32_t *frames, size_t depth,
		    const uint64_t *values, size_t n_values);
/* Every count back to 0 (a new window); the threads seen are kept. */
void hwspy_table_zero(struct hwspy_table *t);
/* Samples since the start or the last zero. */
uint64_t hwspy_table_samples(const struct hwspy_table *t);
/* The threads seen, ascending (i < hwspy_table_n_threads(); else HWSPY_TABLE_ALL_THREADS), and
 * the one after tid in a cycle: all threads, each by ascending tid, all again. */
size_t hwspy_table_n_threads(const struct hwspy_table *t);
uint32_t hwspy_table_thread(const struct hwspy_table *t, size_t i);
uint32_t hwspy_table_next_thread(const struct hwspy_table *t, uint32_t tid);
/* The columns, and column col's name (NULL past the last). */
size_t hwspy_table_n_columns(const struct hwspy_table *t);
const char *hwspy_table_column_name(const struct hwspy_table *t, size_t col);

struct hwspy_table_view_opts {
	uint32_t tid;                   /* HWSPY_TABLE_ALL_THREADS, or one thread */
	bool hide_native;               /* leave out native and kernel frames' rows */
	size_t sort;                    /* the column sorted by (descending, undefined last) */
};
/* The view of vo's thread, sorted by vo's column (self where there is no such column): 0,
 * -EINVAL (a thread the table has not seen: the view is then empty), -ENOMEM. */
int hwspy_table_view(struct hwspy_table *t, const struct hwspy_table_view_opts *vo);
/* The view's rows, its column sorted by, row i's frame id (its text's first; UINT32_MAX past
 * the last row), value in column col (false where undefined or no such row or column), and
 * self and total vectors (1 + n_events values; NULL past the last row). */
size_t hwspy_table_rows(const struct hwspy_table *t);
size_t hwspy_table_sort_column(const struct hwspy_table *t);
uint32_t hwspy_table_row_frame(const struct hwspy_table *t, size_t i);
bool hwspy_table_value(const struct hwspy_table *t, size_t i, size_t col, double *ret);
const uint64_t *hwspy_table_row_self(const struct hwspy_table *t, size_t i);
const uint64_t *hwspy_table_row_total(const struct hwspy_table *t, size_t i);
/* How many columns, left to right, fit a line of width display columns beside the function's
 * name (width <= 0: every one). */
size_t hwspy_table_fit(const struct hwspy_table *t, int width);
/* The column header (the sort column marked "*") and row i as a line of at most width display
 * columns (<= 0: no limit): the columns that fit, then the function's name, cut with ".." to
 * fit. *ret valid until the next call on t: 0, -EINVAL (no such row), -ENOMEM. */
int hwspy_table_header_text(struct hwspy_table *t, int width, const char **ret);
int hwspy_table_row_text(struct hwspy_table *t, size_t i, int width, const char **ret);

/* The target's CPU time, user and system, every thread's, in ns (to the clock tick): 0,
 * -ESRCH (gone), -EBADMSG, -errno. */
int hwspy_target_cpu_ns(pid_t pid, uint64_t *ret_ns);
/* Context switches of pid's threads so far, voluntary and not, summed over the first max
 * threads listed (a process of many threads costs no more than max reads), and how many
 * threads were read and listed (listed counted up to HWSPY_SWITCHES_LISTED). 0, -ESRCH, -errno. */
#define HWSPY_SWITCHES_LISTED 100000
struct hwspy_switches {
	uint64_t voluntary, involuntary;
	size_t read, listed;
};
int hwspy_target_switches(pid_t pid, size_t max, struct hwspy_switches *ret);
/* The target's command name (as ps shows it: at most 15 bytes) into buf: 0, -ESRCH, -EINVAL
 * (pid <= 0, size 0), -errno. */
int hwspy_target_comm(pid_t pid, char *buf, size_t size);

/* (topshrink) The table of a recording, the steps top's keys take on a view, the table as
 * text, and the numbers of top's header: the recorder's mode as top names it, the rates from
 * two readings of the target.
 *
 * hwspy_table_new_recording(): a table of rec's profile's events whose frames are named by
 * their labels, as a flame graph's boxes name them (a Python file by its module-relative path,
 * a native module once), native and kernel frames the native ones (rec outlives the table);
 * hwspy_table_full_paths(t, true), before the first sample, names them with full paths (a
 * frame named already keeps its name; no-op on a table of hwspy_table_new()).
 * hwspy_table_add_sample() adds one sample of rec's sink. As hwspy_table_new() and
 * hwspy_table_add() return. */
int hwspy_table_new_recording(struct hwspy_recorder *rec, struct hwspy_table **ret);
void hwspy_table_full_paths(struct hwspy_table *t, bool full_paths);
int hwspy_table_add_sample(struct hwspy_table *t, const struct hwspy_sample *s);
/* A step of vo: sort by self, by total, by the column left or right of vo->sort (none past
 * the first or last); the next thread (hwspy_table_next_thread()); native rows hidden or shown. */
enum hwspy_table_step {
	HWSPY_TABLE_SORT_SELF, HWSPY_TABLE_SORT_TOTAL, HWSPY_TABLE_SORT_LEFT, HWSPY_TABLE_SORT_RIGHT,
	HWSPY_TABLE_NEXT_THREAD, HWSPY_TABLE_NATIVE,
};
void hwspy_table_step(const struct hwspy_table *t, struct hwspy_table_view_opts *vo,
		      enum hwspy_table_step step);
/* The column header and the view's first max_rows rows (0: every one), of no width limit,
 * each line ended by "\n". *ret valid until the next call on t: 0, -ENOMEM. */
int hwspy_table_text(struct hwspy_table *t, size_t max_rows, const char **ret);

/* How rec reads stacks now; a capture that failed to start is CAPTURE_FAILED (nonblocking). */
enum hwspy_live_mode {
	HWSPY_LIVE_NONBLOCKING, HWSPY_LIVE_CAPTURE, HWSPY_LIVE_CAPTURE_FAILED, HWSPY_LIVE_STOPS,
};
enum hwspy_live_mode hwspy_live_mode(struct hwspy_recorder *rec);

/* Readings of rec's target and stats by hwspy_live_rates_read(), the first at the start, then
 * one a second say: samples a second, the target's CPU (% of one core: 250 is two and a half cores
 * busy) and context switches a second, each from this reading and the one before, valid (_ok)
 * where both had it; a thread that exited takes its switches out of the sum (a rate of 0 then,
 * never negative). Switches are read from the first HWSPY_LIVE_TASKS threads. Zeroed by the
 * caller before the first reading; nothing fails (what cannot be read is not _ok). */
#define HWSPY_LIVE_TASKS 256
struct hwspy_live_rates {
	double samples_s, cpu_pct, vol_s, invol_s;
	bool samples_ok, cpu_ok, sw_ok;
	uint64_t lost;                  /* samples lost so far */
	struct hwspy_switches sw;       /* the last switches read: threads read, listed */
	long cores;                     /* CPUs online (at least 1) */
	char comm[64];                  /* the target's command name, as last read ("": none) */
	uint64_t at_ns, samples, cpu_ns;        /* the last reading's */
	bool have_cpu, have_sw;
};
void hwspy_live_rates_read(struct hwspy_live_rates *q, struct hwspy_recorder *rec,
			   uint64_t now_ns);

/* ==== monitor =============================================================================== */
/*
 * A long-running agent (hwspy monitor): watches the processes that match (pids, a name regex as
 * pgrep takes it, or every CPython process), picked up by a scan of /proc each second and
 * dropped when they exit (a restarted service is a new pid, picked up again); counts each one's
 * events (as hwspy_count, threads started later included), samples it at a low rate, never by a
 * stop (the BPF capture, else reads just after each sample), samples where its threads wait
 * (/proc, once per tick), and serves all of it to Prometheus: GET /metrics on a listener, the
 * text format 0.0.4, or OpenMetrics 1.0 where the scraper's Accept asks for it. With a profile
 * directory, one labelled pprof file per interval per process (written whole or not at all),
 * the directory kept within keep files and max_disk bytes, oldest first.
 *
 * Each watched process has a thread of the monitor's own that runs its recorder; the calling
 * thread runs the scan, the ticks, the listener and the rotation (hwspy_monitor_run()). Memory
 * stays flat: an interval's profile is written and dropped, and a recorder whose tables passed
 * a bound is replaced at the rotation.
 */
struct hwspy_monitor;
/* What happened, for a client's one line (pid 0: none; detail never NULL). */
enum hwspy_monitor_note {
	HWSPY_MONITOR_WATCH,            /* a process picked up (detail: its name) */
	HWSPY_MONITOR_NO_SAMPLING,      /* counted, not sampled (err; detail: why) */
	HWSPY_MONITOR_UNREADABLE,       /* neither counted nor sampled (err; detail: why); its
	                                 * series say so, tried again at each rotation */
	HWSPY_MONITOR_GONE,             /* a watched process exited: its series go */
	HWSPY_MONITOR_PROFILE,          /* a profile written (detail: its path) */
	HWSPY_MONITOR_PROFILE_FAILED,   /* a profile not written (err; detail: the path) */
	HWSPY_MONITOR_REOPENED,         /* SIGHUP: the profile directory opened again */
	HWSPY_MONITOR_HTTP_FAILED,      /* a scrape's connection failed (err) */
};
typedef void (*hwspy_monitor_note_fn)(void *ctx, enum hwspy_monitor_note note, pid_t pid, int err,
				      const char *detail);
/* Zero is the default of each. */
struct hwspy_monitor_opts {
	const pid_t *pids;              /* these processes while they live */
	size_t n_pids;
	const char *name;               /* a POSIX extended regex, unanchored, on the process name
	                                 * (its comm), or with full on the command line */
	bool full;
	bool all_python;                /* every process running CPython */
	const char *listen;             /* "127.0.0.1:9464", "[::1]:9464", ":9464" (127.0.0.1),
	                                 * port 0 a free one; NULL: no listener */
	const char *events;             /* counted, perf's names (NULL: perf stat's defaults that
	                                 * open here, hardware ones where there is a PMU) */
	const char *sample;             /* sampled, its first event (NULL: cpu-clock); the others
	                                 * are read at each sample */
	uint64_t freq;                  /* samples a second per thread (0: 10) */
	double every;                   /* seconds per interval: profiles, top functions, ratios
	                                 * and findings (0: 60) */
	const char *profiles;           /* the profile directory (NULL: none written) */
	size_t keep;                    /* profiles kept (0: no bound) */
	uint64_t max_disk;              /* their bytes in all (0: no bound) */
	size_t top_functions;           /* functions per process per sampled event (0: none) */
	const char *const *labels;      /* "KEY=VALUE", on every series and profile (service=NAME
	                                 * names the profiles' files too) */
	size_t n_labels;
	bool raise_nofile;              /* may raise the soft RLIMIT_NOFILE to the hard one */
	hwspy_monitor_note_fn note_fn;
	void *note_ctx;
};
/* Checks the options (a regex that does not compile, a label not KEY=VALUE or a key that
 * Prometheus refuses, nothing to watch: -EINVAL), opens the listener (-EADDRINUSE, -EACCES ...)
 * and the profile directory (-EPERM: owned by another user or writable by others); watches
 * nothing yet. 0 or -errno, hwspy_reason() saying which. */
int hwspy_monitor_new(const struct hwspy_monitor_opts *o, struct hwspy_monitor **ret);
/* The port listened on (port 0 asked: the one given), 0 without a listener. */
int hwspy_monitor_port(const struct hwspy_monitor *m);
/* Runs until *stop is set (checked at least every 200 ms): scans, ticks, serves, rotates. A
 * set *reopen (then cleared) opens the profile directory again. At the end every watched
 * process's current interval is written as a profile. 0, or -errno of a failure that leaves
 * nothing to do. */
int hwspy_monitor_run(struct hwspy_monitor *m, volatile sig_atomic_t *stop,
		      volatile sig_atomic_t *reopen);
/* The metrics as /metrics serves them (openmetrics: that format), into out. 0, -errno. */
int hwspy_monitor_write_metrics(struct hwspy_monitor *m, bool openmetrics, FILE *out);
/* Processes watched now. */
size_t hwspy_monitor_watched(const struct hwspy_monitor *m);
/* A note's line for a client to say, into buf (NULL back: not said at this verbosity: -1
 * errors alone, 0 processes picked up and dropped too, 1 each profile written too). */
const char *hwspy_monitor_note_words(enum hwspy_monitor_note note, pid_t pid, int err,
				     const char *detail, int verbosity, char *buf, size_t size);
/* A size as "512", "64K", "10M", "2G" (powers of 1024) into *ret: 0, -EINVAL. */
int hwspy_parse_size(const char *s, unsigned long long *ret);
/* Stops every recorder and writes the last interval of each process still watched (none after
 * hwspy_monitor_run(), which writes them at its end); NULL no-op. */
void hwspy_monitor_free(struct hwspy_monitor *m);

#ifdef __cplusplus
}
#endif

#endif
