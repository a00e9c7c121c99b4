/* ratios: IPC, misses per 1k instructions and miss rates from a profile's events. */
#include "output/ratios.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "output/output.h"

/* The value column of the event named name (":modifiers" ignored), or 0 if none. */
static size_t event_column(const struct profile *p, const char *name)
{
	int i = profile_find_event(p, name);

	return i < 0 ? 0 : (size_t) i + 1;
}

static int ratio_add(struct ratios *ra, size_t num, size_t den, double scale, bool percent,
		     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int ratio_add(struct ratios *ra, size_t num, size_t den, double scale, bool percent,
		     const char *fmt, ...)
{
	size_t label = ra->labels.len;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vprintf(&ra->labels, fmt, ap);
	va_end(ap);
	if (r >= 0)
		r = buf_putc(&ra->labels, '\0');
	if (r < 0)
		return r;
	ra->r[ra->n++] = (struct ratio) { num, den, scale, percent, false, label };
	return 0;
}

const char *ratio_miss_reference(const char *name, size_t i, char *buf, size_t size)
{
	/* the one map: base is a whole name, or with a leading '-' a suffix */
	static const struct {
		const char *base, *ref;
	} refs[] = {
		{ "cache", "cache-references" },
		{ "branch", "branches" },
		{ "branch", "branch-instructions" },
		{ "-load", "-loads" },
		{ "-store", "-stores" },
		{ "-prefetch", "-prefetches" },
	};
	size_t n = strcspn(name, ":");

	if (n <= 7 || memcmp(name + n - 7, "-misses", 7) != 0)
		return NULL;
	n -= 7;                 /* the base: name[0..n) */
	for (size_t k = 0; k < sizeof(refs) / sizeof(refs[0]); k++) {
		size_t len = strlen(refs[k].base);

		if (refs[k].base[0] != '-' && n == len && memcmp(name, refs[k].base, len) == 0) {
			if (i-- == 0) {
				snprintf(buf, size, "%s", refs[k].ref);
				return buf;
			}
		} else if (refs[k].base[0] == '-' && n > len &&
			   n - len + strlen(refs[k].ref) < size &&
			   memcmp(name + n - len, refs[k].base, len) == 0) {
			if (i-- == 0) {
				snprintf(buf, size, "%.*s%s", (int) (n - len), name, refs[k].ref);
				return buf;
			}
		}
	}
	return NULL;
}

/* The column of the reference event of the miss event name in p (the first of
 * ratio_miss_reference()'s that p has), or 0. */
static size_t miss_reference(const struct profile *p, const char *name)
{
	char ref[256];
	const char *r;
	size_t col;

	for (size_t i = 0; (r = ratio_miss_reference(name, i, ref, sizeof(ref))); i++)
		if ((col = event_column(p, r)))
			return col;
	return 0;
}

/* IPC, then for each miss event (once per name, modifiers cut) its misses per 1k instructions
 * and its miss rate. */
int ratios_init(struct ratios *ra, const struct profile *p)
{
	size_t cycles = event_column(p, "cycles"), instr = event_column(p, "instructions");
	int r = 0;

	buf_init(&ra->labels);
	ra->n = 0;
	if (!cycles)
		cycles = event_column(p, "cpu-cycles");
	if (cycles && instr)
		r = ratio_add(ra, instr, cycles, 1, false, "IPC");
	for (size_t i = 0; i < profile_n_events(p) && r >= 0; i++) {
		const char *name = profile_event(p, i)->name;
		size_t n = strcspn(name, ":"), ref;
		bool seen = false;

		if (n <= 7 || memcmp(name + n - 7, "-misses", 7) != 0)
			continue;
		for (size_t j = 0; j < i; j++) {
			const char *other = profile_event(p, j)->name;
			seen = seen || (strncmp(other, name, n) == 0 &&
					(other[n] == '\0' || other[n] == ':'));
		}
		if (seen)
			continue;
		if (instr)
			r = ratio_add(ra, 1 + i, instr, 1000, false, "%.*s per 1k instructions",
				      (int) n, name);
		ref = miss_reference(p, name);
		if (r >= 0 && ref)
			r = ratio_add(ra, 1 + i, ref, 100, true, "%.*s miss rate", (int) (n - 7),
				      name);
	}
	if (r < 0) {
		ratios_release(ra);
		ra->n = 0;
	}
	return r;
}

void ratios_release(struct ratios *ra)
{
	buf_release(&ra->labels);
}

const char *ratio_label(const struct ratios *ra, size_t i)
{
	return ra->labels.data + ra->r[i].label;
}

bool ratio_value(const struct ratio *q, const uint64_t *v, double *ret)
{
	if (v[q->den] == 0)
		return false;
	*ret = q->scale * (double) v[q->num] / (double) v[q->den];
	return true;
}

void ratio_format(const struct ratio *q, double x, char *buf, size_t size)
{
	if (q->percent)
		snprintf(buf, size, "%.1f%%", x);
	else if (q->general && fabs(x) >= 1e4 && fabs(x) < 1e15)
		snprintf(buf, size, "%.0f", x);         /* "253400", not "2.534e+05" */
	else if (q->general)
		snprintf(buf, size, "%.4g", x);
	else
		snprintf(buf, size, "%.2f", x);
}

/* ---- --color-by ---- */

static int metric_error(struct svg_metric_error *err, int r, const char *why, size_t at,
			size_t len)
{
	if (err)
		*err = (struct svg_metric_error) { why, at, len };
	return r;
}

/* The column of the event named s[0..n) (as profile_find_event() matches), or 0. */
static size_t column_of(const struct profile *p, const char *s, size_t n)
{
	char name[256];

	if (n == 0 || n >= sizeof(name))
		return 0;
	memcpy(name, s, n);
	name[n] = '\0';
	return event_column(p, name);
}

/* The one miss event of p (names compared with ":modifiers" cut), in *ret_col: the number of
 * distinct miss names (0, 1, or 2 for "more than one"). */
static int miss_events(const struct profile *p, size_t *ret_col)
{
	const char *first = NULL;
	size_t first_n = 0;

	for (size_t i = 0; i < profile_n_events(p); i++) {
		const char *name = profile_event(p, i)->name;
		size_t n = strcspn(name, ":");

		if (n <= 7 || memcmp(name + n - 7, "-misses", 7) != 0)
			continue;
		if (first && (n != first_n || memcmp(name, first, n) != 0))
			return 2;
		if (!first) {
			first = name;
			first_n = n;
			*ret_col = 1 + i;
		}
	}
	return first ? 1 : 0;
}

static int metric_named(const struct profile *p, const char *spec, struct ratio *ret,
			struct svg_metric_error *err)
{
	size_t cycles, instr, miss = 0;

	if (strcasecmp(spec, "ipc") != 0 && strcasecmp(spec, "mpki") != 0)
		return metric_error(err, -EINVAL, "is not a metric", 0, 0);
	if (!p)
		return 0;
	instr = event_column(p, "instructions");
	if (strcasecmp(spec, "ipc") == 0) {
		cycles = event_column(p, "cycles");
		if (!cycles)
			cycles = event_column(p, "cpu-cycles");
		if (!cycles || !instr)
			return metric_error(err, -ENOENT, "needs the events 'instructions' and "
					    "'cycles' (or 'cpu-cycles')", 0, 0);
		*ret = (struct ratio) { .num = instr, .den = cycles, .scale = 1 };
		return 0;
	}
	switch (instr ? miss_events(p, &miss) : 0) {
	case 1:
		*ret = (struct ratio) { .num = miss, .den = instr, .scale = 1000 };
		return 0;
	case 2:
		return metric_error(err, -ENOENT, "is ambiguous: the profile has more than one "
				    "'*-misses' event (give MISSES/instructions)", 0, 0);
	default:
		return metric_error(err, -ENOENT, "needs the event 'instructions' and one "
				    "'*-misses' event", 0, 0);
	}
}

/* Whether event name (":modifiers" ignored) is base. */
static bool named(const char *name, const char *base)
{
	size_t n = strcspn(name, ":");

	return n == strlen(base) && !strncmp(name, base, n);
}

/* An A/B metric (q->num over q->den, columns of p) in units a person reads: per ms of a time
 * event's nanoseconds (cpu-clock and task-clock: of CPU; wall; off-cpu), per 1k instructions
 * or cycles (instructions per cycle is IPC), a time over a time as a percentage, else A per B
 * as it is. Sets q's scale and form, and the words into label (NULL: not wanted). */
static int a_over_b(const struct profile *p, struct ratio *q, struct buf *label)
{
	const char *num = profile_event(p, q->num - 1)->name, *den = profile_event(p, q->den - 1)->name;
	const char *per = den, *unit = NULL;
	bool num_time = profile_event_is_time(num), den_time = profile_event_is_time(den);

	*q = (struct ratio) { .num = q->num, .den = q->den, .scale = 1, .general = true };
	if (num_time && den_time) {
		*q = (struct ratio) { .num = q->num, .den = q->den, .scale = 100, .percent = true };
		return label ? buf_printf(label, "%s as a share of %s", num, den) : 0;
	}
	if (named(num, "instructions") && (named(den, "cycles") || named(den, "cpu-cycles"))) {
		q->general = false;
		return label ? buf_puts(label, "IPC") : 0;
	}
	if (den_time) {
		q->scale = 1e6;
		unit = profile_unit_words(profile_event_unit(den));
	} else if (named(den, "instructions")) {
		q->scale = 1000;
		per = "1k instructions";
	} else if (named(den, "cycles") || named(den, "cpu-cycles")) {
		q->scale = 1000;
		per = "1k cycles";
	}
	if (unit)
		return label ? buf_printf(label, "%s per ms %s", num, unit) : 0;
	return label ? buf_printf(label, "%s per %s", num, per) : 0;
}

/* "A/B": split at its '/', or where there are several (a PMU event "cpu/event=0x3c/" holds
 * two), at the one '/' that leaves an event of p on either side. */
int ratio_metric(const struct profile *p, const char *spec, struct ratio *ret,
		 struct svg_metric_error *err)
{
	size_t len = strlen(spec), slash = strcspn(spec, "/"), found = 0, at = 0;

	if (len == 0)
		return metric_error(err, -EINVAL, "is empty", 0, 0);
	if (slash == len)
		return metric_named(p, spec, ret, err);
	if (spec[0] == '/')
		return metric_error(err, -EINVAL, "has no event before '/'", 0, 0);
	if (spec[len - 1] == '/')
		return metric_error(err, -EINVAL, "has no event after '/'", 0, 0);
	if (!p)
		return 0;
	if (!strchr(spec + slash + 1, '/')) {
		size_t num = column_of(p, spec, slash), den = column_of(p, spec + slash + 1,
								  len - slash - 1);
		if (!num)
			return metric_error(err, -ENOENT, "names an event the profile lacks", 0,
					    slash);
		if (!den)
			return metric_error(err, -ENOENT, "names an event the profile lacks",
					    slash + 1, len - slash - 1);
		*ret = (struct ratio) { .num = num, .den = den };
		return a_over_b(p, ret, NULL);
	}
	for (size_t i = 1; i + 1 < len; i++) {
		if (spec[i] != '/' || !column_of(p, spec, i) ||
		    !column_of(p, spec + i + 1, len - i - 1))
			continue;
		found++;
		at = i;
	}
	if (found != 1)
		return metric_error(err, -EINVAL, found ? "splits into two events at more than "
				    "one of its '/'" : "has more than one '/' and splits at none of "
				    "them into two events", 0, 0);
	*ret = (struct ratio) { .num = column_of(p, spec, at),
				.den = column_of(p, spec + at + 1, len - at - 1) };
	return a_over_b(p, ret, NULL);
}

int ratios_add_metric(struct ratios *ra, const struct profile *p, const char *spec,
		      size_t *ret_index, struct svg_metric_error *err)
{
	struct ratio q;
	struct buf label;
	int r = ratio_metric(p, spec, &q, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ra->n; i++) {
		if (ra->r[i].num == q.num && ra->r[i].den == q.den && ra->r[i].scale == q.scale) {
			*ret_index = i;
			return 0;
		}
	}
	/* ipc and mpki are ratios of ra's already; an A/B is said in its units */
	buf_init(&label);
	r = a_over_b(p, &q, &label);
	if (r >= 0)
		r = ratio_add(ra, q.num, q.den, q.scale, q.percent, "%s", label.data);
	buf_release(&label);
	if (r < 0)
		return r;
	ra->r[ra->n - 1].general = q.general;
	*ret_index = ra->n - 1;
	return 0;
}
