/*
 * top (cli): what `hwspy top`'s files share: its state (struct top), the command line
 * (top_args.c) and the view drawn (top_view.c: the header, the table, the keys and their help,
 * the plain-text snapshot). cmd_top.c runs it; hwspy.h's live table sums the samples, steps the
 * view, and reads the target's rates; top_screen.h is the terminal. Internal to cli/.
 */
#ifndef HWSPY_CLI_TOP_H
#define HWSPY_CLI_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/args.h"
#include "cli/top_screen.h"
#include "include/hwspy.h"

struct top_args {
	struct record_args rec;         /* the options shared with record */
	bool once;                      /* --once: one snapshot as text */
};

struct top {
	struct top_args a;
	struct hwspy_recorder *rec;
	struct hwspy_table *table;
	struct top_screen *screen;      /* NULL with --once and after the screen closed */
	struct hwspy_table_view_opts vo;
	struct hwspy_live_rates rates;  /* read at the start, once a second, at the end */
	char target[320];
	uint64_t window_ns;             /* the window's start: the run's, or the last 'z' */
	bool zeroed;                    /* the window began at a 'z' */
	uint64_t drawn_ns;              /* the last refresh */
	bool help, quit;
	int screen_rows;                /* rows of the table drawn last (the exit snapshot's) */
};

/* top_args.c: parses `hwspy top`'s command line into a (zeroed by the caller): 0, 1 after
 * --help (printed), -EINVAL on a usage error (said). */
int top_parse_args(int argc, char **argv, struct top_args *a);

/* top_view.c: the screen drawn from t's table and rates, a key acted on (true: redraw now), the
 * table as text to f with the header's lines, at most max_rows rows (0: every one). */
void top_draw(struct top *t, uint64_t now_ns);
bool top_key(struct top *t, int key);
int top_write_text(struct top *t, FILE *f, size_t max_rows);

#endif
