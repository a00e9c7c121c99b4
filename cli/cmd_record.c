/*
 * hwspy record: sample a Python process (attach with -p, or launch a command) and write a
 * profile. The options are checked, the mode chosen (and fallen back from) and every message
 * said here; the recorder (record/record.h) does the sampling and builds the profile.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/diagnose.h"
#include "cli/format.h"
#include "cli/record.h"
#include "output/profile.h"
#include "record/record.h"
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

/* The output's name (hwspy-PID.FORMAT by default, into defpath) and format. */
static void choose_output(struct record_args *o, char *defpath, size_t size)
{
	if (!o->output) {
		snprintf(defpath, size, "hwspy-%d.%s", o->pid ? o->pid : (int) getpid(),
			 !o->format_given ? "folded" : o->format == FORMAT_SPEEDSCOPE ? "speedscope.json" :
			 o->format == FORMAT_PPROF ? "pb.gz" : o->format == FORMAT_SVG ? "svg" : "folded");
		o->output = defpath;
	}
	if (!o->format_given)
		o->format = format_of_path(o->output);
}

/* The recorder for o, its profile's column checked against --weight: 0, or the exit status. */
static int new_recorder(const struct record_args *o, struct recorder **ret)
{
	struct record_opts ro = {
		.pid = o->pid, .argv = o->argv, .events = o->events, .n_events = o->n_events,
		.freq = o->freq, .period = o->period,
		.mode = o->nonblocking ? RECORD_NONBLOCKING : o->ptrace ? RECORD_STOPS : RECORD_CAPTURE,
		.stop_budget = o->stop_budget, .function = o->function, .threads = o->threads,
		.native = o->native, .stack_size = o->stack_size, .kernel = o->kernel,
		/* speedscope shows samples in time order: keep it, within a budget (see README) */
		.log_bytes = o->format == FORMAT_SPEEDSCOPE ? RECORD_LOG_BYTES : 0,
	};

	if (recorder_new(&ro, NULL, ret) < 0) {
		log_error("out of memory");
		return 1;
	}
	/* --weight names no event of -e: a usage error */
	return format_column(&o->fmt, recorder_profile(*ret)) < 0 ? 2 : 0;
}

/* Attach: the target's interpreter and mappings, before sampling. 0, or -1 (said). */
static int open_target(struct recorder *rec, const struct record_args *o, const char *target)
{
	int r = recorder_find_python(rec);

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

/* Exact without stopping anything where BPF is allowed, else by stops, else (a sampling event
 * that overflows as threads go to sleep) nonblocking. */
static void choose_mode(struct recorder *rec, struct record_args *o)
{
	bool capture = false;

	if (!o->nonblocking && !o->ptrace && o->events[0].kind == EVENT_TRACEPOINT) {
		/* the capture is a perf-event program, which the kernel attaches to software and
		 * hardware events only; a stop where a thread goes to sleep would interrupt its call */
		log_info("'%s' is a tracepoint: no BPF capture attaches to it, and a stop would "
			 "interrupt the system call it samples; reading each stack after its sample, "
			 "as --nonblocking", o->events[0].name);
		o->nonblocking = true;
	}
	if (!o->nonblocking && !o->ptrace) {
		int r = sampler_capture_probe();

		capture = r == 0;
		if (r < 0) {
			char why[320];

			diag_bpf_refused(r, why, sizeof(why));
			if (record_samples_asleep(&o->events[0])) {
				log_info("no BPF capture here (%s), and stopping a thread as it goes "
					 "to sleep would interrupt its system call: reading each stack "
					 "after its sample instead, as --nonblocking", why);
				o->nonblocking = true;
			} else {
				log_info("no BPF capture here (%s): exact mode stops each sampled "
					 "thread instead", why);
			}
		}
	}
	recorder_set_mode(rec, o->nonblocking ? RECORD_NONBLOCKING :
			       capture ? RECORD_CAPTURE : RECORD_STOPS);
}

/* A failure of the BPF capture to start since the last call: said once. */
static void capture_said(struct recorder *rec, uint64_t *said)
{
	const struct record_stats *rs = recorder_stats(rec);

	if (rs->capture_failures == *said)
		return;
	*said = rs->capture_failures;
	log_errno(rs->capture_error, "cannot start the BPF capture of Python frames; reading each "
		  "stack after its sample instead, as --nonblocking");
}

/* Opens the events, falling back where the target or the machine refuses: 0, or -1 (said). */
static int start(struct recorder *rec, struct record_args *o, const char *target,
		 uint64_t *capture_failures)
{
	int r = recorder_start(rec);

	if ((r == -EPERM || r == -EBUSY) && recorder_mode(rec) == RECORD_STOPS) {
		if (r == -EBUSY)
			log_info("cannot stop the target's threads harmlessly (it catches SIGURG and "
				 "SIGWINCH and ignores no signal); falling back to --nonblocking");
		else
			log_info("cannot stop the target's threads (ptrace refused: another tracer, "
				 "Yama ptrace_scope or no CAP_SYS_PTRACE); falling back to --nonblocking");
		o->nonblocking = true;
		recorder_set_mode(rec, RECORD_NONBLOCKING);
		r = recorder_start(rec);
	}
	if (r == -EACCES && !o->kernel && record_user_only(o)) {
		/* as perf does: where kernel-mode counting is refused, count user space only */
		log_info("not allowed to count in kernel mode (kernel.perf_event_paranoid); counting "
			 "user space only, as ':u'");
		r = recorder_start(rec);
	}
	if (r >= 0) {
		capture_said(rec, capture_failures);
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

struct slice_ctx {
	const struct record_args *o;
	const char *target;
	bool progress;
	uint64_t capture_failures;      /* said so far */
};

/* After each slice of sampling: Ctrl-Z, the reasons it ended early, the progress line. */
static int slice_done(void *ctx, struct recorder *rec, int r)
{
	struct slice_ctx *c = ctx;
	struct record_python py;

	recorder_python(rec, &py);
	if (r >= 0 && tstp_flag && !py.fatal)
		r = pause_for_tstp(rec);
	if (r == -EBUSY) {
		log_error("%s began to catch every signal hwspy could stop it with: sampling "
			  "ended early (--nonblocking never stops it)", c->target);
		return r;
	}
	if (r < 0) {
		log_errno(r, "sampling stopped early");
		return r;
	}
	capture_said(rec, &c->capture_failures);   /* the interpreter of a launched command */
	if (c->progress)
		record_progress(rec, c->o->duration, false);
	return 0;
}

/* Sampling is over: the launched command ends (record_child_end), or is left running. */
static void end_command(struct recorder *rec, const struct record_args *o,
			struct record_child *c)
{
	const struct sampler_stats *st;
	struct record_child_opts co = {
		.grace = o->grace, .keep_running = o->keep_running, .tty_sigint = tty_int_flag,
		.quits = &quit_flag,
	};

	recorder_stop(rec);
	st = recorder_stats(rec)->sampler;
	if (st->target_exited && !c->ended) {
		c->ended = true;        /* the sampler reaped it */
		c->status = st->exit_status;
	}
	record_child_end(c, &co);
}

/* The run's metadata in the profile: how long, what was lost, which threads were left out. */
static void note_run(struct recorder *rec)
{
	const struct record_stats *rs = recorder_stats(rec);
	const struct sampler_stats *st = rs->sampler;
	struct profile *prof = recorder_profile(rec);
	struct profile_meta *meta = profile_meta(prof);

	meta->duration_ns = rs->elapsed_ns;
	meta->lost = st->lost;
	meta->dropped = rs->dropped_torn + rs->dropped_unreadable;
	meta->threads = st->threads_seen;
	if (st->threads_failed) {
		struct buf why;

		buf_init(&why);
		(void) record_threads_missed(st, &why);
		(void) profile_set_threads_missed(prof, st->threads_failed, why.len ? why.data : NULL);
		buf_release(&why);
	}
}

/* Whether the run gave a profile worth writing: else says why (nothing is written then). */
static bool worth_writing(struct recorder *rec, const struct record_args *o, const char *target)
{
	struct record_python py;

	recorder_python(rec, &py);
	if (py.fatal) {
		record_python_error(py.fatal, rec, target);
		return false;
	}
	if (o->argv && !py.found && !o->native) {
		/* gone before an interpreter was ever found: it was not a Python process */
		record_python_error(py.result && py.result != -ESRCH ? py.result : -ENOENT, rec, target);
		return false;
	}
	if (!recorder_stats(rec)->sampler->samples) {
		/* an empty profile is nothing useful: the previous output stays */
		record_no_samples(rec, o, target);
		return false;
	}
	return true;
}

/* Writes the profile into out and puts it in place: 0, or -1 (said). */
static int write_profile(struct recorder *rec, struct record_args *o, struct outfile *out,
			 int argc, char **argv)
{
	struct buf cmdline;
	int r;

	/* the command line, for the formats that keep it (pprof's comments) */
	buf_init(&cmdline);
	(void) buf_puts(&cmdline, "hwspy");
	for (int i = 0; i < argc; i++)
		(void) buf_printf(&cmdline, " %s", argv[i]);
	o->fmt.command_line = cmdline.len ? cmdline.data : NULL;
	r = format_write(o->format, recorder_profile(rec), &o->fmt, out->f);
	o->fmt.command_line = NULL;
	buf_release(&cmdline);
	if (r < 0) {
		log_errno(r, "cannot write '%s'", o->output);
		return -1;
	}
	return cli_output_commit(out) < 0 ? -1 : 0;
}

/* Samples until the duration, Ctrl-C or the target's end. */
static void run(struct recorder *rec, const struct record_args *o, const char *target,
		uint64_t capture_failures)
{
	bool progress = isatty(STDERR_FILENO) && !o->quiet;
	struct slice_ctx sc = {
		.o = o, .target = target, .progress = progress, .capture_failures = capture_failures,
	};
	struct record_run run = {
		.stop = &stop_flag, .duration_ns = (uint64_t) (o->duration * 1e9),
		.slice_fn = slice_done, .ctx = &sc,
	};

	(void) recorder_run(rec, &run);
	if (progress)
		record_progress(rec, 0, true);
	/* nothing is traced any more: Ctrl-Z may stop hwspy as it does any program */
	signal(SIGTSTP, SIG_DFL);
	if (tstp_flag)
		(void) raise(SIGTSTP);
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa = (struct sigaction) { .sa_handler = on_tstp };
	sigaction(SIGTSTP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int cmd_record(int argc, char **argv)
{
	struct record_args o = { 0 };
	struct recorder *rec = NULL;
	struct record_child child = { 0 };
	struct outfile out = { 0 };
	char target[320], defpath[64];
	uint64_t capture_failures = 0;
	int r, status = 1;

	/* every option is checked before anything is opened, attached or written */
	r = record_parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? 0 : 2;
	r = record_check_options(&o);
	if (r)
		return r;
	choose_output(&o, defpath, sizeof(defpath));
	r = new_recorder(&o, &rec);
	if (r) {
		status = r;
		goto out;
	}
	/* the output's temporary file, before attaching: a bad -o is found now */
	if (record_check_target(&o) < 0 || cli_output_open(&out, o.output) < 0)
		goto out;
	if (o.pid)
		snprintf(target, sizeof(target), "pid %d", o.pid);
	else
		snprintf(target, sizeof(target), "'%s'", o.argv[0]);
	if (o.pid && open_target(rec, &o, target) < 0)
		goto out;
	choose_mode(rec, &o);
	catch_signals();
	if (start(rec, &o, target, &capture_failures) < 0)
		goto out;
	if (o.argv) {
		snprintf(target, sizeof(target), "'%s' (pid %d)", o.argv[0], recorder_pid(rec));
		child = (struct record_child) { .pid = recorder_pid(rec), .name = o.argv[0] };
	}
	(void) profile_set_target(recorder_profile(rec), target);
	profile_meta(recorder_profile(rec))->start_time_ns = (uint64_t) time(NULL) * 1000000000ULL;

	run(rec, &o, target, capture_failures);
	note_run(rec);
	if (!worth_writing(rec, &o, target) || write_profile(rec, &o, &out, argc, argv) < 0)
		goto out;
	if (recorder_stats(rec)->sampler->target_exited && o.pid)
		log_info("pid %d exited; writing what was sampled", o.pid);
	/* the profile is safe: now the command (its end goes in the summary) */
	if (o.argv)
		end_command(rec, &o, &child);
	record_summary(rec, &o, target, out.is_stdout ? "to standard output" : o.output);
	if (o.argv)
		record_child_say(&child);
	status = o.argv ? record_child_exit_code(&child) : 0;
out:
	outfile_abort(&out);    /* a no-op once committed */
	if (child.pid && !child.ended && !child.kept) {
		/* hwspy failed: the command ends too (its status is not hwspy's: that stays 1) */
		end_command(rec, &o, &child);
		record_child_say(&child);
	}
	recorder_free(rec);
	return status;
}
