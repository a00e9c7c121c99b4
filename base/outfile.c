/* outfile: write a new file beside the destination, rename it into place (see outfile.h). */
#include "base/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TMP_TAG ".hwspy-"
#define TMP_RAND 6
#define TMP_BASE_MAX 200        /* bytes of NAME kept in ".NAME.hwspy-PID-XXXXXX" */
#define TMP_TRIES 64
#define SCAN_MAX (1u << 20)     /* directory entries looked at for stale temporary files */
#define LINKS_MAX 40            /* symbolic links followed for one path (the kernel's limit) */

static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

bool outfile_is_stdout(const char *path)
{
	return !strcmp(path, "-");
}

/* A decimal id from the environment, as sudo sets SUDO_UID and SUDO_GID: 0 or -EINVAL. */
static int env_id(const char *name, unsigned *ret)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= UINT32_MAX)
		return -EINVAL;
	*ret = (unsigned) v;
	return 0;
}

/* The user a root run under sudo writes for: 0 and its uid and gid, else -ENOENT. */
static int sudo_owner(uid_t *uid, gid_t *gid)
{
	unsigned u, g;

	if (geteuid() != 0 || env_id("SUDO_UID", &u) < 0 || env_id("SUDO_GID", &g) < 0)
		return -ENOENT;
	*uid = (uid_t) u;
	*gid = (gid_t) g;
	return 0;
}

/* Whether name is ".BASE.hwspy-PID-XXXXXX" for base (its first TMP_BASE_MAX bytes): the PID. */
static long tmp_pid(const char *name, const char *base, size_t blen)
{
	const char *p = name;
	long pid = 0;
	size_t digits = 0;

	if (*p++ != '.' || strncmp(p, base, blen))
		return -1;
	p += blen;
	if (strncmp(p, TMP_TAG, strlen(TMP_TAG)))
		return -1;
	for (p += strlen(TMP_TAG); *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
		pid = pid * 10 + (*p - '0');
	if (!digits || *p++ != '-' || strlen(p) != TMP_RAND || strspn(p, alnum) != TMP_RAND)
		return -1;
	return pid;
}

/* Removes the temporary files of dead runs for the same destination (see outfile.h). */
static void remove_stale(int dirfd, const char *base, size_t blen)
{
	uid_t su = (uid_t) -1;
	gid_t sg;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	unsigned scanned = 0;

	if (!d) {
		if (fd >= 0)
			(void) close(fd);
		return;
	}
	(void) sudo_owner(&su, &sg);
	while ((de = readdir(d)) && scanned++ < SCAN_MAX) {
		long pid = tmp_pid(de->d_name, base, blen);
		struct stat st, st2;
		int f;

		if (pid <= 0 || pid > INT32_MAX || pid == getpid())
			continue;
		if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
			continue;       /* its writer may be alive */
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    (st.st_uid != geteuid() && st.st_uid != su))
			continue;
		f = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (f < 0)
			continue;
		/* the same file, and no live writer holds its lock (one in another pid namespace) */
		if (fstat(f, &st2) == 0 && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino &&
		    flock(f, LOCK_EX | LOCK_NB) == 0)
			(void) unlinkat(dirfd, de->d_name, 0);
		(void) close(f);
	}
	(void) closedir(d);
}

static void random_suffix(char *out)
{
	unsigned char r[TMP_RAND];
	struct timespec ts;

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t) sizeof(r)) {
		(void) clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof(r); i++)
			r[i] = (unsigned char) ((uint64_t) ts.tv_nsec >> (i * 5)) ^ (unsigned char) i;
	}
	for (size_t i = 0; i < TMP_RAND; i++)
		out[i] = alnum[r[i] % (sizeof(alnum) - 1)];
	out[TMP_RAND] = '\0';
}

/* Whether a symbolic link owned by uid is followed: root's, the caller's, or under sudo the
 * invoking user's. */
static bool trusted_owner(uid_t uid)
{
	uid_t su;
	gid_t sg;

	return uid == 0 || uid == geteuid() || (sudo_owner(&su, &sg) == 0 && uid == su);
}

/* The descriptor of ours that path names ("/dev/stdout", "/dev/fd/N", "/proc/self/fd/N",
 * "/proc/thread-self/fd/N", "/proc/OUR-PID/fd/N"): N, else -1. */
static int fd_of_path(const char *path)
{
	static const char *const std[] = { "/dev/stdin", "/dev/stdout", "/dev/stderr" };
	static const char *const dirs[] = { "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/" };
	const char *p = NULL;
	char *end;
	long v;

	for (int i = 0; i < 3; i++)
		if (!strcmp(path, std[i]))
			return i;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !p; i++)
		if (!strncmp(path, dirs[i], strlen(dirs[i])))
			p = path + strlen(dirs[i]);
	if (!p && !strncmp(path, "/proc/", 6) && path[6] >= '1' && path[6] <= '9') {
		errno = 0;
		v = strtol(path + 6, &end, 10);
		if (!errno && v == (long) getpid() && !strncmp(end, "/fd/", 4))
			p = end + 4;
	}
	if (!p || *p < '0' || *p > '9')
		return -1;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || *end || v > INT32_MAX)
		return -1;
	return (int) v;
}

/* fd moved above the standard descriptors (a closed 0, 1 or 2 is never our output), close-on-exec:
 * the new fd, or -errno (fd closed either way). */
static int fd_above_std(int fd)
{
	int nfd;

	if (fd > STDERR_FILENO)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (nfd < 0)
		nfd = -errno;
	(void) close(fd);
	return nfd;
}

static int fdopen_w(struct outfile *o, int fd)
{
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = -errno;

		(void) close(fd);
		return e;
	}
	return 0;
}

/* Descriptor n of ours, written where it stands (a copy of it, closed at the end). */
static int open_fd(struct outfile *o, int n)
{
	int fl = fcntl(n, F_GETFL);
	int fd;

	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
		return -EBADF;          /* closed, or not open for writing */
	fd = fcntl(n, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (fd < 0)
		return -errno;
	o->is_fd = true;
	return fdopen_w(o, fd);
}

/*
 * Opens the directory dir names, following a symbolic link on the way only when trusted_owner()
 * owns it (another user's link is -ENOLINK), at most LINKS_MAX links: the directory's fd
 * (O_RDONLY), or -errno.
 */
static int open_dir(const char *dir)
{
	size_t size = strlen(dir) + 1;
	char *rem = malloc(size), *tmp;
	char target[PATH_MAX];
	int cur, links = 0, r = 0;

	if (!rem)
		return -ENOMEM;
	memcpy(rem, dir, size);
	cur = open(rem[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0) {
		free(rem);
		return -errno;
	}
	for (size_t at = 0;;) {
		struct stat st;
		size_t len, rest;
		ssize_t tl;
		int nfd;

		while (rem[at] == '/')
			at++;
		if (!rem[at])
			break;
		len = strcspn(rem + at, "/");
		rest = at + len;
		if (rem[rest])
			rem[rest++] = '\0';     /* rem + at: the component; rem + rest: what follows */
		if (!strcmp(rem + at, ".")) {
			at = rest;
			continue;
		}
		if (fstatat(cur, rem + at, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			if (++links > LINKS_MAX) {
				r = -ELOOP;
				break;
			}
			if (!trusted_owner(st.st_uid)) {
				r = -ENOLINK;
				break;
			}
			tl = readlinkat(cur, rem + at, target, sizeof(target));
			if (tl < 0 || (size_t) tl >= sizeof(target)) {
				r = tl < 0 ? -errno : -ENAMETOOLONG;
				break;
			}
			/* the link's text, then what followed it */
			size = (size_t) tl + 1 + strlen(rem + rest) + 1;
			if (size > PATH_MAX || !(tmp = malloc(size))) {
				r = size > PATH_MAX ? -ENAMETOOLONG : -ENOMEM;
				break;
			}
			memcpy(tmp, target, (size_t) tl);
			tmp[tl] = '/';
			memcpy(tmp + tl + 1, rem + rest, strlen(rem + rest) + 1);
			free(rem);
			rem = tmp;
			at = 0;
			if (target[0] == '/') {
				nfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (nfd < 0) {
					r = -errno;
					break;
				}
				(void) close(cur);
				cur = nfd;
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			r = -ENOTDIR;
			break;
		}
		nfd = openat(cur, rem + at, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			r = -errno;
			break;
		}
		(void) close(cur);
		cur = nfd;
		at = rest;
	}
	free(rem);
	if (r == 0) {
		r = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (r < 0)
			r = -errno;
	}
	(void) close(cur);
	return r;
}

/* path's directory as text ("." for none): a new string, or NULL (no memory). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? strndup(path, slash == path ? 1 : (size_t) (slash - path)) : strdup(".");
}

/* The directory and last component of path: o->dirfd and o->base. */
static int split_path(struct outfile *o, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!*path)
		return -ENOENT;
	if (slash && !slash[1])
		return -EISDIR;         /* "dir/" */
	o->base = strdup(slash ? slash + 1 : path);
	if (!o->base)
		return -ENOMEM;
	if (!strcmp(o->base, ".") || !strcmp(o->base, ".."))
		return -EISDIR;
	dir = dir_of(path);
	if (!dir)
		return -ENOMEM;
	fd = open_dir(dir);
	free(dir);
	if (fd < 0)
		return fd;
	o->dirfd = fd;
	return 0;
}

static int open_tmp(struct outfile *o)
{
	size_t blen = strlen(o->base) < TMP_BASE_MAX ? strlen(o->base) : TMP_BASE_MAX;
	size_t size = blen + 64;
	int fd = -1, e = 0;

	remove_stale(o->dirfd, o->base, blen);
	o->tmp = malloc(size);
	if (!o->tmp)
		return -ENOMEM;
	for (int i = 0; i < TMP_TRIES; i++) {
		char rnd[TMP_RAND + 1];

		random_suffix(rnd);
		snprintf(o->tmp, size, ".%.*s%s%d-%s", (int) blen, o->base, TMP_TAG, (int) getpid(),
			 rnd);
		fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = -errno;
		free(o->tmp);
		o->tmp = NULL;
		return e;
	}
	fd = fd_above_std(fd);
	e = fd < 0 ? fd : 0;
	if (e == 0) {
		(void) flock(fd, LOCK_EX | LOCK_NB);
		e = fdopen_w(o, fd);
	}
	if (e < 0) {
		(void) unlinkat(o->dirfd, o->tmp, 0);
		free(o->tmp);
		o->tmp = NULL;
	}
	return e;
}

/* The file o->base in o->dirfd written as it is (no link: see outfile.h): 0 or -errno. */
static int open_direct(struct outfile *o)
{
	int fd = openat(o->dirfd, o->base, O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	fd = fd_above_std(fd);
	if (fd < 0)
		return fd;
	return fdopen_w(o, fd);
}

static void release(struct outfile *o)
{
	if (o->dirfd >= 0)
		(void) close(o->dirfd);
	free(o->base);
	free(o->tmp);
	o->dirfd = -1;
	o->base = o->tmp = NULL;
	o->f = NULL;
}

/* How path is written (see outfile.h); via_link: path is a trusted link's target. */
static int open_path(struct outfile *o, const char *path, int hops, bool via_link)
{
	char target[PATH_MAX], *dir, *next;
	struct stat st;
	size_t size;
	ssize_t tl;
	int n = fd_of_path(path), r;

	if (n >= 0)
		return open_fd(o, n);
	r = split_path(o, path);
	if (r < 0)
		return r;
	if (fstatat(o->dirfd, o->base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? open_tmp(o) : -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISREG(st.st_mode))
		return via_link ? open_direct(o) : open_tmp(o);
	if (!S_ISLNK(st.st_mode))
		return open_direct(o);          /* a FIFO, socket or device */
	if (!trusted_owner(st.st_uid))
		return open_tmp(o);             /* another user's link: replaced, never followed */
	/* root's, the caller's or the invoking user's link: followed, one link at a time */
	if (hops >= LINKS_MAX)
		return -ELOOP;
	tl = readlinkat(o->dirfd, o->base, target, sizeof(target));
	if (tl < 0)
		return -errno;
	if ((size_t) tl >= sizeof(target))
		return -ENAMETOOLONG;
	target[tl] = '\0';
	dir = dir_of(path);
	if (!dir)
		return -ENOMEM;
	size = strlen(dir) + 1 + (size_t) tl + 1;
	next = malloc(size);
	if (next && target[0] == '/') {
		memcpy(next, target, (size_t) tl + 1);
	} else if (next) {
		memcpy(next, dir, strlen(dir));
		next[strlen(dir)] = '/';
		memcpy(next + strlen(dir) + 1, target, (size_t) tl + 1);
	}
	free(dir);
	if (!next)
		return -ENOMEM;
	release(o);
	r = open_path(o, next, hops + 1, true);
	free(next);
	return r;
}

int outfile_open(struct outfile *o, const char *path)
{
	int r;

	*o = (struct outfile) { .path = path, .dirfd = -1 };
	if (outfile_is_stdout(path)) {
		if (fcntl(STDOUT_FILENO, F_GETFD) < 0)
			return -EBADF;
		o->f = stdout;
		o->is_stdout = true;
		return 0;
	}
	r = open_path(o, path, 0, false);
	if (r < 0)
		release(o);
	return r;
}

void outfile_abort(struct outfile *o)
{
	if (!o->f)
		return;
	if (o->is_stdout) {
		(void) fflush(stdout);
		o->f = NULL;
		return;
	}
	(void) fclose(o->f);
	if (o->tmp)
		(void) unlinkat(o->dirfd, o->tmp, 0);
	release(o);
}

/* Whether what is at base in dirfd now may be replaced by the rename: nothing, a regular file,
 * or another user's link (something else may have appeared while the output was written). */
static bool replaceable(int dirfd, const char *base)
{
	struct stat st;

	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	return S_ISREG(st.st_mode) || (S_ISLNK(st.st_mode) && !trusted_owner(st.st_uid));
}

int outfile_commit(struct outfile *o)
{
	struct stat st;
	uid_t uid;
	gid_t gid;
	int fd, r = 0;

	if (!o->f)
		return 0;
	errno = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		r = errno ? -errno : -EIO;
	if (o->is_stdout) {
		o->f = NULL;
		return r;
	}
	fd = fileno(o->f);
	if (!o->tmp) {
		/* written as it is: a regular file keeps only what was written now (not one of our
		 * descriptors: "/dev/stdout" appended to a log, say) */
		off_t end = ftello(o->f);

		if (r == 0 && !o->is_fd && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && end >= 0 &&
		    ftruncate(fd, end) < 0)
			r = -errno;
		if (fclose(o->f) != 0 && r == 0)
			r = -errno;
		release(o);
		return r;
	}
	if (r == 0 && fsync(fd) < 0 && errno != EINVAL)
		r = -errno;
	if (r == 0 && sudo_owner(&uid, &gid) == 0 && fchown(fd, uid, gid) < 0)
		r = -errno;
	if (r == 0 && !replaceable(o->dirfd, o->base))
		r = -EEXIST;
	if (r == 0 && renameat(o->dirfd, o->tmp, o->dirfd, o->base) < 0)
		r = -errno;
	if (r == 0)
		(void) fsync(o->dirfd);
	if (fclose(o->f) != 0 && r == 0)
		r = -errno;
	if (r < 0)
		(void) unlinkat(o->dirfd, o->tmp, 0);
	release(o);
	return r;
}
