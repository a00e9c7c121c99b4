/* hwspy monitor: the long-running agent (include/hwspy.h's monitor section); this file has
 * the options and the signals; the lines said are the library's. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "cli/options.h"
#include "include/hwspy.h"

#define MAX_PIDS 256
#define MAX_LABELS 16

static volatile sig_atomic_t stop_flag, hup_flag;

static void on_signal(int sig)
{
	*(sig == SIGHUP ? &hup_flag : &stop_flag) = 1;
}

struct monitor_args {
	struct hwspy_monitor_opts o;
	pid_t pids[MAX_PIDS];
	const char *labels[MAX_LABELS];
	int verbosity;                  /* -1 quiet, 0, 1 verbose */
};

/* -p's list, or an option's number (K, M, G for --max-disk) from lo to hi: -1 said. */
static int numbers(struct monitor_args *a, int c, const char *opt, unsigned long long lo,
		   unsigned long long hi, unsigned long long *ret)
{
	char buf[32], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", optarg);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if ((c == OPT_MAX_DISK ? hwspy_parse_size(t, ret) : cli_parse_count(t, lo, hi, ret)) < 0
		    || *ret < lo || (c == OPT_PID && a->o.n_pids == MAX_PIDS) ||
		    (c != OPT_PID && strchr(optarg, ','))) {
			log_error("%s '%s' is no number from %llu to %llu%s", opt, t, lo, hi,
				  c == OPT_MAX_DISK ? " (K, M, G: KiB, MiB, GiB)" : "");
			return -1;
		}
		if (c == OPT_PID)
			a->pids[a->o.n_pids++] = (pid_t) *ret;
	}
	return 0;
}

static int parse_option(struct monitor_args *a, int c)
{
	struct hwspy_monitor_opts *o = &a->o;
	unsigned long long v = 0;
	int r = 0;

	switch (c) {
	case OPT_PID: return numbers(a, c, "-p", 1, 1 << 22, &v);
	case OPT_NAME: o->name = optarg; break;
	case OPT_FULL: o->full = true; break;
	case OPT_ALL_PYTHON: o->all_python = true; break;
	case OPT_LISTEN: o->listen = strcmp(optarg, "none") ? optarg : NULL; break;
	case OPT_EVENT: o->events = optarg; break;
	case OPT_SAMPLE: o->sample = optarg; break;
	case OPT_RATE: r = numbers(a, c, "--rate", 1, 10000, &v); o->freq = v; break;
	case OPT_EVERY: r = numbers(a, c, "--every", 1, 86400, &v); o->every = (double) v; break;
	case OPT_PROFILES: o->profiles = optarg; break;
	case OPT_KEEP: r = numbers(a, c, "--keep", 1, 1000000000, &v); o->keep = v; break;
	case OPT_MAX_DISK: r = numbers(a, c, "--max-disk", 4096, 1ULL << 60, &v); o->max_disk = v; break;
	case OPT_TOP_FUNCTIONS: r = numbers(a, c, "--top-functions", 0, 16, &v); o->top_functions = v; break;
	case OPT_LABEL:
		if (o->n_labels == MAX_LABELS) {
			log_error("at most %d --label options", MAX_LABELS);
			return -1;
		}
		a->labels[o->n_labels++] = optarg;
		break;
	case OPT_QUIET: a->verbosity = -1; break;
	case OPT_VERBOSE: a->verbosity = 1; break;
	default: return -1;     /* said */
	}
	return r;
}

static int parse_args(int argc, char **argv, struct monitor_args *a)
{
	int c;

	a->o = (struct hwspy_monitor_opts) { .listen = "127.0.0.1:9712", .top_functions = 5,
					     .pids = a->pids, .labels = a->labels,
					     .raise_nofile = true };
	optind = 1;
	while ((c = cli_getopt(&cli_opts_monitor, argc, argv)) != -1) {
		if (c == OPT_HELP) {
			cli_help(&cli_opts_monitor, stdout);
			return 1;
		}
		if (parse_option(a, c) < 0)
			return -1;
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'; hwspy monitor takes -p PID, --name REGEX or "
			  "--all-python", argv[optind]);
		return -1;
	}
	if (!a->o.n_pids && !a->o.name && !a->o.all_python) {
		log_error("nothing to watch: give -p PID[,PID...], --name REGEX or --all-python");
		return -1;
	}
	if ((a->o.keep || a->o.max_disk) && !a->o.profiles) {
		log_error("--keep and --max-disk bound the profile directory: give --profiles DIR");
		return -1;
	}
	return 0;
}

static void note(void *ctx, enum hwspy_monitor_note n, pid_t pid, int err, const char *detail)
{
	const struct monitor_args *a = ctx;
	char line[600];

	if (hwspy_monitor_note_words(n, pid, err, detail, a->verbosity, line, sizeof(line)))
		log_info("%s", line);
}

int cmd_monitor(int argc, char **argv)
{
	static struct monitor_args a;
	struct sigaction sa = { .sa_handler = on_signal };
	struct hwspy_monitor *m;
	int r = parse_args(argc, argv, &a);

	if (r)
		return r < 0 ? 2 : 0;
	mallopt(M_ARENA_MAX, 2);        /* not one per recorder thread: bench/monitor.py --churn */
	a.o.note_fn = note;
	a.o.note_ctx = &a;
	if (hwspy_monitor_new(&a.o, &m) < 0) {
		log_error("%s", hwspy_reason());
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (a.verbosity >= 0 && hwspy_monitor_port(m))
		log_info("serving metrics at http://%s/metrics (port %d)", a.o.listen,
			 hwspy_monitor_port(m));
	r = hwspy_monitor_run(m, &stop_flag, &hup_flag);
	if (r < 0)
		log_error("%s", hwspy_reason());
	hwspy_monitor_free(m);
	return r < 0 ? 1 : 0;
}
