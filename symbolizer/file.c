/*
 * file.c: the small leaves every part of symbolizer/ may use (reading a whole file, opening a
 * file the target can plant, the basename of a path). They call nothing else of the folder.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "symbolizer/symbolizer_internal.h"

int sym_read_file(const char *path, char **ret, size_t *ret_len, size_t max)
{
	size_t len = 0, cap = 1 << 16;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		(void) close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= max) {
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				(void) close(fd);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			int r = -errno;

			if (r == -EINTR)
				continue;
			free(buf);
			(void) close(fd);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	(void) close(fd);
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Without openat2 (Linux before 5.6, or a seccomp filter that refuses it): path walked one
 * component at a time, no link followed anywhere, no "..". An O_PATH fd, or -errno. */
static int walk_nofollow(int dir_fd, const char *path)
{
	char comp[256];
	int fd = -1;

	while (*path == '/')
		path++;
	while (*path) {
		size_t n = strcspn(path, "/");
		int next;

		if (n >= sizeof(comp) || (n == 2 && path[0] == '.' && path[1] == '.')) {
			if (fd >= 0)
				(void) close(fd);
			return n >= sizeof(comp) ? -ENAMETOOLONG : -EXDEV;
		}
		memcpy(comp, path, n);
		comp[n] = '\0';
		path += n;
		while (*path == '/')
			path++;
		next = openat(fd >= 0 ? fd : dir_fd, comp,
			      O_PATH | O_NOFOLLOW | O_CLOEXEC | (*path ? O_DIRECTORY : 0));
		if (next < 0)
			next = -errno;
		if (fd >= 0)
			(void) close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	return fd >= 0 ? fd : -ENOENT;
}

int sym_open_planted(int dir_fd, const char *path, unsigned flags, uid_t owner, uint64_t max,
		     struct stat *ret_st)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC |
			 (flags & (SYM_PLANT_FOLLOW | SYM_PLANT_MAGIC) ? 0 : O_NOFOLLOW),
		.resolve = RESOLVE_NO_MAGICLINKS |
			   RESOLVE_IN_ROOT | (flags & SYM_PLANT_NO_LINKS ? RESOLVE_NO_SYMLINKS : 0),
	};
	char self[64];
	struct stat st;
	int pfd, fd;

	if (flags & SYM_PLANT_MAGIC)
		how.resolve = 0;
	pfd = (int) syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
	if (pfd < 0 && errno != ENOSYS && errno != EPERM)
		return -errno;
	if (pfd < 0 && (flags & SYM_PLANT_MAGIC)) {
		pfd = openat(dir_fd, path, O_PATH | O_CLOEXEC);
		if (pfd < 0)
			return -errno;
	} else if (pfd < 0) {
		pfd = walk_nofollow(dir_fd, path);
		if (pfd < 0)
			return pfd;
	}
	/* nothing opened yet: a FIFO would block, a device may act on being opened */
	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		(void) close(pfd);
		return -EINVAL;
	}
	if (owner != (uid_t) -1 && st.st_uid != 0 && st.st_uid != owner) {
		(void) close(pfd);
		return -EPERM;
	}
	if ((uint64_t) st.st_size > max) {
		(void) close(pfd);
		return -EFBIG;
	}
	/* the same inode, opened to read */
	(void) snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		fd = -errno;
	(void) close(pfd);
	if (fd >= 0 && ret_st)
		*ret_st = st;
	return fd;
}

int sym_proc_uid(pid_t pid, uid_t *ret)
{
	char path[32];
	struct stat st;

	(void) snprintf(path, sizeof(path), "/proc/%d", (int) pid);
	if (stat(path, &st) < 0)
		return -errno;
	*ret = st.st_uid;
	return 0;
}

const char *sym_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}
