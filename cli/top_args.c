/*
 * top_args: the command line of hwspy top (top.h). The options it shares with record are
 * parsed and checked by record's own code (record_number_option(), record_parse_events()), so
 * top accepts and refuses exactly what record does for them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/top.h"

#define TOP_ONCE_SECONDS 2.0            /* --once samples this long without -d */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwspy top [OPTIONS] -p PID\n"
		"       hwspy top [OPTIONS] -- COMMAND [ARGS...]\n\n"
		"Shows, live, the Python functions that take the most of a perf event (self and\n"
		"total share, one column per further event and per derived ratio), refreshed every\n"
		"second.\n\n"
		"  -p, --pid PID          attach to a running process (all threads, and new ones)\n"
		"  -e, --event EV[,EV]    the event that samples (default: cycles, or cpu-clock\n"
		"                         without a hardware PMU), then events counted with it\n"
		"  -F, --rate HZ          samples per second per thread (default 100)\n"
		"  -c, --period N         one sample every N events instead\n"
		"  -d, --duration SECS    stop after SECS (--once: sample this long, default 2)\n"
		"      --once             sample, then print one snapshot of the table as text\n"
		"      --native           native frames' rows too ('n' hides and shows them)\n"
		"      --nonblocking      never stop the target; read stacks just after the sample\n"
		"      --ptrace           exact mode by stopping each sampled thread (ptrace)\n"
		"      --stop-budget PCT  the most of a thread's time the stops may take\n"
		"      --grace SECS       a launched command's time to end after SIGINT, then SIGTERM\n"
		"      --keep-running     leave a launched command running when top quits\n"
		"  -h, --help             this text\n\n"
		"Keys: q quit, s/t sort by self/total, < > move the sort column, T next thread,\n"
		"z zero the counts, n native rows (--native), h or ? the keys.\n\n"
		"Exit status: 0 (quit, or the target exited), 2 for a usage error (standard output\n"
		"not a terminal without --once), 1 when it failed or, with --once, took no sample.\n");
}

/* An option of top's own, or one it shares with record: 1 stored, 0 not one, -EINVAL, 2 help. */
static int top_option(struct top_args *a, int c, const char *arg)
{
	struct record_args *o = &a->rec;
	int r = record_number_option(o, c, arg);

	if (r != 0)
		return r;
	switch (c) {
	case 'e':
		r = record_parse_events(o, arg);
		return r < 0 ? r : 1;
	case 'O':
		a->once = true;
		return 1;
	case 'N':
		o->native = true;
		return 1;
	case 'n':
		o->nonblocking = true;
		return 1;
	case 'P':
		o->ptrace = true;
		return 1;
	case 'k':
		o->keep_running = true;
		return 1;
	case 'h':
		usage(stdout);
		return 2;
	}
	return 0;
}

int top_parse_args(int argc, char **argv, struct top_args *a)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "event", required_argument, NULL, 'e' },
		{ "rate", required_argument, NULL, 'F' },
		{ "freq", required_argument, NULL, 'F' },
		{ "period", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "once", no_argument, NULL, 'O' },
		{ "native", no_argument, NULL, 'N' },
		{ "nonblocking", no_argument, NULL, 'n' },
		{ "ptrace", no_argument, NULL, 'P' },
		{ "stop-budget", required_argument, NULL, 'B' },
		{ "grace", required_argument, NULL, 'G' },
		{ "keep-running", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct record_args *o = &a->rec;
	int c, r;

	o->freq = 100;
	o->stack_size = HWSPY_DEFAULT_STACK_SIZE;
	o->grace = RECORD_GRACE_DEFAULT;
	o->function = true;     /* one row per function */
	while ((c = getopt_long(argc, argv, "+p:e:F:c:d:h", longopts, NULL)) != -1) {
		r = top_option(a, c, optarg);
		if (r == 2)
			return 1;
		if (r < 0)
			return r;
		if (r == 0) {
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		o->argv = argv + optind;
	if (a->once && !o->duration)
		o->duration = TOP_ONCE_SECONDS;
	return record_check_args(o, "top", "show");
}
