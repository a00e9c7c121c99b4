/*
 * snapshot: the current stack of every thread of a Python process (and, asked, of each process
 * of its tree), once, as data: per process its command, interpreter and how its threads were
 * read; per thread its id and name, state, the words of its wait (record/wait.c, the one table),
 * whether it holds the GIL, its Python frames innermost first and, with native, its native
 * frames already symbolized and the merged stack (record/merge.h). What `hwspy dump` prints;
 * hwspy.h's snapshot section is its public face (lib/snapshot.c).
 *
 * A thread blocked in the kernel (a system call, a page fault, a job-control stop) cannot change
 * its user memory or registers, so its stack is read without stopping it: its state and switch
 * count (procfs_task_sched()) before and after the read show whether it ran meanwhile. That is
 * how a thread waiting in a call that fails with EINTR when interrupted (epoll_wait, recv with a
 * timeout, sigtimedwait ...) is read: interrupting it would end the call. Running threads, and
 * those waiting in calls the kernel restarts by itself after a stop (wait_restarts(): a futex,
 * sleep, poll, a pipe's read ...), are stopped together (sampler/stop.h), so that the GIL's
 * holder and its waiters are seen at one instant. In rounds (SNAPSHOT_ROUNDS): the waiting
 * threads read, then the running ones stopped; what is left after them is read as it runs, each
 * walk verified. With nonblocking nothing is stopped.
 *
 * Order, to stop the target for as short a time as possible: the threads' states and system
 * calls from /proc, the waiting threads read, the stop for the walks alone (and, native, the
 * registers and stack copies), then after the release what needs no stop: Python's thread
 * names, the wait reasons, the native unwinding and symbols, the merge.
 *
 * Ownership: snapshot_take() allocates everything; snapshot_free() frees it. Strings point into
 * the snapshot (its interpreter reader and symbolizer stay open until then).
 */
#ifndef HWSPY_RECORD_SNAPSHOT_H
#define HWSPY_RECORD_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/procfs.h"
#include "output/profile.h"
#include "pyframes/pyframes.h"
#include "sampler/stop.h"
#include "symbolizer/symbolizer.h"

#define SNAPSHOT_MAX_THREADS   4096
#define SNAPSHOT_MAX_PROCESSES 256      /* subprocesses: the target and its tree */
#define SNAPSHOT_NATIVE_MAX    128      /* native frames unwound per thread */
#define SNAPSHOT_FRAMES_MAX    512      /* Python frames kept per thread (the innermost) */
#define SNAPSHOT_COMMAND_MAX   1024

struct snapshot_opts {
	bool native;            /* native frames too (a stopped or blocked thread's stack unwound) */
	bool nonblocking;       /* stop nothing: read the stacks as the threads run */
	bool subprocesses;      /* the processes pid started too (and theirs), each in turn */
	bool hold_signals;      /* block the caller's quit signals during a stop (stop.h) */
};

/* How a thread's stack was read */
enum snapshot_read {
	SNAPSHOT_READ_NONE,
	SNAPSHOT_READ_BLOCKED,  /* blocked in the kernel all along the read: as it was */
	SNAPSHOT_READ_STOPPED,  /* under a stop of ours */
	SNAPSHOT_READ_RUNNING,  /* as it ran (nonblocking, or it would not stop): a walk checked
	                         * for tearing, not an instant's stack */
};

/* Where reading a process failed */
enum snapshot_step {
	SNAPSHOT_OK,
	SNAPSHOT_FAILED_TARGET,         /* the process or its interpreter (ESRCH, EPERM, ENOENT,
	                                 * ENOTSUP, EBADMSG ...) */
	SNAPSHOT_FAILED_STOP,           /* the stop (EPERM: tracer the tracer's pid, or 0) */
	SNAPSHOT_FAILED_READ,           /* ENOMEM */
};

/* A native frame of a thread: one address, and what it is (symbolized false: nothing known,
 * nf.name and nf.module NULL); an address with inlined calls gives several, innermost first. */
struct snapshot_native {
	uint64_t addr;
	bool symbolized;
	struct native_frame nf;
};

/* What a thread did when looked at, from /proc */
struct snapshot_task {
	char state;                     /* /proc/PID/task/TID/status: R, S, D, T, t, Z ... */
	uint64_t switches;              /* ... its switches off a CPU so far */
	struct procfs_syscall sc;       /* the system call it is in (nr -1: none, -2: unknown) */
	char comm[32];                  /* the OS's name of the thread */
};

struct snapshot_thread {
	pid_t tid;
	enum snapshot_read how;
	char name[PYFRAMES_THREAD_NAME_MAX];
	struct snapshot_task task;
	bool waiting;                   /* not running, not runnable */
	char wait[192];                 /* why, when waiting (wait_words_proc()) */
	int gil;                        /* 1 holds it, 0 not, -1 unknown */
	bool gil_read;                  /* its stack is as it was when the GIL was read */
	uint64_t tstate;                /* 0: none */
	struct py_frame *frames;        /* innermost first */
	size_t n_frames;
	struct pyframes_cut cut;
	int walk;                       /* 0, or the walk's -errno (-ENOENT: no thread state) */
	uint64_t regs[REGS_USER_N];     /* native: in perf's REGS_USER order */
	bool regs_ok;
	unsigned char *stack;           /* ... a copy of its stack from SP (stack_len bytes) */
	size_t stack_len;
	uint64_t ips[SNAPSHOT_NATIVE_MAX];
	size_t n_ips;
	bool native_ok;                 /* native: unwound */
	struct snapshot_native *native; /* native: every address of ips, symbolized */
	size_t n_native;
	struct profile_frame *merged;   /* native: the merged stack, root first (merge_stacks()) */
	size_t n_merged;
	int merge;                      /* 0, or merge_stacks()'s -errno */
	char *scratch;                  /* the merged stack's nameless frames' texts */
};

struct snapshot_process {
	pid_t pid;
	char command[SNAPSHOT_COMMAND_MAX];     /* /proc/PID/cmdline, NULs as blanks */
	enum snapshot_step failed;
	int error;                      /* 0, or -errno where failed */
	pid_t tracer;                   /* SNAPSHOT_FAILED_STOP, -EPERM: the tracer, or 0 */
	struct pyframes_info info;      /* version, binary; error for -EBADMSG */
	int native_error;               /* native: the mappings unreadable (-errno): no native
	                                 * frames */
	struct snapshot_thread *t;      /* sorted by tid */
	size_t n;
	size_t n_blocked, n_stopped, n_running;         /* threads read each way */
	uint64_t stopped_ns;
	struct remote_mem mem;
	bool mem_open;
	struct pyframes *pf;
	struct symbolizer *sym;
};

struct snapshot {
	struct snapshot_opts opts;
	struct snapshot_process *p;     /* p[0] the target, then its tree (subprocesses) */
	size_t n;
};

/* Takes the snapshot of pid: 0 (a process that could not be read says so in its failed and
 * error; with subprocesses, none after a target that could not be read), -ENOMEM. */
int snapshot_take(pid_t pid, const struct snapshot_opts *opts, struct snapshot **ret);
void snapshot_free(struct snapshot *s);

#endif
