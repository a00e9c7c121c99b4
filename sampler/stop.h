/*
 * stop: a one-shot stop of some threads of a process (the snapshot's, record/snapshot.c), on the
 * sampler's ptrace engine (sampler/tracer.c): the same tracer thread (every ptrace call on one
 * thread of ours, whose exit is the release of last resort), the same EINTR undo at the stop
 * (sampler_undo_eintr()), the same release (a detach, a signal that came meanwhile passed on).
 *
 * stop_begin() seizes and interrupts every thread in tids (n of them) of pid that still runs
 * when its turn comes (its state read again just before: one that waits by then in a call that
 * would not go on by itself after a stop, restarts() false, is left alone), waits a bounded time
 * (STOP_WAIT_NS, tracer.c) for each to stop and, with native, takes each stopped thread's
 * registers (perf's REGS_USER order for REGS_USER_MASK) and a copy of its stack from
 * SP. The threads it does not stop (gone, waiting by then, refused, not stopped in time) are
 * left for the caller to read as they wait or run.
 * No signal reaches the target and no call of its fails with EINTR: a thread the interrupt
 * caught entering a call that then failed with EINTR has the call made again and is let go at
 * once, as it stops (unless a signal of the target's is pending for it: the EINTR is then that
 * signal's too), so that nothing is left for us to undo later; a signal that came meanwhile is
 * passed on at the release. The tracer thread's exit lets every thread go, even one that had
 * not stopped yet, and even if the process is killed mid-stop.
 *
 * Signals: with hold_signals, the calling thread's SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGTSTP
 * are blocked from stop_begin() to stop_end() (the command line's choice: a Ctrl-C waits for
 * the release); without it no signal of the caller's is blocked.
 * 0; -EPERM (ptrace refused for every thread it tried, none stopped: another tracer, Yama;
 * *ret_tracer the tracer's pid, or 0), -ENOMEM. On success *ret holds the stop until stop_end().
 */
#ifndef HWSPY_SAMPLER_STOP_H
#define HWSPY_SAMPLER_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/procfs.h"
#include "base/regs.h"

#define STOP_STACK_COPY (64 * 1024)     /* bytes of a stopped thread's stack copied (native) */
#define STOP_REG_SP 7                   /* ... where SP and IP are in that order */
#define STOP_REG_IP 8

/* One thread as the stop left it */
struct stopped_thread {
	pid_t tid;
	bool stopped;                   /* in a ptrace-stop of ours during the read */
	bool rewound;                   /* our interrupt made the call it was entering fail with
	                                 * EINTR: the call was made again and the thread let go at
	                                 * once, unread (it waits there now) */
	bool regs_ok;
	uint64_t regs[REGS_USER_N];
	unsigned char *stack;           /* malloc'd, stack_len bytes; NULL: none */
	size_t stack_len;
};

/* Whether a wait in system call sc of process pid goes on by itself after a stop (the caller's
 * table: record/wait.c's wait_restarts()). */
typedef bool (*stop_restarts_fn)(pid_t pid, const struct procfs_syscall *sc);

struct stop;

int stop_begin(pid_t pid, const pid_t *tids, size_t n, bool native, bool hold_signals,
	       stop_restarts_fn restarts, struct stop **ret, pid_t *ret_tracer);
/* The state of the i-th thread of the stop (NULL past n). */
const struct stopped_thread *stop_thread(const struct stop *st, size_t i);
/* Lets every thread go (once; the threads' copies stay until stop_free()). Returns how long
 * the threads were held, from the first interrupt to the last detach, in ns. */
uint64_t stop_end(struct stop *st);
/* Ends the stop if not yet done, and frees it (NULL: no-op). */
void stop_free(struct stop *st);

#endif
