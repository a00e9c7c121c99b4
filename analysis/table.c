/*
 * table: the per-(thread, function) sums behind `hwspy top`, their views and their text
 * (table.h).
 *
 * Rows are entries keyed (tid, frame) in one open-addressing hash of entry indexes; the rows of
 * all threads together are entries of their own, keyed (TABLE_ALL_THREADS, frame), added to with
 * every sample, so a view is one pass over the entries. Each entry's self and total vectors
 * sit in vals, 2 x n_values from its off. An add reserves everything it may need first, so it
 * fails before it changes anything.
 *
 * One function, one row: frames that read the same (frame_name(): a native leaf seen at two
 * addresses of one function ...) count as one, the first id of that text (fr[id].canon, from
 * the pooled texts' map tmap). The event names live in a profile of the table's own (no
 * frames, no samples), which output/ratios.h derives the ratio columns from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/table.h"
#include "base/array.h"
#include "base/hash.h"
#include "base/strpool.h"
#include "base/text.h"
#include "output/profile.h"
#include "output/ratios.h"

struct table_entry {
	uint32_t tid, frame;
	size_t off;                     /* into vals: self, then total */
};

/* What the table knows of a frame id, from the first sample that held it. */
struct table_frame {
	uint64_t stamp;                 /* the last sample it was counted in */
	uint32_t canon;                 /* the first id of its text + 1 (0: not seen yet) */
	bool native;                    /* frame_native() */
	const char *text;               /* pooled */
};

struct table {
	struct profile *ev;             /* the events (names), for ratios_init() */
	const char *(*frame_name)(void *ctx, uint32_t id);
	bool (*frame_native)(void *ctx, uint32_t id);
	void *ctx;
	size_t ne, nv;                  /* n_events, n_values */
	struct table_entry *ent;
	size_t n_ent, cap_ent;
	uint64_t *vals;                 /* 2 * nv per entry */
	uint32_t *hash;                 /* entry index + 1, 0 empty */
	size_t hcap;                    /* a power of 2, at least twice n_ent */
	uint32_t *tids;                 /* threads seen, ascending */
	uint64_t *tsum;                 /* nv per thread, in the order of tids */
	size_t n_thr, cap_thr;
	uint64_t *sum;                  /* every thread's */
	struct table_frame *fr;         /* per frame id */
	size_t fr_cap;                  /* ids fr holds */
	struct strpool texts;
	struct tmap { const char *text; uint32_t id; } *tmap;   /* pooled text -> first id */
	size_t tmap_cap, tmap_n;        /* tmap_cap a power of 2 (0: none yet) */
	uint64_t seq, samples;
	struct ratios ratios;
	size_t n_cols;
	size_t col_name[3 + 2 * PROFILE_MAX_EVENTS + 2 * PROFILE_MAX_EVENTS];
	struct buf names;               /* column names, NUL-terminated */
};

static int add_col(struct table *t, const char *name, size_t len)
{
	t->col_name[t->n_cols] = t->names.len;
	if (buf_append(&t->names, name, len) < 0 || buf_putc(&t->names, '\0') < 0)
		return -ENOMEM;
	t->n_cols++;
	return 0;
}

/* "cache-misses per 1k instructions" -> "cache-misses/1k-instr", "cache miss rate" -> "cache
 * miss%": narrow enough for a column */
static int add_ratio_col(struct table *t, const char *label)
{
	static const struct { const char *long_end, *short_end; } cuts[] = {
		{ " per 1k instructions", "/1k-instr" },
		{ " miss rate", " miss%" },
	};
	size_t n = strlen(label);
	char name[160];

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t k = strlen(cuts[i].long_end);
		if (n > k && n - k < 100 && !strcmp(label + n - k, cuts[i].long_end)) {
			snprintf(name, sizeof(name), "%.*s%s", (int) (n - k), label, cuts[i].short_end);
			return add_col(t, name, strlen(name));
		}
	}
	return add_col(t, label, n);
}

static int init_columns(struct table *t)
{
	int r = add_col(t, "self%", 5);

	if (r >= 0)
		r = add_col(t, "total%", 6);
	for (size_t i = 1; i < t->ne && r >= 0; i++) {
		char name[160];
		snprintf(name, sizeof(name), "%s%%", profile_event(t->ev, i)->name);
		r = add_col(t, name, strlen(name));
	}
	if (r >= 0)
		r = ratios_init(&t->ratios, t->ev);
	for (size_t i = 0; i < t->ratios.n && r >= 0; i++)
		r = add_ratio_col(t, ratio_label(&t->ratios, i));
	return r;
}

int table_new(const struct table_opts *o, struct table **ret)
{
	struct table *t;

	*ret = NULL;
	if (!o->n_events || o->n_events > PROFILE_MAX_EVENTS || !o->events || !o->frame_name)
		return -EINVAL;
	for (size_t i = 0; i < o->n_events; i++)
		if (!o->events[i])
			return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->frame_name = o->frame_name;
	t->frame_native = o->frame_native;
	t->ctx = o->ctx;
	t->ne = o->n_events;
	t->nv = 1 + o->n_events;
	buf_init(&t->names);
	strpool_init(&t->texts);
	t->ratios.n = 0;
	buf_init(&t->ratios.labels);
	t->ev = profile_new(o->events, o->n_events);
	t->sum = calloc(t->nv, sizeof(uint64_t));
	if (!t->ev || !t->sum || init_columns(t) < 0) {
		table_free(t);
		return -ENOMEM;
	}
	*ret = t;
	return 0;
}

void table_free(struct table *t)
{
	if (!t)
		return;
	free(t->ent);
	free(t->vals);
	free(t->hash);
	free(t->tids);
	free(t->tsum);
	free(t->sum);
	free(t->fr);
	free(t->tmap);
	strpool_release(&t->texts);
	ratios_release(&t->ratios);
	buf_release(&t->names);
	profile_free(t->ev);
	free(t);
}

size_t table_n_values(const struct table *t)
{
	return t->nv;
}

static size_t slot_of(const struct table *t, uint32_t tid, uint32_t frame)
{
	return hash_u64(((uint64_t) tid << 32) | frame) & (t->hcap - 1);
}

/* The entry (tid, frame), or SIZE_MAX. */
static size_t find_entry(const struct table *t, uint32_t tid, uint32_t frame)
{
	if (!t->hcap)
		return SIZE_MAX;
	for (size_t s = slot_of(t, tid, frame), k = 0; k < t->hcap; k++, s = (s + 1) & (t->hcap - 1)) {
		uint32_t h = t->hash[s];
		if (!h)
			return SIZE_MAX;
		if (t->ent[h - 1].tid == tid && t->ent[h - 1].frame == frame)
			return h - 1;
	}
	return SIZE_MAX;
}

static void hash_put(struct table *t, size_t idx)
{
	size_t s = slot_of(t, t->ent[idx].tid, t->ent[idx].frame);

	while (t->hash[s])
		s = (s + 1) & (t->hcap - 1);
	t->hash[s] = (uint32_t) idx + 1;
}

/* Room for extra more entries (their vectors and hash slots): 0 or -ENOMEM. */
static int reserve_entries(struct table *t, size_t extra)
{
	size_t need = t->n_ent + extra, cap = t->cap_ent, cap_vals = t->cap_ent;
	size_t hcap = t->hcap ? t->hcap : 128;

	if (need > UINT32_MAX - 1)
		return -ENOMEM;
	/* ent and vals (2 * nv per entry, nv >= 1) share cap_ent: it moves once both have grown */
	if (array_grow((void **) &t->ent, &cap, need, sizeof(*t->ent), 64) < 0 ||
	    array_grow((void **) &t->vals, &cap_vals, need, 2 * t->nv * sizeof(*t->vals), 64) < 0)
		return -ENOMEM;
	t->cap_ent = cap;
	while (hcap < 2 * need)
		hcap *= 2;
	if (hcap != t->hcap) {
		uint32_t *h = calloc(hcap, sizeof(*h));
		if (!h)
			return -ENOMEM;
		free(t->hash);
		t->hash = h;
		t->hcap = hcap;
		for (size_t i = 0; i < t->n_ent; i++)
			hash_put(t, i);
	}
	return 0;
}

/* The index of thread tid in tids, inserting it (and its zeroed sum): SIZE_MAX on -ENOMEM. */
static size_t thread_index(struct table *t, uint32_t tid)
{
	size_t lo = 0, hi = t->n_thr, cap = t->cap_thr, cap_sum = t->cap_thr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->tids[mid] == tid)
			return mid;
		if (t->tids[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* tids and tsum (nv per thread) share cap_thr: it moves once both have grown */
	if (array_grow((void **) &t->tids, &cap, t->n_thr + 1, sizeof(*t->tids), 64) < 0 ||
	    array_grow((void **) &t->tsum, &cap_sum, t->n_thr + 1, t->nv * sizeof(*t->tsum), 64) < 0)
		return SIZE_MAX;
	t->cap_thr = cap;
	memmove(t->tids + lo + 1, t->tids + lo, (t->n_thr - lo) * sizeof(*t->tids));
	memmove(t->tsum + (lo + 1) * t->nv, t->tsum + lo * t->nv,
		(t->n_thr - lo) * t->nv * sizeof(uint64_t));
	t->tids[lo] = tid;
	memset(t->tsum + lo * t->nv, 0, t->nv * sizeof(uint64_t));
	t->n_thr++;
	return lo;
}

/* The entry (tid, frame), created zeroed if new (room reserved by the caller). */
static size_t entry(struct table *t, uint32_t tid, uint32_t frame)
{
	size_t i = find_entry(t, tid, frame);

	if (i != SIZE_MAX)
		return i;
	i = t->n_ent++;
	t->ent[i] = (struct table_entry) { .tid = tid, .frame = frame, .off = i * 2 * t->nv };
	memset(t->vals + t->ent[i].off, 0, 2 * t->nv * sizeof(uint64_t));
	hash_put(t, i);
	return i;
}

static void add_vec(uint64_t *dst, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += v[i];
}

/* Room for the sample's frames in fr: 0, -EINVAL (the id UINT32_MAX), -ENOMEM. */
static int reserve_frames(struct table *t, const uint32_t *frames, size_t depth)
{
	size_t need = 0;

	for (size_t i = 0; i < depth; i++) {
		if (frames[i] == UINT32_MAX)
			return -EINVAL;
		if ((size_t) frames[i] + 1 > need)
			need = (size_t) frames[i] + 1;
	}
	return array_grow((void **) &t->fr, &t->fr_cap, need, sizeof(*t->fr), 256);
}

/* The slot of text in tmap (its own, or the empty one where it goes). */
static size_t tmap_slot(const struct table *t, const char *text)
{
	size_t s = hash_u64((uint64_t) (uintptr_t) text) & (t->tmap_cap - 1);

	while (t->tmap[s].text && t->tmap[s].text != text)
		s = (s + 1) & (t->tmap_cap - 1);
	return s;
}

static int tmap_grow(struct table *t)
{
	size_t cap = t->tmap_cap ? 2 * t->tmap_cap : 256;
	struct tmap *old = t->tmap, *m = calloc(cap, sizeof(*m));
	size_t old_cap = t->tmap_cap;

	if (!m)
		return -ENOMEM;
	t->tmap = m;
	t->tmap_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].text)
			t->tmap[tmap_slot(t, old[i].text)] = old[i];
	free(old);
	return 0;
}

/* fr[id] set for the sample's frames not seen before (room reserved): 0, -EINVAL (a frame with
 * no name), -ENOMEM. What it set stays (a cache of the names): no count changes. */
static int canon_frames(struct table *t, const uint32_t *frames, size_t depth)
{
	for (size_t i = 0; i < depth; i++) {
		struct table_frame *f = &t->fr[frames[i]];
		const char *name, *pooled;
		size_t slot;

		if (f->canon)
			continue;
		name = t->frame_name(t->ctx, frames[i]);
		if (!name)
			return -EINVAL;
		pooled = strpool_intern(&t->texts, name, strlen(name));
		if (!pooled || (2 * (t->tmap_n + 1) > t->tmap_cap && tmap_grow(t) < 0))
			return -ENOMEM;
		slot = tmap_slot(t, pooled);
		if (!t->tmap[slot].text) {
			t->tmap[slot] = (struct tmap) { .text = pooled, .id = frames[i] };
			t->tmap_n++;
		}
		f->text = pooled;
		f->native = t->frame_native && t->frame_native(t->ctx, frames[i]);
		f->canon = t->tmap[slot].id + 1;
	}
	return 0;
}

int table_add(struct table *t, uint32_t tid, const uint32_t *frames, size_t depth,
		  const uint64_t *values, size_t n_values)
{
	size_t ti;
	uint32_t leaf;
	int r;

	if (n_values != t->nv || !depth || tid == TABLE_ALL_THREADS)
		return -EINVAL;
	if (depth > SIZE_MAX / 4 || reserve_entries(t, 2 * depth) < 0)
		return -ENOMEM;
	r = reserve_frames(t, frames, depth);
	if (r >= 0)
		r = canon_frames(t, frames, depth);
	if (r < 0)
		return r;
	ti = thread_index(t, tid);
	if (ti == SIZE_MAX)
		return -ENOMEM;
	t->seq++;
	for (size_t i = 0; i < depth; i++) {
		uint32_t f = t->fr[frames[i]].canon - 1;

		if (t->fr[f].stamp == t->seq)
			continue;       /* a recursion: once per stack */
		t->fr[f].stamp = t->seq;
		add_vec(t->vals + t->ent[entry(t, tid, f)].off + t->nv, values, t->nv);
		add_vec(t->vals + t->ent[entry(t, TABLE_ALL_THREADS, f)].off + t->nv, values, t->nv);
	}
	leaf = t->fr[frames[depth - 1]].canon - 1;
	add_vec(t->vals + t->ent[entry(t, tid, leaf)].off, values, t->nv);
	add_vec(t->vals + t->ent[entry(t, TABLE_ALL_THREADS, leaf)].off, values, t->nv);
	add_vec(t->tsum + ti * t->nv, values, t->nv);
	add_vec(t->sum, values, t->nv);
	t->samples++;
	return 0;
}

void table_zero(struct table *t)
{
	t->n_ent = 0;
	if (t->hash)
		memset(t->hash, 0, t->hcap * sizeof(*t->hash));
	if (t->tsum)
		memset(t->tsum, 0, t->n_thr * t->nv * sizeof(uint64_t));
	memset(t->sum, 0, t->nv * sizeof(uint64_t));
	t->samples = 0;
}

uint64_t table_samples(const struct table *t)
{
	return t->samples;
}

size_t table_n_threads(const struct table *t)
{
	return t->n_thr;
}

uint32_t table_thread(const struct table *t, size_t i)
{
	return i < t->n_thr ? t->tids[i] : TABLE_ALL_THREADS;
}

uint32_t table_next_thread(const struct table *t, uint32_t tid)
{
	if (tid == TABLE_ALL_THREADS)
		return t->n_thr ? t->tids[0] : TABLE_ALL_THREADS;
	for (size_t i = 0; i < t->n_thr; i++)
		if (t->tids[i] > tid)
			return t->tids[i];
	return TABLE_ALL_THREADS;
}

size_t table_n_columns(const struct table *t)
{
	return t->n_cols;
}

const char *table_column_name(const struct table *t, size_t col)
{
	return col < t->n_cols ? t->names.data + t->col_name[col] : NULL;
}

const char *table_frame_text(const struct table *t, uint32_t id)
{
	return id < t->fr_cap && t->fr[id].canon ? t->fr[id].text : NULL;
}

static bool value_of(const struct table *t, const uint64_t *self, const uint64_t *total,
		     const uint64_t *sum, size_t col, double *ret)
{
	size_t ne = t->ne;

	if (col == TABLE_COL_SELF || col == TABLE_COL_TOTAL) {
		if (!sum[1])
			return false;
		*ret = 100.0 * (double) (col == TABLE_COL_SELF ? self : total)[1] / (double) sum[1];
		return true;
	}
	if (col < 1 + ne) {
		if (!sum[col])
			return false;
		*ret = 100.0 * (double) self[col] / (double) sum[col];
		return true;
	}
	if (col < t->n_cols)
		return ratio_value(&t->ratios.r[col - 1 - ne], self, ret);
	return false;
}

bool table_view_value(const struct table *t, const struct table_view *v, size_t i, size_t col,
		    double *ret)
{
	if (i >= v->n)
		return false;
	return value_of(t, v->rows[i].self, v->rows[i].total, v->sum, col, ret);
}

static int row_cmp(const void *a, const void *b)
{
	const struct table_row *x = a, *y = b;

	if (x->has_key != y->has_key)
		return x->has_key ? -1 : 1;
	if (x->has_key && x->key != y->key)
		return x->key > y->key ? -1 : 1;
	if (x->total[1] != y->total[1])
		return x->total[1] > y->total[1] ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static bool hidden(const struct table *t, uint32_t frame, bool hide_native)
{
	return hide_native && frame < t->fr_cap && t->fr[frame].native;
}

int table_view(struct table *t, const struct table_view_opts *vo, struct table_view *v)
{
	size_t ti = SIZE_MAX;

	v->n = 0;
	v->tid = vo->tid;
	v->sort = vo->sort < t->n_cols ? vo->sort : TABLE_COL_SELF;
	v->sum = t->sum;
	if (vo->tid != TABLE_ALL_THREADS) {
		for (size_t i = 0; i < t->n_thr && ti == SIZE_MAX; i++)
			if (t->tids[i] == vo->tid)
				ti = i;
		if (ti == SIZE_MAX)
			return -EINVAL;
		v->sum = t->tsum + ti * t->nv;
	}
	for (size_t i = 0; i < t->n_ent; i++) {
		const struct table_entry *e = &t->ent[i];
		struct table_row *row;

		if (e->tid != vo->tid || hidden(t, e->frame, vo->hide_native))
			continue;
		if (array_grow((void **) &v->rows, &v->cap, v->n + 1, sizeof(*v->rows), 64) < 0)
			return -ENOMEM;
		row = &v->rows[v->n++];
		row->frame = e->frame;
		row->self = t->vals + e->off;
		row->total = t->vals + e->off + t->nv;
		row->has_key = value_of(t, row->self, row->total, v->sum, v->sort, &row->key);
	}
	if (v->n > 1)
		qsort(v->rows, v->n, sizeof(*v->rows), row_cmp);
	return 0;
}

void table_view_release(struct table_view *v)
{
	free(v->rows);
	*v = (struct table_view) { 0 };
}

/* A column's width: its name and the sort marker, at least 7 ("100.0%" and a space). */
static int col_width(const struct table *t, size_t col)
{
	int n = (int) strlen(table_column_name(t, col)) + 1;

	return n < 7 ? 7 : n;
}

size_t table_fit(const struct table *t, int width)
{
	int used = 0;
	size_t n = 0;

	if (width <= 0)
		return t->n_cols;
	while (n < t->n_cols && used + col_width(t, n) + 1 + TABLE_MIN_NAME <= width)
		used += col_width(t, n++) + 1;
	return n;
}

/* What is left of width for the name after used columns (-1: no limit). */
static int name_room(int width, int used)
{
	return width <= 0 ? -1 : width > used ? width - used : 0;
}

int table_header_text(const struct table *t, const struct table_view *v, int width,
			  struct buf *out)
{
	size_t n = table_fit(t, width);
	int used = 0;

	for (size_t c = 0; c < n; c++) {
		char name[200];
		snprintf(name, sizeof(name), "%s%s", c == v->sort ? "*" : "",
			 table_column_name(t, c));
		if (buf_printf(out, "%*s ", col_width(t, c), name) < 0)
			return -ENOMEM;
		used += col_width(t, c) + 1;
	}
	return text_cut(out, "function", name_room(width, used));
}

/* Column col's value as text, at most 31 characters. */
static void value_text(const struct table *t, const struct table_view *v, size_t i, size_t col,
		       char *text, size_t size)
{
	size_t ne = t->ne;
	double x;

	if (!table_view_value(t, v, i, col, &x))
		snprintf(text, size, "-");
	else if (col < 1 + ne || t->ratios.r[col - 1 - ne].percent)
		snprintf(text, size, "%.1f", x);
	else
		snprintf(text, size, "%.2f", x);
}

int table_row_text(const struct table *t, const struct table_view *v, size_t i, int width,
		       struct buf *out)
{
	size_t n = table_fit(t, width);
	const char *name;
	int used = 0;

	if (i >= v->n)
		return -EINVAL;
	for (size_t c = 0; c < n; c++) {
		char text[32];
		value_text(t, v, i, c, text, sizeof(text));
		if (buf_printf(out, "%*s ", col_width(t, c), text) < 0)
			return -ENOMEM;
		used += col_width(t, c) + 1;
	}
	name = table_frame_text(t, v->rows[i].frame);
	return text_cut(out, name ? name : "", name_room(width, used)) < 0 ? -ENOMEM : 0;
}

int table_text(const struct table *t, const struct table_view *v, size_t max_rows,
	       struct buf *out)
{
	if (table_header_text(t, v, 0, out) < 0 || buf_putc(out, '\n') < 0)
		return -ENOMEM;
	for (size_t i = 0; i < v->n && (!max_rows || i < max_rows); i++)
		if (table_row_text(t, v, i, 0, out) < 0 || buf_putc(out, '\n') < 0)
			return -ENOMEM;
	return 0;
}

void table_step(const struct table *t, struct table_view_opts *vo, enum table_step step)
{
	switch (step) {
	case TABLE_SORT_SELF:
	case TABLE_SORT_TOTAL:
		vo->sort = step == TABLE_SORT_SELF ? TABLE_COL_SELF : TABLE_COL_TOTAL;
		break;
	case TABLE_SORT_LEFT:
		if (vo->sort > 0)
			vo->sort--;
		break;
	case TABLE_SORT_RIGHT:
		if (vo->sort + 1 < t->n_cols)
			vo->sort++;
		break;
	case TABLE_NEXT_THREAD:
		vo->tid = table_next_thread(t, vo->tid);
		break;
	case TABLE_NATIVE:
		vo->hide_native = !vo->hide_native;
		break;
	}
}
