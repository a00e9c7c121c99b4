/* top_proc: the target's CPU time and context switches from /proc (top_proc.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/top_proc.h"

/* path's first size - 1 bytes, NUL-terminated: their length, or -errno. */
static ssize_t read_text(const char *path, char *text, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -errno;
	while ((size_t) got < size - 1) {
		n = read(fd, text + got, size - 1 - (size_t) got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			(void) close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += n;
	}
	(void) close(fd);
	text[got] = '\0';
	return got;
}

int top_proc_cpu(const char *proc, pid_t pid, uint64_t *ret_ticks)
{
	char path[128], text[1024], *p;
	unsigned long long utime, stime;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/stat", proc, (int) pid);
	n = read_text(path, text, sizeof(text));
	if (n < 0)
		return (int) n;
	/* "pid (comm) state ppid ...": comm may hold anything, ')' too: the last one ends it;
	 * utime and stime are fields 14 and 15, the 12th and 13th after the state */
	p = strrchr(text, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &utime, &stime) != 2)
		return -EBADMSG;
	*ret_ticks = utime + stime;
	return 0;
}

/* The value of the status line "key:\tN" into *ret: 0, or -EBADMSG. */
static int status_field(const char *text, const char *key, uint64_t *ret)
{
	size_t k = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		unsigned long long v;
		if (strncmp(p, key, k) == 0 && p[k] == ':' && sscanf(p + k + 1, "%llu", &v) == 1) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

int top_proc_task_switches(const char *proc, pid_t pid, const char *tid, uint64_t *ret_vol,
			   uint64_t *ret_invol)
{
	char path[512], text[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/task/%s/status", proc, (int) pid, tid);
	n = read_text(path, text, sizeof(text));
	if (n < 0)
		return (int) n;
	if (status_field(text, "voluntary_ctxt_switches", ret_vol) < 0 ||
	    status_field(text, "nonvoluntary_ctxt_switches", ret_invol) < 0)
		return -EBADMSG;
	return 0;
}

static int add_task(const char *proc, pid_t pid, const char *tid, struct top_switches *sw)
{
	uint64_t v, nv;
	int r = top_proc_task_switches(proc, pid, tid, &v, &nv);

	if (r < 0)
		return r;           /* exited meanwhile: left out */
	sw->voluntary += v;
	sw->involuntary += nv;
	sw->read++;
	return 0;
}

int top_proc_switches(const char *proc, pid_t pid, size_t max, struct top_switches *ret)
{
	char path[128];
	struct dirent *d;
	DIR *dir;

	*ret = (struct top_switches) { 0 };
	snprintf(path, sizeof(path), "%s/%d/task", proc, (int) pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (ret->seen < TOP_PROC_MAX_LISTED && (d = readdir(dir))) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		ret->seen++;
		if (ret->read < max)
			(void) add_task(proc, pid, d->d_name, ret);
	}
	(void) closedir(dir);
	return ret->read || !ret->seen ? 0 : -ENOENT;
}
