/* hwspy.h's recording checks (hwspy_record_check(), hwspy_record_check_target()), through
 * include/hwspy.h alone: the decisions a command line took itself before (the default event,
 * off-CPU's and wall's events, a count event's fixed period) made by the library, and each
 * refusal a code (usage or not) with the event it names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "include/hwspy.h"

static struct hwspy_events *events(const char *list)
{
	struct hwspy_events *ev;

	assert_int_equal(hwspy_events_new(&ev), 0);
	if (list)
		assert_true(hwspy_events_add_list(ev, list) > 0);
	return ev;
}

static int check(struct hwspy_record_opts *o, struct hwspy_events *ev, bool rate,
		 struct hwspy_record_check *c)
{
	o->pid = getpid();
	return hwspy_record_check(o, ev, rate, c);
}

/* no event: cycles where it opens, else cpu-clock (said by default_cpu_clock) */
static void test_default_event(void **state)
{
	struct hwspy_events *ev = events(NULL);
	struct hwspy_record_opts o;
	struct hwspy_record_check c;

	(void) state;
	hwspy_record_opts_init(&o);
	assert_int_equal(check(&o, ev, false, &c), 0);
	assert_int_equal(c.fail, HWSPY_CHECK_OK);
	assert_ptr_equal(o.events, ev);
	assert_int_equal(hwspy_events_count(ev), 1);
	assert_string_equal(hwspy_events_name(ev, 0), hwspy_have_hw_pmu() ? "cycles" : "cpu-clock");
	assert_int_equal(c.default_cpu_clock, !hwspy_have_hw_pmu());
	assert_int_equal(o.freq, 100);
	hwspy_events_free(ev);
}

/* a count event samples at its default period; a rate asked for is a usage error */
static void test_count_event(void **state)
{
	struct hwspy_events *ev = events("page-faults");
	struct hwspy_record_opts o;
	struct hwspy_record_check c;

	(void) state;
	hwspy_record_opts_init(&o);
	assert_int_equal(check(&o, ev, false, &c), 0);
	assert_int_equal(o.freq, 0);
	assert_int_equal(o.period, 100);
	hwspy_record_opts_init(&o);
	assert_int_equal(check(&o, ev, true, &c), -EINVAL);
	assert_int_equal(c.fail, HWSPY_CHECK_COUNT_RATE);
	assert_true(c.usage);
	assert_int_equal(c.period, 100);
	assert_string_not_equal(hwspy_reason(), "");
	hwspy_events_free(ev);
}

/* off_cpu: context-switches at period 1, refusing events and rates; wall: cpu-clock, refusing
 * events, a period, stops and off_cpu */
static void test_off_cpu_and_wall(void **state)
{
	struct hwspy_events *none = events(NULL), *some = events("cpu-clock");
	struct hwspy_record_opts o;
	struct hwspy_record_check c;
	int r;

	(void) state;
	hwspy_record_opts_init(&o);
	o.off_cpu = true;
	assert_int_equal(check(&o, some, false, &c), -EINVAL);
	assert_int_equal(c.fail, HWSPY_CHECK_OFF_CPU_EVENTS);
	assert_int_equal(check(&o, none, true, &c), -EINVAL);
	assert_int_equal(c.fail, HWSPY_CHECK_OFF_CPU_RATE);
	r = check(&o, none, false, &c);
	/* kernel samples of switches: refused to users where perf_event_paranoid says so */
	assert_true(r == 0 || c.fail == HWSPY_CHECK_KERNEL_REFUSED);
	assert_string_equal(hwspy_events_name(none, 0), "context-switches");
	assert_int_equal(o.period, 1);
	assert_int_equal(o.freq, 0);

	hwspy_events_free(none);
	none = events(NULL);
	hwspy_record_opts_init(&o);
	o.wall = true;
	o.off_cpu = true;
	assert_int_equal(check(&o, none, false, &c), -EINVAL);
	assert_int_equal(c.fail, HWSPY_CHECK_WALL_OFF_CPU);
	o.off_cpu = false;
	assert_int_equal(check(&o, some, false, &c), -EINVAL);
	assert_int_equal(c.fail, HWSPY_CHECK_WALL_EVENTS);
	o.mode = HWSPY_RECORD_STOPS;
	assert_int_equal(check(&o, none, false, &c), -EINVAL);
	assert_int_equal(c.fail, HWSPY_CHECK_WALL_STOPS);
	o.mode = HWSPY_RECORD_AUTO;
	r = check(&o, none, false, &c);
	assert_true(r == 0 || c.fail == HWSPY_CHECK_KERNEL_REFUSED);
	assert_string_equal(hwspy_events_name(none, 0), "cpu-clock");
	assert_int_equal(o.freq, 100);
	hwspy_events_free(none);
	hwspy_events_free(some);
}

/* refusals: a kernel-only event as ':u', a sleep-sampling event by stops, an event that does
 * not open (no hardware PMU here: named by its index) */
static void test_refusals(void **state)
{
	struct hwspy_events *ev = events("context-switches:u");
	struct hwspy_record_opts o;
	struct hwspy_record_check c;

	(void) state;
	hwspy_record_opts_init(&o);
	assert_int_equal(check(&o, ev, false, &c), -EINVAL);
	assert_int_equal(c.fail, HWSPY_CHECK_USER_KERNEL_ONLY);
	assert_false(c.migrations);
	hwspy_events_free(ev);

	ev = events("context-switches");
	hwspy_record_opts_init(&o);
	o.mode = HWSPY_RECORD_STOPS;
	assert_true(check(&o, ev, false, &c) < 0);
	assert_true(c.fail == HWSPY_CHECK_STOPS_ASLEEP || c.fail == HWSPY_CHECK_KERNEL_REFUSED);
	assert_true(c.usage == (c.fail == HWSPY_CHECK_STOPS_ASLEEP));
	hwspy_events_free(ev);

	if (hwspy_have_hw_pmu())
		return;
	ev = events("cpu-clock:u,instructions:u");
	hwspy_record_opts_init(&o);
	assert_true(check(&o, ev, false, &c) < 0);
	assert_int_equal(c.fail, HWSPY_CHECK_EVENT_NO_PMU);
	assert_int_equal(c.event, 1);
	assert_false(c.usage);
	hwspy_events_free(ev);
}

/* the target: a process that exists, none, a command on PATH, one that is not */
static void test_target(void **state)
{
	char *const sh[] = { "sh", NULL }, *const nope[] = { "hwspy-no-such-command", NULL };
	struct hwspy_record_opts o = { .pid = getpid() };
	struct hwspy_record_check c;

	(void) state;
	assert_int_equal(hwspy_record_check_target(&o, &c), 0);
	o.pid = 0x7ffffff0;
	assert_int_equal(hwspy_record_check_target(&o, &c), -ESRCH);
	assert_int_equal(c.fail, HWSPY_CHECK_NO_PROCESS);
	o = (struct hwspy_record_opts) { .argv = sh };
	assert_int_equal(hwspy_record_check_target(&o, &c), 0);
	o.argv = nope;
	assert_int_equal(hwspy_record_check_target(&o, &c), -ENOENT);
	assert_int_equal(c.fail, HWSPY_CHECK_COMMAND);
	assert_int_equal(c.err, -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_event),
		cmocka_unit_test(test_count_event),
		cmocka_unit_test(test_off_cpu_and_wall),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
