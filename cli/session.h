/*
 * session (cli): what the commands that sample a target share: the signals (SIGINT, SIGTERM
 * and SIGHUP stop the run, the second one also kills a launched command at once; Ctrl-Z lets
 * the target go, stops hwspy and takes the target again on SIGCONT), the recorder's options
 * (its notes said here), the target named, opened and started, a launched command ended once
 * sampling is over. Each failure is said here, in one line; the functions return 0, or -1
 * once said. Options come as the struct record_args of cli/args.h. Internal to cli/.
 */
#ifndef HWSPY_CLI_SESSION_H
#define HWSPY_CLI_SESSION_H

#include <signal.h>
#include <stdbool.h>

#include "cli/args.h"
#include "include/hwspy.h"

/* Installs the handlers (SIGPIPE ignored too). */
void session_catch_signals(void);
/* The run's stop flag (set by the signals above). */
volatile sig_atomic_t *session_stop(void);
/* From a run's slice function: a Ctrl-Z since the last slice lets the target go, stops hwspy
 * and takes the target again; returns r, or the resume's failure. */
int session_tstp(struct hwspy_recorder *rec, int r);
/* Whether a Ctrl-Z waits for session_tstp() (top leaves its screen before hwspy stops). */
bool session_tstp_pending(void);
/* After the run: Ctrl-Z stops hwspy as any program (and does so now if one came last). */
void session_after_run(void);

/* The recorder's options for o (checked), its notes said as they come (naming o->target); the
 * caller adds its own (the log, an exec hook). */
void session_record_opts(const struct record_args *o, struct hwspy_record_opts *ret);
/* How messages name the target into buf: "pid N", "'CMD'", or "'CMD' (pid N)" once launched
 * (child >= 0). */
void session_name(const struct record_args *o, char *buf, size_t size, pid_t child);
/* The checked target named into buf (o->target), opened (attach), the signals caught, the
 * events started (a launched command's input /dev/null meanwhile with null_stdin), a launched
 * command into c, the profile named. */
int session_begin(struct hwspy_recorder *rec, struct record_args *o, char *buf, size_t size,
		  struct hwspy_child *c, bool null_stdin);
/* Why a run ended early (r < 0), said: returns r. */
int session_stopped(const struct record_args *o, int r);
/* A failure of the BPF capture to start, said (top, once its screen is closed). */
void session_capture_said(struct hwspy_recorder *rec);
/* Sampling is over: the launched command ends as --grace says, or is left running. */
void session_end_command(struct hwspy_recorder *rec, const struct record_args *o,
			 struct hwspy_child *c);
/* The same, said, for a command not yet ended nor kept (not said if kept and !say_kept). */
void session_finish(struct hwspy_recorder *rec, const struct record_args *o,
		    struct hwspy_child *c, bool say_kept);
/* The same for a command launched by something else (the counter of hwspy stat): exited, with
 * its wait status, if that reaped it. */
void session_end_child(const struct record_args *o, struct hwspy_child *c, bool exited,
		       int status);

#endif
