/*
 * hwspy stat: count events on a Python process (attach with -p, or launch a command) as perf
 * stat does, and say in plain words what the counts mean (libhwspy's findings), naming the
 * Python functions behind each finding from a light sampling run beside the counters (the
 * recorder), unless --no-profile.
 *
 * Order: every option checked; the counters opened (attach), or the command launched by the
 * recorder and its counters opened while it is stopped at its exec (record_opts.exec_fn), or,
 * --no-profile, launched by the counter itself; the recorder samples for the duration (or the
 * counter alone waits); then the counters are read, the command ended as record ends it, the
 * report written.
 *
 * The counting, the findings and the report are libhwspy's (include/hwspy.h: counting,
 * findings). The sampling run beside the counters is still the recorder's through cli/session.c
 * (record/record.h, sampler/sampler.h's events, analysis/stat.h's tally of its samples), until
 * hwspy.h's recording API takes it: it plugs into the counting as struct hwspy_count_sampling.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stat.h"             /* the sampling run's tally (stat_tally) */
#include "base/log.h"
#include "cli/cli.h"
#include "cli/args.h"
#include "cli/session.h"
#include "include/hwspy.h"
#include "output/profile.h"
#include "record/record.h"
#include "sampler/sampler.h"

#define STAT_RATE 100                   /* the sampling run's samples per second per thread */

struct stat_args {
	struct record_args r;           /* target, duration, the sampling run's options */
	const char *events;             /* -e LIST, NULL: the defaults */
	bool json, no_profile, explain;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwspy stat [OPTIONS] -p PID\n"
		"       hwspy stat [OPTIONS] -- COMMAND [ARGS...]\n"
		"       hwspy stat --explain\n\n"
		"Counts events on every thread of a Python process, as perf stat does, and says\n"
		"in plain words what the counts mean (low IPC, cache, TLB and branch misses, CPU\n"
		"left idle, context switches, page faults), naming the Python functions behind\n"
		"each finding from a light sampling run (100 samples a second) beside the counters.\n\n"
		"  -p, --pid PID          attach to a running process (all threads, and new ones)\n"
		"  -e, --event EV[,EV]    the events to count (default: those that open here among\n"
		"                         task-clock, context-switches, cpu-migrations, page-faults,\n"
		"                         minor-faults, major-faults, cycles, instructions,\n"
		"                         cache-references, cache-misses, branch-instructions,\n"
		"                         branch-misses, L1-dcache-load-misses, LLC-load-misses,\n"
		"                         dTLB-load-misses)\n"
		"  -d, --duration SECS    stop after SECS (default: when the target exits or Ctrl-C)\n"
		"      --grace SECS       a launched command still running then gets SIGINT, SIGTERM\n"
		"                         SECS later, then SIGKILL (default 5)\n"
		"      --keep-running     leave a launched command running when counting ends\n"
		"      --json             the report as one JSON object (README: its schema)\n"
		"      --no-profile       counters only: no sampling run, no function named\n"
		"      --explain          the findings' rules, thresholds and their sources\n"
		"      --nonblocking, --ptrace   how the sampling run reads stacks (as hwspy record)\n"
		"  -q, --quiet            no informational lines on standard error\n"
		"  -h, --help             this text\n\n"
		"Exit status: 2 for a usage error, 1 when nothing was counted; else, with a\n"
		"launched command, the command's own status (128+N if signal N ended it), and 0\n"
		"with -p.\n");
}

enum { OPT_JSON = 0x200, OPT_NO_PROFILE, OPT_EXPLAIN, OPT_NONBLOCKING, OPT_PTRACE, OPT_KEEP };

static int parse_one(struct stat_args *a, int c, const char *arg)
{
	/* -p, -d and --grace ('G') as record checks them */
	int r = record_number_option(&a->r, c, arg);

	if (r)
		return r < 0 ? r : 0;
	switch (c) {
	case 'e': a->events = arg; return 0;
	case OPT_KEEP: a->r.keep_running = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_NO_PROFILE: a->no_profile = true; return 0;
	case OPT_EXPLAIN: a->explain = true; return 0;
	case OPT_NONBLOCKING: a->r.nonblocking = true; return 0;
	case OPT_PTRACE: a->r.ptrace = true; return 0;
	case 'q': a->r.quiet = true; return 0;
	}
	log_error("unknown option; run 'hwspy stat --help'");
	return -EINVAL;
}

/* 0, 1 after --help, -EINVAL (said). */
static int parse_args(int argc, char **argv, struct stat_args *a)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "event", required_argument, NULL, 'e' },
		{ "duration", required_argument, NULL, 'd' },
		{ "grace", required_argument, NULL, 'G' },
		{ "keep-running", no_argument, NULL, OPT_KEEP },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "no-profile", no_argument, NULL, OPT_NO_PROFILE },
		{ "explain", no_argument, NULL, OPT_EXPLAIN },
		{ "nonblocking", no_argument, NULL, OPT_NONBLOCKING },
		{ "ptrace", no_argument, NULL, OPT_PTRACE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	a->r.grace = RECORD_GRACE_DEFAULT;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:e:d:qh", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			log_error("'%s' is not an option of hwspy stat, or lacks its value; run "
				  "'hwspy stat --help'", argv[optind - 1]);
			return -EINVAL;
		}
		if (parse_one(a, c, optarg) < 0)
			return -EINVAL;
	}
	if (optind < argc)
		a->r.argv = argv + optind;
	if (a->explain && !a->r.pid && !a->r.argv)
		return 0;
	return record_check_args(&a->r, "stat", "count");
}

/* The counted events: -e's (each must be an event hwspy knows), else the defaults; user space
 * only where kernel mode is refused, as perf stat does, and record. 0, or the exit status
 * (said). */
static int setup_events(const struct stat_args *a, struct hwspy_count **ret)
{
	struct hwspy_count_opts o = {
		.events = a->events, .user_only_fallback = true, .raise_nofile = true,
		.python_names = true,
	};
	int r = hwspy_count_new(&o, ret);

	if (r >= 0)
		return 0;
	if (!a->events)
		return 1;
	if (r == -E2BIG)
		log_error("-e: at most %d events", HWSPY_COUNT_MAX_EVENTS);
	else if (r == -ENOENT)
		log_error("%s; 'hwspy list' shows the events hwspy knows", hwspy_reason());
	else if (r == -EINVAL)
		log_error("-e: '%s' is no list of events (EV[,EV...])", a->events);
	else
		log_error("out of memory");
	return r == -ENOMEM ? 1 : 2;
}

/* Whether events name one event, ":modifiers" ignored. */
static bool same_event(const char *a, const char *b)
{
	return stat_same_event(a, b);
}

/* e counts user space alone where the counters do. */
static void user_only_event(const struct hwspy_count *c, struct event_spec *e)
{
	if (!hwspy_count_user_only(c))
		return;
	e->attr.exclude_kernel = 1;
	e->attr.exclude_hv = 1;
}

/* The sampling run's events: cycles (cpu-clock without a PMU), with the events the rules name
 * functions by that open here, each sampling on its own (record_opts.leaders: a count event at
 * its default period, a hardware one at the run's rate), so that a function is named by the
 * samples its own event took where it ran, not by counts read at the CPU's samples, which
 * credit whatever ran at the next one. */
/* The sampling run's options and events (recpath: cli/args.h's struct record_args holds no
 * internal type any more; this run moves into the library's counting, statpath's). */
struct stat_ra {
	struct record_args r;
	struct event_spec events[SAMPLER_MAX_EVENTS];
	size_t n_events;
};

static void sampling_events(const struct hwspy_count *c, struct stat_ra *r)
{
	const char *names[16];
	size_t n = 0, n_ev;
	const struct hwspy_count_event *ev = hwspy_count_events(c, &n_ev);
	struct hwspy_rule rule;

	/* the events the findings name functions by, each once */
	for (size_t i = 0; n < 16 && hwspy_finding_rule(i, &rule); i++) {
		bool seen = false;

		for (size_t k = 0; rule.by && k < n; k++)
			seen |= !strcmp(names[k], rule.by);
		if (rule.by && !seen)
			names[n++] = rule.by;
	}
	if (events_parse("cycles", &r->events[0]) < 0 ||
	    (user_only_event(c, &r->events[0]), events_probe(&r->events[0], 0) < 0)) {
		(void) events_parse("cpu-clock", &r->events[0]);
		user_only_event(c, &r->events[0]);
	}
	r->n_events = 1;
	for (size_t i = 0; i < n && r->n_events < SAMPLER_MAX_EVENTS; i++) {
		struct event_spec *e = &r->events[r->n_events];
		bool counted = false;

		for (size_t k = 0; k < n_ev; k++)
			counted |= same_event(ev[k].name, names[i]);
		if (!counted || same_event(names[i], r->events[0].name) ||
		    events_parse(names[i], e) < 0)
			continue;
		user_only_event(c, e);
		/* in user space alone a switch counts none: not a column to name functions by */
		if ((hwspy_count_user_only(c) && record_event_kernel_only(e)) || events_probe(e, 0) < 0)
			continue;
		r->r.leaders |= 1u << r->n_events;
		r->n_events++;
	}
	r->r.freq = STAT_RATE;
	r->r.function = true;
	r->r.stack_size = RECORD_DEFAULT_STACK_SIZE;
}

struct stat_run {
	struct stat_args a;
	struct hwspy_count *cnt;        /* the counting (libhwspy) */
	struct stat_ra ra;              /* the sampling run's */
	struct recorder *rec;           /* NULL: no sampling run */
	struct stat_tally tally;        /* the sampling run's samples, by event and function */
	struct record_child child;
	char target[320];
	pid_t pid;
	bool counting;                  /* the counters are open */
	int exec_error;                 /* on_exec()'s hwspy_count_start() */
};

static int counter_error(int r, const struct stat_run *x)
{
	if (r == -ESRCH)
		log_error("no process with pid %d", x->a.r.pid);
	else if (r == -EACCES || r == -EPERM)
		record_permission_error(x->target, x->a.r.pid, false);
	else if (r == -ENOENT && !x->a.r.argv)
		log_error("none of the events opens on this machine; 'hwspy list' shows those that do");
	else
		log_errno(r, "cannot count events of %s", x->target);
	return -1;
}

/* The counters of pid, or (0) of the command they launch themselves: 0 or -errno. */
static int new_counter(struct stat_run *x, pid_t pid)
{
	int r = hwspy_count_start(x->cnt, pid, pid ? NULL : x->a.r.argv);

	x->counting |= r >= 0;
	return r;
}

static int open_counter(struct stat_run *x, pid_t pid)
{
	int r = new_counter(x, pid);

	return r < 0 ? counter_error(r, x) : 0;
}

/* The launched command, stopped at its exec by the sampling run's launch: its counters open
 * now, so they count from the exec (said once recorder_start() is back). */
static void on_exec(void *ctx, pid_t pid)
{
	struct stat_run *x = ctx;

	x->exec_error = new_counter(x, pid);
}

/* The recorder of the sampling run; for an attached target that runs no Python (or one hwspy
 * cannot read), none: counting goes on alone, said. 0, or -1 (said). */
static int open_sampling(struct stat_run *x)
{
	struct stat_ra *sr = &x->ra;
	struct record_args *r = &sr->r;
	struct record_sink sink = { .sample = stat_tally_sample, .ctx = &x->tally };
	struct record_opts ro = {
		.pid = r->pid, .argv = r->argv, .events = sr->events, .n_events = sr->n_events,
		.freq = r->freq, .leaders = r->leaders,
		.mode = r->nonblocking ? RECORD_NONBLOCKING : r->ptrace ? RECORD_STOPS : RECORD_CAPTURE,
		.function = true, .stack_size = r->stack_size, .sigchld = true, .raise_nofile = true,
	};
	int k;

	/* each thread's share of its time waiting for the GIL, from the switches off the CPU:
	 * kernel samples, none in user space alone */
	ro.gil_waits = !hwspy_count_user_only(x->cnt);
	ro.exec_fn = r->argv ? on_exec : NULL;
	ro.exec_ctx = x;
	if (recorder_new(&ro, &sink, &x->rec) < 0) {
		log_error("out of memory");
		return -1;
	}
	x->tally.prof = recorder_profile(x->rec);
	x->tally.rec = x->rec;
	x->tally.events = sr->events;
	x->tally.n_events = sr->n_events;
	if (r->pid) {
		k = recorder_find_python(x->rec);
		if (k < 0 && k != -EPERM && k != -EACCES && k != -ESRCH) {
			if (k == -ENOENT)
				log_info("%s is not a Python process (no interpreter found): counting "
					 "only, no function named", x->target);
			else
				log_info("%s runs a Python hwspy cannot read (%s): counting only, no "
					 "function named", x->target, strerror(-k));
			recorder_free(x->rec);
			x->rec = NULL;
			return 0;
		}
		if (k == -EPERM || k == -EACCES) {
			record_permission_error(x->target, r->pid, false);
			return -1;
		}
		if (k == -ESRCH) {
			log_error("no process with pid %d", r->pid);
			return -1;
		}
		k = recorder_load_symbols(x->rec, !r->nonblocking && !r->ptrace);
		if (k < 0) {
			log_errno(k, "cannot read the mappings of %s", x->target);
			return -1;
		}
	}
	return 0;
}

/* record/'s fallback policy, as cli/session.c applied it before recpath (notes unsaid: the
 * sampling run of stat was quiet) */
static int start_sampling(struct stat_run *x)
{
	struct record_args *r = &x->ra.r;
	struct record_fallback f = {
		.auto_mode = !r->nonblocking && !r->ptrace,
		.mode = r->nonblocking ? RECORD_NONBLOCKING : RECORD_STOPS,
	};
	int k;

	(void) recorder_choose_mode(x->rec, &f);
	f.auto_mode = false;
	f.mode = recorder_mode(x->rec);
	k = recorder_start_fallback(x->rec, &f, x->ra.events);
	if (k >= 0)
		return 0;
	if (k == -ESRCH)
		log_error("no process with pid %d (it exited)", r->pid);
	else if (k == -EACCES || k == -EPERM)
		record_permission_error(x->target, r->pid, false);
	else
		record_limit_error(k, x->target);
	return -1;
}

/* Counters on the target and, unless --no-profile, the sampling run's events: a launched
 * command is held at its exec by the recorder and counted from there. 0, or -1 (said). */
static int start(struct stat_run *x)
{
	if (x->a.r.pid) {
		snprintf(x->target, sizeof(x->target), "pid %d", x->a.r.pid);
		if (open_counter(x, x->a.r.pid) < 0 || (x->ra.n_events && open_sampling(x) < 0))
			return -1;
		x->pid = x->a.r.pid;
		return x->rec ? start_sampling(x) : 0;
	}
	snprintf(x->target, sizeof(x->target), "'%s'", x->a.r.argv[0]);
	if (x->ra.n_events) {
		if (open_sampling(x) < 0 || start_sampling(x) < 0)
			return -1;
		x->pid = recorder_pid(x->rec);
		x->child = (struct record_child) { .pid = x->pid, .name = x->a.r.argv[0] };
		if (!x->counting)
			return counter_error(x->exec_error ? x->exec_error : -ECHILD, x);
	} else {
		if (open_counter(x, 0) < 0)
			return -1;
		x->pid = hwspy_count_pid(x->cnt);
		x->child = (struct record_child) { .pid = x->pid, .name = x->a.r.argv[0] };
	}
	snprintf(x->target, sizeof(x->target), "'%s' (pid %d)", x->a.r.argv[0], x->pid);
	return 0;
}

static int stat_slice(void *ctx, struct recorder *rec, int r)
{
	struct stat_run *x = ctx;

	hwspy_count_tick(x->cnt);
	(void) rec;
	if (r < 0 && r != -EBUSY)
		log_errno(r, "sampling stopped early; counting ended with it");
	return r;
}

/* Counts (and samples) until the duration, Ctrl-C or the target's end. */
static void run(struct stat_run *x)
{
	uint64_t duration = (uint64_t) (x->a.r.duration * 1e9);
	volatile sig_atomic_t *stop = session_stop();

	hwspy_count_tick(x->cnt);
	if (x->rec) {
		struct record_run run = {
			.stop = stop, .duration_ns = duration, .slice_fn = stat_slice, .ctx = x,
		};
		(void) recorder_run(x->rec, &run);
	} else {
		(void) hwspy_count_run(x->cnt, stop, duration);
	}
	/* the final values and, while the target is there to ask, the threads' Python names */
	(void) hwspy_count_stop(x->cnt);
	session_after_run();
}

/* A thread's name in the sampling run's profile. */
static const char *profile_name(void *ctx, pid_t tid)
{
	const struct stat_run *x = ctx;

	return profile_thread_name(recorder_profile(x->rec), (uint32_t) tid);
}

/* The functions behind event ev in the sampling run's samples (the tally's). */
static size_t functions(void *ctx, const char *ev, struct hwspy_function *ret, size_t max,
			uint64_t *ret_samples)
{
	struct stat_run *x = ctx;
	struct stat_func f[STAT_MAX_FUNCS];
	size_t n = stat_functions(&x->tally, ev, f, max < STAT_MAX_FUNCS ? max : STAT_MAX_FUNCS,
				  ret_samples);

	for (size_t i = 0; i < n; i++) {
		ret[i] = (struct hwspy_function) { .share = f[i].share, .samples = f[i].samples,
						   .tid = f[i].tid };
		snprintf(ret[i].text, sizeof(ret[i].text), "%.*s", (int) sizeof(ret[i].text) - 1,
			 f[i].text);
	}
	return n;
}

/* What the sampling run adds to the report: the threads' names, their waits for the GIL (a
 * thread's time on the CPU: the run's where its sampling event counts time, the sum of its
 * periods), the functions behind the findings. 0 or -ENOMEM. */
static int sampling_report(struct stat_run *x)
{
	const struct profile_event *e = profile_event(recorder_profile(x->rec), 0);
	bool time = e && profile_event_is_time(e->name);
	size_t n = 0;
	const struct record_gil_thread *g = recorder_gil_threads(x->rec, &n);
	struct hwspy_gil_wait *w = n ? calloc(n, sizeof(*w)) : NULL;
	struct hwspy_count_sampling s = {
		.thread_name = profile_name, .functions = functions, .ctx = x,
		.samples = recorder_stats(x->rec)->sampler->samples, .gil = w,
		/* stops are not taken at a switch */
		.gil_measured = recorder_mode(x->rec) != RECORD_STOPS,
	};
	int r;

	if (n && !w)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (g[i].gil_wait_ns)
			w[s.n_gil++] = (struct hwspy_gil_wait) {
				.tid = g[i].tid, .wait_ns = (double) g[i].gil_wait_ns,
				.cpu_ns = time ? (double) g[i].weight : -1,
			};
	r = hwspy_count_report(x->cnt, &s);
	free(w);
	return r;
}

/* The report on standard output. 0, or -1 (said). */
static int report(struct stat_run *x)
{
	int r = x->rec ? sampling_report(x) : 0;

	if (r < 0) {
		log_error("out of memory");
		return -1;
	}
	if (x->a.json)
		r = hwspy_count_write_json(x->cnt, x->target, stdout);
	else
		r = hwspy_count_write_text(x->cnt, x->target, stdout);
	if (fflush(stdout) == EOF || ferror(stdout) || r < 0) {
		if (r == -ENOMEM)
			log_error("out of memory");
		else
			log_errno(r < 0 ? r : -EIO, "cannot write the report");
		r = -1;
	}
	if (!x->a.json && x->a.explain)
		(void) hwspy_findings_explain(stdout);
	return r;
}

static void end_command(struct stat_run *x)
{
	struct hwspy_count_stats cs = { 0 };

	if (!x->child.pid || x->child.ended || x->child.kept)
		return;
	if (x->rec) {
		recorder_stop(x->rec);
		session_end_child(&x->a.r, &x->child, recorder_stats(x->rec)->sampler->target_exited,
				  recorder_stats(x->rec)->sampler->exit_status);
		return;
	}
	if (x->cnt)
		hwspy_count_stats(x->cnt, &cs);
	session_end_child(&x->a.r, &x->child, cs.target_exited, cs.exit_status);
}

int cmd_stat(int argc, char **argv)
{
	struct stat_run *x = calloc(1, sizeof(*x));
	int r, status = 1;

	if (!x) {
		log_error("out of memory");
		return 1;
	}
	r = parse_args(argc, argv, &x->a);
	if (r || (x->a.explain && !x->a.r.pid && !x->a.r.argv)) {
		if (!r)
			(void) hwspy_findings_explain(stdout);
		free(x);
		return r > 0 || !r ? 0 : 2;
	}
	/* as perf stat does, and record: kernel mode refused, user space alone */
	status = setup_events(&x->a, &x->cnt);
	if (status)
		goto out;
	status = 1;
	x->ra.r = x->a.r;
	if (!x->a.no_profile)
		sampling_events(x->cnt, &x->ra);
	if (record_check_target(&x->a.r) < 0)
		goto out;
	session_catch_signals();
	if (start(x) < 0)
		goto out;
	if (hwspy_count_user_only(x->cnt) && !x->a.r.quiet) {
		char words[64];

		log_info("counting user space only (':u'): %s lets users without CAP_PERFMON count "
			 "their own processes in user space alone, so context switches and "
			 "migrations, which happen in the kernel, are not counted; run hwspy as root "
			 "for kernel counts", record_paranoid_words(words, sizeof(words)));
	}
	run(x);
	end_command(x);
	if (report(x) < 0)
		goto out;
	if (x->child.pid)
		record_child_say(&x->child);
	status = x->child.pid ? record_child_exit_code(&x->child) : 0;
out:
	end_command(x);
	recorder_free(x->rec);
	hwspy_count_free(x->cnt);
	stat_tally_release(&x->tally);
	free(x);
	return status;
}
