/*
 * diagnose: what the machine says about why something was refused, for cli's messages. Reads
 * /proc and /sys only; never prints (the caller logs one line with the phrase it gets).
 * Internal to cli/.
 */
#ifndef HWSPY_CLI_DIAGNOSE_H
#define HWSPY_CLI_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Whether pid is a kernel thread: /proc/PID/status says "Kthread: 1" (Linux 6.x), or, on older
 * kernels, has no VmSize line. 1, 0, or -errno (status unreadable). */
int diag_kernel_thread(pid_t pid);
/* Why a root hwspy may not read pid (ptrace access refused), as a phrase: no CAP_SYS_PTRACE (a
 * container), root of a user namespace only, Yama ptrace_scope 3, else a security module or
 * sandbox (the LSMs named where securityfs says). */
void diag_root_denied(pid_t pid, char *buf, size_t size);
/* Why loading the BPF capture failed with r (-errno), as a phrase: no bpf() in this kernel, a
 * user namespace, no CAP_BPF (with kernel.unprivileged_bpf_disabled), kernel lockdown, a
 * security module or seccomp filter, or the kernel's verifier rejecting the program. */
void diag_bpf_refused(int r, char *buf, size_t size);

/* Why tracepoints (subsys:name) cannot be looked up, for events_tracefs()'s r < 0: words for
 * a message ("tracefs ... : run hwspy as root"); list_form: the short form for 'hwspy list'. */
const char *diag_tracefs(int r, bool list_form);

#endif
