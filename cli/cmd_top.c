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
#include "cli/options.h"
#include "cli/session.h"
#include "cli/top.h"

#define TOP_ONCE_SECONDS 2.0            /* --once samples this long without -d */

/* The command line into t (zeroed by the caller), checked before anything is opened: -1 to go
 * on, else the exit status (0 after --help; said). */
static int parse_args(int argc, char **argv, struct top *t)
{
	struct record_args *o = &t->o;
	int c, r;

	o->freq = 100;
	o->stack_size = HWSPY_DEFAULT_STACK_SIZE;
	o->grace = RECORD_GRACE_DEFAULT;
	o->function = true;     /* one row per function */
	while ((c = cli_getopt(&cli_opts_top, argc, argv)) != -1) {
		if (c == OPT_HELP)
			return cli_help(&cli_opts_top, stdout), 0;
		if (c == OPT_ONCE)
			t->once = true;
		else if (c == '?' || record_option(o, c, optarg) <= 0)
			return 2;       /* said (0: none, every option is handled) */
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
static int report(struct top *t, int r, struct hwspy_child *child)
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
	struct hwspy_child child = { 0 };
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
	if (t.table)
		hwspy_table_full_paths(t.table, t.o.fmt.full_paths);
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
