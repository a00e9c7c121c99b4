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
	char *end;
	long v;
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
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v <= 0 || v > (1 << 22)) {
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

/* The one line for the target dump cannot read (its first process); 1. */
static int target_error(const struct hwspy_snapshot_process *p)
{
	char what[300];
	int r = p->error;

	hwspy_pid_name(p->pid, what, sizeof(what));    /* "pid 12 (/usr/bin/sleep)" */
	if (r == -ESRCH)
		log_error("no process with pid %d", (int) p->pid);
	else if (r == -EPERM || r == -EACCES)
		record_permission_error(what, p->pid, false);
	else if (r == -ENOENT)
		log_error("%s is not a Python process (no libpython or _PyRuntime found); hwspy "
			  "dump reads Python stacks", what);
	else if (r == -ENOTSUP)
		log_error("%s runs unsupported Python %s; hwspy supports 3.8-3.14", what,
			  p->python_version[0] ? p->python_version : "(unknown version)");
	else if (r == -EBADMSG)
		log_error("cannot read the Python frames of %s: %s", what, p->python_error);
	else
		log_errno(r, "cannot read the Python interpreter of %s", what);
	return 1;
}

/* The line for a stop or a read that failed (a child's too); 1. */
static int read_error(const struct hwspy_snapshot_process *p)
{
	if (p->failed == HWSPY_SNAPSHOT_FAILED_READ)
		log_errno(p->error, "cannot dump pid %d", (int) p->pid);
	else if (p->error == -EPERM && p->tracer)
		log_error("cannot stop the running threads of pid %d: it is traced by pid %d (a "
			  "debugger or profiler); add --nonblocking to read them without a stop",
			  (int) p->pid, (int) p->tracer);
	else if (p->error == -EPERM)
		log_error("cannot stop the running threads of pid %d: ptrace refused (Yama "
			  "ptrace_scope or no CAP_SYS_PTRACE); add --nonblocking to read them without "
			  "a stop", (int) p->pid);
	else
		log_errno(p->error, "cannot stop the threads of pid %d", (int) p->pid);
	return 1;
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
	if (r && p[0].failed == HWSPY_SNAPSHOT_FAILED_TARGET)
		target_error(&p[0]);
	for (size_t i = 0; i < (r ? 1 : n); i++) {
		if (p[i].error && p[i].failed != HWSPY_SNAPSHOT_FAILED_TARGET)
			read_error(&p[i]);
		if (!r && p[i].native_error)
			log_errno(p[i].native_error, "cannot read the mappings of pid %d: no native "
				  "frames", (int) p[i].pid);
	}
	if (!r)
		(void) (o.json ? hwspy_snapshot_write_json : hwspy_snapshot_write_text)(snap, out.f);
	hwspy_snapshot_free(snap);
	if (r)
		outfile_abort(&out);
	return r || cli_output_commit(&out) < 0 ? 1 : 0;
}
