/*
 * waitsample.c: where a process's threads wait, by one look at /proc per thread and tick (see
 * waitsample.h). A thread's syscall file says "running" for a runnable one (one read); for a
 * blocked one, the call it waits in, and its status file its state (stopped, or a page fault
 * outside any call): two reads.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/procfs.h"
#include "record/record.h"
#include "record/waitsample.h"

struct reason {
	char name[WAIT_LABEL_MAX];
	uint64_t ns;
};

struct waitsample {
	pid_t pid;
	uint64_t gil;
	pid_t *tids;                            /* WAITSAMPLE_THREADS */
	struct reason reasons[WAITSAMPLE_REASONS];
	size_t n_reasons;
	uint64_t running_ns, other_ns;
	bool ran, other;                        /* "running" / "other" seen */
	uint64_t looked, lost;
};

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
	if (!w->tids) {
		free(w);
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
	free(w);
}

void waitsample_set_gil(struct waitsample *w, uint64_t gil_addr)
{
	w->gil = gil_addr;
}

/* Adds dt_ns to reason name's total: a new one while fewer than WAITSAMPLE_REASONS are kept,
 * else "other". */
static void add(struct waitsample *w, const char *name, uint64_t dt_ns)
{
	size_t i;

	for (i = 0; i < w->n_reasons; i++)
		if (!strcmp(w->reasons[i].name, name))
			break;
	if (i == w->n_reasons) {
		if (i == WAITSAMPLE_REASONS) {
			w->other = true;
			w->other_ns += dt_ns;
			return;
		}
		snprintf(w->reasons[i].name, sizeof(w->reasons[i].name), "%s", name);
		w->n_reasons++;
	}
	w->reasons[i].ns += dt_ns;
}

/* One look at thread tid: 1 it was seen (running or waiting), 0 gone or a zombie. */
static int look(struct waitsample *w, pid_t tid, uint64_t dt_ns)
{
	struct procfs_syscall sc;
	char label[WAIT_LABEL_MAX], state;
	uint64_t switches;
	int r;

	r = procfs_task_syscall(w->pid, tid, &sc);
	if (r == -EAGAIN) {
		w->ran = true;
		w->running_ns += dt_ns;
		return 1;
	}
	if (r == -ENOENT || procfs_task_sched(w->pid, tid, &state, &switches) < 0)
		return 0;
	if (state == 'Z' || state == 'X')
		return 0;
	if (state == 'R') {             /* woke up between the two reads */
		w->ran = true;
		w->running_ns += dt_ns;
		return 1;
	}
	if (r < 0)
		snprintf(label, sizeof(label), "unknown");
	else
		wait_label_proc(w->pid, state, &sc, w->gil, label, sizeof(label));
	add(w, label, dt_ns);
	return 1;
}

int waitsample_tick(struct waitsample *w, uint64_t dt_ns)
{
	int n = procfs_tasks(w->pid, w->tids, WAITSAMPLE_THREADS);
	size_t seen = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int r = look(w, w->tids[i], dt_ns);

		w->looked++;
		w->lost += r == 0;
		seen += (size_t) r;
	}
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
