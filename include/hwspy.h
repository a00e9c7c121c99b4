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

#ifdef __cplusplus
}
#endif

#endif
