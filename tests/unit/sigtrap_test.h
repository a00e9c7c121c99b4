/*
 * sigtrap_test.h: what the unit tests of the signal capture (tests/unit/sampler/
 * test_sigcapture.c, tests/unit/api/test_record_signal.c) check of SIGTRAP after a recording.
 */
#ifndef HWSPY_TESTS_SIGTRAP_TEST_H
#define HWSPY_TESTS_SIGTRAP_TEST_H

#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* SIGTRAP as the process found it: hwspy's handler stays installed after a recording (a signal
 * of its events may still come after their close), and does what the default disposition does
 * to a SIGTRAP that is not its own: a child raising one dies of it. */
static inline bool trap_acts_as_default(void)
{
	int ws;
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit none = { 0, 0 };

		(void) setrlimit(RLIMIT_CORE, &none);   /* no core file of it */
		(void) raise(SIGTRAP);
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &ws, 0) == pid && WIFSIGNALED(ws) &&
	       WTERMSIG(ws) == SIGTRAP;
}

#endif
