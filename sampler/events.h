/*
 * events: event names -> struct perf_event_attr, exactly as perf itself encodes them (events.c;
 * the sysfs and tracefs forms, pmu/.../ and subsys:name, in pmu.c), their table for `hwspy
 * list`, and what the machine has (PMUs, tracefs). Nothing here opens an event for long:
 * events_probe() opens one and closes it again. The sampler (sampler.h) and counting (count.h)
 * take the struct event_spec made here.
 *
 * Errors are negative errno values: -ENOENT an unknown name (or a PMU or tracepoint this
 * machine does not have), -EINVAL malformed text. Library code never prints.
 */
#ifndef HWSPY_SAMPLER_EVENTS_H
#define HWSPY_SAMPLER_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


enum event_kind {
	EVENT_HARDWARE,        /* PERF_TYPE_HARDWARE */
	EVENT_HW_CACHE,        /* PERF_TYPE_HW_CACHE */
	EVENT_SOFTWARE,        /* PERF_TYPE_SOFTWARE */
	EVENT_RAW,             /* r<hex>, e.g. r01c2 */
	EVENT_PMU,             /* pmu/event=..,umask=../ from sysfs */
	EVENT_TRACEPOINT,      /* subsys:name (reserved) */
};

struct event_spec {
	char name[96];                 /* canonical name as the user wrote it, e.g. "cache-misses:u" */
	enum event_kind kind;
	struct perf_event_attr attr;   /* size, type, config, config1/2, exclude_* from the modifiers;
	                                * sampling fields are left 0 for the sampler to set */
};

struct event_info {
	const char *name;              /* "cycles", "L1-dcache-load-misses", "page-faults" */
	const char *alias;             /* another accepted name ("cpu-cycles") or NULL */
	enum event_kind kind;
	const char *desc;              /* one line for `hwspy list` */
	const char *family;            /* a hardware event's: "cycles", "instructions", "cache",
	                                * "TLB", "branch", "NUMA"; NULL for the others */
	const char *no_pmu;            /* a hardware event's: what to do instead on a machine
	                                * without a hardware PMU, one clause; NULL for the others */
};

/* Parses NAME[:MODIFIERS]. 0, -ENOENT unknown name, -EINVAL malformed (bad modifier, bad
 * raw hex, unknown pmu term). Does not open anything. */
int events_parse(const char *text, struct event_spec *ret);
/* Up to max known names closest to text (edit distance), best first; returns how many. */
size_t events_suggest(const char *text, const char **ret_names, size_t max);
/* The table of named events (not raw / pmu forms). */
const struct event_info *events_table(size_t *ret_n);
/* What to do instead of spec's event on a machine without a hardware PMU (its table row's
 * no_pmu, found by type and config whatever its spelling; a raw event or a cache one not in the
 * table: a clause for any), its family into *ret_family (NULL: none): the clause, or NULL for
 * an event that needs no hardware PMU. */
const char *events_no_pmu(const struct event_spec *spec, const char **ret_family);
const char *event_kind_name(enum event_kind kind);
/* Tries to open spec as a counting event on pid (0 = this process), closes it again:
 * 0 if it opens here, else -errno (-ENOENT: no such event on this machine, e.g. no PMU). */
int events_probe(const struct event_spec *spec, pid_t pid);
/* PMUs in /sys/bus/event_source/devices: names into ret (each < 64 bytes); returns count. */
size_t events_list_pmus(char (*ret)[64], size_t max);
/* True if the machine exposes a hardware PMU (sysfs "cpu" / "cpu_core" / "armv8_*" ...). */
bool events_have_hw_pmu(void);
/* A software event that counts occurrences (faults, switches, migrations), not time. In
 * frequency mode its sample periods do not add up to its count (the kernel sizes each period
 * from the rate so far: a burst after a quiet spell comes as a few samples with huge periods,
 * and the rate control can stall, leaving a burst with a handful of samples): it is sampled
 * at a fixed period and its samples weigh what the counter counted (see struct sample). */
bool events_counts_occurrences(const struct perf_event_attr *attr);
/* The fixed period such an event is sampled at when none is asked for (about 100 samples a
 * second at a typical rate: 100 for page and minor faults, 10 for context switches, 1 for the
 * rare ones); 0 for any other event (time and hardware events sample at a rate). */
uint64_t events_default_period(const struct perf_event_attr *attr);
/* Splits a comma-separated event list ("cycles,cpu/event=0x3c,umask=0/,page-faults:u"; commas
 * inside pmu/.../ belong to that event) into ret[0..max). Returns the count, or -EINVAL (empty
 * list or item, unclosed '/'), -E2BIG (more than max items), -ENAMETOOLONG (an item of 96 bytes
 * or more). Each item is then given to events_parse(). */
int events_split(const char *list, char (*ret)[96], size_t max);
/* Whether tracepoints can be looked up here (subsys:name): 0 where tracefs is readable (as root,
 * mounted at /sys/kernel/tracing first where none is), -EACCES mounted but not readable by
 * this user, -EPERM not mounted and this user may not mount it, -ENODEV not mounted and the
 * mount failed (no tracefs in this kernel?), -ENOENT no /sys/kernel/tracing to mount it on (or a
 * test tree without it). */
int events_tracefs(void);

#endif
