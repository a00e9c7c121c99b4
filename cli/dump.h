/*
 * dump (cli): what the files of `hwspy dump` share. cmd_dump.c parses the options, reads every
 * thread's stack and writes the text or JSON; dump_stop.c stops the target's running threads
 * for the read and lets them go (dump_stop_begin() / dump_stop_end()); dump_state.c says what a
 * thread does and waits on, from /proc. Internal to cli/.
 *
 * A thread blocked in the kernel (a system call, a page fault, a job-control stop) cannot change
 * its user memory or registers, so its stack can be read without stopping it: its state and
 * switch count (procfs_task_sched()) before and after the read show whether it ran meanwhile.
 * That is how a thread waiting in a call that fails with EINTR when interrupted (epoll_wait,
 * recv with a timeout, sigtimedwait ...) is read: interrupting it would end the call, an end
 * whose undo needs hwspy alive. Running threads, and those waiting in calls the kernel restarts
 * by itself after a stop (wait_restarts(): a futex, sleep, poll, a pipe's read ...), are
 * stopped together, so that the GIL's holder and its waiters are seen at one instant.
 */
#ifndef HWSPY_CLI_DUMP_H
#define HWSPY_CLI_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/procfs.h"

#define DUMP_MAX_THREADS  4096
#define DUMP_STACK_COPY   (64 * 1024)   /* bytes of a stopped thread's stack copied (--native) */
#define DUMP_NATIVE_MAX   128           /* native frames unwound per thread */
#define DUMP_N_REGS       20            /* popcount(SYMBOLIZER_X86_64_REGS) */
#define DUMP_REG_SP       7             /* ... where SP and IP are in that order */
#define DUMP_REG_IP       8

/* One thread as the stop left it: whether it stopped, and (--native) its registers in perf's
 * REGS_USER order for SYMBOLIZER_X86_64_REGS and a copy of its stack from SP. */
struct dump_stopped {
	pid_t tid;
	bool stopped;                   /* in a ptrace-stop of ours during the read */
	bool rewound;                   /* our interrupt made the call it was entering fail with
	                                 * EINTR: the call was made again and the thread let go at
	                                 * once, unread (it waits there now) */
	bool regs_ok;
	uint64_t regs[DUMP_N_REGS];
	unsigned char *stack;           /* malloc'd, stack_len bytes; NULL: none */
	size_t stack_len;
};

struct dump_stop;

/* Seizes and interrupts every thread in tids (n of them: the running ones) of pid that still
 * runs when its turn comes (its state read again just before), and waits (a bounded time) for
 * each to stop; with native, takes each stopped thread's registers and stack. The threads it
 * does not stop (gone, waiting by then, refused, not stopped in time) are left for the caller
 * to read as they wait or run.
 * No signal reaches the target and no call of its fails with EINTR: a thread the interrupt
 * caught entering a call that then failed with EINTR has the call made again and is let go at
 * once, as it stops (unless a signal of the target's is pending for it: the EINTR is then that
 * signal's too), so that nothing is left for hwspy to undo later; a signal that came meanwhile
 * is passed on. Every ptrace call runs on a thread of its own whose exit lets every thread go,
 * even one that had not stopped yet.
 * 0; -EPERM (ptrace refused for every thread it tried, none stopped: another tracer, Yama;
 * *ret_tracer the tracer's pid, or 0), -ENOMEM. On success *ret holds the stop until dump_stop_end(). */
int dump_stop_begin(pid_t pid, const pid_t *tids, size_t n, bool native, struct dump_stop **ret,
		    pid_t *ret_tracer);
/* The state of the i-th thread of the stop (NULL past n). */
const struct dump_stopped *dump_stop_thread(const struct dump_stop *ds, size_t i);
/* Lets every thread go (once; the threads' copies stay until dump_stop_free()). Returns how
 * long the threads were held, from the first interrupt to the last detach, in ns. */
uint64_t dump_stop_end(struct dump_stop *ds);
/* Ends the stop if not yet done, and frees it (NULL: no-op). */
void dump_stop_free(struct dump_stop *ds);

/* What a thread did when looked at (dump_state.c), read before the stop. */
struct dump_task {
	char state;                     /* /proc/PID/task/TID/status: R, S, D, T, t, Z ... */
	uint64_t switches;              /* ... its switches off a CPU so far (voluntary or not) */
	struct procfs_syscall sc;       /* the system call it is in (nr -1: none, -2: unknown),
	                                 * its user SP and PC while blocked (0: unknown) */
	char comm[32];                  /* the OS's name of the thread */
};

/* Reads thread tid of pid: state and switches (in one read of its status, first), system
 * call, name. 0 or -ESRCH (gone). */
int dump_task_read(pid_t pid, pid_t tid, struct dump_task *ret);

/* Thread t as read again at the stop (now: stat says 't' then, syscall what the stop
 * interrupted): in a system call (waiting on it) or not (running), unless what t read before
 * the stop can only be seen then (a page fault's I/O, a job-control stop). */
void dump_task_at_stop(struct dump_task *t, const struct dump_task *now);
/* Whether the thread waits (not running, not runnable). */
bool dump_task_waiting(const struct dump_task *t);
/* The reason a waiting thread waits, in the words every command uses (wait_words_proc(),
 * record.h), into buf; gil: the GIL state's address (0: unknown). */
void dump_task_wait(pid_t pid, const struct dump_task *t, uint64_t gil, char *buf, size_t len);

#endif
