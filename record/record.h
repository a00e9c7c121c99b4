/*
 * record: the recorder, the pipeline that turns a target's perf samples into stacks of Python,
 * native and kernel frames (DESIGN.md, "The pipeline"). It owns the stages' handles (sampler,
 * pyframes, symbolizer), finds the interpreter (at once when attaching, as soon as the loader
 * has mapped it when launching, again after an exec), gives the BPF capture its roots, walks
 * the Python frames of each sample (while its thread is stopped, in exact mode by stops),
 * merges them with the native and kernel frames (merge.h) and hands each finished sample to
 * a sink.
 *
 * Lifecycle, one way:
 *   recorder_new(opts)          the frame table (a struct profile), buffers; nothing opened
 *   recorder_find_python()      attach: open the target's memory, find its interpreter
 *   recorder_load_symbols()     attach: its mappings (and, asked for, symbols and CFI now)
 *   recorder_set_mode()         the caller's fallback policy, between failed starts
 *   recorder_start()            open the events (sampler_new); a launched command starts
 *   recorder_run()              sample until stopped, the duration, or the target's end;
 *                               then drain, name the threads, note build-ids
 *   recorder_stats(), recorder_profile(), recorder_python()   read at any time
 *   recorder_free()             NULL and half-built recorders included
 * The recorder never prints (errors come back as -errno, soft failures as counts in struct
 * record_stats) and installs no signal handler: the caller owns the stop flag.
 *
 * Frames and the sink. Every frame is interned in the recorder's profile (recorder_profile():
 * the model, output/profile.h), so a finished sample is a list of frame ids, root first. The
 * sink receives each one on the thread that runs the sampler's callbacks; without a sink the
 * recorder adds it to its own profile (profile_add_at), which is what `record` writes. Thread
 * names go into the profile's thread table as they are learned.
 *
 * Errors: -ESRCH target gone, -EPERM / -EACCES not allowed, -ENOENT no interpreter found,
 * -ENOTSUP unsupported Python, -EBADMSG a corrupt _Py_DebugOffsets, -ENOMEM; recorder_start()
 * returns sampler_new()'s errors as they are (sampler.h: -EPERM and -EBUSY in exact mode by
 * stops mean "retry nonblocking", -EACCES "count user space only").
 */
#ifndef HWSPY_RECORD_H
#define HWSPY_RECORD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/procfs.h"
#include "output/profile.h"
#include "pyframes/pyframes.h"
#include "sampler/sampler.h"
#include "symbolizer/symbolizer.h"

#define RECORD_MAX_PY_FRAMES 4096  /* the innermost kept; a deeper stack is marked cut */
#define RECORD_DEFAULT_STACK_SIZE 32768
/* A Python stack read this long after its sample (no capture, no stop) is taken for a later
 * one, not the sample's: its native frames are kept instead (--native; without, the function
 * the sample was in where that is outside the interpreter), never paired with it. Nonblocking
 * reads are late by a tick (at most 5 ms), a launched command's first ones by up to a second on
 * a busy machine. */
#define RECORD_STALE_READ_NS 50000000ULL
/* ... without --native, where the sample's leaf is a function outside the interpreter (libz's
 * deflate), the late stack is paired with it only this soon: a nonblocking read's tick (5 ms
 * at most); later, the thread may have left that call for another (a launch's first reads) */
#define RECORD_STALE_LEAF_NS 5000000ULL
/* --off-cpu with the capture: a switch-out read later than this without one is [unknown] (the
 * thread may have run on since; a wait is often shorter than RECORD_STALE_READ_NS) */
#define RECORD_OFF_CPU_STALE_NS 1000000ULL
/* The [gc] frame: the cyclic GC's flag of a running thread read later than this after its
 * sample is not taken (a collection lasts milliseconds); nonblocking reads come up to a tick
 * late (5 ms at most), more on a loaded machine */
#define RECORD_GC_STALE_NS 10000000ULL

/* The frame that stands for Python code no one can name any more (merge.h: a stack read after
 * its sample that did not fit it) */
#define RECORD_PY_UNKNOWN "[python]"

enum record_mode {
	RECORD_CAPTURE,                 /* exact: a BPF program copies the frames at the overflow */
	RECORD_STOPS,                   /* exact: the sampled thread is stopped (ptrace) */
	RECORD_NONBLOCKING,             /* read after the sample, nothing stopped or captured */
	RECORD_SIGNAL,                  /* exact, the calling process only: a SIGTRAP handler
	                                 * copies the frames at the overflow (sampler.h) */
};

struct record_opts {
	pid_t pid;                      /* attach to this process, or 0 */
	char *const *argv;              /* launch this command, or NULL */
	const struct event_spec *events;/* events[0] samples; the caller's array, which must
	                                 * outlive the recorder (it may change its attrs between
	                                 * failed recorder_start() calls) */
	size_t n_events;
	uint64_t freq, period;          /* as struct sampler_opts */
	uint32_t leaders;               /* sampler_opts.leaders: events[i] samples on its own, at its
	                                 * own rate (sampler_leader_rate(), the profile's event
	                                 * rate): its column weighs its own samples (record_sample
	                                 * .event), not deltas read at events[0]'s */
	enum record_mode mode;
	unsigned stop_budget;           /* RECORD_STOPS: sampler_opts.stop_budget_pct */
	bool function;                  /* one frame per function (its first line) */
	bool threads;                   /* a root frame per thread: [thread TID NAME] */
	bool native;                    /* native frames by DWARF unwinding of a stack copy */
	uint32_t stack_size;            /* ... of this many bytes */
	bool kernel;                    /* kernel frames at the leaf */
	bool wall;                      /* events[0] is cpu-clock: its samples, and the switches off
	                                 * the CPU as --off-cpu makes them, in one profile (ns) */
	bool subprocesses;              /* follow the processes the target starts: each sample's
	                                 * root is [process PID COMMAND] (capture and nonblocking
	                                 * modes) */
	bool off_cpu;                   /* events[0] is context-switches at period 1: each sample
	                                 * weighs the time until its thread ran again (ns, as
	                                 * values[1]) and its leaf says why it waited: a FRAME_WAIT
	                                 * frame, [wait: ...] or [preempted] */
	bool gil_waits;                 /* the switches off the CPU sampled too (--wall's switch
	                                 * event; not by stops) for the threads' GIL waits
	                                 * (recorder_gil_threads()), not for the profile */
	bool gil_only;                  /* --gil: only samples whose thread held the GIL go to the
	                                 * sink (not with off_cpu; the others counted) */
	size_t log_bytes;               /* keep the time-ordered sample log up to this many bytes
	                                 * (profile_log_start; speedscope), 0: none */
	void (*exec_fn)(void *ctx, pid_t pid);  /* launch: sampler_opts.exec_fn (inside
	                                 * recorder_start(), the command stopped at its exec) */
	void *exec_ctx;
	unsigned ring_pages, read_ms;   /* sampler_opts.ring_pages (0: the mode's), .read_ms */
	bool sigchld, raise_nofile;     /* sampler_opts.sigchld, .raise_nofile: what the recorder
	                                 * may do to the calling process (false: nothing; a
	                                 * command sets both; RECORD_STOPS needs sigchld) */
};

/* Whether a sample's thread held the GIL at the sample: from its capture (read at the
 * overflow), else read live when the sample is read (exact while its thread is stopped, late by
 * as much as the read otherwise). Unknown: no GIL (free-threaded), no capture of it and no live
 * read, or a read that failed; off-CPU samples are always unknown. */
enum record_gil {
	RECORD_GIL_UNKNOWN,
	RECORD_GIL_FREE,                /* not held by this thread (free, or another's) */
	RECORD_GIL_HELD,
};

/* One finished sample, handed to the sink. */
struct record_sample {
	pid_t tid;
	uint64_t time_ns;               /* CLOCK_MONOTONIC */
	const uint32_t *frames;         /* ids of recorder_profile()'s frames, root first */
	size_t depth;
	const uint64_t *values;         /* [0] 1 (the sample), [1 + i] what event i counted */
	size_t n_values;
	size_t event;                   /* the event whose sample this is (sample.event): 0, or
	                                 * one of opts.leaders, whose values[1 + event] alone is
	                                 * set */
	uint64_t late_ns;               /* its Python stack was read this long after the sample
	                                 * (no capture, no stop: a running thread's, maybe a later
	                                 * one); 0: at it */
	int gil;                        /* enum record_gil */
	bool off_cpu;                   /* a switch off the CPU: values[1] its time off it (ns) */
};

/* A thread's GIL counts (recorder_gil_threads()), of every sample before --gil's filter. CPU
 * events: its samples, their weight (values[1]), those whose GIL was known and held. Off-CPU:
 * its time off the CPU, the part in [wait: GIL], and the span from its first switch-out to
 * its last switch-in (first_ns, last_ns: CLOCK_MONOTONIC). */
struct record_gil_thread {
	pid_t tid;
	uint64_t samples, weight, known, held;
	uint64_t off_ns, gil_wait_ns, first_ns, last_ns;
};
#define RECORD_GIL_MAX_THREADS 65536    /* threads tallied; samples of more: gil_untallied */

struct record_sink {
	/* < 0: the sample could not be kept (counted in stats.add_failed) */
	int (*sample)(void *ctx, const struct record_sample *s);
	void *ctx;
};

/* What the recorder itself counted; the stages' own counts are theirs (pointers, valid until
 * the next recorder call). */
struct record_stats {
	const struct sampler_stats *sampler;   /* NULL before recorder_start() succeeded */
	const struct pyframes_stats *pyframes; /* the interpreter's now (NULL: none found; an
	                                        * exec starts them again) */
	const struct symbolizer_stats *symbolizer;     /* NULL: none (yet, or since an exec) */
	uint64_t elapsed_ns;            /* recorder_run(): from its start to its end (or now) */
	uint64_t dropped_torn;          /* Python stacks torn by the running thread: read after
	                                 * the sample, they changed under the read (pyframes_set_verify),
	                                 * retried and torn again (their sample kept as [unknown]) */
	uint64_t dropped_unreadable;    /* ... unreadable */
	uint64_t no_python;             /* samples of threads running no Python code ([native]) */
	uint64_t read_after_exit;       /* read late, the thread gone by then ([native]) */
	uint64_t merge_failed;          /* native and Python stacks that would not merge (kept
	                                 * with their Python frames) */
	uint64_t late_unfit;            /* Python stacks read after the sample (no capture, no
	                                 * stop) more than RECORD_STALE_READ_NS late or not fitting
	                                 * their native one: kept with their native frames (without
	                                 * --native: the function the sample was in, outside the
	                                 * interpreter), RECORD_PY_UNKNOWN where Python code ran */
	uint64_t unwound, unwound_frames;   /* --native: stacks unwound, native frames found */
	uint64_t not_unwound_maps;      /* --native: samples not unwound, the target's mappings not
	                                 * read */
	uint64_t not_unwound_stack;     /* ... no copy of their user stack and registers */
	uint64_t kernel_frames;         /* --kernel: kernel frames recorded */
	uint64_t captured, uncaptured;  /* capture mode: Python walks from a capture / from live
	                                 * memory */
	uint64_t captured_cut;          /* of captured: deeper than the capture, the outer frames
	                                 * read from memory after the sample */
	uint64_t captured_dropped;      /* of captured: dropped (torn or unreadable) */
	uint64_t truncated;             /* stacks cut at the root end, deeper than
	                                 * RECORD_MAX_PY_FRAMES (marked [truncated: N frames]) */
	uint64_t truncated_gone;        /* captured stacks cut where the capture ends, the frames
	                                 * past it gone when read (marked [truncated]) */
	uint64_t add_failed;            /* samples the sink refused */
	size_t n_late;                  /* reads after their sample (no capture, no stop) ... */
	uint32_t late_median_us, late_p99_us, late_max_us;   /* ... how late (after the run) */
	uint64_t off_cpu_ns;            /* --off-cpu: the time of the samples sent to the sink */
	uint64_t processes;             /* --subprocesses: processes that had samples (the target
	                                 * too) */
	bool target_sampled;            /* ... the target among them */
	uint64_t off_cpu_unmatched;     /* --off-cpu: switch-ins not kept (out of memory) */
	uint64_t off_cpu_capped;        /* --off-cpu, --wall: waits whose switch-in was lost (a
	                                 * ring overflowed), ended where the thread was next seen
	                                 * to run (never counted past it) */
	uint64_t off_cpu_initial;       /* --off-cpu, --wall, attach: waits under way at the start,
	                                 * each read where it waits (a sample at the start) */
	uint64_t off_cpu_stale;         /* --off-cpu, capture mode: switch-outs read after their
	                                 * sample (before the capture started), kept as [unknown] */
	uint64_t off_cpu_regs;          /* --off-cpu, --wall with the capture (x86-64): switches
	                                 * whose wait was named from the registers the thread
	                                 * entered the kernel with (no kernel callchain) ... */
	uint64_t off_cpu_regs_unknown;  /* ... of which none were found, or no record came for the
	                                 * sample ([wait: unknown]) */
	uint64_t gil_live;              /* samples whose GIL was read live, not captured ... */
	uint64_t gil_late;              /* ... of which after the sample, its thread running */
	uint64_t gil_dropped_free;      /* --gil: samples dropped, the thread not holding it */
	uint64_t gil_dropped_unknown;   /* --gil: ... not known whether it held it */
	uint64_t gil_untallied;         /* samples of threads past RECORD_GIL_MAX_THREADS */
	int capture_error;              /* the capture's last failure to start (0: none) */
	uint64_t capture_failures;      /* ... how many times it failed (one try per interpreter) */
};

/* Why a thread waits, in the words every command uses (wait.c): "read fd 5 (pipe)", "recv
 * socket", "accept socket", "poll/epoll/select", "futex (lock)", "GIL" (a futex inside the GIL
 * state at gil: PYFRAMES_GIL_STATE_SIZE bytes; 0 unknown), "sleep", "wait child", "page fault
 * (I/O)", else the system call's name. The off-CPU profiles put them in [wait: ...] frames. */
#define WAIT_FD_CACHE 64
struct wait_fd_cache {
	struct {                        /* what sockets are, by their link */
		char link[64], words[48];
	} sockets[WAIT_FD_CACHE];
	struct {                        /* what a process's fd was when last read */
		uint64_t read_ns;       /* CLOCK_MONOTONIC, just before the read; 0: empty */
		pid_t pid;
		int32_t fd;
		char words[112];
	} fds[WAIT_FD_CACHE];
};
/* Whether a wait in system call sc (of process pid) goes on by itself after a PTRACE_INTERRUPT
 * stop, even if the tracer dies: the kernel restarts it on the way out of the stop with what is
 * left of its timeout (futex, nanosleep, poll, select, wait4, a read of a pipe or a file ...).
 * Not those that fail with EINTR instead (epoll_wait, sigtimedwait, a socket's with a timeout,
 * semop ...), nor any not known to restart. */
bool wait_restarts(pid_t pid, const struct procfs_syscall *sc);
/* The name of system call nr (x86-64), or NULL (syscall_names.c). */
const char *wait_syscall_name(long nr);
/* Whether a futex wait on address futex is one for the GIL, whose state lies at gil (0:
 * unknown): one inside that struct _gil_runtime_state (its mutexes, condition variables). */
bool wait_in_gil(uint64_t futex, uint64_t gil);
/* A wait in system call sys (its kernel name, "epoll_wait"; NULL: unknown) of process pid,
 * arg its first argument. cache (NULL: none) keeps what fds were: an fd read at or after
 * since_ns (CLOCK_MONOTONIC; the wait's start) is taken from it, as true of the wait as a
 * read now, later still (a switch-heavy target's waits on one fd: a readlink each cost
 * --off-cpu half of its CPU). */
void wait_words(pid_t pid, const char *sys, long arg, uint64_t gil, struct wait_fd_cache *cache,
		uint64_t since_ns, char *buf, size_t len);
/* A wait as /proc tells it: the task's state letter and the system call it is blocked in
 * (procfs_task_syscall()). A job-control stop is "stopped"; blocked outside a call, "page
 * fault (I/O)" (D) or "preempted". */
void wait_words_proc(pid_t pid, char state, const struct procfs_syscall *sc, uint64_t gil,
		     struct wait_fd_cache *cache, uint64_t since_ns, char *buf, size_t len);
/* The same wait as a label of few values, for metrics (record/waitsample.h): the same words,
 * without an fd's number or name: a read or write by its fd is "read (KIND)" / "write (KIND)",
 * KIND the fd's kind alone (pipe, socket, file, tty, device, eventfd, timerfd, signalfd, epoll,
 * inotify, anon inode, other, ?); a system call outside the table "syscall NR" (NR below
 * WAIT_LABEL_SYSCALLS), else "unknown". At most WAIT_LABEL_MAX bytes, NUL included. */
#define WAIT_LABEL_MAX 32
#define WAIT_LABEL_SYSCALLS 1024
void wait_label_proc(pid_t pid, char state, const struct procfs_syscall *sc, uint64_t gil,
		     char *buf, size_t len);

struct recorder;

/* The recorder for opts (copied; opts->events is not). sink NULL: into recorder_profile().
 * 0, or -ENOMEM. */
int recorder_new(const struct record_opts *opts, const struct record_sink *sink,
		 struct recorder **ret);
void recorder_free(struct recorder *rec);
/* Attach (opts.pid): opens the target's memory and looks for its interpreter (called again,
 * looks afresh, what the last call found let go). 0, or -errno as above; recorder_python()
 * then says what was found. */
int recorder_find_python(struct recorder *rec);
/* Attach: reads the target's mappings; with warm (nothing will stop the target while the first
 * samples are unwound slowly), loads the modules' symbols and CFI now (--native) and the
 * kernel's symbols (--kernel). 0, or -errno. */
int recorder_load_symbols(struct recorder *rec, bool warm);
/* The mode to start in (the caller's fallbacks: BPF refused, ptrace refused ...). */
void recorder_set_mode(struct recorder *rec, enum record_mode mode);
enum record_mode recorder_mode(const struct recorder *rec);
/* Opens the events on every thread (launching the command, which runs from its exec on: its
 * samples wait in the rings until recorder_run()). In capture mode with the interpreter
 * known, the capture starts before any event opens; its failure is not recorder_start()'s
 * (stats.capture_error). 0, or sampler_new()'s error: nothing is then left attached or
 * running, and it may be called again. */
int recorder_start(struct recorder *rec);
/* The target's pid (a launched command's once started). */
pid_t recorder_pid(const struct recorder *rec);
/* The address of the target's GIL state (record_gil_addr(): looked for again at most so often),
 * 0 unknown; on the recorder's thread. */
uint64_t recorder_gil_addr(struct recorder *rec);

struct record_run {
	volatile sig_atomic_t *stop;    /* ends the run when set */
	uint64_t duration_ns;           /* 0: until stopped or the target ends */
	/* after each slice of sampling (250 ms at most) with its result r (0 or -errno): returns
	 * 0 to go on, or a negative value that ends the run and is its result; may call
	 * recorder_pause() / recorder_resume(). NULL: r decides. */
	int (*slice_fn)(void *ctx, struct recorder *rec, int r);
	void *ctx;
	uint64_t slice_ns;              /* 0: 250 ms; longer as struct hwspy_run's says */
};

/* Samples until run->stop is set, the duration has passed, the target ends, or the Python
 * found is one hwspy cannot read (recorder_python(): fatal). Then ends sampling (every event
 * closed, the target released, a launched command left running), finishes every sample, names
 * the threads and notes the modules' build-ids. 0, or the slice's failure (-EBUSY: exact mode
 * by stops, the target began to catch every signal hwspy could stop it with): what was
 * sampled so far is kept. */
int recorder_run(struct recorder *rec, const struct record_run *run);
/* Exact mode by stops: lets go of the target (events kept, disabled) and takes it again
 * (sampler_pause/sampler_resume). */
int recorder_pause(struct recorder *rec);
int recorder_resume(struct recorder *rec);
/* Ends sampling now if recorder_run() has not (idempotent). */
void recorder_stop(struct recorder *rec);
/* Wakes a recorder_run() blocked in another thread so that it sees its run's stop flag now
 * (set it first): sampler_wake(). Any thread, after recorder_start(); async-signal-safe. Before
 * the start (no sampler yet): nothing (the run looks at the flag before its first wait). */
void recorder_wake(struct recorder *rec);

/* The mode and its fallbacks (fallback.c), one policy for every client, each choice told as a
 * note (the client words it). recorder_choose_mode(): with auto_mode, a tracepoint as events[0]
 * is read nonblocking (TRACEPOINT: no capture attaches to it, a stop would interrupt the call
 * it samples); else the BPF capture where sampler_capture_probe() allows it, else stops
 * (NO_CAPTURE, err the probe's), or nonblocking where a stop would interrupt a sleeping call
 * (an event that overflows as its thread sleeps, wall) or the target is the caller itself
 * (self) (NO_CAPTURE_ASLEEP) - but for the calling process, where sampler_signal_probe()
 * allows it and the recording is of user space alone (no kernel frames, off-CPU, wall, GIL
 * waits, subprocesses, nor an events[0] that overflows asleep), by a signal (SIGNAL, err the
 * BPF probe's; NO_SIGNAL, err the signal probe's, where it does not: nonblocking). Without
 * auto_mode, f->mode as it is. Sets and returns the mode.
 * recorder_start_fallback(): recorder_start(), and where stops are refused (-EPERM: STOPS_REFUSED)
 * or impossible (-EBUSY: STOPS_BUSY), or the signal mode refused (-EBUSY: NO_SIGNAL), again
 * nonblocking; where kernel-mode counting is refused
 * (-EACCES; not for kernel frames, off-CPU, wall or a kernel-only events[0]), every event of
 * events (the recorder's opts.events, n_events of them) set to user space only and again
 * (USER_ONLY). Its result is the last recorder_start()'s. */
enum record_note {
	RECORD_NOTE_TRACEPOINT,         /* name: events[0]'s */
	RECORD_NOTE_NO_CAPTURE_ASLEEP,
	RECORD_NOTE_NO_CAPTURE,
	RECORD_NOTE_STOPS_BUSY,
	RECORD_NOTE_STOPS_REFUSED,
	RECORD_NOTE_USER_ONLY,
	RECORD_NOTE_SIGNAL,             /* err: why no BPF capture */
	RECORD_NOTE_NO_SIGNAL,          /* err: why no signal (-EBUSY: a SIGTRAP handler) */
};
struct record_fallback {
	bool auto_mode;                 /* choose (else mode as given) */
	enum record_mode mode;
	bool self;                      /* the target is the calling process: never stopped */
	void (*note_fn)(void *ctx, enum record_note note, int err, const char *name);
	void *note_ctx;
};
enum record_mode recorder_choose_mode(struct recorder *rec, const struct record_fallback *f);
int recorder_start_fallback(struct recorder *rec, const struct record_fallback *f,
			    struct event_spec *events);
/* Facts of an event the policy goes by: it happens in the kernel alone (switches,
 * migrations: ':u' counts none); it overflows while its thread sleeps (a switch out, a
 * scheduler tracepoint). record_events_user_only(): every event of events set to user space
 * only (exclude_kernel, exclude_hv); false if none counted kernel mode. */
bool record_event_kernel_only(const struct event_spec *e);
bool record_event_samples_asleep(const struct event_spec *e);
bool record_events_user_only(struct event_spec *events, size_t n);

/* What was found of the interpreter: the last detection's result (0 found, -ENOENT none yet,
 * ...), fatal (-ENOTSUP, -EBADMSG: a Python hwspy cannot read, which ended the run; else 0),
 * and its info (version, binary, error text). */
struct record_python {
	int result;
	int fatal;
	bool found;
	const struct pyframes_info *info;
};
void recorder_python(const struct recorder *rec, struct record_python *ret);
struct profile *recorder_profile(struct recorder *rec);
/* Each thread's GIL counts so far, in the order first seen (valid until the next recorder
 * call): *ret_n of them. */
const struct record_gil_thread *recorder_gil_threads(const struct recorder *rec, size_t *ret_n);
const struct record_stats *recorder_stats(struct recorder *rec);

#endif
