/*
 * top_screen (cli): the terminal of `hwspy top`, through ncurses: opened (cbreak, no echo, keys
 * read without waiting), lines drawn, keys read, closed. The only file of hwspy that calls
 * ncurses. The caller installs its signal handlers before top_screen_open(), so that ncurses
 * leaves SIGINT, SIGTERM, SIGHUP and SIGTSTP to them (it keeps SIGWINCH: a resize comes back
 * as TOP_KEY_RESIZE). top_screen_close() restores the terminal, and must be called on every
 * path after a successful open (NULL is a no-op).
 */
#ifndef HWSPY_CLI_TOP_SCREEN_H
#define HWSPY_CLI_TOP_SCREEN_H

#include <stddef.h>

#define TOP_KEY_NONE (-1)
#define TOP_KEY_RESIZE (-2)

enum top_attr { TOP_PLAIN, TOP_BOLD, TOP_REVERSE };

struct top_screen;

/* The terminal on standard input and output: 0, -ENOTTY (no terminal ncurses can drive; TERM
 * names none it knows), -ENOMEM. */
int top_screen_open(struct top_screen **ret);
void top_screen_close(struct top_screen *s);
/* Leaves the screen for a while (Ctrl-Z) and comes back to it. */
void top_screen_suspend(struct top_screen *s);
void top_screen_resume(struct top_screen *s);
void top_screen_size(const struct top_screen *s, int *ret_rows, int *ret_cols);
/* A frame: begin (the screen cleared), lines, end (drawn whole: what a launched command wrote
 * over the screen is painted over). */
void top_screen_begin(struct top_screen *s);
void top_screen_line(struct top_screen *s, int y, const char *text, enum top_attr attr);
/* A box of lines over the middle of the screen (the keys' help). */
void top_screen_box(struct top_screen *s, const char *const *lines, size_t n);
void top_screen_end(struct top_screen *s);
/* The next key pressed (a character, or TOP_KEY_RESIZE), TOP_KEY_NONE if none waits. */
int top_screen_key(struct top_screen *s);

#endif
