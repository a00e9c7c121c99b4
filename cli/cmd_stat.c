/*
 * hwspy stat: count events on a Python process (attach with -p, or launch a command) as perf
 * stat does, and say in plain words what the counts mean (libhwspy's findings), naming the
 * Python functions behind each finding from a light sampling run beside the counters, unless
 * --no-profile. The counting, its sampling run (a launched command held at its exec while its
 * counters open), the fallbacks (told as notes), the findings and the report are libhwspy's
 * (include/hwspy.h: counting); the options, the order and the words of every message are here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/session.h"
#include "include/hwspy.h"

struct stat_run {
	struct record_args r;           /* target, duration, --grace, the sampling run's mode */
	const char *events;             /* -e LIST, NULL: the defaults */
	bool json, no_profile, explain;
	struct hwspy_count *cnt;        /* the counting and its sampling run (libhwspy) */
	struct hwspy_child child;
	char target[320];
};

/* 0, 1 after --help or --explain alone, -EINVAL (said). */
static int parse_args(int argc, char **argv, struct stat_run *a)
{
	int c;

	a->r.grace = RECORD_GRACE_DEFAULT;
	optind = 1;
	while ((c = cli_getopt(&cli_opts_stat, argc, argv)) != -1) {
		if (c == OPT_HELP)
			return cli_help(&cli_opts_stat, stdout), 1;
		if (c == OPT_JSON || c == OPT_NO_PROFILE || c == OPT_EXPLAIN)
			*(c == OPT_JSON ? &a->json : c == OPT_NO_PROFILE ? &a->no_profile :
			  &a->explain) = true;
		else if (c == OPT_EVENT)
			a->events = optarg;     /* the counting's (hwspy_count_new() checks it) */
		else if (c == '?' || record_option(&a->r, c, optarg) <= 0)
			return -EINVAL;         /* said (as record's: -p, -d, --grace ...) */
	}
	if (optind < argc)
		a->r.argv = argv + optind;
	if (a->explain && !a->r.pid && !a->r.argv)
		return hwspy_findings_explain(stdout), 1;
	return record_check_args(&a->r, "stat", "count");
}

/* After each slice of the sampling run: a Ctrl-Z lets the target go meanwhile. */
static int slice(void *ctx, struct hwspy_count *c, int r)
{
	(void) ctx;
	r = session_tstp(hwspy_count_recorder(c), r);
	if (r < 0 && r != -EBUSY)
		log_errno(r, "sampling stopped early; counting ended with it");
	return r;
}

/* The counted events (-e's, each must be an event hwspy knows, else the defaults; user space
 * only where kernel mode is refused, as perf stat does, and record) and, unless --no-profile,
 * the sampling run. 0, or the exit status (said). */
static int setup(struct stat_run *x)
{
	struct hwspy_record_opts ro;
	struct hwspy_count_opts o = {
		.events = x->events, .user_only_fallback = true, .raise_nofile = true,
		.python_names = true, .sampling = !x->no_profile,
		.sampling_mode = x->r.nonblocking ? HWSPY_RECORD_NONBLOCKING :
				 x->r.ptrace ? HWSPY_RECORD_STOPS : HWSPY_RECORD_AUTO,
		.sigchld = true, .slice_fn = slice, .full_paths = x->r.fmt.full_paths,
	};
	int r;

	x->r.target = x->target;       /* the run's notes said as record's (session.c) */
	session_record_opts(&x->r, &ro);
	o.note_fn = ro.note_fn;
	o.note_ctx = ro.note_ctx;
	if ((r = hwspy_count_new(&o, &x->cnt)) >= 0 || !x->events)
		return r >= 0 ? 0 : 1;
	if (r == -E2BIG)
		log_error("-e: at most %d events", HWSPY_COUNT_MAX_EVENTS);
	else if (r == -ENOENT)
		log_error("%s; 'hwspy list' shows the events hwspy knows", hwspy_reason());
	else if (r == -EINVAL)
		log_error("-e: '%s' is no list of events (EV[,EV...])", x->events);
	else
		log_error("out of memory");
	return r == -ENOMEM ? 1 : 2;
}

/* hwspy_count_start()'s failure r, said: -1. */
static int start_error(const struct stat_run *x, int r)
{
	enum hwspy_count_failed f = hwspy_count_failed(x->cnt);
	bool sampling = f == HWSPY_COUNT_FAILED_SAMPLING;
	pid_t pid = x->r.pid;

	if (f == HWSPY_COUNT_FAILED_MEMORY)
		log_error("out of memory");
	else if (f == HWSPY_COUNT_FAILED_MAPPINGS)
		log_errno(r, "cannot read the mappings of %s", x->target);
	else if (r == -ESRCH)
		log_error("no process with pid %d%s", pid, sampling ? " (it exited)" : "");
	else if (r == -EACCES || r == -EPERM)
		record_permission_error(x->target, pid, false);
	else if (sampling && r == -ENOENT)
		log_error("%s", hwspy_reason());        /* "event 'NAME' cannot be opened ..." */
	else if (sampling)
		record_limit_error(r, x->target);
	else if (r == -ENOENT && !x->r.argv)
		log_error("none of the events opens on this machine; 'hwspy list' shows those "
			  "that do");
	else
		log_errno(r, "cannot count events of %s", x->target);
	return -1;
}

/* Counters on the target and, unless --no-profile, the sampling run: a launched command is
 * held at its exec and counted from there. 0, or -1 (said). */
static int start(struct stat_run *x)
{
	pid_t pid = x->r.pid;
	const char *cmd = pid ? NULL : x->r.argv[0];
	int r;

	session_name(&x->r, x->target, sizeof(x->target), -1);
	r = hwspy_count_start(x->cnt, pid, pid ? NULL : x->r.argv);
	x->r.capture_held = true;     /* a capture's failure is said as sampling starts only */
	if (cmd && hwspy_count_pid(x->cnt))
		x->child = (struct hwspy_child) { .pid = hwspy_count_pid(x->cnt), .name = cmd };
	if (r < 0)
		return start_error(x, r);
	r = hwspy_count_sampling_error(x->cnt);
	if (r == -ENOENT)
		log_info("%s is not a Python process (no interpreter found): counting only, no "
			 "function named", x->target);
	else if (r < 0)
		log_info("%s runs a Python hwspy cannot read (%s): counting only, no function "
			 "named", x->target, strerror(-r));
	if (cmd)
		session_name(&x->r, x->target, sizeof(x->target), x->child.pid);
	return 0;
}

/* The report on standard output. 0, or -1 (said). */
static int report(struct stat_run *x)
{
	int r;

	if (hwspy_count_recorder(x->cnt) && hwspy_count_report(x->cnt, NULL) < 0)
		return log_error("out of memory"), -1;
	r = (x->json ? hwspy_count_write_json : hwspy_count_write_text)(x->cnt, x->target, stdout);
	if (fflush(stdout) == EOF || ferror(stdout) || r < 0) {
		if (r == -ENOMEM)
			log_error("out of memory");
		else
			log_errno(r < 0 ? r : -EIO, "cannot write the report");
		r = -1;
	}
	if (!x->json && x->explain)
		(void) hwspy_findings_explain(stdout);
	return r;
}

/* A launched command, once counting is over: ended as --grace says, or left running. */
static void end_command(struct stat_run *x)
{
	struct hwspy_count_stats cs = { 0 };

	if (!x->child.pid || x->child.ended || x->child.kept)
		return;
	(void) hwspy_count_stop(x->cnt);
	hwspy_count_stats(x->cnt, &cs);
	session_end_child(&x->r, &x->child, cs.target_exited, cs.exit_status);
}

int cmd_stat(int argc, char **argv)
{
	struct stat_run run = { 0 }, *x = &run;
	int r = parse_args(argc, argv, x), status;

	if (r)
		return r < 0 ? 2 : 0;
	if ((status = setup(x)) || (status = 1, record_check_target(&x->r) < 0))
		goto out;
	session_catch_signals();
	if (start(x) < 0)
		goto out;
	if (hwspy_count_user_only(x->cnt) && !x->r.quiet) {
		char words[64];

		log_info("counting user space only (':u'): %s lets users without CAP_PERFMON count "
			 "their own processes in user space alone, so context switches and "
			 "migrations, which happen in the kernel, are not counted; run hwspy as root "
			 "for kernel counts", record_paranoid_words(words, sizeof(words)));
	}
	/* until the duration, Ctrl-C or the target's end; then the final values, Python names */
	hwspy_count_tick(x->cnt);
	(void) hwspy_count_run(x->cnt, session_stop(), (uint64_t) (x->r.duration * 1e9));
	(void) hwspy_count_stop(x->cnt);
	session_after_run();
	end_command(x);
	if (report(x) < 0)
		goto out;
	if (x->child.pid)
		record_child_say(&x->child);
	status = x->child.pid ? hwspy_child_exit_code(&x->child) : 0;
out:
	end_command(x);
	hwspy_count_free(x->cnt);
	record_args_release(&x->r);
	return status;
}
