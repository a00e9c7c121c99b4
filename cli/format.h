/* format: the output options record, convert and diff share (--format, --weight, --title,
 * --icicle, --min-width, --color-by, --full-paths, into struct hwspy_write_opts), their words, and the output
 * file opened and put in place. The writers are the library's. Internal to cli/. */
#ifndef HWSPY_CLI_FORMAT_H
#define HWSPY_CLI_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "base/buf.h"
#include "base/outfile.h"
#include "cli/options.h"
#include "include/hwspy.h"

/* --format NAME ("folded", "speedscope", "svg", "pprof"): 0, or -EINVAL (logged). */
int format_parse(const char *name, enum hwspy_format *ret);
/* The events of p, every step-th of the first n, into b: "a, b" ('a', 'b' with quote). */
void format_event_list(struct buf *b, const struct hwspy_profile *p, size_t n, size_t step,
		       bool quote);
/* the options of doc/options.txt's "format" group (options.h's OPT_*) */
enum { FORMAT_OPT_WEIGHT = OPT_WEIGHT, FORMAT_OPT_TITLE = OPT_TITLE, FORMAT_OPT_ICICLE = OPT_ICICLE,
       FORMAT_OPT_MIN_WIDTH = OPT_MIN_WIDTH, FORMAT_OPT_COLOR_BY = OPT_COLOR_BY,
       FORMAT_OPT_FULL_PATHS = OPT_FULL_PATHS };

/* One of those options seen by getopt: 1 (stored), 0 if c is not one, -EINVAL (logged).
 * The value column o->weight names in p (1 + event index), or -ENOENT (logged). o->color_by
 * against p's events, then against format f written to path: 0, or -errno (logged). */
int format_opt(struct hwspy_write_opts *o, int c, const char *arg);
int format_column(const struct hwspy_write_opts *o, const struct hwspy_profile *p);
int format_color_check(const struct hwspy_write_opts *o, const struct hwspy_profile *p);
int format_color_output(const struct hwspy_write_opts *o, enum hwspy_format f, const char *path);
/* Decimal digits only (strtoull's wrap of "-5" refused), min..max, into *ret: 0 or -EINVAL. */
int cli_parse_count(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *ret);
/* The output file (base/outfile.h; "-": standard output) opened before any work, and put in
 * place: 0, or -errno (logged). */
int cli_output_open(struct outfile *o, const char *path);
int cli_output_commit(struct outfile *o);
#define format_write(f, p, o, out) hwspy_profile_write(p, f, o, out)

#endif
