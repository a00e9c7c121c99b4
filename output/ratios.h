/*
 * ratios: the ratios derived from a profile's events (IPC, misses per 1k instructions, miss
 * rates), which the SVG tooltips show; svg_write() in output.h says which and how they are
 * labelled; cli's top (top_table.c) shows them as columns. Private to output/ and cli/;
 * not part of output.h.
 *
 * struct ratios is embedded: ratios_init() / ratios_release(). It holds its labels; it keeps
 * value columns of the profile, not pointers into it.
 */
#ifndef HWSPY_OUTPUT_RATIOS_H
#define HWSPY_OUTPUT_RATIOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "output/profile.h"

/* scale * v[num] / v[den] for a frame's value vector v (columns as in profile.h). */
struct ratio {
	size_t num, den;        /* value columns */
	double scale;           /* 1 (IPC), 1000 (per 1k instructions), 100 (a rate in %) */
	bool percent;           /* a rate: written as a percentage */
	size_t label;           /* offset into ratios.labels */
};

struct ratios {
	struct ratio r[1 + 2 * PROFILE_MAX_EVENTS];
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

#endif
