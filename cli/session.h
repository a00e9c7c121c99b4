/*
 * session (cli): what the commands that sample a target share (record, and the commands built
 * on the same recorder): the signals (SIGINT, SIGTERM and SIGHUP stop the run, the second one
 * also kills a launched command at once; Ctrl-Z lets the target go, stops hwspy and takes the
 * target again on SIGCONT), an attached target opened, the exact mode chosen and fallen back
 * from, the events started, a launched command ended once sampling is over. Each failure is
 * said here, in one line; the functions return 0, or -1 once said. Options come as the
 * struct record_args of cli/record.h, the sampling options of every such command. Internal
 * to cli/.
 */
#ifndef HWSPY_CLI_SESSION_H
#define HWSPY_CLI_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/record.h"
#include "record/record.h"

/* The recorder's profile as libhwspy's handle (for format.h's writers): valid until the
 * recorder is freed; one recorder at a time. Transitional, until the commands record through
 * hwspy_recorder. */
struct hwspy_profile *session_profile(struct recorder *rec);

/* Installs the handlers (SIGPIPE ignored too). */
void session_catch_signals(void);
/* The run's stop flag (set by the signals above). */
volatile sig_atomic_t *session_stop(void);
/* From a run's slice function: a Ctrl-Z since the last slice lets the target go, stops hwspy
 * and takes the target again; returns r, or the resume's failure. */
int session_tstp(struct recorder *rec, int r);
/* Whether a Ctrl-Z waits for session_tstp() (top leaves its screen before hwspy stops). */
bool session_tstp_pending(void);
/* After the run: Ctrl-Z stops hwspy as any program (and does so now if one came last). */
void session_after_run(void);

/* The recorder's options for o (the mode as asked: session_choose_mode() picks the one it
 * runs in); the caller adds what is its own (a sink, the sample log, an exec hook). */
void session_record_opts(const struct record_args *o, struct record_opts *ret);
/* Attach: the target's interpreter and mappings, before sampling (-ENOENT is no error with
 * --native: native frames only). */
int session_open_target(struct recorder *rec, const struct record_args *o, const char *target);
/* The same after the caller's own recorder_find_python(), whose result is r (hwspy stat, for
 * which a target without Python is no error). */
int session_target_found(struct recorder *rec, const struct record_args *o, const char *target,
			 int r);
/* Exact by the BPF capture where allowed, else by stops, else (a sampling event that overflows
 * as threads go to sleep, a tracepoint) nonblocking; said where it is not the capture. */
void session_choose_mode(struct recorder *rec, struct record_args *o);
/* Opens the events, falling back where the target or the machine refuses (stops refused:
 * nonblocking; kernel mode refused: user space only). *capture_failures: the capture's
 * failures said so far (session_capture_said()). */
int session_start(struct recorder *rec, struct record_args *o, const char *target,
		  uint64_t *capture_failures);
/* A failure of the BPF capture to start since *said: said once. */
void session_capture_said(struct recorder *rec, uint64_t *said);
/* Sampling is over: the launched command ends as --grace says, or is left running. */
void session_end_command(struct recorder *rec, const struct record_args *o,
			 struct record_child *c);
/* The same for a command launched by something else (the counter of hwspy stat): exited, with
 * its wait status, if that reaped it. */
void session_end_child(const struct record_args *o, struct record_child *c, bool exited,
		       int status);

#include "include/hwspy.h"

/* session_tstp() for a recording behind include/hwspy.h (hwspy stat's sampling run, its
 * counting's: hwspy_count_recorder()). statpath: the same as recpath's session_tstp() over
 * struct hwspy_recorder, which replaces it once both are merged. */
int session_tstp_hwspy(struct hwspy_recorder *rec, int r);
/* A recording's notes (struct hwspy_record_opts.note_fn, hwspy_count_opts.note_fn), said as
 * record says its own; ctx: NULL, or a bool that, once true, keeps a failure of the BPF
 * capture unsaid (hwspy stat says it only as sampling starts). statpath: the words of
 * session.c's say_note(), over include/hwspy.h's notes, for hwspy stat's sampling run; one
 * of the two goes once recpath's session.c (say_note() over struct hwspy_note) is merged. */
void session_note(void *ctx, enum hwspy_note n, int err, const char *detail);

#endif
