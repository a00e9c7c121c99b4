/*
 * sigcapture: exact stacks of the calling process without BPF (opts.signal of sampler.h). Each
 * sampling event has perf's sigtrap: at its overflow the kernel sends SIGTRAP (si_code
 * TRAP_PERF, si_perf_data our cookie) to the thread whose counter overflowed, synchronously,
 * before it runs another user instruction. Our handler copies that thread's chain of frames,
 * as the BPF capture program would (struct sampler_capture_spec, the same record: struct
 * capture_record then the nodes), into a preallocated per-thread ring; the sampler pairs each
 * sample with its record (thread, ip, time) and decodes it through capture_match(), the BPF
 * capture's path.
 *
 * Why sigtrap and not F_SETOWN_EX(F_OWNER_TID) + F_SETSIG: sigtrap events are inherited by
 * every thread created later (inherit + inherit_thread) and signal the thread that overflowed;
 * an fd's owner is one tid, and with inheritance every thread's signal goes to that owner
 * (FACTS.md), so F_SETSIG would need an event per thread and would miss threads started
 * between two scans.
 *
 * Never inside a system call: the events count user space only (exclude_kernel), so they
 * overflow only in user mode and the signal is delivered on the way back to the user code
 * the overflow interrupted; no system call is interrupted (no EINTR), and SA_RESTART covers
 * any the host's own signals could. The handler is async-signal-safe: no allocation, no lock;
 * it reads memory only through process_vm_readv(2) on its own process (a freed or torn pointer
 * is an EFAULT, never a crash), at most SAMPLER_CAPTURE_MAX_NODES nodes.
 *
 * A thread takes one of 128 slots at its first signal, its ring of records; the sampler frees
 * it once the thread has exited and its samples are read (sigcap_thread_exit(), sigcap_sweep()),
 * so a process that churns threads is captured whole, 128 threads at a time (more at once: the
 * others' samples are read late, counted in signal_dropped).
 *
 * One per process (a signal disposition is the process's): a second is -EBUSY. A host process
 * that has a SIGTRAP handler of its own keeps it: sigcap_probe()/sigcap_open() say -EBUSY and
 * install nothing. The handler stays installed after sigcap_close(): a signal of the closed
 * events can still come, and finds it (it drops them, and gives any other SIGTRAP what the
 * disposition found would have).
 *
 * Errors are negative errno values. Library code never prints.
 */
#ifndef HWSPY_SAMPLER_SIGCAPTURE_H
#define HWSPY_SAMPLER_SIGCAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sigcap;
struct sample;
struct sampler_stats;
struct sampler_capture_spec;

/* Whether the calling process can be sampled this way: 0; -EBUSY (a SIGTRAP handler of the
 * host's, or another sampler in this mode); -ENOTSUP (not x86-64). */
int sigcap_probe(void);
/* Installs the handler (SA_SIGINFO | SA_RESTART): 0 and the cookie the events' sig_data must
 * hold; -EBUSY, -ENOTSUP as sigcap_probe(); -ENOMEM. */
int sigcap_open(struct sigcap **ret, uint64_t *ret_cookie);
/* Thread tid's signals are dropped at once (a thread of the sampler's caller): at most 16. */
void sigcap_exclude(struct sigcap *c, pid_t tid);
/* Whether tid is one of those (its samples are dropped as read, too). */
bool sigcap_excluded(const struct sigcap *c, pid_t tid);
/* From now on each signal copies the frames spec says, into rings sized for rate_hz samples a
 * second per thread (0: sampling by period): 0, -EINVAL (bad spec), -ENOMEM, -EBUSY (started
 * already with another spec). Memory: 128 threads' rings, mapped MAP_NORESERVE and touched as
 * used: per thread sampled, 8 records up to 500 Hz, 16 at 1 kHz, 32 from 2 kHz (16 ms of its
 * samples; 16 by period), each touching 88 bytes + the frames copied (a stride, under 500
 * bytes, a frame). */
int sigcap_start(struct sigcap *c, const struct sampler_capture_spec *spec, uint64_t rate_hz);
/* Thread tid's root (its PyThreadState); without one the handler searches (spec.search_at). */
int sigcap_set_root(struct sigcap *c, pid_t tid, uint64_t root);
/* The record made at smp's overflow into buf (size bytes at least CAPTURE_HDR + the nodes):
 * its length, or 0 where none was (the signal not handled yet, dropped, or not started). The
 * records of the thread older than the sample (theirs lost) are dropped. */
size_t sigcap_take(struct sigcap *c, const struct sample *smp, unsigned char *buf, size_t size);
/* Thread tid has exited (the sampler read its exit): its slot is freed by the first
 * sigcap_sweep() of a later drain. The sampler's thread only, as sigcap_take(). */
void sigcap_thread_exit(struct sigcap *c, pid_t tid);
/* At the end of a drain that began at drain_ns (CLOCK_MONOTONIC; every ring read to its end,
 * the held samples retried): frees the slots of threads whose exit was read before drain_ns,
 * so that 128 threads at a time, not 128 in all, are captured; where slots have run out, also
 * those of threads found gone. NULL: no-op. */
void sigcap_sweep(struct sigcap *c, uint64_t drain_ns);
/* The handler's counts into st (its signal_* fields). */
void sigcap_stats(const struct sigcap *c, struct sampler_stats *st);
/* After the events are closed: ends the session (the handler stays, see above) and frees.
 * NULL: no-op. */
void sigcap_close(struct sigcap *c);

#endif
