/*
 * test_record_signal: libhwspy records its own process as an unprivileged user (root drops to
 * nobody in a child first; BPF is then refused) by the signal mode: AUTO chooses
 * HWSPY_RECORD_SIGNAL with HWSPY_NOTE_SIGNAL, the SIGTRAP handler runs for the samples and
 * api_test_spin dominates; a thread doing blocking system calls (read on a pipe with a writer,
 * nanosleep, poll) meanwhile sees no EINTR; a SIGTRAP not of its events still has the default action after;
 * a host's SIGTRAP handler installed before is kept, and the recorder falls back to
 * nonblocking with HWSPY_NOTE_NO_SIGNAL. Through include/hwspy.h alone.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/hwspy.h"
#include "tests/unit/api/api_test.h"
#include "tests/unit/sigtrap_test.h"

static volatile int burning = 1;
static volatile double sink_value;

__attribute__((noinline)) static void api_test_spin(void)
{
	double x = 1.0;

	while (burning) {
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.5;
		sink_value = x;
	}
}

struct rec_result {
	int r;
	char why[512];
	char path[64];
	struct hwspy_record_stats st;
	int mode;
	bool note_signal, note_no_signal;
};

static void on_note(void *ctx, enum hwspy_note n, int err, const char *detail)
{
	struct rec_result *res = ctx;

	(void) err;
	(void) detail;
	res->note_signal |= n == HWSPY_NOTE_SIGNAL;
	res->note_no_signal |= n == HWSPY_NOTE_NO_SIGNAL;
}

static void *record_thread(void *arg)
{
	struct rec_result *res = arg;
	struct hwspy_record_opts o;
	struct hwspy_recorder *rec = NULL;
	struct hwspy_run run = { .duration_ns = 700000000ULL };
	int r;

	hwspy_record_opts_init(&o);
	o.self = true;
	o.native = true;
	o.freq = 500;
	o.note_fn = on_note;
	o.note_ctx = res;
	r = hwspy_recorder_new(&o, NULL, NULL, &rec);
	if (r >= 0)
		r = hwspy_recorder_start(rec);
	if (r >= 0) {
		res->mode = hwspy_recorder_mode(rec);
		r = hwspy_recorder_run(rec, &run);
	}
	if (r >= 0) {
		hwspy_recorder_stop(rec);
		hwspy_recorder_stats(rec, &res->st);
		r = hwspy_profile_write_file(hwspy_recorder_profile(rec), HWSPY_FORMAT_FOLDED, NULL,
					     res->path);
	}
	res->r = r;
	if (r < 0)
		snprintf(res->why, sizeof(res->why), "%s", hwspy_reason());
	hwspy_recorder_free(rec);
	burning = 0;
	return NULL;
}

/* blocking calls, each checked, with user work between them (where samples land) */
struct sleeper {
	int pipe[2];
	volatile int done;
	unsigned long calls, eintr, bad;
};

static void *writer_thread(void *arg)
{
	struct sleeper *sl = arg;
	struct timespec ts = { 0, 2000000 };

	while (!sl->done) {
		(void) nanosleep(&ts, NULL);
		if (write(sl->pipe[1], "x", 1) != 1)
			break;
	}
	(void) close(sl->pipe[1]);
	return NULL;
}

static void *sleeper_thread(void *arg)
{
	struct sleeper *sl = arg;

	while (!sl->done) {
		struct timespec ts = { 0, 500000 };
		struct pollfd p = { .fd = sl->pipe[0], .events = POLLIN };
		volatile double x = 1.0;
		char c;
		ssize_t n;
		int r;

		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5;
		n = read(sl->pipe[0], &c, 1);           /* blocks until the writer's next byte */
		sl->eintr += n < 0 && errno == EINTR;
		sl->bad += n != 1 && !(n < 0 && errno == EINTR) && !sl->done;
		r = nanosleep(&ts, NULL);
		sl->eintr += r < 0 && errno == EINTR;
		r = poll(&p, 1, 1);
		sl->eintr += r < 0 && errno == EINTR;
		sl->calls += 3;
	}
	return NULL;
}

static void record_self(struct rec_result *res)
{
	pthread_t t;

	burning = 1;
	snprintf(res->path, sizeof(res->path), "/tmp/hwspy-api-signal-%d.folded", (int) getpid());
	assert_int_equal(pthread_create(&t, NULL, record_thread, res), 0);
	api_test_spin();
	pthread_join(t, NULL);
	if (res->r < 0)
		fail_msg("recording the calling process failed: %d %s", res->r, res->why);
}

/* exact by a signal: chosen, the handler ran, the spinning function dominates, no EINTR in
 * a thread that sleeps in system calls meanwhile, SIGTRAP's disposition as it was after */
static void test_record_signal_auto(void **state)
{
	struct rec_result res = { 0 };
	struct sleeper sl = { .done = 0 };
	pthread_t w, s;
	char *folded, *line;
	unsigned long spin = 0, all = 0;

	(void) state;
	assert_true(trap_acts_as_default());
	assert_int_equal(pipe(sl.pipe), 0);
	assert_int_equal(pthread_create(&w, NULL, writer_thread, &sl), 0);
	assert_int_equal(pthread_create(&s, NULL, sleeper_thread, &sl), 0);
	record_self(&res);
	sl.done = 1;
	pthread_join(w, NULL);
	pthread_join(s, NULL);
	(void) close(sl.pipe[0]);
	printf("# mode %d, %llu samples, signals %llu (records %llu, excluded %llu, dropped "
	       "%llu), handler %llu ns in all, %llu ns at most; sleeper %lu calls, %lu EINTR\n",
	       res.mode, (unsigned long long) res.st.samples,
	       (unsigned long long) res.st.signal_seen, (unsigned long long) res.st.signal_taken,
	       (unsigned long long) res.st.signal_excluded,
	       (unsigned long long) res.st.signal_dropped,
	       (unsigned long long) res.st.signal_ns_total,
	       (unsigned long long) res.st.signal_ns_max, sl.calls, sl.eintr);
	assert_int_equal(res.mode, HWSPY_RECORD_SIGNAL);
	assert_true(res.note_signal);
	assert_true(res.st.samples > 50);
	/* each sample's signal was handled (the recorder's thread's dropped at once) */
	assert_true(res.st.signal_seen * 10 >= res.st.samples * 8);
	assert_true(sl.calls > 100);
	assert_int_equal(sl.eintr, 0);
	assert_int_equal(sl.bad, 0);
	assert_true(trap_acts_as_default());
	folded = slurp(res.path);
	(void) unlink(res.path);
	assert_non_null(folded);
	for (line = strtok(folded, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;

		all += n;
		if (strstr(line, "api_test_spin"))
			spin += n;
	}
	printf("# api_test_spin %lu of %lu\n", spin, all);
	assert_true(spin * 2 > all);
	free(folded);
}

static void host_trap(int sig, siginfo_t *si, void *uc)
{
	(void) sig;
	(void) si;
	(void) uc;
}

/* a SIGTRAP handler of the host's: kept, and the recording is nonblocking, told */
static void test_record_signal_host_handler(void **state)
{
	struct sigaction sa = { .sa_sigaction = host_trap, .sa_flags = SA_SIGINFO }, now;
	struct rec_result res = { 0 };

	(void) state;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGTRAP, &sa, NULL), 0);
	record_self(&res);
	(void) unlink(res.path);
	assert_int_equal(sigaction(SIGTRAP, NULL, &now), 0);
	assert_true(now.sa_sigaction == host_trap);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	(void) sigaction(SIGTRAP, &sa, NULL);
	assert_int_equal(res.mode, HWSPY_RECORD_NONBLOCKING);
	assert_true(res.note_no_signal);
	assert_int_equal(res.st.signal_seen, 0);
}

static int signal_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_signal_auto),
		cmocka_unit_test(test_record_signal_host_handler),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* As nobody (BPF refused, perf_event_paranoid's limits apply): root forks a child that drops
 * its privileges first. */
int main(void)
{
	int status;
	pid_t pid;

	if (geteuid() != 0)
		return signal_tests();
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
			printf("1..0 # SKIP cannot become nobody: %s\n", strerror(errno));
			fflush(stdout);
			_exit(0);
		}
		_exit(signal_tests() ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
