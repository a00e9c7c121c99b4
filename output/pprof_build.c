/* pprof_build: the tables pprof_read.c scanned -> a profile (see pprof_read() in output.h):
 * string indexes and ids checked and resolved, sample types -> events, frames typed the way
 * pprof_write() writes them, samples -> stacks. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "output/pprof_read.h"

/* ---- resolving ids and strings --------------------------------------------------------------- */

static int make_strings(struct pprof_reader *r)
{
	const struct pb_msg *s = r->strs.v;
	size_t total = 0, off = 0;

	if (r->strs.n == 0 || s[0].p != s[0].end)
		return pprof_fail(r, "string table does not start with \"\"");
	for (size_t i = 0; i < r->strs.n; i++)
		total += (size_t) (s[i].end - s[i].p) + 1;     /* <= input size + count */
	r->str = malloc(r->strs.n * sizeof(*r->str));
	r->str_arena = malloc(total);
	if (!r->str || !r->str_arena)
		return -ENOMEM;
	for (size_t i = 0; i < r->strs.n; i++) {
		size_t len = (size_t) (s[i].end - s[i].p);

		if (memchr(s[i].p, '\0', len))
			return pprof_fail(r, "NUL byte in a string");
		memcpy(r->str_arena + off, s[i].p, len);
		r->str_arena[off + len] = '\0';
		r->str[i] = r->str_arena + off;
		off += len + 1;
	}
	return 0;
}

static int check_str(struct pprof_reader *r, uint64_t i)
{
	return i < r->strs.n ? 0 : pprof_fail(r, "string index out of range");
}

static int cmp_id_index(const void *a, const void *b)
{
	const struct id_index *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Indexes n items of elem bytes, each starting with its uint64_t id. */
static int id_table_build(struct pprof_reader *r, struct id_table *t, const void *items, size_t n,
			  size_t elem, const char *zero, const char *dup)
{
	t->v = malloc((n ? n : 1) * sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	t->n = n;
	for (size_t i = 0; i < n; i++) {
		memcpy(&t->v[i].id, (const char *) items + i * elem, sizeof(uint64_t));
		t->v[i].i = i;
		if (t->v[i].id == 0)
			return pprof_fail(r, zero);
	}
	qsort(t->v, n, sizeof(*t->v), cmp_id_index);
	t->dense = true;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && t->v[i].id == t->v[i - 1].id)
			return pprof_fail(r, dup);
		t->dense = t->dense && t->v[i].id == i + 1;
	}
	return 0;
}

/* The index of the item with this id, or SIZE_MAX. */
static size_t id_lookup(const struct id_table *t, uint64_t id)
{
	size_t lo = 0, hi = t->n;

	if (t->dense)
		return id >= 1 && id <= t->n ? t->v[id - 1].i : SIZE_MAX;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].id == id)
			return t->v[mid].i;
		if (t->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/* Every string index the profile holds is in range (the samples' labels are checked later). */
static int check_indexes(struct pprof_reader *r)
{
	const struct vtype *t = r->types.v;
	const struct pmapping *m = r->mappings.v;
	const struct pfunction *fn = r->functions.v;
	const uint64_t *c = r->comments.v;
	int e = 0;

	for (size_t i = 0; e >= 0 && i < r->types.n; i++)
		if ((e = check_str(r, t[i].type)) >= 0)
			e = check_str(r, t[i].unit);
	for (size_t i = 0; e >= 0 && i < r->mappings.n; i++)
		if ((e = check_str(r, m[i].file)) >= 0)
			e = check_str(r, m[i].build_id);
	for (size_t i = 0; e >= 0 && i < r->functions.n; i++)
		if ((e = check_str(r, fn[i].name)) >= 0)
			e = check_str(r, fn[i].file);
	for (size_t i = 0; e >= 0 && i < r->comments.n; i++)
		e = check_str(r, c[i]);
	if (e >= 0 && (e = check_str(r, r->period_type.type)) >= 0 &&
	    (e = check_str(r, r->period_type.unit)) >= 0)
		e = check_str(r, r->default_type);
	return e;
}

/* ---- the profile ----------------------------------------------------------------------------- */

/* Events: the "samples" type goes to column 0, the others are events, the default type (else
 * the last) first; without a "samples" type, the first type feeds column 0 as well. */
static int make_events(struct pprof_reader *r, struct profile **ret)
{
	const struct vtype *t = r->types.v;
	size_t n = r->types.n, samples = SIZE_MAX, def = n - 1, n_events = 0;
	const char *names[PROFILE_MAX_EVENTS];

	if (n == 0)
		return pprof_fail(r, "no sample types");
	for (size_t i = 0; i < n && samples == SIZE_MAX; i++)
		if (strcmp(r->str[t[i].type], "samples") == 0)
			samples = i;
	if (r->default_type) {
		for (size_t i = 0; i < n; i++) {
			if (strcmp(r->str[t[i].type], r->str[r->default_type]) == 0) {
				def = i;
				break;
			}
		}
	}
	r->src[0] = samples != SIZE_MAX ? samples : 0;
	if (n == 1) {
		r->src[++n_events] = 0;
	} else {
		if (def != samples)
			r->src[++n_events] = def;
		for (size_t i = 0; i < n && n_events < PROFILE_MAX_EVENTS; i++)
			if (i != samples && i != def)
				r->src[++n_events] = i;
	}
	for (size_t i = 0; i < n_events; i++) {
		names[i] = r->str[t[r->src[i + 1]].type];
		if (!*names[i])
			names[i] = "values";
	}
	*ret = profile_new(names, n_events);
	return *ret ? 0 : -ENOMEM;
}

/* Decimal digits only, to the end of s. */
static bool parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d = (unsigned char) *s - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*ret = v;
	return true;
}

/* "event I: sampling|counted[, frequency N Hz][, period N]" (pprof.c's): sets the rate. */
static void event_comment(struct profile *p, const char *s)
{
	uint64_t i = 0, freq = 0, period = 0;
	bool sampling;
	char num[24];
	size_t len = strcspn(s, ":");

	if (len == 0 || len >= sizeof(num) || s[len] != ':' || s[len + 1] != ' ')
		return;
	memcpy(num, s, len);
	num[len] = '\0';
	if (!parse_u64(num, &i) || i >= profile_n_events(p))
		return;
	s += len + 2;
	if (strncmp(s, "sampling", 8) == 0)
		sampling = true;
	else if (strncmp(s, "counted", 7) == 0)
		sampling = false;
	else
		return;
	s += sampling ? 8 : 7;
	while (*s) {
		uint64_t *dst;
		const char *unit;

		if (strncmp(s, ", frequency ", 12) == 0) {
			dst = &freq;
			unit = " Hz";
			s += 12;
		} else if (strncmp(s, ", period ", 9) == 0) {
			dst = &period;
			unit = "";
			s += 9;
		} else {
			return;
		}
		len = strspn(s, "0123456789");
		if (len == 0 || len >= sizeof(num))
			return;
		memcpy(num, s, len);
		num[len] = '\0';
		if (!parse_u64(num, dst))
			return;
		s += len;
		if (strncmp(s, unit, strlen(unit)) != 0)
			return;
		s += strlen(unit);
	}
	(void) profile_set_event_rate(p, (size_t) i, freq, period, sampling);
}

/* Rates and metadata: period_type / period, time and duration, and hwspy's own comments. */
static int make_meta(struct pprof_reader *r, struct profile *p)
{
	struct profile_meta *meta = profile_meta(p);
	const uint64_t *c = r->comments.v;
	int e = 0;

	if (r->period_type.type) {
		for (size_t i = 0; i < profile_n_events(p); i++) {
			if (strcmp(profile_event(p, i)->name, r->str[r->period_type.type]) != 0)
				continue;
			if (i != 0)
				(void) profile_set_event_rate(p, 0, 0, 0, false);
			(void) profile_set_event_rate(p, i, 0,
						      r->period <= INT64_MAX ? r->period : 0, true);
			break;
		}
	}
	if (r->time_nanos <= INT64_MAX)
		meta->start_time_ns = r->time_nanos;
	if (r->duration_nanos <= INT64_MAX)
		meta->duration_ns = r->duration_nanos;
	if (r->comments.n == 0 || strncmp(r->str[c[0]], "hwspy ", 6) != 0)
		return 0;       /* not hwspy's: its comments are only text */
	for (size_t i = 1; e >= 0 && i < r->comments.n; i++) {
		const char *s = r->str[c[i]];
		uint64_t v;

		if (strncmp(s, "target: ", 8) == 0)
			e = profile_set_target(p, s + 8);
		else if (strncmp(s, "python: ", 8) == 0)
			e = profile_set_python(p, s + 8);
		else if (strncmp(s, "lost: ", 6) == 0 && parse_u64(s + 6, &v))
			meta->lost = v;
		else if (strncmp(s, "dropped: ", 9) == 0 && parse_u64(s + 9, &v))
			meta->dropped = v;
		else if (strncmp(s, "threads: ", 9) == 0 && parse_u64(s + 9, &v))
			meta->threads = v;
		else if (strncmp(s, "threads not profiled: ", 22) == 0 && parse_u64(s + 22, &v))
			meta->threads_missed = v;
		else if (strncmp(s, "threads not profiled, why: ", 27) == 0)
			e = profile_set_threads_missed(p, meta->threads_missed, s + 27);
		else if (strncmp(s, "event ", 6) == 0)
			event_comment(p, s + 6);
	}
	return e;
}

/* A frame from one Line, typed as pprof_write() writes them (see output.h). */
static void line_frame(const char *name, const char *file, int64_t line,
		       const struct pmapping *m, const char *const *str, struct profile_frame *f)
{
	int ln = line > 0 && line <= INT_MAX ? (int) line : 0;
	size_t n = strlen(name);

	*f = (struct profile_frame) { .kind = FRAME_NATIVE, .name = name };
	if (m) {
		f->module = *str[m->file] ? str[m->file] : NULL;
		f->file = *file && (!f->module || strcmp(file, f->module) != 0) ? file : NULL;
		f->line = ln;
	} else if (strcmp(file, KERNEL_FILE) == 0) {
		f->kind = FRAME_KERNEL;
	} else if (*file || ln) {
		f->kind = FRAME_PYTHON;
		f->file = *file ? file : NULL;
		f->line = ln;
	} else if (n >= 2 && name[0] == '[' && name[n - 1] == ']') {
		f->kind = profile_bracket_kind(name, n);
	}
}

/* The frames of every location, innermost (the first line) first. */
static int make_frames(struct pprof_reader *r, struct profile *p)
{
	struct plocation *locs = r->locations.v;
	const struct pline *lines = r->lines.v;
	const struct pfunction *fns = r->functions.v;
	const struct pmapping *maps = r->mappings.v;
	char name[64 + 4096];
	int e;

	r->loc_frames = malloc((r->lines.n + r->locations.n + 1) * sizeof(*r->loc_frames));
	if (!r->loc_frames)
		return -ENOMEM;
	for (size_t i = 0; i < r->locations.n; i++) {
		struct plocation *l = &locs[i];
		const struct pmapping *m = NULL;
		struct profile_frame f;

		if (l->mapping) {
			size_t k = id_lookup(&r->map_ids, l->mapping);

			if (k == SIZE_MAX)
				return pprof_fail(r, "location refers to a missing mapping");
			m = &maps[k];
		}
		l->first_frame = r->n_loc_frames;
		for (size_t j = 0; j < l->n_lines; j++) {
			const struct pline *ln = &lines[l->first_line + j];
			size_t k = id_lookup(&r->fn_ids, ln->fn);

			if (k == SIZE_MAX)
				return pprof_fail(r, "line refers to a missing function");
			line_frame(r->str[fns[k].name], r->str[fns[k].file], ln->line, m,
				   (const char *const *) r->str, &f);
			if ((e = profile_frame_id(p, &f, &r->loc_frames[r->n_loc_frames++])) < 0)
				return e;
		}
		if (l->n_lines == 0) {
			/* not symbolized: "module+0xOFFSET" as hwspy names nameless code */
			f = (struct profile_frame) { .kind = FRAME_NATIVE, .name = name };
			if (m && *r->str[m->file]) {
				uint64_t off = l->address >= m->start ?
					l->address - m->start + m->offset : l->address;

				f.module = r->str[m->file];
				snprintf(name, sizeof(name), "%.4096s+0x%" PRIx64, f.module, off);
			} else if (l->address) {
				snprintf(name, sizeof(name), "0x%" PRIx64, l->address);
			} else {
				f.kind = FRAME_SPECIAL;
				f.name = "[unknown]";
			}
			if ((e = profile_frame_id(p, &f, &r->loc_frames[r->n_loc_frames++])) < 0)
				return e;
		}
		l->n_frames = r->n_loc_frames - l->first_frame;
	}
	for (size_t i = 0; i < r->mappings.n; i++) {
		const struct pmapping *mp = &maps[i];

		/* a build-id that is not hex text (some producers hash other things) is left out */
		if (*r->str[mp->file] && mp->build_id &&
		    (e = profile_set_build_id(p, r->str[mp->file], r->str[mp->build_id])) == -ENOMEM)
			return e;
	}
	return 0;
}

/* One sample being read. */
struct sample_rd {
	struct pprof_reader *r;
	uint32_t *frames;       /* innermost first */
	size_t depth, cap;
	uint64_t *vals;         /* r->types.n */
	size_t n_vals;
};

static int sample_loc(void *ctx, uint64_t id)
{
	struct sample_rd *s = ctx;
	struct pprof_reader *r = s->r;
	size_t k = id_lookup(&r->loc_ids, id);
	const struct plocation *l;

	if (k == SIZE_MAX)
		return pprof_fail(r, "sample refers to a missing location");
	l = (const struct plocation *) r->locations.v + k;
	if (l->n_frames > PPROF_READ_MAX_FRAMES - s->depth)
		return pprof_fail(r, "stack deeper than 65536 frames");
	if (array_grow((void **) &s->frames, &s->cap, s->depth + l->n_frames, sizeof(*s->frames),
		       256) < 0)
		return -ENOMEM;
	memcpy(s->frames + s->depth, r->loc_frames + l->first_frame,
	       l->n_frames * sizeof(*s->frames));
	s->depth += l->n_frames;
	return 0;
}

static int sample_value(void *ctx, uint64_t v)
{
	struct sample_rd *s = ctx;

	if (s->n_vals == s->r->types.n)
		return pprof_fail(s->r, "sample value count differs from the sample types");
	if (v > INT64_MAX)
		return pprof_fail(s->r, "negative sample value");
	s->vals[s->n_vals++] = v;
	return 0;
}

static int sample_label(struct pprof_reader *r, struct pb_msg m, uint32_t *tid)
{
	uint64_t key = 0, num = 0;
	struct pb_field f;
	int e;

	while ((e = pb_next(r, &m, &f)) > 0) {
		if (f.num == LABEL_KEY)
			e = pb_want_varint(r, &f, &key);
		else if (f.num == LABEL_NUM)
			e = pb_want_varint(r, &f, &num);
		if (e < 0)
			return e;
	}
	if (e < 0 || (e = check_str(r, key)) < 0)
		return e;
	if (strcmp(r->str[key], "thread_id") == 0 && num >= 1 && num <= UINT32_MAX)
		*tid = (uint32_t) num;
	return 0;
}

static int add_samples(struct pprof_reader *r, struct profile *p)
{
	struct sample_rd s = { .r = r };
	const struct pb_msg *samples = r->samples.v;
	uint64_t total[PROFILE_MAX_EVENTS + 1] = { 0 }, values[PROFILE_MAX_EVENTS + 1];
	size_t n_values = profile_n_values(p);
	uint32_t unknown;
	struct profile_frame uf = { .kind = FRAME_SPECIAL, .name = "[unknown]" };
	int e = 0;

	s.vals = malloc(r->types.n * sizeof(*s.vals));
	if (!s.vals)
		return -ENOMEM;
	for (size_t i = 0; e >= 0 && i < r->samples.n; i++) {
		struct pb_msg m = samples[i];
		struct pb_field f;
		uint32_t tid = 0;

		s.depth = s.n_vals = 0;
		while ((e = pb_next(r, &m, &f)) > 0) {
			if (f.num == SAMPLE_LOCATION_ID)
				e = pb_repeated(r, &f, sample_loc, &s);
			else if (f.num == SAMPLE_VALUE)
				e = pb_repeated(r, &f, sample_value, &s);
			else if (f.num == SAMPLE_LABEL && (e = pb_want_msg(r, &f)) >= 0)
				e = sample_label(r, f.data, &tid);
			if (e < 0)
				break;
		}
		if (e < 0)
			break;
		if (s.n_vals != r->types.n) {
			e = pprof_fail(r, "sample value count differs from the sample types");
			break;
		}
		for (size_t c = 0; c < n_values; c++) {
			values[c] = s.vals[r->src[c]];
			if (values[c] > UINT64_MAX - total[c]) {
				e = pprof_fail(r, "values add up past 64 bits");
				break;
			}
			total[c] += values[c];
		}
		if (e < 0)
			break;
		if (s.depth == 0) {
			if ((e = profile_frame_id(p, &uf, &unknown)) < 0)
				break;
			e = profile_add(p, tid, &unknown, 1, values);
			continue;
		}
		for (size_t a = 0, b = s.depth - 1; a < b; a++, b--) {     /* root first */
			uint32_t t = s.frames[a];

			s.frames[a] = s.frames[b];
			s.frames[b] = t;
		}
		e = profile_add(p, tid, s.frames, s.depth, values);
	}
	free(s.frames);
	free(s.vals);
	return e < 0 ? e : 0;
}

int pprof_build(struct pprof_reader *r, struct profile **ret)
{
	struct profile *p = NULL;
	int e;

	if ((e = make_strings(r)) < 0 || (e = check_indexes(r)) < 0 ||
	    (e = id_table_build(r, &r->map_ids, r->mappings.v, r->mappings.n,
				sizeof(struct pmapping), "mapping id 0", "duplicate mapping id")) < 0 ||
	    (e = id_table_build(r, &r->loc_ids, r->locations.v, r->locations.n,
				sizeof(struct plocation), "location id 0",
				"duplicate location id")) < 0 ||
	    (e = id_table_build(r, &r->fn_ids, r->functions.v, r->functions.n,
				sizeof(struct pfunction), "function id 0",
				"duplicate function id")) < 0 ||
	    (e = make_events(r, &p)) < 0 || (e = make_meta(r, p)) < 0 ||
	    (e = make_frames(r, p)) < 0 || (e = add_samples(r, p)) < 0) {
		profile_free(p);
		return e;
	}
	*ret = p;
	return 0;
}
