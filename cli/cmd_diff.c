/* hwspy diff BEFORE AFTER: what an optimisation changed, from two folded or pprof files, as a
 * differential flame graph (.svg), `stack before after` lines (.folded) or a table (.txt). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "cli/options.h"

struct diff_args {
	const char *out_path;           /* -o, or NULL: standard output */
	const char *paths[2];           /* BEFORE, AFTER */
	struct hwspy_diff_write_opts w; /* -f (else what out_path's name says), --no-normalize,
	                                 * --ignore-lines, --exact-paths, --native-offsets, --negate,
	                                 * --top */
	struct hwspy_write_opts fo;     /* --weight, --title, --icicle, --min-width, --full-paths */
	bool force;
};

/* The command line into *a: 0, 1 after --help, or -EINVAL (said). */
static int parse_args(int argc, char **argv, struct diff_args *a)
{
	bool kind_given = false;
	unsigned long long top;
	int c;

	*a = (struct diff_args) { .w.format = HWSPY_DIFF_TABLE };
	while ((c = cli_getopt(&cli_opts_diff, argc, argv)) != -1) {
		switch (c) {
		case '?': return -EINVAL;       /* said */
		case OPT_OUTPUT: a->out_path = optarg; break;
		case OPT_NO_NORMALIZE: a->w.diff.raw = true; break;
		case OPT_IGNORE_LINES: a->w.diff.ignore_lines = true; break;
		case OPT_EXACT_PATHS: a->w.diff.exact_paths = true; break;
		case OPT_NEGATE: a->w.negate = true; break;
		case OPT_FORCE: a->force = true; break;
		case OPT_NATIVE_OFFSETS: a->w.diff.native_offsets = true; break;
		case OPT_QUIET: log_level = LOG_QUIET; break;
		case OPT_HELP: cli_help(&cli_opts_diff, stdout); return 1;
		case OPT_FORMAT:
			if (hwspy_diff_format_parse(optarg, &a->w.format) < 0) {
				log_error("unknown diff format '%s': table, svg or folded", optarg);
				return -EINVAL;
			}
			kind_given = true;
			break;
		case OPT_TOP:
			if (cli_parse_count(optarg, 1, 1000000, &top) < 0) {
				log_error("--top %s: give a number of rows, 1 or more", optarg);
				return -EINVAL;
			}
			a->w.top = (size_t) top;
			break;
		default:        /* --color-by: refused by the table (doc/options.txt) */
			if (format_opt(&a->fo, c, optarg) <= 0)
				return -EINVAL;         /* said (0: none, every option is handled) */
			break;
		}
	}
	if (optind + 2 != argc) {
		log_error("give two profiles, BEFORE and AFTER (see 'hwspy diff --help')");
		return -EINVAL;
	}
	a->paths[0] = argv[optind];
	a->paths[1] = argv[optind + 1];
	if (!strcmp(a->paths[0], "-") && !strcmp(a->paths[1], "-")) {
		log_error("only one of BEFORE and AFTER can be standard input");
		return -EINVAL;
	}
	/* full paths shown are full paths matched: /v1/app.py and /v2/app.py are two files */
	if (a->fo.full_paths)
		a->w.diff.exact_paths = a->w.full_paths = true;
	if (!kind_given && a->out_path)
		a->w.format = hwspy_diff_format_of_path(a->out_path);
	return 0;
}

/* The line for what keeps d's two files from being compared: -1. */
static int say_problem(const struct hwspy_diff_files *d, const char *const paths[2])
{
	const char *name = d->merged ? hwspy_profile_event(d->merged, 2 * d->event) : NULL;
	struct buf b;

	if (d->problem == HWSPY_DIFF_UNREADABLE)
		log_error("%s", hwspy_reason());
	else if (d->problem == HWSPY_DIFF_EMPTY)
		log_error("'%s' holds no samples: nothing to compare", paths[d->side]);
	else if (d->problem == HWSPY_DIFF_ZERO)
		log_error("%s is 0 in '%s': nothing to compare it with", name, paths[d->side]);
	else if (d->problem == HWSPY_DIFF_UNRELATED)
		log_error("'%s' and '%s' have almost nothing in common (%.1f%% and %.1f%% of "
			  "their %s is in functions both have): are they profiles of the same "
			  "program? --force compares them anyway", paths[0], paths[1],
			  100 * d->common[0], 100 * d->common[1], name);
	else if (d->problem != HWSPY_DIFF_NOTHING_SHARED)
		log_errno(d->error, "cannot compare '%s' and '%s'", paths[0], paths[1]);
	if (d->problem != HWSPY_DIFF_NOTHING_SHARED)
		return -1;
	buf_init(&b);
	for (int s = 0; s < 2; s++) {
		(void) buf_printf(&b, "%s'%s' has ", s ? " and " : "", paths[s]);
		format_event_list(&b, d->in[s], hwspy_profile_n_events(d->in[s]), 1, false);
	}
	log_error("%s: no event to compare; record both with the same -e", b.data ? b.data : "");
	buf_release(&b);
	return -1;
}

int cmd_diff(int argc, char **argv)
{
	struct hwspy_diff_files d = { 0 };
	struct outfile out = { 0 };
	struct diff_args a;
	struct buf names;
	char totals[160];
	int r = parse_args(argc, argv, &a), status = 1;

	if (r != 0)
		return r > 0 ? 0 : 2;
	/* the output's temporary file now, before reading (no -o: standard output) */
	if (cli_output_open(&out, a.out_path ? a.out_path : "-") < 0)
		return 1;
	if (hwspy_diff_files_read(a.paths, &a.w.diff, &d) < 0 && say_problem(&d, a.paths) < 0)
		goto out;
	for (int s = 0; s < 2; s++)
		for (size_t e = 0; e < hwspy_profile_n_events(d.in[s]); e++)
			if (!hwspy_diff_compares(d.merged, d.in[s], e))
				log_info("%s is only in %s: not compared",
					 hwspy_profile_event(d.in[s], e), s ? "AFTER" : "BEFORE");
	r = hwspy_diff_find_event(d.merged, a.fo.weight);
	if (r < 0) {
		buf_init(&names);
		format_event_list(&names, d.merged, hwspy_diff_n_events(d.merged), 2, false);
		log_error("--weight %s: not an event both profiles have (they share: %s)",
			  a.fo.weight, names.data ? names.data : "");
		buf_release(&names);
		goto out;
	}
	if (hwspy_diff_files_check(&d, a.force) < 0 && say_problem(&d, a.paths) < 0)
		goto out;
	a.w.event = (size_t) r;
	a.w.title = a.fo.title, a.w.icicle = a.fo.icicle, a.w.min_width = a.fo.min_width;
	a.w.before_name = a.paths[0], a.w.after_name = a.paths[1];
	a.w.before_ns = d.duration_ns[0], a.w.after_ns = d.duration_ns[1];
	if ((r = hwspy_diff_write(d.merged, &a.w, out.f)) < 0)
		log_errno(r, "cannot write '%s'", out.is_stdout ? "standard output" : a.out_path);
	else if (cli_output_commit(&out) == 0)
		status = 0;
	if (status == 0 && a.out_path && strcmp(a.out_path, "-") &&     /* not the table's stdout */
	    hwspy_diff_totals_words(&d, a.w.event, totals, sizeof(totals)) == 0)
		log_info("wrote '%s' (%s)", a.out_path, totals);
out:
	outfile_abort(&out);    /* a no-op once committed */
	hwspy_diff_files_release(&d);
	return status;
}
