/*
 * record: what `hwspy record` shares between its command line (cmd_record.c) and the turning
 * of samples into profile stacks (record_sample.c). Internal to cli/.
 *
 * struct recorder is owned by cmd_record(); record_on_sample() is the sampler callback: it
 * reads the Python stack of the sampled thread (while it is stopped, in exact mode), adds the
 * native and kernel frames asked for, merges them and adds the stack to the profile. Soft
 * failures are counted in the recorder for the summary; nothing is printed.
 */
#ifndef HWSPY_CLI_RECORD_H
#define HWSPY_CLI_RECORD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "cli/format.h"
#include "cli/merge.h"
#include "output/profile.h"
#include "pyframes/pyframes.h"
#include "sampler/sampler.h"
#include "symbolizer/symbolizer.h"

#define MAX_PY_FRAMES 4096         /* the innermost kept; a deeper stack is marked cut */
#define MAX_NATIVE 256
#define MAX_KERNEL 128
#define MAX_FRAMES (MAX_PY_FRAMES + MAX_NATIVE + MAX_KERNEL + 2)
#define DEFAULT_STACK_SIZE 32768
#define DETECT_INTERVAL_NS 20000000ULL
#define LATE_MAX 1000000
/* --native: a Python stack read this long after its sample (no capture, no stop) is taken for
 * a later one, not the sample's: its native frames are kept instead. Nonblocking reads are late
 * by a tick (at most 5 ms), a launched command's first ones by up to a second on a busy machine. */
#define STALE_READ_NS 50000000ULL

struct record_opts {
	pid_t pid;
	char **argv;
	struct event_spec events[SAMPLER_MAX_EVENTS];
	size_t n_events;
	uint64_t freq, period;
	bool freq_given;                /* -F was given (a count event refuses it) */
	double duration;
	double grace;                   /* --grace: between SIGINT, SIGTERM and SIGKILL */
	bool keep_running;              /* --keep-running: a launched command outlives sampling */
	bool grace_given;
	const char *output;
	bool function, threads, nonblocking, quiet, native, kernel;
	bool ptrace;                    /* exact mode by ptrace stops, even where BPF is allowed */
	unsigned stop_budget;           /* --stop-budget PCT (0: the sampler's default) */
	enum out_format format;
	struct format_opts fmt;         /* --weight, --title, --icicle, --min-width */
	bool format_given;              /* --format, else the output's name decides */
	uint32_t stack_size;
};

struct thread_name {
	pid_t tid;
	uint32_t frame;                 /* its root frame (--threads), else unknown_frame */
	bool from_comm;                 /* named by /proc comm: Python's name not seen yet */
	unsigned tries;                 /* registry reads that looked for its Python name since */
};

/* Python's thread names (pyframes_thread_names): read when a thread is new, then at most every
 * RECORD_PYNAMES_MS while a thread still goes by its comm (at a new thread's first sample, again
 * after RECORD_PYNAMES_NEW_MS if the last read lacks it) (RECORD_PYNAMES_TRIES times for each
 * thread), and at the end */
#define RECORD_PYNAMES_MAX 1024
#define RECORD_PYNAMES_MS 200
#define RECORD_PYNAMES_NEW_MS 10        /* at a thread's first sample, if the last read lacks it */
#define RECORD_PYNAMES_TRIES 10

/* A sample read while its thread was stopped, to be finished once it runs again: everything
 * the sample pointed into (ring, stack copy) is copied here. */
struct pending {
	struct sample s;
	int r;                          /* pyframes result */
	size_t n_py;
	struct pyframes_cut cut;
	struct py_frame py[MAX_PY_FRAMES];
	uint64_t regs[32];
	uint64_t callchain[MAX_KERNEL + 8];
	unsigned char *stack;           /* opts->stack_size bytes, when --native */
};

#define MAX_PENDING 4
/* bytes of the time-ordered sample log (speedscope): with one event 20 bytes a sample, 1.6 M
 * samples (100 Hz for 10 minutes on 27 threads); past it, the merged stacks alone */
#define RECORD_LOG_BYTES (32u << 20)

struct recorder {
	const struct record_opts *opts;
	struct profile *prof;
	struct remote_mem mem;
	bool mem_open;
	struct pyframes *pf;
	struct pyframes_info info;
	int detect_error;               /* last pyframes_open result */
	uint64_t last_detect_ns;
	struct sampler *sampler;
	struct py_frame pyf[MAX_PY_FRAMES];
	struct symbolizer *sym;
	const char *interp_module;      /* basename of the file holding the interpreter */
	struct native_frame nat[MAX_NATIVE];
	uint64_t ips[MAX_NATIVE];
	struct profile_frame merged[MAX_FRAMES];
	char *scratch;                  /* MAX_NATIVE * MERGE_SCRATCH_PER_FRAME */
	uint32_t ids[MAX_FRAMES + 1];
	uint32_t native_frame, unknown_frame;
	struct thread_name *names;
	size_t n_names, cap_names, last_name;
	struct pyframes_thread_name *pynames;   /* RECORD_PYNAMES_MAX, the last registry read */
	size_t n_pynames;
	uint64_t pynames_ns;            /* when it was read (0: never) */
	uint32_t *late_us;              /* nonblocking: how late each read was */
	size_t n_late;
	uint64_t dropped_torn, dropped_unreadable, no_python, add_failed;
	uint64_t read_after_exit;       /* read late, the thread gone by then: no stack to read */
	uint64_t merge_failed, unwound, unwound_frames, kernel_frames;
	const char **bid_ambiguous;     /* module names two files with other build-ids had in this
	                                 * run (a wrapper script's loader, then the target's): no
	                                 * build-id is better than a wrong one (record_build_ids) */
	size_t n_bid_ambiguous;
	uint64_t late_unfit;            /* samples whose Python stack, read after the sample (no
	                                 * capture, no stop), was read more than STALE_READ_NS
	                                 * later or did not fit their native one: kept with their
	                                 * native frames (not in merge_failed) */
	int fatal;                      /* set by the callback to stop: an unsupported Python, or
	                                 * a corrupt _Py_DebugOffsets (-EBADMSG) */
	volatile sig_atomic_t *stop;    /* the run's stop flag, set with fatal */
	struct pending *pending;        /* MAX_PENDING slots */
	size_t n_pending;
	/* exact mode by BPF capture (sampler_capture_start) */
	bool capture;                   /* the sampler was made for it */
	uint64_t pf_gen;                /* bumped by each record_python_found() */
	uint64_t capture_gen;           /* the pf_gen the program was made for (0: none yet) */
	int capture_error;              /* sampler_capture_start()'s last failure */
	uint32_t capture_extras;        /* the extras its nodes carry (pyframes_capture_spec) */
	uint64_t captured, uncaptured;  /* Python walks from a capture / from live memory */
	uint64_t captured_cut;          /* of captured: deeper than the capture, the outer frames
	                                 * read from memory after the sample */
	uint64_t truncated;             /* stacks cut at the root end, deeper than MAX_PY_FRAMES
	                                 * (marked [truncated: N frames]) */
	uint64_t truncated_gone;        /* captured stacks cut where the capture ends, the frames
	                                 * past it gone when read (marked [truncated]) */
};

int record_special_frame(struct recorder *rec, const char *name, uint32_t *ret);
/* The interpreter was found (rec->pf, rec->info set): note it in the profile. */
void record_python_found(struct recorder *rec);
/* At the end of a run: threads still named by their comm take Python's name if the target's
 * registry has it now (a thread that exited keeps the last name it had). */
void record_thread_names_final(struct recorder *rec);
/* Capture mode: makes and attaches the capture program for the interpreter found, if not
 * done for it yet. 0, or the failure (kept in rec->capture_error). Not from the callback. */
int record_capture_start(struct recorder *rec);
/* Launch mode: looks for the interpreter (at most every DETECT_INTERVAL_NS) if not found yet. */
void record_detect(struct recorder *rec);
/* The capture spec for rec->pf's interpreter: 0, -EINVAL (none fits), -ENOENT (none found). */
int record_capture_spec(const struct recorder *rec, struct sampler_capture_spec *ret);
/* The sampler's events (ctx: the recorder): an exec drops what was known of the old image
 * (interpreter, symbols), a thread getting the capture program is given its PyThreadState. */
void record_on_event(void *ctx, const struct sampler_event *e);
/* The sampler callback; ctx is the struct recorder. A stopped thread's sample keeps only its
 * Python walk inside the stop; the rest waits for record_flush(). */
void record_on_sample(void *ctx, const struct sample *s);
/* Finishes the samples waiting since their thread's stop (the sampler's resumed hook; call it
 * once more after sampler_stop()). */
void record_flush(void *ctx);
/* Gives each native module of the profile that has none yet the build-id the symbolizer knows
 * for it (before the symbolizer goes: at the end, and at an exec). Soft: a failure leaves a
 * module without build-id. */
void record_build_ids(struct recorder *rec);
/* record_limits.c: why st's threads were left out, appended to out: "12 out of file descriptors
 * (ulimit -n 256), 3 over the locked-memory limit (RLIMIT_MEMLOCK ...)"; nothing when none
 * was. The limits as they are now: "RLIMIT_MEMLOCK 8192 KiB ('ulimit -l') beyond
 * kernel.perf_event_mlock_kb 516 KiB per CPU", "ulimit -n 256". 0 or -ENOMEM. */
int record_threads_missed(const struct sampler_stats *st, struct buf *out);
int record_memlock_limits(struct buf *out);
int record_nofile_limit(struct buf *out);
/* record_report.c: the progress line (\r-rewritten on stderr; final clears it), the summary
 * of a run written to path (after cmd_record has set the profile's metadata: the reasons threads
 * were left out are read from it), and the one line for sampler_new()'s r when it could set up no
 * thread of target (which limit stopped it: RLIMIT_MEMLOCK, RLIMIT_NOFILE; else the error). */
void record_progress(const struct recorder *rec, double elapsed, double duration, bool final);
void record_summary(const struct recorder *rec, const char *target, double elapsed,
		    const char *path);
void record_limit_error(int r, const char *target);
/* The one line for a run that took no sample (nothing is written then): why, and what to use. */
void record_no_samples(const struct recorder *rec, const char *target, double elapsed);
/* record_args.c: parses hwspy record's command line into o (zeroed by the caller): 0, 1 after
 * --help (printed), -EINVAL on a usage error (said). */
int record_parse_args(int argc, char **argv, struct record_opts *o);
/* record_child.c: a launched command, once sampling has ended. record_child_end() waits for it
 * to end, and ends it if it does not: SIGINT (not sent again where a Ctrl-C on the terminal
 * reached it already), SIGTERM after grace seconds, SIGKILL after grace more, SIGKILL at once when
 * *quits changes (hwspy got another SIGINT/SIGTERM/SIGHUP); with keep_running it is left as it
 * is. record_child_exit_code(): its exit status, 128+N if signal N killed it, 0 if it was kept
 * running. record_child_say(): one line, how it ended. */
struct record_child {
	pid_t pid;
	const char *name;
	bool ended;                     /* status is its wait status */
	int status;
	int sent;                       /* the last signal hwspy sent it (0: none) */
	bool kept;                      /* left running (--keep-running) */
};
struct record_child_opts {
	double grace;
	bool keep_running;
	bool tty_sigint;                /* hwspy got a SIGINT from the terminal */
	volatile sig_atomic_t *quits;   /* counts hwspy's SIGINT/SIGTERM/SIGHUP */
};
void record_child_end(struct record_child *c, const struct record_child_opts *o);
int record_child_exit_code(const struct record_child *c);
void record_child_say(const struct record_child *c);
/* Allocates the pending slots (stack copies of stack_size bytes). 0 or -ENOMEM. */
int record_pending_init(struct recorder *rec, size_t stack_size);
void record_pending_free(struct recorder *rec);

#endif
