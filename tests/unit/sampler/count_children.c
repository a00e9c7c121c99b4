/*
 * The children and helpers test_count.c and test_count_seam.c share: this test program run
 * again (/proc/self/exe burn|threads|churn ...) is the counted process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/internal.h"

#include "count_children.h"

char self_exe[PATH_MAX];
char data_dir[PATH_MAX];

/* ---- the children ---- */

uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static volatile uint64_t sink;

static void burn_ns(uint64_t ns)
{
	uint64_t end = cpu_ns(CLOCK_THREAD_CPUTIME_ID) + ns;

	while (cpu_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t) i * i;
}

/* burn PAGES MS NAPS: touches PAGES fresh pages, burns MS ms of CPU, naps NAPS times 1 ms */
static int child_burn(char **argv)
{
	long pages = atol(argv[2]), ms = atol(argv[3]), naps = atol(argv[4]);
	long psz = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t) (pages * psz), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 2;
	for (long i = 0; i < pages; i++)
		p[i * psz] = 1;
	burn_ns((uint64_t) ms * 1000000ULL);
	for (long i = 0; i < naps; i++)
		usleep(1000);
	return 0;
}

struct worker {
	pthread_t th;
	int fd;                         /* early: waits for a byte here, then burns */
	uint64_t ns;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	char b;

	if (w->fd >= 0 && read(w->fd, &b, 1) != 1)
		return NULL;
	burn_ns(w->ns);
	return NULL;
}

/* threads EARLY LATE CTL REP: starts EARLY threads that wait, says 'r' on REP; at a byte on
 * CTL lets the early ones burn 40 ms each and starts LATE threads that burn 60 ms each, joins
 * them all, writes the process CPU time those took (ns, u64) on REP; exits at EOF on CTL */
static int child_threads(char **argv)
{
	int early = atoi(argv[2]), late = atoi(argv[3]), ctl = atoi(argv[4]), rep = atoi(argv[5]);
	struct worker w[64];
	int go[2];
	uint64_t t0, t1;
	char b;

	if (early + late > 64 || pipe(go) < 0)
		return 2;
	for (int i = 0; i < early; i++) {
		w[i] = (struct worker) { .fd = go[0], .ns = 40000000ULL };
		pthread_create(&w[i].th, NULL, worker_run, &w[i]);
	}
	if (write(rep, "r", 1) != 1 || read(ctl, &b, 1) != 1)
		return 3;
	t0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < early; i++)
		(void) !write(go[1], "g", 1);
	for (int i = early; i < early + late; i++) {
		w[i] = (struct worker) { .fd = -1, .ns = 60000000ULL };
		pthread_create(&w[i].th, NULL, worker_run, &w[i]);
	}
	for (int i = 0; i < early + late; i++)
		pthread_join(w[i].th, NULL);
	t1 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - t0;
	if (write(rep, &t1, sizeof(t1)) != sizeof(t1))
		return 4;
	while (read(ctl, &b, 1) > 0)
		;
	return 0;
}

static volatile int churning = 1;

static void *churn_watch(void *arg)
{
	char b;

	while (read(*(int *) arg, &b, 1) > 0)
		;
	churning = 0;
	return NULL;
}

/* churn CTL: starts threads that burn 1 ms and exit, four at a time, until EOF on CTL */
static int child_churn(char **argv)
{
	int ctl = atoi(argv[2]);
	pthread_t watch;

	pthread_create(&watch, NULL, churn_watch, &ctl);
	while (churning) {
		struct worker w[4];
		for (int i = 0; i < 4; i++) {
			w[i] = (struct worker) { .fd = -1, .ns = 1000000ULL };
			pthread_create(&w[i].th, NULL, worker_run, &w[i]);
		}
		for (int i = 0; i < 4; i++)
			pthread_join(w[i].th, NULL);
	}
	pthread_join(watch, NULL);
	return 0;
}

/* ---- helpers ---- */

int open_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

void parse(const char *const *names, size_t n, struct event_spec *ret)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(events_parse(names[i], &ret[i]), 0);
}

/* Skips the test (saying why) where perf events are not allowed. */
void need_perf(void)
{
	struct event_spec e;

	assert_int_equal(events_parse("task-clock", &e), 0);
	if (events_probe(&e, 0) < 0) {
		print_message("# perf events not allowed here (perf_event_paranoid, CAP_PERFMON): "
			      "skipped\n");
		skip();
	}
}

/* Forks this program as a burn child, held stopped before its exec as the sampler's launch
 * holds one (SIGSTOP); the caller counts it with at_exec, then SIGCONTs it. */
pid_t fork_held(const char *pages, const char *ms, const char *naps)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { self_exe, "burn", (char *) pages, (char *) ms, (char *) naps, NULL };
		raise(SIGSTOP);
		execv(self_exe, argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	return pid;
}

double rel(double got, double want)
{
	return want ? fabs(got - want) / want : fabs(got);
}


int count_children_main(int argc, char **argv)
{
	ssize_t n;

	if (argc > 4 && !strcmp(argv[1], "burn"))
		return child_burn(argv);
	if (argc > 5 && !strcmp(argv[1], "threads"))
		return child_threads(argv);
	if (argc > 2 && !strcmp(argv[1], "churn"))
		return child_churn(argv);
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = '\0';
	if (argc > 1)
		snprintf(data_dir, sizeof(data_dir), "%s", argv[1]);
	return -1;
}
