/*
 * profile.c: the profiles and outputs section of hwspy.h over output/: a profile handle (the
 * caller's, from a file, or a recorder's), loading any format (profile_load()), writing any
 * (profile_write(), into a file put in place whole through base/outfile.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/outfile.h"
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
			.command_line = o->command_line,
		};
	r = profile_write(internal_format(f), p->p, &wo, out);
	if (r == -ENOENT)
		return lib_fail(r, "the profile has no event '%s'", wo.weight ? wo.weight : "");
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

int hwspy_profile_diff(const struct hwspy_profile *before, const struct hwspy_profile *after,
		       const struct hwspy_diff_opts *o, struct hwspy_profile **ret)
{
	struct diff_opts d = { .ignore_lines = o && o->ignore_lines, .raw = o && o->raw };
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
	**ret = (struct hwspy_profile) { .p = m, .owned = true };
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
	struct diff_opts d = { .ignore_lines = o->diff.ignore_lines, .raw = o->diff.raw };
	struct diff_side sides[2] = { { o->before_name, o->before_ns },
				      { o->after_name, o->after_ns } };
	struct svg_opts so = {
		.column = diff_before_col(o->event),
		.title = o->title ? o->title : "Differential Flame Graph",
		.icicle = o->icicle, .min_width_px = o->min_width, .diff = true,
		.diff_raw = o->diff.raw, .negate = o->negate,
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
