/* outfile: write a new file beside the destination, rename it into place (see outfile.h). */
#include "base/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
	dir = slash ? strndup(path, slash == path ? 1 : (size_t) (slash - path)) : strdup(".");
	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -errno;
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
	(void) flock(fd, LOCK_EX | LOCK_NB);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		e = -errno;
		(void) unlinkat(o->dirfd, o->tmp, 0);
		(void) close(fd);
		free(o->tmp);
		o->tmp = NULL;
		return e;
	}
	return 0;
}

/* A file at path written as it is (see outfile.h): 0 or -errno. */
static int open_direct(struct outfile *o, const char *path)
{
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = -errno;
		(void) close(fd);
		return e;
	}
	return 0;
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

int outfile_open(struct outfile *o, const char *path)
{
	struct stat st, target;
	bool direct = false;
	int r;

	*o = (struct outfile) { .path = path, .dirfd = -1 };
	if (outfile_is_stdout(path)) {
		o->f = stdout;
		o->is_stdout = true;
		return 0;
	}
	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (S_ISLNK(st.st_mode) && (st.st_uid == 0 || st.st_uid == geteuid()) &&
		    stat(path, &target) == 0) {
			if (S_ISDIR(target.st_mode))
				return -EISDIR;
			direct = true;          /* a link of root's or the caller's own: followed */
		} else if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
			direct = true;          /* a FIFO, socket or device */
		}
	} else if (errno != ENOENT) {
		return -errno;
	}
	if (direct)
		return open_direct(o, path);
	r = split_path(o, path);
	if (r >= 0)
		r = open_tmp(o);
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

int outfile_commit(struct outfile *o)
{
	struct stat st;
	uid_t uid;
	gid_t gid;
	int fd, r = 0;

	if (!o->f)
		return 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		r = errno ? -errno : -EIO;
	if (o->is_stdout) {
		o->f = NULL;
		return r;
	}
	fd = fileno(o->f);
	if (!o->tmp) {
		/* written as it is: a regular file keeps only what was written now */
		off_t end = ftello(o->f);

		if (r == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && end >= 0 &&
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
