/*
 * procfs: the ids a task has in its own PID namespace, read from /proc (the NSpid line), and
 * a number of a task's status file (its Tgid, its TracerPid).
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

#include <stddef.h>
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

/* Every thread of pid, as its own namespace knows it, at most max, sorted ascending, into
 * ret_ids; *ret_n how many. Threads that exit during the listing are left out. */
int procfs_ns_tids(const char *proc, pid_t pid, pid_t *ret_ids, size_t max, size_t *ret_n);

#endif
