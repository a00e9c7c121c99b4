/*
 * array.c: array_grow() makes room (capacity doubling from first, the new part zeroed, the
 * old elements kept), does nothing where there is room, and fails with -ENOMEM leaving the
 * array as it was where the size in bytes would overflow. array_upper() finds the first
 * element whose key is above the one asked, against a scan, keys repeated and at the ends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/array.h"

static void test_grow(void **state)
{
	int *v = NULL;
	size_t cap = 0;

	(void) state;
	assert_int_equal(array_grow((void **) &v, &cap, 1, sizeof(*v), 4), 0);
	assert_non_null(v);
	assert_int_equal(cap, 4);
	for (size_t i = 0; i < cap; i++)
		assert_int_equal(v[i], 0);
	v[0] = 7;
	v[3] = 9;
	/* room already: nothing moves */
	int *before = v;
	assert_int_equal(array_grow((void **) &v, &cap, 4, sizeof(*v), 4), 0);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 4);
	/* doubling until it fits, old elements kept, the new part zeroed */
	assert_int_equal(array_grow((void **) &v, &cap, 13, sizeof(*v), 4), 0);
	assert_int_equal(cap, 16);
	assert_int_equal(v[0], 7);
	assert_int_equal(v[3], 9);
	for (size_t i = 4; i < cap; i++)
		assert_int_equal(v[i], 0);
	free(v);
}

static void test_first_zero(void **state)
{
	char *v = NULL;
	size_t cap = 0;

	(void) state;
	assert_int_equal(array_grow((void **) &v, &cap, 3, 1, 0), 0);
	assert_int_equal(cap, 4);       /* from 1, doubled */
	free(v);
}

static void test_overflow(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	(void) state;
	assert_int_equal(array_grow((void **) &v, &cap, 2, sizeof(*v), 2), 0);
	v[1] = 5;
	assert_int_equal(array_grow((void **) &v, &cap, SIZE_MAX / 4, sizeof(*v), 2), -ENOMEM);
	assert_int_equal(array_grow((void **) &v, &cap, SIZE_MAX, 1, 2), -ENOMEM);
	assert_int_equal(cap, 2);
	assert_int_equal(v[1], 5);
	free(v);
}

struct keyed {
	uint32_t pad;
	uint64_t key;
	char tail;
};

static void test_upper(void **state)
{
	/* sorted, with runs of equal keys, 0 and UINT64_MAX among them */
	static const uint64_t keys[] = { 0, 0, 5, 7, 7, 7, 100, UINT64_MAX - 1, UINT64_MAX };
	struct keyed v[sizeof(keys) / sizeof(keys[0])];
	size_t n = sizeof(keys) / sizeof(keys[0]);

	(void) state;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct keyed) { 0xdead, keys[i], 'x' };
	for (size_t len = 0; len <= n; len++) {
		for (size_t i = 0; i < n; i++) {
			for (int d = -1; d <= 1; d++) {
				uint64_t key = keys[i] + (uint64_t) (int64_t) d, want = 0;

				while (want < len && v[want].key <= key)
					want++;
				assert_int_equal(array_upper(v, len, sizeof(*v),
							     offsetof(struct keyed, key), key), want);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upper),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_first_zero),
		cmocka_unit_test(test_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
