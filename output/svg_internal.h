/*
 * svg_internal: what the parts of the SVG writer share (svg.c, the writer; svg_color.c;
 * svg_script.c). Private to output/; svg_write() in output.h says what the user sees.
 *
 * svg_color.c: the flame graph coloured by a metric (svg_opts.color_by): the metric, its scale
 * fitted to the drawn frames, the frames' fills and tooltip lines, the legend.
 *
 * struct color_scale is embedded: color_scale_init() resolves the metric into the caller's
 * struct ratios (which must outlive it), color_scale_fit() sets its ends from the drawn
 * frames; it owns nothing. Writers write to out and leave errors to ferror(out).
 */
#ifndef HWSPY_OUTPUT_SVG_INTERNAL_H
#define HWSPY_OUTPUT_SVG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/profile.h"
#include "output/ratios.h"

#define COLOR_LEGEND_H  24      /* px the legend's row adds under the subtitle */
#define SVG_XPAD        10.0    /* the graph's left and right margin */
#define SVG_GLYPH_W     7.08    /* average glyph width at 12px: 12 * 0.59 */

struct color_scale {
	const struct profile *p;
	const struct ratios *ra;
	size_t metric;          /* index in ra->r */
	double lo, hi;          /* the scale's ends */
	bool any;               /* a drawn frame has a value (else lo, hi are 0) */
	bool below, above;      /* a drawn frame's value is past lo, hi (clipped) */
};

/* A drawn frame for color_scale_fit(): its value and its width (weight). */
struct color_point {
	double x;
	uint64_t w;
};

/* The metric spec of p, added to ra: 0, or as ratios_add_metric(). */
int color_scale_init(struct color_scale *cs, struct ratios *ra, const struct profile *p,
		     const char *spec);
/* Frame values v (columns as in profile.h): whether the frame is coloured (enough samples, a
 * denominator), its value in *ret. */
bool color_value(const struct color_scale *cs, const uint64_t *v, double *ret);
/* The ends from the points pts[0..n) (reordered): the 2nd and 98th percentile weighted by w. */
void color_scale_fit(struct color_scale *cs, struct color_point *pts, size_t n);
/* The fill of a frame with values v. */
void color_fill(const struct color_scale *cs, const uint64_t *v, unsigned rgb[3]);
/* "\nLABEL: VALUE" for a frame with values v, or why it is grey. */
void color_put_tip(FILE *out, const struct color_scale *cs, const uint64_t *v);
/* The gradient the legend draws (a <defs> element). */
void color_put_defs(FILE *out);
/* The legend's row, its top at y. */
void color_put_legend(FILE *out, const struct color_scale *cs, unsigned y);

/* Whether a label on fill rgb is white, not black: the fill's WCAG 2 relative luminance is
 * under sqrt(1.05 * 0.05) - 0.05, where white's contrast on it passes black's. Either way the
 * label keeps 4.58:1 or more. */
#define SVG_DARK_LUMINANCE 0.17913
bool svg_fill_dark(const unsigned rgb[3]);

/* svg.c's XML escaping of s (NUL-terminated), see xml_put() there. */
void svg_xml_puts(FILE *out, const char *s);

/* svg_script.c: the embedded script (zoom, search, the URL), which reads WIDTH, XPAD, GLYPH_W,
 * ICICLE and SEARCH_FILL from the variables written before it. */
extern const char svg_script[];

#endif
