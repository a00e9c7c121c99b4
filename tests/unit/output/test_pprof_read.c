/* pprof_read: hwspy's own files come back as they were written (pprof_write -> pprof_read),
 * foreign profiles built here byte by byte read as the header says, and each kind of malformed
 * input fails with -EINVAL and its reason. */
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

/* ---- a profile with every kind of frame ------------------------------------------------------ */

static const struct profile_frame frames[] = {
	{ FRAME_THREAD, "[thread 1234 python3]", NULL, 0, NULL },
	{ FRAME_PYTHON, "<module>", "/srv/app/main.py", 10, NULL },
	{ FRAME_PYTHON, "work", "/srv/app/main.py", 20, NULL },
	{ FRAME_PYTHON, "work", "/srv/app/main.py", 25, NULL },
	{ FRAME_PYTHON, "no_line", "/srv/app/lib.py", 0, NULL },
	{ FRAME_PYTHON, "no_file", NULL, 7, NULL },
	{ FRAME_NATIVE, "deflate_slow", NULL, 0, "libz.so.1" },
	{ FRAME_NATIVE, "inflate", "zlib/inflate.c", 99, "libz.so.1" },
	{ FRAME_NATIVE, "memcpy", NULL, 0, "libc.so.6" },
	{ FRAME_NATIVE, "libfoo.so+0x1a2b", NULL, 0, "libfoo.so" },
	{ FRAME_NATIVE, "jit_thing", NULL, 0, NULL },
	{ FRAME_NATIVE, "std::vector<int>::push_back(int const&)", NULL, 0, "libstdc++.so.6" },
	{ FRAME_KERNEL, "asm_exc_page_fault", NULL, 0, NULL },
	{ FRAME_SPECIAL, "[unknown]", NULL, 0, NULL },
	{ FRAME_SPECIAL, "[native]", NULL, 0, NULL },
	{ FRAME_WAIT, "[wait: futex (lock)]", NULL, 0, NULL },
	{ FRAME_WAIT, "[preempted]", NULL, 0, NULL },
	{ FRAME_PYTHON, "日本語 🐍 (x) [y]", "ü dir/a b.py", 3, NULL },
};

struct tstack {
	uint32_t tid;
	int frames[8];          /* root first, -1 ends */
	uint64_t values[4];     /* samples, cpu-clock, cache-misses:u, page-faults */
};

static const struct tstack stacks[] = {
	{ 1234, { 0, 1, 2, 6, 12, -1 }, { 3, 3000000, 7, 1 } },
	{ 1234, { 0, 1, 3, 7, 8, -1 }, { 5, 50000000, 0, 0 } },
	{ 5678, { 1, 4, 5, 9, 10, 11, -1 }, { 1, 1000000, 100, 2 } },
	{ 0, { 13, -1 }, { 2, 2000000, 500, 0 } },
	{ 0, { 14, 15, 12, -1 }, { 1, 1000000, 1, 1 } },
	{ 1234, { 1, 2, 6, 12, -1 }, { 4, 4000000, 0, 9 } },
	{ 77, { 1, -1 }, { 0, 0, 0, 0 } },     /* all 0: not written, so not read */
};

static struct profile *build_profile(void)
{
	const char *ev[] = { "cpu-clock", "cache-misses:u", "page-faults" };
	struct profile *p = profile_new(ev, 3);
	uint32_t ids[N_ELEMS(frames)];
	struct profile_meta *meta;

	assert_non_null(p);
	assert_int_equal(profile_set_event_rate(p, 0, 250, 0, true), 0);
	assert_int_equal(profile_set_event_rate(p, 2, 0, 5000, false), 0);
	meta = profile_meta(p);
	meta->start_time_ns = 1700000000123456789ull;
	meta->duration_ns = 2500000000ull;
	meta->lost = 4;
	meta->dropped = 5;
	meta->threads = 3;
	assert_int_equal(profile_set_threads_missed(p, 2, "2 out of memory"), 0);
	assert_int_equal(profile_set_target(p, "'python3' (pid 1234)"), 0);
	assert_int_equal(profile_set_python(p, "3.12.1"), 0);
	assert_int_equal(profile_set_build_id(p, "libz.so.1", "0123456789abcdef0123456789abcdef01234567"), 0);
	assert_int_equal(profile_set_build_id(p, "libc.so.6", "8d3f"), 0);
	for (size_t i = 0; i < N_ELEMS(frames); i++)
		assert_int_equal(profile_frame_id(p, &frames[i], &ids[i]), 0);
	for (size_t s = 0; s < N_ELEMS(stacks); s++) {
		uint32_t fr[8];
		size_t d;

		for (d = 0; stacks[s].frames[d] >= 0; d++)
			fr[d] = ids[stacks[s].frames[d]];
		assert_int_equal(profile_add(p, stacks[s].tid, fr, d, stacks[s].values), 0);
	}
	return p;
}

/* ---- comparing profiles by content ------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void dump_frame(FILE *f, const struct profile_frame *fr)
{
	fprintf(f, "{%d|%s|%s|%d|%s}", (int) fr->kind, fr->name, fr->file ? fr->file : "-",
		fr->line, fr->module ? fr->module : "-");
}

/* Everything the profile holds as text: stacks (with a value), sorted; events; meta;
 * build-ids of the modules named. Identical texts = identical profiles. */
static char *dump(const struct profile *p)
{
	size_t n = profile_n_stacks(p), k = 0, len = 0;
	char **lines = calloc(n + 1, sizeof(*lines)), *text = NULL;
	const struct profile_meta *m = profile_meta_const(p);
	const char *mods[] = { "libz.so.1", "libc.so.6", "libfoo.so", "libstdc++.so.6" };
	FILE *f;

	assert_non_null(lines);
	for (size_t i = 0; i < n; i++) {
		const struct profile_stack *st = profile_stack(p, i);
		const uint64_t *v = profile_values(p, i);
		size_t l = 0, c, nz = 0;

		for (c = 0; c < profile_n_values(p); c++)
			nz |= v[c] != 0;
		if (!nz)
			continue;
		f = open_memstream(&lines[k], &l);
		assert_non_null(f);
		fprintf(f, "tid %u:", st->tid);
		for (uint32_t d = 0; d < st->depth; d++)
			dump_frame(f, profile_frame(p, st->frames[d]));
		for (c = 0; c < profile_n_values(p); c++)
			fprintf(f, " %llu", (unsigned long long) v[c]);
		fclose(f);
		k++;
	}
	qsort(lines, k, sizeof(*lines), cmp_str);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	for (size_t i = 0; i < profile_n_events(p); i++) {
		const struct profile_event *e = profile_event(p, i);
		fprintf(f, "event %s freq %llu period %llu%s\n", e->name, (unsigned long long) e->freq,
			(unsigned long long) e->period, e->sampling ? " sampling" : "");
	}
	fprintf(f, "target %s python %s duration %llu lost %llu dropped %llu threads %llu "
		"missed %llu (%s) start %llu\n", m->target ? m->target : "-",
		m->python ? m->python : "-", (unsigned long long) m->duration_ns,
		(unsigned long long) m->lost, (unsigned long long) m->dropped,
		(unsigned long long) m->threads, (unsigned long long) m->threads_missed,
		m->threads_missed_why ? m->threads_missed_why : "-",
		(unsigned long long) m->start_time_ns);
	for (size_t i = 0; i < N_ELEMS(mods); i++) {
		const char *b = profile_build_id(p, mods[i]);
		fprintf(f, "build-id %s %s\n", mods[i], b ? b : "-");
	}
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "%s\n", lines[i]);
		free(lines[i]);
	}
	fclose(f);
	free(lines);
	return text;
}

static void write_mem(const struct profile *p, char **ret, size_t *ret_len)
{
	struct pprof_opts o = { .command_line = "hwspy record -e cpu-clock -o x.pb.gz -- python3 x" };
	FILE *f = open_memstream(ret, ret_len);

	assert_non_null(f);
	assert_int_equal(pprof_write(p, &o, f), 0);
	fclose(f);
}

static unsigned char *gunzip(const void *in, size_t n, size_t *ret_len)
{
	size_t cap = 1 << 20;
	unsigned char *out = malloc(cap);
	z_stream zs = { 0 };

	assert_non_null(out);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *) in;
	zs.avail_in = (uInt) n;
	zs.next_out = out;
	zs.avail_out = (uInt) cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*ret_len = cap - zs.avail_out;
	inflateEnd(&zs);
	return out;
}

/* ---- round trips ------------------------------------------------------------------------------ */

static void test_round_trip(void **state)
{
	struct profile *p = build_profile(), *q = NULL;
	struct pprof_read_error err = { "x" };
	char *data = NULL, *want, *got;
	size_t len = 0;
	FILE *in;
	(void) state;

	write_mem(p, &data, &len);
	in = fmemopen(data, len, "r");
	assert_non_null(in);
	assert_int_equal(pprof_read(in, &q, &err), 0);
	fclose(in);
	assert_non_null(q);
	assert_null(err.reason);
	want = dump(p);
	got = dump(q);
	assert_string_equal(got, want);
	/* ids too: locations are read in frame order */
	assert_int_equal(profile_n_frames(q), profile_n_frames(p));
	assert_int_equal(profile_n_stacks(q), profile_n_stacks(p) - 1);
	assert_int_equal(profile_n_build_ids(q), 2);

	/* and once more: the second file is the first */
	{
		char *data2 = NULL;
		size_t len2 = 0;
		unsigned char *a, *b;
		size_t la, lb;

		write_mem(q, &data2, &len2);
		a = gunzip(data, len, &la);
		b = gunzip(data2, len2, &lb);
		assert_int_equal(la, lb);
		assert_memory_equal(a, b, la);
		free(a);
		free(b);
		free(data2);
	}
	free(want);
	free(got);
	free(data);
	profile_free(p);
	profile_free(q);
}

static void test_uncompressed_and_sniff(void **state)
{
	struct profile *p = build_profile(), *q = NULL;
	char *data = NULL, *want, *got;
	size_t len = 0, plain_len;
	unsigned char *plain;
	(void) state;

	write_mem(p, &data, &len);
	assert_true(pprof_sniff(data, len));
	plain = gunzip(data, len, &plain_len);
	assert_true(pprof_sniff(plain, plain_len < 64 ? plain_len : 64));
	assert_int_equal(pprof_read_mem(plain, plain_len, &q, NULL), 0);
	want = dump(p);
	got = dump(q);
	assert_string_equal(got, want);

	/* text is not pprof */
	assert_false(pprof_sniff("", 0));
	assert_false(pprof_sniff("a;b 1\n", 6));
	assert_false(pprof_sniff("\n\nmain;work 12\n", 15));
	assert_false(pprof_sniff("2 (x.py:1) 3\n", 13));
	assert_false(pprof_sniff("*x;y 1\n", 7));
	assert_false(pprof_sniff("\x1f", 1));
	assert_true(pprof_sniff("\x32\x00", 2));        /* only the string table's "" */
	free(want);
	free(got);
	free(plain);
	free(data);
	profile_free(p);
	profile_free(q);
}

/* ---- a protobuf writer for hand-built profiles ----------------------------------------------- */

struct pb {
	unsigned char b[1 << 17];
	size_t n;
};

static void pb_raw(struct pb *m, const void *d, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	memcpy(m->b + m->n, d, n);
	m->n += n;
}

static void pb_varint(struct pb *m, uint64_t v)
{
	do {
		unsigned char c = (unsigned char) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		pb_raw(m, &c, 1);
		v >>= 7;
	} while (v);
}

static void pb_int(struct pb *m, unsigned field, uint64_t v)
{
	pb_varint(m, (uint64_t) field << 3);
	pb_varint(m, v);
}

static void pb_len(struct pb *m, unsigned field, const void *d, size_t n)
{
	pb_varint(m, (uint64_t) field << 3 | 2);
	pb_varint(m, n);
	pb_raw(m, d, n);
}

static void pb_msg(struct pb *m, unsigned field, const struct pb *sub)
{
	pb_len(m, field, sub->b, sub->n);
}

static void pb_str(struct pb *m, const char *s)
{
	pb_len(m, 6, s, strlen(s));
}

static struct pb *pb_new(void)
{
	struct pb *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	return m;
}

/* ValueType {type, unit} as field `field` of m. */
static void pb_vt(struct pb *m, unsigned field, uint64_t type, uint64_t unit)
{
	struct pb *s = pb_new();

	pb_int(s, 1, type);
	pb_int(s, 2, unit);
	pb_msg(m, field, s);
	free(s);
}

static void pb_function(struct pb *m, uint64_t id, uint64_t name, uint64_t file)
{
	struct pb *s = pb_new();

	pb_int(s, 1, id);
	pb_int(s, 2, name);
	pb_int(s, 4, file);
	pb_msg(m, 5, s);
	free(s);
}

/* Location id with mapping and address, and n lines {function, line}. */
static void pb_location(struct pb *m, uint64_t id, uint64_t mapping, uint64_t address,
			const uint64_t (*lines)[2], size_t n)
{
	struct pb *s = pb_new(), *l = pb_new();

	pb_int(s, 1, id);
	if (mapping)
		pb_int(s, 2, mapping);
	if (address)
		pb_int(s, 3, address);
	for (size_t i = 0; i < n; i++) {
		l->n = 0;
		pb_int(l, 1, lines[i][0]);
		pb_int(l, 2, lines[i][1]);
		pb_msg(s, 4, l);
	}
	pb_msg(m, 4, s);
	free(s);
	free(l);
}

/* A sample: values first (as Go writes them), location ids unpacked when `unpacked`. */
static void pb_sample(struct pb *m, const uint64_t *locs, size_t n_locs, const uint64_t *vals,
		      size_t n_vals, bool unpacked, uint64_t label_key, uint64_t label_num)
{
	struct pb *s = pb_new(), *p = pb_new();

	for (size_t i = 0; i < n_vals; i++)
		pb_varint(p, vals[i]);
	pb_msg(s, 2, p);
	p->n = 0;
	if (unpacked) {
		for (size_t i = 0; i < n_locs; i++)
			pb_int(s, 1, locs[i]);
	} else {
		for (size_t i = 0; i < n_locs; i++)
			pb_varint(p, locs[i]);
		pb_msg(s, 1, p);
	}
	if (label_key) {
		p->n = 0;
		pb_int(p, 1, label_key);
		pb_int(p, 3, label_num);
		pb_msg(s, 3, p);
	}
	pb_msg(m, 2, s);
	free(s);
	free(p);
}

static int read_pb(const struct pb *m, struct profile **ret, const char **ret_reason)
{
	struct pprof_read_error err = { NULL };
	int r = pprof_read_mem(m->b, m->n, ret, &err);

	*ret_reason = err.reason;
	return r;
}

/* ---- foreign profiles ------------------------------------------------------------------------- */

/* Strings of the Go-like CPU profile. */
enum { S_EMPTY, S_SAMPLES, S_COUNT, S_CPU, S_NS, S_PROG, S_BID, S_MAIN, S_INNER, S_MAIN_GO,
       S_TID, S_OTHER, N_S };
static const char *const go_strs[N_S] = {
	"", "samples", "count", "cpu", "nanoseconds", "/usr/bin/prog",
	"9A1B2C3D4E5F60718293a4b5c6d7e8f901234567", "main.main", "main.inner", "/src/main.go",
	"thread_id", "go.other",
};

/* Go's runtime/pprof CPU profile shape, fields in its order (string table last). */
static void go_profile(struct pb *m)
{
	struct pb *s = pb_new();
	const uint64_t inl[][2] = { { 2, 12 }, { 1, 30 } };     /* inner inlined into main */
	const uint64_t other[][2] = { { 3, 5 } };
	uint64_t l1[] = { 1, 2 }, l2[] = { 3, 1, 2 }, v1[] = { 3, 30000000 }, v2[] = { 1, 10000000 };

	pb_int(m, 9, 1700000000000000000ull);
	pb_vt(m, 1, S_SAMPLES, S_COUNT);
	pb_vt(m, 1, S_CPU, S_NS);
	pb_int(m, 10, 3000000000ull);
	pb_vt(m, 11, S_CPU, S_NS);
	pb_int(m, 12, 10000000);
	pb_sample(m, l1, 2, v1, 2, false, 0, 0);
	pb_sample(m, l2, 3, v2, 2, true, S_TID, 42);
	pb_int(s, 1, 1);
	pb_int(s, 2, 0x400000);
	pb_int(s, 3, 0x500000);
	pb_int(s, 5, S_PROG);
	pb_int(s, 6, S_BID);
	pb_msg(m, 3, s);
	pb_location(m, 1, 1, 0x401000, inl, 2);
	pb_location(m, 2, 1, 0x401234, NULL, 0);          /* not symbolized */
	pb_location(m, 3, 1, 0x402000, other, 1);
	pb_function(m, 1, S_MAIN, S_MAIN_GO);
	pb_function(m, 2, S_INNER, S_MAIN_GO);
	pb_function(m, 3, S_OTHER, S_MAIN_GO);
	for (size_t i = 0; i < N_S; i++)
		pb_str(m, go_strs[i]);
	free(s);
}

static void expect_frame(const struct profile *p, uint32_t id, enum frame_kind kind,
			 const char *name, const char *file, int line, const char *module)
{
	const struct profile_frame *f = profile_frame(p, id);

	assert_non_null(f);
	assert_int_equal(f->kind, kind);
	assert_string_equal(f->name, name);
	if (file)
		assert_string_equal(f->file, file);
	else
		assert_null(f->file);
	assert_int_equal(f->line, line);
	if (module)
		assert_string_equal(f->module, module);
	else
		assert_null(f->module);
}

static void test_foreign_go(void **state)
{
	struct pb *m = pb_new();
	struct profile *p = NULL;
	const char *reason;
	const struct profile_stack *st;
	const char *bid;
	(void) state;

	go_profile(m);
	assert_int_equal(read_pb(m, &p, &reason), 0);
	assert_int_equal(profile_n_events(p), 1);
	assert_string_equal(profile_event(p, 0)->name, "cpu");
	assert_int_equal(profile_event(p, 0)->period, 10000000);
	assert_true(profile_event(p, 0)->sampling);
	assert_int_equal(profile_meta_const(p)->start_time_ns, 1700000000000000000ull);
	assert_int_equal(profile_meta_const(p)->duration_ns, 3000000000ull);
	assert_null(profile_meta_const(p)->target);
	assert_int_equal(profile_n_stacks(p), 2);
	/* [1, 2] leaf first: location 2 (unsymbolized) is the root, then location 1's lines
	 * outermost first: main.main, then the inlined main.inner as the leaf */
	st = profile_stack(p, 0);
	assert_int_equal(st->tid, 0);
	assert_int_equal(st->depth, 3);
	expect_frame(p, st->frames[0], FRAME_NATIVE, "/usr/bin/prog+0x1234", NULL, 0, "/usr/bin/prog");
	expect_frame(p, st->frames[1], FRAME_NATIVE, "main.main", "/src/main.go", 30, "/usr/bin/prog");
	expect_frame(p, st->frames[2], FRAME_NATIVE, "main.inner", "/src/main.go", 12, "/usr/bin/prog");
	assert_int_equal(profile_values(p, 0)[0], 3);
	assert_int_equal(profile_values(p, 0)[1], 30000000);
	st = profile_stack(p, 1);
	assert_int_equal(st->tid, 42);
	assert_int_equal(st->depth, 4);
	expect_frame(p, st->frames[3], FRAME_NATIVE, "go.other", "/src/main.go", 5, "/usr/bin/prog");
	bid = profile_build_id(p, "/usr/bin/prog");
	assert_non_null(bid);
	assert_string_equal(bid, "9a1b2c3d4e5f60718293a4b5c6d7e8f901234567");
	assert_int_equal(profile_total(p, 1), 40000000);
	profile_free(p);
	free(m);
}

/* No "samples" type: the first type counts samples; the default type is event 0. */
static void test_foreign_no_samples_type(void **state)
{
	static const char *const strs[] = { "", "alloc_objects", "count", "alloc_space", "bytes",
					    "inuse_space", "f", "[weird]", "plain" };
	struct pb *m = pb_new();
	struct profile *p = NULL;
	const char *reason;
	const uint64_t ln[][2] = { { 1, 0 } }, ln2[][2] = { { 2, 0 } }, ln3[][2] = { { 3, 0 } };
	uint64_t locs[] = { 3, 2, 1 }, vals[] = { 2, 64, 32 };
	(void) state;

	pb_vt(m, 1, 1, 2);
	pb_vt(m, 1, 3, 4);
	pb_vt(m, 1, 5, 4);
	pb_int(m, 14, 5);       /* default_sample_type inuse_space */
	pb_sample(m, locs, 3, vals, 3, false, 0, 0);
	pb_location(m, 1, 0, 0, ln, 1);
	pb_location(m, 2, 0, 0, ln2, 1);
	pb_location(m, 3, 0, 0, ln3, 1);
	pb_function(m, 1, 6, 0);
	pb_function(m, 2, 7, 0);
	pb_function(m, 3, 8, 0);
	for (size_t i = 0; i < N_ELEMS(strs); i++)
		pb_str(m, strs[i]);
	assert_int_equal(read_pb(m, &p, &reason), 0);
	assert_int_equal(profile_n_events(p), 3);
	assert_string_equal(profile_event(p, 0)->name, "inuse_space");
	assert_string_equal(profile_event(p, 1)->name, "alloc_objects");
	assert_string_equal(profile_event(p, 2)->name, "alloc_space");
	assert_int_equal(profile_n_stacks(p), 1);
	assert_int_equal(profile_values(p, 0)[0], 2);
	assert_int_equal(profile_values(p, 0)[1], 32);
	assert_int_equal(profile_values(p, 0)[2], 2);
	assert_int_equal(profile_values(p, 0)[3], 64);
	/* neither file nor line nor mapping: typed by name */
	expect_frame(p, profile_stack(p, 0)->frames[0], FRAME_NATIVE, "f", NULL, 0, NULL);
	expect_frame(p, profile_stack(p, 0)->frames[1], FRAME_SPECIAL, "[weird]", NULL, 0, NULL);
	expect_frame(p, profile_stack(p, 0)->frames[2], FRAME_NATIVE, "plain", NULL, 0, NULL);
	profile_free(p);
	free(m);
}

/* ---- malformed input -------------------------------------------------------------------------- */

static void expect_bad(const void *data, size_t len, const char *reason)
{
	struct pprof_read_error err = { NULL };
	struct profile *p = (struct profile *) 1;

	assert_int_equal(pprof_read_mem(data, len, &p, &err), -EINVAL);
	assert_null(p);
	assert_non_null(err.reason);
	assert_string_equal(err.reason, reason);
}

static void expect_bad_pb(const struct pb *m, const char *reason)
{
	expect_bad(m->b, m->n, reason);
}

/* n bytes as one gzip member, appended to *out. */
static void gzip_append(const void *in, size_t n, unsigned char *out, size_t *len, size_t cap)
{
	z_stream zs = { 0 };

	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *) in;
	zs.avail_in = (uInt) n;
	zs.next_out = out + *len;
	zs.avail_out = (uInt) (cap - *len);
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*len = cap - zs.avail_out;
	deflateEnd(&zs);
}

/* Two gzip members read as one stream (as gzip -d reads them). */
static void test_gzip_members(void **state)
{
	struct profile *p = build_profile(), *q = NULL;
	char *data = NULL, *want, *got;
	size_t len = 0, plain_len, two_len = 0, cap;
	unsigned char *plain, *two;
	(void) state;

	write_mem(p, &data, &len);
	plain = gunzip(data, len, &plain_len);
	cap = plain_len * 2 + 1024;
	two = malloc(cap);
	assert_non_null(two);
	gzip_append(plain, plain_len / 3, two, &two_len, cap);
	gzip_append(plain + plain_len / 3, plain_len - plain_len / 3, two, &two_len, cap);
	assert_int_equal(pprof_read_mem(two, two_len, &q, NULL), 0);
	want = dump(p);
	got = dump(q);
	assert_string_equal(got, want);
	free(want);
	free(got);
	free(two);
	free(plain);
	free(data);
	profile_free(p);
	profile_free(q);
}

/* times copies of (head, hlen bytes, then n zero bytes), gzip-compressed (level 9) into a new
 * buffer: *ret_len bytes. */
static unsigned char *gzip_zeros(const void *head, size_t hlen, size_t n, size_t times,
				 size_t *ret_len)
{
	static const unsigned char zeros[65536];
	size_t cap = (n + hlen) * times / 512 + 65536;
	unsigned char *out = malloc(cap);
	z_stream zs = { 0 };

	assert_non_null(out);
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_out = out;
	zs.avail_out = (uInt) cap;
	for (size_t t = 0; t < times; t++) {
		size_t left = n;

		zs.next_in = (Bytef *) head;
		zs.avail_in = (uInt) hlen;
		assert_int_equal(deflate(&zs, Z_NO_FLUSH), Z_OK);
		while (left) {
			size_t piece = left < sizeof(zeros) ? left : sizeof(zeros);

			zs.next_in = (Bytef *) zeros;
			zs.avail_in = (uInt) piece;
			left -= piece;
			assert_int_equal(deflate(&zs, Z_NO_FLUSH), Z_OK);
			assert_int_equal(zs.avail_in, 0);
		}
	}
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*ret_len = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

/* Gzip bombs (80 MiB in ~80 kB). One of zeros alone is no protobuf: refused in its first
 * inflated chunk. One that reads as a Profile (80 string-table entries of 1 MiB of zeros) is
 * refused once it inflates past the floor of the ratio cap (64 MiB), not after 1 GiB, and says
 * so; so is one whose first field claims more than the cap. */
static void test_gzip_bomb(void **state)
{
	static const unsigned char string_1m[] = { 0x32, 0x80, 0x80, 0x40 };
	static const unsigned char string_80m[] = { 0x32, 0x80, 0x80, 0x80, 0x28 };
	struct pprof_read_error err = { NULL, 0 };
	struct profile *q = NULL;
	size_t len;
	unsigned char *bomb = gzip_zeros(NULL, 0, (size_t) 80 << 20, 1, &len);
	(void) state;

	assert_true(len < ((size_t) 1 << 20));
	assert_int_equal(pprof_read_mem(bomb, len, &q, &err), -EINVAL);
	assert_null(q);
	assert_non_null(err.reason);
	assert_non_null(strstr(err.reason, "no protobuf"));
	free(bomb);

	bomb = gzip_zeros(string_1m, sizeof(string_1m), (size_t) 1 << 20, 80, &len);
	assert_true(len < ((size_t) 1 << 20));
	err = (struct pprof_read_error) { NULL, 0 };
	assert_int_equal(pprof_read_mem(bomb, len, &q, &err), -EINVAL);
	assert_null(q);
	assert_non_null(err.reason);
	assert_non_null(strstr(err.reason, "gzip bomb"));
	assert_int_equal(err.inflate_limit, PPROF_READ_MIN_INFLATE);
	free(bomb);

	bomb = gzip_zeros(string_80m, sizeof(string_80m), (size_t) 1 << 20, 1, &len);
	err = (struct pprof_read_error) { NULL, 0 };
	assert_int_equal(pprof_read_mem(bomb, len, &q, &err), -EINVAL);
	assert_non_null(strstr(err.reason, "gzip bomb"));
	assert_int_equal(err.inflate_limit, PPROF_READ_MIN_INFLATE);
	free(bomb);
}

static void test_bad_gzip(void **state)
{
	struct profile *p = build_profile();
	char *data = NULL, *copy;
	size_t len = 0;
	(void) state;

	write_mem(p, &data, &len);
	expect_bad(data, len / 2, "truncated gzip stream");
	expect_bad(data, len - 1, "truncated gzip stream");
	copy = malloc(len + 3);
	assert_non_null(copy);
	memcpy(copy, data, len);
	copy[len - 6] ^= 0x55;          /* the CRC-32 */
	expect_bad(copy, len, "corrupt gzip stream");
	memcpy(copy, data, len);
	memcpy(copy + len, "abc", 3);
	expect_bad(copy, len + 3, "bytes after the gzip stream");
	free(copy);
	free(data);
	profile_free(p);
}

static void test_bad_protobuf(void **state)
{
	struct pb *m = pb_new(), *s = pb_new();
	static const unsigned char trunc_varint[] = { 0x48, 0x80 };
	static const unsigned char trunc_key[] = { 0x80 };
	static const unsigned char long_varint[] = { 0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
						     0xff, 0xff, 0xff, 0x7f };
	static const unsigned char past_end[] = { 0x0a, 0x05, 0x08, 0x01 };
	static const unsigned char huge_len[] = { 0x32, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
						  0xff, 0x7f };
	static const unsigned char group[] = { 0x0b, 0x0c };
	static const unsigned char trunc_fixed[] = { 0x49, 0x01, 0x02 };
	static const unsigned char zero_field[] = { 0x00, 0x00 };
	static const unsigned char wrong_wire[] = { 0x08, 0x01 };       /* sample_type as an int */
	(void) state;

	expect_bad(trunc_varint, sizeof(trunc_varint), "truncated varint");
	expect_bad(trunc_key, sizeof(trunc_key), "truncated varint");
	expect_bad(long_varint, sizeof(long_varint), "varint over 64 bits");
	expect_bad(past_end, sizeof(past_end), "length past the end of the message");
	expect_bad(huge_len, sizeof(huge_len), "length past the end of the message");
	expect_bad(group, sizeof(group), "unsupported wire type (group)");
	expect_bad(trunc_fixed, sizeof(trunc_fixed), "truncated fixed-size field");
	expect_bad(zero_field, sizeof(zero_field), "field number out of range");
	expect_bad(wrong_wire, sizeof(wrong_wire), "wrong wire type for a message field");
	expect_bad("", 0, "string table does not start with \"\"");

	/* a length inside a nested message past that message's end, not the file's */
	pb_varint(s, 1 << 3 | 2);
	pb_varint(s, 3);
	pb_raw(s, "\x01\x02", 2);
	pb_msg(m, 4, s);
	pb_str(m, "");
	expect_bad_pb(m, "length past the end of the message");

	m->n = 0;
	pb_str(m, "");
	expect_bad_pb(m, "no sample types");
	m->n = 0;
	pb_str(m, "x");
	expect_bad_pb(m, "string table does not start with \"\"");
	m->n = 0;
	pb_vt(m, 1, 1, 2);
	pb_str(m, "");
	pb_len(m, 6, "a\0b", 3);
	expect_bad_pb(m, "NUL byte in a string");
	free(m);
	free(s);
}

/* The Go-like profile with one thing broken (what = which). */
static void broken(struct pb *m, int what)
{
	struct pb *s = pb_new();
	const uint64_t one[][2] = { { 1, 3 } }, nofn[][2] = { { 9, 3 } };
	uint64_t l[] = { 1 }, missing[] = { 7 }, v[] = { 1, 5 }, v3[] = { 1, 5, 6 };
	uint64_t neg[] = { 1, (uint64_t) -5 }, big[] = { (uint64_t) INT64_MAX, 1 };

	m->n = 0;
	pb_vt(m, 1, what == 1 ? 99 : 1, 2);
	pb_vt(m, 1, 3, 4);
	switch (what) {
	case 2: pb_sample(m, missing, 1, v, 2, false, 0, 0); break;
	case 3: pb_sample(m, l, 1, v3, 3, false, 0, 0); break;
	case 4: pb_sample(m, l, 1, neg, 2, false, 0, 0); break;
	case 5:
		pb_sample(m, l, 1, big, 2, false, 0, 0);
		pb_sample(m, l, 1, big, 2, false, 0, 0);
		pb_sample(m, l, 1, big, 2, false, 0, 0);
		break;
	case 9: pb_sample(m, l, 1, v, 2, false, 99, 1); break;
	case 10: {
		uint64_t *deep = calloc(PPROF_READ_MAX_FRAMES + 1, sizeof(*deep));
		assert_non_null(deep);
		for (size_t i = 0; i <= PPROF_READ_MAX_FRAMES; i++)
			deep[i] = 1;
		pb_sample(m, deep, PPROF_READ_MAX_FRAMES + 1, v, 2, false, 0, 0);
		free(deep);
		break;
	}
	default: pb_sample(m, l, 1, v, 2, false, 0, 0); break;
	}
	pb_location(m, 1, what == 6 ? 5 : 0, 0, what == 7 ? nofn : one, 1);
	if (what == 8)
		pb_location(m, 1, 0, 0, one, 1);
	if (what == 11)
		pb_location(m, 0, 0, 0, one, 1);
	pb_function(m, 1, 5, 6);
	for (size_t i = 0; i < 7; i++)
		pb_str(m, (const char *[]) { "", "samples", "count", "cpu", "ns", "f", "f.py" }[i]);
	free(s);
}

static void test_bad_references(void **state)
{
	struct pb *m = pb_new();
	struct profile *p = NULL;
	const char *reason;
	static const struct { int what; const char *reason; } cases[] = {
		{ 1, "string index out of range" },
		{ 2, "sample refers to a missing location" },
		{ 3, "sample value count differs from the sample types" },
		{ 4, "negative sample value" },
		{ 5, "values add up past 64 bits" },
		{ 6, "location refers to a missing mapping" },
		{ 7, "line refers to a missing function" },
		{ 8, "duplicate location id" },
		{ 9, "string index out of range" },
		{ 10, "stack deeper than 65536 frames" },
		{ 11, "location id 0" },
	};
	(void) state;

	broken(m, 0);           /* the unbroken one reads */
	assert_int_equal(read_pb(m, &p, &reason), 0);
	assert_int_equal(profile_n_stacks(p), 1);
	expect_frame(p, profile_stack(p, 0)->frames[0], FRAME_PYTHON, "f", "f.py", 3, NULL);
	profile_free(p);
	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		broken(m, cases[i].what);
		print_message("# case %d: %s\n", cases[i].what, cases[i].reason);
		expect_bad_pb(m, cases[i].reason);
	}
	free(m);
}

/* Damaged copies of a real file (bytes changed, cut short) read or fail cleanly: 0, or -EINVAL
 * with a reason; never anything the sanitizers see. A fixed seed keeps the run the same. */
static void test_mutations(void **state)
{
	struct profile *p = build_profile(), *q;
	char *data = NULL;
	size_t len = 0, plain_len;
	unsigned char *plain, *copy;
	unsigned seed = 12345;
	size_t ok = 0, bad = 0;
	(void) state;

	write_mem(p, &data, &len);
	plain = gunzip(data, len, &plain_len);
	copy = malloc(plain_len);
	assert_non_null(copy);
	for (int round = 0; round < 3000; round++) {
		struct pprof_read_error err = { NULL };
		size_t n = plain_len;
		int r;

		memcpy(copy, plain, plain_len);
		for (int k = 0; k <= round % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[(seed >> 8) % plain_len] = (unsigned char) (seed >> 20);
		}
		if (round % 5 == 0)
			n = (seed >> 4) % plain_len;
		q = NULL;
		r = pprof_read_mem(copy, n, &q, &err);
		if (r == 0) {
			assert_non_null(q);
			ok++;
		} else {
			assert_int_equal(r, -EINVAL);
			assert_non_null(err.reason);
			assert_null(q);
			bad++;
		}
		profile_free(q);
	}
	print_message("# %zu damaged copies read, %zu rejected\n", ok, bad);
	assert_true(ok > 0 && bad > 0);
	free(copy);
	free(plain);
	free(data);
	profile_free(p);
}

/* A read error of the FILE is -errno, not -EINVAL. */
static void test_read_error(void **state)
{
	FILE *f = fopen("/", "r");      /* opens; reading a directory fails with EISDIR */
	struct profile *p = NULL;
	struct pprof_read_error err = { "x" };
	(void) state;

	assert_non_null(f);
	assert_int_equal(pprof_read(f, &p, &err), -EISDIR);
	assert_null(p);
	assert_null(err.reason);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_uncompressed_and_sniff),
		cmocka_unit_test(test_foreign_go),
		cmocka_unit_test(test_foreign_no_samples_type),
		cmocka_unit_test(test_gzip_members),
		cmocka_unit_test(test_bad_gzip),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_bad_protobuf),
		cmocka_unit_test(test_bad_references),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_read_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
