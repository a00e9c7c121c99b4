/*
 * hwspy record: sample a Python process (attach with -p, or launch a command) and write a
 * profile. The options are checked and every message said here; libhwspy's recorder
 * (include/hwspy.h) chooses the mode (and falls back), samples and builds the profile.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/session.h"

/* The recorder for o, its profile's column checked against --weight: 0, or the exit status. */
static int new_recorder(const struct record_args *o, struct hwspy_recorder **ret)
{
	struct hwspy_record_opts ro;

	session_record_opts(o, &ro);
	/* speedscope shows samples in time order: keep it, within a budget (see README) */
	ro.log_bytes = o->format == HWSPY_FORMAT_SPEEDSCOPE ? RECORD_LOG_BYTES : 0;
	if (hwspy_recorder_new(&ro, NULL, NULL, ret) < 0)
		return log_error("out of memory"), 1;
	/* --weight or --color-by names no event of -e: a usage error */
	return format_column(&o->fmt, hwspy_recorder_profile(*ret)) < 0 ||
	       format_color_check(&o->fmt, hwspy_recorder_profile(*ret)) < 0 ? 2 : 0;
}

/* Whether the run shows a progress line (on a terminal, not -q). */
static bool shows_progress(const struct record_args *o)
{
	return isatty(STDERR_FILENO) && !o->quiet;
}

/* After each slice of sampling: Ctrl-Z, the reasons it ended early, the progress line. */
static int slice_done(void *ctx, struct hwspy_recorder *rec, int r)
{
	const struct record_args *o = ctx;

	r = session_stopped(o, session_tstp(rec, r));
	if (r >= 0 && shows_progress(o))
		record_progress(rec, o->duration, false);
	return r < 0 ? r : 0;
}

/* Samples until the duration, Ctrl-C or the target's end; the run noted in the profile. */
static void run(struct hwspy_recorder *rec, const struct record_args *o)
{
	struct hwspy_run run = {
		.stop = session_stop(), .duration_ns = (uint64_t) (o->duration * 1e9),
		.slice_fn = slice_done, .ctx = (void *) o,
		/* no progress line to refresh: fewer wakeups of hwspy's own */
		.slice_ns = shows_progress(o) ? 0 : 1000000000ULL,
	};
	struct hwspy_record_stats st;
	struct buf why;

	(void) hwspy_recorder_run(rec, &run);
	if (shows_progress(o))
		record_progress(rec, 0, true);
	session_after_run();
	hwspy_recorder_stats(rec, &st);
	buf_init(&why);
	(void) record_threads_missed(&st, &why);
	hwspy_recorder_note_run(rec, why.len ? why.data : NULL);
	buf_release(&why);
}

/* Writes the profile into out (with the command line, for pprof's comments) and puts it in
 * place, if the run gave one worth writing (else says why): 0, or -1 (said). */
static int write_profile(struct hwspy_recorder *rec, struct record_args *o, struct outfile *out,
			 int argc, char **argv)
{
	int r = hwspy_recorder_verdict(rec);
	struct buf cmdline;

	if (r)
		return r > 0 ? (record_no_samples(rec, o), -1) : record_python_error(r, rec, o->target);
	buf_init(&cmdline);
	(void) buf_puts(&cmdline, "hwspy");
	for (int i = 0; i < argc; i++)
		(void) buf_printf(&cmdline, " %s", argv[i]);
	o->fmt.command_line = cmdline.len ? cmdline.data : NULL;
	r = format_write(o->format, hwspy_recorder_profile(rec), &o->fmt, out->f);
	o->fmt.command_line = NULL;
	buf_release(&cmdline);
	if (r < 0)
		return log_errno(r, "cannot write '%s'", o->output);
	return cli_output_commit(out);
}

int cmd_record(int argc, char **argv)
{
	struct record_args o = { 0 };
	struct hwspy_recorder *rec = NULL;
	struct hwspy_child child = { 0 };
	struct outfile out = { 0 };
	struct hwspy_record_stats st;
	char target[320], defpath[64];
	int r, status;

	/* every option is checked before anything is opened, attached or written */
	o.target = target;
	r = record_parse_args(argc, argv, &o);
	status = r > 0 ? 0 : r < 0 ? 2 : record_check_options(&o);
	if (r || status)
		goto out;
	if (!o.output) {
		hwspy_output_default(o.pid ? o.pid : getpid(), o.format, defpath, sizeof(defpath));
		o.output = defpath;
	}
	if (!o.format_given)
		o.format = hwspy_format_of_path(o.output);
	status = format_color_output(&o.fmt, o.format, o.output) < 0 ? 2 : new_recorder(&o, &rec);
	if (status)
		goto out;
	status = 1;
	/* the output's temporary file, before attaching: a bad -o is found now */
	if (record_check_target(&o) < 0 || cli_output_open(&out, o.output) < 0 ||
	    session_begin(rec, &o, target, sizeof(target), &child, false) < 0)
		goto out;
	run(rec, &o);
	if (write_profile(rec, &o, &out, argc, argv) < 0)
		goto out;
	hwspy_recorder_stats(rec, &st);
	if (st.target_exited && o.pid)
		log_info("pid %d exited; writing what was sampled", o.pid);
	/* the profile is safe: now the command (its end goes in the summary) */
	if (o.argv)
		session_end_command(rec, &o, &child);
	record_summary(rec, &o, out.is_stdout ? NULL : o.output);
	if (o.argv)
		record_child_say(&child);
	status = o.argv ? hwspy_child_exit_code(&child) : 0;
out:
	outfile_abort(&out);    /* a no-op once committed */
	session_finish(rec, &o, &child, true);   /* hwspy failed: its status stays 1 */
	hwspy_recorder_free(rec);
	record_args_release(&o);
	return status;
}
