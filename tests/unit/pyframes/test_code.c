/*
 * code.c: line tables (real bytes from each interpreter, see line_vectors.h), unicode
 * decoding (ASCII, UCS1/2/4 -> UTF-8, over-long, bad kinds) through fake remote memory.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pyframes/pyframes_internal.h"
#include "line_vectors.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_lnotab_38(void **state)
{
	(void) state;
	for (size_t i = 0; i < N(py38_cases); i++)
		assert_int_equal(pf_line_lnotab(py38_table, sizeof(py38_table), 1, py38_cases[i].offset),
				 py38_cases[i].line);
	/* before any pair: first line; a truncated table stops cleanly */
	assert_int_equal(pf_line_lnotab(py38_table, 1, 7, 40), 7);
}

static void test_linetable_310(void **state)
{
	(void) state;
	for (size_t i = 0; i < N(py310_cases); i++)
		assert_int_equal(pf_line_310(py310_table, sizeof(py310_table), 1, py310_cases[i].offset),
				 py310_cases[i].line);
	assert_int_equal(pf_line_310(py310_table, sizeof(py310_table), 1, 100000), -1);
	assert_int_equal(pf_line_310(py310_table, sizeof(py310_table), 1, -2), 1);
}

static void check_locations(const uint8_t *tab, size_t len, const struct line_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int got = pf_line_locations(tab, len, 1, c[i].offset);

		if (got != c[i].line)
			fail_msg("unit %d: got line %d, want %d", c[i].offset, got, c[i].line);
	}
	/* past the end, and every truncation of the table, stay in bounds */
	assert_int_equal(pf_line_locations(tab, len, 1, 100000), -1);
	for (size_t cut = 0; cut < len; cut++)
		(void) pf_line_locations(tab, cut, 1, c[n - 1].offset);
}

static void test_locations_311(void **state)
{
	(void) state;
	check_locations(py311_table, sizeof(py311_table), py311_cases, N(py311_cases));
}

static void test_locations_312(void **state)
{
	(void) state;
	check_locations(py312_table, sizeof(py312_table), py312_cases, N(py312_cases));
}

static void test_locations_313(void **state)
{
	(void) state;
	check_locations(py313_table, sizeof(py313_table), py313_cases, N(py313_cases));
}

static void test_locations_314(void **state)
{
	(void) state;
	check_locations(py314_table, sizeof(py314_table), py314_cases, N(py314_cases));
}

static void test_locations_garbage(void **state)
{
	/* a continuation byte where an entry should start, and an endless varint */
	static const uint8_t bad1[] = { 0x41, 0x00 };
	static const uint8_t bad2[] = { 0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f };

	(void) state;
	assert_int_equal(pf_line_locations(bad1, sizeof(bad1), 1, 0), -1);
	assert_int_equal(pf_line_locations(bad2, sizeof(bad2), 1, 0), -1);
}

static void test_line_out_of_range(void **state)
{
	/* deltas from a hostile table walk the line past int: no line, never a wrapped one
	 * (UBSan: signed overflow in the old int sums) */
	static const uint8_t far_down[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03,
					    0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03 };
	static const uint8_t up5[] = { 0xe8, 0x0a };
	static const uint8_t pair_up[] = { 2, 127 };

	(void) state;
	assert_int_equal(pf_line_locations(far_down, sizeof(far_down), 1, 0), -1);
	assert_int_equal(pf_line_locations(far_down, sizeof(far_down), 1, 1), -1);
	assert_int_equal(pf_line_locations(up5, sizeof(up5), INT_MAX - 5, 0), INT_MAX);
	assert_int_equal(pf_line_locations(up5, sizeof(up5), INT_MAX, 0), -1);
	assert_int_equal(pf_line_lnotab(pair_up, sizeof(pair_up), INT_MAX, 4), -1);
	assert_int_equal(pf_line_310(pair_up, sizeof(pair_up), INT_MAX, 0), -1);
	assert_int_equal(pf_line_310(pair_up, sizeof(pair_up), 3, 0), 130);
}

static void test_ucs_to_utf8(void **state)
{
	static const uint8_t ucs1[] = { 'r', 0xe9, 's', 'u', 'm', 0xe9 };
	static const uint16_t ucs2[] = { 0x65e5, 0x672c, 'x', 0xd800 };
	static const uint32_t ucs4[] = { 'a', 0x1f600, 0x10ffff };
	static const uint32_t bad4[] = { 'a', 0x110000 };
	char out[64];

	(void) state;
	assert_int_equal(pf_ucs_to_utf8(ucs1, 6, 1, out, sizeof(out)), 8);
	assert_string_equal(out, "r\xc3\xa9sum\xc3\xa9");
	assert_int_equal(pf_ucs_to_utf8(ucs2, 4, 2, out, sizeof(out)), 10);
	assert_string_equal(out, "\xe6\x97\xa5\xe6\x9c\xacx\xef\xbf\xbd");   /* lone surrogate -> U+FFFD */
	assert_int_equal(pf_ucs_to_utf8(ucs4, 3, 4, out, sizeof(out)), 9);
	assert_string_equal(out, "a\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
	assert_int_equal(pf_ucs_to_utf8(bad4, 2, 4, out, sizeof(out)), -EINVAL);
	assert_int_equal(pf_ucs_to_utf8(ucs1, 6, 3, out, sizeof(out)), -EINVAL);
	/* cut at a character boundary, never inside one */
	assert_int_equal(pf_ucs_to_utf8(ucs1, 6, 1, out, 3), 1);
	assert_string_equal(out, "r");
}

/* ---- strings in fake memory ---- */

#define BASE 0x100000u
#define SIZE 0x10000u

struct fake {
	unsigned char mem[SIZE];
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	if (addr < BASE || addr + len > BASE + SIZE || addr + len < addr)
		return -EFAULT;
	memcpy(buf, f->mem + (addr - BASE), len);
	return 0;
}

static void put32(struct fake *f, uint64_t a, uint32_t v) { memcpy(f->mem + (a - BASE), &v, 4); }
static void put64(struct fake *f, uint64_t a, uint64_t v) { memcpy(f->mem + (a - BASE), &v, 8); }

/* A str object: state bits interned 0, kind, compact, ascii, (ready). */
static void put_str(struct fake *f, const struct py_layout *l, uint64_t a, const void *data,
		    uint64_t len, int kind, bool ascii)
{
	uint32_t st = (uint32_t) kind << l->str_kind_shift | 1u << l->str_compact_bit |
		      (ascii ? 1u << l->str_ascii_bit : 0);

	if (l->str_ready_bit != PF_NONE)
		st |= 1u << l->str_ready_bit;
	put64(f, a + l->str_length, len);
	put32(f, a + l->str_state, st);
	memcpy(f->mem + (a - BASE) + (ascii ? l->str_ascii_size : l->str_compact_size), data,
	       len * (size_t) kind);
}

static void str_cases(const struct py_layout *l)
{
	static const uint8_t latin[] = { 'd', 'o', 'n', 'n', 0xe9, 'e', 's', '.', 'p', 'y' };
	static const uint16_t jp[] = { 0x95a2, 0x6570 };
	static const uint32_t emoji[] = { 'f', 0x1f40d };
	struct fake *f = calloc(1, sizeof(*f));
	struct remote_mem rm = { .read = fake_read, .ctx = f };
	struct pf_mem m;
	uint64_t reads = 0;
	char out[PF_MAX_STR], *big;

	assert_non_null(f);
	assert_int_equal(pf_mem_init(&m, &rm, &reads), 0);
	put_str(f, l, BASE + 0x100, "Spinner.spin", 12, 1, true);
	put_str(f, l, BASE + 0x200, latin, sizeof(latin), 1, false);
	put_str(f, l, BASE + 0x300, jp, 2, 2, false);
	put_str(f, l, BASE + 0x400, emoji, 2, 4, false);
	big = malloc(5000);
	memset(big, 'a', 5000);
	put_str(f, l, BASE + 0x1000, big, 5000, 1, true);
	free(big);
	put_str(f, l, BASE + 0x3000, "x", 1, 1, true);
	put64(f, BASE + 0x3000 + l->str_length, 1ull << 40);   /* absurd length */
	put_str(f, l, BASE + 0x3100, "x", 1, 1, true);
	put32(f, BASE + 0x3100 + l->str_state, 3u << l->str_kind_shift | 1u << l->str_compact_bit);

	assert_int_equal(pf_read_str(&m, l, BASE + 0x100, out, sizeof(out)), 0);
	assert_string_equal(out, "Spinner.spin");
	assert_int_equal(pf_read_str(&m, l, BASE + 0x200, out, sizeof(out)), 0);
	assert_string_equal(out, "donn\xc3\xa9" "es.py");
	assert_int_equal(pf_read_str(&m, l, BASE + 0x300, out, sizeof(out)), 0);
	assert_string_equal(out, "\xe9\x96\xa2\xe6\x95\xb0");
	assert_int_equal(pf_read_str(&m, l, BASE + 0x400, out, sizeof(out)), 0);
	assert_string_equal(out, "f\xf0\x9f\x90\x8d");
	/* over-long: cut to PF_MAX_STR - 1 bytes */
	assert_int_equal(pf_read_str(&m, l, BASE + 0x1000, out, sizeof(out)), 0);
	assert_int_equal(strlen(out), PF_MAX_STR - 1);
	assert_int_equal(pf_read_str(&m, l, BASE + 0x3000, out, sizeof(out)), -EINVAL);
	assert_int_equal(pf_read_str(&m, l, BASE + 0x3100, out, sizeof(out)), -EINVAL);
	/* unmapped, NULL, misaligned */
	assert_int_equal(pf_read_str(&m, l, 0x10, out, sizeof(out)), -EFAULT);
	assert_int_equal(pf_read_str(&m, l, BASE + SIZE + 0x1000, out, sizeof(out)), -EFAULT);
	assert_int_equal(pf_read_str(&m, l, BASE + 0x101, out, sizeof(out)), -EFAULT);
	assert_true(reads > 0);
	pf_mem_release(&m);
	free(f);
}

static void test_str_38(void **state)
{
	(void) state;
	str_cases(layout_static(3, 8));   /* PyASCIIObject 48, ready bit */
}

static void test_str_312(void **state)
{
	(void) state;
	str_cases(layout_static(3, 12));  /* PyASCIIObject 40, no ready bit */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lnotab_38),
		cmocka_unit_test(test_linetable_310),
		cmocka_unit_test(test_locations_311),
		cmocka_unit_test(test_locations_312),
		cmocka_unit_test(test_locations_313),
		cmocka_unit_test(test_locations_314),
		cmocka_unit_test(test_locations_garbage),
		cmocka_unit_test(test_line_out_of_range),
		cmocka_unit_test(test_ucs_to_utf8),
		cmocka_unit_test(test_str_38),
		cmocka_unit_test(test_str_312),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
