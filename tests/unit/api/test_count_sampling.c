/*
 * test_count_sampling: include/hwspy.h's counting with its sampling run beside the counters
 * (hwspy_count_opts.sampling), as `hwspy stat` uses it and an in-process client would: this
 * program includes hwspy.h alone and links libhwspy. It launches a Python command whose
 * function touch() allocates and fills 64 MiB again and again (past glibc's
 * largest mmap threshold: fresh pages each time) for 1.5 s, counts it to its end,
 * and checks that the library named touch() behind the page-fault finding (the run's own
 * samples, tallied by the library), that the run took samples, that the command ended, and
 * that the process's signal mask and SIGCHLD disposition are as they were (no sigchld
 * option). Run under ASan/LSan in the sanitizer build: everything hwspy_count_free() frees.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/hwspy.h"

#define PYTHON "/usr/bin/python3"

static const char script[] =
	"import time\n"
	"def touch(end):\n"
	"    while time.monotonic() < end:\n"
	"        b = b'x' * (64 << 20)\n"
	"touch(time.monotonic() + 1.5)\n";

static void on_note(void *ctx, enum hwspy_note note, int err, const char *detail)
{
	int *n = ctx;

	printf("# note %d (%d): %s\n", (int) note, err, detail);
	(*n)++;
}

static int slices;

static int on_slice(void *ctx, struct hwspy_count *c, int r)
{
	(void) ctx;
	assert_non_null(hwspy_count_recorder(c));
	slices++;
	return r;
}

static void test_launch(void **state)
{
	char *argv[] = { PYTHON, "-c", (char *) script, NULL };
	int notes = 0;
	struct hwspy_count_opts o = {
		.user_only_fallback = true, .python_names = true, .sampling = true,
		.note_fn = on_note, .note_ctx = &notes, .slice_fn = on_slice,
	};
	struct hwspy_count *c;
	struct hwspy_record_stats rs;
	struct hwspy_count_stats cs;
	struct hwspy_findings *f = calloc(1, sizeof(*f));
	sigset_t mask_before, mask_after;
	struct sigaction chld_before, chld_after;
	const struct hwspy_finding *faults = NULL;
	int r;

	(void) state;
	assert_non_null(f);
	if (access(PYTHON, X_OK) < 0) {
		printf("# no %s here\n", PYTHON);
		free(f);
		skip();
	}
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &mask_before), 0);
	assert_int_equal(sigaction(SIGCHLD, NULL, &chld_before), 0);
	assert_int_equal(hwspy_count_new(&o, &c), 0);
	r = hwspy_count_start(c, 0, argv);
	if (r == -EACCES || r == -EPERM) {
		printf("# perf events refused to this user: %s\n", hwspy_reason());
		hwspy_count_free(c);
		free(f);
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(hwspy_count_sampling_error(c), 0);
	assert_non_null(hwspy_count_recorder(c));
	assert_true(hwspy_count_pid(c) > 0);
	/* until the command ends */
	assert_int_equal(hwspy_count_run(c, NULL, 0), 0);
	assert_int_equal(hwspy_count_stop(c), 0);
	hwspy_count_stats(c, &cs);
	assert_true(cs.target_exited);
	assert_true(WIFEXITED(cs.exit_status) && WEXITSTATUS(cs.exit_status) == 0);
	assert_true(slices > 0);
	hwspy_recorder_stats(hwspy_count_recorder(c), &rs);
	printf("# %d notes, %d slices, %llu samples\n", notes, slices,
	       (unsigned long long) rs.samples);
	assert_true(rs.samples > 0);

	assert_int_equal(hwspy_count_report(c, NULL), 0);
	assert_int_equal(hwspy_count_findings(c, f), 0);
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->f[i].id, "many-page-faults"))
			faults = &f->f[i];
	assert_non_null(faults);
	printf("# many-page-faults: %.0f/s, %zu functions of %llu samples, first %s\n",
	       faults->value, faults->n_functions, (unsigned long long) faults->samples,
	       faults->n_functions ? faults->functions[0].text : "-");
	assert_true(faults->n_functions >= 1);
	assert_non_null(strstr(faults->functions[0].text, "touch"));

	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &mask_after), 0);
	assert_int_equal(sigaction(SIGCHLD, NULL, &chld_after), 0);
	for (int sig = 1; sig < SIGRTMIN; sig++)
		assert_int_equal(sigismember(&mask_before, sig), sigismember(&mask_after, sig));
	assert_true(chld_before.sa_handler == chld_after.sa_handler);
	hwspy_count_free(c);
	free(f);
}

/* The calling process has no sampling run beside its counters: refused, said. */
static void test_self_refused(void **state)
{
	struct hwspy_count_opts o = { .events = "task-clock", .sampling = true };
	struct hwspy_count *c;

	(void) state;
	assert_int_equal(hwspy_count_new(&o, &c), 0);
	assert_int_equal(hwspy_count_start(c, 0, NULL), -EINVAL);
	assert_int_equal(hwspy_count_failed(c), HWSPY_COUNT_FAILED_SAMPLING);
	assert_true(hwspy_reason()[0] != '\0');
	assert_null(hwspy_count_recorder(c));
	hwspy_count_free(c);
	hwspy_count_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launch),
		cmocka_unit_test(test_self_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
