/*
 * outfile: an output file written whole or not at all, and never through a link someone else
 * planted. Used by every command that writes a profile (record, convert, diff).
 *
 * outfile_open(o, path) decides how path is written, without touching what is there:
 *   "-"                    standard output (never closed); -EBADF if it is closed.
 *   "/dev/stdout", "/dev/stderr", "/dev/fd/N", "/proc/self/fd/N" (also thread-self, our PID)
 *                          the descriptor itself (a copy of it; never truncated): -EBADF if it
 *                          is closed or read-only, never a file created in its place.
 *   missing, a regular file, or a symbolic link owned by another user than root, the caller
 *   and (under sudo) the invoking user (a link planted in /tmp, say)
 *                          a new temporary file ".NAME.hwspy-PID-XXXXXX" in path's directory,
 *                          created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0666 & ~umask as
 *                          fopen() gives, on a descriptor above 2, and held with
 *                          flock(LOCK_EX) while written; outfile_commit() then flushes, fsyncs,
 *                          gives it to the invoking user under sudo (when the effective uid is
 *                          0 and SUDO_UID and SUDO_GID are numbers) and rename(2)s it over
 *                          path: a link at path is replaced, never followed, and the old file
 *                          stays whole until the rename. Right before the rename path is looked
 *                          at again: if anything but those three is there now, -EEXIST and
 *                          nothing is renamed.
 *   a link owned by root, the caller or the invoking user (/dev/stdout, "latest.svg")
 *                          followed one link at a time (at most 40, -ELOOP), each target
 *                          decided as above except that a regular file reached through a
 *                          link is written as it is, and a missing one (a dangling link) is
 *                          created by the rename where the link points: a link of theirs is
 *                          never replaced.
 *   a FIFO, socket or device
 *                          opened as it is (O_WRONLY; nothing created): no temporary file.
 *                          A regular file written as it is keeps only what was written.
 * path's directory is reached following a symbolic link only when root, the caller or the
 * invoking user owns it (-ENOLINK for another user's: "/tmp/evil/link/x" never reaches the
 * directory a link of evil's points to).
 * Before creating its temporary file, outfile_open() removes the ones earlier runs that were
 * killed left for the same path: only regular files of that exact name pattern, owned by the
 * caller or the sudo user, whose PID is not alive and whose lock nobody holds (unlinkat(): a
 * link is removed, never followed).
 *
 * Errors, from outfile_open() (nothing created then): -EISDIR path is a directory (or a link to
 * one), -ENOENT its directory does not exist, -ENOTDIR a component is not a directory,
 * -ENOLINK a directory on the way is another user's link, -EBADF a closed descriptor,
 * -EACCES/-EPERM/-EROFS the directory is not writable, -ELOOP, -ENAMETOOLONG, -ENOMEM; from
 * outfile_commit(): the write, fsync or rename error, or -EEXIST (the temporary file removed,
 * path untouched).
 * outfile_abort() removes the temporary file; both end the outfile (o->f is NULL after), and
 * both are no-ops on an outfile that is not open.
 */
#ifndef HWSPY_BASE_OUTFILE_H
#define HWSPY_BASE_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

struct outfile {
	FILE *f;                /* write here; NULL when not open */
	const char *path;       /* as given (not copied) */
	int dirfd;              /* path's directory, with a temporary file; else -1 */
	char *base;             /* path's last component, with a temporary file */
	char *tmp;              /* the temporary file's name in dirfd; NULL: written directly */
	bool is_stdout;
	bool is_fd;              /* one of our descriptors ("/dev/stdout"), a copy of it */
};

int outfile_open(struct outfile *o, const char *path);
/* The file complete: 0 or -errno. */
int outfile_commit(struct outfile *o);
void outfile_abort(struct outfile *o);
/* Whether path is written to standard output ("-"). */
bool outfile_is_stdout(const char *path);

#endif
