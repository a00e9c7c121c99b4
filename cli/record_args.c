/* record_args: hwspy record's command line (args.h): its options (their tables and help text:
 * doc/options.txt). */
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
#include "cli/options.h"

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
	{ OPT_GRACE, AT(grace), SECONDS, 0, 3600000, "grace period ", " must be a number of seconds, 0 to 3600" },
	{ OPT_STOP_BUDGET, AT(stop_budget), COUNT, 1, 100, "stop budget ", " must be a whole percentage, 1-100" },
	{ OPT_STACK_SIZE, AT(stack_size), COUNT, 1024, 65528, "stack size ", " must be a number of bytes, 1024-65528" },
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

/* An option with a number: 1 (stored), 0 if c is none, -EINVAL (said). */
static int number_option(struct record_args *o, int c, const char *arg)
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
	if (c == OPT_STACK_SIZE)
		o->stack_size &= ~7u;
	o->grace_given |= c == OPT_GRACE;
	return 1;
}

/* The options that set a flag. */
static const struct { int c; size_t at, size; } flags[] = {
	{ OPT_KEEP_RUNNING, AT(keep_running) }, { OPT_FUNCTION, AT(function) },
	{ OPT_THREADS, AT(threads) }, { OPT_NONBLOCKING, AT(nonblocking) },
	{ OPT_PTRACE, AT(ptrace) }, { OPT_NATIVE, AT(native) }, { OPT_KERNEL, AT(kernel) },
	{ OPT_OFF_CPU, AT(off_cpu) }, { OPT_WALL, AT(wall) },
	{ OPT_SUBPROCESSES, AT(subprocesses) }, { OPT_GIL, AT(gil) }, { OPT_QUIET, AT(quiet) },
};

int record_option(struct record_args *o, int c, const char *arg)
{
	int r = number_option(o, c, arg);

	if (r)
		return r;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (flags[i].c == c)
			return *((bool *) ((char *) o + flags[i].at)) = true;
	switch (c) {
	case 'e':
		return record_parse_events(o, arg) < 0 ? -EINVAL : 1;
	case 'o':
		o->output = arg;
		return 1;
	case OPT_FORMAT:
		o->format_given = true;
		return format_parse(arg, &o->format) < 0 ? -EINVAL : 1;
	case OPT_VERBOSE:
		log_level = LOG_VERBOSE;
		return 1;
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
	int c;

	o->freq = 100;
	o->stack_size = HWSPY_DEFAULT_STACK_SIZE;
	o->grace = RECORD_GRACE_DEFAULT;
	while ((c = cli_getopt(&cli_opts_record, argc, argv)) != -1) {
		if (c == OPT_HELP)
			return cli_help(&cli_opts_record, stdout), 1;
		if (c == '?' || record_option(o, c, optarg) <= 0)
			return -EINVAL;         /* said (0: none, every option is handled) */
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
