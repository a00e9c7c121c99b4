/* format: output formats by name or by file name (see format.h). */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "cli/format.h"

static const struct {
	const char *name;
	enum out_format format;
} names[] = {
	{ "folded", FORMAT_FOLDED },
	{ "speedscope", FORMAT_SPEEDSCOPE },
	{ "svg", FORMAT_SVG },
	{ "pprof", FORMAT_PPROF },
};

int format_parse(const char *name, enum out_format *ret)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i].name)) {
			*ret = names[i].format;
			return 0;
		}
	}
	log_error("unknown format '%s'; give folded, speedscope, svg or pprof", name);
	return -EINVAL;
}

const char *format_name(enum out_format f)
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

enum out_format format_of_path(const char *path)
{
	if (ends_with(path, ".speedscope.json"))
		return FORMAT_SPEEDSCOPE;
	if (ends_with(path, ".svg"))
		return FORMAT_SVG;
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof"))
		return FORMAT_PPROF;
	return FORMAT_FOLDED;
}


int format_write(enum out_format f, const struct profile *p, size_t col, const char *command_line,
		 FILE *out)
{
	struct folded_opts fo = { .column = col };
	struct pprof_opts po = { .command_line = command_line };
	struct svg_opts so = { .column = col };

	switch (f) {
	case FORMAT_FOLDED:
		return folded_write(p, &fo, out);
	case FORMAT_SPEEDSCOPE:
		return speedscope_write(p, NULL, out);
	case FORMAT_PPROF:
		return pprof_write(p, &po, out);
	case FORMAT_SVG:
		return svg_write(p, &so, out);
	default:
		return -ENOTSUP;
	}
}
