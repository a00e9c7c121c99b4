/*
 * top_table (cli): what `hwspy top` shows, without the screen: the finished samples of a run
 * summed per (thread, function) into self and total value vectors, the columns those allow,
 * a view of the rows (one thread or all, native rows shown or not) sorted by any column, and
 * each row and the column header as text of a given width. No ncurses here (top_screen.c
 * draws), so a unit test links it with output/ and base/ alone.
 *
 * Values: a sample's value vector has the columns of struct profile (output/profile.h): [0]
 * the sample (1), [1 + i] what event i counted. A frame's self vector adds the samples it was
 * the leaf of, its total vector every sample it was on, once per sample however often it
 * recurs in that stack. Frames are ids of the profile given to top_table_new() (the
 * recorder's, in `top`), which must outlive the table; frames are named from it when shown.
 *
 * Columns, in this order: "self%" and "total%" (event 0's share of the view's total), one
 * "NAME%" per further event (its self share), then one per ratio output/ratios.h derives from
 * the events (IPC, misses per 1k instructions, miss rates), computed on each row's self vector.
 * A value is undefined (shown "-") where its denominator is 0.
 *
 * Ownership: the table owns its rows; a struct top_view is the caller's, filled by
 * top_table_view() and freed by top_view_release(); it stays valid until the next
 * top_table_add(), top_table_zero() or top_table_view() into it. Functions return 0 or -ENOMEM
 * (-EINVAL where said); a failed add leaves the table as it was.
 */
#ifndef HWSPY_CLI_TOP_TABLE_H
#define HWSPY_CLI_TOP_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "output/profile.h"

#define TOP_ALL_THREADS UINT32_MAX      /* top_view_opts.tid: every thread */
#define TOP_COL_SELF 0
#define TOP_COL_TOTAL 1
#define TOP_MIN_NAME 20                 /* the name column keeps at least this many columns */

struct top_table;

struct top_row {
	uint32_t frame;                 /* profile frame id */
	const uint64_t *self, *total;   /* n_values each */
	double key;                     /* the sort column's value (valid when has_key) */
	bool has_key;
};

struct top_view {
	struct top_row *rows;           /* sorted: the sort column descending, undefined last */
	size_t n, cap;
	uint32_t tid;                   /* the thread shown, or TOP_ALL_THREADS */
	const uint64_t *sum;            /* the view's total (all threads', or tid's) */
	size_t sort;                    /* the column sorted by */
};

struct top_view_opts {
	uint32_t tid;                   /* TOP_ALL_THREADS, or one thread */
	bool hide_native;               /* leave out native and kernel frames' rows */
	size_t sort;                    /* column (< top_table_n_columns()) */
};

/* A table for prof's events (its n_values): 0, -ENOMEM. */
int top_table_new(const struct profile *prof, struct top_table **ret);
void top_table_free(struct top_table *t);
/* One finished sample (frames root first, depth >= 1, n_values of prof's). -EINVAL when
 * n_values differs or a frame id is not prof's. */
int top_table_add(struct top_table *t, uint32_t tid, const uint32_t *frames, size_t depth,
		  const uint64_t *values, size_t n_values);
/* Every count back to 0 (a new window); the threads seen are kept. */
void top_table_zero(struct top_table *t);
/* Samples since the start or the last zero. */
uint64_t top_table_samples(const struct top_table *t);
/* The threads seen, ascending: i < top_table_n_threads(). */
size_t top_table_n_threads(const struct top_table *t);
uint32_t top_table_thread(const struct top_table *t, size_t i);
/* The thread after tid in the `T` cycle: all threads, each by ascending tid, all again. */
uint32_t top_table_next_thread(const struct top_table *t, uint32_t tid);

size_t top_table_n_columns(const struct top_table *t);
const char *top_table_column_name(const struct top_table *t, size_t col);
/* Row i's value in column col: false where it is undefined. */
bool top_view_value(const struct top_table *t, const struct top_view *v, size_t i, size_t col,
		    double *ret);

/* The rows of vo's thread (all of them), sorted; v zeroed by the caller the first time. */
int top_table_view(struct top_table *t, const struct top_view_opts *vo, struct top_view *v);
void top_view_release(struct top_view *v);

/* The columns that fit width (0: no limit, every one): how many of them, left to right. */
size_t top_table_fit(const struct top_table *t, int width);
/* The column header and row i as text of at most width display columns (0: no limit),
 * columns as top_table_fit() says, the name last, cut with ".." to fit; the sort column's
 * name marked "*" in the header. Appended to out. */
int top_table_header_text(const struct top_table *t, const struct top_view *v, int width,
			  struct buf *out);
int top_table_row_text(const struct top_table *t, const struct top_view *v, size_t i, int width,
		       struct buf *out);
/* s appended to out, cut to at most room display columns with ".." (UTF-8: a character per
 * column; room < 0: no limit): 0 or -ENOMEM. */
int top_cut_text(struct buf *out, const char *s, int room);

#endif
