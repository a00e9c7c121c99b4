/*
 * layout.c: the static tables and the _Py_DebugOffsets parser. The two blocks are the real
 * initial _PyRuntime bytes of pyenv's 3.13.0 libpython3.13.so.1.0 and Debian's 3.14.10
 * python3.14 (read from the file's section holding _PyRuntime), so the expected offsets below
 * are also those gdb prints for 3.13.0 (ptype/o struct _Py_DebugOffsets, _PyInterpreterFrame).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pyframes/pyframes_internal.h"

static const uint64_t dbg313_words[] = { /* from byte 8: version, free_threaded, sections */
	51183856, 0, 283320, 608, 632, 194968, 7272, 7264,
	7344, 7400, 7656, 7640, 7648, 16, 7752, 0,
	7768, 7760, 304, 0, 8, 16, 72, 152,
	160, 232, 32, 80, 8, 0, 56, 72,
	70, 208, 112, 120, 128, 136, 68, 52,
	96, 104, 200, 16, 8, 416, 24, 88,
	168, 32, 24, 16, 40, 24, 16, 48,
	32, 40, 24, 16, 32, 16, 24, 40,
	16, 32, 64, 32, 16, 40, 240, 200,
};
static const uint64_t dbg314_words[] = { /* from byte 8: version, free_threaded, sections */
	51251952, 0, 316616, 784, 808, 225864, 7280, 7272,
	7344, 7360, 7408, 7688, 7672, 7680, 16, 7784,
	0, 7800, 7792, 7992, 0, 832, 0, 8,
	16, 72, 152, 160, 232, 32, 88, 8,
	0, 56, 80, 74, 64, 0, 216, 112,
	120, 128, 136, 68, 52, 96, 104, 208,
	0, 16, 8, 416, 24, 88, 168, 40,
	32, 16, 40, 24, 16, 200, 24, 40,
	32, 48, 32, 40, 24, 16, 32, 16,
	24, 40, 16, 32, 64, 32, 16, 40,
	264, 192, 160, 24, 72, 67, 0, 8,
	24, 304, 8076, 0, 4, 512,
};

static size_t make_block(unsigned char *b, const uint64_t *words, size_t nwords)
{
	memset(b, 0, PY_DEBUG_OFFSETS_MAX);
	memcpy(b, "xdebugpy", 8);
	memcpy(b + 8, words, nwords * 8);
	return PY_DEBUG_OFFSETS_MAX;
}

static void test_static_tables(void **state)
{
	(void) state;
	assert_null(layout_static(3, 7));
	assert_null(layout_static(2, 7));
	assert_null(layout_static(3, 13));
	for (int minor = 8; minor <= 12; minor++) {
		const struct py_layout *l = layout_static(3, minor);

		assert_non_null(l);
		assert_int_equal(l->minor, minor);
		assert_int_equal(l->frames, minor <= 10 ? PY_FRAMES_OBJECT : PY_FRAMES_INTERP);
		assert_true(l->fr_instr + 8 <= 512 && l->fr_size <= 512);
		assert_true(l->co_linetable + 8 <= l->co_size);
		assert_true(l->ts_thread_id + 8 <= l->ts_size);
	}
	/* the 3.11 entry flag, the 3.12 shim owner */
	assert_int_equal(layout_static(3, 11)->fr_is_entry, 68);
	assert_int_equal(layout_static(3, 12)->owner_cstack_min, 3);
}

static void test_dbg_313(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;

	(void) state;
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), 0);
	assert_int_equal(l.minor, 13);
	assert_int_equal(l.rt_interp_head, 632);
	assert_int_equal(l.is_threads_head, 7344);
	assert_int_equal(l.ts_frame, 72);
	assert_int_equal(l.ts_native_thread_id, 160);
	assert_int_equal(l.fr_code, 0);
	assert_int_equal(l.fr_previous, 8);
	assert_int_equal(l.fr_instr, 56);
	assert_int_equal(l.fr_owner, 70);
	assert_int_equal(l.fr_code_mask, ~0ull);
	assert_int_equal(l.co_qualname, 128);
	assert_int_equal(l.co_firstlineno, 68);
	assert_int_equal(l.co_code_adaptive, 200);
	assert_int_equal(l.str_ascii_size, 40);
	assert_int_equal(l.str_compact_size, 56);
	assert_int_equal(l.bytes_sval, 32);
}

static void test_dbg_314(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;

	(void) state;
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), 0);
	assert_int_equal(l.minor, 14);
	assert_int_equal(l.rt_interp_head, 808);
	assert_int_equal(l.is_threads_head, 7344);
	assert_int_equal(l.ts_frame, 72);
	assert_int_equal(l.fr_owner, 74);
	assert_int_equal(l.fr_code_mask, ~7ull);   /* tagged _PyStackRef */
	assert_int_equal(l.co_code_adaptive, 208);
	assert_int_equal(l.co_size, 216);
}

static void test_dbg_corrupt(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;
	uint64_t v;

	(void) state;
	/* bad cookie */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	b[0] = 'X';
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	/* a version that cannot carry this block (3.12), garbage, and an unknown newer one */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 0x030c01f0;
	memcpy(b + 8, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	v = 0xdeadbeef12345678ull;
	memcpy(b + 8, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	v = 0x030f00a0;
	memcpy(b + 8, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -ENOTSUP);
	/* free-threaded build, and a nonsense flag */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 1;
	memcpy(b + 16, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -ENOTSUP);
	v = 77;
	memcpy(b + 16, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	/* an offset outside its struct: thread_state.current_frame (152 + 32) past size */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 100000;
	memcpy(b + 152 + 32, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	/* the owner byte exactly at the end of the frame struct is outside it */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 80;
	memcpy(b + 224 + 40, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	/* a zero struct size, a huge one */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	memset(b + 312, 0, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	v = 1ull << 40;
	memcpy(b + 248, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	/* truncated block */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, 700, &l), -EINVAL);
	assert_int_equal(layout_from_debug_offsets(b, 10, &l), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_tables),
		cmocka_unit_test(test_dbg_313),
		cmocka_unit_test(test_dbg_314),
		cmocka_unit_test(test_dbg_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
