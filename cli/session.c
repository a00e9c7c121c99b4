/*
 * session: what the commands that sample a target share (session.h): the signals, the
 * recorder's notes said, the target opened, the events started, a launched command's end.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/session.h"

/* quit_flag counts SIGINT/SIGTERM/SIGHUP (the second one kills a launched command at once);
 * tty_int_flag: a SIGINT came from the terminal, so the foreground command got it too */
static volatile sig_atomic_t stop_flag, quit_flag, tstp_flag, tty_int_flag;

/* Ctrl-Z: the run returns, the target is released, then hwspy stops (session_tstp) */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void) uc;
	if (sig == SIGTSTP)
		tstp_flag = 1;
	else
		quit_flag = quit_flag + 1;
	if (sig == SIGINT && si && si->si_code == SI_KERNEL)
		tty_int_flag = 1;
	stop_flag = 1;
}

/* Counting user space only, said once: why, and the events that count nothing so. */
static void user_only_said(const struct record_args *o)
{
	char none[160] = "", words[64];
	size_t len = 0;

	for (size_t i = 1; i < record_n_events(o); i++) {
		int n;

		if (!hwspy_events_kernel_only(o->events, i))
			continue;
		n = snprintf(none + len, sizeof(none) - len, "%s'%s'", len ? ", " : " (so nothing "
			     "is counted of ", record_event_name(o, i));
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

/* The recorder's notes said: the words around the note's detail, or the target ("" before). */
static const char *const note_words[][2] = {
	[HWSPY_NOTE_NOT_PYTHON] = { "", " is not a Python process: recording native frames only" },
	[HWSPY_NOTE_SHIM_EXEC] = { "", " was a shell (a pyenv shim?) that became Python: recording it" },
	[HWSPY_NOTE_TRACEPOINT] = { "'", "' is a tracepoint: no BPF capture attaches to it, and a "
		"stop would interrupt the system call it samples; reading each stack after its "
		"sample, as --nonblocking" },
	[HWSPY_NOTE_NO_CAPTURE_ASLEEP] = { "no BPF capture here (", "), and stopping a thread as it "
		"goes to sleep would interrupt its system call: reading each stack after its sample "
		"instead, as --nonblocking" },
	[HWSPY_NOTE_NO_CAPTURE] = { "no BPF capture here (", "): exact mode stops each sampled "
		"thread instead" },
	[HWSPY_NOTE_STOPS_BUSY] = { "cannot stop the target's threads harmlessly (it catches SIGURG "
		"and SIGWINCH and ignores no signal); falling back to --nonblocking", "" },
	[HWSPY_NOTE_STOPS_REFUSED] = { "cannot stop the target's threads (ptrace refused: another "
		"tracer, Yama ptrace_scope or no CAP_SYS_PTRACE); falling back to --nonblocking", "" },
};

static void say_note(void *ctx, enum hwspy_note n, int err, const char *detail)
{
	const struct record_args *o = ctx;

	if (n == HWSPY_NOTE_USER_ONLY)
		user_only_said(o);
	else if (n == HWSPY_NOTE_CAPTURE_FAILED && !o->capture_held)
		log_errno(err, "cannot start the BPF capture of Python frames; reading each stack "
			  "after its sample instead, as --nonblocking");
	else if (n < sizeof(note_words) / sizeof(note_words[0]) && note_words[n][0])
		log_info("%s%s%s", note_words[n][0], note_words[n][0][0] ? detail : o->target,
			 note_words[n][1]);
}

void session_record_opts(const struct record_args *o, struct hwspy_record_opts *ret)
{
	*ret = (struct hwspy_record_opts) {
		.pid = o->pid, .argv = o->argv, .events = o->events, .freq = o->freq,
		.period = o->period, .leaders = o->leaders,
		.mode = o->nonblocking ? HWSPY_RECORD_NONBLOCKING : o->ptrace ? HWSPY_RECORD_STOPS :
			HWSPY_RECORD_AUTO,
		.stop_budget = o->stop_budget, .function = o->function, .threads = o->threads,
		.native = o->native, .stack_size = o->stack_size, .kernel = o->kernel,
		.off_cpu = o->off_cpu, .wall = o->wall, .subprocesses = o->subprocesses,
		.gil_only = o->gil, .sigchld = true, .raise_nofile = true,
		.note_fn = say_note, .note_ctx = (void *) o,
	};
}

static int open_target(struct hwspy_recorder *rec, const struct record_args *o)
{
	struct hwspy_python py;
	int r = hwspy_recorder_open(rec);

	if (r >= 0)
		return 0;
	hwspy_recorder_python(rec, &py);
	if (py.result >= 0 || (py.result == -ENOENT && o->native))
		log_errno(r, "cannot read the mappings of %s", o->target);
	else if (r == -EPERM || r == -EACCES)
		record_permission_error(o->target, o->pid, false);
	else if (r == -ESRCH)
		log_error("no process with pid %d", o->pid);
	else
		record_python_error(r, rec, o->target);
	return -1;
}

static int start(struct hwspy_recorder *rec, const struct record_args *o)
{
	int r = hwspy_recorder_start(rec);

	if (r >= 0)
		return 0;
	if (r == -ESRCH)
		log_error("no process with pid %d (it exited)", o->pid);
	else if (r == -EACCES || r == -EPERM)
		record_permission_error(o->target, o->pid, o->kernel);
	else if (r == -ENOENT)
		log_error("event '%s' cannot be opened on this machine", record_event_name(o, 0));
	else
		record_limit_error(r, o->target);
	return -1;
}

void session_name(const struct record_args *o, char *buf, size_t size, pid_t child)
{
	if (o->pid)
		snprintf(buf, size, "pid %d", o->pid);
	else if (child >= 0)
		snprintf(buf, size, "'%s' (pid %d)", o->argv[0], child);
	else
		snprintf(buf, size, "'%s'", o->argv[0]);
}

int session_begin(struct hwspy_recorder *rec, struct record_args *o, char *buf, size_t size,
		  struct hwspy_child *c, bool null_stdin)
{
	int keys = -1, r;

	session_name(o, buf, size, -1);
	if (o->pid && open_target(rec, o) < 0)
		return -1;
	session_catch_signals();        /* before top's screen: ncurses then leaves them to us */
	if (o->argv && null_stdin && isatty(STDIN_FILENO)) {
		/* top's keys come from the terminal: a command that reads its stdin would take them */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		keys = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		r = null < 0 || keys < 0 || dup2(null, STDIN_FILENO) < 0 ? -errno : 0;
		if (null >= 0)
			(void) close(null);
		if (r < 0 && keys >= 0)
			(void) close(keys);
		if (r < 0)
			return log_errno(r, "cannot give '%s' /dev/null as its input", o->argv[0]);
	}
	r = start(rec, o);      /* forks the command */
	if (keys >= 0) {
		(void) dup2(keys, STDIN_FILENO);
		(void) close(keys);
	}
	if (r < 0)
		return -1;
	if (o->argv) {
		session_name(o, buf, size, hwspy_recorder_pid(rec));
		*c = (struct hwspy_child) { .pid = hwspy_recorder_pid(rec), .name = o->argv[0] };
	}
	(void) hwspy_profile_set_target(hwspy_recorder_profile(rec), buf);
	return 0;
}

int session_stopped(const struct record_args *o, int r)
{
	if (r == -EBUSY)
		log_error("%s began to catch every signal hwspy could stop it with: sampling "
			  "ended early (--nonblocking never stops it)", o->target);
	else if (r < 0)
		log_errno(r, "sampling stopped early");
	return r;
}

void session_capture_said(struct hwspy_recorder *rec)
{
	struct hwspy_record_stats st;

	hwspy_recorder_stats(rec, &st);
	if (st.capture_failures)
		log_errno(st.capture_error, "cannot start the BPF capture of Python frames; reading "
			  "each stack after its sample instead, as --nonblocking");
}

void session_end_child(const struct record_args *o, struct hwspy_child *c, bool exited,
		       int status)
{
	struct hwspy_child_end_opts co = {
		.grace = o->grace, .keep_running = o->keep_running, .tty_sigint = tty_int_flag,
		.quits = &quit_flag, .interrupted = quit_flag != 0, .note_fn = record_child_note,
		.note_ctx = c,
	};

	if (exited && !c->ended) {
		c->ended = true;        /* the sampler (or counter) reaped it */
		c->status = status;
	}
	hwspy_child_end(c, &co);
}

void session_end_command(struct hwspy_recorder *rec, const struct record_args *o,
			 struct hwspy_child *c)
{
	struct hwspy_record_stats st;

	hwspy_recorder_stop(rec);
	hwspy_recorder_stats(rec, &st);
	session_end_child(o, c, st.target_exited, st.exit_status);
}

void session_finish(struct hwspy_recorder *rec, const struct record_args *o,
		    struct hwspy_child *c, bool say_kept)
{
	if (!c->pid || c->ended || c->kept)
		return;
	session_end_command(rec, o, c);
	if (say_kept || !c->kept)
		record_child_say(c);
}

void session_catch_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGTSTP };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

volatile sig_atomic_t *session_stop(void)
{
	return &stop_flag;
}

/* A stopped tracer would freeze every sampled thread of the target: let it go first, stop,
 * and take it again on SIGCONT. */
int session_tstp(struct hwspy_recorder *rec, int r)
{
	struct hwspy_python py;

	hwspy_recorder_python(rec, &py);
	if (r < 0 || !tstp_flag || py.fatal)
		return r;
	tstp_flag = 0;
	stop_flag = quit_flag != 0;
	(void) hwspy_recorder_pause(rec);
	(void) raise(SIGSTOP);
	return hwspy_recorder_resume(rec);
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
