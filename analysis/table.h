/*
 * table (analysis): the live table `hwspy top` shows, without the screen: the finished samples
 * of a run summed per (thread, function) into self and total value vectors, the columns those
 * allow, a view of the rows (one thread or all, native rows shown or not) sorted by any column,
 * each row and the column header as text of a given width, and the view's options stepped as
 * top's keys step them. Data only: no printing, no
 * terminal (cli/top_screen.c draws); include/hwspy.h's `live table` is this (lib/table.c).
 *
 * Values: a sample's value vector has 1 + n_events columns: [0] the sample (1), [1 + i] what
 * event i counted. A frame's self vector adds the samples it was the leaf of, its total vector
 * every sample it was on, once per sample however often it recurs in that stack.
 *
 * Frames are ids of the caller's (a recording's profile, in `top`), named through the
 * callbacks of struct table_opts: frame_name(ctx, id) the text a row shows (valid until the
 * next call; NULL: no such frame), frame_native(ctx, id) whether it is a native or kernel frame
 * (hidden with hide_native; NULL: none is). Each is called once per id, the first time a sample
 * holds it, from table_add(). Frames whose texts are equal (a native leaf seen at two addresses
 * of one function ...) count as one row: the first id of that text.
 *
 * Columns, in this order: "self%" and "total%" (event 0's share of the view's total), one
 * "NAME%" per further event (its self share), then one per ratio output/ratios.h derives from
 * the events (IPC, misses per 1k instructions, miss rates), computed on each row's self vector.
 * A value is undefined (shown "-") where its denominator is 0.
 *
 * Ownership: the table owns its rows and copies the event names; a struct table_view is the
 * caller's, filled by table_view() and freed by table_view_release(); it stays valid until the
 * next table_add(), table_zero() or table_view() into it. Functions return 0 or -ENOMEM
 * (-EINVAL where said); a failed add leaves the counts as they were.
 */
#ifndef HWSPY_ANALYSIS_TABLE_H
#define HWSPY_ANALYSIS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define TABLE_ALL_THREADS UINT32_MAX    /* table_view_opts.tid: every thread */
#define TABLE_COL_SELF 0
#define TABLE_COL_TOTAL 1
#define TABLE_MIN_NAME 20               /* the name column keeps at least this many columns */

struct table;

struct table_opts {
	const char *const *events;      /* the events' names, the sampling one first */
	size_t n_events;                /* 1 .. PROFILE_MAX_EVENTS */
	const char *(*frame_name)(void *ctx, uint32_t id);
	bool (*frame_native)(void *ctx, uint32_t id);
	void *ctx;
};

struct table_row {
	uint32_t frame;                 /* frame id */
	const uint64_t *self, *total;   /* n_values each */
	double key;                     /* the sort column's value (valid when has_key) */
	bool has_key;
};

struct table_view {
	struct table_row *rows;         /* sorted: the sort column descending, undefined last */
	size_t n, cap;
	uint32_t tid;                   /* the thread shown, or TABLE_ALL_THREADS */
	const uint64_t *sum;            /* the view's total (all threads', or tid's) */
	size_t sort;                    /* the column sorted by */
};

struct table_view_opts {
	uint32_t tid;                   /* TABLE_ALL_THREADS, or one thread */
	bool hide_native;               /* leave out native and kernel frames' rows */
	size_t sort;                    /* column (< table_n_columns(); else self) */
};

/* A table for o's events and frames (o is copied, the names too): 0, -EINVAL (no events, too
 * many, no frame_name), -ENOMEM. */
int table_new(const struct table_opts *o, struct table **ret);
void table_free(struct table *t);
/* The number of values of a sample: 1 + n_events. */
size_t table_n_values(const struct table *t);
/* One finished sample (frames root first, depth >= 1, n_values as table_n_values()). -EINVAL
 * when n_values differs, tid is TABLE_ALL_THREADS or a frame has no name. */
int table_add(struct table *t, uint32_t tid, const uint32_t *frames, size_t depth,
	      const uint64_t *values, size_t n_values);
/* Every count back to 0 (a new window); the threads seen are kept. */
void table_zero(struct table *t);
/* Samples since the start or the last zero. */
uint64_t table_samples(const struct table *t);
/* The threads seen, ascending: i < table_n_threads(). */
size_t table_n_threads(const struct table *t);
uint32_t table_thread(const struct table *t, size_t i);
/* The thread after tid in the `T` cycle: all threads, each by ascending tid, all again. */
uint32_t table_next_thread(const struct table *t, uint32_t tid);

size_t table_n_columns(const struct table *t);
const char *table_column_name(const struct table *t, size_t col);
/* The text of frame id as its row shows it (its first id's of that text), NULL where no
 * sample held it yet. */
const char *table_frame_text(const struct table *t, uint32_t id);
/* Row i's value in column col: false where it is undefined. */
bool table_view_value(const struct table *t, const struct table_view *v, size_t i, size_t col,
		      double *ret);

/* The rows of vo's thread (all of them), sorted; v zeroed by the caller the first time.
 * -EINVAL where vo's thread is not one the table has seen. */
int table_view(struct table *t, const struct table_view_opts *vo, struct table_view *v);
void table_view_release(struct table_view *v);

/* The columns that fit width (0: no limit, every one): how many of them, left to right. */
size_t table_fit(const struct table *t, int width);
/* The column header and row i as text of at most width display columns (0: no limit),
 * columns as table_fit() says, the name last, cut with ".." to fit (base/text.h); the sort
 * column's name marked "*" in the header. Appended to out. */
int table_header_text(const struct table *t, const struct table_view *v, int width,
		      struct buf *out);
int table_row_text(const struct table *t, const struct table_view *v, size_t i, int width,
		   struct buf *out);
/* The column header and v's first max_rows rows (0: every one), of no width limit, each line
 * ended by '\n', appended to out. */
int table_text(const struct table *t, const struct table_view *v, size_t max_rows,
	       struct buf *out);

/* The steps `top`'s keys take on a view's options: sort by self, by total, by the column left
 * or right of vo->sort (none past the first or last); the next thread (table_next_thread());
 * native rows hidden or shown. */
enum table_step {
	TABLE_SORT_SELF, TABLE_SORT_TOTAL, TABLE_SORT_LEFT, TABLE_SORT_RIGHT, TABLE_NEXT_THREAD,
	TABLE_NATIVE,
};
void table_step(const struct table *t, struct table_view_opts *vo, enum table_step step);

#endif
