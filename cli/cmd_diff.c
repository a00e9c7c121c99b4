/*
 * hwspy diff BEFORE AFTER: what an optimisation changed. Inputs are folded files (hwspy's, perf +
 * stackcollapse, py-spy, austin) or hwspy's pprof; the output is a differential flame graph
 * (.svg), `stack before after` lines (.folded) or a table of the functions that changed most
 * (.txt, or standard output).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "cli/load.h"

/* BEFORE and AFTER of shared event e in a merged profile: its columns */
static size_t before_col(size_t e)
{
	return 1 + 2 * e;
}

static size_t after_col(size_t e)
{
	return 2 + 2 * e;
}

/* What each side is: its name (file), duration (0: unknown). */
struct diff_side {
	const char *name;
	uint64_t duration_ns;
};

/* Below this share of common weight on both sides the profiles are of unrelated programs. */
#define MIN_COMMON 0.05


static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwspy diff BEFORE AFTER [-o OUT] [OPTIONS]\n\n"
		"Compares two profiles of one program, before and after a change. BEFORE and AFTER\n"
		"are folded files (hwspy, perf + stackcollapse-perf.pl, py-spy, austin) or hwspy's\n"
		"pprof files (.pb.gz); events are compared by name, each shared one.\n\n"
		"  -o, --output FILE   .svg: a differential flame graph (widths from AFTER, red grew,\n"
		"                      blue shrank); .folded: 'stack before after' lines, as\n"
		"                      FlameGraph's difffolded.pl writes; .txt or no -o: a table of\n"
		"                      the functions whose share changed most, per event; - or\n"
		"                      no -o: standard output. FILE is replaced once complete\n"
		"  -f, --format NAME   table, svg or folded, whatever OUT's name says\n"
		"      --no-normalize  compare raw counts (equal work on both sides), not each\n"
		"                      profile's shares of its own total\n"
		"      --ignore-lines  match Python frames by function and file, not line: for an\n"
		"                      edit that moved code in the file\n"
		"      --negate        flame graph of BEFORE's widths, coloured by what happened to\n"
		"                      them (code that went away shows)\n"
		"      --top N         rows per event in the table (default 20)\n"
		"      --force         compare profiles that have almost nothing in common\n"
		"      --weight EVENT  the event the flame graph and the folded lines show (default:\n"
		"                      the first shared)\n"
		"      --title TEXT, --icicle, --min-width PX   as for 'hwspy convert'\n"
		"  -h, --help          this text\n");
}

static int parse_out(const char *name, enum hwspy_diff_format *ret)
{
	if (!strcmp(name, "table") || !strcmp(name, "txt"))
		*ret = HWSPY_DIFF_TABLE;
	else if (!strcmp(name, "svg"))
		*ret = HWSPY_DIFF_SVG;
	else if (!strcmp(name, "folded"))
		*ret = HWSPY_DIFF_FOLDED;
	else {
		log_error("unknown diff format '%s': table, svg or folded", name);
		return -EINVAL;
	}
	return 0;
}

static enum hwspy_diff_format out_of_path(const char *path)
{
	size_t n = strlen(path);

	if (n >= 4 && !strcmp(path + n - 4, ".svg"))
		return HWSPY_DIFF_SVG;
	if ((n >= 7 && !strcmp(path + n - 7, ".folded")) ||
	    (n >= 10 && !strcmp(path + n - 10, ".collapsed")))
		return HWSPY_DIFF_FOLDED;
	return HWSPY_DIFF_TABLE;
}

/* The shared event a --weight name picks: its index, or -ENOENT (logged). */
static int pick_event(const struct hwspy_profile *m, const char *weight)
{
	struct buf names;

	if (!weight)
		return 0;
	for (size_t e = 0; e < hwspy_diff_n_events(m); e++) {
		const char *n = hwspy_profile_event(m, 2 * e);
		size_t len = strcspn(n, ":");

		if (!strcmp(n, weight) || (strlen(weight) == len && !strncmp(n, weight, len)))
			return (int) e;
	}
	buf_init(&names);
	for (size_t e = 0; e < hwspy_diff_n_events(m); e++)
		(void) buf_printf(&names, "%s%s", e ? ", " : "", hwspy_profile_event(m, 2 * e));
	log_error("--weight %s: not an event both profiles have (they share: %s)", weight,
		  names.data ? names.data : "");
	buf_release(&names);
	return -ENOENT;
}

/* Notes the events of p that are not compared (in no pair of the merged profile m). */
static void note_unshared(const struct hwspy_profile *p, const struct hwspy_profile *m, const char *side)
{
	if (hwspy_profile_n_events(p) == 1 && !strcmp(hwspy_profile_event(p, 0), "samples"))
		return;         /* a folded file's counts: paired */
	for (size_t e = 0; e < hwspy_profile_n_events(p); e++) {
		const char *n = hwspy_profile_event(p, e);
		bool compared = false;

		for (size_t k = 0; k < hwspy_diff_n_events(m) && !compared; k++)
			compared = hwspy_profile_find_event(p, hwspy_profile_event(m, 2 * k)) == (int) e;
		if (!compared)
			log_info("%s is only in %s: not compared", n, side);
	}
}

static void event_list(const struct hwspy_profile *p, struct buf *b)
{
	for (size_t e = 0; e < hwspy_profile_n_events(p); e++)
		(void) buf_printf(b, "%s%s", e ? ", " : "", hwspy_profile_event(p, e));
}

static int write_out(enum hwspy_diff_format kind, const struct hwspy_profile *m, size_t event,
		     const struct hwspy_diff_opts *dopts, const struct format_opts *fo, bool negate,
		     size_t top, const struct diff_side *sides, FILE *out)
{
	struct hwspy_diff_write_opts o = {
		.format = kind, .event = event, .diff = *dopts, .title = fo->title,
		.icicle = fo->icicle, .negate = negate, .min_width = fo->min_width, .top = top,
		.before_name = sides[0].name, .after_name = sides[1].name,
		.before_ns = sides[0].duration_ns, .after_ns = sides[1].duration_ns,
	};

	return hwspy_diff_write(m, &o, out);
}

/* What the command line asks for. */
struct diff_args {
	const char *out_path;           /* -o, or NULL: standard output */
	const char *paths[2];           /* BEFORE, AFTER */
	enum hwspy_diff_format kind;             /* -f, else what out_path's name says */
	struct hwspy_diff_opts dopts;
	struct format_opts fo;
	bool negate, force;
	unsigned long long top;         /* 0: the default */
};

/* Parses the command line into *a: 0, 1 when --help was written (exit 0), or -EINVAL after
 * one line (or the usage) was written to stderr (exit 2). */
static int parse_args(int argc, char **argv, struct diff_args *a)
{
	enum { OPT_NO_NORMALIZE = 0x200, OPT_IGNORE_LINES, OPT_NEGATE, OPT_TOP, OPT_FORCE };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "no-normalize", no_argument, NULL, OPT_NO_NORMALIZE },
		{ "ignore-lines", no_argument, NULL, OPT_IGNORE_LINES },
		{ "negate", no_argument, NULL, OPT_NEGATE },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "force", no_argument, NULL, OPT_FORCE },
		FORMAT_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	bool kind_given = false;
	int c, r;

	*a = (struct diff_args) { .kind = HWSPY_DIFF_TABLE };
	while ((c = getopt_long(argc, argv, "o:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->out_path = optarg;
			break;
		case 'f':
			if (parse_out(optarg, &a->kind) < 0)
				return -EINVAL;
			kind_given = true;
			break;
		case OPT_NO_NORMALIZE:
			a->dopts.raw = true;
			break;
		case OPT_IGNORE_LINES:
			a->dopts.ignore_lines = true;
			break;
		case OPT_NEGATE:
			a->negate = true;
			break;
		case OPT_FORCE:
			a->force = true;
			break;
		case OPT_TOP:
			if (cli_parse_count(optarg, 1, 1000000, &a->top) < 0) {
				log_error("--top %s: give a number of rows, 1 or more", optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		case FORMAT_OPT_COLOR_BY:
			log_error("--color-by does not go with hwspy diff: its flame graph is coloured "
				  "by the change (red grew, blue shrank)");
			return -EINVAL;
		default:
			r = format_opt(&a->fo, c, optarg);
			if (r < 0)
				return -EINVAL;
			if (r == 0) {
				usage(stderr);
				return -EINVAL;
			}
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
	if (!kind_given && a->out_path)
		a->kind = out_of_path(a->out_path);
	return 0;
}

/* Reads BEFORE and AFTER into in[] (owned by the caller, also on failure) and says what each
 * side is in sides[]: 0, or -1 after one line was logged (unreadable, or no samples). */
static int load_sides(const char *const paths[2], struct hwspy_profile *in[2],
		      struct diff_side sides[2])
{
	struct hwspy_profile_meta meta;

	for (int s = 0; s < 2; s++) {
		in[s] = load_profile(paths[s]);
		if (!in[s])
			return -1;
		if (hwspy_profile_n_stacks(in[s]) == 0 || hwspy_profile_total(in[s], 0) == 0) {
			log_error("'%s' holds no samples: nothing to compare", paths[s]);
			return -1;
		}
		hwspy_profile_meta(in[s], &meta);
		sides[s] = (struct diff_side) { paths[s], meta.duration_ns };
		(void) hwspy_profile_set_target(in[s], paths[s]);     /* the graph's subtitle names the files */
	}
	return 0;
}

/* diff_merge() of the two sides into *ret: 0, or -errno after one line was logged (with each
 * side's events when they share none). */
static int merge_sides(const char *const paths[2], struct hwspy_profile *const in[2],
		       const struct hwspy_diff_opts *dopts, struct hwspy_profile **ret)
{
	int r = hwspy_profile_diff(in[0], in[1], dopts, ret);

	if (r == -ENOENT) {
		struct buf b;

		buf_init(&b);
		(void) buf_printf(&b, "'%s' has ", paths[0]);
		event_list(in[0], &b);
		(void) buf_printf(&b, " and '%s' has ", paths[1]);
		event_list(in[1], &b);
		log_error("%s: no event to compare; record both with the same -e",
			  b.data ? b.data : "");
		buf_release(&b);
		return r;
	}
	if (r < 0)
		log_errno(r, "cannot compare '%s' and '%s'", paths[0], paths[1]);
	return r;
}

/* Whether every shared event of m can be compared: weight on both sides, and (unless force)
 * enough of it in functions both sides have. 0, or -1 after one line was logged. */
static int check_comparable(const struct hwspy_profile *m, const char *const paths[2], bool force)
{
	for (size_t e = 0; e < hwspy_diff_n_events(m); e++) {
		const char *name = hwspy_profile_event(m, 2 * e);
		double cb, ca;
		int r;

		if (hwspy_profile_total(m, before_col(e)) == 0 ||
		    hwspy_profile_total(m, after_col(e)) == 0) {
			log_error("%s is 0 in '%s': nothing to compare it with", name,
				  hwspy_profile_total(m, before_col(e)) ? paths[1] : paths[0]);
			return -1;
		}
		r = hwspy_diff_common(m, e, &cb, &ca);
		if (r < 0) {
			log_errno(r, "cannot compare '%s' and '%s'", paths[0], paths[1]);
			return -1;
		}
		if (cb < MIN_COMMON && ca < MIN_COMMON && !force) {
			log_error("'%s' and '%s' have almost nothing in common (%.1f%% and %.1f%% of "
				  "their %s is in functions both have): are they profiles of the same "
				  "program? --force compares them anyway", paths[0], paths[1],
				  100 * cb, 100 * ca, name);
			return -1;
		}
	}
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct hwspy_profile *in[2] = { NULL, NULL }, *m = NULL;
	struct diff_side sides[2];
	struct outfile out = { 0 };
	struct diff_args a;
	int r, ev, status = 1;

	r = parse_args(argc, argv, &a);
	if (r != 0)
		return r > 0 ? 0 : 2;
	/* the output's temporary file now, before reading (no -o: standard output) */
	if (cli_output_open(&out, a.out_path ? a.out_path : "-") < 0)
		return 1;

	if (load_sides(a.paths, in, sides) < 0 || merge_sides(a.paths, in, &a.dopts, &m) < 0)
		goto out;
	note_unshared(in[0], m, "BEFORE");
	note_unshared(in[1], m, "AFTER");
	ev = pick_event(m, a.fo.weight);
	if (ev < 0 || check_comparable(m, a.paths, a.force) < 0)
		goto out;

	r = write_out(a.kind, m, (size_t) ev, &a.dopts, &a.fo, a.negate, (size_t) a.top, sides,
		      out.f);
	if (r < 0) {
		log_errno(r, "cannot write '%s'", out.is_stdout ? "standard output" : a.out_path);
		goto out;
	}
	if (cli_output_commit(&out) < 0)
		goto out;
	status = 0;
out:
	outfile_abort(&out);    /* a no-op once committed */
	hwspy_profile_free(m);
	hwspy_profile_free(in[0]);
	hwspy_profile_free(in[1]);
	return status;
}
