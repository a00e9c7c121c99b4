/*
 * session: what the commands that sample a target share (session.h): the signals, the target
 * opened, the exact mode and its fallbacks, the events started, a launched command's end.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/session.h"
#include "include/hwspy.h"
#include "lib/lib.h"
#include "sampler/sampler.h"

/* quit_flag counts SIGINT/SIGTERM/SIGHUP (the second one kills a launched command at once);
 * tty_int_flag: a SIGINT came from the terminal, so the foreground command got it too */
static volatile sig_atomic_t stop_flag, quit_flag, tstp_flag, tty_int_flag;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void) uc;
	if (sig == SIGINT && si && si->si_code == SI_KERNEL)
		tty_int_flag = 1;
	quit_flag = quit_flag + 1;
	stop_flag = 1;
}

/* Ctrl-Z: sampler_run() returns, the target is released, then hwspy stops (pause_for_tstp) */
static void on_tstp(int sig)
{
	(void) sig;
	tstp_flag = 1;
	stop_flag = 1;
}

/* A stopped tracer would freeze every sampled thread of the target: let it go first, stop,
 * and take it again on SIGCONT. */
static int pause_for_tstp(struct recorder *rec)
{
	tstp_flag = 0;
	stop_flag = 0;
	if (quit_flag)
		stop_flag = 1;
	(void) recorder_pause(rec);
	(void) raise(SIGSTOP);
	return recorder_resume(rec);
}

/* Attach: the target's interpreter and mappings, before sampling. 0, or -1 (said). */
void session_record_opts(const struct record_args *o, struct record_opts *ret)
{
	*ret = (struct record_opts) {
		.pid = o->pid, .argv = o->argv, .events = o->events, .n_events = o->n_events,
		.freq = o->freq, .period = o->period, .leaders = o->leaders,
		.mode = o->nonblocking ? RECORD_NONBLOCKING : o->ptrace ? RECORD_STOPS : RECORD_CAPTURE,
		.stop_budget = o->stop_budget, .function = o->function, .threads = o->threads,
		.native = o->native, .stack_size = o->stack_size, .kernel = o->kernel,
		.off_cpu = o->off_cpu, .wall = o->wall, .subprocesses = o->subprocesses,
		.gil_only = o->gil, .sigchld = true, .raise_nofile = true,
	};
}

int session_open_target(struct recorder *rec, const struct record_args *o, const char *target)
{
	return session_target_found(rec, o, target, recorder_find_python(rec));
}

int session_target_found(struct recorder *rec, const struct record_args *o, const char *target,
			 int r)
{
	if (r == -EPERM || r == -EACCES) {
		record_permission_error(target, o->pid, false);
		return -1;
	}
	if (r == -ESRCH) {
		log_error("no process with pid %d", o->pid);
		return -1;
	}
	if (r == -ENOENT && o->native) {
		log_info("%s is not a Python process: recording native frames only", target);
	} else if (r < 0) {
		record_python_error(r, rec, target);
		return -1;
	}
	/* nothing stops the target while the first samples are unwound slowly: load the modules'
	 * symbols and CFI before sampling starts, not while the rings fill */
	r = recorder_load_symbols(rec, !o->nonblocking && !o->ptrace);
	if (r < 0) {
		log_errno(r, "cannot read the mappings of %s", target);
		return -1;
	}
	return 0;
}

/* The policy's notes (record/'s recorder_choose_mode(), recorder_start_fallback()), said */
struct said {
	struct record_args *o;
};

static void user_only_said(const struct record_args *o);

static void say_note(void *ctx, enum record_note n, int err, const char *name)
{
	struct said *c = ctx;
	char why[320];

	switch (n) {
	case RECORD_NOTE_TRACEPOINT:
		log_info("'%s' is a tracepoint: no BPF capture attaches to it, and a stop would "
			 "interrupt the system call it samples; reading each stack after its sample, "
			 "as --nonblocking", name);
		break;
	case RECORD_NOTE_NO_CAPTURE_ASLEEP:
		hwspy_bpf_refused_words(err, why, sizeof(why));
		log_info("no BPF capture here (%s), and stopping a thread as it goes "
			 "to sleep would interrupt its system call: reading each stack "
			 "after its sample instead, as --nonblocking", why);
		break;
	case RECORD_NOTE_NO_CAPTURE:
		hwspy_bpf_refused_words(err, why, sizeof(why));
		log_info("no BPF capture here (%s): exact mode stops each sampled "
			 "thread instead", why);
		break;
	case RECORD_NOTE_STOPS_BUSY:
		log_info("cannot stop the target's threads harmlessly (it catches SIGURG and "
			 "SIGWINCH and ignores no signal); falling back to --nonblocking");
		break;
	case RECORD_NOTE_STOPS_REFUSED:
		log_info("cannot stop the target's threads (ptrace refused: another tracer, "
			 "Yama ptrace_scope or no CAP_SYS_PTRACE); falling back to --nonblocking");
		break;
	case RECORD_NOTE_USER_ONLY:
		user_only_said(c->o);
		break;
	}
}

static struct record_fallback policy(struct record_args *o, struct said *c)
{
	*c = (struct said) { .o = o };
	return (struct record_fallback) {
		.auto_mode = !o->nonblocking && !o->ptrace,
		.mode = o->nonblocking ? RECORD_NONBLOCKING : RECORD_STOPS,
		.note_fn = say_note, .note_ctx = c,
	};
}

/* Exact without stopping anything where BPF is allowed, else by stops, else (a sampling event
 * that overflows as threads go to sleep) nonblocking: record/'s policy, its notes said. */
void session_choose_mode(struct recorder *rec, struct record_args *o)
{
	struct said c;
	struct record_fallback f = policy(o, &c);

	if (recorder_choose_mode(rec, &f) == RECORD_NONBLOCKING)
		o->nonblocking = true;
}

/* A failure of the BPF capture to start since the last call: said once. */
void session_capture_said(struct recorder *rec, uint64_t *said)
{
	const struct record_stats *rs = recorder_stats(rec);

	if (rs->capture_failures == *said)
		return;
	*said = rs->capture_failures;
	log_errno(rs->capture_error, "cannot start the BPF capture of Python frames; reading each "
		  "stack after its sample instead, as --nonblocking");
}

/* Counting user space only, said once: why, and the events that count nothing so. */
static void user_only_said(const struct record_args *o)
{
	char none[160] = "", words[64];
	size_t len = 0;

	for (size_t i = 1; i < o->n_events; i++) {
		int n;

		if (!record_kernel_only(&o->events[i]))
			continue;
		n = snprintf(none + len, sizeof(none) - len, "%s'%s'", len ? ", " : " (so nothing "
			     "is counted of ", o->events[i].name);
		if (n < 0 || (size_t) n >= sizeof(none) - len) {
			none[len] = '\0';
			break;
		}
		len += (size_t) n;
	}
	log_info("not allowed to count in kernel mode (%s: root or CAP_PERFMON only); counting "
		 "user space only, as ':u'%s%s", record_paranoid_words(words, sizeof(words)), none,
		 len ? ": switches and migrations happen in the kernel)" : "");
}

/* Opens the events, falling back where the target or the machine refuses: 0, or -1 (said).
 * record_check_options() said where kernel mode is refused to hwspy itself, so a refusal here
 * is the target's. */
int session_start(struct recorder *rec, struct record_args *o, const char *target,
		 uint64_t *capture_failures)
{
	struct said c;
	struct record_fallback f = policy(o, &c);
	int r;

	f.auto_mode = false;
	f.mode = recorder_mode(rec);
	r = recorder_start_fallback(rec, &f, o->events);
	if (recorder_mode(rec) == RECORD_NONBLOCKING)
		o->nonblocking = true;
	if (r >= 0) {
		session_capture_said(rec, capture_failures);
		return 0;
	}
	if (r == -ESRCH)
		log_error("no process with pid %d (it exited)", o->pid);
	else if (r == -EACCES || r == -EPERM)
		record_permission_error(target, o->pid, o->kernel);
	else if (r == -ENOENT)
		log_error("event '%s' cannot be opened on this machine", o->events[0].name);
	else
		record_limit_error(r, target);
	return -1;
}

/* Sampling is over: the launched command ends (record_child_end), or is left running. */
void session_end_child(const struct record_args *o, struct record_child *c, bool exited,
		       int status)
{
	struct record_child_opts co = {
		.grace = o->grace, .keep_running = o->keep_running, .tty_sigint = tty_int_flag,
		.quits = &quit_flag,
	};

	if (exited && !c->ended) {
		c->ended = true;        /* the sampler (or counter) reaped it */
		c->status = status;
	}
	record_child_end(c, &co);
}

void session_end_command(struct recorder *rec, const struct record_args *o,
			struct record_child *c)
{
	const struct sampler_stats *st;

	recorder_stop(rec);
	st = recorder_stats(rec)->sampler;
	session_end_child(o, c, st->target_exited, st->exit_status);
}

struct hwspy_profile *session_profile(struct recorder *rec)
{
	static struct hwspy_profile view;

	view = (struct hwspy_profile) { .p = recorder_profile(rec), .owned = false };
	return &view;
}

void session_catch_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa = (struct sigaction) { .sa_handler = on_tstp };
	sigaction(SIGTSTP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

volatile sig_atomic_t *session_stop(void)
{
	return &stop_flag;
}

int session_tstp(struct recorder *rec, int r)
{
	struct record_python py;

	recorder_python(rec, &py);
	return r >= 0 && tstp_flag && !py.fatal ? pause_for_tstp(rec) : r;
}

bool session_tstp_pending(void)
{
	return tstp_flag != 0;
}

void session_after_run(void)
{
	/* nothing is traced any more: Ctrl-Z may stop hwspy as it does any program */
	signal(SIGTSTP, SIG_DFL);
	if (tstp_flag)
		(void) raise(SIGTSTP);
}

int session_tstp_hwspy(struct hwspy_recorder *rec, int r)
{
	struct hwspy_python py;

	hwspy_recorder_python(rec, &py);
	if (r < 0 || !tstp_flag || py.fatal)
		return r;
	tstp_flag = 0;
	stop_flag = quit_flag ? 1 : 0;
	(void) hwspy_recorder_pause(rec);
	(void) raise(SIGSTOP);
	return hwspy_recorder_resume(rec);
}

void session_note(void *ctx, enum hwspy_note n, int err, const char *detail)
{
	const bool *started = ctx;
	char words[64];

	switch (n) {
	case HWSPY_NOTE_NO_CAPTURE_ASLEEP:
		log_info("no BPF capture here (%s), and stopping a thread as it goes to sleep would "
			 "interrupt its system call: reading each stack after its sample instead, as "
			 "--nonblocking", detail);
		break;
	case HWSPY_NOTE_NO_CAPTURE:
		log_info("no BPF capture here (%s): exact mode stops each sampled thread instead",
			 detail);
		break;
	case HWSPY_NOTE_STOPS_BUSY:
		log_info("cannot stop the target's threads harmlessly (it catches SIGURG and "
			 "SIGWINCH and ignores no signal); falling back to --nonblocking");
		break;
	case HWSPY_NOTE_STOPS_REFUSED:
		log_info("cannot stop the target's threads (ptrace refused: another tracer, "
			 "Yama ptrace_scope or no CAP_SYS_PTRACE); falling back to --nonblocking");
		break;
	case HWSPY_NOTE_USER_ONLY:
		log_info("not allowed to count in kernel mode (%s: root or CAP_PERFMON only); "
			 "counting user space only, as ':u'%s%s%s",
			 record_paranoid_words(words, sizeof(words)),
			 *detail ? " (so nothing is counted of " : "", detail,
			 *detail ? ": switches and migrations happen in the kernel)" : "");
		break;
	case HWSPY_NOTE_CAPTURE_FAILED:
		if (!started || !*started)
			log_errno(err, "cannot start the BPF capture of Python frames; reading each "
				  "stack after its sample instead, as --nonblocking");
		break;
	default:
		break;
	}
}
