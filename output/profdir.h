/*
 * profdir: the directory of rotating profiles that `hwspy monitor --profiles DIR` owns: the
 * name of each profile, the directory opened once and checked, and its bound (--keep N,
 * --max-disk BYTES) kept by removing the oldest profiles.
 *
 * A profile is written by the caller with base/outfile.h (a temporary file renamed into place)
 * at the path "DIR/NAME": outfile_open() takes a path, not a directory descriptor, so the
 * directory is found again by its path for each write (outfile follows a link on that path
 * only when root, we or the sudo user own it). profdir_fd() is what profdir_prune() works in.
 *
 * Whose files: "ours" is owned by the effective uid or, when it is root under sudo (SUDO_UID
 * a number, as outfile.h reads it), by the invoking user, whom outfile gives the files to.
 * profdir_prune() never removes anything else, nor anything whose name profdir_name() could not
 * have written, nor a link, a directory or any other non-regular file: the directory may hold
 * the user's own files (notes.txt) and, when it is shared (sticky), other users' files.
 *
 * Errors are -errno; nothing here prints. profdir_open() also says why in a static phrase that
 * follows the directory's name ("is writable by others and not sticky") for the caller's line.
 */
#ifndef HWSPY_OUTPUT_PROFDIR_H
#define HWSPY_OUTPUT_PROFDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROFDIR_SERVICE_MAX 64  /* bytes of the service kept in a name */
/* The longest name, its NUL included: "hwspy-" TIME(16) "-" SERVICE(64) "-" PID(10) ".pb.gz" */
#define PROFDIR_NAME_MAX (6 + 16 + 1 + PROFDIR_SERVICE_MAX + 1 + 10 + 6 + 1)

struct profdir;

/* The file name for a profile: "hwspy-<UTC time as 20261203T184512Z>-<service>-<pid>.pb.gz"
 * (service: its bytes outside [A-Za-z0-9._-] replaced by '_', cut to PROFDIR_SERVICE_MAX;
 * NULL or "" -> "python"). unix_ns: the time (CLOCK_REALTIME) in ns, whole seconds kept.
 * Its length, or -EINVAL (pid <= 0), -ENOBUFS (size under the length + 1: buf then holds ""
 * when size > 0). */
int profdir_name(uint64_t unix_ns, const char *service, pid_t pid, char *buf, size_t size);

/* Whether name is one that profdir_name() writes (its time checked as a real UTC time, pid in
 * 1..INT32_MAX without a leading zero, service 1..PROFDIR_SERVICE_MAX bytes of
 * [A-Za-z0-9._-]). */
bool profdir_name_match(const char *name);

/* Opens dir (created 0755, less the umask, if missing; its parents must exist) with
 * O_DIRECTORY|O_NOFOLLOW and checks the directory it got: owned by us (see above) or root,
 * and not writable by group or others unless sticky. *ret then holds its descriptor until
 * profdir_close(). Returns 0, or -errno and *ret_why (ret_why may be NULL) a static phrase:
 *   -ELOOP   "is a symbolic link: give the directory it points to"
 *   -ENOTDIR "is not a directory"
 *   -EPERM   "is owned by another user than root or us"
 *            "is writable by group or others and not sticky (chmod go-w, or +t)"
 *   others   the mkdir or open error ("cannot be created", "cannot be opened"), -ENOMEM */
int profdir_open(const char *dir, struct profdir **ret, const char **ret_why);
/* Closes the directory; NULL is a no-op. */
void profdir_close(struct profdir *d);
int profdir_fd(const struct profdir *d);

/* How many entries one prune looks at, at most (the rest of a bigger directory is not seen). */
#define PROFDIR_SCAN_MAX (1u << 20)
/* A temporary file of ours older than this (by its mtime) is a stale one. */
#define PROFDIR_STALE_NS (60ull * 1000000000ull)

/* Bounds the directory: ONLY regular files of ours whose names profdir_name_match() count and
 * may go; oldest first (by the time in the name, then by name) until at most keep remain
 * (0: no bound) and their sizes (st_size) sum to at most max_bytes (0: no bound); removed with
 * unlinkat() relative to the kept descriptor, never following anything. Also removes our own
 * stale temporary files of such profiles (".NAME.hwspy-PID-XXXXXX", base/outfile.h's naming)
 * whose mtime is PROFDIR_STALE_NS old or more and whose lock (flock, held by outfile while it
 * writes) nobody holds; they are not counted.
 * Returns how many profiles were removed, or -errno: reading the directory failed, -ENOMEM, or
 * an unlinkat() failed (the next ones were still tried: the bound holds as far as it can). A
 * profile already gone (ENOENT) is neither an error nor counted. */
int profdir_prune(struct profdir *d, size_t keep, uint64_t max_bytes);

#endif
