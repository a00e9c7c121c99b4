/*
 * procfs.c: NSpid of /proc/PID/task/TID/status, a number of a status file, a live thread, the
 * task lister, a process's CPU time, switches and name (see procfs.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/procfs.h"

#define STATUS_MAX 8192     /* a status file is ~1.5 KB; NSpid comes in its first half */
#define NS_LEVELS_MAX 33    /* MAX_PID_NS_LEVEL (32) nested namespaces, and the initial one */

int procfs_nspid_parse(const char *status, pid_t *ret_id, int *ret_levels)
{
	const char *p = status;
	long last = 0;
	int levels = 0;

	while (p && strncmp(p, "NSpid:", 6) != 0) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return -ENOENT;
	p += 6;
	for (;;) {
		char *end;
		long v;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || *p == '\0')
			break;
		if (*p < '0' || *p > '9')
			return -EBADMSG;
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || v <= 0 || v >= (1L << 30) || ++levels > NS_LEVELS_MAX)
			return -EBADMSG;
		last = v;
		p = end;
	}
	if (!levels)
		return -EBADMSG;
	*ret_id = (pid_t) last;
	if (ret_levels)
		*ret_levels = levels;
	return 0;
}

/* The text of the status file at path, NUL-terminated, into text (STATUS_MAX bytes). */
static int read_status(const char *path, char *text)
{
	ssize_t n;
	size_t len = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < STATUS_MAX - 1) {
		n = read(fd, text + len, STATUS_MAX - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			(void) close(fd);
			return r == -ESRCH ? -ENOENT : r;
		}
		if (n == 0)
			break;
		len += (size_t) n;
	}
	(void) close(fd);
	text[len] = '\0';
	return 0;
}

int procfs_ns_tid(const char *proc, pid_t pid, pid_t tid, pid_t *ret_id, int *ret_levels)
{
	char path[256], text[STATUS_MAX];
	int r;

	(void) snprintf(path, sizeof(path), "%s/%d/task/%d/status", proc, (int) pid, (int) tid);
	r = read_status(path, text);
	return r < 0 ? r : procfs_nspid_parse(text, ret_id, ret_levels);
}

/* Where the value of line "KEY:" of a status file's text starts, or NULL. */
static const char *status_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p) {
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return p + klen + 1;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/* The status file of task tid of pid (tid 0: the process's), its text into text. */
static int read_task_status(pid_t pid, pid_t tid, char *text)
{
	char path[96];

	if (tid)
		(void) snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int) pid, (int) tid);
	else
		(void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	return read_status(path, text);
}

int procfs_status_long(pid_t pid, pid_t tid, const char *key, long *ret)
{
	char text[STATUS_MAX];
	const char *v;
	char *end;
	int r;

	r = read_task_status(pid, tid, text);
	if (r < 0)
		return r;
	v = status_value(text, key);
	if (!v)
		return -ENOENT;
	errno = 0;
	*ret = strtol(v, &end, 10);
	return errno || end == v ? -EBADMSG : 0;
}

/* The state letter of a status file's text: 0, or -EBADMSG (no State line). */
static int state_of(const char *text, char *ret)
{
	const char *v = status_value(text, "State");

	if (!v)
		return -EBADMSG;
	v += strspn(v, " \t");
	if (!*v || *v == '\n')
		return -EBADMSG;
	*ret = *v;
	return 0;
}

/* A status file's switch counts, voluntary (ret[0]) and not (ret[1]): 0 or -EBADMSG. */
static int switches_of(const char *text, uint64_t ret[2])
{
	static const char *const keys[] = { "voluntary_ctxt_switches",
					     "nonvoluntary_ctxt_switches" };

	for (size_t i = 0; i < 2; i++) {
		const char *v = status_value(text, keys[i]);
		char *end;

		if (!v)
			return -EBADMSG;
		ret[i] = strtoull(v, &end, 10);
		if (end == v)
			return -EBADMSG;
	}
	return 0;
}

/* Task tid's status into text (STATUS_MAX bytes) and its voluntary and involuntary switches
 * into sw: 0, or -errno. */
static int task_switches(pid_t pid, pid_t tid, char *text, uint64_t sw[2])
{
	int r = read_task_status(pid, tid, text);

	return r < 0 ? r : switches_of(text, sw);
}

int procfs_task_sched(pid_t pid, pid_t tid, char *ret_state, uint64_t *ret_switches)
{
	char text[STATUS_MAX];
	uint64_t sw[2];
	int r;

	r = task_switches(pid, tid, text, sw);
	if (r < 0)
		return r;
	r = state_of(text, ret_state);
	if (r < 0)
		return r;
	*ret_switches = sw[0] + sw[1];
	return 0;
}

int procfs_task_switches(pid_t pid, pid_t tid, uint64_t *ret_vol, uint64_t *ret_invol)
{
	char text[STATUS_MAX];
	uint64_t sw[2];
	int r = task_switches(pid, tid, text, sw);

	if (r < 0)
		return r;
	*ret_vol = sw[0];
	*ret_invol = sw[1];
	return 0;
}

bool procfs_task_still(char state)
{
	return state == 'S' || state == 'D' || state == 'T' || state == 't';
}

bool procfs_task_signal_pending(pid_t pid, pid_t tid)
{
	static const char *const keys[] = { "SigPnd", "ShdPnd", "SigBlk" };
	char text[STATUS_MAX];
	uint64_t v[3];

	if (read_task_status(pid, tid, text) < 0)
		return true;    /* unknown: as if one were */
	for (size_t i = 0; i < 3; i++) {
		const char *p = status_value(text, keys[i]);
		char *end;

		if (!p)
			return true;
		v[i] = strtoull(p, &end, 16);
		if (end == p)
			return true;
	}
	return ((v[0] | v[1]) & ~v[2]) != 0;
}

/* "NR ARG1 .. ARG6 SP PC" (hex arguments), "-1 SP PC" (blocked outside a system call: a
 * fault) or "running". */
int procfs_syscall_parse(const char *text, struct procfs_syscall *ret)
{
	uint64_t v[8];
	int n = 0, want;
	char *end;
	long nr;

	*ret = (struct procfs_syscall) { .nr = -2 };
	nr = strtol(text, &end, 10);
	if (end == text)
		return -EAGAIN;         /* "running" */
	want = nr >= 0 ? 8 : 2;
	for (; n < want; n++) {
		text = end;
		v[n] = strtoull(text, &end, 16);
		if (end == text)
			break;
	}
	if (nr >= 0 && n < 6)
		return -EBADMSG;
	ret->nr = nr;
	if (nr >= 0)
		memcpy(ret->args, v, sizeof(ret->args));
	if (n == want) {
		ret->sp = v[want - 2];
		ret->pc = v[want - 1];
	}
	return 0;
}

int procfs_task_syscall(pid_t pid, pid_t tid, struct procfs_syscall *ret)
{
	char path[96], text[256];
	ssize_t n;
	int fd;

	*ret = (struct procfs_syscall) { .nr = -2 };
	(void) snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int) pid, (int) tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	do
		n = read(fd, text, sizeof(text) - 1);
	while (n < 0 && errno == EINTR);
	(void) close(fd);
	if (n < 0)
		return errno == ESRCH ? -ENOENT : -errno;
	text[n] = '\0';
	return procfs_syscall_parse(text, ret);
}

int procfs_age_ns(pid_t pid, uint64_t *ret)
{
	char path[64], text[1024], *p;
	unsigned long long start;
	struct timespec now;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd, field;

	(void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	do
		n = read(fd, text, sizeof(text) - 1);
	while (n < 0 && errno == EINTR);
	(void) close(fd);
	if (n <= 0)
		return -ENOENT;
	text[n] = '\0';
	/* "PID (COMM) S ..." : the name may hold ')' and blanks; starttime is field 22 */
	p = strrchr(text, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || hz <= 0 || sscanf(p + 1, "%llu", &start) != 1 ||
	    clock_gettime(CLOCK_BOOTTIME, &now) < 0)
		return -EBADMSG;
	start = start * (1000000000ull / (unsigned long long) hz);
	*ret = (uint64_t) now.tv_sec * 1000000000ull + (uint64_t) now.tv_nsec;
	*ret = *ret > start ? *ret - start : 0;
	return 0;
}

int procfs_task_live(pid_t pid, pid_t tid)
{
	char text[STATUS_MAX], state;
	int r;

	r = read_task_status(pid, tid, text);
	if (r < 0)
		return r;
	if (state_of(text, &state) < 0)
		return -ENOENT;
	return state != 'Z' && state != 'X';
}

/* threads looked at for a live one, at most (a zombie leader's process still runs some) */
#define LIVE_SCAN_MAX 65536
#define DESCENDANTS_TASKS_MAX 65536    /* threads of each process whose children are read */

int procfs_live_tid(pid_t pid, pid_t *ret_tid)
{
	int r = procfs_task_live(pid, 0), n;
	pid_t *tids;

	if (r == 1) {
		*ret_tid = pid;
		return 0;
	}
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	tids = malloc(LIVE_SCAN_MAX * sizeof(*tids));
	if (!tids)
		return -ENOMEM;
	n = procfs_tasks(pid, tids, LIVE_SCAN_MAX);
	r = n < 0 ? n : -ESRCH;
	for (int i = 0; i < n; i++) {
		if (tids[i] != pid && procfs_task_live(pid, tids[i]) == 1) {
			*ret_tid = tids[i];
			r = 0;
			break;
		}
	}
	free(tids);
	return r;
}

int procfs_mem_dir(pid_t pid, char *buf, size_t size)
{
	pid_t tid;
	int r = procfs_live_tid(pid, &tid), n;

	if (r < 0)
		return r;
	if (tid == pid)
		n = snprintf(buf, size, "/proc/%d", (int) pid);
	else
		n = snprintf(buf, size, "/proc/%d/task/%d", (int) pid, (int) tid);
	return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

#define CHILDREN_MAX 4096       /* bytes of one thread's children list read */

/* Appends the children listed in path to ret[*n .. max), those not there yet, hwspy itself
 * never (a target that started it: its samples would be of our own reads). */
static void add_children(const char *path, pid_t root, pid_t *ret, size_t *n, size_t max)
{
	char buf[CHILDREN_MAX];
	pid_t self = getpid();
	size_t len;
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* a list longer than that: its last number may be cut (another process's) */
	if (len == sizeof(buf) - 1) {
		char *cut = strrchr(buf, ' ');

		*(cut ? cut : buf) = '\0';
	}
	for (char *p = buf, *end; *n < max; p = end) {
		pid_t live;
		long child = strtol(p, &end, 10);
		bool seen = child == root || child == self;

		if (end == p || child <= 0 || child > INT32_MAX)
			break;
		for (size_t k = 0; k < *n && !seen; k++)
			seen = ret[k] == (pid_t) child;
		if (!seen && procfs_live_tid((pid_t) child, &live) == 0)     /* not a zombie: no events for it */
			ret[(*n)++] = (pid_t) child;
	}
}

size_t procfs_descendants(pid_t pid, pid_t *ret, size_t max)
{
	pid_t *tids = malloc(DESCENDANTS_TASKS_MAX * sizeof(*tids));
	size_t n = 0;

	if (!tids)
		return 0;
	/* i == n: pid itself, first; then each descendant found, in turn */
	for (size_t i = 0; i <= n && i <= max; i++) {
		pid_t p = i == 0 ? pid : ret[i - 1];
		int n_tids = procfs_tasks(p, tids, DESCENDANTS_TASKS_MAX);

		for (int k = 0; k < n_tids && n < max; k++) {
			char path[64];

			snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) p,
				 (int) tids[k]);
			add_children(path, pid, ret, &n, max);
		}
	}
	free(tids);
	return n;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

int procfs_ns_tids(const char *proc, pid_t pid, pid_t *ret_ids, size_t max, size_t *ret_n)
{
	int listed = procfs_tasks_at(proc, pid, ret_ids, max, NULL);
	size_t n = 0;

	*ret_n = 0;
	if (listed < 0)
		return listed == -ESRCH ? -ENOENT : listed;
	for (size_t i = 0; i < (size_t) listed; i++) {     /* in place: n <= i */
		pid_t id;

		if (procfs_ns_tid(proc, pid, ret_ids[i], &id, NULL) == 0)
			ret_ids[n++] = id;
	}
	qsort(ret_ids, n, sizeof(*ret_ids), cmp_pid);
	*ret_n = n;
	return 0;
}

/* ---- the task lister; CPU time, switches and name of a process --------------------------- */

int procfs_tasks_at(const char *proc, pid_t pid, pid_t *ret, size_t max, size_t *ret_seen)
{
	char path[256];
	struct dirent *e;
	size_t n = 0, seen = 0;
	DIR *d;

	if (ret_seen)
		*ret_seen = 0;
	if (max > INT_MAX)
		max = INT_MAX;
	(void) snprintf(path, sizeof(path), "%s/%d/task", proc, (int) pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (seen < (ret_seen ? PROCFS_TASKS_COUNTED : max) && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || tid <= 0 || tid >= (1L << 30))
			continue;
		seen++;
		if (n < max && ret)
			ret[n] = (pid_t) tid;
		n += n < max;
	}
	(void) closedir(d);
	if (ret_seen)
		*ret_seen = seen;
	return (int) n;
}

int procfs_tasks(pid_t pid, pid_t *ret, size_t max)
{
	return procfs_tasks_at("/proc", pid, ret, max, NULL);
}

int procfs_cpu_ticks(const char *proc, pid_t pid, uint64_t *ret_ticks)
{
	char path[128], text[STATUS_MAX], *p;
	unsigned long long utime, stime;
	int r;

	(void) snprintf(path, sizeof(path), "%s/%d/stat", proc, (int) pid);
	r = read_status(path, text);
	if (r < 0)
		return r;
	/* "pid (comm) state ppid ...": comm may hold anything, ')' too: the last one ends it;
	 * utime and stime are fields 14 and 15, the 12th and 13th after the state */
	p = strrchr(text, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &utime, &stime) != 2)
		return -EBADMSG;
	*ret_ticks = utime + stime;
	return 0;
}

/* Task tid of pid's switches under proc: as procfs_task_switches(). */
static int task_switches_at(const char *proc, pid_t pid, pid_t tid, uint64_t ret[2])
{
	char path[256], text[STATUS_MAX];
	int r;

	(void) snprintf(path, sizeof(path), "%s/%d/task/%d/status", proc, (int) pid, (int) tid);
	r = read_status(path, text);
	return r < 0 ? r : switches_of(text, ret);
}

int procfs_switches(const char *proc, pid_t pid, size_t max, struct procfs_switches *ret)
{
	pid_t *tids = malloc((max ? max : 1) * sizeof(*tids));
	int n;

	*ret = (struct procfs_switches) { 0 };
	if (!tids)
		return -ENOMEM;
	n = procfs_tasks_at(proc, pid, tids, max, &ret->seen);
	for (int i = 0; i < n; i++) {
		uint64_t sw[2];

		if (task_switches_at(proc, pid, tids[i], sw) < 0)
			continue;       /* exited meanwhile: left out */
		ret->voluntary += sw[0];
		ret->involuntary += sw[1];
		ret->read++;
	}
	free(tids);
	if (n < 0)
		return n == -ESRCH ? -ENOENT : n;
	return ret->read || !ret->seen ? 0 : -ENOENT;
}

int procfs_comm(pid_t pid, char *buf, size_t size)
{
	char path[64], text[STATUS_MAX];
	int r;

	if (pid <= 0 || !size)
		return -EINVAL;
	(void) snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
	r = read_status(path, text);
	if (r < 0)
		return r;
	text[strcspn(text, "\n")] = '\0';
	(void) snprintf(buf, size, "%s", text);
	return 0;
}
