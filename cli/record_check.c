/*
 * record_check: what hwspy record checks before it opens, attaches or writes anything (see
 * record.h): the events (the default one, whether each opens here, a count event's period, one
 * that samples threads as they go to sleep, one that happens in the kernel alone where kernel mode
 * is refused), the target (it exists, it is no kernel thread, the command can be run), and the
 * user-space-only retry of the events.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "include/hwspy.h"
#include "cli/record.h"

/* The names of the events that open here, for a message. */
static void working_events(struct buf *out)
{
	size_t n;
	const struct event_info *tab = events_table(&n);
	int shown = 0;

	for (size_t i = 0; i < n && shown < 8; i++) {
		struct event_spec spec;
		if (tab[i].kind != EVENT_SOFTWARE || events_parse(tab[i].name, &spec) < 0 ||
		    events_probe(&spec, 0) < 0)
			continue;
		(void) buf_printf(out, "%s%s", shown ? ", " : "", tab[i].name);
		shown++;
	}
}

static int check_events(struct record_args *o)
{
	for (size_t i = 0; i < o->n_events; i++) {
		int r = events_probe(&o->events[i], 0);
		struct buf b;

		if (r >= 0 || r == -EACCES || r == -EPERM)
			continue;
		buf_init(&b);
		working_events(&b);
		if (r == -ENOENT || r == -EOPNOTSUPP) {
			if ((o->events[i].kind == EVENT_HARDWARE || o->events[i].kind == EVENT_HW_CACHE ||
			     o->events[i].kind == EVENT_RAW) && !events_have_hw_pmu())
				log_error("event '%s' needs a hardware PMU, and this machine exposes none "
					  "(a VM?); events that work here: %s", o->events[i].name, b.data);
			else
				log_error("event '%s' is not supported on this machine; events that work "
					  "here: %s", o->events[i].name, b.data);
		} else {
			log_errno(r, "cannot open event '%s'", o->events[i].name);
		}
		buf_release(&b);
		return r;
	}
	return 0;
}

/* Whether the sampling event can overflow while its thread sleeps in a system call (a switch
 * out, a scheduler tracepoint): a stop there would wake the call early, and epoll_wait, recv
 * with a timeout, sigtimedwait ... would return EINTR in the target. Exact mode by stops is
 * refused for such an event; a clock or fault event overflows only while its thread runs. */
bool record_samples_asleep(const struct event_spec *e)
{
	return record_event_samples_asleep(e);
}

bool record_kernel_only(const struct event_spec *e)
{
	return record_event_kernel_only(e);
}

/* Samples of what happens in the kernel alone (--off-cpu's and --wall's switches, a sampled
 * context-switches or cpu-migrations), where kernel mode is refused (perf_event_paranoid >= 2
 * without CAP_PERFMON, tried on hwspy itself, as the target's own user would be): said before
 * anything is attached, rather than a user-space-only run that samples nothing. 0, or the
 * exit status (said). */
static int kernel_events(const struct record_args *o)
{
	const struct event_spec *e = &o->events[0];
	struct event_spec probe;
	int r;

	if (o->off_cpu || o->wall) {
		if (events_parse("context-switches", &probe) < 0)
			return 0;
	} else if (record_kernel_only(e) && e->attr.exclude_kernel) {
		log_error("'%s' counts nothing: %s happens in the kernel, which ':u' leaves out; "
			  "leave ':u' out", e->name,
			  e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS ? "a migration" : "a switch");
		return 2;
	} else if (record_kernel_only(e)) {
		probe = *e;
	} else {
		return 0;
	}
	r = events_probe(&probe, 0);
	if (r != -EACCES && r != -EPERM)
		return 0;
	record_kernel_refused(o);
	return 1;
}

/* A count event (faults, switches) samples at a fixed period: its own default where no -c was
 * given; -F is refused (the kernel's rate control sizes periods from bursts and stalls on
 * them, and the totals come out wrong). */
static int count_event_period(struct record_args *o)
{
	uint64_t period = events_default_period(&o->events[0].attr);

	if (!period || !o->freq)
		return 0;
	if (o->freq_given) {
		log_error("'%s' counts occurrences: -F would let the kernel size its periods from "
			  "bursts and stall on them; give a period instead, '-c N' (its default, "
			  "-c %" PRIu64 ", needs neither)", o->events[0].name, period);
		return -EINVAL;
	}
	o->freq = 0;
	o->period = period;
	return 0;
}

static int default_event(struct record_args *o)
{
	struct event_spec *e = &o->events[0];

	if (events_parse("cycles", e) == 0 && events_probe(e, 0) == 0) {
		o->n_events = 1;
		return 0;
	}
	if (events_parse("cpu-clock", e) < 0)
		return -ENOENT;
	o->n_events = 1;
	if (!o->quiet)
		log_info("no hardware PMU on this machine: sampling 'cpu-clock' (choose with -e)");
	return 0;
}

/* Sets exclude_kernel and exclude_hv on every event that counts kernel mode; false if none did. */
bool record_user_only(struct record_args *o)
{
	return record_events_user_only(o->events, o->n_events);
}

/* 0 if argv0 names an executable (as execvp would find it), else -errno. */
static int find_command(const char *argv0)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(argv0, '/'))
		return access(argv0, X_OK) == 0 ? 0 : -errno;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		if (len && len + strlen(argv0) + 2 <= sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int) len, path, argv0);
			if (access(buf, X_OK) == 0)
				return 0;
		}
		path += len + (path[len] == ':');
	}
	return -ENOENT;
}

/* Every option checked, before anything is opened, attached or written: 0, or the exit status. */
/* --off-cpu: a sample at every switch-out (context-switches, period 1), nothing else sampled */
static int off_cpu_event(struct record_args *o)
{
	if (o->n_events) {
		log_error("--off-cpu samples every context switch and weighs it by the time the "
			  "thread waited: leave -e out (or profile the events on the CPU in a run of "
			  "their own)");
		return -EINVAL;
	}
	if (o->freq_given || o->period) {
		log_error("--off-cpu takes every switch: -F and -c do not apply to it");
		return -EINVAL;
	}
	if (events_parse("context-switches", &o->events[0]) < 0)
		return -ENOENT;
	o->n_events = 1;
	o->freq = 0;
	o->period = 1;
	return 0;
}

/* --wall: cpu-clock at the rate asked, and every switch off the CPU */
static int wall_event(struct record_args *o)
{
	if (o->off_cpu) {
		log_error("--wall already holds --off-cpu's samples (and the CPU's): give one of them");
		return -EINVAL;
	}
	if (o->n_events || o->period) {
		log_error("--wall samples cpu-clock and every switch off the CPU, both in "
			  "nanoseconds: leave -e and -c out (-F sets the rate on the CPU)");
		return -EINVAL;
	}
	if (o->ptrace) {
		log_error("--wall samples threads as they go to sleep: --ptrace would stop them "
			  "there and interrupt their system calls; leave --ptrace out (the BPF "
			  "capture) or use --nonblocking");
		return -EINVAL;
	}
	if (events_parse("cpu-clock", &o->events[0]) < 0)
		return -ENOENT;
	o->n_events = 1;
	return 0;
}

int record_check_options(struct record_args *o)
{
	int r;

	if (o->wall && wall_event(o) < 0)
		return 2;
	if (o->off_cpu && off_cpu_event(o) < 0)
		return 2;
	if (!o->n_events && default_event(o) < 0)
		return 1;
	if (check_events(o) < 0)
		return 1;
	r = kernel_events(o);
	if (r)
		return r;
	if (!o->off_cpu && count_event_period(o) < 0)
		return 2;
	if (o->ptrace && record_samples_asleep(&o->events[0])) {
		log_error("'%s' samples threads as they go to sleep: --ptrace would stop them there "
			  "and interrupt their system calls; leave --ptrace out (the BPF capture) or "
			  "use --nonblocking", o->events[0].name);
		return 2;
	}
	return 0;
}

/* The target exists (attach) or the command can be run (launch): 0, or -1 (said). */
int record_check_target(const struct record_args *o)
{
	int r;

	if (o->pid) {
		if (kill(o->pid, 0) < 0 && errno == ESRCH) {
			log_error("no process with pid %d", o->pid);
			return -1;
		}
		if (hwspy_kernel_thread(o->pid) == 1) {
			log_error("pid %d is a kernel thread, not a Python process", o->pid);
			return -1;
		}
		return 0;
	}
	r = find_command(o->argv[0]);
	if (r < 0) {
		log_errno(r, "cannot run '%s'", o->argv[0]);
		return -1;
	}
	return 0;
}
