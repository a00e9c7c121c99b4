/*
 * diagnose.c: the machine's facts behind a refusal (hwspy.h, the end of "recording" and
 * hwspy_tracefs_words() of "events"): read from /proc and /sys, never printed; the client
 * words its message with the phrase or the numbers it gets.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/procfs.h"
#include "lib/internal.h"

#define CAP_SYS_PTRACE_BIT 19
#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

/* The first line of a small file, without its newline: 0 or -errno. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int r = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int) size, f))
		r = -EIO;
	(void) fclose(f);
	if (r == 0)
		buf[strcspn(buf, "\n")] = '\0';
	return r;
}

static int read_int(const char *path, int fallback)
{
	char line[64];
	int v;

	if (read_line(path, line, sizeof(line)) < 0 || sscanf(line, "%d", &v) != 1)
		return fallback;
	return v;
}

/* The value of "KEY:\t..." in /proc/PID/status (pid 0: self) into val: 1 found, 0 not, -errno. */
static int status_field(pid_t pid, const char *key, char *val, size_t size)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	FILE *f;
	int found = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	for (int i = 0; i < 256 && fgets(line, sizeof(line), f); i++) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			const char *v = line + klen + 1;

			v += strspn(v, " \t");
			snprintf(val, size, "%.*s", (int) strcspn(v, "\n"), v);
			found = 1;
			break;
		}
	}
	(void) fclose(f);
	return found;
}

static bool has_cap(int bit)
{
	char val[64];
	unsigned long long caps;

	if (status_field(0, "CapEff", val, sizeof(val)) != 1 || sscanf(val, "%llx", &caps) != 1)
		return true;    /* unknown: do not blame it */
	return (caps >> bit) & 1;
}

/* Whether hwspy runs in a user namespace other than the initial one (its uid_map is not the
 * identity over every uid). */
static bool in_user_ns(void)
{
	char line[128];
	unsigned long long a, b, n;

	if (read_line("/proc/self/uid_map", line, sizeof(line)) < 0 ||
	    sscanf(line, "%llu %llu %llu", &a, &b, &n) != 3)
		return false;
	return !(a == 0 && b == 0 && n == 4294967295ULL);
}

int hwspy_kernel_thread(pid_t pid)
{
	char val[64];
	int r = status_field(pid, "Kthread", val, sizeof(val));

	if (r < 0)
		return r;
	if (r == 1)
		return strcmp(val, "1") == 0;
	r = status_field(pid, "VmSize", val, sizeof(val));
	return r < 0 ? r : r == 0;
}

void hwspy_root_denied_words(pid_t pid, char *buf, size_t size)
{
	char lsm[128];

	if (!has_cap(CAP_SYS_PTRACE_BIT))
		snprintf(buf, size, "hwspy runs as root but without CAP_SYS_PTRACE (in a container? "
			 "give it CAP_SYS_PTRACE)");
	else if (in_user_ns())
		snprintf(buf, size, "hwspy is root of a user namespace (a rootless container?), "
			 "not of the host: run it on the host");
	else if (read_int("/proc/sys/kernel/yama/ptrace_scope", 0) == 3)
		snprintf(buf, size, "kernel.yama.ptrace_scope is 3: no process may read another's "
			 "memory until reboot");
	else if (read_line("/sys/kernel/security/lsm", lsm, sizeof(lsm)) == 0)
		snprintf(buf, size, "the kernel refused although hwspy runs as root with "
			 "CAP_SYS_PTRACE: a security module (%s) or a sandbox protects pid %d", lsm,
			 (int) pid);
	else
		snprintf(buf, size, "the kernel refused although hwspy runs as root with "
			 "CAP_SYS_PTRACE: a security module or a sandbox protects pid %d", (int) pid);
}

void hwspy_bpf_refused_words(int r, char *buf, size_t size)
{
	char lock[128];
	int unpriv = read_int("/proc/sys/kernel/unprivileged_bpf_disabled", -1);

	if (r == -ENOSYS) {
		snprintf(buf, size, "this kernel has no bpf() system call");
	} else if (r == -EPERM || (r == -EACCES && (!has_cap(CAP_BPF_BIT) || in_user_ns()))) {
		if (in_user_ns())
			snprintf(buf, size, "hwspy runs in a user namespace (a rootless container?), "
				 "where its capabilities do not count for bpf(), and "
				 "kernel.unprivileged_bpf_disabled is %d", unpriv);
		else if (!has_cap(CAP_BPF_BIT) && !has_cap(CAP_SYS_ADMIN_BIT))
			snprintf(buf, size, "hwspy has no CAP_BPF%s, and "
				 "kernel.unprivileged_bpf_disabled is %d",
				 has_cap(CAP_PERFMON_BIT) ? "" : " nor CAP_PERFMON", unpriv);
		else if (read_line("/sys/kernel/security/lockdown", lock, sizeof(lock)) == 0 &&
			 !strstr(lock, "[none]"))
			snprintf(buf, size, "kernel lockdown is on (%s)", lock);
		else
			snprintf(buf, size, "bpf() refused although hwspy has CAP_BPF: a security "
				 "module or a seccomp filter forbids it");
	} else {
		snprintf(buf, size, "the kernel rejected the capture program: %s (an older "
			 "kernel's verifier?)", strerror(-r));
	}
}

const char *hwspy_tracefs_words(int r, bool list_form)
{
	switch (r) {
	case -EACCES:
		return list_form ? "tracefs unreadable (root reads it)"
				 : "tracefs (/sys/kernel/tracing) is not readable by this user: run hwspy as root";
	case -EPERM:
		return list_form ? "no tracefs mounted (root mounts it)"
				 : "no tracefs is mounted and this user may not mount one: run hwspy as root "
				   "(it mounts /sys/kernel/tracing), or mount it: 'mount -t tracefs nodev "
				   "/sys/kernel/tracing'";
	case -ENOENT:
		return list_form ? "no tracefs mount point"
				 : "no tracefs is mounted and there is no /sys/kernel/tracing to mount it on";
	default:
		return list_form ? "tracefs does not mount"
				 : "no tracefs is mounted and mounting one at /sys/kernel/tracing failed (a "
				   "kernel without CONFIG_TRACING?)";
	}
}

int hwspy_paranoid(void)
{
	return read_int("/proc/sys/kernel/perf_event_paranoid", INT_MIN);
}

static long long limit_of(rlim_t v, rlim_t unit)
{
	return v == RLIM_INFINITY ? -1 : (long long) (v / unit);
}

void hwspy_limits(struct hwspy_limits *ret)
{
	struct rlimit rl = { 0, 0 };
	FILE *f = fopen("/proc/sys/kernel/perf_event_mlock_kb", "re");
	long kb = -1;

	if (f) {
		if (fscanf(f, "%ld", &kb) != 1)
			kb = -1;
		(void) fclose(f);
	}
	ret->perf_mlock_kib = kb;
	(void) getrlimit(RLIMIT_MEMLOCK, &rl);
	ret->memlock_kib = limit_of(rl.rlim_cur, 1024);
	rl = (struct rlimit) { 0, 0 };
	(void) getrlimit(RLIMIT_NOFILE, &rl);
	ret->nofile = limit_of(rl.rlim_cur, 1);
}

int hwspy_process_owner(pid_t pid, long *ret_uid, bool *ret_not_dumpable)
{
	char path[64];
	struct stat st;
	int r;

	*ret_uid = -1;
	*ret_not_dumpable = false;
	r = procfs_status_long(pid, 0, "Uid", ret_uid);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/proc/%d", (int) pid);
	*ret_not_dumpable = stat(path, &st) == 0 && (long) st.st_uid != *ret_uid;
	return 0;
}
