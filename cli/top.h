/*
 * top (cli): what `hwspy top`'s files share: its state (struct top), the view drawn
 * (top_view.c: the header, the table, the keys and their help, the plain-text snapshot) and
 * the terminal (top_screen.c). cmd_top.c runs it; hwspy.h's live table sums the samples, steps
 * the view and reads the target's rates. Internal to cli/.
 *
 * The terminal, through ncurses (top_screen.c, the only file of hwspy that calls it): opened
 * (cbreak, no echo, keys read without waiting), lines drawn, keys read, closed. The caller
 * installs its signal handlers before top_screen_open(), so that ncurses leaves SIGINT,
 * SIGTERM, SIGHUP and SIGTSTP to them (it keeps SIGWINCH: a resize comes back as
 * TOP_KEY_RESIZE). top_screen_close() restores the terminal, and must be called on every path
 * after a successful open (NULL is a no-op).
 */
#ifndef HWSPY_CLI_TOP_H
#define HWSPY_CLI_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/args.h"
#include "include/hwspy.h"

#define TOP_KEY_NONE (-1)
#define TOP_KEY_RESIZE (-2)

enum top_attr { TOP_PLAIN, TOP_BOLD, TOP_REVERSE };

struct top_screen;

struct top {
	struct record_args o;           /* the options shared with record */
	bool once;                      /* --once: one snapshot as text */
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

/* top_view.c: the screen drawn from t's table and rates, a key acted on (true: redraw now), the
 * table as text to f with the header's lines, at most max_rows rows (0: every one). */
void top_draw(struct top *t, uint64_t now_ns);
bool top_key(struct top *t, int key);
int top_write_text(struct top *t, FILE *f, size_t max_rows);

/* top_screen.c: the terminal on standard input and output: 0, -ENOTTY (no terminal ncurses
 * can drive; TERM names none it knows), -ENOMEM. Suspend leaves the screen for a while
 * (Ctrl-Z), resume comes back to it. A frame: begin (the screen cleared, its size), lines, a
 * box of lines over its middle (the keys' help), end (drawn whole: what a launched command
 * wrote over the screen is painted over). The next key pressed (a character, or
 * TOP_KEY_RESIZE), TOP_KEY_NONE if none waits. */
int top_screen_open(struct top_screen **ret);
void top_screen_close(struct top_screen *s);
void top_screen_suspend(struct top_screen *s);
void top_screen_resume(struct top_screen *s);
void top_screen_begin(struct top_screen *s, int *ret_rows, int *ret_cols);
void top_screen_line(struct top_screen *s, int y, const char *text, enum top_attr attr);
void top_screen_box(struct top_screen *s, const char *const *lines, size_t n);
void top_screen_end(struct top_screen *s);
int top_screen_key(struct top_screen *s);

#endif
