/*
 * dump_state: what a thread of the target does, from /proc/PID/task/TID (status: its state and
 * how often it was switched off a CPU; syscall: the call it is blocked in, its arguments and
 * its user SP and PC; comm: its OS name), and the reason a waiting one waits, in the words of
 * the off-CPU reasons (dump.h).
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
	uint64_t v[8];
	int n = 0, want;
	char *end;
	long nr;

	ret->nr = -2;
	nr = strtol(s, &end, 10);
	if (end == s)
		return;
	want = nr >= 0 ? 8 : 2;
	for (; n < want; n++) {
		s = end;
		v[n] = strtoull(s, &end, 16);
		if (end == s)
			break;
	}
	if (nr >= 0 && n < 6)
		return;
	ret->nr = nr;
	if (nr >= 0)
		memcpy(ret->args, v, sizeof(ret->args));
	if (n == want) {
		ret->sp = v[want - 2];
		ret->pc = v[want - 1];
	}
}

/* Of a status file's text: the state letter and the switches off a CPU so far. */
static int parse_status(const char *text, char *ret_state, uint64_t *ret_switches)
{
	const char *keys[] = { "voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:" };
	const char *p = strstr(text, "State:");
	uint64_t sum = 0;

	if (!p)
		return -ESRCH;
	p += strlen("State:");
	p += strspn(p, " \t");
	if (!*p || *p == '\n')
		return -ESRCH;
	*ret_state = *p;
	for (size_t i = 0; i < 2; i++) {
		char *end;

		/* the first follows a newline; "voluntary" is also the tail of "nonvoluntary" */
		p = text;
		while ((p = strstr(p, keys[i])) && p != text && p[-1] != '\n')
			p++;
		if (!p)
			return -ESRCH;
		p += strlen(keys[i]);
		sum += strtoull(p, &end, 10);
		if (end == p)
			return -ESRCH;
	}
	*ret_switches = sum;
	return 0;
}

int dump_task_sched(pid_t pid, pid_t tid, char *ret_state, uint64_t *ret_switches)
{
	char buf[4096];
	int r = read_small(pid, tid, "status", buf, sizeof(buf));

	return r < 0 ? r : parse_status(buf, ret_state, ret_switches);
}

bool dump_task_signal_pending(pid_t pid, pid_t tid)
{
	const char *keys[] = { "SigPnd:", "ShdPnd:", "SigBlk:" };
	uint64_t v[3];
	char buf[4096];

	if (read_small(pid, tid, "status", buf, sizeof(buf)) < 0)
		return false;
	for (size_t i = 0; i < 3; i++) {
		const char *p = strstr(buf, keys[i]);
		char *end;

		if (!p)
			return true;    /* unknown: as if one were */
		p += strlen(keys[i]);
		v[i] = strtoull(p, &end, 16);
		if (end == p)
			return true;
	}
	return ((v[0] | v[1]) & ~v[2]) != 0;
}

int dump_task_read(pid_t pid, pid_t tid, struct dump_task *ret)
{
	char buf[1024];
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->nr = -2;
	/* the state and the switch count first, in one read: what a read of the thread's
	 * memory after this call is checked against (dump_task_sched() again) */
	r = dump_task_sched(pid, tid, &ret->state, &ret->switches);
	if (r < 0)
		return r;
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

bool dump_task_still(char state)
{
	return state == 'S' || state == 'D' || state == 'T' || state == 't';
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
