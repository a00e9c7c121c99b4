/*
 * test_record_child: libhwspy launches a command (a shell's busy loop), records it with its
 * native frames, ends it, and writes an SVG flame graph; through include/hwspy.h alone, every
 * handle freed (the ASan build's LeakSanitizer checks).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/hwspy.h"
#include "tests/unit/api/api_test.h"

struct notes {
	int n;
};

static void on_note(void *ctx, enum hwspy_note note, int err, const char *detail)
{
	struct notes *n = ctx;

	printf("# note %d (%d): %s\n", (int) note, err, detail);
	n->n++;
}

static int count_samples(void *ctx, const struct hwspy_sample *s)
{
	size_t *n = ctx;

	assert_true(s->depth >= 1);
	assert_true(s->n_values >= 2);
	(*n)++;
	return 0;
}

static int record(char *const *argv, hwspy_sample_fn sink, void *ctx, const char *svg,
		  struct hwspy_child *child, struct hwspy_record_stats *st)
{
	struct notes notes = { 0 };
	struct hwspy_record_opts o;
	struct hwspy_recorder *rec = NULL;
	struct hwspy_run run = { .duration_ns = 1000000000ULL };
	struct hwspy_child_end_opts end = { .grace = 1 };
	struct hwspy_events *ev = NULL;
	int r;

	hwspy_record_opts_init(&o);
	o.argv = argv;
	o.native = true;
	o.note_fn = on_note;
	o.note_ctx = &notes;
	r = hwspy_events_new(&ev);
	assert_int_equal(r, 0);
	assert_int_equal(hwspy_events_add_list(ev, "cpu-clock"), 1);
	o.events = ev;
	r = hwspy_recorder_new(&o, sink, ctx, &rec);
	assert_int_equal(r, 0);
	r = hwspy_recorder_start(rec);
	if (r >= 0)
		r = hwspy_recorder_run(rec, &run);
	if (r >= 0) {
		hwspy_recorder_end_command(rec, &end, child);
		hwspy_recorder_stats(rec, st);
		if (svg)
			r = hwspy_profile_write_file(hwspy_recorder_profile(rec), HWSPY_FORMAT_SVG,
						     &(struct hwspy_write_opts) { .title = "api" },
						     svg);
	}
	if (r < 0)
		printf("# %s\n", hwspy_reason());
	hwspy_recorder_free(rec);
	hwspy_events_free(ev);
	return r;
}

static char *const busy[] = {
	"/bin/sh", "-c", "i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done", NULL,
};

/* into the recorder's profile, then an SVG */
static void test_record_child_svg(void **state)
{
	struct hwspy_record_stats st;
	struct hwspy_child child = { 0 };
	char path[64];
	char *svg;
	int r;

	(void) state;
	snprintf(path, sizeof(path), "/tmp/hwspy-api-child-%d.svg", (int) getpid());
	r = record(busy, NULL, NULL, path, &child, &st);
	if (r == -EACCES || r == -EPERM)
		skip();
	assert_int_equal(r, 0);
	printf("# %llu samples; the shell ended: %d, by signal %d\n",
	       (unsigned long long) st.samples, child.ended, child.sent);
	assert_true(st.samples > 5);
	/* the loop outlived the second: ended by SIGTERM, as asked (exit code 0) */
	assert_true(child.ended);
	assert_true(child.as_asked);
	assert_int_equal(child.sent, SIGTERM);
	assert_true(WIFSIGNALED(child.status) && WTERMSIG(child.status) == SIGTERM);
	assert_int_equal(hwspy_child_exit_code(&child), 0);
	svg = slurp(path);
	(void) unlink(path);
	assert_non_null(svg);
	assert_non_null(strstr(svg, "<svg"));
	assert_non_null(strstr(svg, "</svg>"));
	assert_non_null(strstr(svg, ">api<"));
	free(svg);
}

/* each sample to a sink of the caller's */
static void test_record_child_sink(void **state)
{
	struct hwspy_record_stats st;
	struct hwspy_child child = { 0 };
	size_t n = 0;
	int r;

	(void) state;
	r = record(busy, count_samples, &n, NULL, &child, &st);
	if (r == -EACCES || r == -EPERM)
		skip();
	assert_int_equal(r, 0);
	assert_true(n > 5);
	assert_true(child.ended);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_child_svg),
		cmocka_unit_test(test_record_child_sink),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
