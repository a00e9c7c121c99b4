/*
 * pyframes_dump: prints the Python stack of every thread of a live process (a test tool).
 *
 *   pyframes_dump [--stop] [--entry] [--bench N] PID
 *
 * Output:
 *   python 3.11.7 binary /path/of/file/with/_PyRuntime runtime 0x7f...
 *   tid 1234
 *     qualname (file:line)           innermost first; " [entry]" appended with --entry
 *   tid 1235 no-python               a thread without a PyThreadState
 *   tid 1236 error EAGAIN            any other failure (errno name)
 * --stop    PTRACE_SEIZE + PTRACE_INTERRUPT each thread before reading it, detach after
 *           (the thread is never left stopped, also when reading fails).
 * --bench N walks each thread N more times and prints "bench tid T walks N frames F
 *           reads_per_walk R us_per_walk U" (reads and time of those N walks only).
 * Exit: 0 ok, 2 no Python (ENOENT), 3 unsupported Python (message names the version),
 *       1 other errors.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "pyframes/pyframes.h"

#define MAX_FRAMES 4096

static const char *errname(int e)
{
	switch (e) {
	case ENOENT: return "ENOENT";
	case ENOTSUP: return "ENOTSUP";
	case ESRCH: return "ESRCH";
	case EFAULT: return "EFAULT";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EINVAL: return "EINVAL";
	default: return strerror(e);
	}
}

static int stop_thread(pid_t tid)
{
	int status;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		int r = -errno;

		(void) ptrace(PTRACE_DETACH, tid, 0, 0);
		return r;
	}
	for (int i = 0; i < 100; i++) {
		pid_t w = waitpid(tid, &status, __WALL);

		if (w == tid && WIFSTOPPED(status))
			return 0;
		if (w == tid && (WIFEXITED(status) || WIFSIGNALED(status)))
			return -ESRCH;
		if (w < 0 && errno != EINTR) {
			int r = -errno;

			(void) ptrace(PTRACE_DETACH, tid, 0, 0);
			return r;
		}
	}
	(void) ptrace(PTRACE_DETACH, tid, 0, 0);
	return -EAGAIN;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	struct pyframes_info info;
	struct remote_mem mem;
	struct pyframes *pf;
	struct py_frame *frames;
	bool stop = false, entry = false;
	long bench = 0;
	char path[64];
	struct dirent *de;
	pid_t pid = 0;
	DIR *dir;
	int r, i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--stop") == 0)
			stop = true;
		else if (strcmp(argv[i], "--entry") == 0)
			entry = true;
		else if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc)
			bench = strtol(argv[++i], NULL, 10);
		else
			pid = (pid_t) strtol(argv[i], NULL, 10);
	}
	if (pid <= 0) {
		fprintf(stderr, "usage: pyframes_dump [--stop] [--entry] [--bench N] PID\n");
		return 1;
	}
	r = remote_mem_open_pid(pid, &mem);
	if (r < 0) {
		fprintf(stderr, "pyframes_dump: %s\n", errname(-r));
		return 1;
	}
	r = pyframes_open(pid, &mem, &pf, &info);
	if (r == -ENOTSUP) {
		fprintf(stderr, "pyframes_dump: unsupported Python %s; hwspy supports 3.8-3.14\n",
			info.version[0] ? info.version : "(unknown version)");
		printf("python %s unsupported\n", info.version);
		remote_mem_close(&mem);
		return 3;
	}
	if (r < 0) {
		fprintf(stderr, "pyframes_dump: pyframes_open: %s\n", errname(-r));
		remote_mem_close(&mem);
		return r == -ENOENT ? 2 : 1;
	}
	printf("python %s binary %s runtime 0x%llx\n", info.version, info.binary,
	       (unsigned long long) info.runtime_addr);
	frames = calloc(MAX_FRAMES, sizeof(*frames));
	snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
	dir = opendir(path);
	if (!dir || !frames) {
		fprintf(stderr, "pyframes_dump: cannot list %s\n", path);
		return 1;
	}
	while ((de = readdir(dir))) {
		pid_t tid = (pid_t) strtol(de->d_name, NULL, 10);
		size_t n = 0, k;
		bool stopped = false;

		if (tid <= 0)
			continue;
		if (stop) {
			r = stop_thread(tid);
			if (r < 0) {
				printf("tid %d error stop %s\n", (int) tid, errname(-r));
				continue;
			}
			stopped = true;
		}
		r = pyframes_thread_stack(pf, tid, frames, MAX_FRAMES, &n, NULL);
		if (r == -ENOENT) {
			printf("tid %d no-python\n", (int) tid);
		} else if (r < 0) {
			printf("tid %d error %s\n", (int) tid, errname(-r));
		} else {
			printf("tid %d\n", (int) tid);
			for (k = 0; k < n; k++)
				printf("  %s (%s:%d)%s\n", frames[k].name, frames[k].file, frames[k].line,
				       entry && frames[k].entry ? " [entry]" : "");
		}
		if (r == 0 && bench > 0) {
			uint64_t reads0 = pyframes_stats(pf)->remote_reads;
			double t0 = now_us();
			long b, fails = 0;

			for (b = 0; b < bench; b++)
				if (pyframes_thread_stack(pf, tid, frames, MAX_FRAMES, &n, NULL) < 0)
					fails++;
			printf("bench tid %d walks %ld frames %zu fails %ld reads_per_walk %.2f us_per_walk %.2f\n",
			       (int) tid, bench, n, fails,
			       (double) (pyframes_stats(pf)->remote_reads - reads0) / bench,
			       (now_us() - t0) / bench);
		}
		if (stopped)
			(void) ptrace(PTRACE_DETACH, tid, 0, 0);
	}
	closedir(dir);
	{
		const struct pyframes_stats *st = pyframes_stats(pf);

		printf("stats walks %llu torn %llu unreadable %llu no_thread %llu hits %llu misses %llu reads %llu\n",
		       (unsigned long long) st->walks, (unsigned long long) st->torn,
		       (unsigned long long) st->unreadable, (unsigned long long) st->no_thread,
		       (unsigned long long) st->code_cache_hits,
		       (unsigned long long) st->code_cache_misses,
		       (unsigned long long) st->remote_reads);
	}
	free(frames);
	pyframes_free(pf);
	remote_mem_close(&mem);
	return 0;
}
