/* The pprof writer: the gzipped protobuf is inflated and decoded here by a small decoder
 * (varints, length-delimited and packed fields) and checked against the profile.
 *
 * `test_output_pprof --write DIR` writes DIR/out.pb.gz and DIR/expected.txt for check_pprof.py,
 * which reads the file with `go tool pprof`: expected.txt has one line per event,
 * "EVENT<TAB>TOTAL<TAB>TOP", TOP the frame with the largest flat value. */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "output/output.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define FFFD "\xef\xbf\xbd"

/* ---- the profile ---------------------------------------------------------------------------- */

struct tframe {
	enum frame_kind kind;
	const char *name, *file;
	int line;
	const char *module;
	const char *want_name, *want_file;      /* as pprof should hold them */
	const char *want_module;                /* the mapping's file, when not want_file */
};

enum { TH, MOD, WORK, WORK2, DEFL, MEMCPY, NOMOD, KERN, UNK, BAD, BADN, JP, INFL, N_FRAMES };

static const struct tframe frames[N_FRAMES] = {
	[TH] = { FRAME_THREAD, "[thread 1234 python3]", NULL, 0, NULL, "[thread 1234 python3]", "" },
	[MOD] = { FRAME_PYTHON, "<module>", "/srv/app/main.py", 10, NULL, "<module>", "/srv/app/main.py" },
	[WORK] = { FRAME_PYTHON, "work", "/srv/app/main.py", 20, NULL, "work", "/srv/app/main.py" },
	[WORK2] = { FRAME_PYTHON, "work", "/srv/app/main.py", 25, NULL, "work", "/srv/app/main.py" },
	[DEFL] = { FRAME_NATIVE, "deflate_slow", NULL, 0, "libz.so.1", "deflate_slow", "libz.so.1" },
	[MEMCPY] = { FRAME_NATIVE, "memcpy", NULL, 0, "libc.so.6", "memcpy", "libc.so.6" },
	[NOMOD] = { FRAME_NATIVE, "strange", NULL, 0, NULL, "strange", "" },
	[KERN] = { FRAME_KERNEL, "asm_exc_page_fault", NULL, 0, NULL, "asm_exc_page_fault",
		   "[kernel.kallsyms]" },
	[UNK] = { FRAME_SPECIAL, "[unknown]", NULL, 0, NULL, "[unknown]", "" },
	[BAD] = { FRAME_PYTHON, "bad\xff\xc0\xed\xa0\x80 name", "/srv/\xe6\x97.py", 3, NULL,
		  "bad" FFFD FFFD FFFD FFFD FFFD " name", "/srv/" FFFD ".py" },
	[BADN] = { FRAME_NATIVE, "cut \xe6\x97", NULL, 0, "lib\xffx.so", "cut " FFFD, "lib" FFFD "x.so" },
	[JP] = { FRAME_PYTHON, "日本語 🐍 \"q\"\n", "ü.py", 7, NULL, "日本語 🐍 \"q\"\n", "ü.py" },
	/* a native frame with its source file and line (DWARF): the function's file */
	[INFL] = { FRAME_NATIVE, "inflate", "zlib/inflate.c", 99, "libz.so.1", "inflate",
		   "zlib/inflate.c", "libz.so.1" },
};

#define LIBZ_BUILD_ID "0123abcdef"


struct tstack {
	uint32_t tid;
	int frames[6];          /* root first, -1 ends */
	uint64_t values[3];     /* samples, cpu-clock, cache-misses:u */
};

static const struct tstack stacks[] = {
	{ 1234, { TH, MOD, WORK, DEFL, KERN, -1 }, { 3, 3000000, 7 } },
	{ 1234, { TH, MOD, WORK2, INFL, MEMCPY, -1 }, { 5, 50000000, 0 } },
	{ 5678, { MOD, BAD, BADN, -1 }, { 1, 1000000, 100 } },
	{ 0, { UNK, NOMOD, JP, KERN, -1 }, { 2, 2000000, 500 } },
	{ 5678, { MOD, -1 }, { 0, 0, 0 } },     /* all 0: no sample */
};

static struct profile *build_profile(void)
{
	const char *ev[] = { "cpu-clock", "cache-misses:u" };
	struct profile *p = profile_new(ev, 2);
	uint32_t ids[N_FRAMES];

	assert_non_null(p);
	assert_int_equal(profile_set_event_rate(p, 0, 250, 0, true), 0);
	profile_meta(p)->start_time_ns = 1700000000123456789ull;
	profile_meta(p)->duration_ns = 2500000000ull;
	profile_meta(p)->lost = 3;
	profile_meta(p)->threads = 2;
	assert_int_equal(profile_set_threads_missed(p, 5, "5 out of file descriptors (ulimit -n 256)"), 0);
	assert_int_equal(profile_set_target(p, "'python3' (pid 1234)"), 0);
	assert_int_equal(profile_set_python(p, "3.12.1"), 0);
	assert_int_equal(profile_set_build_id(p, "libz.so.1", LIBZ_BUILD_ID), 0);
	for (int i = 0; i < N_FRAMES; i++) {
		const struct tframe *t = &frames[i];
		struct profile_frame f = { t->kind, t->name, t->file, t->line, t->module };
		assert_int_equal(profile_frame_id(p, &f, &ids[i]), 0);
		assert_int_equal(ids[i], i);
	}
	for (size_t s = 0; s < N_ELEMS(stacks); s++) {
		uint32_t fr[6];
		size_t d;
		for (d = 0; stacks[s].frames[d] >= 0; d++)
			fr[d] = ids[stacks[s].frames[d]];
		assert_int_equal(profile_add(p, stacks[s].tid, fr, d, stacks[s].values), 0);
	}
	return p;
}

/* ---- gunzip and decode ---------------------------------------------------------------------- */

static unsigned char *gunzip(const unsigned char *in, size_t n, size_t *ret_len)
{
	size_t cap = 1 << 16, len = 0;
	unsigned char *out = malloc(cap);
	z_stream zs = { 0 };
	int r;

	assert_non_null(out);
	assert_int_equal(inflateInit2(&zs, 15 + 32), Z_OK);
	zs.next_in = (Bytef *) in;
	zs.avail_in = (uInt) n;
	do {
		if (len == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		zs.next_out = out + len;
		zs.avail_out = (uInt) (cap - len);
		r = inflate(&zs, Z_NO_FLUSH);
		assert_true(r == Z_OK || r == Z_STREAM_END);
		len = cap - zs.avail_out;
	} while (r != Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0);    /* nothing after the gzip member */
	inflateEnd(&zs);
	*ret_len = len;
	return out;
}

struct dec {
	const unsigned char *p, *end;
};

struct field {
	unsigned num, wire;
	uint64_t v;                     /* wire 0 */
	struct dec data;                /* wire 2 */
};

static uint64_t rd_varint(struct dec *d)
{
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 7) {
		assert_true(d->p < d->end && shift < 64);
		v |= (uint64_t) (*d->p & 0x7f) << shift;
		if (!(*d->p++ & 0x80))
			return v;
	}
}

static bool next_field(struct dec *d, struct field *f)
{
	uint64_t key;

	if (d->p == d->end)
		return false;
	key = rd_varint(d);
	f->num = (unsigned) (key >> 3);
	f->wire = key & 7;
	assert_true(f->num > 0);
	if (f->wire == 0) {
		f->v = rd_varint(d);
	} else {
		uint64_t len;
		assert_int_equal(f->wire, 2);   /* the writer uses nothing else */
		len = rd_varint(d);
		assert_true(len <= (uint64_t) (d->end - d->p));
		f->data = (struct dec) { d->p, d->p + len };
		d->p += len;
	}
	return true;
}

/* Appends a repeated integer field, packed or not. */
static void rd_ints(const struct field *f, uint64_t *arr, size_t *n, size_t cap)
{
	if (f->wire == 0) {
		assert_true(*n < cap);
		arr[(*n)++] = f->v;
		return;
	}
	for (struct dec d = f->data; d.p < d.end;) {
		assert_true(*n < cap);
		arr[(*n)++] = rd_varint(&d);
	}
}

#define CAP 64

struct vt { uint64_t type, unit; };
struct psample {
	uint64_t locs[CAP], vals[CAP];
	size_t n_locs, n_vals, n_labels;
	uint64_t label_key, label_num;          /* the numeric label */
	uint64_t str_key[CAP], str_val[CAP];    /* the string labels, in order */
	size_t n_str_labels;
};
struct ploc { uint64_t id, mapping, address, fn, line; size_t n_lines; };
struct pfn { uint64_t id, name, system_name, file, start_line; };
struct pmap { uint64_t id, start, limit, file, build_id, has_functions; };

struct pp {
	char *strs[CAP];
	size_t n_strs;
	struct vt st[CAP];
	size_t n_st;
	struct psample samples[CAP];
	size_t n_samples;
	struct ploc locs[CAP];
	size_t n_locs;
	struct pfn fns[CAP];
	size_t n_fns;
	struct pmap maps[CAP];
	size_t n_maps;
	uint64_t comments[CAP];
	size_t n_comments;
	uint64_t time, duration, period, default_st;
	struct vt period_type;
	bool has_period_type;
};

static struct vt rd_value_type(struct dec d)
{
	struct vt v = { 0, 0 };
	struct field f;

	while (next_field(&d, &f))
		if (f.num == 1)
			v.type = f.v;
		else if (f.num == 2)
			v.unit = f.v;
	return v;
}

static void rd_sample(struct dec d, struct psample *s)
{
	struct field f, g;

	while (next_field(&d, &f)) {
		if (f.num == 1)
			rd_ints(&f, s->locs, &s->n_locs, CAP);
		else if (f.num == 2)
			rd_ints(&f, s->vals, &s->n_vals, CAP);
		else if (f.num == 3) {
			uint64_t key = 0, str = 0, num = 0;
			bool has_str = false;

			assert_int_equal(f.wire, 2);
			s->n_labels++;
			while (next_field(&f.data, &g)) {
				assert_true(g.num >= 1 && g.num <= 3);  /* key, str, num */
				if (g.num == 1)
					key = g.v;
				else if (g.num == 2)
					str = g.v, has_str = true;
				else
					num = g.v;
			}
			if (has_str) {          /* a string label */
				assert_int_equal(num, 0);
				assert_true(s->n_str_labels < CAP);
				s->str_key[s->n_str_labels] = key;
				s->str_val[s->n_str_labels++] = str;
			} else {
				s->label_key = key;
				s->label_num = num;
			}
		}
	}
}

static void decode(const unsigned char *buf, size_t len, struct pp *out)
{
	struct dec d = { buf, buf + len };
	struct field f, g, h;

	memset(out, 0, sizeof(*out));
	while (next_field(&d, &f)) {
		switch (f.num) {
		case 1:
			assert_true(out->n_st < CAP);
			out->st[out->n_st++] = rd_value_type(f.data);
			break;
		case 2:
			assert_true(out->n_samples < CAP);
			rd_sample(f.data, &out->samples[out->n_samples++]);
			break;
		case 3: {
			struct pmap *m = &out->maps[out->n_maps++];
			assert_true(out->n_maps <= CAP);
			while (next_field(&f.data, &g)) {
				uint64_t *dst[] = { NULL, &m->id, &m->start, &m->limit, NULL, &m->file,
						    &m->build_id, &m->has_functions };
				if (g.num < N_ELEMS(dst) && dst[g.num])
					*dst[g.num] = g.v;
			}
			break;
		}
		case 4: {
			struct ploc *l = &out->locs[out->n_locs++];
			assert_true(out->n_locs <= CAP);
			while (next_field(&f.data, &g)) {
				if (g.num == 1)
					l->id = g.v;
				else if (g.num == 2)
					l->mapping = g.v;
				else if (g.num == 3)
					l->address = g.v;
				else if (g.num == 4) {
					l->n_lines++;
					while (next_field(&g.data, &h))
						if (h.num == 1)
							l->fn = h.v;
						else if (h.num == 2)
							l->line = h.v;
				}
			}
			break;
		}
		case 5: {
			struct pfn *fn = &out->fns[out->n_fns++];
			assert_true(out->n_fns <= CAP);
			while (next_field(&f.data, &g)) {
				uint64_t *dst[] = { NULL, &fn->id, &fn->name, &fn->system_name, &fn->file,
						    &fn->start_line };
				if (g.num < N_ELEMS(dst))
					*dst[g.num] = g.v;
			}
			break;
		}
		case 6:
			assert_int_equal(f.wire, 2);
			assert_true(out->n_strs < CAP);
			out->strs[out->n_strs] = strndup((const char *) f.data.p, (size_t) (f.data.end - f.data.p));
			assert_int_equal(strlen(out->strs[out->n_strs]), f.data.end - f.data.p);
			out->n_strs++;
			break;
		case 9: out->time = f.v; break;
		case 10: out->duration = f.v; break;
		case 11:
			out->period_type = rd_value_type(f.data);
			out->has_period_type = true;
			break;
		case 12: out->period = f.v; break;
		case 13: rd_ints(&f, out->comments, &out->n_comments, CAP); break;
		case 14: out->default_st = f.v; break;
		default:
			fail_msg("unexpected Profile field %u", f.num);
		}
	}
}

static void pp_free(struct pp *p)
{
	for (size_t i = 0; i < p->n_strs; i++)
		free(p->strs[i]);
}

static const char *str(const struct pp *p, uint64_t i)
{
	assert_true(i < p->n_strs);
	return p->strs[i];
}

static const struct ploc *loc(const struct pp *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_locs; i++)
		if (p->locs[i].id == id)
			return &p->locs[i];
	fail_msg("no location %llu", (unsigned long long) id);
	return NULL;
}

static const struct pfn *fn(const struct pp *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_fns; i++)
		if (p->fns[i].id == id)
			return &p->fns[i];
	fail_msg("no function %llu", (unsigned long long) id);
	return NULL;
}

static const struct pmap *map(const struct pp *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_maps; i++)
		if (p->maps[i].id == id)
			return &p->maps[i];
	fail_msg("no mapping %llu", (unsigned long long) id);
	return NULL;
}

static void write_and_decode(const struct profile *p, const struct pprof_opts *o, struct pp *ret)
{
	char *text = NULL;
	size_t len = 0, plain_len;
	FILE *f = open_memstream(&text, &len);
	unsigned char *plain;

	assert_non_null(f);
	assert_int_equal(pprof_write(p, o, f), 0);
	fclose(f);
	assert_true(len > 18 && (unsigned char) text[0] == 0x1f && (unsigned char) text[1] == 0x8b);
	plain = gunzip((unsigned char *) text, len, &plain_len);
	decode(plain, plain_len, ret);
	free(plain);
	free(text);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_header(void **state)
{
	struct profile *p = build_profile();
	struct pprof_opts o = { .command_line = "hwspy record -e cpu-clock -- python3 x\xff.py" };
	struct pp d;
	(void) state;

	write_and_decode(p, &o, &d);
	assert_true(d.n_strs > 0);
	assert_string_equal(d.strs[0], "");
	for (size_t i = 1; i < d.n_strs; i++)        /* each string once */
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(d.strs[i], d.strs[j]);
	assert_int_equal(d.n_st, 3);
	assert_string_equal(str(&d, d.st[0].type), "samples");
	assert_string_equal(str(&d, d.st[0].unit), "count");
	assert_string_equal(str(&d, d.st[1].type), "cpu-clock");
	assert_string_equal(str(&d, d.st[1].unit), "nanoseconds");
	assert_string_equal(str(&d, d.st[2].type), "cache-misses:u");
	assert_string_equal(str(&d, d.st[2].unit), "events");
	assert_string_equal(str(&d, d.default_st), "cpu-clock");
	assert_true(d.has_period_type);
	assert_string_equal(str(&d, d.period_type.type), "cpu-clock");
	assert_string_equal(str(&d, d.period_type.unit), "nanoseconds");
	assert_int_equal(d.period, 4000000);    /* 1e9 / 250 Hz */
	assert_int_equal(d.time, 1700000000123456789ull);
	assert_int_equal(d.duration, 2500000000ull);
	assert_int_equal(d.n_comments, 9);
	assert_string_equal(str(&d, d.comments[0]), "hwspy " HWSPY_VERSION);
	assert_string_equal(str(&d, d.comments[1]), "hwspy record -e cpu-clock -- python3 x" FFFD ".py");
	/* what pprof has no field for, as pprof_read() reads it back */
	assert_string_equal(str(&d, d.comments[2]), "target: 'python3' (pid 1234)");
	assert_string_equal(str(&d, d.comments[3]), "python: 3.12.1");
	assert_string_equal(str(&d, d.comments[4]), "lost: 3");
	assert_string_equal(str(&d, d.comments[5]), "threads: 2");
	assert_string_equal(str(&d, d.comments[6]), "threads not profiled: 5");
	assert_string_equal(str(&d, d.comments[7]),
			    "threads not profiled, why: 5 out of file descriptors (ulimit -n 256)");
	assert_string_equal(str(&d, d.comments[8]), "event 0: sampling, frequency 250 Hz");
	pp_free(&d);
	profile_free(p);
}

static void test_samples(void **state)
{
	struct profile *p = build_profile();
	const char *tid_key = NULL;
	size_t k = 0;
	struct pp d;
	(void) state;

	write_and_decode(p, NULL, &d);
	assert_int_equal(d.n_comments, 8);              /* no command line */
	assert_int_equal(d.n_samples, N_ELEMS(stacks) - 1);
	for (size_t s = 0; s < N_ELEMS(stacks); s++) {
		const struct tstack *ts = &stacks[s];
		const struct psample *ps;
		size_t depth;

		if (!ts->values[0] && !ts->values[1] && !ts->values[2])
			continue;
		ps = &d.samples[k++];
		for (depth = 0; ts->frames[depth] >= 0; depth++)
			;
		assert_int_equal(ps->n_locs, depth);
		for (size_t i = 0; i < depth; i++) {       /* leaf first */
			const struct tframe *want = &frames[ts->frames[depth - 1 - i]];
			const struct ploc *l = loc(&d, ps->locs[i]);
			const struct pfn *f = fn(&d, l->fn);

			assert_int_equal(l->n_lines, 1);
			assert_int_equal(l->address, 0);
			assert_string_equal(str(&d, f->name), want->want_name);
			assert_int_equal(f->system_name, 0);     /* else pprof "demangles" <module> */
			assert_string_equal(str(&d, f->file), want->want_file);
			assert_int_equal(f->start_line, 0);
			assert_int_equal(l->line, want->kind == FRAME_PYTHON ||
						  want->kind == FRAME_NATIVE ? want->line : 0);
			if (want->kind == FRAME_NATIVE && want->module) {
				const struct pmap *m = map(&d, l->mapping);
				const char *mod = want->want_module ? want->want_module
								    : want->want_file;
				assert_string_equal(str(&d, m->file), mod);
				assert_int_equal(m->has_functions, 1);
				assert_int_equal(m->start, 0);
				assert_int_equal(m->limit, 0);
				if (strcmp(mod, "libz.so.1") == 0)
					assert_string_equal(str(&d, m->build_id), LIBZ_BUILD_ID);
				else
					assert_int_equal(m->build_id, 0);
			} else {
				assert_int_equal(l->mapping, 0);
			}
		}
		assert_int_equal(ps->n_vals, 3);
		for (size_t v = 0; v < 3; v++)
			assert_int_equal(ps->vals[v], ts->values[v]);
		assert_int_equal(ps->n_str_labels, 0);  /* none asked for */
		if (ts->tid) {
			assert_int_equal(ps->n_labels, 1);
			tid_key = str(&d, ps->label_key);
			assert_string_equal(tid_key, "thread_id");
			assert_int_equal(ps->label_num, ts->tid);
		} else {
			assert_int_equal(ps->n_labels, 0);
		}
	}
	assert_non_null(tid_key);
	pp_free(&d);
	profile_free(p);
}

static void test_functions_and_mappings(void **state)
{
	struct profile *p = build_profile();
	struct pp d;
	(void) state;

	write_and_decode(p, NULL, &d);
	assert_int_equal(d.n_locs, N_FRAMES);           /* one per frame */
	assert_int_equal(d.n_fns, N_FRAMES - 1);        /* work twice (two lines) */
	assert_int_equal(loc(&d, WORK + 1)->fn, loc(&d, WORK2 + 1)->fn);
	assert_int_equal(loc(&d, WORK2 + 1)->line, 25);
	assert_int_equal(d.n_maps, 3);                  /* libz, libc, lib\xffx */
	for (size_t i = 0; i < d.n_locs; i++)
		assert_true(d.locs[i].id >= 1 && d.locs[i].id <= N_FRAMES);
	for (size_t i = 0; i < d.n_fns; i++) {
		assert_true(d.fns[i].id >= 1 && d.fns[i].id <= d.n_fns);
		for (size_t j = 0; j < i; j++)
			assert_true(d.fns[i].id != d.fns[j].id);
	}
	for (size_t i = 0; i < d.n_maps; i++)
		assert_true(d.maps[i].id >= 1 && d.maps[i].id <= d.n_maps);
	pp_free(&d);
	profile_free(p);
}

static void test_empty_and_overflow(void **state)
{
	const char *ev[] = { "task-clock:u" };
	struct profile *p = profile_new(ev, 1);
	uint64_t big[] = { 1, (uint64_t) INT64_MAX }, one[] = { 1, 1 };
	uint32_t id;
	struct profile_frame f = { FRAME_SPECIAL, "[unknown]", NULL, 0, NULL };
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	struct pp d;
	(void) state;

	assert_int_equal(profile_set_event_rate(p, 0, 0, 1000000, true), 0);
	write_and_decode(p, NULL, &d);
	assert_int_equal(d.n_samples + d.n_locs + d.n_fns + d.n_maps, 0);
	assert_int_equal(d.n_st, 2);
	assert_string_equal(str(&d, d.st[1].unit), "nanoseconds");
	assert_int_equal(d.period, 1000000);
	assert_int_equal(d.time + d.duration, 0);
	pp_free(&d);

	/* a total over INT64_MAX: nothing written */
	assert_int_equal(profile_frame_id(p, &f, &id), 0);
	assert_int_equal(profile_add(p, 0, &id, 1, big), 0);
	f.name = "[idle]";
	assert_int_equal(profile_frame_id(p, &f, &id), 0);
	assert_int_equal(profile_add(p, 0, &id, 1, one), 0);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(pprof_write(p, NULL, out), -EOVERFLOW);
	fclose(out);
	assert_int_equal(len, 0);
	free(text);
	profile_free(p);
}

static const char *const test_labels[] = { "service", "api", "pid", "123", NULL };
static const char *const test_comments[] = { "monitor: every 60 s", "second line", NULL };

static void write_mem(const struct profile *p, const struct pprof_opts *o, char **ret, size_t *ret_len)
{
	FILE *f = open_memstream(ret, ret_len);

	assert_non_null(f);
	assert_int_equal(pprof_write(p, o, f), 0);
	assert_int_equal(fclose(f), 0);
}

/* opts->labels on every sample (after thread_id), opts->comments after hwspy's own; the file
 * reads back whole with pprof_read(), which keeps neither; bad labels are -EINVAL. */
static void test_labels_and_comments(void **state)
{
	struct profile *p = build_profile(), *back = NULL;
	struct pprof_opts o = { .command_line = "hwspy monitor", .labels = test_labels,
				.comments = test_comments };
	struct pprof_read_error err;
	char *text = NULL;
	size_t len = 0, k = 0;
	struct pp d;
	(void) state;

	write_and_decode(p, &o, &d);
	assert_int_equal(d.n_samples, N_ELEMS(stacks) - 1);
	for (size_t s = 0; s < N_ELEMS(stacks); s++) {
		const struct psample *ps;

		if (!stacks[s].values[0])
			continue;
		ps = &d.samples[k++];
		assert_int_equal(ps->n_labels, (stacks[s].tid ? 1 : 0) + 2);
		if (stacks[s].tid) {
			assert_string_equal(str(&d, ps->label_key), "thread_id");
			assert_int_equal(ps->label_num, stacks[s].tid);
		}
		assert_int_equal(ps->n_str_labels, 2);
		assert_string_equal(str(&d, ps->str_key[0]), "service");
		assert_string_equal(str(&d, ps->str_val[0]), "api");
		assert_string_equal(str(&d, ps->str_key[1]), "pid");
		assert_string_equal(str(&d, ps->str_val[1]), "123");
	}
	assert_int_equal(d.n_comments, 9 + 2);
	assert_string_equal(str(&d, d.comments[0]), "hwspy " HWSPY_VERSION);
	assert_string_equal(str(&d, d.comments[1]), "hwspy monitor");
	assert_string_equal(str(&d, d.comments[8]), "event 0: sampling, frequency 250 Hz");
	assert_string_equal(str(&d, d.comments[9]), "monitor: every 60 s");
	assert_string_equal(str(&d, d.comments[10]), "second line");
	for (size_t i = 1; i < d.n_strs; i++)        /* each string once */
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(d.strs[i], d.strs[j]);
	pp_free(&d);

	/* our reader takes it (labels and the extra comments are not kept) */
	write_mem(p, &o, &text, &len);
	assert_int_equal(pprof_read_mem(text, len, &back, &err), 0);
	assert_int_equal(profile_n_stacks(back), N_ELEMS(stacks) - 1);
	assert_string_equal(profile_meta_const(back)->target, "'python3' (pid 1234)");
	assert_string_equal(profile_meta_const(back)->python, "3.12.1");
	assert_int_equal(profile_meta_const(back)->lost, 3);
	profile_free(back);
	free(text);

	/* a key without a value, an empty key, thread_id: nothing written */
	{
		static const char *const odd[] = { "service", "api", "pid", NULL };
		static const char *const empty[] = { "", "x", NULL };
		static const char *const tid[] = { "thread_id", "7", NULL };
		const char *const *bad[] = { odd, empty, tid };

		for (size_t i = 0; i < N_ELEMS(bad); i++) {
			FILE *f;

			text = NULL;
			len = 0;
			f = open_memstream(&text, &len);
			assert_non_null(f);
			o.labels = bad[i];
			assert_int_equal(pprof_write(p, &o, f), -EINVAL);
			fclose(f);
			assert_int_equal(len, 0);
			free(text);
		}
	}
	profile_free(p);
}

/* Empty label and comment lists write the file as NULL ones do, byte for byte. */
static void test_empty_lists(void **state)
{
	struct profile *p = build_profile();
	static const char *const none[] = { NULL };
	struct pprof_opts a = { .command_line = "x" }, b = { .command_line = "x", .labels = none,
							      .comments = none };
	char *ta = NULL, *tb = NULL;
	size_t la = 0, lb = 0;
	(void) state;

	write_mem(p, &a, &ta, &la);
	write_mem(p, &b, &tb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(ta, tb, la);
	free(ta);
	free(tb);
	profile_free(p);
}

/* ---- --write DIR ---------------------------------------------------------------------------- */

static int write_files(const char *dir)
{
	struct profile *p = build_profile();
	struct pprof_opts o = { .command_line = "test_output_pprof --write" };
	char path[4096];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	f = fopen(path, "w");
	if (!f)
		return 1;
	r = pprof_write(p, &o, f) < 0;
	r |= fclose(f) != 0;
	snprintf(path, sizeof(path), "%s/expected.txt", dir);
	f = fopen(path, "w");
	if (!f)
		return 1;
	for (size_t col = 1; col < profile_n_values(p); col++) {
		uint64_t flat[N_FRAMES] = { 0 }, total = 0;
		size_t top = 0;

		for (size_t s = 0; s < N_ELEMS(stacks); s++) {
			size_t depth;
			for (depth = 0; stacks[s].frames[depth] >= 0; depth++)
				;
			flat[stacks[s].frames[depth - 1]] += stacks[s].values[col];
			total += stacks[s].values[col];
		}
		for (size_t i = 1; i < N_FRAMES; i++)
			if (flat[i] > flat[top])
				top = i;
		fprintf(f, "%s\t%llu\t%s\n", profile_event(p, col - 1)->name,
			(unsigned long long) total, frames[top].want_name);
	}
	r |= fclose(f) != 0;
	/* labels.pb.gz: with test_labels and test_comments (`go tool pprof -tags`) */
	snprintf(path, sizeof(path), "%s/labels.pb.gz", dir);
	f = fopen(path, "w");
	if (!f)
		return 1;
	o.labels = test_labels;
	o.comments = test_comments;
	r |= pprof_write(p, &o, f) < 0;
	r |= fclose(f) != 0;
	profile_free(p);
	return r;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_functions_and_mappings),
		cmocka_unit_test(test_empty_and_overflow),
		cmocka_unit_test(test_labels_and_comments),
		cmocka_unit_test(test_empty_lists),
	};

	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_files(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
