/*
 * discover: which processes hwspy monitor watches, found again at each scan of /proc (about
 * once a second): those of the pids given while they live, those whose name matches a regex
 * (like pgrep: POSIX extended, unanchored, against /proc/PID/comm, or with full against the
 * command line, /proc/PID/cmdline with its NULs as spaces, its first DISCOVER_CMDLINE_MAX
 * bytes; an empty one is matched by its name, as pgrep does), and with all_python, every
 * process running CPython: its executable's basename starts with "python", or its mappings
 * hold libpython3 or a file whose basename starts with "python" (an interpreter run through
 * its loader, whose exe is ld.so). A process that any criterion given selects is watched (the
 * union). Never a kernel thread, hwspy itself (getpid()) nor a zombie (a process whose main
 * thread has exited while others run is no zombie: it is watched, its exe read through a live
 * thread).
 *
 * Identity: a process is (pid, start_time), start_time its /proc/PID/stat field 22 (clock
 * ticks after boot): a pid reused is another process, with another start_time.
 *
 * Cost: a scan reads /proc's listing and, for each process listed, only what its criteria
 * need: its name (--name), its command line (full), the link of its exe (all_python); its
 * stat once when first seen (kernel thread or not) and at each scan where it matches. The
 * mappings of a process (all_python) are read once per (pid, start_time, exe), their verdict
 * kept; what is kept of processes no longer listed is dropped at each scan: the memory is in
 * proportion to the processes alive. With pids alone, /proc is not listed. Reading a command
 * line or mappings takes the target's mmap lock: a process that holds it long (stuck in a
 * fault) delays the scan, as it does pgrep -f.
 *
 * Untrusted input: every file under /proc/PID is the process's to shape (its name, command
 * line, the paths of its mappings): reads are bounded, files opened O_NOFOLLOW | O_CLOEXEC, no
 * link followed (the exe's is read as text). comm and exe hold bytes as the process set
 * them (any but NUL): escape them before printing.
 */
#ifndef HWSPY_RECORD_DISCOVER_H
#define HWSPY_RECORD_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DISCOVER_CMDLINE_MAX 4096               /* bytes of a command line matched (full) */
#define DISCOVER_MAPS_MAX (16u << 20)           /* bytes of a maps file read (all_python) */

struct discover_opts {
	const pid_t *pids;              /* watched while they live (copied) */
	size_t n_pids;
	const char *name_regex;         /* NULL: none (compiled: not kept) */
	bool full;                      /* name_regex against the command line */
	bool all_python;
};

/* Why discover_new() failed, for the client's message: a static string ("no process
 * criterion"), or regerror()'s words on a regex that does not compile ("Unmatched ( or \\(").
 * Empty when nothing failed. */
struct discover_error {
	char reason[128];
};

struct discover;

/* The set of processes o selects: 0, -EINVAL (no criterion at all, a pid <= 0, or a regex that
 * does not compile: ret_err, when not NULL, says which), -ENOMEM. */
int discover_new(const struct discover_opts *o, struct discover **ret,
		 struct discover_error *ret_err);
void discover_free(struct discover *d);

struct discovered {
	pid_t pid;
	uint64_t start_time;            /* /proc/PID/stat field 22: the process's identity */
	char comm[64];                  /* its name (/proc/PID/comm) */
	char exe[256];                  /* its executable's path ("" unreadable; cut to fit) */
};

/* Every process matching now, sorted by pid, at most max of them (the lowest pids) into ret:
 * how many (0 or more, also into *ret_n), or -ENOMEM, or -errno where /proc cannot be listed. */
int discover_scan(struct discover *d, struct discovered *ret, size_t max, size_t *ret_n);

#endif
