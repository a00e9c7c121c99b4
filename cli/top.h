/* top (cli): what `hwspy top`'s files share: its state, the view (top_view.c) and the terminal
 * (top_screen.c, the only ncurses caller); cmd_top.c runs it, hwspy.h's live table sums. The
 * caller installs its signal handlers before top_screen_open(), so that ncurses leaves SIGINT,
 * SIGTERM, SIGHUP and SIGTSTP to them (a SIGWINCH comes back as TOP_KEY_RESIZE);
 * top_screen_close() restores the terminal on every path after an open (NULL: no-op).
 * Internal to cli/. */
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
	struct record_args o;
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

/* top_view.c: the screen drawn, a key acted on (true: redraw now), the table as text to f
 * (max_rows 0: every row). */
void top_draw(struct top *t, uint64_t now_ns);
bool top_key(struct top *t, int key);
int top_write_text(struct top *t, FILE *f, size_t max_rows);

/* top_screen.c: open: 0, -ENOTTY (no terminal ncurses can drive), -ENOMEM. Suspend (Ctrl-Z)
 * and resume. A frame: begin (cleared, its size), lines, a box over its middle (the help), end
 * (drawn whole, over what a launched command wrote). The next key, or TOP_KEY_NONE. */
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
