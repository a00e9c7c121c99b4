/*
 * hwspy record: sample a Python process (attach with -p, or launch a command) and write a
 * profile. The options are checked, the mode chosen (and fallen back from) and every message
 * said here; libhwspy's recorder (include/hwspy.h) does the sampling and builds the profile.
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
#include "cli/session.h"

/* The output's name (hwspy-PID.FORMAT by default, into defpath) and format. */
static void choose_output(struct record_args *o, char *defpath, size_t size)
{
	if (!o->output) {
		snprintf(defpath, size, "hwspy-%d.%s", o->pid ? o->pid : (int) getpid(),
			 !o->format_given ? "folded" : o->format == HWSPY_FORMAT_SPEEDSCOPE ? "speedscope.json" :
			 o->format == HWSPY_FORMAT_PPROF ? "pb.gz" : o->format == HWSPY_FORMAT_SVG ? "svg" : "folded");
		o->output = defpath;
	}
	if (!o->format_given)
		o->format = format_of_path(o->output);
}

/* The recorder for o, its profile's column checked against --weight: 0, or the exit status. */
static int new_recorder(const struct record_args *o, struct hwspy_recorder **ret)
{
	struct hwspy_record_opts ro;

	session_record_opts(o, &ro);
	/* speedscope shows samples in time order: keep it, within a budget (see README) */
	ro.log_bytes = o->format == HWSPY_FORMAT_SPEEDSCOPE ? RECORD_LOG_BYTES : 0;
	if (hwspy_recorder_new(&ro, NULL, NULL, ret) < 0) {
		log_error("out of memory");
		return 1;
	}
	/* --weight or --color-by names no event of -e: a usage error */
	return format_column(&o->fmt, hwspy_recorder_profile(*ret)) < 0 ||
	       format_color_check(&o->fmt, hwspy_recorder_profile(*ret)) < 0 ? 2 : 0;
}

struct slice_ctx {
	const struct record_args *o;
	bool progress;
};

/* After each slice of sampling: Ctrl-Z, the reasons it ended early, the progress line. */
static int slice_done(void *ctx, struct hwspy_recorder *rec, int r)
{
	struct slice_ctx *c = ctx;

	r = session_tstp(rec, r);
	if (r == -EBUSY) {
		log_error("%s began to catch every signal hwspy could stop it with: sampling "
			  "ended early (--nonblocking never stops it)", c->o->target);
		return r;
	}
	if (r < 0) {
		log_errno(r, "sampling stopped early");
		return r;
	}
	if (c->progress)
		record_progress(rec, c->o->duration, false);
	return 0;
}

/* The run's metadata in the profile: how long, what was lost, which threads were left out. */
static void note_run(struct hwspy_recorder *rec, uint64_t start_ns)
{
	struct hwspy_record_stats st;
	struct hwspy_profile *prof = hwspy_recorder_profile(rec);

	hwspy_recorder_stats(rec, &st);
	hwspy_profile_set_run(prof, start_ns, st.elapsed_ns, st.lost,
			      st.dropped_torn + st.dropped_unreadable, st.threads_seen);
	if (st.threads_failed) {
		struct buf why;

		buf_init(&why);
		(void) record_threads_missed(&st, &why);
		(void) hwspy_profile_set_threads_missed(prof, st.threads_failed,
							why.len ? why.data : NULL);
		buf_release(&why);
	}
}

/* Whether the run gave a profile worth writing: else says why (nothing is written then). */
static bool worth_writing(struct hwspy_recorder *rec, const struct record_args *o)
{
	const char *target = o->target;
	struct hwspy_record_stats st;
	struct hwspy_python py;

	hwspy_recorder_python(rec, &py);
	hwspy_recorder_stats(rec, &st);
	if (py.fatal) {
		record_python_error(py.fatal, rec, target);
		return false;
	}
	if (o->argv && !py.found && !o->native) {
		/* gone before an interpreter was ever found: it was not a Python process */
		record_python_error(py.result && py.result != -ESRCH ? py.result : -ENOENT, rec, target);
		return false;
	}
	if (!st.samples && !st.off_cpu_initial) {
		/* an empty profile is nothing useful: the previous output stays */
		record_no_samples(rec, o);
		return false;
	}
	return true;
}

/* Writes the profile into out and puts it in place: 0, or -1 (said). */
static int write_profile(struct hwspy_recorder *rec, struct record_args *o, struct outfile *out,
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
	r = format_write(o->format, hwspy_recorder_profile(rec), &o->fmt, out->f);
	o->fmt.command_line = NULL;
	buf_release(&cmdline);
	if (r < 0) {
		log_errno(r, "cannot write '%s'", o->output);
		return -1;
	}
	return cli_output_commit(out) < 0 ? -1 : 0;
}

/* Samples until the duration, Ctrl-C or the target's end. */
static void run(struct hwspy_recorder *rec, const struct record_args *o)
{
	bool progress = isatty(STDERR_FILENO) && !o->quiet;
	struct slice_ctx sc = { .o = o, .progress = progress };
	struct hwspy_run run = {
		.stop = session_stop(), .duration_ns = (uint64_t) (o->duration * 1e9),
		.slice_fn = slice_done, .ctx = &sc,
	};

	(void) hwspy_recorder_run(rec, &run);
	if (progress)
		record_progress(rec, 0, true);
	session_after_run();
}

int cmd_record(int argc, char **argv)
{
	struct record_args o = { 0 };
	struct hwspy_recorder *rec = NULL;
	struct record_child child = { 0 };
	struct outfile out = { 0 };
	struct hwspy_record_stats st;
	char target[320], defpath[64];
	uint64_t start_ns;
	int r, status = 1;

	/* every option is checked before anything is opened, attached or written */
	o.target = target;
	r = record_parse_args(argc, argv, &o);
	status = r > 0 ? 0 : r < 0 ? 2 : record_check_options(&o);
	if (r || status)
		goto out;
	status = 1;
	choose_output(&o, defpath, sizeof(defpath));
	if (format_color_output(&o.fmt, o.format, o.output) < 0) {
		status = 2;
		goto out;
	}
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
	if (o.pid && session_open_target(rec, &o) < 0)
		goto out;
	session_catch_signals();
	if (session_start(rec, &o) < 0)
		goto out;
	if (o.argv) {
		snprintf(target, sizeof(target), "'%s' (pid %d)", o.argv[0], hwspy_recorder_pid(rec));
		child = (struct record_child) { .pid = hwspy_recorder_pid(rec), .name = o.argv[0] };
	}
	(void) hwspy_profile_set_target(hwspy_recorder_profile(rec), target);
	start_ns = (uint64_t) time(NULL) * 1000000000ULL;

	run(rec, &o);
	note_run(rec, start_ns);
	if (!worth_writing(rec, &o) || write_profile(rec, &o, &out, argc, argv) < 0)
		goto out;
	hwspy_recorder_stats(rec, &st);
	if (st.target_exited && o.pid)
		log_info("pid %d exited; writing what was sampled", o.pid);
	/* the profile is safe: now the command (its end goes in the summary) */
	if (o.argv)
		session_end_command(rec, &o, &child);
	record_summary(rec, &o, out.is_stdout ? "to standard output" : o.output);
	if (o.argv)
		record_child_say(&child);
	status = o.argv ? record_child_exit_code(&child) : 0;
out:
	outfile_abort(&out);    /* a no-op once committed */
	if (child.pid && !child.ended && !child.kept) {
		/* hwspy failed: the command ends too (its status is not hwspy's: that stays 1) */
		session_end_command(rec, &o, &child);
		record_child_say(&child);
	}
	hwspy_recorder_free(rec);
	record_args_release(&o);
	return status;
}
