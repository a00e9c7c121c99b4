/*
 * top_proc (cli): what `hwspy top`'s header reads of the target from /proc: its CPU time
 * (utime + stime of /proc/PID/stat, every thread's), and its context switches (voluntary and
 * nonvoluntary, summed over /proc/PID/task/TID/status). The task reads are bounded: at most
 * max tasks per call (the first ones the directory lists), so a process of 10^4 threads costs
 * no more than one of max; ret_seen says how many the directory held (counted up to
 * TOP_PROC_MAX_LISTED). proc is the procfs mount ("/proc"; tests give a fake tree). hwspy
 * stat reads each task's switches through the same parser (top_proc_task_switches()).
 * 0, or -errno (-ENOENT: the process is gone; -EBADMSG: a file that does not parse).
 */
#ifndef HWSPY_CLI_TOP_PROC_H
#define HWSPY_CLI_TOP_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TOP_PROC_MAX_TASKS 256          /* task status files read per refresh */
#define TOP_PROC_MAX_LISTED 100000      /* directory entries counted per refresh */

/* Clock ticks (sysconf(_SC_CLK_TCK)) of CPU time, user and system. */
int top_proc_cpu(const char *proc, pid_t pid, uint64_t *ret_ticks);

struct top_switches {
	uint64_t voluntary, involuntary;        /* summed over the tasks read */
	size_t read;                            /* tasks read */
	size_t seen;                            /* tasks listed */
};
int top_proc_switches(const char *proc, pid_t pid, size_t max, struct top_switches *ret);
/* One task's: tid as its /proc/PID/task entry names it (hwspy stat follows each thread's). */
int top_proc_task_switches(const char *proc, pid_t pid, const char *tid, uint64_t *ret_vol,
			   uint64_t *ret_invol);

#endif
