/*
 * gil.c: the GIL read from synthetic CPython memory laid out with the real tables: 3.8 and 3.11
 * (inside _PyRuntime), 3.12 (the main interpreter's ceval.gil pointer) and the 3.13 / 3.14
 * _Py_DebugOffsets blocks (whose offsets are checked against gdb's: ceval.gil 16, last_holder
 * 8, locked 16); the main interpreter found behind a subinterpreter; hostile states (locked
 * neither 0 nor 1, a bad holder, a null or unreadable GIL pointer, a looping interpreter list)
 * fail, and a layout without a GIL says so.
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
#define HOLDER 0x1234560ull

struct world {
	unsigned char *mem;
	struct remote_mem rm;
	struct py_layout l;
	uint64_t runtime, interp, gil;
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

/* _PyRuntime at BASE + 0x1000 (its GIL inside, <= 3.11), one interpreter at BASE + 0x10000
 * (its own GIL state at BASE + 0x40000, 3.12+) */
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
	if (l->rt_gil != PF_NONE) {
		w->gil = w->runtime + l->rt_gil;
	} else if (l->is_ceval_gil != PF_NONE) {
		w->gil = BASE + 0x40000;
		put64(w, w->interp + l->is_ceval_gil, w->gil);
	}
	assert_int_equal(pyframes_new_from_layout(&w->rm, &w->l, w->runtime, 0, 1, &w->pf), 0);
}

static void world_free(struct world *w)
{
	pyframes_free(w->pf);
	free(w->mem);
}

/* The GIL as the layout places it: read back, and its spec. */
static void check_gil(const struct py_layout *l)
{
	struct pyframes_gil g;
	struct world w;
	uint64_t addr;
	uint32_t locked_off, holder_off;

	world_init(&w, l);
	put32(&w, w.gil + l->gil_locked, 1);
	put64(&w, w.gil + l->gil_holder, HOLDER);
	assert_int_equal(pyframes_gil(w.pf, &g), 0);
	assert_true(g.known);
	assert_true(g.locked);
	assert_int_equal(g.holder, HOLDER);
	assert_int_equal(pyframes_gil_spec(w.pf, &addr, &locked_off, &holder_off), 0);
	assert_int_equal(addr, w.gil);
	assert_int_equal(locked_off, l->gil_locked);
	assert_int_equal(holder_off, l->gil_holder);
	/* dropped: the last holder stays */
	put32(&w, w.gil + l->gil_locked, 0);
	assert_int_equal(pyframes_gil(w.pf, &g), 0);
	assert_true(g.known);
	assert_false(g.locked);
	assert_int_equal(g.holder, HOLDER);
	/* no GIL state: locked neither 0 nor 1, a holder that is no pointer */
	put32(&w, w.gil + l->gil_locked, 7);
	assert_int_equal(pyframes_gil(w.pf, &g), -EAGAIN);
	assert_false(g.known);
	put32(&w, w.gil + l->gil_locked, 1);
	put64(&w, w.gil + l->gil_holder, HOLDER + 3);
	assert_int_equal(pyframes_gil(w.pf, &g), -EAGAIN);
	world_free(&w);
}

static void test_static(void **state)
{
	static const int minors[] = { 8, 9, 10, 11, 12 };

	(void) state;
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		const struct py_layout *l = layout_static(3, minors[i]);

		assert_non_null(l);
		/* struct _gil_runtime_state: interval, last_holder, locked (all of 3.8-3.14) */
		assert_int_equal(l->gil_holder, 8);
		assert_int_equal(l->gil_locked, 16);
		assert_true((l->rt_gil != PF_NONE) == (minors[i] <= 11));
		check_gil(l);
	}
}

static void test_debug_offsets(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;

	(void) state;
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.rt_gil, PF_NONE);
	assert_int_equal(l.is_ceval_gil, 16);
	assert_int_equal(l.gil_locked, 16);
	assert_int_equal(l.gil_holder, 8);
	check_gil(&l);
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.is_ceval_gil, 16);
	assert_int_equal(l.gil_locked, 16);
	assert_int_equal(l.gil_holder, 8);
	check_gil(&l);
	/* 3.13's _holder (field 12 of interpreter_state) far past _gil: the GIL unknown, the
	 * layout still taken */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	{
		uint64_t far = 7752 + 4096;

		memcpy(b + 48 + 8 * 12, &far, 8);
	}
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.is_ceval_gil, PF_NONE);
	assert_int_equal(l.gil_holder, PF_NONE);
}

/* 3.12+: the main interpreter is the list's last; a subinterpreter's GIL is not it. */
static void test_main_interp(void **state)
{
	const struct py_layout *l = layout_static(3, 12);
	uint64_t sub = BASE + 0x30000, sub_gil = BASE + 0x50000;
	struct pyframes_gil g;
	struct world w;

	(void) state;
	world_init(&w, l);
	put64(&w, w.runtime + l->rt_interp_head, sub);
	put64(&w, sub + l->is_next, w.interp);
	put64(&w, sub + l->is_ceval_gil, sub_gil);
	put32(&w, sub_gil + l->gil_locked, 1);
	put64(&w, sub_gil + l->gil_holder, HOLDER + 8);
	put32(&w, w.gil + l->gil_locked, 1);
	put64(&w, w.gil + l->gil_holder, HOLDER);
	assert_int_equal(pyframes_gil(w.pf, &g), 0);
	assert_int_equal(g.holder, HOLDER);
	/* a loop: bounded, torn */
	put64(&w, w.interp + l->is_next, sub);
	assert_int_equal(pyframes_gil(w.pf, &g), -EAGAIN);
	put64(&w, w.interp + l->is_next, 0);
	/* the pointer not set yet, or pointing nowhere */
	put64(&w, w.interp + l->is_ceval_gil, 0);
	assert_int_equal(pyframes_gil(w.pf, &g), -EFAULT);
	put64(&w, w.interp + l->is_ceval_gil, BASE + SIZE + 4096);
	assert_int_equal(pyframes_gil(w.pf, &g), -EFAULT);
	assert_false(g.known);
	world_free(&w);
}

static void test_no_gil(void **state)
{
	struct py_layout l = *layout_static(3, 12);
	struct pyframes_gil g = { .known = true };
	struct world w;
	uint64_t addr = 1;
	uint32_t a, b;

	(void) state;
	l.is_ceval_gil = PF_NONE;
	world_init(&w, &l);
	assert_int_equal(pyframes_gil(w.pf, &g), 0);
	assert_false(g.known);
	assert_int_equal(pyframes_gil_spec(w.pf, &addr, &a, &b), -ENOTSUP);
	assert_int_equal(addr, 0);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static),
		cmocka_unit_test(test_debug_offsets),
		cmocka_unit_test(test_main_interp),
		cmocka_unit_test(test_no_gil),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
