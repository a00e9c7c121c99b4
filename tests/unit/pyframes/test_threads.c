/*
 * threads.c: Python's thread names (threading._active, Thread._name and _native_id) read from
 * synthetic CPython memory laid out with the real 3.8 / 3.11 / 3.12 tables and the 3.13+ object
 * model: combined instance dicts (3.8-3.10, and a 3.13 instance whose values moved to a dict),
 * 3.11 managed values, 3.12's tagged dict-or-values, 3.13+ inline values; a registry without
 * threading; and hostile dicts (bad sizes, counts past the table, unaligned pointers, negative
 * ints), which leave threads out or fail, never read outside what they point at.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pyframes/pyframes_internal.h"

#define BASE 0x100000ull
#define SIZE (1ull << 20)

struct world {
	unsigned char *mem;
	uint64_t next;
	struct remote_mem rm;
	struct py_layout l;
	uint64_t runtime, interp, type_thread, type_str;
	struct pyframes *pf;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct world *w = ctx;

	if (addr < BASE || addr + len > BASE + SIZE || addr + len < addr)
		return -EFAULT;
	memcpy(buf, w->mem + (addr - BASE), len);
	return 0;
}

static uint64_t alloc(struct world *w, size_t n)
{
	uint64_t a = w->next;

	w->next += (n + 15) & ~(size_t) 15;
	assert_true(w->next <= BASE + SIZE);
	return a;
}

static void put8(struct world *w, uint64_t a, uint8_t v) { w->mem[a - BASE] = v; }
static void put32(struct world *w, uint64_t a, uint32_t v) { memcpy(w->mem + (a - BASE), &v, 4); }
static void put64(struct world *w, uint64_t a, uint64_t v) { memcpy(w->mem + (a - BASE), &v, 8); }

static uint64_t mk_str(struct world *w, const char *s)
{
	const struct py_layout *l = &w->l;
	size_t n = strlen(s);
	uint64_t a = alloc(w, l->str_ascii_size + n + 1);
	uint32_t st = 1u << l->str_kind_shift | 1u << l->str_compact_bit | 1u << l->str_ascii_bit;

	if (l->str_ready_bit != PF_NONE)
		st |= 1u << l->str_ready_bit;
	put64(w, a + l->ob_type, w->type_str);
	put64(w, a + l->str_length, n);
	put32(w, a + l->str_state, st);
	memcpy(w->mem + (a - BASE) + l->str_ascii_size, s, n);
	return a;
}

static uint64_t mk_int(struct world *w, uint64_t v)
{
	uint64_t a = alloc(w, 32);

	if (w->l.objs >= PY_OBJS_312)
		put64(w, a + 16, (v ? 1u : 0u) << 3 | (v ? 0 : 1));
	else
		put64(w, a + 16, v ? 1 : 0);
	put32(w, a + 24, (uint32_t) v);
	return a;
}

/* A keys object of n entries (n <= 5): names[i] -> values[i] (values NULL: a split table's keys,
 * its values elsewhere). */
static uint64_t mk_keys(struct world *w, const uint64_t *keys, const uint64_t *values, size_t n)
{
	uint64_t a;

	if (w->l.objs == PY_OBJS_38) {
		a = alloc(w, 40 + 8 + 5 * 24);
		put64(w, a + 8, 8);                     /* dk_size */
		put64(w, a + 32, n);                    /* dk_nentries */
		for (size_t i = 0; i < n; i++) {
			put64(w, a + 48 + i * 24 + 8, keys[i]);
			put64(w, a + 48 + i * 24 + 16, values ? values[i] : 0);
		}
	} else {
		a = alloc(w, 32 + 8 + 5 * 16);
		put8(w, a + 8, 3);                      /* dk_log2_size */
		put8(w, a + 9, 3);                      /* dk_log2_index_bytes */
		put8(w, a + 10, values ? 1 : 2);        /* unicode, or split */
		put64(w, a + 24, n);                    /* dk_nentries */
		for (size_t i = 0; i < n; i++) {
			put64(w, a + 40 + i * 16, keys[i]);
			put64(w, a + 40 + i * 16 + 8, values ? values[i] : 0);
		}
	}
	return a;
}

static uint64_t mk_dict(struct world *w, const uint64_t *keys, const uint64_t *values, size_t n)
{
	uint64_t d = alloc(w, 48);

	put64(w, d + 32, mk_keys(w, keys, values, n));
	return d;
}

/* A Thread named name with native id tid, its attributes where this layout keeps them;
 * as_dict: in a dict even where the layout could keep them inline (3.13+). */
static uint64_t mk_thread(struct world *w, const char *name, uint64_t tid, bool as_dict)
{
	uint64_t keys[3] = { mk_str(w, "_target"), mk_str(w, "_name"), mk_str(w, "_native_id") };
	uint64_t vals[3] = { mk_str(w, "x"), mk_str(w, name), mk_int(w, tid) };
	uint64_t pre = alloc(w, 32 + 16 + 40), obj = pre + 32, v;

	put64(w, obj + 8, w->type_thread);
	switch (w->l.objs) {
	case PY_OBJS_38:
		put64(w, obj + 16, mk_dict(w, keys, vals, 3));     /* tp_dictoffset 16 */
		break;
	case PY_OBJS_311:
		v = alloc(w, 24);
		for (int i = 0; i < 3; i++)
			put64(w, v + 8 * (uint64_t) i, vals[i]);
		put64(w, obj - 32, v);
		break;
	case PY_OBJS_312:
		v = alloc(w, 24);
		for (int i = 0; i < 3; i++)
			put64(w, v + 8 * (uint64_t) i, vals[i]);
		put64(w, obj - 24, v - 1);
		break;
	default:
		if (as_dict) {
			put64(w, obj - 24, mk_dict(w, keys, vals, 3));
		} else {
			put8(w, obj + 16, 4);           /* capacity */
			put8(w, obj + 17, 3);           /* size */
			put8(w, obj + 19, 1);           /* valid */
			for (int i = 0; i < 3; i++)
				put64(w, obj + 24 + 8 * (uint64_t) i, vals[i]);
		}
		break;
	}
	return obj;
}

/* The registry: sys.modules {"sys", "threading"}, threading's dict {"_limbo", "_active"}, and
 * _active {ident: thread} for each thread. */
static uint64_t mk_registry(struct world *w, const uint64_t *threads, size_t n)
{
	uint64_t ids[4], mod = alloc(w, 32), md;
	uint64_t mkeys[2] = { mk_str(w, "sys"), mk_str(w, "threading") };
	uint64_t mvals[2] = { alloc(w, 32), mod };
	uint64_t tkeys[2] = { mk_str(w, "_limbo"), mk_str(w, "_active") };
	uint64_t active, tvals[2];

	for (size_t i = 0; i < n; i++)
		ids[i] = mk_int(w, 0x7f0000001000 + i);
	active = mk_dict(w, ids, threads, n);
	tvals[0] = alloc(w, 48);
	tvals[1] = active;
	md = mk_dict(w, tkeys, tvals, 2);
	put64(w, mod + 16, md);
	put64(w, w->interp + w->l.is_modules, mk_dict(w, mkeys, mvals, 2));
	return active;
}

static void world_init(struct world *w, int minor, enum py_objs_kind objs)
{
	uint64_t tkeys[3];

	memset(w, 0, sizeof(*w));
	w->l = *layout_static(3, minor);
	w->l.objs = objs;
	w->mem = calloc(1, SIZE);
	assert_non_null(w->mem);
	w->next = BASE + 0x1000;
	w->rm.read = fake_read;
	w->rm.ctx = w;
	w->runtime = alloc(w, 1024);
	w->interp = alloc(w, 4096);
	w->type_str = alloc(w, 64);
	put64(w, w->runtime + w->l.rt_interp_head, w->interp);
	/* Thread's type: basicsize 16, flags, tp_dictoffset 16 (<= 3.10) or -1, cached keys */
	w->type_thread = alloc(w, 1024);
	put64(w, w->type_thread + 32, 16);
	put64(w, w->type_thread + 168, objs == PY_OBJS_38 ? 0 : objs == PY_OBJS_313 ? 0x14 : 0x10);
	put64(w, w->type_thread + 288, objs == PY_OBJS_38 ? 16 : (uint64_t) -1);
	tkeys[0] = mk_str(w, "_target");
	tkeys[1] = mk_str(w, "_name");
	tkeys[2] = mk_str(w, "_native_id");
	put64(w, w->type_thread + w->l.ht_cached_keys, mk_keys(w, tkeys, NULL, 3));
	assert_int_equal(pyframes_new_from_layout(&w->rm, &w->l, w->runtime, 0, 1, &w->pf), 0);
}

static void world_free(struct world *w)
{
	pyframes_free(w->pf);
	free(w->mem);
}

static const struct { int minor; enum py_objs_kind objs; } models[] = {
	{ 8, PY_OBJS_38 }, { 10, PY_OBJS_38 }, { 11, PY_OBJS_311 }, { 12, PY_OBJS_312 },
	{ 12, PY_OBJS_313 },     /* 3.13+'s object model over 3.12's other offsets */
};

static void test_names(void **state)
{
	(void) state;
	for (size_t k = 0; k < sizeof(models) / sizeof(models[0]); k++) {
		struct world w;
		struct pyframes_thread_name out[4];
		uint64_t th[3];
		size_t n;

		world_init(&w, models[k].minor, models[k].objs);
		th[0] = mk_thread(&w, "MainThread", 4242, false);
		th[1] = mk_thread(&w, "CustomThreadNameLong", 4243, false);
		th[2] = mk_thread(&w, "Materialized", 4244, true);
		mk_registry(&w, th, models[k].objs == PY_OBJS_313 ? 3 : 2);
		assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), 0);
		assert_int_equal(n, models[k].objs == PY_OBJS_313 ? 3 : 2);
		assert_int_equal(out[0].tid, 4242);
		assert_string_equal(out[0].name, "MainThread");
		assert_int_equal(out[1].tid, 4243);
		assert_string_equal(out[1].name, "CustomThreadNameLong");
		if (n == 3)
			assert_string_equal(out[2].name, "Materialized");
		/* at most max */
		assert_int_equal(pyframes_thread_names(w.pf, out, 1, &n), 0);
		assert_int_equal(n, 1);
		world_free(&w);
	}
}

static void test_no_threading(void **state)
{
	struct world w;
	struct pyframes_thread_name out[4];
	uint64_t keys[1], vals[1];
	size_t n = 9;

	(void) state;
	world_init(&w, 12, PY_OBJS_312);
	assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), -ENOENT);   /* no sys.modules */
	assert_int_equal(n, 0);
	keys[0] = mk_str(&w, "sys");
	vals[0] = alloc(&w, 32);
	put64(&w, w.interp + w.l.is_modules, mk_dict(&w, keys, vals, 1));
	assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), -ENOENT);
	world_free(&w);
}

static void test_hostile(void **state)
{
	(void) state;
	for (size_t k = 0; k < sizeof(models) / sizeof(models[0]); k++) {
		struct world w;
		struct pyframes_thread_name out[4];
		uint64_t th[3], active, keys;
		size_t n;

		world_init(&w, models[k].minor, models[k].objs);
		th[0] = mk_thread(&w, "MainThread", 4242, false);
		th[1] = mk_thread(&w, "Zero", 0, false);
		th[2] = mk_thread(&w, "Odd", 4244, false);
		active = mk_registry(&w, th, 3);
		/* left out: a native id of 0 (no thread's), a type pointer that is not aligned */
		put64(&w, th[2] + 8, w.type_thread + 1);
		assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(out[0].name, "MainThread");
		/* more entries than the table holds; then a table size that is no power of two */
		keys = 0;
		memcpy(&keys, w.mem + (active + 32 - BASE), 8);
		if (w.l.objs == PY_OBJS_38) {
			put64(&w, keys + 32, 9);
			assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), -EAGAIN);
			put64(&w, keys + 32, 3);
			put64(&w, keys + 8, 12);
		} else {
			put64(&w, keys + 24, 9);
			assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), -EAGAIN);
			put64(&w, keys + 24, 3);
			put8(&w, keys + 9, 30);                   /* index bytes past the size */
		}
		assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), -EAGAIN);
		/* _active pointing outside the target's memory */
		put64(&w, active + 32, 0x7ffffff000);
		assert_int_equal(pyframes_thread_names(w.pf, out, 4, &n), -EAGAIN);
		world_free(&w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_no_threading),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
