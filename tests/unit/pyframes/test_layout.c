/*
 * layout.c: the static tables and the _Py_DebugOffsets parser. The two blocks (dbg_blocks.h)
 * are the real initial _PyRuntime bytes of pyenv's 3.13.0 libpython3.13.so.1.0 and Debian's
 * 3.14.10 python3.14 (read from the file's section holding _PyRuntime), so the expected offsets
 * below are also those gdb prints for 3.13.0 (ptype/o struct _Py_DebugOffsets,
 * _PyInterpreterFrame). layout_check(): every static table and both real blocks pass it;
 * hostile blocks (offsets inside the struct sizes they declare, past the bytes hwspy copies of
 * that object) are refused naming the field; layout_select(), pyframes_open's choice.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pyframes/pyframes_internal.h"
#include "dbg_blocks.h"

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
		/* the one check every layout passes before a walk */
		assert_int_equal(layout_check(l, NULL, 0), 0);
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
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
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
	assert_int_equal(l.is_code_gen, 0);        /* 3.14's */
	assert_int_equal(l.str_ascii_size, 40);
	assert_int_equal(l.str_compact_size, 56);
	assert_int_equal(l.bytes_sval, 32);
	assert_int_equal(layout_check(&l, NULL, 0), 0);
}

static void put_word(unsigned char *b, uint32_t at, uint64_t v)
{
	memcpy(b + at, &v, 8);
}

static void test_dbg_314(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;

	(void) state;
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.minor, 14);
	assert_int_equal(l.rt_interp_head, 808);
	assert_int_equal(l.is_threads_head, 7344);
	assert_int_equal(l.ts_frame, 72);
	assert_int_equal(l.fr_owner, 74);
	assert_int_equal(l.fr_code_mask, ~7ull);   /* tagged _PyStackRef */
	assert_int_equal(l.co_code_adaptive, 208);
	assert_int_equal(l.co_size, 216);
	/* interpreter_state.code_object_generation (the capture's code cache, capture.h) */
	assert_int_equal(l.is_code_gen, 7992);
	assert_int_equal(layout_check(&l, NULL, 0), 0);
	/* past the interpreter (225864 bytes), or unaligned: not known, the layout taken */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	put_word(b, 48 + 8 * 14, 225864 - 4);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.is_code_gen, 0);
	put_word(b, 48 + 8 * 14, 7993);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), 0);
	assert_int_equal(l.is_code_gen, 0);
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
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	/* a version that cannot carry this block (3.12), garbage, and an unknown newer one */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 0x030c01f0;
	memcpy(b + 8, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	v = 0xdeadbeef12345678ull;
	memcpy(b + 8, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	v = 0x030f00a0;
	memcpy(b + 8, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -ENOTSUP);
	/* free-threaded build, and a nonsense flag */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 1;
	memcpy(b + 16, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -ENOTSUP);
	v = 77;
	memcpy(b + 16, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	/* an offset outside its struct: thread_state.current_frame (152 + 32) past size */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 100000;
	memcpy(b + 152 + 32, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	/* the owner byte exactly at the end of the frame struct is outside it */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	v = 80;
	memcpy(b + 224 + 40, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	/* a zero struct size, a huge one */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	memset(b + 312, 0, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	v = 1ull << 40;
	memcpy(b + 248, &v, 8);
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &l, NULL, 0), -EINVAL);
	/* truncated block */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	assert_int_equal(layout_from_debug_offsets(b, 700, &l, NULL, 0), -EINVAL);
	assert_int_equal(layout_from_debug_offsets(b, 10, &l, NULL, 0), -EINVAL);
}


/* Parses b; if it is accepted, layout_check() must refuse it, naming field. */
static void expect_refused(const unsigned char *b, const char *field)
{
	char why[PF_WHY_MAX], want[128];
	struct py_layout l;
	int r;

	snprintf(want, sizeof(want), "'%s' ", field);
	r = layout_from_debug_offsets(b, PY_DEBUG_OFFSETS_MAX, &l, why, sizeof(why));
	if (r == 0)
		r = layout_check(&l, why, sizeof(why));
	print_message("# %s: %s\n", field, why);
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(why, want));
	assert_null(strchr(why, '\n'));
}

/* Offsets a target may declare (inside the struct sizes it gives) that lie past what hwspy
 * copies of that object: each is refused by name, once, before any walk. */
static void test_dbg_hostile(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];

	(void) state;
	/* 3.13 sections: thread 152, frame 224, code 272, pyobject 352, bytes 512, unicode 536 */
	/* a 64 KiB thread state whose interp link lies past the 4 KiB hwspy reads */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 152, 65536);
	put_word(b, 152 + 24, 60000);
	expect_refused(b, "thread_state.interp");
	/* a 1 MiB thread state (declared sizes up to 16 MiB pass the parser) */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 152, 1 << 20);
	put_word(b, 152 + 48, (1 << 20) - 8);
	expect_refused(b, "thread_state.native_thread_id");
	/* ob_type of a 16 MiB object: indexes the code header copy */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 352, 16u << 20);
	put_word(b, 352 + 8, (16u << 20) - 8);
	expect_refused(b, "pyobject.ob_type");
	/* a frame field past the frame copy, inside a 4 KiB frame */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 224, 4096);
	put_word(b, 224 + 40, 4000);
	expect_refused(b, "interpreter_frame.owner");
	/* code object fields past the code header copy (co_size) */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 272, 8192);
	put_word(b, 272 + 24, 5000);
	expect_refused(b, "code_object.size");
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 272 + 72, 4000);   /* co_code_adaptive, inside the declared 208 */
	assert_int_equal(layout_from_debug_offsets(b, sizeof(b), &(struct py_layout) { 0 }, NULL, 0),
			 -EINVAL);
	/* bytes and str headers */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 512, 4096);
	put_word(b, 512 + 16, 2000);
	expect_refused(b, "bytes_object.ob_sval");
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 536, 8 << 20);
	put_word(b, 536 + 8, (8 << 20) - 4);
	expect_refused(b, "unicode_object.state");
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 536, 4096);
	put_word(b, 536 + 16, 44);   /* length past a 40-byte ASCII header */
	expect_refused(b, "unicode_object.length");
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 536, 4096);
	put_word(b, 536 + 24, 1000);
	expect_refused(b, "unicode_object.asciiobject_size");
	/* 3.14 sections: thread 176, code 312 */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	put_word(b, 176, 32768);
	put_word(b, 176 + 32, 30000);
	expect_refused(b, "thread_state.current_frame");
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	put_word(b, 312, 6000);
	put_word(b, 312 + 24, 5000);
	expect_refused(b, "code_object.size");
	/* an 8-byte field whose last bytes pass the declared size: the parser names it */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	put_word(b, 312 + 24, 210);
	expect_refused(b, "code_object.qualname");
	/* outside the declared size: named by the parser */
	make_block(b, dbg313_words, sizeof(dbg313_words) / 8);
	put_word(b, 152 + 32, 100000);
	expect_refused(b, "thread_state.current_frame");
}

/* Layouts hwspy builds itself are checked the same way (a struct py_layout nobody parsed). */
static void test_check_fields(void **state)
{
	struct py_layout l;
	char why[PF_WHY_MAX];

	(void) state;
	l = *layout_static(3, 12);
	l.ts_cframe = PF_NONE;
	assert_int_equal(layout_check(&l, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'thread_state.current_frame' is missing"));
	l = *layout_static(3, 8);
	l.fr_instr = 509;   /* a 4-byte f_lasti at 509 ends past 512 */
	assert_int_equal(layout_check(&l, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'interpreter_frame.instr_ptr' offset 509"));
	l.fr_instr = 508;
	assert_int_equal(layout_check(&l, NULL, 0), 0);
	l = *layout_static(3, 11);
	l.str_kind_shift = 30;
	assert_int_equal(layout_check(&l, why, sizeof(why)), -EINVAL);
	l = *layout_static(3, 11);
	l.str_ready_bit = 40;
	assert_int_equal(layout_check(&l, why, sizeof(why)), -EINVAL);
	l = *layout_static(3, 10);
	l.co_qualname = PF_NONE;   /* optional */
	l.ts_native_thread_id = PF_NONE;
	assert_int_equal(layout_check(&l, NULL, 0), 0);
	l.co_name = PF_NONE;       /* not */
	assert_int_equal(layout_check(&l, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'code_object.name'"));
}

static int block_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr != 0x10000 || len > PY_DEBUG_OFFSETS_MAX)
		return -EFAULT;
	memcpy(buf, ctx, len);
	return 0;
}

/* pyframes_open's choice: a static table, or the target's block, checked; a refusal in one
 * line for pyframes_info.error. */
static void test_select(void **state)
{
	unsigned char b[PY_DEBUG_OFFSETS_MAX];
	struct remote_mem rm = { .read = block_read, .ctx = b };
	struct py_layout l;
	char why[256];

	(void) state;
	assert_int_equal(layout_select(&rm, 3, 7, 0, &l, why, sizeof(why)), -ENOTSUP);
	assert_int_equal(layout_select(&rm, 3, 10, 0, &l, why, sizeof(why)), 0);
	assert_int_equal(l.minor, 10);
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	assert_int_equal(layout_select(&rm, 3, 14, 0x10000, &l, why, sizeof(why)), 0);
	assert_int_equal(l.fr_owner, 74);
	assert_int_equal(layout_select(&rm, 3, 14, 0x20000, &l, why, sizeof(why)), -EFAULT);
	assert_int_equal(layout_select(&rm, 3, 14, 0, &l, why, sizeof(why)), -ENOTSUP);
	/* pyobject (400): a 16 MiB object whose ob_type lies past the code header copy */
	put_word(b, 400, 16u << 20);
	put_word(b, 408, (16u << 20) - 8);
	assert_int_equal(layout_select(&rm, 3, 14, 0x10000, &l, why, sizeof(why)), -EBADMSG);
	print_message("# %s\n", why);
	assert_string_equal(why, "'pyobject.ob_type' offset 16777208 lies outside the 216 bytes "
			    "hwspy reads of a code object: the target's _Py_DebugOffsets is corrupt");
	/* a free-threaded build: not supported, not corrupt */
	make_block(b, dbg314_words, sizeof(dbg314_words) / 8);
	put_word(b, 16, 1);
	assert_int_equal(layout_select(&rm, 3, 14, 0x10000, &l, NULL, 0), -ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_tables),
		cmocka_unit_test(test_dbg_313),
		cmocka_unit_test(test_dbg_314),
		cmocka_unit_test(test_dbg_corrupt),
		cmocka_unit_test(test_dbg_hostile),
		cmocka_unit_test(test_check_fields),
		cmocka_unit_test(test_select),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
