/* args (cli): the sampling commands' options (record's; top and stat share them), parsed
 * (record_args.c) and checked (record_check.c), the words of a run (record_report.c) and the
 * end of a launched command (record_child.c). Internal to cli/. */
#ifndef HWSPY_CLI_ARGS_H
#define HWSPY_CLI_ARGS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "cli/format.h"
#include "include/hwspy.h"

/* speedscope's time-ordered sample log: 1.6 M samples of one event; past it, merged stacks */
#define RECORD_LOG_BYTES (32u << 20)
#define RECORD_GRACE_DEFAULT 5.0        /* --grace's default, in seconds */

struct record_args {
	pid_t pid;
	char **argv;
	struct hwspy_events *events;    /* -e's, then the checks' (NULL: none yet) */
	uint64_t freq, period;
	uint32_t leaders;               /* --color-by's events sample on their own */
	bool freq_given, grace_given, format_given;
	double duration, grace;
	const char *output;
	bool keep_running, function, threads, nonblocking, quiet, native, kernel, ptrace, off_cpu,
	     wall, subprocesses, gil;
	unsigned stop_budget;           /* 0: the library's default */
	enum hwspy_format format;
	struct hwspy_write_opts fmt;
	uint32_t stack_size;
	const char *target;             /* how messages name the target ("pid 12"), the command's */
	bool capture_held;              /* the capture's failures not said as they happen (top) */
};

/* record_args.c: hwspy record's command line into o (zeroed by the caller): 0, 1 after --help,
 * -EINVAL (said). record_check_args(): the options that exclude each other: 0, or -EINVAL (said;
 * verb: what there is nothing to do). */
int record_parse_args(int argc, char **argv, struct record_args *o);
int record_check_args(const struct record_args *o, const char *command, const char *verb);
void record_args_release(struct record_args *o);
/* -e's list added to o->events (0, or -errno: said); one of the options record, top and stat
 * share (c as cli_getopt() gives it, --help aside) stored: 1, 0 if c is none, -EINVAL (said). */
int record_parse_events(struct record_args *o, const char *arg);
int record_option(struct record_args *o, int c, const char *arg);
size_t record_n_events(const struct record_args *o);
const char *record_event_name(const struct record_args *o, size_t i);

/* record_check.c: the options checked before anything is opened (the default event chosen):
 * 0, or the exit status (said). The target can be attached or launched: 0, or -1 (said). */
int record_check_options(struct record_args *o);
int record_check_target(const struct record_args *o);

/* record_report.c: the words of libhwspy's lines (hwspy.h's (summary) part): why st's threads
 * were left out, appended to out ("12 out of file descriptors (ulimit -n 256)"; 0); n lines
 * said (as errors or notes; RECORD_LINES: room for a refusal's); the progress line (final
 * clears it); the summary of a run written to path; the line for a start that set up no
 * thread of target. */
#define RECORD_LINES 16
int record_threads_missed(const struct hwspy_record_stats *st, struct buf *out);
void record_say(const struct hwspy_line *l, size_t n, bool error);
void record_progress(struct hwspy_recorder *rec, double duration, bool final);
void record_summary(struct hwspy_recorder *rec, const struct record_args *o, const char *path);
void record_limit_error(int r, const char *target);
/* The one line for a Python hwspy cannot read in what (r, the lookup's, is returned), for a
 * target hwspy may not profile, kernel.perf_event_paranoid as words ("...=2") into buf, and for
 * a run that took no sample. */
int record_python_error(int r, const struct hwspy_recorder *rec, const char *what);
void record_permission_error(const char *target, pid_t pid, bool kernel);
#define record_paranoid_words hwspy_paranoid_words
void record_no_samples(struct hwspy_recorder *rec, const struct record_args *o);

/* record_child.c: a launched command's notes as hwspy_child_end() ends it (note_fn, ctx: the
 * child), and one line on how it ended. */
void record_child_note(void *ctx, enum hwspy_child_note n, double seconds);
void record_child_say(const struct hwspy_child *c);
#endif
