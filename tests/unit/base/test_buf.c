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
	/* the SVG colours come from hash_bytes(): its values must not change */
	assert_true(hash_bytes("", 0, 0) == hash_u64(0xcbf29ce484222325ULL));
	assert_true(hash_bytes("a", 1, 0) == hash_u64((0xcbf29ce484222325ULL ^ 'a') * 0x100000001b3ULL));
	/* hash_mem: every byte counts, the tail and the length included */
	const char s[] = "0123456789abcdefghij";
	for (size_t n = 0; n < sizeof(s) - 1; n++) {
		char t[sizeof(s)];
		assert_int_equal(hash_mem(s, n, 3), hash_mem(s, n, 3));
		assert_int_not_equal(hash_mem(s, n, 3), hash_mem(s, n + 1, 3));
		assert_int_not_equal(hash_mem(s, n, 3), hash_mem(s, n, 4));
		memcpy(t, s, sizeof(s));
		for (size_t i = 0; i < n; i++) {
			t[i] ^= 1;
			assert_int_not_equal(hash_mem(s, n, 3), hash_mem(t, n, 3));
			t[i] ^= 1;
		}
	}
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
