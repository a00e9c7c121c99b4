/* ratios: IPC, misses per 1k instructions and miss rates from a profile's events. */
#include "output/ratios.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
	ra->r[ra->n++] = (struct ratio) { num, den, scale, percent, label };
	return 0;
}

/* The column of the reference event of the miss event base + "-misses" (base[0..n)), or 0:
 * cache-misses / cache-references, branch-misses / branches or branch-instructions, and perf's
 * cache events X-load-misses / X-loads, X-store-misses / X-stores, X-prefetch-misses /
 * X-prefetches. */
static size_t miss_reference(const struct profile *p, const char *base, size_t n)
{
	static const struct {
		const char *base, *ref;         /* base: a whole name, or with '-' a suffix */
	} refs[] = {
		{ "cache", "cache-references" },
		{ "branch", "branches" },
		{ "branch", "branch-instructions" },
		{ "-load", "-loads" },
		{ "-store", "-stores" },
		{ "-prefetch", "-prefetches" },
	};
	char ref[256];

	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		size_t k = strlen(refs[i].base), col;

		if (refs[i].base[0] != '-' && n == k && memcmp(base, refs[i].base, k) == 0)
			col = event_column(p, refs[i].ref);
		else if (refs[i].base[0] == '-' && n > k &&
			 n - k + strlen(refs[i].ref) < sizeof(ref) &&
			 memcmp(base + n - k, refs[i].base, k) == 0) {
			snprintf(ref, sizeof(ref), "%.*s%s", (int) (n - k), base, refs[i].ref);
			col = event_column(p, ref);
		} else {
			continue;
		}
		if (col)
			return col;
	}
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
		ref = miss_reference(p, name, n - 7);
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
