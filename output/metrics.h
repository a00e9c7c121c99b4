/*
 * metrics: a set of metric families and their samples, written as Prometheus text exposition
 * format 0.0.4 or OpenMetrics 1.0.0 (what `hwspy monitor` serves on GET /metrics).
 *
 * The caller owns the set (metrics_new() / metrics_free()) and rebuilds its samples before each
 * write: metrics_clear() drops every sample and keeps the families, the common labels and the
 * memory, so a set refilled with the same series each scrape stops allocating. Families are
 * written in the order they were created, each family's samples in the order they were added.
 * Every string is copied: the caller's may go after the call.
 *
 * Names: a family name is [a-zA-Z_][a-zA-Z0-9_]* (no ':', which Prometheus keeps for recording
 * rules). A counter's family name leaves out "_total" ("hwspy_events"): its samples are
 * hwspy_events_total. In 0.0.4 a counter's HELP and TYPE lines name its samples
 * (hwspy_events_total, as Prometheus's Go client writes them); in OpenMetrics HELP, TYPE and
 * UNIT name the family (hwspy_events) and "# EOF" ends the text. A unit ("seconds", "bytes")
 * is written only in OpenMetrics, and must be the name's suffix after a '_'
 * ("hwspy_off_cpu_seconds"). A family with no samples is still written (HELP and TYPE: both
 * formats' parsers, promtool included, take it); an empty help text writes no HELP line.
 *
 * Labels are given as a NULL-terminated array of key, value, key, value, ... (NULL: none).
 * Keys are [a-zA-Z_][a-zA-Z0-9_]*, never starting with "__" (Prometheus's own), each at most
 * once in a sample counting the common labels, at most METRICS_MAX_LABELS pairs. Values may be
 * any bytes (a process name, a command line): on output \ " and newline are escaped and each
 * invalid UTF-8 sequence is written as one U+FFFD, as in HELP texts (where " is escaped in
 * OpenMetrics only). Samples carry the common labels (metrics_set_common(), the monitor's
 * --label KEY=VALUE) first, then their own, in the order given.
 *
 * Values are doubles: an integer whose magnitude is under 2^63 is written as one ("12345",
 * never "1.2345e+04"), other finite values in the shortest of %.15g, %.16g and %.17g that
 * reads back as the same double, and NaN, +Inf, -Inf as those words. The decimal point is '.'
 * whatever the locale. A counter's value is never NaN nor negative (OpenMetrics forbids both).
 *
 * Errors: -EINVAL (a name, unit, label or value these rules refuse), -EEXIST (a second sample
 * with the same label set in one family), -ENOSPC (past the limit on samples), -ENOMEM, and
 * for metrics_write() -EIO (-errno where known) when writing fails. A failed call changes
 * nothing. Nothing here prints.
 */
#ifndef HWSPY_OUTPUT_METRICS_H
#define HWSPY_OUTPUT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The most label pairs one sample may carry, its own and the common ones together. */
#define METRICS_MAX_LABELS 32
/* The limit on samples a new set has (metrics_set_limit()). */
#define METRICS_DEFAULT_MAX_SERIES 100000

struct metrics;

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
};

/* A new, empty set (limit METRICS_DEFAULT_MAX_SERIES samples), or NULL (errno ENOMEM). */
struct metrics *metrics_new(void);
/* Frees m and everything in it; metrics_free(NULL) does nothing. */
void metrics_free(struct metrics *m);
/* Drops every sample; keeps the families, the common labels, the limit and the memory. */
void metrics_clear(struct metrics *m);
/* At most max_series samples in all families together from now on: metrics_add() past it
 * returns -ENOSPC (samples already there stay). */
void metrics_set_limit(struct metrics *m, size_t max_series);
/* The number of samples in m now. */
size_t metrics_count(const struct metrics *m);

/* The family named name, created if new, its index in *ret_family. unit: "" or NULL for none,
 * else the name's suffix after '_'; help: any bytes (NULL: none). The same name again returns
 * the same index when type, unit and help are the same; otherwise -EINVAL. -EINVAL too for a
 * name or unit the rules above refuse, a counter name ending in "_total", and a name whose
 * samples another family's could be mistaken for (a gauge "x_total" or "x_created" beside a
 * counter "x", as OpenMetrics parsers refuse). */
int metrics_family(struct metrics *m, const char *name, enum metric_type type, const char *unit,
		   const char *help, size_t *ret_family);

/* Adds one sample to family with labels (NULL: none) and value. -EINVAL: no such family, a
 * bad label key, a key twice (or also a common label's), more than METRICS_MAX_LABELS pairs,
 * an odd number of strings, a counter value NaN or negative; -EEXIST: the family has a sample
 * with the same label set (pairs in any order); -ENOSPC: m holds its limit of samples. */
int metrics_add(struct metrics *m, size_t family, const char *const *labels, double value);

/* Sets the labels put first on every sample (NULL: none), replacing earlier ones. -EINVAL as
 * metrics_add() says for labels, or when a sample already in m has one of these keys. */
int metrics_set_common(struct metrics *m, const char *const *labels);

/* Writes every family and sample to out, as OpenMetrics 1.0.0 if openmetrics, else as text
 * format 0.0.4; flushes out and checks it. 0, or -EIO (-errno where known). */
int metrics_write(const struct metrics *m, bool openmetrics, FILE *out);

/* The Content-Type of what metrics_write() writes:
 * "text/plain; version=0.0.4; charset=utf-8" or
 * "application/openmetrics-text; version=1.0.0; charset=utf-8". */
const char *metrics_content_type(bool openmetrics);

/* Content negotiation: whether a scraper sending this Accept header (NULL or "": none) gets
 * OpenMetrics. The media ranges are weighed by their q (default 1; q=0 refuses); of those
 * served, application/openmetrics-text (version 1.0.0, 0.0.1 or none) gives OpenMetrics and
 * text/plain (version 0.0.4 or none) and the wildcards text/(any) and (any)/(any) give 0.0.4;
 * the highest q wins, the first of equal ones. Nothing acceptable: 0.0.4 (false), as
 * Prometheus's own clients do. */
bool metrics_wants_openmetrics(const char *accept_header);

#endif
