/*
 * gc.c: the cyclic GC's collecting flag read from synthetic CPython memory laid out with the
 * real tables: 3.8 (_PyRuntime.gc), 3.9-3.12 (the main interpreter's gc) and the 3.13 / 3.14
 * _Py_DebugOffsets blocks (dbg_blocks.h: their gc sections and interpreter_state.gc). The
 * offsets expected are gdb's on pyenv's builds (offsetof(PyInterpreterState, gc),
 * offsetof(struct _gc_runtime_state, collecting): 200 in 3.8-3.13) and, for 3.14, the Debian
 * build's own block; the main interpreter found behind a subinterpreter; hostile states (a
 * flag neither 0 nor 1, an unreadable one, a looping interpreter list) fail, and a layout
 * without the flag says so.
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
#include "dbg_blocks.h"

#define BASE 0x100000ull
#define SIZE (1ull << 20)

struct world {
	unsigned char *mem;
	struct remote_mem rm;
	struct py_layout l;
	uint64_t runtime, interp, flag;
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

static void put32(struct world *w, uint64_t a, uint32_t v) { memcpy(w->mem + (a - BASE), &v, 4); }
static void put64(struct world *w, uint64_t a, uint64_t v) { memcpy(w->mem + (a - BASE), &v, 8); }

/* _PyRuntime at BASE + 0x1000 (its gc inside, 3.8), one interpreter at BASE + 0x10000 */
static void world_init(struct world *w, const struct py_layout *l)
{
	memset(w, 0, sizeof(*w));
	w->l = *l;
	w->mem = calloc(1, SIZE);
	assert_non_null(w->mem);
	w->rm.read = fake_read;
	w->rm.ctx = w;
	w->runtime = BASE + 0x1000;
	w->interp = BASE + 0x10000;
	put64(w, w->runtime + l->rt_interp_head, w->interp);
	if (l->rt_gc != PF_NONE)
		w->flag = w->runtime + l->rt_gc + l->gc_collecting;
	else if (l->is_gc != PF_NONE)
		w->flag = w->interp + l->is_gc + l->gc_collecting;
	assert_int_equal(pyframes_new_from_layout(&w->rm, &w->l, w->runtime, 0, 1, &w->pf), 0);
}

static void world_free(struct world *w)
{
	pyframes_free(w->pf);
	free(w->mem);
}

/* The flag where the layout places it: read back both ways, and its spec. */
static void check_gc(const struct py_layout *l)
{
	struct pyframes_gc g;
	struct world w;
	uint64_t addr;

	world_init(&w, l);
	assert_int_not_equal(w.flag, 0);
	assert_int_equal(pyframes_gc(w.pf, &g), 0);
	assert_true(g.known);
	assert_false(g.collecting);
	put32(&w, w.flag, 1);
	assert_int_equal(pyframes_gc(w.pf, &g), 0);
	assert_true(g.known);
	assert_true(g.collecting);
	assert_int_equal(pyframes_gc_spec(w.pf, &addr), 0);
	assert_int_equal(addr, w.flag);
	/* no GC state there */
	put32(&w, w.flag, 7);
	assert_int_equal(pyframes_gc(w.pf, &g), -EAGAIN);
	assert_false(g.known);
	world_free(&w);
}

static void test_static(void **state)
{
	/* offsetof(struct pyruntimestate, gc) in 3.8; offsetof(PyInterpreterState, gc) after */
	static const uint32_t rt_gc[] = { 344, PF_NONE, PF_NONE, PF_NONE, PF_NONE };
	static const uint32_t is_gc[] = { PF_NONE, 616, 616, 648, 112 };

	(void) state;
	for (int minor = 8; minor <= 12; minor++) {
		const struct py_layout *l = layout_static(3, minor);

		assert_non_null(l);
		assert_int_equal(l->rt_gc, rt_gc[minor - 8]);
		assert_int_equal(l->is_gc, is_gc[minor - 8]);
		assert_int_equal(l->gc_collecting, 200);
		check_gc(l);
	}
}

static void test_debug_offsets(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;

	(void) state;
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.rt_gc, PF_NONE);
	assert_int_equal(l.is_gc, 7400);
	assert_int_equal(l.gc_collecting, 200);
	check_gc(&l);
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.is_gc, 7408);
	assert_int_equal(l.gc_collecting, 192);
	check_gc(&l);
	/* 3.13's gc section (at 568): collecting past the state's 240 bytes, then a state past
	 * the interpreter: the GC unknown, the layout still taken */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	{
		uint64_t past = 240;

		memcpy(b + 568 + 8, &past, 8);
	}
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.is_gc, PF_NONE);
	assert_int_equal(l.gc_collecting, PF_NONE);
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	{
		uint64_t far = 194968 - 100;    /* interpreter_state.gc, 240 bytes at 100 before its end */

		memcpy(b + 48 + 8 * 4, &far, 8);
	}
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.is_gc, PF_NONE);
}

/* 3.9+: the main interpreter's flag, the list's last; a subinterpreter's is not it. */
static void test_main_interp(void **state)
{
	const struct py_layout *l = layout_static(3, 12);
	uint64_t sub = BASE + 0x30000;
	struct pyframes_gc g;
	struct world w;

	(void) state;
	world_init(&w, l);
	put64(&w, w.runtime + l->rt_interp_head, sub);
	put64(&w, sub + l->is_next, w.interp);
	put32(&w, sub + l->is_gc + l->gc_collecting, 1);
	assert_int_equal(pyframes_gc(w.pf, &g), 0);
	assert_false(g.collecting);
	put32(&w, w.flag, 1);
	assert_int_equal(pyframes_gc(w.pf, &g), 0);
	assert_true(g.collecting);
	/* a loop: bounded, torn */
	put64(&w, w.interp + l->is_next, sub);
	assert_int_equal(pyframes_gc(w.pf, &g), -EAGAIN);
	assert_false(g.known);
	/* an interpreter list head that points nowhere */
	put64(&w, w.interp + l->is_next, 0);
	put64(&w, w.runtime + l->rt_interp_head, BASE + SIZE + 4096);
	assert_int_equal(pyframes_gc(w.pf, &g), -EAGAIN);
	world_free(&w);
}

/* A flag the reader cannot reach: -EFAULT; a layout without one: not known, no spec. */
static void test_unreadable_and_none(void **state)
{
	struct py_layout l = *layout_static(3, 8);
	struct pyframes_gc g = { .known = true };
	struct world w;
	uint64_t addr = 1;

	(void) state;
	l.rt_gc = (uint32_t) SIZE;      /* past the fake memory */
	world_init(&w, &l);
	assert_int_equal(pyframes_gc(w.pf, &g), -EFAULT);
	assert_false(g.known);
	world_free(&w);
	l = *layout_static(3, 12);
	l.is_gc = PF_NONE;
	world_init(&w, &l);
	assert_int_equal(pyframes_gc(w.pf, &g), 0);
	assert_false(g.known);
	assert_int_equal(pyframes_gc_spec(w.pf, &addr), -ENOTSUP);
	assert_int_equal(addr, 0);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static),
		cmocka_unit_test(test_debug_offsets),
		cmocka_unit_test(test_main_interp),
		cmocka_unit_test(test_unreadable_and_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
