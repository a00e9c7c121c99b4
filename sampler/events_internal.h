/*
 * Internal to sampler/: what events.c (names -> perf_event_attr) and pmu.c (the sysfs and
 * tracefs forms) call in each other. Not for other modules; the public side is events.h.
 *
 * events.c owns the modifier rules; pmu.c owns the sysfs root (events_set_sysfs_root()) and
 * every read under it. Errors are -errno values as in sampler.h: -EINVAL for text that is
 * malformed, -ENOENT for a PMU or tracepoint this machine does not have.
 */
#ifndef HWSPY_SAMPLER_EVENTS_INTERNAL_H
#define HWSPY_SAMPLER_EVENTS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/events.h"

/* pmu.c, tests only: read PMUs (DIR/bus/event_source/devices) and tracepoints
 * (DIR/kernel/tracing) under DIR instead of /sys; NULL restores /sys. The string is copied.
 * Not thread-safe. */
void events_set_sysfs_root(const char *dir);

/* events.c */
/* Applies the modifier letters MODS (the text after ':', or after a pmu form's closing '/';
 * NULL when there is none) to attr the way perf does. 0 or -EINVAL. */
int events_apply_modifiers(const char *mods, struct perf_event_attr *attr);

/* pmu.c */
/* TEXT is pmu/terms/[modifiers]; ret was zeroed and given its name and attr.size by
 * events_parse(). Sets ret->kind, attr.type and the config fields. 0, -ENOENT (no such PMU in
 * sysfs) or -EINVAL. */
int pmu_parse(const char *text, struct event_spec *ret);
/* The tracefs id of tracepoint SYS:NAME (each given by pointer and length, not terminated).
 * Mounts tracefs at /sys/kernel/tracing first where the real /sys has none mounted (as perf
 * does; root only). 0, or -ENOENT (no such tracepoint, or no tracefs). */
int pmu_tracepoint_id(const char *sys, size_t sys_len, const char *name, size_t name_len,
		      uint64_t *ret_id);

#endif
