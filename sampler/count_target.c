/*
 * count_target: counting mode's target (sampler.h, "counting"): the attach to every thread of
 * a process, threads started meanwhile taken in once (by the numbers given out before the
 * first listing and after the last open, /proc/sys/kernel/ns_last_pid), the launch of a
 * command held before its exec (target.c forks it), and the wait for the target's end.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/procfs.h"
#include "sampler/count_internal.h"

#define MAX_LIST 65536

/* The last number the kernel gave a task in our PID namespace, or -errno. */
static long last_pid(void)
{
	char buf[32];
	ssize_t n;
	long v;
	int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	(void) close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	v = strtol(buf, NULL, 10);
	return v > 0 ? v : -EIO;
}

/* Whether tid was given out after lo and no later than hi, numbers wrapping at pid_max. */
static bool given_between(pid_t tid, long lo, long hi)
{
	return lo <= hi ? tid > lo && tid <= hi : tid > lo || tid <= hi;
}

/* /proc/PID/task into a growing array: how many (*ret owned by the caller), or -errno. */
static int list_tasks(pid_t pid, pid_t **ret)
{
	size_t cap = 256;
	pid_t *v = NULL;
	int n;

	for (;;) {
		pid_t *w = realloc(v, cap * sizeof(*v));
		if (!w) {
			free(v);
			return -ENOMEM;
		}
		v = w;
		n = procfs_tasks(pid, v, cap);
		if (n < 0 || (size_t) n < cap || cap >= MAX_LIST)
			break;
		cap *= 4;
	}
	if (n < 0) {
		free(v);
		return n;
	}
	*ret = v;
	return n;
}

static bool known(const struct counter *c, pid_t tid, const pid_t *seen, size_t n_seen)
{
	for (size_t k = 0; k < c->n_threads; k++)
		if (c->threads[k].tid == tid)
			return true;
	for (size_t k = 0; k < n_seen; k++)
		if (seen[k] == tid)
			return true;
	return false;
}

/* Opens tid's counters: 0, a thread error (counted in threads_failed), or an event error
 * that stops the attach (nothing opens on any thread then). */
static int open_tid(struct counter *c, pid_t tid)
{
	struct count_thread *t = count_thread_new(c, tid);
	bool chosen = c->chosen;
	int r;

	if (!t) {
		c->stats.threads_failed++;
		return -ENOMEM;
	}
	r = count_thread_open(c, t);
	/* with the layout chosen on another thread, any failure is this thread's */
	if (r < 0 && (chosen || count_thread_error(r)))
		c->stats.threads_failed++;
	return r;
}

/* The second listing: threads the first did not see, each taken in once (see sampler.h). */
static int attach_late(struct counter *c, const pid_t *first, size_t n_first, long before,
		       long after)
{
	pid_t *tids;
	long now = last_pid();
	int n = list_tasks(c->pid, &tids);

	if (n < 0)
		return 0;               /* gone: what was opened counts */
	for (int i = 0; i < n; i++) {
		if (known(c, tids[i], first, n_first))
			continue;
		if (before < 0 || after < 0 || now < 0 || given_between(tids[i], before, after))
			c->stats.threads_raced++;       /* inherited, or missed: nothing tells */
		else if (!given_between(tids[i], after, now))
			(void) open_tid(c, tids[i]);    /* existed before any counter did */
		/* else started after every listed thread had counters: its creator's count it */
	}
	free(tids);
	return 0;
}

/* Every thread of c->pid: its groups, disabled, then all enabled at once. */
static int attach_all(struct counter *c)
{
	long before = last_pid(), after;
	pid_t *tids;
	int n = list_tasks(c->pid, &tids), err = -ESRCH;

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int r = open_tid(c, tids[i]);
		if (r >= 0)
			continue;
		err = r;
		if (!c->chosen && !count_thread_error(r)) {
			free(tids);
			return r;       /* no event opens (the first thread told): none will */
		}
	}
	if (!c->n_threads) {
		free(tids);
		return err;
	}
	after = last_pid();
	(void) attach_late(c, tids, (size_t) n, before, after);
	free(tids);
	count_enable_all(c, true);
	c->started = true;
	c->start_ns = clock_now_ns();
	return 0;
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -1 : (int) fd;
#else
	(void) pid;
	return -1;
#endif
}

int count_attach(struct counter *c)
{
	int r;

	c->pid = c->opts.pid;
	if ((kill(c->pid, 0) < 0 && errno == ESRCH) || !proc_alive(c->pid))
		return -ESRCH;
	c->fd_limit = perf_nofile_raise(c->opts.raise_nofile);
	if (c->opts.at_exec) {
		r = open_tid(c, c->pid);
		if (r < 0)
			return r;
		c->start_ns = clock_now_ns();   /* the caller lets it go to its exec after */
	} else if ((r = attach_all(c)) < 0) {
		return r;
	}
	c->pidfd = open_pidfd(c->pid);
	return 0;
}

/* Whether name runs as execvp() would find it: 0, -ENOENT (nowhere in PATH), -EACCES. */
static int command_check(const char *name)
{
	const char *path = getenv("PATH"), *p;
	char file[4096];
	struct stat st;
	int err = -ENOENT;

	if (!name[0])
		return -ENOENT;
	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? 0 : -errno;
	for (p = path ? path : "/bin:/usr/bin"; ; p++) {
		const char *end = strchrnul(p, ':');
		int len = (int) (end - p);

		if (snprintf(file, sizeof(file), "%.*s%s%s", len, p, len ? "/" : "", name) <
		    (int) sizeof(file) && stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(file, X_OK) == 0)
				return 0;
			err = -EACCES;
		}
		if (!*end)
			break;
		p = end;
	}
	return err;
}

int count_launch(struct counter *c)
{
	struct count_thread *t;
	int r = command_check(c->opts.argv[0]);

	if (r < 0)
		return r;
	r = target_fork_stopped(c->opts.argv, &c->pid, &c->exec_pipe);
	if (r < 0)
		return r;
	c->launched = true;
	c->fd_limit = perf_nofile_raise(c->opts.raise_nofile);      /* after the fork: the command keeps its own */
	t = count_thread_new(c, c->pid);
	if (!t)
		return -ENOMEM;
	r = count_thread_open(c, t);
	if (r < 0)
		return r;               /* counter_free() kills the child: it never ran */
	c->pidfd = open_pidfd(c->pid);
	return 0;
}

static void ended(struct counter *c, int status)
{
	c->stats.target_exited = true;
	c->stats.exit_status = status;
	c->end_ns = clock_now_ns();
}

int count_release(struct counter *c)
{
	int err = 0, status;
	ssize_t n;

	c->released = true;
	c->start_ns = clock_now_ns();   /* the exec comes after this: wall_ns holds it */
	(void) kill(c->pid, SIGCONT);
	do
		n = read(c->exec_pipe, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	(void) close(c->exec_pipe);
	c->exec_pipe = -1;
	c->started = true;
	if (n != (ssize_t) sizeof(err))
		return 0;               /* end of file: the exec closed it */
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	ended(c, status);
	return err ? -err : -ENOEXEC;
}

bool count_wait_exit(struct counter *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };
	int status = 0;

	if (c->pidfd >= 0) {
		if (poll(&p, 1, timeout_ms) <= 0)
			return false;
	} else {
		(void) poll(NULL, 0, timeout_ms);
	}
	if (c->launched) {
		pid_t r = waitpid(c->pid, &status, WNOHANG);
		if (r != c->pid || !(WIFEXITED(status) || WIFSIGNALED(status)))
			return false;
	} else if (c->pidfd < 0 && proc_alive(c->pid)) {
		return false;
	}
	ended(c, status);
	return true;
}

void count_drop_child(struct counter *c)
{
	if (!c->launched || c->released || c->pid <= 0)
		return;
	(void) kill(c->pid, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
	c->released = true;
}
