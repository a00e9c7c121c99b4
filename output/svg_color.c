/* svg_color: frames filled by a ratio of two events, its scale and its legend (see
 * svg_internal.h, and svg_write() in output.h for the choices). */
#include "output/svg_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"

#define GREY_LEVEL      180
#define GREY            "rgb(180,180,180)"
#define LEGEND_BAR_W    200
#define LO_PERCENTILE   0.02    /* the legend's <title> names them */
#define HI_PERCENTILE   0.98

/* ColorBrewer YlOrRd, classes 3 to 7 of 9: low to high */
static const unsigned char ramp[][3] = {
	{ 254, 217, 118 }, { 254, 178, 76 }, { 253, 141, 60 }, { 252, 78, 42 }, { 227, 26, 28 },
};
#define RAMP_N (sizeof(ramp) / sizeof(ramp[0]))

int svg_color_check(const struct profile *p, const char *metric, struct svg_metric_error *err)
{
	struct ratio q;

	return ratio_metric(p, metric, &q, err);
}

int color_scale_init(struct color_scale *cs, struct ratios *ra, const struct profile *p,
		     const char *spec)
{
	*cs = (struct color_scale) { .p = p, .ra = ra };
	return ratios_add_metric(ra, p, spec, &cs->metric, NULL);
}

bool color_value(const struct color_scale *cs, const uint64_t *v, double *ret)
{
	return v[0] >= SVG_COLOR_MIN_SAMPLES && ratio_value(&cs->ra->r[cs->metric], v, ret);
}

static int cmp_point(const void *a, const void *b)
{
	double x = ((const struct color_point *) a)->x, y = ((const struct color_point *) b)->x;

	return (x > y) - (x < y);
}

void color_scale_fit(struct color_scale *cs, struct color_point *pts, size_t n)
{
	long double total = 0, cum;
	bool weighted;
	size_t i = 0;

	cs->any = n > 0;
	cs->lo = cs->hi = 0;
	cs->below = cs->above = false;
	if (!n)
		return;
	qsort(pts, n, sizeof(*pts), cmp_point);
	for (size_t k = 0; k < n; k++)
		total += pts[k].w;
	weighted = total > 0;   /* drawn frames have a width: unweighted is a fallback only */
	if (!weighted)
		total = (long double) n;
	cum = weighted ? pts[0].w : 1;
	while (i + 1 < n && cum < LO_PERCENTILE * total)
		cum += weighted ? pts[++i].w : 1;
	cs->lo = pts[i].x;
	while (i + 1 < n && cum < HI_PERCENTILE * total)
		cum += weighted ? pts[++i].w : 1;
	cs->hi = pts[i].x;
	cs->below = pts[0].x < cs->lo;
	cs->above = pts[n - 1].x > cs->hi;
}

/* Where x falls on the scale, 0 (low end) to 1 (high end). */
static double scale_pos(const struct color_scale *cs, double x)
{
	if (cs->hi <= cs->lo)
		return x < cs->lo ? 0 : x > cs->hi ? 1 : 0.5;
	return fmin(fmax((x - cs->lo) / (cs->hi - cs->lo), 0), 1);
}

void color_fill(const struct color_scale *cs, const uint64_t *v, unsigned rgb[3])
{
	double x, pos;
	size_t i;

	if (!color_value(cs, v, &x)) {
		rgb[0] = rgb[1] = rgb[2] = GREY_LEVEL;
		return;
	}
	pos = scale_pos(cs, x) * (double) (RAMP_N - 1);
	i = pos >= (double) (RAMP_N - 1) ? RAMP_N - 2 : (size_t) pos;
	for (int c = 0; c < 3; c++)
		rgb[c] = (unsigned) lround(ramp[i][c] + (ramp[i + 1][c] - ramp[i][c]) * (pos - (double) i));
}

static const char *den_name(const struct color_scale *cs)
{
	return profile_event(cs->p, cs->ra->r[cs->metric].den - 1)->name;
}

void color_put_tip(FILE *out, const struct color_scale *cs, const uint64_t *v)
{
	const struct ratio *q = &cs->ra->r[cs->metric];
	char val[64];
	double x;

	putc('\n', out);
	svg_xml_puts(out, ratio_label(cs->ra, cs->metric));
	if (!ratio_value(q, v, &x)) {
		fputs(": none (", out);
		svg_xml_puts(out, den_name(cs));
		fputs(" is 0)", out);
		return;
	}
	ratio_format(q, x, val, sizeof(val));
	fprintf(out, ": %s", val);
	if (v[0] < SVG_COLOR_MIN_SAMPLES)
		fprintf(out, ", too few samples to colour (%llu, under %d)",
			(unsigned long long) v[0], SVG_COLOR_MIN_SAMPLES);
}

void color_put_defs(FILE *out)
{
	fputs("<defs><linearGradient id=\"color-scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">", out);
	for (size_t i = 0; i < RAMP_N; i++)
		fprintf(out, "<stop offset=\"%zu%%\" stop-color=\"rgb(%u,%u,%u)\"/>",
			i * 100 / (RAMP_N - 1), ramp[i][0], ramp[i][1], ramp[i][2]);
	fputs("</linearGradient></defs>\n", out);
}

/* The value at one end of the scale, "≤ " or "≥ " before it when frames were clipped there. */
static void end_text(const struct color_scale *cs, bool high, char *buf, size_t size)
{
	char val[64];

	if (!cs->any) {
		snprintf(buf, size, "none");
		return;
	}
	ratio_format(&cs->ra->r[cs->metric], high ? cs->hi : cs->lo, val, sizeof(val));
	snprintf(buf, size, "%s%s", (high ? cs->above : cs->below) ?
		 (high ? "\xe2\x89\xa5 " : "\xe2\x89\xa4 ") : "", val);
}

/* Pixels a text of n characters takes (the average glyph of svg.c's 12px font). */
static double text_w(const char *s)
{
	return (double) strlen(s) * SVG_GLYPH_W;
}

void color_put_legend(FILE *out, const struct color_scale *cs, unsigned y)
{
	const char *label = ratio_label(cs->ra, cs->metric);
	char lo[80], hi[80];
	double x_lo, x_bar, x_hi, x_grey;

	end_text(cs, false, lo, sizeof(lo));
	end_text(cs, true, hi, sizeof(hi));
	x_lo = SVG_XPAD + text_w("colour: ") + text_w(label) + 12 + text_w(lo);
	x_bar = x_lo + 5;
	x_hi = x_bar + LEGEND_BAR_W + 5;
	x_grey = x_hi + text_w(hi) + 20;

	fputs("<g id=\"legend\"><title>Frames coloured by ", out);
	svg_xml_puts(out, label);
	fprintf(out, " of their own (inclusive) counts, yellow low, red high. The ends are the "
		"2nd and 98th percentiles of the drawn frames' values, each frame weighted by its "
		"width; frames past an end take its colour. Grey: fewer than %d samples, or ",
		SVG_COLOR_MIN_SAMPLES);
	svg_xml_puts(out, den_name(cs));
	fprintf(out, " is 0.</title>\n<text id=\"legend-name\" x=\"%g\" y=\"%u\">colour: ",
		SVG_XPAD, y + 12);
	svg_xml_puts(out, label);
	fprintf(out, "</text>\n<text id=\"legend-low\" x=\"%.1f\" y=\"%u\" text-anchor=\"end\">",
		x_lo, y + 12);
	svg_xml_puts(out, lo);
	fprintf(out, "</text>\n<rect id=\"legend-scale\" x=\"%.1f\" y=\"%u\" width=\"%d\" "
		"height=\"12\" fill=\"url(#color-scale)\"/>\n"
		"<text id=\"legend-high\" x=\"%.1f\" y=\"%u\">", x_bar, y + 2, LEGEND_BAR_W,
		x_hi, y + 12);
	svg_xml_puts(out, hi);
	fprintf(out, "</text>\n<rect id=\"legend-grey\" x=\"%.1f\" y=\"%u\" width=\"12\" "
		"height=\"12\" fill=\"" GREY "\"/>\n"
		"<text id=\"legend-grey-text\" x=\"%.1f\" y=\"%u\">under %d samples, or ",
		x_grey, y + 2, x_grey + 17, y + 12, SVG_COLOR_MIN_SAMPLES);
	svg_xml_puts(out, den_name(cs));
	fputs(" is 0</text></g>\n", out);
}
