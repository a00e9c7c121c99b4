/*
 * tree: opts.subprocesses on attach. The processes the target started before hwspy came (its
 * children, theirs ...) inherited none of its events: each gets its own, on every thread, per
 * CPU with inherit=1 as the target's threads have them, so that the processes and threads
 * they start later carry them too (and come with a PERF_RECORD_FORK, as the target's do).
 *
 * The tree is listed (each thread's /proc/PID/task/TID/children, breadth first, at most
 * TREE_MAX_PROCS processes) before any event opens: a process started after the listing is
 * one no event is opened on, so none is sampled twice (once through events it inherited, once
 * through its own). One started in between by a process whose events were not open yet
 * inherited nothing: the first TREE_SCANS periodic scans after the attach (scan_threads(),
 * every 100 ms) list the tree's threads too, and a thread unknown in two scans in a row gets
 * events of its own, as the target's threads do. Not later: once every event is open, what
 * starts inherits them, and a listing of the tree costs ~70 us a process here (its threads'
 * children files, its state).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/internal.h"

#define CHILDREN_MAX 4096       /* bytes of one thread's children list read */
#define TREE_TASKS_MAX 4096     /* threads of one process opened at the attach */

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
		long child = strtol(p, &end, 10);
		bool seen = child == root || child == self;

		if (end == p || child <= 0 || child > INT32_MAX)
			break;
		for (size_t k = 0; k < *n && !seen; k++)
			seen = ret[k] == (pid_t) child;
		if (!seen && proc_alive((pid_t) child))     /* not a zombie: no events for it */
			ret[(*n)++] = (pid_t) child;
	}
}

size_t tree_list(pid_t pid, pid_t *ret, size_t max)
{
	size_t n = 0;

	/* i == n: pid itself, first; then each descendant found, in turn */
	for (size_t i = 0; i <= n && i <= max; i++) {
		pid_t p = i == 0 ? pid : ret[i - 1];
		char path[64];
		struct dirent *e;
		DIR *dir;

		snprintf(path, sizeof(path), "/proc/%d/task", (int) p);
		dir = opendir(path);
		if (!dir)
			continue;
		while ((e = readdir(dir)) && n < max) {
			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int) p,
				 e->d_name);
			add_children(path, pid, ret, &n, max);
		}
		closedir(dir);
	}
	return n;
}

void tree_attach(struct sampler *s, const pid_t *procs, size_t n)
{
	pid_t *tids = malloc(TREE_TASKS_MAX * sizeof(*tids));

	for (size_t i = 0; tids && i < n; i++) {
		int k = target_list_tasks(procs[i], tids, TREE_TASKS_MAX);

		for (int j = 0; j < k; j++) {
			int r;

			if (thread_find(s, tids[j]) || perf_thread_left_out(s, tids[j]))
				continue;
			r = thread_add(s, tids[j], false);
			/* a process that cannot be sampled (another user's) is counted, not fatal:
			 * the target is sampled on */
			if (r < 0 && r != -ESRCH)
				perf_thread_failed(s, tids[j], perf_fail_reason(r), r);
		}
	}
	free(tids);
	s->tree_scans = TREE_SCANS;
}

size_t tree_tasks(struct sampler *s, pid_t *tids, size_t n, size_t max)
{
	pid_t procs[TREE_MAX_PROCS];
	size_t n_procs;

	if (!s->tree_scans)
		return n;
	s->tree_scans--;
	n_procs = tree_list(s->pid, procs, TREE_MAX_PROCS);

	for (size_t i = 0; i < n_procs && n < max; i++) {
		int k = target_list_tasks(procs[i], tids + n, max - n);

		if (k > 0)
			n += (size_t) k;
	}
	return n;
}
