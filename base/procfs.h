/*
 * procfs: the ids a task has in its own PID namespace, read from /proc (the NSpid line), a
 * number of a task's status file (its Tgid, its TracerPid), what a task does now (its state and
 * switch count, the system call it is blocked in), whether a signal is pending for it, a live
 * thread of a process whose main thread has exited (pthread_exit) while others run on; the one
 * task lister (procfs_tasks()), a process's CPU time, context switches and command name.
 *
 * A process in a PID namespace of its own (unshare -p, docker, podman) knows itself and its
 * threads by the ids of that namespace: gettid() there, and so CPython's native_thread_id and
 * glibc's struct pthread, hold them. perf, /proc and BPF's pid helper, seen from an outer
 * namespace, give outer ids. These functions translate: outer id -> the id in the task's own
 * (innermost) namespace. proc is the procfs mount to read ("/proc"; tests give a fake tree).
 *
 * Errors (negative errno): -ENOENT no such task (or no NSpid line: a kernel before 4.1),
 * -EBADMSG an NSpid line that is not a list of positive ids, -ENOMEM, or open()'s errno.
 */
#ifndef HWSPY_BASE_PROCFS_H
#define HWSPY_BASE_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* From the text of a /proc/.../status file: the last id of its NSpid line (the id in the
 * task's own namespace) into *ret_id, and how many ids the line has (1: the task is in the
 * namespace of the procfs mount) into *ret_levels (may be NULL). */
int procfs_nspid_parse(const char *status, pid_t *ret_id, int *ret_levels);

/* Thread tid of process pid (both as proc sees them): its id in its own namespace. */
int procfs_ns_tid(const char *proc, pid_t pid, pid_t tid, pid_t *ret_id, int *ret_levels);

/* The number of line "KEY:" of /proc/PID/status (tid 0) or /proc/PID/task/TID/status into
 * *ret: 0, -ENOENT (no such task, or line), -EBADMSG (not a number), open()'s errno. */
int procfs_status_long(pid_t pid, pid_t tid, const char *key, long *ret);

/* Task tid of pid: its state letter (R, S, D, T, t, Z ...) and its switches off a CPU so far
 * (voluntary and not), from one read of its status file. A task still (procfs_task_still())
 * in two such reads with the same count did not run in between: it cannot have changed its
 * user memory or registers meanwhile. 0, -ENOENT (gone), -EBADMSG. */
int procfs_task_sched(pid_t pid, pid_t tid, char *ret_state, uint64_t *ret_switches);
/* Task tid of pid's switches off a CPU so far, voluntary and involuntary (its status file's
 * voluntary_ctxt_switches and nonvoluntary_ctxt_switches): 0, -ENOENT (gone), -EBADMSG. */
int procfs_task_switches(pid_t pid, pid_t tid, uint64_t *ret_vol, uint64_t *ret_invol);
/* Whether a state is one in which a task cannot run user code: blocked in the kernel (S, D) or
 * stopped (T, t). */
bool procfs_task_still(char state);
/* Whether a signal that task tid does not block is pending for it or its process (true where
 * that cannot be told). */
bool procfs_task_signal_pending(pid_t pid, pid_t tid);

/* The system call a blocked task is in (/proc/PID/task/TID/syscall): nr (-1: blocked outside
 * one, in a page fault), its arguments, its user SP and PC (0: not given). */
struct procfs_syscall {
	long nr;
	uint64_t args[6];
	uint64_t sp, pc;
};
/* From that file's text: 0, -EAGAIN ("running": nothing to say), -EBADMSG. */
int procfs_syscall_parse(const char *text, struct procfs_syscall *ret);
/* Task tid of pid's: 0, -EAGAIN (it runs), -ENOENT (gone), -EBADMSG, open()'s errno. */
int procfs_task_syscall(pid_t pid, pid_t tid, struct procfs_syscall *ret);

/* How long ago process pid started (CLOCK_BOOTTIME, to the clock tick), in ns. */
int procfs_age_ns(pid_t pid, uint64_t *ret);

/* Whether task tid of process pid (tid 0: the process's main thread, /proc/PID itself) runs:
 * 1, 0 for a zombie or dead task (State Z or X), -ENOENT (no such task), open()'s errno. */
int procfs_task_live(pid_t pid, pid_t tid);

/* A live thread of process pid into *ret_tid: pid itself while its main thread runs; where the
 * main thread has exited (pthread_exit) while other threads run on (a zombie leader, whose
 * maps are empty and whose mem, exe and root are unreadable), the first live thread of
 * /proc/PID/task. 0, -ESRCH (no such process, or no thread of it alive), open()'s errno. */
int procfs_live_tid(pid_t pid, pid_t *ret_tid);

/* The /proc directory through which process pid's memory, maps, exe and root are read, into
 * buf: "/proc/PID" while its main thread runs, else "/proc/PID/task/TID" of a live thread
 * (procfs_live_tid()): a task's directory under PID names a thread of that process only, never
 * a number reused since. (A task's directory has no map_files: that stays /proc/PID's.)
 * 0, -ESRCH, -ENAMETOOLONG, open()'s errno. */
int procfs_mem_dir(pid_t pid, char *buf, size_t size);

/* The live processes pid started and theirs (each thread's /proc/PID/task/TID/children,
 * breadth first: children before grandchildren), not pid itself, not zombies, never the caller
 * (a target that started it), at most max, into ret: how many. */
size_t procfs_descendants(pid_t pid, pid_t *ret, size_t max);

/* Every thread of pid, as its own namespace knows it, at most max, sorted ascending, into
 * ret_ids; *ret_n how many. Threads that exit during the listing are left out. */
int procfs_ns_tids(const char *proc, pid_t pid, pid_t *ret_ids, size_t max, size_t *ret_n);

/* The task lister (the one: list a process's threads through it): the thread ids of process
 * pid, as proc sees them (the entries of PROC/PID/task), in the directory's order, the first
 * max of them into ret (NULL: only counted): how many, or -ESRCH (no such process), opendir()'s
 * -errno. ret_seen (may be NULL) gets how many the directory held, counted up to
 * PROCFS_TASKS_COUNTED (without it, the listing stops at max): a process of 10^5 threads costs
 * no more than that. Threads that start or exit during the listing may be left out.
 * procfs_tasks() is procfs_tasks_at("/proc", ..., NULL). */
#define PROCFS_TASKS_COUNTED 100000
int procfs_tasks_at(const char *proc, pid_t pid, pid_t *ret, size_t max, size_t *ret_seen);
int procfs_tasks(pid_t pid, pid_t *ret, size_t max);

/* Process pid's CPU time in clock ticks (sysconf(_SC_CLK_TCK)), user and system, every thread's
 * (utime + stime of PROC/PID/stat): 0, -ENOENT (gone), -EBADMSG, open()'s errno. */
int procfs_cpu_ticks(const char *proc, pid_t pid, uint64_t *ret_ticks);
/* The switches of pid's first max tasks (procfs_tasks_at()) summed: those of the tasks read
 * (one that exits meanwhile is left out), how many were read, how many the directory listed.
 * 0, -ENOENT (gone: no task read of those listed), -ENOMEM, open()'s errno. */
struct procfs_switches {
	uint64_t voluntary, involuntary;
	size_t read;                    /* tasks read */
	size_t seen;                    /* tasks listed, up to PROCFS_TASKS_COUNTED */
};
int procfs_switches(const char *proc, pid_t pid, size_t max, struct procfs_switches *ret);
/* Process pid's command name (/proc/PID/comm, its newline cut) into buf: 0, -EINVAL (pid <= 0,
 * size 0), -ENOENT (gone), open()'s errno. */
int procfs_comm(pid_t pid, char *buf, size_t size);

#endif
