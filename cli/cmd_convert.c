/* hwspy convert: a folded file (any collapser's) or a pprof file, told apart by content, into
 * any format hwspy writes, chosen by the output's name or --format. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "cli/options.h"

/* Says which of p's values is over pprof's limit (pprof_write()'s -EOVERFLOW). */
static void log_pprof_limit(const struct hwspy_profile *p, const char *in_path)
{
	struct hwspy_pprof_limit l;

	if (hwspy_profile_pprof_limit(p, &l) < 0)
		log_error("'%s' is over pprof's limit of %lld per value; nothing was written",
			  in_path, (long long) l.limit);
	else if (!l.sum)
		log_error("'%s' is over pprof's limit: one stack's count of '%s' is %llu, above "
			  "%lld (pprof holds 64-bit signed values); nothing was written: convert it "
			  "to folded, SVG or speedscope instead", in_path, l.event,
			  (unsigned long long) l.value, (long long) l.limit);
	else
		log_error("'%s' is over pprof's limit: the counts of '%s' add up past %lld (pprof "
			  "holds 64-bit signed values); nothing was written: convert it to folded, SVG "
			  "or speedscope instead", in_path, l.event, (long long) l.limit);
}

int cmd_convert(int argc, char **argv)
{
	const char *in_path, *out_path = NULL;
	struct hwspy_write_opts fo = { 0 };
	enum hwspy_format fmt;
	bool fmt_given = false, verbose = false;
	uint64_t t_start, t_read, t_write;
	char samples[32], stacks[32], size[32] = "", totals[160];
	struct stat st;
	struct hwspy_profile *p = NULL;
	struct outfile out = { 0 };
	int c, r, col, status = 1;

	while ((c = cli_getopt(&cli_opts_convert, argc, argv)) != -1) {
		switch (c) {
		case '?': return 2;     /* said */
		case OPT_OUTPUT: out_path = optarg; break;
		case OPT_VERBOSE: verbose = true; break;
		case OPT_QUIET: log_level = LOG_QUIET; break;
		case OPT_HELP: cli_help(&cli_opts_convert, stdout); return 0;
		case OPT_FORMAT:
			if (format_parse(optarg, &fmt) < 0)
				return 2;
			fmt_given = true;
			break;
		default:
			if (format_opt(&fo, c, optarg) <= 0)
				return 2;       /* said (0: none, every option is handled) */
			break;
		}
	}
	if (optind + 1 != argc || !out_path) {
		log_error("give one input file and -o OUTPUT (see 'hwspy convert --help')");
		return 2;
	}
	in_path = argv[optind];
	if (!fmt_given)
		fmt = hwspy_format_of_path(out_path);
	if (format_color_output(&fo, fmt, out_path) < 0)
		return 2;
	/* before the input is read: a bad -o found first; OUT, replaced whole, may even be IN */
	if (cli_output_open(&out, out_path) < 0)
		return 1;
	t_start = clock_now_ns();
	if (hwspy_profile_load(in_path, &p) < 0) {
		log_error("%s", hwspy_reason());
		goto out;
	}
	t_read = clock_now_ns();
	col = format_column(&fo, p);
	if (col < 0 || format_color_check(&fo, p) < 0)
		goto out;
	if (hwspy_profile_n_stacks(p) == 0 || hwspy_profile_total(p, (size_t) col) == 0) {
		log_error("'%s' holds no stacks with a count above 0: nothing to convert", in_path);
		goto out;
	}
	t_write = clock_now_ns();
	if ((r = format_write(fmt, p, &fo, out.f)) == 0 && fflush(out.f) != 0)
		r = -errno;
	if (r == 0 && verbose) {
		t_write = clock_now_ns() - t_write;
		if (fstat(fileno(out.f), &st) == 0 && S_ISREG(st.st_mode))    /* not /dev/stdout */
			text_size(size, sizeof(size), (uint64_t) st.st_size);
		log_info("read %s samples in %s stacks in %.2f s; wrote %s%s%s%s in %.2f s",
			 text_grouped(samples, sizeof(samples), hwspy_profile_total(p, 0)),
			 text_grouped(stacks, sizeof(stacks), hwspy_profile_n_stacks(p)),
			 (double) (t_read - t_start) / 1e9, hwspy_format_name(fmt),
			 size[0] ? " (" : "", size, size[0] ? ")" : "", (double) t_write / 1e9);
	}
	if (r == -EOVERFLOW && fmt == HWSPY_FORMAT_PPROF) {
		log_pprof_limit(p, in_path);
		goto out;
	}
	if (r < 0)
		log_errno(r, "cannot write '%s'", out_path);
	else if (cli_output_commit(&out) == 0)
		status = 0;
	if (status == 0 && hwspy_profile_totals_words(p, (size_t) col, totals, sizeof(totals)) >= 0)
		log_info("wrote %s%s%s (%s)", out.is_stdout ? "to standard output" : "'",
			 out.is_stdout ? "" : out_path, out.is_stdout ? "" : "'", totals);
out:
	outfile_abort(&out);    /* a no-op once committed */
	hwspy_profile_free(p);
	return status;
}
