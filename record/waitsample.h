/*
 * waitsample: where a process's threads wait, by sampling /proc (hwspy monitor): at each tick
 * one look at every thread (its status file: its state and switches; for one blocked anew since
 * the last tick, its syscall file), each adding the tick's length to the total of its reason.
 * No stop, no ptrace: the target never notices. A tick costs about 20-40 us of /proc reads per
 * thread on a 2-vCPU VM (more for a thread that waits anew: its syscall file too).
 *
 * A reason is a label of few values, wait_label_proc()'s (record.h: the one wait table of
 * dump, --off-cpu and stat): "GIL", "futex (lock)", "sleep", "poll/epoll/select",
 * "read (pipe)", "recv socket", "accept socket", "wait child", "stopped", "page fault (I/O)"
 * ... A thread that runs (state R: on a CPU or runnable) adds to "running", kept apart from
 * the reasons' bound. At most WAITSAMPLE_REASONS reasons are kept (first seen, first kept);
 * the time of any other goes to "other". Zombie threads and threads that exit during the look
 * are left out. A tick looks at the first WAITSAMPLE_THREADS threads that /proc lists.
 *
 * Ownership: the names that waitsample_reasons() gives are the waitsample's, valid until
 * waitsample_free(). Errors: -ENOMEM, -ESRCH (the process is gone: no live thread), else
 * the -errno of the listing of /proc/PID/task.
 */
#ifndef HWSPY_RECORD_WAITSAMPLE_H
#define HWSPY_RECORD_WAITSAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WAITSAMPLE_THREADS 4096
#define WAITSAMPLE_REASONS 64
/* names waitsample_reasons() can give: the reasons, "other" and "running" */
#define WAITSAMPLE_NAMES (WAITSAMPLE_REASONS + 2)

struct waitsample;

/* The sampler of process pid's waits: 0, -EINVAL (pid <= 0), -ENOMEM. Nothing is read yet. */
int waitsample_new(pid_t pid, struct waitsample **ret);
void waitsample_free(struct waitsample *w);
/* Where the process's GIL state lies (pyframes: PYFRAMES_GIL_STATE_SIZE bytes), for "GIL"
 * rather than "futex (lock)"; 0: unknown. */
void waitsample_set_gil(struct waitsample *w, uint64_t gil_addr);
/* One look at every thread (at most WAITSAMPLE_THREADS): each adds dt_ns to its reason's total
 * (or to "running"). 0, -ESRCH (the process is gone), -ENOMEM, -errno. */
int waitsample_tick(struct waitsample *w, uint64_t dt_ns);
/* The totals so far, each name at most once: "running" first where some thread ran, then the
 * reasons in the order first seen, "other" last where some time went there; at most max of
 * them into ret_names[i] / ret_ns[i]: how many. */
size_t waitsample_reasons(const struct waitsample *w, const char **ret_names, uint64_t *ret_ns,
			  size_t max);
/* Threads looked at by all ticks so far, and of those, how many were left out (gone between
 * the listing and the look, or zombies). */
void waitsample_counts(const struct waitsample *w, uint64_t *ret_looked, uint64_t *ret_lost);

#endif
