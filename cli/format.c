/* format: the output options and the output file, in words (see format.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "cli/format.h"

int format_parse(const char *name, enum hwspy_format *ret)
{
	/* py-spy's names (its -f) for the same formats */
	int r = hwspy_format_parse(!strcmp(name, "flamegraph") ? "svg" : !strcmp(name, "raw") ?
				   "folded" : name, ret);

	if (r < 0)
		log_error("unknown format '%s'; give folded, speedscope, svg or pprof", name);
	return r;
}

void format_event_list(struct buf *b, const struct hwspy_profile *p, size_t n, size_t step,
		       bool quote)
{
	const char *q = quote ? "'" : "";

	for (size_t e = 0; e < n; e++)
		(void) buf_printf(b, "%s%s%s%s", e ? ", " : "", q, hwspy_profile_event(p, step * e), q);
}

/* One line on what is wrong with --color-by's metric (p: its events named): -ENOENT, or -EINVAL. */
static int color_error(const char *metric, const struct hwspy_color_error *err,
		       const struct hwspy_profile *p)
{
	struct buf have;

	buf_init(&have);
	if (p)
		format_event_list(&have, p, hwspy_profile_n_events(p), 1, true);
	if (err->len)
		log_error("--color-by '%s': the profile has no event '%.*s'; it has %s", metric,
			  (int) err->len, metric + err->at, have.len ? have.data : "none");
	else if (p)
		log_error("--color-by '%s' %s; the profile has %s", metric, err->why,
			  have.len ? have.data : "no events");
	else
		log_error("--color-by '%s' %s; give ipc, mpki or EVENT/EVENT (e.g. "
			  "cache-misses/instructions)", metric, err->why);
	buf_release(&have);
	return p ? -ENOENT : -EINVAL;
}

int format_opt(struct hwspy_write_opts *o, int c, const char *arg)
{
	struct hwspy_color_error err;
	char *end;

	switch (c) {
	case FORMAT_OPT_WEIGHT: o->weight = arg; return 1;
	case FORMAT_OPT_TITLE: o->title = arg; return 1;
	case FORMAT_OPT_ICICLE: o->icicle = true; return 1;
	case FORMAT_OPT_FULL_PATHS: o->full_paths = true; return 1;
	case FORMAT_OPT_COLOR_BY:
		o->color_by = arg;
		return hwspy_color_check(NULL, arg, &err) < 0 ? color_error(arg, &err, NULL) : 1;
	case FORMAT_OPT_MIN_WIDTH:
		o->min_width = strtod(arg, &end);
		if (*end || end == arg || !(o->min_width >= 0 && o->min_width <= 1e6)) {
			log_error("--min-width takes a width in pixels (e.g. 0.5), not '%s'", arg);
			return -EINVAL;
		}
		return 1;
	default:
		return 0;
	}
}

int format_column(const struct hwspy_write_opts *o, const struct hwspy_profile *p)
{
	struct buf have;
	int i;

	if (!o->weight)
		return 1;
	i = hwspy_profile_find_event(p, o->weight);
	if (i >= 0)
		return i + 1;
	buf_init(&have);
	format_event_list(&have, p, hwspy_profile_n_events(p), 1, true);
	log_error("--weight: the profile has no event '%s'; it has %s", o->weight,
		  have.len ? have.data : "none");
	buf_release(&have);
	return -ENOENT;
}

int format_color_check(const struct hwspy_write_opts *o, const struct hwspy_profile *p)
{
	struct hwspy_color_error err;

	if (!o->color_by || hwspy_color_check(p, o->color_by, &err) == 0)
		return 0;
	return color_error(o->color_by, &err, p);
}

int format_color_output(const struct hwspy_write_opts *o, enum hwspy_format f, const char *path)
{
	if (!o->color_by || f == HWSPY_FORMAT_SVG)
		return 0;
	if (!strcmp(path, "-"))
		path = "standard output";
	log_error("--color-by colours a flame graph, and '%s' is written as %s; give an .svg "
		  "output (or --format svg), or leave --color-by out", path, hwspy_format_name(f));
	return -EINVAL;
}

int cli_parse_count(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *ret)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int cli_output_open(struct outfile *o, const char *path)
{
	int r = outfile_open(o, path);

	if (r == -EISDIR)
		log_error("cannot write '%s': it is a directory; give -o a file name", path);
	else if (r == -ENOENT)
		log_error("cannot write '%s': its directory does not exist", path);
	else if (r == -EBADF && outfile_is_stdout(path))
		log_error("cannot write to standard output: it is closed; give -o a file name");
	else if (r == -EBADF)
		log_error("cannot write '%s': it names a file descriptor that is not open for writing "
			  "(standard output closed with '>&-'?); give -o a file name", path);
	else if (r == -ENOLINK)
		log_error("cannot write '%s': a directory on its path is a symbolic link owned by "
			  "another user (not root, not you), which hwspy does not follow; give the "
			  "directory's real path", path);
	else if (r == -EACCES || r == -EPERM || r == -EROFS)
		log_errno(r, "cannot write '%s': no new file can be created in its directory", path);
	else if (r < 0)
		log_errno(r, "cannot write '%s'", path);
	return r;
}

int cli_output_commit(struct outfile *o)
{
	const char *path = o->is_stdout ? "standard output" : o->path;
	int r = outfile_commit(o);

	if (r == -EEXIST)
		log_error("cannot write '%s': something that is not a regular file appeared there "
			  "while hwspy ran (a directory, device or link of root's or yours), and hwspy "
			  "does not replace it; nothing was written", path);
	else if (r < 0)
		log_errno(r, "cannot write '%s'", path);
	return r;
}
