/*
 * perf.c: the sampling event's attr that perf_build_attrs() makes from the sampler's options:
 * a user stack copy comes with the user registers the caller asked for (opts.regs_user_mask),
 * and without a stack copy no registers are sampled. Opens nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/internal.h"

/* s's attrs for one cpu-clock event at 99 Hz, per thread */
static void build(struct sampler *s, uint32_t stack_user_size, uint64_t regs_user_mask)
{
	memset(s, 0, sizeof(*s));
	s->layout = &ring_per_thread;
	assert_int_equal(events_parse("cpu-clock", &s->events[0]), 0);
	s->opts = (struct sampler_opts) { .pid = 1, .events = s->events, .n_events = 1,
					  .freq = 99, .stack_user_size = stack_user_size,
					  .regs_user_mask = regs_user_mask };
	perf_build_attrs(s);
}

static void test_regs_user_mask(void **state)
{
	static struct sampler s;

	(void) state;
	build(&s, 16384, 0xff0fffULL);
	assert_true(s.attrs[0].sample_type & PERF_SAMPLE_REGS_USER);
	assert_true(s.attrs[0].sample_type & PERF_SAMPLE_STACK_USER);
	assert_int_equal(s.attrs[0].sample_regs_user, 0xff0fffULL);
	assert_int_equal(s.attrs[0].sample_stack_user, 16384);
	/* whatever the caller's unwinder reads */
	build(&s, 8192, 0x1ffULL);
	assert_int_equal(s.attrs[0].sample_regs_user, 0x1ffULL);
	assert_int_equal(s.attrs[0].sample_stack_user, 8192);
	/* no stack copy: no registers either */
	build(&s, 0, 0xff0fffULL);
	assert_false(s.attrs[0].sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER));
	assert_int_equal(s.attrs[0].sample_regs_user, 0);
	assert_int_equal(s.attrs[0].sample_stack_user, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regs_user_mask),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
