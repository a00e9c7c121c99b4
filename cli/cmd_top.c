/*
 * hwspy top: a live view of the hottest Python functions of a process (attached with -p, or a
 * launched command), refreshed every second, or one snapshot as text (--once). The options
 * are record's (record_check.c checks them the same way), the target opened and started as
 * record does it (session.h); the recorder's sink sums each finished sample into the table
 * (hwspy.h),
 * and the run's slice function reads the keys and redraws (top_view.c, top_screen.h). The
 * terminal is restored on every way out: q, a signal, the target's end, an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/session.h"
#include "cli/top.h"

#define TOP_REFRESH_NS 1000000000ULL

/* The sink: each finished sample into the table. */
static int on_sample(void *ctx, const struct hwspy_sample *s)
{
	return hwspy_table_add_sample(((struct top *) ctx)->table, s);
}

/* The recorder (its samples to the sink) and the table: 0, or -ENOMEM. */
static int new_top(struct top *t)
{
	struct hwspy_record_opts ro;

	session_record_opts(&t->a.rec, &ro);
	ro.function = true;     /* one row per function */
	if (hwspy_recorder_new(&ro, on_sample, t, &t->rec) < 0)
		return -ENOMEM;
	return hwspy_table_new_recording(t->rec, &t->table);
}

/* The target's rates and name read again (an exec renames it). */
static void read_target(struct top *t, uint64_t now_ns)
{
	struct hwspy_record_stats st;

	hwspy_recorder_stats(t->rec, &st);
	hwspy_live_rates_read(&t->rates, hwspy_recorder_pid(t->rec), &st, now_ns);
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
	if (t->screen && now - t->drawn_ns >= TOP_REFRESH_NS) {
		read_target(t, now);    /* --once: the whole run's rates, from its start and end */
		redraw = true;
	}
	if (redraw)
		top_draw(t, now);
	return 0;
}

/* Samples until q, a signal, -d or the target's end: the run's result. */
static int run(struct top *t)
{
	struct hwspy_run run = {
		.stop = session_stop(), .duration_ns = (uint64_t) (t->a.rec.duration * 1e9),
		.slice_fn = slice_done, .ctx = t,
	};
	int r;

	if (t->screen)
		top_draw(t, clock_now_ns());
	r = hwspy_recorder_run(t->rec, &run);
	session_after_run();
	return r;
}

/* session_start(), a launched command given /dev/null as its stdin when the keys come from
 * the terminal (a command that reads its stdin would take them): 0, or -1 (said). */
static int start_events(struct top *t)
{
	struct record_args *o = &t->a.rec;
	int keys = -1, r;

	if (o->argv && !t->a.once && isatty(STDIN_FILENO)) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		keys = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		if (null < 0 || keys < 0 || dup2(null, STDIN_FILENO) < 0) {
			r = -errno;
			if (null >= 0)
				(void) close(null);
			if (keys >= 0)
				(void) close(keys);
			log_errno(r, "cannot give '%s' /dev/null as its input", o->argv[0]);
			return -1;
		}
		(void) close(null);
	}
	r = session_start(t->rec, o);   /* forks the command */
	o->capture_held = true;         /* said once the screen is closed */
	if (keys >= 0) {
		(void) dup2(keys, STDIN_FILENO);
		(void) close(keys);
	}
	return r;
}

/* Opens, starts and names the target (as record does): 0, or -1 (said). */
static int start(struct top *t, struct record_child *child)
{
	struct record_args *o = &t->a.rec;

	if (record_check_target(o) < 0)
		return -1;
	if (o->pid)
		snprintf(t->target, sizeof(t->target), "pid %d", o->pid);
	else
		snprintf(t->target, sizeof(t->target), "'%s'", o->argv[0]);
	if (o->pid && session_open_target(t->rec, o) < 0)
		return -1;
	session_catch_signals();        /* before the screen: ncurses then leaves them to us */
	if (start_events(t) < 0)
		return -1;
	if (o->argv) {
		snprintf(t->target, sizeof(t->target), "'%s' (pid %d)", o->argv[0],
			 hwspy_recorder_pid(t->rec));
		*child = (struct record_child) { .pid = hwspy_recorder_pid(t->rec), .name = o->argv[0] };
	}
	(void) hwspy_profile_set_target(hwspy_recorder_profile(t->rec), t->target);
	t->window_ns = clock_now_ns();
	read_target(t, t->window_ns);
	return 0;
}

/* After the run: what ended it said, the table printed where it should be: the exit status. */
static int report(struct top *t, int r, struct record_child *child)
{
	struct hwspy_python py;
	struct hwspy_record_stats st;

	session_capture_said(t->rec);
	hwspy_recorder_python(t->rec, &py);
	if (py.fatal) {
		record_python_error(py.fatal, t->rec, t->target);
		return 1;
	}
	if (r == -EBUSY) {
		log_error("%s began to catch every signal hwspy could stop it with: sampling "
			  "ended early (--nonblocking never stops it)", t->target);
		return 1;
	}
	if (r < 0 && r != -ECANCELED) {
		log_errno(r, "sampling stopped early");
		return 1;
	}
	t->drawn_ns = clock_now_ns();
	if (t->a.once) {
		read_target(t, t->drawn_ns);
		if (!hwspy_table_samples(t->table)) {
			record_no_samples(t->rec, &t->a.rec);
			return 1;
		}
		return top_write_text(t, stdout, 0) < 0 ? 1 : 0;
	}
	hwspy_recorder_stats(t->rec, &st);
	if (st.target_exited) {
		if (child->pid) {
			session_end_command(t->rec, &t->a.rec, child);     /* reaped: how it ended */
			record_child_say(child);
		} else {
			log_info("%s exited; the last table:", t->target);
		}
		(void) top_write_text(t, stdout, (size_t) t->screen_rows);
	}
	return 0;
}

int cmd_top(int argc, char **argv)
{
	struct top t = { .vo = { .tid = HWSPY_TABLE_ALL_THREADS, .sort = HWSPY_TABLE_COL_SELF } };
	struct record_child child = { 0 };
	int r, status = 1;

	t.a.rec.target = t.target;
	r = top_parse_args(argc, argv, &t.a);
	if (r) {
		status = r > 0 ? 0 : 2;
		goto out;
	}
	if (!t.a.once && !isatty(STDOUT_FILENO)) {
		log_error("standard output is not a terminal: use --once for one snapshot as text");
		status = 2;
		goto out;
	}
	status = record_check_options(&t.a.rec);
	if (status)
		goto out;
	status = 1;
	if (new_top(&t) < 0) {
		log_error("out of memory");
		goto out;
	}
	if (start(&t, &child) < 0)
		goto out;
	if (!t.a.once && (r = top_screen_open(&t.screen)) < 0) {
		log_errno(r, "cannot use the terminal (TERM '%s'): set TERM to one it is, or use "
			  "--once", getenv("TERM") ? getenv("TERM") : "");
		goto out;
	}
	r = run(&t);
	top_screen_close(t.screen);     /* the terminal as it was, before anything is said */
	t.screen = NULL;
	status = report(&t, r, &child);
out:
	top_screen_close(t.screen);
	if (child.pid && !child.ended && !child.kept) {
		/* the launched command ends as record's does (--grace, --keep-running) */
		session_end_command(t.rec, &t.a.rec, &child);
		if (!child.kept)
			record_child_say(&child);
	}
	hwspy_table_free(t.table);
	hwspy_recorder_free(t.rec);
	record_args_release(&t.a.rec);
	return status;
}
