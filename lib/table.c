/*
 * table.c: the `live table` section of hwspy.h over analysis/table.h, and the target's CPU
 * time, switches and name over base/procfs.h, the rates top shows from two readings of them.
 * A struct hwspy_table is an analysis table with the view it was last asked for and the buffer
 * its texts are written to; a recording's also has its profile, which names the frames (by
 * their labels, output/label.h: module-relative paths, as the flame graph's boxes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/table.h"
#include "base/buf.h"
#include "base/procfs.h"
#include "lib/internal.h"
#include "lib/lib.h"
#include "output/label.h"
#include "output/output.h"

_Static_assert(HWSPY_SWITCHES_LISTED == PROCFS_TASKS_COUNTED, "one count of listed tasks");
_Static_assert(HWSPY_TABLE_ALL_THREADS == TABLE_ALL_THREADS && HWSPY_TABLE_COL_SELF ==
	       TABLE_COL_SELF && HWSPY_TABLE_COL_TOTAL == TABLE_COL_TOTAL, "the same table");
_Static_assert(HWSPY_TABLE_SORT_SELF == (int) TABLE_SORT_SELF && HWSPY_TABLE_SORT_TOTAL ==
	       (int) TABLE_SORT_TOTAL && HWSPY_TABLE_SORT_LEFT == (int) TABLE_SORT_LEFT &&
	       HWSPY_TABLE_SORT_RIGHT == (int) TABLE_SORT_RIGHT && HWSPY_TABLE_NEXT_THREAD ==
	       (int) TABLE_NEXT_THREAD && HWSPY_TABLE_NATIVE == (int) TABLE_NATIVE,
	       "the same steps");

struct hwspy_table {
	struct table *t;
	struct table_view v;
	struct buf text;
	const struct profile *p;        /* a recording's (hwspy_table_new_recording()), or NULL */
	struct buf name;                /* p's frame label, as the table asks for it */
	struct label_paths lp;          /* p's scripts' directory (output/label.h) ... */
	size_t lp_frames;               /* ... as of p's first lp_frames frames */
	bool full_paths;                /* p's frames with full paths (hwspy_table_full_paths()) */
};

/* A table of o's, or of p's events and frames where o is NULL. */
static int table_open(const struct hwspy_table_opts *o, const struct profile *p,
		      struct hwspy_table **ret);

int hwspy_table_new(const struct hwspy_table_opts *o, struct hwspy_table **ret)
{
	lib_reason_clear();
	*ret = NULL;
	if (!o)
		return lib_fail(-EINVAL, "no options for the table");
	return table_open(o, NULL, ret);
}

static const char *profile_frame_name(void *ctx, uint32_t id)
{
	struct hwspy_table *h = ctx;

	buf_reset(&h->name);
	if (id >= profile_n_frames(h->p))
		return NULL;
	if (h->full_paths)
		return label_frame_full(profile_frame(h->p, id), &h->name) < 0 ? NULL : h->name.data;
	/* module-relative paths, the scripts' directory found again as the profile grows */
	if (h->lp_frames != profile_n_frames(h->p)) {
		label_paths_init(&h->lp, h->p);
		h->lp_frames = profile_n_frames(h->p);
	}
	if (label_frame(profile_frame(h->p, id), &h->lp, &h->name) < 0)
		return NULL;
	return h->name.data;
}

static bool profile_frame_native(void *ctx, uint32_t id)
{
	struct hwspy_table *h = ctx;
	const struct profile_frame *f = profile_frame(h->p, id);    /* NULL past the last */

	return f && (f->kind == FRAME_NATIVE || f->kind == FRAME_KERNEL);
}

int hwspy_table_new_recording(struct hwspy_recorder *rec, struct hwspy_table **ret)
{
	lib_reason_clear();
	*ret = NULL;
	if (!rec)
		return lib_fail(-EINVAL, "no recorder for the table");
	return table_open(NULL, hwspy_recorder_profile(rec)->p, ret);
}

void hwspy_table_full_paths(struct hwspy_table *t, bool full_paths)
{
	t->full_paths = full_paths;
}

int hwspy_table_add_sample(struct hwspy_table *t, const struct hwspy_sample *s)
{
	return hwspy_table_add(t, (uint32_t) s->tid, s->frames, s->depth, s->values, s->n_values);
}

static int table_open(const struct hwspy_table_opts *o, const struct profile *p,
		      struct hwspy_table **ret)
{
	const char *events[PROFILE_MAX_EVENTS];
	struct table_opts to;
	struct hwspy_table *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return lib_fail(-ENOMEM, "out of memory");
	buf_init(&h->text);
	buf_init(&h->name);
	if (o) {
		to = (struct table_opts) {
			.events = o->events, .n_events = o->n_events, .frame_name = o->frame_name,
			.frame_native = o->frame_native, .ctx = o->ctx,
		};
	} else {
		to = (struct table_opts) {
			.events = events, .frame_name = profile_frame_name,
			.frame_native = profile_frame_native, .ctx = h,
		};
		for (; to.n_events < profile_n_events(p) && to.n_events < PROFILE_MAX_EVENTS;
		     to.n_events++)
			events[to.n_events] = profile_event(p, to.n_events)->name;
		h->p = p;
	}
	r = table_new(&to, &h->t);
	if (r < 0) {
		hwspy_table_free(h);
		if (r == -EINVAL)
			return lib_fail(r, "a table needs 1 to 8 events, each named, and a frame_name "
					"callback");
		return lib_fail(r, "out of memory");
	}
	*ret = h;
	return 0;
}

void hwspy_table_free(struct hwspy_table *t)
{
	if (!t)
		return;
	table_view_release(&t->v);
	table_free(t->t);
	buf_release(&t->text);
	buf_release(&t->name);
	free(t);
}

int hwspy_table_add(struct hwspy_table *t, uint32_t tid, const uint32_t *frames, size_t depth,
		    const uint64_t *values, size_t n_values)
{
	int r;

	lib_reason_clear();
	r = table_add(t->t, tid, frames, depth, values, n_values);
	if (r >= 0)
		return 0;
	if (r == -ENOMEM)
		return lib_fail(r, "out of memory");
	if (n_values != table_n_values(t->t))
		return lib_fail(r, "a sample of %zu values to a table of %zu", n_values,
				table_n_values(t->t));
	if (!depth)
		return lib_fail(r, "a sample of no frames");
	if (tid == HWSPY_TABLE_ALL_THREADS)
		return lib_fail(r, "a sample of thread id %u", (unsigned) tid);
	return lib_fail(r, "a sample holds a frame id with no name");
}

void hwspy_table_zero(struct hwspy_table *t)
{
	table_zero(t->t);
	t->v.n = 0;
}

uint64_t hwspy_table_samples(const struct hwspy_table *t)
{
	return table_samples(t->t);
}

size_t hwspy_table_n_threads(const struct hwspy_table *t)
{
	return table_n_threads(t->t);
}

uint32_t hwspy_table_thread(const struct hwspy_table *t, size_t i)
{
	return table_thread(t->t, i);
}

uint32_t hwspy_table_next_thread(const struct hwspy_table *t, uint32_t tid)
{
	return table_next_thread(t->t, tid);
}

size_t hwspy_table_n_columns(const struct hwspy_table *t)
{
	return table_n_columns(t->t);
}

const char *hwspy_table_column_name(const struct hwspy_table *t, size_t col)
{
	return table_column_name(t->t, col);
}

int hwspy_table_view(struct hwspy_table *t, const struct hwspy_table_view_opts *vo)
{
	struct table_view_opts o = { .tid = vo->tid, .hide_native = vo->hide_native,
				     .sort = vo->sort };
	int r;

	lib_reason_clear();
	r = table_view(t->t, &o, &t->v);
	if (r < 0)
		t->v.n = 0;
	if (r == -EINVAL)
		return lib_fail(r, "no thread %u in the table", (unsigned) vo->tid);
	return r < 0 ? lib_fail(r, "out of memory") : 0;
}

size_t hwspy_table_rows(const struct hwspy_table *t)
{
	return t->v.n;
}

size_t hwspy_table_sort_column(const struct hwspy_table *t)
{
	return t->v.sort;
}

uint32_t hwspy_table_row_frame(const struct hwspy_table *t, size_t i)
{
	return i < t->v.n ? t->v.rows[i].frame : UINT32_MAX;
}

bool hwspy_table_value(const struct hwspy_table *t, size_t i, size_t col, double *ret)
{
	return table_view_value(t->t, &t->v, i, col, ret);
}

const uint64_t *hwspy_table_row_self(const struct hwspy_table *t, size_t i)
{
	return i < t->v.n ? t->v.rows[i].self : NULL;
}

const uint64_t *hwspy_table_row_total(const struct hwspy_table *t, size_t i)
{
	return i < t->v.n ? t->v.rows[i].total : NULL;
}

size_t hwspy_table_fit(const struct hwspy_table *t, int width)
{
	return table_fit(t->t, width);
}

int hwspy_table_header_text(struct hwspy_table *t, int width, const char **ret)
{
	buf_reset(&t->text);
	*ret = "";
	if (table_header_text(t->t, &t->v, width, &t->text) < 0)
		return lib_fail(-ENOMEM, "out of memory");
	*ret = t->text.data;
	return 0;
}

int hwspy_table_row_text(struct hwspy_table *t, size_t i, int width, const char **ret)
{
	int r;

	buf_reset(&t->text);
	*ret = "";
	if (i >= t->v.n)
		return lib_fail(-EINVAL, "no row %zu in a view of %zu", i, t->v.n);
	r = table_row_text(t->t, &t->v, i, width, &t->text);
	if (r < 0) {
		buf_reset(&t->text);
		return lib_fail(r, "out of memory");
	}
	*ret = t->text.data;
	return 0;
}

/* procfs's "gone" (-ENOENT) as the library says it (-ESRCH), with the reason. */
static int target_fail(int r, pid_t pid, const char *what)
{
	if (r == -ENOENT)
		return lib_fail(-ESRCH, "cannot read the %s of pid %d: no such process", what,
				(int) pid);
	return lib_fail_errno(r, "cannot read the %s of pid %d", what, (int) pid);
}

int hwspy_target_cpu_ns(pid_t pid, uint64_t *ret_ns)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t ticks;
	int r;

	lib_reason_clear();
	if (pid <= 0 || hz <= 0)
		return lib_fail(-EINVAL, "no CPU time for pid %d", (int) pid);
	r = procfs_cpu_ticks("/proc", pid, &ticks);
	if (r < 0)
		return target_fail(r, pid, "CPU time");
	*ret_ns = ticks * (1000000000ULL / (uint64_t) hz);
	return 0;
}

int hwspy_target_switches(pid_t pid, size_t max, struct hwspy_switches *ret)
{
	struct procfs_switches sw;
	int r;

	lib_reason_clear();
	*ret = (struct hwspy_switches) { 0 };
	if (pid <= 0)
		return lib_fail(-EINVAL, "no context switches for pid %d", (int) pid);
	r = procfs_switches("/proc", pid, max, &sw);
	if (r < 0)
		return target_fail(r, pid, "context switches");
	*ret = (struct hwspy_switches) {
		.voluntary = sw.voluntary, .involuntary = sw.involuntary, .read = sw.read,
		.listed = sw.seen,
	};
	return 0;
}

int hwspy_target_comm(pid_t pid, char *buf, size_t size)
{
	int r;

	lib_reason_clear();
	if (pid <= 0 || !size)
		return lib_fail(-EINVAL, "no command name for pid %d", (int) pid);
	r = procfs_comm(pid, buf, size);
	return r < 0 ? target_fail(r, pid, "command name") : 0;
}

void hwspy_table_step(const struct hwspy_table *t, struct hwspy_table_view_opts *vo,
		      enum hwspy_table_step step)
{
	struct table_view_opts o = { .tid = vo->tid, .hide_native = vo->hide_native,
				     .sort = vo->sort };

	table_step(t->t, &o, (enum table_step) step);
	*vo = (struct hwspy_table_view_opts) { .tid = o.tid, .hide_native = o.hide_native,
					       .sort = o.sort };
}

int hwspy_table_text(struct hwspy_table *t, size_t max_rows, const char **ret)
{
	buf_reset(&t->text);
	*ret = "";
	if (table_text(t->t, &t->v, max_rows, &t->text) < 0) {
		buf_reset(&t->text);
		return lib_fail(-ENOMEM, "out of memory");
	}
	*ret = t->text.data;
	return 0;
}

enum hwspy_live_mode hwspy_live_mode(struct hwspy_recorder *rec)
{
	struct hwspy_record_stats st;

	hwspy_recorder_stats(rec, &st);
	switch (hwspy_recorder_mode(rec)) {
	case HWSPY_RECORD_CAPTURE:
		return st.capture_failures ? HWSPY_LIVE_CAPTURE_FAILED : HWSPY_LIVE_CAPTURE;
	case HWSPY_RECORD_STOPS:
		return HWSPY_LIVE_STOPS;
	default:
		return HWSPY_LIVE_NONBLOCKING;
	}
}

/* A count's rate from before to now over dt s: 0 where it went down (a thread gone). */
static double rate(uint64_t now, uint64_t before, double dt)
{
	return now > before ? (double) (now - before) / dt : 0;
}

void hwspy_live_rates_read(struct hwspy_live_rates *q, struct hwspy_recorder *rec,
			   uint64_t now_ns)
{
	pid_t pid = hwspy_recorder_pid(rec);
	double dt = q->at_ns ? (double) (now_ns - q->at_ns) / 1e9 : 0;
	uint64_t cpu_ns;
	struct hwspy_switches sw;
	bool cpu = pid > 0 && hwspy_target_cpu_ns(pid, &cpu_ns) == 0;
	bool swok = pid > 0 && hwspy_target_switches(pid, HWSPY_LIVE_TASKS, &sw) == 0;
	char comm[sizeof(q->comm)];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	struct hwspy_record_stats st;

	hwspy_recorder_stats(rec, &st);
	q->cores = cores > 0 ? cores : 1;
	q->lost = st.lost;
	q->samples_ok = dt > 0;
	if (dt > 0) {
		q->samples_s = (double) (st.samples - q->samples) / dt;
		q->cpu_ok = cpu && q->have_cpu;
		if (q->cpu_ok)
			q->cpu_pct = 100.0 * (double) (cpu_ns - q->cpu_ns) / 1e9 / dt;
		q->sw_ok = swok && q->have_sw;
		if (q->sw_ok) {
			q->vol_s = rate(sw.voluntary, q->sw.voluntary, dt);
			q->invol_s = rate(sw.involuntary, q->sw.involuntary, dt);
		}
	}
	q->at_ns = now_ns;
	q->samples = st.samples;
	q->have_cpu = cpu;
	if (cpu)
		q->cpu_ns = cpu_ns;
	q->have_sw = swok;
	if (swok)
		q->sw = sw;
	if (pid > 0 && hwspy_target_comm(pid, comm, sizeof(comm)) == 0)
		memcpy(q->comm, comm, sizeof(comm));
}
