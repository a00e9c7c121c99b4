/*
 * dump_state: what a thread of the target does, from /proc/PID/task/TID (status: its state and
 * how often it was switched off a CPU; syscall: the call it is blocked in, its arguments and
 * its user SP and PC; comm: its OS name), and the reason a waiting one waits, in the words of
 * the off-CPU reasons (record.h's wait_words_proc(): one table for every command).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/procfs.h"
#include "cli/dump.h"
#include "record/record.h"

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

int dump_task_read(pid_t pid, pid_t tid, struct dump_task *ret)
{
	struct procfs_syscall sc;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->sc.nr = -2;
	/* the state and the switch count first, in one read: what a read of the thread's
	 * memory after this call is checked against (procfs_task_sched() again) */
	r = procfs_task_sched(pid, tid, &ret->state, &ret->switches);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	if (read_small(pid, tid, "comm", ret->comm, sizeof(ret->comm)) == 0)
		ret->comm[strcspn(ret->comm, "\n")] = '\0';
	if (procfs_task_syscall(pid, tid, &sc) == 0)
		ret->sc = sc;
	return 0;
}

void dump_task_at_stop(struct dump_task *t, const struct dump_task *now)
{
	/* a page fault's I/O (D outside a system call) and a job-control stop show only before */
	if ((t->state == 'D' && t->sc.nr == -1) || t->state == 'T' || t->state == 'Z')
		return;
	if (now->sc.nr < -1)
		return;
	t->sc = now->sc;
	t->state = now->sc.nr >= 0 ? 'S' : 'R';
}

bool dump_task_waiting(const struct dump_task *t)
{
	return t->state != 'R';
}

void dump_task_wait(pid_t pid, const struct dump_task *t, uint64_t gil, char *buf, size_t len)
{
	wait_words_proc(pid, t->state, &t->sc, gil, NULL, buf, len);
}
