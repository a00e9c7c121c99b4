/* base/text.c: numbers written for a message (text_grouped(), text_size()). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/text.h"

static void test_grouped(void **state)
{
	char b[32];

	(void) state;
	assert_string_equal(text_grouped(b, sizeof(b), 0), "0");
	assert_string_equal(text_grouped(b, sizeof(b), 999), "999");
	assert_string_equal(text_grouped(b, sizeof(b), 1000), "1,000");
	assert_string_equal(text_grouped(b, sizeof(b), 1234567), "1,234,567");
	assert_string_equal(text_grouped(b, sizeof(b), UINT64_MAX), "18,446,744,073,709,551,615");
	assert_string_equal(text_grouped(b, 4, 1234567), "1,2");        /* cut, terminated */
}

static void test_size(void **state)
{
	char b[32];

	(void) state;
	assert_string_equal(text_size(b, sizeof(b), 812), "812 bytes");
	assert_string_equal(text_size(b, sizeof(b), 45100), "45.1 kB");
	assert_string_equal(text_size(b, sizeof(b), 4000000), "4.0 MB");
	assert_string_equal(text_size(b, sizeof(b), 1200000000), "1.2 GB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grouped),
		cmocka_unit_test(test_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
