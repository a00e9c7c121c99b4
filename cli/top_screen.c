/* top_screen: ncurses for `hwspy top` (top.h). */
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include <ncurses.h>

#include "cli/top.h"

struct top_screen {
	SCREEN *scr;
	bool ended;                     /* endwin() called (closed or suspended) */
};

int top_screen_open(struct top_screen **ret)
{
	struct top_screen *s = calloc(1, sizeof(*s));

	*ret = NULL;
	if (!s)
		return -ENOMEM;
	(void) setlocale(LC_CTYPE, "");    /* UTF-8 names drawn as characters */
	s->scr = newterm(NULL, stdout, stdin);
	if (!s->scr) {
		free(s);
		return -ENOTTY;
	}
	(void) cbreak();        /* not raw: Ctrl-C still sends SIGINT, Ctrl-Z SIGTSTP */
	(void) noecho();
	(void) nodelay(stdscr, TRUE);
	(void) keypad(stdscr, TRUE);
	(void) curs_set(0);
	*ret = s;
	return 0;
}

void top_screen_close(struct top_screen *s)
{
	if (!s)
		return;
	top_screen_suspend(s);
	delscreen(s->scr);
	free(s);
}

void top_screen_suspend(struct top_screen *s)
{
	if (s && !s->ended) {
		(void) endwin();
		s->ended = true;
	}
}

void top_screen_resume(struct top_screen *s)
{
	if (s && s->ended) {
		(void) refresh();
		s->ended = false;
	}
}

void top_screen_begin(struct top_screen *s, int *ret_rows, int *ret_cols)
{
	(void) s;
	(void) erase();
	*ret_rows = LINES;
	*ret_cols = COLS;
}

void top_screen_line(struct top_screen *s, int y, const char *text, enum top_attr attr)
{
	(void) s;
	if (y < 0 || y >= LINES)
		return;
	(void) attrset(attr == TOP_BOLD ? A_BOLD : attr == TOP_REVERSE ? A_REVERSE : A_NORMAL);
	(void) mvaddnstr(y, 0, text, -1);
	if (attr == TOP_REVERSE)
		(void) chgat(-1, A_REVERSE, 0, NULL);  /* the bar across the whole width */
	(void) attrset(A_NORMAL);
}

void top_screen_box(struct top_screen *s, const char *const *lines, size_t n)
{
	int w = 0, h = (int) n + 2, y0, x0;

	(void) s;
	for (size_t i = 0; i < n; i++)
		if ((int) strlen(lines[i]) > w)
			w = (int) strlen(lines[i]);
	w += 4;
	y0 = LINES > h ? (LINES - h) / 2 : 0;
	x0 = COLS > w ? (COLS - w) / 2 : 0;
	for (int y = 0; y < h && y0 + y < LINES; y++) {
		(void) move(y0 + y, x0);
		for (int x = 0; x < w && x0 + x < COLS; x++)
			(void) addch(y == 0 || y == h - 1 ? '-' : x == 0 || x == w - 1 ? '|' : ' ');
	}
	for (size_t i = 0; i < n && y0 + 1 + (int) i < LINES; i++)
		(void) mvaddnstr(y0 + 1 + (int) i, x0 + 2, lines[i], COLS - x0 - 2 > 0 ? COLS - x0 - 2 : 0);
}

void top_screen_end(struct top_screen *s)
{
	(void) s;
	(void) clearok(curscr, TRUE);   /* repaint all: a launched command may have written */
	(void) refresh();
}

int top_screen_key(struct top_screen *s)
{
	int c = getch();

	(void) s;
	return c == ERR ? TOP_KEY_NONE : c == KEY_RESIZE ? TOP_KEY_RESIZE : c;
}
