/* hwspy dump: the current stack of every thread of a Python process (and, --subprocesses, of
 * its tree), once, like py-spy dump. The snapshot and its text and JSON are the library's; this
 * file has the options and the messages. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/outfile.h"
#include "cli/cli.h"
#include "cli/args.h"
#include "cli/options.h"
#include "include/hwspy.h"

struct dump_opts {
	pid_t pid;
	bool json;
	const char *output;
	struct hwspy_snapshot_opts so;          /* --native, --nonblocking, --subprocesses,
	                                         * --full-paths */
};

static int parse_args(int argc, char **argv, struct dump_opts *o)
{
	unsigned long long v;
	int c;

	*o = (struct dump_opts) { .output = "-", .so.hold_signals = true };
	optind = 1;
	while ((c = cli_getopt(&cli_opts_dump, argc, argv)) != -1) {
		switch (c) {
		case OPT_NATIVE: o->so.native = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_NONBLOCKING: o->so.nonblocking = true; break;
		case OPT_SUBPROCESSES: o->so.subprocesses = true; break;
		case OPT_FULL_PATHS: o->so.full_paths = true; break;
		case OPT_PID:
			if (cli_parse_count(optarg, 1, 1 << 22, &v) < 0) {
				log_error("'%s' is no process id; give -p PID", optarg);
				return -1;
			}
			o->pid = (pid_t) v;
			break;
		case OPT_OUTPUT: o->output = optarg; break;
		case OPT_HELP: cli_help(&cli_opts_dump, stdout); return 1;
		default: return -1;     /* said */
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'; hwspy dump takes -p PID", argv[optind]);
		return -1;
	}
	if (!o->pid) {
		log_error("no process given; run 'hwspy dump -p PID'");
		return -1;
	}
	if (o->so.native && o->so.nonblocking) {
		log_error("--native unwinds each running thread's stack while it is stopped: "
			  "drop --nonblocking to have native frames");
		return -1;
	}
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	const struct hwspy_snapshot_process *p;
	struct hwspy_snapshot *snap;
	struct dump_opts o;
	struct outfile out;
	size_t n;
	int r = parse_args(argc, argv, &o);

	if (r)
		return r < 0 ? 2 : 0;
	if (cli_output_open(&out, o.output) < 0)
		return 1;
	r = hwspy_snapshot_new(o.pid, &o.so, &snap);
	if (r < 0) {
		log_error("%s", hwspy_reason());
		outfile_abort(&out);
		return 1;
	}
	n = hwspy_snapshot_processes(snap, &p);
	r = p[0].error;         /* the target itself unread: said, nothing written */
	for (size_t i = 0; i < (r ? 1 : n); i++) {
		struct hwspy_line l[RECORD_LINES];

		if (!i || p[i].failed != HWSPY_SNAPSHOT_FAILED_TARGET)    /* a child's: its reason */
			record_say(l, hwspy_snapshot_lines(&p[i], l, RECORD_LINES), true);
	}
	if (!r)
		(void) (o.json ? hwspy_snapshot_write_json : hwspy_snapshot_write_text)(snap, out.f);
	hwspy_snapshot_free(snap);
	if (r)
		outfile_abort(&out);
	return r || cli_output_commit(&out) < 0 ? 1 : 0;
}
