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

#include "base/procfs.h"
#include "sampler/internal.h"

#define TREE_TASKS_MAX 4096     /* threads of one process opened at the attach */


void tree_attach(struct sampler *s, const pid_t *procs, size_t n)
{
	pid_t *tids = malloc(TREE_TASKS_MAX * sizeof(*tids));

	for (size_t i = 0; tids && i < n; i++) {
		int k = procfs_tasks(procs[i], tids, TREE_TASKS_MAX);

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
	n_procs = procfs_descendants(s->pid, procs, TREE_MAX_PROCS);

	for (size_t i = 0; i < n_procs && n < max; i++) {
		int k = procfs_tasks(procs[i], tids + n, max - n);

		if (k > 0)
			n += (size_t) k;
	}
	return n;
}
