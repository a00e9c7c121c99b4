/* The growable buffer and the hashes the interning tables rely on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/hash.h"

static void test_append_and_grow(void **state)
{
	struct buf b;
	(void) state;

	buf_init(&b);
	assert_string_equal(b.data, "");
	for (int i = 0; i < 1000; i++)
		assert_int_equal(buf_printf(&b, "%d,", i), 0);
	assert_int_equal(strncmp(b.data, "0,1,2,", 6), 0);
	assert_int_equal(b.len, strlen(b.data));
	assert_true(b.cap > b.len);
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	assert_int_equal(buf_append(&b, "ab\0cd", 5), 0);
	assert_int_equal(b.len, 5);
	assert_int_equal(b.data[5], '\0');
	assert_int_equal(buf_putc(&b, 'x'), 0);
	assert_int_equal(memcmp(b.data, "ab\0cdx", 7), 0);
	char *s = buf_detach(&b);
	assert_int_equal(memcmp(s, "ab\0cdx", 7), 0);
	free(s);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_reserve(&b, SIZE_MAX), -12);   /* refused, not wrapped */
	s = buf_detach(&b);     /* an empty buffer detaches to an owned "" */
	assert_string_equal(s, "");
	free(s);
	buf_release(&b);
	buf_release(&b);
}

static void test_hashes_spread(void **state)
{
	(void) state;
	assert_int_not_equal(hash_bytes("a", 1, 0), hash_bytes("b", 1, 0));
	assert_int_not_equal(hash_bytes("a", 1, 0), hash_bytes("a", 1, 1));
	assert_int_equal(hash_bytes("abc", 3, 7), hash_bytes("abc", 3, 7));
	/* consecutive integers land in distinct low bits (the tables mask the low bits) */
	unsigned seen[64] = { 0 };
	for (uint64_t i = 0; i < 64; i++)
		seen[hash_u64(i) & 63]++;
	int used = 0;
	for (int i = 0; i < 64; i++)
		used += seen[i] > 0;
	assert_true(used > 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_and_grow),
		cmocka_unit_test(test_hashes_spread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
