/*
 * dump_state: what a thread of the target does, from /proc/PID/task/TID (stat: its state,
 * syscall: the call it is blocked in and its arguments, comm: its OS name), and the reason a
 * waiting one waits, in the words of the off-CPU reasons (dump.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fdname.h"
#include "cli/dump.h"

/* One small /proc file, NUL-terminated (at most len - 1 bytes). -ESRCH: the thread is gone. */
static int read_small(pid_t pid, pid_t tid, const char *what, char *buf, size_t len)
{
	char path[96];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int) pid, (int) tid, what);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

/* "NR ARG1 .. ARG6 SP PC" (hex arguments), "-1 SP PC" (no system call: a fault, or
 * preempted) or "running". */
static void parse_syscall(const char *s, struct dump_task *ret)
{
	char *end;
	long nr;

	ret->nr = -2;
	nr = strtol(s, &end, 10);
	if (end == s)
		return;
	ret->nr = nr;
	for (int i = 0; nr >= 0 && i < 6; i++) {
		s = end;
		ret->args[i] = strtoull(s, &end, 16);
		if (end == s) {
			ret->nr = -2;
			return;
		}
	}
}

int dump_task_read(pid_t pid, pid_t tid, struct dump_task *ret)
{
	char buf[1024], *p;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->nr = -2;
	r = read_small(pid, tid, "stat", buf, sizeof(buf));
	if (r < 0)
		return r;
	/* "TID (COMM) S ...": the name may hold ')' and blanks, the state follows the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -ESRCH;
	ret->state = p[2];
	if (read_small(pid, tid, "comm", ret->comm, sizeof(ret->comm)) == 0)
		ret->comm[strcspn(ret->comm, "\n")] = '\0';
	if (read_small(pid, tid, "syscall", buf, sizeof(buf)) == 0)
		parse_syscall(buf, ret);
	return 0;
}

void dump_task_at_stop(struct dump_task *t, const struct dump_task *now)
{
	/* a page fault's I/O (D outside a system call) and a job-control stop show only before */
	if ((t->state == 'D' && t->nr == -1) || t->state == 'T' || t->state == 'Z')
		return;
	if (now->nr < -1)
		return;
	t->nr = now->nr;
	memcpy(t->args, now->args, sizeof(t->args));
	t->state = now->nr >= 0 ? 'S' : 'R';
}

bool dump_task_waiting(const struct dump_task *t)
{
	return t->state != 'R';
}

/* An fd argument's description: "fd 5 (pipe)". */
static void fd_words(pid_t pid, uint64_t fd, char *buf, size_t len)
{
	char name[96];

	if (fd > 1u << 30 || fdname(pid, (int) fd, name, sizeof(name)) < 0)
		snprintf(buf, len, "fd %" PRIu64, fd);
	else
		snprintf(buf, len, "fd %" PRIu64 " (%s)", fd, name);
}

void dump_task_wait(pid_t pid, const struct dump_task *t, uint64_t gil, uint64_t gil_len,
		    char *buf, size_t len)
{
	char fd[128];

	switch (t->nr) {
	case 0: case 17: case 19: case 295:             /* read pread64 readv preadv */
		fd_words(pid, t->args[0], fd, sizeof(fd));
		snprintf(buf, len, "read %s", fd);
		return;
	case 1: case 18: case 20: case 296:             /* write pwrite64 writev pwritev */
		fd_words(pid, t->args[0], fd, sizeof(fd));
		snprintf(buf, len, "write %s", fd);
		return;
	case 43: case 288:                              /* accept accept4 */
		fd_words(pid, t->args[0], fd, sizeof(fd));
		snprintf(buf, len, "accept %s", fd);
		return;
	case 45: case 47: case 299:                     /* recvfrom recvmsg recvmmsg */
		snprintf(buf, len, "recv socket");
		return;
	case 7: case 271:                               /* poll ppoll: no fds is a sleep */
	case 23: case 270:                              /* select pselect6 (3.8-3.10's sleep) */
		snprintf(buf, len, t->args[0] == 0 ? "sleep" : "poll/epoll/select");
		return;
	case 232: case 281: case 441:                   /* epoll_wait epoll_pwait epoll_pwait2 */
		snprintf(buf, len, "poll/epoll/select");
		return;
	case 35: case 230:                              /* nanosleep clock_nanosleep */
		snprintf(buf, len, "sleep");
		return;
	case 202:                                       /* futex */
		snprintf(buf, len, gil && t->args[0] >= gil && t->args[0] - gil < gil_len
			 ? "GIL" : "futex (lock)");
		return;
	case 61: case 247:                              /* wait4 waitid */
		snprintf(buf, len, "wait child");
		return;
	case -1:
		snprintf(buf, len, t->state == 'D' ? "page fault (I/O)" : "preempted");
		return;
	case -2:
		snprintf(buf, len, "unknown");
		return;
	default:
		snprintf(buf, len, "syscall %ld", t->nr);
		return;
	}
}
