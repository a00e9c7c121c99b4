/*
 * hwspy top: a live view of the hottest Python functions of a process (attached with -p, or a
 * launched command), refreshed every second, or one snapshot as text (--once). The options it
 * shares with record are parsed and checked by record's code, so top accepts and refuses
 * exactly what record does; the target is started as record's (session.h), the recorder's
 * sink sums each sample into the table (hwspy.h), the slice function reads the keys and
 * redraws (top_view.c). The terminal is restored on every way out.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/session.h"
#include "cli/top.h"

#define TOP_ONCE_SECONDS 2.0            /* --once samples this long without -d */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwspy top [OPTIONS] -p PID\n"
		"       hwspy top [OPTIONS] -- COMMAND [ARGS...]\n\n"
		"Shows, live, the Python functions that take the most of a perf event (self and\n"
		"total share, one column per further event and per derived ratio), refreshed every\n"
		"second.\n\n"
		"  -p, --pid PID          attach to a running process (all threads, and new ones)\n"
		"  -e, --event EV[,EV]    the event that samples (default: cycles, or cpu-clock\n"
		"                         without a hardware PMU), then events counted with it\n"
		"  -F, --rate HZ          samples per second per thread (default 100)\n"
		"  -c, --period N         one sample every N events instead\n"
		"  -d, --duration SECS    stop after SECS (--once: sample this long, default 2)\n"
		"      --once             sample, then print one snapshot of the table as text\n"
		"      --native           native frames' rows too ('n' hides and shows them)\n"
		"      --nonblocking      never stop the target; read stacks just after the sample\n"
		"      --ptrace           exact mode by stopping each sampled thread (ptrace)\n"
		"      --stop-budget PCT  the most of a thread's time the stops may take\n"
		"      --grace SECS       a launched command's time to end after SIGTERM, then SIGKILL\n"
		"      --keep-running     leave a launched command running when top quits\n"
		"  -h, --help             this text\n\n"
		"Keys: q quit, s/t sort by self/total, < > move the sort column, T next thread,\n"
		"z zero the counts, n native rows (--native), h or ? the keys.\n\n"
		"Exit status: 0 (quit, or the target exited), 2 for a usage error (standard output\n"
		"not a terminal without --once), 1 when it failed or, with --once, took no sample.\n");
}

/* The command line into t (zeroed by the caller), checked before anything is opened: -1 to go
 * on, else the exit status (0 after --help; said). */
static int parse_args(int argc, char **argv, struct top *t)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' }, { "event", required_argument, NULL, 'e' },
		{ "rate", required_argument, NULL, 'F' }, { "freq", required_argument, NULL, 'F' },
		{ "period", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' }, { "once", no_argument, NULL, 'O' },
		{ "native", no_argument, NULL, 'N' }, { "nonblocking", no_argument, NULL, 'n' },
		{ "ptrace", no_argument, NULL, 'P' },
		{ "stop-budget", required_argument, NULL, 'B' },
		{ "grace", required_argument, NULL, 'G' },
		{ "keep-running", no_argument, NULL, 'k' }, { "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct record_args *o = &t->o;
	static const char flag_opts[] = "ONnPk";
	bool *flags[] = { &t->once, &o->native, &o->nonblocking, &o->ptrace, &o->keep_running };
	const char *f;
	int c, r;

	o->freq = 100;
	o->stack_size = HWSPY_DEFAULT_STACK_SIZE;
	o->grace = RECORD_GRACE_DEFAULT;
	o->function = true;     /* one row per function */
	while ((c = getopt_long(argc, argv, "+p:e:F:c:d:h", longopts, NULL)) != -1) {
		if (c == 'h')
			return usage(stdout), 0;
		f = c ? strchr(flag_opts, c) : NULL;
		if (f)
			*flags[f - flag_opts] = true;
		r = f ? 1 : record_number_option(o, c, optarg);
		if (c == 'e')
			r = record_parse_events(o, optarg) < 0 ? -EINVAL : 1;
		if (!r)
			usage(stderr);      /* not an option of top's */
		if (r <= 0)
			return 2;
	}
	if (optind < argc)
		o->argv = argv + optind;
	if (t->once && !o->duration)
		o->duration = TOP_ONCE_SECONDS;
	if (record_check_args(o, "top", "show") < 0)
		return 2;
	if (!t->once && !isatty(STDOUT_FILENO))
		return log_error("standard output is not a terminal: use --once for one snapshot "
				 "as text"), 2;
	r = record_check_options(o);
	return r ? r : -1;
}

/* The sink: each finished sample into the table. */
static int on_sample(void *ctx, const struct hwspy_sample *s)
{
	return hwspy_table_add_sample(((struct top *) ctx)->table, s);
}

/* After each slice: Ctrl-Z (the screen left first), the keys, the redraw once a second. */
static int slice_done(void *ctx, struct hwspy_recorder *rec, int r)
{
	struct top *t = ctx;
	uint64_t now = clock_now_ns();
	bool redraw = false;
	int key;

	if (session_tstp_pending()) {
		top_screen_suspend(t->screen);
		r = session_tstp(rec, r);
		top_screen_resume(t->screen);
		redraw = true;
	}
	if (r < 0)
		return r;
	for (int i = 0; t->screen && i < 64 && (key = top_screen_key(t->screen)) != TOP_KEY_NONE; i++)
		redraw = top_key(t, key) || redraw;
	if (t->quit)
		return -ECANCELED;
	if (t->screen && now - t->drawn_ns >= 1000000000ULL) {    /* once a second */
		hwspy_live_rates_read(&t->rates, t->rec, now);  /* not --once's: the whole run's */
		redraw = true;
	}
	if (redraw)
		top_draw(t, now);
	return 0;
}

/* After the run: what ended it said, the table printed where it should be: the exit status. */
static int report(struct top *t, int r, struct record_child *child)
{
	struct hwspy_python py;
	struct hwspy_record_stats st;

	session_capture_said(t->rec);
	hwspy_recorder_python(t->rec, &py);
	if (py.fatal)
		return record_python_error(py.fatal, t->rec, t->target), 1;
	if (r < 0 && r != -ECANCELED)
		return session_stopped(&t->o, r), 1;
	t->drawn_ns = clock_now_ns();
	if (t->once) {
		hwspy_live_rates_read(&t->rates, t->rec, t->drawn_ns);
		if (!hwspy_table_samples(t->table)) {
			record_no_samples(t->rec, &t->o);
			return 1;
		}
		return top_write_text(t, stdout, 0) < 0 ? 1 : 0;
	}
	hwspy_recorder_stats(t->rec, &st);
	if (!st.target_exited)
		return 0;
	if (child->pid)
		session_finish(t->rec, &t->o, child, true);    /* reaped: how it ended */
	else
		log_info("%s exited; the last table:", t->target);
	(void) top_write_text(t, stdout, (size_t) t->screen_rows);
	return 0;
}

int cmd_top(int argc, char **argv)
{
	struct top t = { .vo = { .tid = HWSPY_TABLE_ALL_THREADS, .sort = HWSPY_TABLE_COL_SELF } };
	struct record_child child = { 0 };
	struct hwspy_record_opts ro;
	int r, status = 1;

	t.o.target = t.target;
	status = parse_args(argc, argv, &t);
	if (status >= 0)
		goto out;
	status = 1;
	session_record_opts(&t.o, &ro);
	ro.function = true;     /* one row per function */
	if (hwspy_recorder_new(&ro, on_sample, &t, &t.rec) < 0 ||
	    hwspy_table_new_recording(t.rec, &t.table) < 0)
		log_error("out of memory");
	if (!t.table || record_check_target(&t.o) < 0 ||
	    session_begin(t.rec, &t.o, t.target, sizeof(t.target), &child, !t.once) < 0)
		goto out;
	t.o.capture_held = true;        /* said once the screen is closed */
	t.window_ns = clock_now_ns();
	hwspy_live_rates_read(&t.rates, t.rec, t.window_ns);
	if (!t.once && (r = top_screen_open(&t.screen)) < 0) {
		log_errno(r, "cannot use the terminal (TERM '%s'): set TERM to one it is, or use "
			  "--once", getenv("TERM") ? getenv("TERM") : "");
		goto out;
	}
	top_draw(&t, clock_now_ns());  /* the screen's first */
	r = hwspy_recorder_run(t.rec, &(struct hwspy_run) {
		.stop = session_stop(), .duration_ns = (uint64_t) (t.o.duration * 1e9),
		.slice_fn = slice_done, .ctx = &t,
	});
	session_after_run();
	top_screen_close(t.screen);     /* the terminal as it was, before anything is said */
	t.screen = NULL;
	status = report(&t, r, &child);
out:
	top_screen_close(t.screen);
	session_finish(t.rec, &t.o, &child, false);     /* as record's (--grace, --keep-running) */
	hwspy_table_free(t.table);
	hwspy_recorder_free(t.rec);
	record_args_release(&t.o);
	return status;
}
