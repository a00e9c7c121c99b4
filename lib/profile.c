/*
 * profile.c: the profiles and outputs section of hwspy.h over output/: a profile handle (the
 * caller's, from a file, or a recorder's), loading any format (profile_load()), writing any
 * (profile_write(), into a file put in place whole through base/outfile.h), pprof's limit, and
 * the steps of `hwspy diff` over two files (read, merged, checked; the event --weight picks).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/outfile.h"
#include "base/text.h"
#include "lib/internal.h"
#include "lib/lib.h"
#include "output/output.h"

int hwspy_profile_load(const char *path, struct hwspy_profile **ret)
{
	char why[512];
	struct profile *p;
	int r;

	lib_reason_clear();
	*ret = NULL;
	r = profile_load(path, &p, why, sizeof(why));
	if (r < 0)
		return lib_fail(r, "%s", why);
	*ret = malloc(sizeof(**ret));
	if (!*ret) {
		profile_free(p);
		return lib_fail(-ENOMEM, "out of memory reading '%s'", path);
	}
	**ret = (struct hwspy_profile) { .p = p, .owned = true };
	return 0;
}

void hwspy_profile_free(struct hwspy_profile *p)
{
	if (!p || !p->owned)
		return;
	profile_free(p->p);
	free(p);
}

size_t hwspy_profile_n_events(const struct hwspy_profile *p)
{
	return profile_n_events(p->p);
}

const char *hwspy_profile_event(const struct hwspy_profile *p, size_t i)
{
	return i < profile_n_events(p->p) ? profile_event(p->p, i)->name : NULL;
}

/* v in its unit into buf: seconds for a time, else grouped ("2,700"): buf. */
static char *in_unit(uint64_t v, bool time, char *buf, size_t size)
{
	if (time)
		snprintf(buf, size, "%.2f s", (double) v / 1e9);
	else
		text_grouped(buf, size, v);
	return buf;
}

int hwspy_profile_totals_words(const struct hwspy_profile *p, size_t col, char *buf, size_t size)
{
	const char *event = col && col <= profile_n_events(p->p) ?
			    profile_event(p->p, col - 1)->name : NULL;
	char samples[32], stacks[32], total[32];

	text_grouped(stacks, sizeof(stacks), profile_n_stacks(p->p));
	if (!event || !strcmp(event, "samples"))
		return snprintf(buf, size, "%s stacks, total %s", stacks, text_grouped(total,
				sizeof(total), hwspy_profile_total(p, col)));
	return snprintf(buf, size, "%s samples in %s stacks, %s %s", text_grouped(samples,
			sizeof(samples), hwspy_profile_total(p, 0)), stacks, event,
			in_unit(hwspy_profile_total(p, col), profile_event_is_time(event), total,
				sizeof(total)));
}

int hwspy_profile_find_event(const struct hwspy_profile *p, const char *name)
{
	int i = profile_find_event(p->p, name);

	return i < 0 ? -ENOENT : i;
}

size_t hwspy_profile_n_frames(const struct hwspy_profile *p)
{
	return profile_n_frames(p->p);
}

int hwspy_profile_frame(const struct hwspy_profile *p, uint32_t id, struct hwspy_frame *ret)
{
	const struct profile_frame *f;

	if (id >= profile_n_frames(p->p))
		return -ENOENT;
	f = profile_frame(p->p, id);
	*ret = (struct hwspy_frame) {
		.kind = f->kind == FRAME_PYTHON ? HWSPY_FRAME_PYTHON :
			f->kind == FRAME_NATIVE ? HWSPY_FRAME_NATIVE :
			f->kind == FRAME_KERNEL ? HWSPY_FRAME_KERNEL :
			f->kind == FRAME_THREAD ? HWSPY_FRAME_THREAD :
			f->kind == FRAME_WAIT ? HWSPY_FRAME_WAIT : HWSPY_FRAME_SPECIAL,
		.name = f->name, .file = f->file, .line = f->line, .module = f->module,
	};
	return 0;
}

size_t hwspy_profile_n_stacks(const struct hwspy_profile *p)
{
	return profile_n_stacks(p->p);
}

const uint64_t *hwspy_profile_stack(const struct hwspy_profile *p, size_t i, pid_t *ret_tid,
				    const uint32_t **ret_frames, size_t *ret_depth)
{
	const struct profile_stack *st = profile_stack(p->p, i);

	*ret_tid = (pid_t) st->tid;
	*ret_frames = st->frames;
	*ret_depth = st->depth;
	return profile_values(p->p, i);
}

const char *hwspy_profile_thread_name(const struct hwspy_profile *p, pid_t tid)
{
	return profile_thread_name(p->p, (uint32_t) tid);
}

void hwspy_profile_meta(const struct hwspy_profile *p, struct hwspy_profile_meta *ret)
{
	const struct profile_meta *m = profile_meta_const(p->p);

	*ret = (struct hwspy_profile_meta) {
		.target = m->target ? m->target : "", .python = m->python ? m->python : "",
		.duration_ns = m->duration_ns, .start_time_ns = m->start_time_ns, .lost = m->lost,
		.dropped = m->dropped, .threads = m->threads, .threads_missed = m->threads_missed,
		.threads_missed_why = m->threads_missed_why ? m->threads_missed_why : "",
	};
}

int hwspy_profile_set_target(struct hwspy_profile *p, const char *target)
{
	lib_reason_clear();
	return profile_set_target(p->p, target) < 0 ? lib_fail(-ENOMEM, "out of memory") : 0;
}

void hwspy_profile_set_run(struct hwspy_profile *p, uint64_t start_time_ns, uint64_t duration_ns,
			   uint64_t lost, uint64_t dropped, uint64_t threads)
{
	struct profile_meta *m = profile_meta(p->p);

	m->start_time_ns = start_time_ns;
	m->duration_ns = duration_ns;
	m->lost = lost;
	m->dropped = dropped;
	m->threads = threads;
}

int hwspy_profile_set_threads_missed(struct hwspy_profile *p, uint64_t n, const char *why)
{
	lib_reason_clear();
	return profile_set_threads_missed(p->p, n, why) < 0 ? lib_fail(-ENOMEM, "out of memory") : 0;
}

static enum profile_format internal_format(enum hwspy_format f)
{
	return f == HWSPY_FORMAT_SPEEDSCOPE ? PROFILE_SPEEDSCOPE : f == HWSPY_FORMAT_SVG ? PROFILE_SVG :
	       f == HWSPY_FORMAT_PPROF ? PROFILE_PPROF : PROFILE_FOLDED;
}

static enum hwspy_format public_format(enum profile_format f)
{
	return f == PROFILE_SPEEDSCOPE ? HWSPY_FORMAT_SPEEDSCOPE : f == PROFILE_SVG ? HWSPY_FORMAT_SVG :
	       f == PROFILE_PPROF ? HWSPY_FORMAT_PPROF : HWSPY_FORMAT_FOLDED;
}

int hwspy_format_parse(const char *name, enum hwspy_format *ret)
{
	enum profile_format f;

	lib_reason_clear();
	if (profile_format_parse(name, &f) < 0)
		return lib_fail(-EINVAL, "unknown format '%s'; give folded, speedscope, svg or pprof",
				name);
	*ret = public_format(f);
	return 0;
}

enum hwspy_format hwspy_format_of_path(const char *path)
{
	return public_format(profile_format_of_path(path));
}

const char *hwspy_format_name(enum hwspy_format f)
{
	return profile_format_name(internal_format(f));
}

int hwspy_profile_write(const struct hwspy_profile *p, enum hwspy_format f,
			const struct hwspy_write_opts *o, FILE *out)
{
	struct profile_write_opts wo = { 0 };
	int r;

	lib_reason_clear();
	if (o)
		wo = (struct profile_write_opts) {
			.weight = o->weight, .title = o->title, .icicle = o->icicle,
			.min_width = o->min_width, .color_by = o->color_by,
			.command_line = o->command_line, .full_paths = o->full_paths,
			.labels = o->labels, .comments = o->comments,
		};
	r = profile_write(internal_format(f), p->p, &wo, out);
	if (r == -ENOENT)
		return lib_fail(r, "the profile has no event '%s'", wo.weight ? wo.weight : "");
	if (r == -EINVAL && wo.labels && internal_format(f) == PROFILE_PPROF)
		return lib_fail(r, "a pprof label needs a key (not empty, not 'thread_id') and a value");
	return r < 0 ? lib_fail_errno(r, "cannot write the %s profile", profile_format_name(
					      internal_format(f))) : 0;
}

int hwspy_profile_write_file(const struct hwspy_profile *p, enum hwspy_format f,
			     const struct hwspy_write_opts *o, const char *path)
{
	struct outfile out = { 0 };
	int r;

	lib_reason_clear();
	r = outfile_open(&out, path);
	if (r < 0)
		return lib_fail_errno(r, "cannot write '%s'", path);
	r = hwspy_profile_write(p, f, o, out.f);
	if (r < 0) {
		outfile_abort(&out);
		return r;
	}
	r = outfile_commit(&out);
	return r < 0 ? lib_fail_errno(r, "cannot write '%s'", path) : 0;
}

uint64_t hwspy_profile_total(const struct hwspy_profile *p, size_t col)
{
	return profile_total(p->p, col);
}

int hwspy_color_check(const struct hwspy_profile *p, const char *metric,
		      struct hwspy_color_error *err)
{
	struct svg_metric_error e = { 0 };
	int r = svg_color_check(p ? p->p : NULL, metric, &e);

	*err = (struct hwspy_color_error) { .why = e.why, .at = e.at, .len = e.len };
	return r;
}

/* A folded file's counts: one event, "samples", of no known unit. */
static bool plain_counts(const struct profile *p)
{
	return profile_n_events(p) == 1 && !strcmp(profile_event(p, 0)->name, "samples");
}

int hwspy_profile_diff(const struct hwspy_profile *before, const struct hwspy_profile *after,
		       const struct hwspy_diff_opts *o, struct hwspy_profile **ret)
{
	struct diff_opts d = { .ignore_lines = o && o->ignore_lines, .raw = o && o->raw,
			       .exact_paths = o && o->exact_paths };
	struct profile *m;
	int r;

	lib_reason_clear();
	*ret = NULL;
	r = diff_merge(before->p, after->p, &d, &m);
	if (r == -ENOENT)
		return lib_fail(r, "no event to compare");
	if (r < 0)
		return lib_fail_errno(r, "cannot compare the profiles");
	*ret = malloc(sizeof(**ret));
	if (!*ret) {
		profile_free(m);
		return lib_fail(-ENOMEM, "out of memory");
	}
	**ret = (struct hwspy_profile) { .p = m, .owned = true,
					 .plain = { plain_counts(before->p), plain_counts(after->p) } };
	return 0;
}

size_t hwspy_diff_n_events(const struct hwspy_profile *merged)
{
	return diff_n_events(merged->p);
}

int hwspy_diff_common(const struct hwspy_profile *merged, size_t e, double *ret_before,
		      double *ret_after)
{
	int r;

	lib_reason_clear();
	r = diff_common(merged->p, e, ret_before, ret_after);
	return r < 0 ? lib_fail_errno(r, "cannot compare the profiles") : 0;
}

int hwspy_diff_write(const struct hwspy_profile *merged, const struct hwspy_diff_write_opts *o,
		     FILE *out)
{
	struct diff_opts d = { .ignore_lines = o->diff.ignore_lines, .raw = o->diff.raw,
			       .native_offsets = o->diff.native_offsets,
			       .exact_paths = o->diff.exact_paths };
	struct diff_side sides[2] = { { o->before_name, o->before_ns, merged->plain[0] },
				      { o->after_name, o->after_ns, merged->plain[1] } };
	struct svg_opts so = {
		.column = diff_before_col(o->event),
		.title = o->title ? o->title : "Differential Flame Graph",
		.icicle = o->icicle, .min_width_px = o->min_width, .diff = true,
		.diff_raw = o->diff.raw, .negate = o->negate, .diff_sides = sides,
		.full_paths = o->full_paths,
	};
	int r;

	lib_reason_clear();
	switch (o->format) {
	case HWSPY_DIFF_SVG:
		r = svg_write(merged->p, &so, out);
		break;
	case HWSPY_DIFF_FOLDED:
		r = diff_folded_write(merged->p, o->event, &d, out);
		break;
	case HWSPY_DIFF_TABLE:
	default:
		r = diff_table_write(merged->p, &sides[0], &sides[1], &d, o->top, out);
		break;
	}
	return r < 0 ? lib_fail_errno(r, "cannot write the difference") : 0;
}

int hwspy_profile_pprof_limit(const struct hwspy_profile *p, struct hwspy_pprof_limit *ret)
{
	*ret = (struct hwspy_pprof_limit) { .limit = INT64_MAX };
	if (pprof_over_limit(p->p, &ret->col, &ret->value, &ret->sum) == 0)
		return -ENOENT;
	ret->event = ret->col ? profile_event(p->p, ret->col - 1)->name : "samples";
	return 0;
}

/* ---- hwspy diff's two files ---- */

static int diff_problem(struct hwspy_diff_files *d, enum hwspy_diff_problem what, int side,
			int r)
{
	d->problem = what;
	d->side = side;
	d->error = r;
	return r;
}

int hwspy_diff_files_read(const char *const paths[2], const struct hwspy_diff_opts *o,
			  struct hwspy_diff_files *ret)
{
	struct hwspy_profile_meta meta;
	int r;

	*ret = (struct hwspy_diff_files) { .problem = HWSPY_DIFF_COMPARABLE };
	for (int s = 0; s < 2; s++) {
		r = hwspy_profile_load(paths[s], &ret->in[s]);
		if (r < 0)
			return diff_problem(ret, HWSPY_DIFF_UNREADABLE, s, r);
		if (profile_n_stacks(ret->in[s]->p) == 0 || profile_total(ret->in[s]->p, 0) == 0)
			return diff_problem(ret, HWSPY_DIFF_EMPTY, s,
					    lib_fail(-ENODATA, "'%s' holds no samples", paths[s]));
		hwspy_profile_meta(ret->in[s], &meta);
		ret->duration_ns[s] = meta.duration_ns;
		/* the graph's subtitle and the table name the files */
		(void) hwspy_profile_set_target(ret->in[s], paths[s]);
	}
	r = hwspy_profile_diff(ret->in[0], ret->in[1], o, &ret->merged);
	if (r < 0)
		return diff_problem(ret, r == -ENOENT ? HWSPY_DIFF_NOTHING_SHARED : HWSPY_DIFF_FAILED,
				    0, r);
	return 0;
}

int hwspy_diff_files_check(struct hwspy_diff_files *d, bool force)
{
	const struct profile *m = d->merged->p;

	lib_reason_clear();
	(void) diff_problem(d, HWSPY_DIFF_COMPARABLE, 0, 0);
	for (size_t e = 0; e < diff_n_events(m); e++) {
		bool zero_before = profile_total(m, diff_before_col(e)) == 0;
		int r;

		d->event = e;
		if (zero_before || profile_total(m, diff_after_col(e)) == 0)
			return diff_problem(d, HWSPY_DIFF_ZERO, zero_before ? 0 : 1,
					    lib_fail(-EDOM, "'%s' is 0 on one side",
						     profile_event(m, 2 * e)->name));
		r = diff_common(m, e, &d->common[0], &d->common[1]);
		if (r < 0)
			return diff_problem(d, HWSPY_DIFF_FAILED, 0,
					    lib_fail_errno(r, "cannot compare the profiles"));
		if (d->common[0] < HWSPY_DIFF_MIN_COMMON && d->common[1] < HWSPY_DIFF_MIN_COMMON &&
		    !force)
			return diff_problem(d, HWSPY_DIFF_UNRELATED, 0,
					    lib_fail(-EDOM, "the profiles have almost nothing in "
						     "common"));
	}
	return 0;
}

void hwspy_diff_files_release(struct hwspy_diff_files *d)
{
	hwspy_profile_free(d->merged);
	hwspy_profile_free(d->in[0]);
	hwspy_profile_free(d->in[1]);
	*d = (struct hwspy_diff_files) { 0 };
}

bool hwspy_diff_compares(const struct hwspy_profile *merged, const struct hwspy_profile *side,
			 size_t e)
{
	if (plain_counts(side->p))
		return true;    /* a folded file's counts: paired */
	for (size_t k = 0; k < diff_n_events(merged->p); k++)
		if (profile_find_event(side->p, profile_event(merged->p, 2 * k)->name) == (int) e)
			return true;
	return false;
}

int hwspy_diff_find_event(const struct hwspy_profile *merged, const char *name)
{
	if (!name)
		return 0;
	for (size_t e = 0; e < diff_n_events(merged->p); e++) {
		const char *n = profile_event(merged->p, 2 * e)->name;
		size_t len = strcspn(n, ":");

		if (!strcmp(n, name) || (strlen(name) == len && !strncmp(n, name, len)))
			return (int) e;
	}
	return -ENOENT;
}

int hwspy_diff_format_parse(const char *name, enum hwspy_diff_format *ret)
{
	lib_reason_clear();
	if (!strcmp(name, "table") || !strcmp(name, "txt"))
		*ret = HWSPY_DIFF_TABLE;
	else if (!strcmp(name, "svg"))
		*ret = HWSPY_DIFF_SVG;
	else if (!strcmp(name, "folded"))
		*ret = HWSPY_DIFF_FOLDED;
	else
		return lib_fail(-EINVAL, "unknown diff format '%s': table, svg or folded", name);
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

enum hwspy_diff_format hwspy_diff_format_of_path(const char *path)
{
	if (ends_with(path, ".svg"))
		return HWSPY_DIFF_SVG;
	if (ends_with(path, ".folded") || ends_with(path, ".collapsed"))
		return HWSPY_DIFF_FOLDED;
	return HWSPY_DIFF_TABLE;
}

void hwspy_output_default(pid_t pid, enum hwspy_format f, char *buf, size_t size)
{
	static const char *const ext[] = {
		[HWSPY_FORMAT_FOLDED] = "folded", [HWSPY_FORMAT_SPEEDSCOPE] = "speedscope.json",
		[HWSPY_FORMAT_SVG] = "svg", [HWSPY_FORMAT_PPROF] = "pb.gz",
	};

	snprintf(buf, size, "hwspy-%d.%s", (int) pid, ext[f <= HWSPY_FORMAT_PPROF ? f : 0]);
}

/* A side's total of the event named name (a folded file's unnamed counts stand for it): 0, or
 * -ENOENT. */
static int side_total(const struct hwspy_profile *p, const char *name, uint64_t *ret)
{
	int i = profile_find_event(p->p, name);

	if (i < 0 && profile_n_events(p->p) == 1 && !strcmp(profile_event(p->p, 0)->name, "samples"))
		i = 0;
	if (i < 0)
		return -ENOENT;
	*ret = hwspy_profile_total(p, (size_t) i + 1);
	return 0;
}

int hwspy_diff_totals_words(const struct hwspy_diff_files *d, size_t e, char *buf, size_t size)
{
	const char *name = d->merged ? hwspy_profile_event(d->merged, 2 * e) : NULL;
	uint64_t total[2];
	char side[2][32];
	bool time;

	if (!name || side_total(d->in[0], name, &total[0]) < 0 ||
	    side_total(d->in[1], name, &total[1]) < 0 || !total[0])
		return -ENOENT;
	time = profile_event_is_time(name);
	snprintf(buf, size, "%s %s -> %s, %+.0f%%", strcmp(name, "samples") ? name : "total",
		 in_unit(total[0], time, side[0], sizeof(side[0])),
		 in_unit(total[1], time, side[1], sizeof(side[1])),
		 100.0 * ((double) total[1] - (double) total[0]) / (double) total[0]);
	return 0;
}
