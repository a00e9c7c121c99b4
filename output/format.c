/*
 * format: which writer a profile goes to, by the format's name or by the output file's name,
 * and the writing itself (see output.h, "format.c").
 */
#include <errno.h>
#include <string.h>

#include "output/output.h"

static const struct {
	const char *name;
	enum profile_format format;
} names[] = {
	{ "folded", PROFILE_FOLDED },
	{ "speedscope", PROFILE_SPEEDSCOPE },
	{ "svg", PROFILE_SVG },
	{ "pprof", PROFILE_PPROF },
};

int profile_format_parse(const char *name, enum profile_format *ret)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i].name)) {
			*ret = names[i].format;
			return 0;
		}
	}
	return -EINVAL;
}

const char *profile_format_name(enum profile_format f)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].format == f)
			return names[i].name;
	return "?";
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

enum profile_format profile_format_of_path(const char *path)
{
	if (ends_with(path, ".speedscope.json"))
		return PROFILE_SPEEDSCOPE;
	if (ends_with(path, ".svg"))
		return PROFILE_SVG;
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof"))
		return PROFILE_PPROF;
	return PROFILE_FOLDED;
}

int profile_write(enum profile_format f, const struct profile *p,
		  const struct profile_write_opts *o, FILE *out)
{
	static const struct profile_write_opts none;
	int col;
	struct folded_opts fo;
	struct pprof_opts po;
	struct svg_opts so;

	if (!o)
		o = &none;
	col = o->weight ? profile_find_event(p, o->weight) + 1 : 1;
	if (col < 1)
		return -ENOENT;
	po = (struct pprof_opts) { .command_line = o->command_line, .labels = o->labels,
				   .comments = o->comments };
	so = (struct svg_opts) { .title = o->title, .icicle = o->icicle,
				 .min_width_px = o->min_width, .color_by = o->color_by,
				 .column = (size_t) col, .full_paths = o->full_paths };
	fo = (struct folded_opts) { .column = (size_t) col, .header = true };

	switch (f) {
	case PROFILE_FOLDED:
		return folded_write(p, &fo, out);
	case PROFILE_SPEEDSCOPE:
		return speedscope_write(p, NULL, out);
	case PROFILE_PPROF:
		return pprof_write(p, &po, out);
	case PROFILE_SVG:
		return svg_write(p, &so, out);
	default:
		return -ENOTSUP;
	}
}
