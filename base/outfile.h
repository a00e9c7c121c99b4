/*
 * outfile: an output file written whole or not at all, and never through a link someone else
 * planted. Used by every command that writes a profile (record, convert, diff).
 *
 * outfile_open(o, path) decides how path is written, without touching what is there:
 *   "-"                    standard output (never closed).
 *   missing, a regular file, a dangling link, or a symbolic link owned by another user than
 *                          root and the caller (a link planted in /tmp, say)
 *                          a new temporary file ".NAME.hwspy-PID-XXXXXX" in path's directory,
 *                          created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0666 & ~umask as
 *                          fopen() gives, and held with flock(LOCK_EX) while written;
 *                          outfile_commit() then flushes, fsyncs, gives it to the invoking user
 *                          under sudo (when the effective uid is 0 and SUDO_UID and SUDO_GID
 *                          are numbers) and rename(2)s it over path: a link at path is replaced,
 *                          never followed, and the old file stays whole until the rename.
 *   a FIFO, socket or device, or a link owned by root or the caller (/dev/stdout, a user's own
 *                          "latest.svg" link)
 *                          opened as it is (O_WRONLY, O_TRUNC only for a regular file; nothing
 *                          created): no temporary file.
 * Before creating its temporary file, outfile_open() removes the ones earlier runs that were
 * killed left for the same path: only regular files of that exact name pattern, owned by the
 * caller or the sudo user, whose PID is not alive and whose lock nobody holds (unlinkat(): a
 * link is removed, never followed).
 *
 * Errors, from outfile_open() (nothing created then): -EISDIR path is a directory (or a link to
 * one), -ENOENT its directory does not exist, -ENOTDIR a component is not a directory,
 * -EACCES/-EPERM/-EROFS the directory is not writable, -ENAMETOOLONG, -ENOMEM; from
 * outfile_commit(): the write, fsync or rename error (the temporary file removed, path untouched).
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
};

int outfile_open(struct outfile *o, const char *path);
/* The file complete: 0 or -errno. */
int outfile_commit(struct outfile *o);
void outfile_abort(struct outfile *o);
/* Whether path is written to standard output ("-"). */
bool outfile_is_stdout(const char *path);

#endif
