/*
 * args (cli): the sampling commands' options (record's, which top and stat share) as parsed
 * (record_args.c) and checked (record_check.c: libhwspy's hwspy_record_check() said), the
 * summary and messages of a run and the limits behind a thread left out (record_report.c),
 * and the end of a launched command (record_child.c). Internal to cli/.
 */
#ifndef HWSPY_CLI_ARGS_H
#define HWSPY_CLI_ARGS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "cli/format.h"
#include "include/hwspy.h"

/* bytes of the time-ordered sample log (speedscope): with one event 20 bytes a sample, 1.6 M
 * samples (100 Hz for 10 minutes on 27 threads); past it, the merged stacks alone */
#define RECORD_LOG_BYTES (32u << 20)
/* --grace's default: a launched command's time to end after SIGINT, then after SIGTERM */
#define RECORD_GRACE_DEFAULT 5.0

struct record_args {
	pid_t pid;
	char **argv;
	struct hwspy_events *events;    /* -e's, then the checks' (NULL: none yet); freed by
	                                 * record_args_release() */
	uint64_t freq, period;
	uint32_t leaders;               /* --color-by's events sample on their own */
	bool freq_given;                /* -F was given (a count event refuses it) */
	double duration;
	double grace;                   /* --grace: between SIGINT, SIGTERM and SIGKILL */
	bool keep_running;              /* --keep-running: a launched command outlives sampling */
	bool grace_given;
	const char *output;
	bool function, threads, nonblocking, quiet, native, kernel;
	bool ptrace;                    /* exact mode by ptrace stops, even where BPF is allowed */
	bool off_cpu;                   /* --off-cpu: every switch-out, weighed by the wait */
	bool wall;                      /* --wall: cpu-clock and --off-cpu's samples, in ns */
	bool subprocesses;              /* --subprocesses: follow the processes it starts */
	bool gil;                       /* --gil: only samples whose thread held the GIL */
	unsigned stop_budget;           /* --stop-budget PCT (0: the library's default) */
	enum hwspy_format format;
	struct format_opts fmt;         /* --weight, --title, --icicle, --min-width */
	bool format_given;              /* --format, else the output's name decides */
	uint32_t stack_size;
	const char *target;             /* how messages name the target ("pid 12"), the command's */
	bool capture_held;              /* the capture's failures not said as they happen (top) */
};

/* record_args.c: parses hwspy record's command line into o (zeroed by the caller; released by
 * record_args_release()): 0, 1 after --help (printed), -EINVAL on a usage error (said).
 * record_check_args(): the target options given together, as every sampling command takes
 * them (-p or a command, --grace and --keep-running only with a command, --ptrace or
 * --nonblocking): 0, or -EINVAL (said; verb says what there is nothing to do). */
int record_parse_args(int argc, char **argv, struct record_args *o);
int record_check_args(const struct record_args *o, const char *command, const char *verb);
void record_args_release(struct record_args *o);
/* ... and for the commands that share record's options: -e's list added to o->events (0, or
 * -errno: said); an option of record's with a number (c as record's getopt string and long
 * options give it: 'p', 'F', 'c', 'd', 'G' --grace, 'B' --stop-budget, 'S' --stack-size)
 * checked and stored: 1, 0 if c is none of them, -EINVAL (said). */
int record_parse_events(struct record_args *o, const char *arg);
int record_number_option(struct record_args *o, int c, const char *arg);
/* o's events, as names (after record_check_options(): the default one too). */
size_t record_n_events(const struct record_args *o);
const char *record_event_name(const struct record_args *o, size_t i);

/* record_check.c: every option checked before anything is opened, attached or written (the
 * default event chosen, each event opened here once, a count event's period): 0, or the exit
 * status (said). The target exists (attach) or the command can be run (launch): 0, or -1
 * (said). */
int record_check_options(struct record_args *o);
int record_check_target(const struct record_args *o);

/* record_report.c: why st's threads were left out, appended to out: "12 out of file descriptors
 * (ulimit -n 256), 3 over the locked-memory limit (RLIMIT_MEMLOCK 8192 KiB ('ulimit -l') beyond
 * kernel.perf_event_mlock_kb 516 KiB per CPU)"; nothing when none was. 0. */
int record_threads_missed(const struct hwspy_record_stats *st, struct buf *out);

/* record_report.c: the words of libhwspy's lines (include/hwspy.h's (summary) part): n lines
 * said (error: as errors, else as notes), or appended to b; RECORD_LINES: room for a refusal's.
 * The progress line (\r-rewritten on stderr; final clears it), the summary
 * of a run written to path (after cmd_record has set the profile's metadata: the reasons threads
 * were left out are read from it), and the one line for a start that could set up no thread
 * of target (which limit stopped it: RLIMIT_MEMLOCK, RLIMIT_NOFILE; else the error). */
#define RECORD_LINES 16
void record_say(const struct hwspy_line *l, size_t n, bool error);
void record_render(struct buf *b, const struct hwspy_line *l, size_t n);
void record_progress(struct hwspy_recorder *rec, double duration, bool final);
void record_summary(struct hwspy_recorder *rec, const struct record_args *o, const char *path);
void record_limit_error(int r, const char *target);
/* The one line for a Python hwspy cannot read in what (r: the interpreter lookup's result:
 * -ENOTSUP, -ENOENT, -EBADMSG, other), and for a target hwspy may not profile (kernel: with
 * --kernel frames); r is returned. */
int record_python_error(int r, const struct hwspy_recorder *rec, const char *what);
void record_permission_error(const char *target, pid_t pid, bool kernel);
/* kernel.perf_event_paranoid as words for a message, into buf: "kernel.perf_event_paranoid=2"
 * (without "=N" where it cannot be read). */
const char *record_paranoid_words(char *buf, size_t size);
/* The one line for a run that took no sample (nothing is written then): why, and what to use. */
void record_no_samples(struct hwspy_recorder *rec, const struct record_args *o);

/* record_child.c: a launched command, once sampling has ended, ended as hwspy_child_end()
 * ends one (--grace, --keep-running); record_child_exit_code(): its exit status, 128+N if
 * signal N killed it, 0 if it was kept running. record_child_say(): one line, how it ended. */
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
#endif
