/*
 * top (cli): what `hwspy top`'s files share: its state (struct top), the command line
 * (top_args.c) and the view drawn (top_view.c: the header, the table, the keys' help, the
 * plain-text snapshot). cmd_top.c runs it; hwspy.h's live table sums the samples and reads
 * the target's CPU time and switches; top_screen.h is the terminal. Internal to cli/.
 */
#ifndef HWSPY_CLI_TOP_H
#define HWSPY_CLI_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "cli/args.h"
#include "cli/top_screen.h"
#include "include/hwspy.h"

#define TOP_ONCE_SECONDS 2.0            /* --once samples this long without -d */
#define TOP_REFRESH_NS 1000000000ULL
#define TOP_SWITCH_TASKS 256            /* task status files read per refresh */

struct top_args {
	struct record_args rec;         /* the options shared with record */
	bool once;                      /* --once: one snapshot as text */
};

/* The last reading of the target's counters, and the rates from the one before. */
struct top_rates {
	uint64_t at_ns;
	uint64_t samples, lost, cpu_ns;
	struct hwspy_switches sw;
	bool have_cpu, have_sw;
	double samples_s, cpu_pct, vol_s, invol_s;
	bool samples_ok, cpu_ok, sw_ok; /* the rates above hold (two readings) */
};

struct top {
	struct top_args a;
	struct hwspy_recorder *rec;
	struct hwspy_table *table;
	struct buf frame_text;          /* the table's frame_name(): a frame's text */
	struct hwspy_record_stats st;   /* the recorder's, as of the last refresh */
	struct top_screen *screen;      /* NULL with --once and after the screen closed */
	struct hwspy_table_view_opts vo;
	char target[320];
	char comm[64];
	uint64_t start_ns, window_ns;   /* run start, the window's start (start or last 'z') */
	bool zeroed;                    /* the window began at a 'z' */
	uint64_t drawn_ns;              /* the last refresh */
	struct top_rates rates;
	bool help, quit;
	int screen_rows;                /* rows of the table drawn last (the exit snapshot's) */
};

/* top_args.c: parses `hwspy top`'s command line into a (zeroed by the caller): 0, 1 after
 * --help (printed), -EINVAL on a usage error (said). */
int top_parse_args(int argc, char **argv, struct top_args *a);

/* top_view.c: the screen drawn from t's table and rates; the counters read again (once a
 * second: top_refresh_rates()); a key acted on (true: redraw now); the table as text to f,
 * with header lines, at most max_rows rows (0: every one). */
void top_refresh_rates(struct top *t, uint64_t now_ns);
void top_draw(struct top *t, uint64_t now_ns);
bool top_key(struct top *t, int key);
int top_write_text(struct top *t, FILE *f, size_t max_rows);

#endif
