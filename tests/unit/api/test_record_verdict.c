/*
 * test_record_verdict: what record's command line leaves to libhwspy after a run, through
 * include/hwspy.h alone: the run's metadata in the profile (hwspy_recorder_note_run()), whether
 * the profile is worth writing (hwspy_recorder_verdict(): not Python, no sample, written) and
 * the default output's name (hwspy_output_default()).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "include/hwspy.h"

/* argv recorded for up to 0.3 s at freq Hz, then the verdict (-EACCES, -EPERM: skipped) */
static int verdict(char *const *argv, bool native, uint64_t freq, struct hwspy_profile_meta *m)
{
	struct hwspy_record_opts o;
	struct hwspy_recorder *rec = NULL;
	struct hwspy_run run = { .duration_ns = 300000000ULL };
	uint64_t before = (uint64_t) time(NULL) * 1000000000ULL;
	int r;

	hwspy_record_opts_init(&o);
	o.argv = argv;
	o.native = native;
	o.freq = freq;
	assert_int_equal(hwspy_recorder_new(&o, NULL, NULL, &rec), 0);
	r = hwspy_recorder_start(rec);
	if (r == -EACCES || r == -EPERM) {
		hwspy_recorder_free(rec);
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(hwspy_recorder_run(rec, &run), 0);
	hwspy_recorder_note_run(rec, "why");
	hwspy_profile_meta(hwspy_recorder_profile(rec), m);
	assert_true(m->start_time_ns >= before);
	assert_true(m->start_time_ns <= (uint64_t) time(NULL) * 1000000000ULL);
	assert_true(m->duration_ns > 0);
	assert_int_equal(m->threads_missed, 0);
	r = hwspy_recorder_verdict(rec);
	hwspy_recorder_stop(rec);
	/* the command is left running by the run: ended here (SIGTERM at once, SIGKILL 0.2 s on),
	 * or it would outlive the test holding its output open */
	struct hwspy_child_end_opts eo = { .grace = 0.2 };
	struct hwspy_child c;

	hwspy_recorder_end_command(rec, &eo, &c);
	assert_true(c.ended);
	hwspy_recorder_free(rec);
	return r;
}

static char *const busy[] = {
	"/bin/sh", "-c", "i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done", NULL,
};
static char *const asleep[] = { "/bin/sleep", "0.2", NULL };

static void test_not_python(void **state)
{
	struct hwspy_profile_meta m;

	(void) state;
	assert_int_equal(verdict(busy, false, 100, &m), -ENOENT);
}

static void test_no_samples(void **state)
{
	struct hwspy_profile_meta m;

	(void) state;
	/* cpu-clock at 1 Hz of a command that sleeps: no sample */
	assert_int_equal(verdict(asleep, true, 1, &m), 1);
}

static void test_written(void **state)
{
	struct hwspy_profile_meta m;

	(void) state;
	assert_int_equal(verdict(busy, true, 100, &m), 0);
	assert_true(m.threads >= 1);
}

static void test_output_default(void **state)
{
	char buf[64];

	(void) state;
	hwspy_output_default(12, HWSPY_FORMAT_FOLDED, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-12.folded");
	hwspy_output_default(12, HWSPY_FORMAT_SPEEDSCOPE, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-12.speedscope.json");
	hwspy_output_default(3, HWSPY_FORMAT_SVG, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-3.svg");
	hwspy_output_default(3, HWSPY_FORMAT_PPROF, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-3.pb.gz");
	assert_int_equal(hwspy_format_of_path(buf), HWSPY_FORMAT_PPROF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_default),
		cmocka_unit_test(test_not_python),
		cmocka_unit_test(test_no_samples),
		cmocka_unit_test(test_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
