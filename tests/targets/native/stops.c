/*
 * stops.c: a target that notices side effects of a profiler's stops (test_stops.py).
 *
 * usage: stops MODE [SPINNERS]
 *   MODE plain: no signal handler at all; catch: handlers for SIGURG and SIGWINCH that count
 *   their runs (SIGPIPE ignored, as CPython does); catchall: the same without the SIGPIPE
 *   ignore (no signal is harmless to it).
 * One thread each blocks again and again, 200 ms at a time, in calls the kernel does not
 * restart after a stop: epoll_wait, recv with SO_RCVTIMEO, sigtimedwait, semtimedop, and
 * (noticing a handler's run) nanosleep and select. SPINNERS threads (default 1) spin, and
 * create a short-lived thread every few ms with "churn" in MODE (e.g. plain,churn).
 * Prints "ready"; then each line on stdin is answered: "report" prints
 * {"eintr": {CALL: N, ...}, "handled": N, "loops": N, "spins": N} (loops: blocking calls
 * completed; spins: rounds of the spinners),
 * "catch" installs the handlers of MODE catch now (answers "ok"), "quit" exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { C_EPOLL, C_RECV, C_SIGTIMEDWAIT, C_SEMTIMEDOP, C_NANOSLEEP, C_SELECT, N_CALLS };
static const char *const names[N_CALLS] = {
	"epoll_wait", "recv", "sigtimedwait", "semtimedop", "nanosleep", "select",
};
static atomic_long eintr[N_CALLS], loops, handled, started, spins;
static int churn, sem_id = -1;

static void on_signal(int sig)
{
	(void) sig;
	atomic_fetch_add(&handled, 1);
}

static void catch(bool all)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGURG, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	if (!all) {
		signal(SIGPIPE, SIG_IGN);
		return;
	}
	/* none ignored, whatever came with the exec (a shell's background job ignores SIGINT and
	 * SIGQUIT, which hwspy would rightly take as harmless) */
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction old;

		if (sig != SIGURG && sig != SIGWINCH && sigaction(sig, NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			signal(sig, SIG_DFL);
	}
}

static void done(int call, int r)
{
	if (r < 0 && errno == EINTR)
		atomic_fetch_add(&eintr[call], 1);
	atomic_fetch_add(&loops, 1);
}

static void *blocker(void *arg)
{
	int call = (int) (long) arg;
	struct timespec ts = { 0, 200000000 };
	struct timeval tv = { 0, 200000 };
	int ep = -1, sv[2] = { -1, -1 }, sem = -1;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	if (call == C_EPOLL) {
		ep = epoll_create1(0);
	} else if (call == C_RECV) {
		socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
		setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	} else if (call == C_SEMTIMEDOP) {
		sem = sem_id;
	}
	atomic_fetch_add(&started, 1);
	for (;;) {
		struct epoll_event ev;
		struct sembuf op = { 0, -1, 0 };
		struct timeval t = tv;
		char c;

		switch (call) {
		case C_EPOLL: done(call, epoll_wait(ep, &ev, 1, 200)); break;
		case C_RECV: done(call, (int) recv(sv[0], &c, 1, 0)); break;
		case C_SIGTIMEDWAIT: done(call, sigtimedwait(&set, NULL, &ts)); break;
		case C_SEMTIMEDOP: done(call, sem < 0 ? (errno = 0, -1) : semtimedop(sem, &op, 1, &ts)); break;
		case C_NANOSLEEP: done(call, nanosleep(&ts, NULL)); break;
		case C_SELECT: done(call, select(0, NULL, NULL, NULL, &t)); break;
		}
	}
	return NULL;
}

static void *short_thread(void *arg)
{
	volatile unsigned long x = 0;

	for (int i = 0; i < 20000; i++)
		x += (unsigned long) i;
	return arg;
}

static void *spinner(void *arg)
{
	volatile unsigned long x = 0;
	struct timespec last, now;

	(void) arg;
	clock_gettime(CLOCK_MONOTONIC, &last);
	atomic_fetch_add(&started, 1);
	for (;;) {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long) i * 7;
		atomic_fetch_add(&spins, 1);
		if (!churn)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - last.tv_sec) * 1000000000L + now.tv_nsec - last.tv_nsec > 2000000L) {
			pthread_t t;
			last = now;
			if (pthread_create(&t, NULL, short_thread, NULL) == 0)
				pthread_detach(t);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	int spinners = argc > 2 ? atoi(argv[2]) : 1, n = 0;
	char line[64];
	sigset_t set;
	pthread_t t;

	churn = strstr(mode, "churn") != NULL;
	sem_id = semget(IPC_PRIVATE, 1, 0600);   /* removed at "quit" */
	if (!strncmp(mode, "catch", 5))
		catch(!strncmp(mode, "catchall", 8));
	/* SIGUSR2 is what sigtimedwait waits for: blocked everywhere */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int c = 0; c < N_CALLS; c++, n++)
		pthread_create(&t, NULL, blocker, (void *) (long) c);
	for (int i = 0; i < spinners; i++, n++)
		pthread_create(&t, NULL, spinner, NULL);
	while (atomic_load(&started) < n)
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "quit", 4))
			break;
		if (!strncmp(line, "catch", 5)) {
			catch(false);
			printf("ok\n");
			fflush(stdout);
			continue;
		}
		if (strncmp(line, "report", 6))
			continue;
		printf("{\"eintr\": {");
		for (int c = 0; c < N_CALLS; c++)
			printf("%s\"%s\": %ld", c ? ", " : "", names[c], atomic_load(&eintr[c]));
		printf("}, \"handled\": %ld, \"loops\": %ld, \"spins\": %ld}\n",
		       atomic_load(&handled), atomic_load(&loops), atomic_load(&spins));
		fflush(stdout);
	}
	if (sem_id >= 0)
		semctl(sem_id, 0, IPC_RMID);
	return 0;
}
