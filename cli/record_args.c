/* record_args: hwspy record's command line (args.h): its options and its help text. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/args.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwspy record [OPTIONS] -p PID\n"
		"       hwspy record [OPTIONS] -- COMMAND [ARGS...]\n\n"
		"Samples every thread of a Python process with a perf event and writes the Python\n"
		"stacks, weighted by the event, as a folded flame-graph file.\n\n"
		"  -p, --pid PID          attach to a running process (all threads, and new ones)\n"
		"  -e, --event EV[,EV]    event to sample (default: cycles, or cpu-clock without a\n"
		"                         hardware PMU); more events are counted with every sample\n"
		"  -F, --rate HZ          samples per second per thread (default 100); not for\n"
		"                         events that count occurrences (faults, switches)\n"
		"  -c, --period N         sample every N events instead of a rate; events that\n"
		"                         count occurrences always sample at a period: by default\n"
		"                         page-faults and minor-faults -c 100, context-switches\n"
		"                         -c 10, major-faults and cpu-migrations -c 1, and each\n"
		"                         sample weighs what the counter counted since the last,\n"
		"                         so totals are the faults or switches that happened\n"
		"  -d, --duration SECS    stop after SECS (default: when the target exits or Ctrl-C);\n"
		"                         a launched command still running then gets SIGTERM,\n"
		"                         SIGKILL after the grace period (exit status 0)\n"
		"      --grace SECS       that grace period (default 5; a second Ctrl-C: SIGKILL now)\n"
		"      --keep-running     leave a launched command running when sampling ends\n"
		"  -o, --output FILE      where to write the profile (default hwspy-PID.folded; -:\n"
		"                         standard output), replaced only once complete; its\n"
		"                         name picks the format: .folded / .txt, .svg (a flame\n"
		"                         graph), .speedscope.json, .pb.gz / .pprof\n"
		"      --format NAME      folded, svg, speedscope or pprof, whatever the output's\n"
		"                         name says\n"
		FORMAT_USAGE
		"      --function         one frame per function (its first line), not per line\n"
		"      --threads          a root frame per thread: [thread TID NAME]\n"
		"      --nonblocking      never stop the target; read stacks just after the sample\n"
		"      --ptrace           exact mode by stopping each sampled thread (ptrace), even\n"
		"                         where a BPF capture is allowed (it costs the target more)\n"
		"      --stop-budget PCT  the most of a thread's time the stops may take (default\n"
		"                         5, over a 1 s window); past it its samples are read\n"
		"                         late, without a stop, and counted; 100: no limit\n"
		"      --native           native frames too (DWARF unwinding of a copy of the user\n"
		"                         stack), merged with the Python frames\n"
		"      --stack-size BYTES user stack copied per sample with --native (default 32768)\n"
		"      --kernel           kernel frames at the leaf (needs root or CAP_PERFMON)\n"
		"      --off-cpu          where threads wait instead of where they run: a sample\n"
		"                         at every switch off the CPU, weighing the nanoseconds\n"
		"                         until the thread ran again, its leaf the reason:\n"
		"                         [wait: read fd 5 (pipe)], [wait: futex (lock)],\n"
		"                         [wait: GIL], [wait: sleep], [preempted] ...\n"
		"      --subprocesses     follow the processes the target starts (multiprocessing,\n"
		"                         subprocess; with -p, those it started already too),\n"
		"                         each under a root [process PID COMMAND], each with its\n"
		"                         own interpreter, or none\n"
		"      --wall             wall-clock time: cpu-clock on the CPU (-F) and --off-cpu's\n"
		"                         samples off it, both in nanoseconds, so that each\n"
		"                         thread's time adds up to the recording's length\n"
		"      --gil              only the samples whose thread held the GIL (those it\n"
		"                         is not known of are dropped too, and counted)\n"
		"  -q, --quiet            no progress line and no summary\n"
		"  -h, --help             this text\n\n"
		"'hwspy list' shows the events that work on this machine.\n\n"
		"Exit status: 2 for a usage error, 1 when no profile was written (hwspy failed, or\n"
		"took no sample: it says why); else, with a launched command, the command's own\n"
		"status (128+N if signal N ended it; 0 with --keep-running), and 0 with -p.\n");
}

/* subsys:name[:modifiers]: a tracepoint, unless subsys is an event name with modifiers */
static bool is_tracepoint_form(const char *text)
{
	const char *colon = strchr(text, ':');

	return colon && colon != text && colon[1] && !strchr(text, '/');
}

/* The one line for an event of -e that is not one. */
static void unknown_event(const char *item)
{
	const char *near[3];
	size_t k = hwspy_events_suggest(item, near, 3);
	int t = is_tracepoint_form(item) ? hwspy_tracefs_state() : 0;

	if (t < 0)
		log_error("cannot look up tracepoint '%s': %s", item, hwspy_tracefs_words(t, false));
	else if (!k && is_tracepoint_form(item))
		log_error("no tracepoint '%s' here: /sys/kernel/tracing/available_events "
			  "lists them (as subsys:name)", item);
	else if (k)
		log_error("unknown event '%s'; did you mean %s%s%s%s%s? ('hwspy list' shows all)",
			  item, near[0], k > 1 ? ", " : "", k > 1 ? near[1] : "",
			  k > 2 ? ", " : "", k > 2 ? near[2] : "");
	else
		log_error("unknown event '%s'; 'hwspy list' shows the events hwspy knows", item);
}

int record_parse_events(struct record_args *o, const char *arg)
{
	char items[HWSPY_MAX_EVENTS][96];
	int n;

	if (!o->events && hwspy_events_new(&o->events) < 0) {
		log_error("out of memory");
		return -ENOMEM;
	}
	n = hwspy_events_split(arg, items, HWSPY_MAX_EVENTS - hwspy_events_count(o->events));
	if (n == -E2BIG) {
		log_error("at most %d events at once", HWSPY_MAX_EVENTS);
		return n;
	}
	if (n < 0) {
		log_error("cannot read the event list '%s': give names separated by commas", arg);
		return n;
	}
	for (int i = 0; i < n; i++) {
		int r = hwspy_events_add(o->events, items[i]);

		if (r == -ENOENT) {
			unknown_event(items[i]);
			return r;
		}
		if (r < 0) {
			log_error("cannot parse event '%s'; 'hwspy list' shows the accepted forms", items[i]);
			return r;
		}
	}
	return 0;
}

size_t record_n_events(const struct record_args *o)
{
	return o->events ? hwspy_events_count(o->events) : 0;
}

const char *record_event_name(const struct record_args *o, size_t i)
{
	return i < record_n_events(o) ? hwspy_events_name(o->events, i) : "";
}

void record_args_release(struct record_args *o)
{
	hwspy_events_free(o->events);
	o->events = NULL;
}

#define AT(field) offsetof(struct record_args, field), sizeof(((struct record_args *) 0)->field)

/* The options of a number: what a value must be ("rate '%s' must be ..."), where it goes. */
static const struct number_option {
	int c;
	size_t at, size;
	enum { COUNT, PID, SECONDS } kind;
	unsigned long long min, max;    /* SECONDS: in milliseconds */
	const char *name, *must;
} numbers[] = {
	{ 'p', AT(pid), PID, 1, 0x7fffffff, "", " is not a process id" },
	{ 'F', AT(freq), COUNT, 1, 100000, "rate ", " must be a number of samples per second, 1-100000" },
	{ 'c', AT(period), COUNT, 1, INT64_MAX, "period ",
	  " must be a whole number of events, 1-9223372036854775807" },
	{ 'd', AT(duration), SECONDS, 1, 100000000000, "duration ",
	  " must be a number of seconds, 0.001 to 100000000" },
	{ 'G', AT(grace), SECONDS, 0, 3600000, "grace period ", " must be a number of seconds, 0 to 3600" },
	{ 'B', AT(stop_budget), COUNT, 1, 100, "stop budget ", " must be a whole percentage, 1-100" },
	{ 'S', AT(stack_size), COUNT, 1024, 65528, "stack size ", " must be a number of bytes, 1024-65528" },
};

/* arg as n takes it, into *ret (n->size bytes): 0, or -EINVAL. */
static int parse_number(const struct number_option *n, const char *arg, void *ret)
{
	unsigned long long v;
	uint32_t v32;
	char *end;
	double d;

	if (n->kind == SECONDS) {
		d = strtod(arg, &end);
		if (*end || end == arg || !(d >= n->min / 1e3 && d <= n->max / 1e3))
			return -EINVAL;
		memcpy(ret, &d, sizeof(d));
		return 0;
	}
	if (n->kind == PID) {
		long l = strtol(arg, &end, 10);

		if (*end || l < (long) n->min || l > (long) n->max)
			return -EINVAL;
		v = (unsigned long long) l;
	} else if (cli_parse_count(arg, n->min, n->max, &v) < 0) {
		return -EINVAL;
	}
	v32 = (uint32_t) v;
	memcpy(ret, n->size == sizeof(v) ? (const void *) &v : &v32, n->size);
	return 0;
}

int record_number_option(struct record_args *o, int c, const char *arg)
{
	const struct number_option *n = numbers;

	while (n < numbers + sizeof(numbers) / sizeof(numbers[0]) && n->c != c)
		n++;
	if (n == numbers + sizeof(numbers) / sizeof(numbers[0]))
		return 0;
	if (parse_number(n, arg, (char *) o + n->at) < 0) {
		log_error("%s'%s'%s", n->name, arg, n->must);
		return -EINVAL;
	}
	if (c == 'F' || c == 'c') {
		o->freq_given = c == 'F';
		*(c == 'F' ? &o->period : &o->freq) = 0;
	}
	if (c == 'S')
		o->stack_size &= ~7u;
	o->grace_given |= c == 'G';
	return 1;
}

/* The options that set a flag. */
static const struct { int c; size_t at, size; } flags[] = {
	{ 'k', AT(keep_running) }, { 'f', AT(function) }, { 't', AT(threads) },
	{ 'n', AT(nonblocking) }, { 'P', AT(ptrace) }, { 'N', AT(native) }, { 'K', AT(kernel) },
	{ 'O', AT(off_cpu) }, { 'W', AT(wall) }, { 'C', AT(subprocesses) }, { 'g', AT(gil) },
	{ 'q', AT(quiet) },
};

/* The other options: 1 if c is one (stored), 0 if not, -EINVAL (said), 2 after --help. */
static int other_option(struct record_args *o, int c, const char *arg)
{
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (flags[i].c == c)
			return *((bool *) ((char *) o + flags[i].at)) = true;
	switch (c) {
	case 'e':
		return record_parse_events(o, arg) < 0 ? -EINVAL : 1;
	case 'o':
		o->output = arg;
		return 1;
	case 'R':
		o->format_given = true;
		return format_parse(arg, &o->format) < 0 ? -EINVAL : 1;
	case 'h':
		usage(stdout);
		return 2;
	}
	return format_opt(&o->fmt, c, arg);
}

int record_check_args(const struct record_args *o, const char *command, const char *verb)
{
	if (o->pid && o->argv)
		log_error("give either -p PID or a command, not both");
	else if (!o->pid && !o->argv)
		log_error("nothing to %s: give -p PID or -- COMMAND (see 'hwspy %s --help')", verb,
			  command);
	else if (o->pid && (o->keep_running || o->grace_given))
		log_error("--%s applies to a launched command (-- COMMAND), not to -p",
			  o->keep_running ? "keep-running" : "grace");
	else if (o->nonblocking && o->ptrace)
		log_error("--ptrace and --nonblocking exclude each other");
	else if (o->subprocesses && o->ptrace)
		log_error("--subprocesses follows children through inherited events, which --ptrace "
			  "does not use: leave --ptrace out (the BPF capture) or use --nonblocking");
	/* a switch-out sample's GIL is not read: its [wait: GIL] leaf says where it waits */
	else if (o->gil && (o->off_cpu || o->wall))
		log_error("--gil keeps the samples of a CPU event whose thread held the GIL; with "
			  "--%s, the [wait: GIL] frames show the waits for it", o->off_cpu ? "off-cpu" :
			  "wall");
	else
		return 0;
	return -EINVAL;
}

int record_parse_args(int argc, char **argv, struct record_args *o)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' }, { "event", required_argument, NULL, 'e' },
		{ "rate", required_argument, NULL, 'F' }, { "freq", required_argument, NULL, 'F' },
		{ "period", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' }, { "function", no_argument, NULL, 'f' },
		{ "format", required_argument, NULL, 'R' },
		FORMAT_LONGOPTS,
		{ "threads", no_argument, NULL, 't' }, { "nonblocking", no_argument, NULL, 'n' },
		{ "ptrace", no_argument, NULL, 'P' },
		{ "stop-budget", required_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' }, { "native", no_argument, NULL, 'N' },
		{ "kernel", no_argument, NULL, 'K' }, { "off-cpu", no_argument, NULL, 'O' },
		{ "wall", no_argument, NULL, 'W' }, { "subprocesses", no_argument, NULL, 'C' },
		{ "gil", no_argument, NULL, 'g' }, { "stack-size", required_argument, NULL, 'S' },
		{ "grace", required_argument, NULL, 'G' },
		{ "keep-running", no_argument, NULL, 'k' }, { "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, r;

	o->freq = 100;
	o->stack_size = HWSPY_DEFAULT_STACK_SIZE;
	o->grace = RECORD_GRACE_DEFAULT;
	while ((c = getopt_long(argc, argv, "+p:e:F:c:d:o:qh", longopts, NULL)) != -1) {
		r = record_number_option(o, c, optarg);
		if (r == 0)
			r = other_option(o, c, optarg);
		if (r == 2)
			return 1;
		if (r < 0)
			return r;
		if (r == 0) {
			usage(stderr);
			return -EINVAL;
		}
	}
	if (o->quiet)
		log_level = LOG_QUIET;
	if (optind < argc)
		o->argv = argv + optind;
	/* --color-by A/B (ipc, mpki): each of its events samples on its own (see hwspy.h) */
	if (o->events)
		o->leaders = hwspy_events_color_leaders(o->events, o->fmt.color_by);
	return record_check_args(o, "record", "profile");
}
