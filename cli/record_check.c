/*
 * record_check: what the sampling commands check before they open, attach or write anything
 * (see args.h): libhwspy's hwspy_record_check() and hwspy_record_check_target() decide (the
 * default event, off-CPU's and wall's events, a count event's period, what the machine
 * refuses); their refusals are said here.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

#include "base/log.h"
#include "cli/args.h"

/* A refused event, and the events that work here. */
static void event_refused(const struct record_args *o, const struct hwspy_record_check *c)
{
	const char *names[8], *name = record_event_name(o, c->event);
	size_t n = hwspy_events_working(names, 8);
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i < n; i++)
		(void) buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
	if (c->fail == HWSPY_CHECK_EVENT_NO_PMU)
		log_error("event '%s' needs a hardware PMU, and this machine exposes none "
			  "(a VM?); events that work here: %s", name, b.data);
	else if (c->fail == HWSPY_CHECK_EVENT_UNSUPPORTED)
		log_error("event '%s' is not supported on this machine; events that work "
			  "here: %s", name, b.data);
	else
		log_errno(c->err, "cannot open event '%s'", name);
	buf_release(&b);
}

static void said(const struct record_args *o, const struct hwspy_record_check *c)
{
	const char *e0 = record_event_name(o, 0);

	switch (c->fail) {
	case HWSPY_CHECK_OFF_CPU_EVENTS:
		log_error("--off-cpu samples every context switch and weighs it by the time the "
			  "thread waited: leave -e out (or profile the events on the CPU in a run of "
			  "their own)");
		break;
	case HWSPY_CHECK_OFF_CPU_RATE:
		log_error("--off-cpu takes every switch: -F and -c do not apply to it");
		break;
	case HWSPY_CHECK_WALL_OFF_CPU:
		log_error("--wall already holds --off-cpu's samples (and the CPU's): give one of them");
		break;
	case HWSPY_CHECK_WALL_EVENTS:
		log_error("--wall samples cpu-clock and every switch off the CPU, both in "
			  "nanoseconds: leave -e and -c out (-F sets the rate on the CPU)");
		break;
	case HWSPY_CHECK_WALL_STOPS:
		log_error("--wall samples threads as they go to sleep: --ptrace would stop them "
			  "there and interrupt their system calls; leave --ptrace out (the BPF "
			  "capture) or use --nonblocking");
		break;
	case HWSPY_CHECK_USER_KERNEL_ONLY:
		log_error("'%s' counts nothing: %s happens in the kernel, which ':u' leaves out; "
			  "leave ':u' out", e0, c->migrations ? "a migration" : "a switch");
		break;
	case HWSPY_CHECK_COUNT_RATE:
		log_error("'%s' counts occurrences: -F would let the kernel size its periods from "
			  "bursts and stall on them; give a period instead, '-c N' (its default, "
			  "-c %" PRIu64 ", needs neither)", e0, c->period);
		break;
	case HWSPY_CHECK_STOPS_ASLEEP:
		log_error("'%s' samples threads as they go to sleep: --ptrace would stop them there "
			  "and interrupt their system calls; leave --ptrace out (the BPF capture) or "
			  "use --nonblocking", e0);
		break;
	case HWSPY_CHECK_EVENT_NO_PMU:
	case HWSPY_CHECK_EVENT_UNSUPPORTED:
	case HWSPY_CHECK_EVENT_FAILED:
		event_refused(o, c);
		break;
	case HWSPY_CHECK_KERNEL_REFUSED:
		record_kernel_refused(o, c->migrations);
		break;
	case HWSPY_CHECK_NO_PROCESS:
		log_error("no process with pid %d", o->pid);
		break;
	case HWSPY_CHECK_KERNEL_THREAD:
		log_error("pid %d is a kernel thread, not a Python process", o->pid);
		break;
	case HWSPY_CHECK_COMMAND:
		log_errno(c->err, "cannot run '%s'", o->argv[0]);
		break;
	case HWSPY_CHECK_OK:
	case HWSPY_CHECK_NO_EVENT:
		break;
	}
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
	ro = (struct hwspy_record_opts) {
		.pid = o->pid, .argv = o->argv, .freq = o->freq, .period = o->period,
		.mode = o->nonblocking ? HWSPY_RECORD_NONBLOCKING : o->ptrace ? HWSPY_RECORD_STOPS :
			HWSPY_RECORD_AUTO,
		.off_cpu = o->off_cpu, .wall = o->wall,
	};
	r = hwspy_record_check(&ro, o->events, o->freq_given, &c);
	if (c.default_cpu_clock && !o->quiet)
		log_info("no hardware PMU on this machine: sampling 'cpu-clock' (choose with -e)");
	o->freq = ro.freq;
	o->period = ro.period;
	if (r >= 0)
		return 0;
	said(o, &c);
	return c.usage ? 2 : 1;
}

int record_check_target(const struct record_args *o)
{
	struct hwspy_record_opts ro = { .pid = o->pid, .argv = o->argv };
	struct hwspy_record_check c;

	if (hwspy_record_check_target(&ro, &c) >= 0)
		return 0;
	said(o, &c);
	return -1;
}
