/* record_check: the sampling commands' checks before anything is opened (args.h): libhwspy's
 * hwspy_record_check*() decide; their refusals are said here (hwspy_check_lines()). */
#include "base/log.h"
#include "cli/session.h"

static void said(const struct record_args *o, const struct hwspy_record_opts *ro,
		 const struct hwspy_record_check *c)
{
	struct hwspy_line l[RECORD_LINES * 2];

	record_say(l, hwspy_check_lines(c, ro, o->events, l, RECORD_LINES * 2), true);
}

int record_check_options(struct record_args *o)
{
	struct hwspy_record_opts ro;
	struct hwspy_record_check c;
	int r;

	if (!o->events && hwspy_events_new(&o->events) < 0) {
		log_error("out of memory");
		return 1;
	}
	session_record_opts(o, &ro);
	r = hwspy_record_check(&ro, o->events, o->freq_given, &c);
	if (c.default_cpu_clock && !o->quiet)
		log_debug("no hardware PMU on this machine: sampling 'cpu-clock' (choose with -e)");
	o->freq = ro.freq;
	o->period = ro.period;
	if (r >= 0)
		return 0;
	said(o, &ro, &c);
	return c.usage ? 2 : 1;
}

int record_check_target(const struct record_args *o)
{
	struct hwspy_record_opts ro;
	struct hwspy_record_check c;

	session_record_opts(o, &ro);
	if (hwspy_record_check_target(&ro, &c) >= 0)
		return 0;
	said(o, &ro, &c);
	return -1;
}
