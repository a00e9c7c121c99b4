/*
 * waitsample.c: where a process's threads wait, by one look at /proc per thread and tick (see
 * waitsample.h). A thread's status file gives its state and its switches off a CPU so far
 * (procfs_task_sched()): a runnable one runs; a blocked one whose state and switches are those
 * of the last tick has not run since (procfs_task_still()): it still waits where it did, its
 * reason kept. Else its syscall file says where it waits now (wait_label_proc()). So a thread
 * that waits long costs one read a tick, one that waits anew two (and a readlink for a read or
 * write by its fd).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/procfs.h"
#include "record/record.h"
#include "record/waitsample.h"

#define REASON_NONE (-2)        /* running, or not known */
#define REASON_OTHER (-1)

struct reason {
	char name[WAIT_LABEL_MAX];
	uint64_t ns;
};

/* A thread as the last tick saw it. */
struct seen {
	pid_t tid;                              /* first: cmp_tid() orders these */
	char state;
	int reason;                             /* index in reasons, REASON_OTHER or _NONE */
	uint64_t switches;
};

struct waitsample {
	pid_t pid;
	uint64_t gil;
	pid_t *tids;                            /* WAITSAMPLE_THREADS */
	struct seen *last, *now;                /* WAITSAMPLE_THREADS each; last sorted by tid */
	size_t n_last, n_now;
	struct reason reasons[WAITSAMPLE_REASONS];
	size_t n_reasons;
	uint64_t running_ns, other_ns;
	bool ran, other;                        /* "running" / "other" seen */
	uint64_t looked, lost;
};

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

int waitsample_new(pid_t pid, struct waitsample **ret)
{
	struct waitsample *w;

	*ret = NULL;
	if (pid <= 0)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->tids = malloc(WAITSAMPLE_THREADS * sizeof(*w->tids));
	w->last = malloc(WAITSAMPLE_THREADS * sizeof(*w->last));
	w->now = malloc(WAITSAMPLE_THREADS * sizeof(*w->now));
	if (!w->tids || !w->last || !w->now) {
		waitsample_free(w);
		return -ENOMEM;
	}
	w->pid = pid;
	*ret = w;
	return 0;
}

void waitsample_free(struct waitsample *w)
{
	if (!w)
		return;
	free(w->tids);
	free(w->last);
	free(w->now);
	free(w);
}

void waitsample_set_gil(struct waitsample *w, uint64_t gil_addr)
{
	w->gil = gil_addr;
}

/* Adds dt_ns to reason i's total (REASON_OTHER: "other"). */
static void add_at(struct waitsample *w, int i, uint64_t dt_ns)
{
	if (i >= 0) {
		w->reasons[i].ns += dt_ns;
	} else {
		w->other = true;
		w->other_ns += dt_ns;
	}
}

/* Reason name's index: a new one while fewer than WAITSAMPLE_REASONS are kept, else
 * REASON_OTHER. */
static int reason_of(struct waitsample *w, const char *name)
{
	size_t i;

	for (i = 0; i < w->n_reasons; i++)
		if (!strcmp(w->reasons[i].name, name))
			return (int) i;
	if (i == WAITSAMPLE_REASONS)
		return REASON_OTHER;
	snprintf(w->reasons[i].name, sizeof(w->reasons[i].name), "%s", name);
	w->reasons[i].ns = 0;
	w->n_reasons++;
	return (int) i;
}

/* One look at thread tid, noted in *ret: 1 it was seen (running or waiting), 0 gone or a
 * zombie. */
static int look(struct waitsample *w, pid_t tid, uint64_t dt_ns, struct seen *ret)
{
	const struct seen *last;
	struct procfs_syscall sc;
	char label[WAIT_LABEL_MAX];
	int r;

	*ret = (struct seen) { .tid = tid, .reason = REASON_NONE };
	if (procfs_task_sched(w->pid, tid, &ret->state, &ret->switches) < 0 ||
	    ret->state == 'Z' || ret->state == 'X')
		return 0;
	if (!procfs_task_still(ret->state)) {
		w->ran = true;
		w->running_ns += dt_ns;
		return 1;
	}
	last = w->n_last ? bsearch(&tid, w->last, w->n_last, sizeof(*last), cmp_tid) : NULL;
	if (last && last->reason != REASON_NONE && last->state == ret->state &&
	    last->switches == ret->switches) {
		ret->reason = last->reason;     /* not run since: the same wait */
		add_at(w, ret->reason, dt_ns);
		return 1;
	}
	r = procfs_task_syscall(w->pid, tid, &sc);
	if (r == -ENOENT)
		return 0;
	if (r == -EAGAIN) {             /* woke up between the two reads */
		w->ran = true;
		w->running_ns += dt_ns;
		return 1;
	}
	if (r < 0)
		snprintf(label, sizeof(label), "unknown");
	else
		wait_label_proc(w->pid, ret->state, &sc, w->gil, label, sizeof(label));
	ret->reason = reason_of(w, label);
	add_at(w, ret->reason, dt_ns);
	return 1;
}

int waitsample_tick(struct waitsample *w, uint64_t dt_ns)
{
	int n = procfs_tasks(w->pid, w->tids, WAITSAMPLE_THREADS);
	struct seen *swap;
	size_t seen = 0;

	if (n < 0)
		return n;
	w->n_now = 0;
	for (int i = 0; i < n; i++) {
		int r = look(w, w->tids[i], dt_ns, &w->now[w->n_now]);

		w->looked++;
		w->lost += r == 0;
		seen += (size_t) r;
		w->n_now += (size_t) r;
	}
	qsort(w->now, w->n_now, sizeof(*w->now), cmp_tid);
	swap = w->last;
	w->last = w->now;
	w->n_last = w->n_now;
	w->now = swap;
	return seen ? 0 : -ESRCH;
}

size_t waitsample_reasons(const struct waitsample *w, const char **ret_names, uint64_t *ret_ns,
			  size_t max)
{
	size_t n = 0;

	if (w->ran && n < max) {
		ret_names[n] = "running";
		ret_ns[n++] = w->running_ns;
	}
	for (size_t i = 0; i < w->n_reasons && n < max; i++) {
		ret_names[n] = w->reasons[i].name;
		ret_ns[n++] = w->reasons[i].ns;
	}
	if (w->other && n < max) {
		ret_names[n] = "other";
		ret_ns[n++] = w->other_ns;
	}
	return n;
}

void waitsample_counts(const struct waitsample *w, uint64_t *ret_looked, uint64_t *ret_lost)
{
	*ret_looked = w->looked;
	*ret_lost = w->lost;
}
