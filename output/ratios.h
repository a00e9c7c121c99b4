/*
 * ratios: the ratios derived from a profile's events (IPC, misses per 1k instructions, miss
 * rates), which the SVG tooltips show; svg_write() in output.h says which and how they are
 * labelled; top's live table shows them as columns; and the one miss-to-reference event map
 * (ratio_miss_reference()), which hwspy stat's derived metrics (analysis/) use too. Private to
 * output/ and the stages above it; not part of output.h.
 *
 * struct ratios is embedded: ratios_init() / ratios_release(). It holds its labels; it keeps
 * value columns of the profile, not pointers into it.
 *
 * It also resolves the metric of svg_opts.color_by (ratio_metric(), ratios_add_metric()):
 * "ipc", "mpki" or "A/B", as svg_color_check() in output.h specifies.
 */
#ifndef HWSPY_OUTPUT_RATIOS_H
#define HWSPY_OUTPUT_RATIOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "output/profile.h"

/* The one miss-to-reference map: the i-th (0, 1 ...) event a miss event name ("X-misses",
 * ":modifiers" ignored) is a share of, into buf[0..size), until NULL (none, or not a miss event):
 * cache-misses: cache-references; branch-misses: branches, then branch-instructions; perf's
 * cache events X-load-misses: X-loads, X-store-misses: X-stores, X-prefetch-misses:
 * X-prefetches. A caller takes the first of them it has. */
const char *ratio_miss_reference(const char *name, size_t i, char *buf, size_t size);

/* scale * v[num] / v[den] for a frame's value vector v (columns as in profile.h). */
struct ratio {
	size_t num, den;        /* value columns */
	double scale;           /* 1 (IPC), 1000 (per 1k instructions), 100 (a rate in %) */
	bool percent;           /* a rate: written as a percentage */
	bool general;           /* a --color-by A/B: written with 4 significant digits */
	size_t label;           /* offset into ratios.labels */
};

struct ratios {
	struct ratio r[2 + 2 * PROFILE_MAX_EVENTS];     /* + a --color-by A/B */
	size_t n;
	struct buf labels;      /* NUL-terminated, one after another */
};

/* The ratios p's events allow, in the order they are shown: 0 or -ENOMEM (then ra is empty,
 * and still to be released). */
int ratios_init(struct ratios *ra, const struct profile *p);
void ratios_release(struct ratios *ra);
/* "IPC", "cache-misses per 1k instructions", "cache miss rate". */
const char *ratio_label(const struct ratios *ra, size_t i);
/* The ratio for values v in *ret: false (and *ret unset) when its denominator is 0. */
bool ratio_value(const struct ratio *q, const uint64_t *v, double *ret);
/* x as the ratio q is written: "1.23" (2 decimals), "12.3%" (a rate), "0.0001234" (A/B: 4
 * significant digits), into buf[0..size). */
void ratio_format(const struct ratio *q, double x, char *buf, size_t size);

/* The metric spec names in p (NULL: spec's form alone; *ret is then unset), as svg_opts.color_by
 * takes it: 0 and *ret (its label unset), or -EINVAL (malformed) or -ENOENT (p lacks an event
 * it needs), *err saying what (err may be NULL). */
struct svg_metric_error;
int ratio_metric(const struct profile *p, const char *spec, struct ratio *ret,
		 struct svg_metric_error *err);
/* The metric spec of p in ra (initialised by ratios_init() for p): its index in *ret_index,
 * one of ra's ratios when it is one already (IPC, "NAME per 1k instructions", an A/B equal to
 * IPC), else added, labelled spec. 0, or as ratio_metric(), or -ENOMEM. */
int ratios_add_metric(struct ratios *ra, const struct profile *p, const char *spec,
		      size_t *ret_index, struct svg_metric_error *err);

#endif
