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

enum hwspy_frame_kind {
	HWSPY_FRAME_PYTHON,
	HWSPY_FRAME_NATIVE,
	HWSPY_FRAME_SPECIAL,    /* "[unknown]", Python code that cannot be named ... */
};

/* A frame of a merged stack (Python frames in place of the interpreter's eval loops) */
struct hwspy_frame {
	enum hwspy_frame_kind kind;
	const char *name;       /* never NULL */
	const char *file;       /* NULL: unknown */
	int line;               /* 0: unknown */
	const char *module;     /* a native frame's module, or NULL */
};

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
	bool target_exited;
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

/* The events chosen. -E2BIG (more than HWSPY_COUNT_MAX_EVENTS), -EINVAL (no list of events),
 * -ENOENT (an unknown event: hwspy_reason() "unknown event 'NAME'"), -ENOMEM. */
int hwspy_count_new(const struct hwspy_count_opts *o, struct hwspy_count **ret);
void hwspy_count_free(struct hwspy_count *c);   /* stops first; NULL a no-op */
/* Whether every event counts user space only (user_only_fallback applied). */
bool hwspy_count_user_only(const struct hwspy_count *c);
/* Starts counting: pid > 0 that process; argv (pid 0) a command launched, counted from its
 * exec (it starts in hwspy_count_run()); neither: the calling process. -ESRCH no such process,
 * -EACCES/-EPERM not allowed, -ENOENT none of the events opens (or no such command), -EBUSY
 * started already, -EMFILE, -ENOMEM. */
int hwspy_count_start(struct hwspy_count *c, pid_t pid, char *const *argv);
pid_t hwspy_count_pid(const struct hwspy_count *c);
/* Follows the threads' context switches once (where something else waits meanwhile). */
void hwspy_count_tick(struct hwspy_count *c);
/* Counts until *stop (NULL: none), duration_ns (0: none) or the target's end; blocks. */
int hwspy_count_run(struct hwspy_count *c, volatile sig_atomic_t *stop, uint64_t duration_ns);
/* The values now, counting going on; and after the stop, the final ones. 0, -ENOMEM. */
int hwspy_count_read(struct hwspy_count *c);
int hwspy_count_stop(struct hwspy_count *c);
/* The values of the last reading, valid until the next call on c. Before any: the events
 * chosen, not counted. */
const struct hwspy_count_event *hwspy_count_events(const struct hwspy_count *c, size_t *ret_n);
const struct hwspy_count_thread *hwspy_count_threads(const struct hwspy_count *c, size_t *ret_n);
void hwspy_count_stats(const struct hwspy_count *c, struct hwspy_count_stats *ret);
/* The last reading again with a sampling run's part (s NULL: none): thread names, the GIL
 * waits, the functions the findings name. 0, -ENOMEM. */
int hwspy_count_report(struct hwspy_count *c, const struct hwspy_count_sampling *s);
const struct hwspy_gil_wait *hwspy_count_gil_waits(const struct hwspy_count *c, size_t *ret_n);
/* The report of the last reading (target: how it is named, "pid 123"): perf stat's table, the
 * threads, the findings in plain words; or as one JSON object (README: "hwspy stat --json").
 * 0, -EIO, -ENOMEM. */
int hwspy_count_write_text(struct hwspy_count *c, const char *target, FILE *out);
int hwspy_count_write_json(struct hwspy_count *c, const char *target, FILE *out);

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

#ifdef __cplusplus
}
#endif

#endif
