/* format: the output options record, convert and diff share (--format, --weight, --title,
 * --icicle, --min-width, --color-by, --full-paths, into struct hwspy_write_opts), their words, and the output
 * file opened and put in place. The writers are the library's. Internal to cli/. */
#ifndef HWSPY_CLI_FORMAT_H
#define HWSPY_CLI_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "base/buf.h"
#include "base/outfile.h"
#include "include/hwspy.h"

/* --format NAME ("folded", "speedscope", "svg", "pprof"): 0, or -EINVAL (logged). */
int format_parse(const char *name, enum hwspy_format *ret);
/* The events of p, every step-th of the first n, into b: "a, b" ('a', 'b' with quote). */
void format_event_list(struct buf *b, const struct hwspy_profile *p, size_t n, size_t step,
		       bool quote);
enum { FORMAT_OPT_WEIGHT = 0x100, FORMAT_OPT_TITLE, FORMAT_OPT_ICICLE, FORMAT_OPT_MIN_WIDTH,
       FORMAT_OPT_COLOR_BY, FORMAT_OPT_FULL_PATHS };
#define FORMAT_LONGOPTS \
	{ "weight", required_argument, NULL, FORMAT_OPT_WEIGHT }, \
	{ "title", required_argument, NULL, FORMAT_OPT_TITLE }, { "icicle", no_argument, NULL, \
	FORMAT_OPT_ICICLE }, { "min-width", required_argument, NULL, FORMAT_OPT_MIN_WIDTH }, \
	{ "color-by", required_argument, NULL, FORMAT_OPT_COLOR_BY }, \
	{ "full-paths", no_argument, NULL, FORMAT_OPT_FULL_PATHS }
#define FORMAT_USAGE \
	"      --weight EVENT     the event the folded file and the flame graph weigh by\n" \
	"                         (default: the first)\n" \
	"      --title TEXT       the flame graph's title\n" \
	"      --icicle           the flame graph upside down: root at the top\n" \
	"      --min-width PX     frames narrower than PX are left out of the flame graph\n" \
	"                         (default 0.1)\n" \
	"      --color-by METRIC  fill the flame graph's frames by a ratio of two events,\n" \
	"                         from each frame's own counts, yellow low to red high\n" \
	"                         (grey: under 10 samples, or a denominator of 0); widths\n" \
	"                         stay --weight's. METRIC: ipc (instructions/cycles), mpki\n" \
	"                         (1000 x MISSES/instructions, with one *-misses event) or\n" \
	"                         A/B, two events of the profile: page-faults/cpu-clock,\n" \
	"                         cache-misses/instructions, LLC-load-misses/LLC-loads ...\n" \
	"      --full-paths       the flame graph's labels with full file paths, not the\n" \
	"                         path below site-packages, the stdlib or the script's folder\n"

/* One of FORMAT_LONGOPTS seen by getopt: 1 (stored), 0 if c is not one, -EINVAL (logged).
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
