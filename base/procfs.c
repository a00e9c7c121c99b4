/*
 * procfs.c: NSpid of /proc/PID/task/TID/status (see procfs.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int procfs_status_long(pid_t pid, pid_t tid, const char *key, long *ret)
{
	char path[96], text[STATUS_MAX];
	size_t klen = strlen(key);
	const char *p = text;
	int r;

	if (tid)
		(void) snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int) pid, (int) tid);
	else
		(void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	r = read_status(path, text);
	if (r < 0)
		return r;
	while (p) {
		if (!strncmp(p, key, klen) && p[klen] == ':') {
			char *end;

			errno = 0;
			*ret = strtol(p + klen + 1, &end, 10);
			return errno || end == p + klen + 1 ? -EBADMSG : 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

int procfs_ns_tids(const char *proc, pid_t pid, pid_t *ret_ids, size_t max, size_t *ret_n)
{
	char path[256];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	*ret_n = 0;
	(void) snprintf(path, sizeof(path), "%s/%d/task", proc, (int) pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (n < max && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		pid_t id;

		if (*end || tid <= 0 || tid >= (1L << 30))
			continue;
		if (procfs_ns_tid(proc, pid, (pid_t) tid, &id, NULL) == 0)
			ret_ids[n++] = id;
	}
	(void) closedir(d);
	qsort(ret_ids, n, sizeof(*ret_ids), cmp_pid);
	*ret_n = n;
	return 0;
}
