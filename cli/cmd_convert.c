/*
 * hwspy convert: a folded file (hwspy's own, perf script | stackcollapse-perf.pl, py-spy raw,
 * FlameGraph's other collapsers) or a pprof file (hwspy's own, Go's, pprof's ...), told apart by
 * content (cli/load.h), into any format hwspy writes, chosen by the output's name or --format.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "cli/load.h"
#include "output/profile.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwspy convert IN -o OUT [--format FORMAT]\n\n"
		"Reads IN, a folded file ('frame;frame;...;leaf COUNT' lines from hwspy, perf +\n"
		"stackcollapse-perf.pl or py-spy) or a pprof profile (.pb.gz: hwspy's, Go's ...),\n"
		"whichever its content is (- reads standard input), and writes OUT.\n\n"
		"  -o, --output FILE   where to write; its name picks the format: .folded / .txt,\n"
		"                      .svg, .speedscope.json, .pb.gz / .pprof\n"
		"  -f, --format NAME   folded, svg, speedscope or pprof, whatever OUT's name says\n"
		FORMAT_USAGE
		"  -h, --help          this text\n");
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		FORMAT_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in_path, *out_path = NULL;
	struct format_opts fo = { 0 };
	enum out_format fmt;
	bool fmt_given = false;
	struct profile *p = NULL;
	FILE *out = NULL;
	int c, r, col, status = 1;

	while ((c = getopt_long(argc, argv, "o:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out_path = optarg;
			break;
		case 'f':
			if (format_parse(optarg, &fmt) < 0)
				return 2;
			fmt_given = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			r = format_opt(&fo, c, optarg);
			if (r < 0)
				return 2;
			if (r == 0) {
				usage(stderr);
				return 2;
			}
			break;
		}
	}
	if (optind + 1 != argc || !out_path) {
		log_error("give one input file and -o OUTPUT (see 'hwspy convert --help')");
		return 2;
	}
	in_path = argv[optind];
	if (!fmt_given)
		fmt = format_of_path(out_path);
	p = load_profile(in_path);
	if (!p)
		goto out;
	col = format_column(&fo, p);
	if (col < 0)
		goto out;
	if (profile_n_stacks(p) == 0 || profile_total(p, (size_t) col) == 0) {
		log_error("'%s' holds no stacks with a count above 0: nothing to convert", in_path);
		goto out;
	}
	out = fopen(out_path, "we");
	if (!out) {
		log_errno(-errno, "cannot write '%s'", out_path);
		goto out;
	}
	r = format_write(fmt, p, &fo, out);
	if (r == 0 && fflush(out) != 0)
		r = -errno;
	if (r < 0) {
		log_errno(r, "cannot write '%s'", out_path);
		(void) fclose(out);
		out = NULL;
		(void) unlink(out_path);
		goto out;
	}
	status = 0;
out:
	if (out && fclose(out) != 0 && status == 0) {
		log_errno(-errno, "cannot write '%s'", out_path);
		status = 1;
	}
	profile_free(p);
	return status;
}
