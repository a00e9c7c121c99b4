/* profdir: the monitor's directory of rotating profiles (see profdir.h). */
#include "output/profdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"

#define NAME_PREFIX "hwspy-"
#define NAME_SUFFIX ".pb.gz"
#define TIME_LEN 16             /* "20261203T184512Z" */
/* outfile's temporary files, ".NAME" TMP_TAG "PID-" TMP_RAND letters or digits: base/outfile.h
 * (outfile.c keeps NAME whole up to 200 bytes, more than PROFDIR_NAME_MAX) */
#define TMP_TAG ".hwspy-"
#define TMP_RAND 6

struct profdir {
	int fd;
};

static bool service_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int profdir_name(uint64_t unix_ns, const char *service, pid_t pid, char *buf, size_t size)
{
	char svc[PROFDIR_SERVICE_MAX + 1], when[TIME_LEN + 1];
	time_t t = (time_t) (unix_ns / 1000000000u);
	struct tm tm;
	size_t n = 0;
	int len;

	if (size)
		buf[0] = '\0';
	if (pid <= 0)
		return -EINVAL;
	if (!service || !*service)
		service = "python";
	for (; service[n] && n < PROFDIR_SERVICE_MAX; n++)
		svc[n] = service_char(service[n]) ? service[n] : '_';
	svc[n] = '\0';
	/* a uint64_t of ns ends in 2554: four-digit years, always */
	if (!gmtime_r(&t, &tm) || strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm) != TIME_LEN)
		return -EINVAL;
	len = snprintf(NULL, 0, NAME_PREFIX "%s-%s-%d" NAME_SUFFIX, when, svc, (int) pid);
	if (len < 0)
		return -EINVAL;
	if ((size_t) len >= size)
		return -ENOBUFS;
	snprintf(buf, size, NAME_PREFIX "%s-%s-%d" NAME_SUFFIX, when, svc, (int) pid);
	return len;
}

/* n decimal digits at s: their value, or -1 (not all digits) */
static long digits(const char *s, size_t n)
{
	long v = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Whether TIME_LEN bytes at s are a UTC time as profdir_name() writes it. */
static bool time_match(const char *s)
{
	struct tm tm = { 0 }, back;
	long y = digits(s, 4), mo = digits(s + 4, 2), d = digits(s + 6, 2), h = digits(s + 9, 2),
	     mi = digits(s + 11, 2), sec = digits(s + 13, 2);
	time_t t;

	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
	    mi > 59 || sec < 0 || sec > 59 || s[8] != 'T' || s[15] != 'Z')
		return false;
	tm.tm_year = (int) y - 1900;
	tm.tm_mon = (int) mo - 1;
	tm.tm_mday = (int) d;
	tm.tm_hour = (int) h;
	tm.tm_min = (int) mi;
	tm.tm_sec = (int) sec;
	t = timegm(&tm);
	/* normalised to the same date: not 20260231 */
	return t != (time_t) -1 && gmtime_r(&t, &back) && back.tm_mday == (int) d &&
	       back.tm_mon == (int) mo - 1;
}

/* Whether name[0..len) is a profile name (see profdir_name_match()). */
static bool name_match(const char *name, size_t len)
{
	const size_t pre = strlen(NAME_PREFIX), suf = strlen(NAME_SUFFIX);
	size_t end, at, n_pid;
	long pid;

	/* "hwspy-" TIME "-" at least one byte of service "-" at least one digit ".pb.gz" */
	if (len < pre + TIME_LEN + 1 + 1 + 1 + 1 + suf || len >= PROFDIR_NAME_MAX ||
	    strncmp(name, NAME_PREFIX, pre) || !time_match(name + pre) ||
	    name[pre + TIME_LEN] != '-' || strncmp(name + len - suf, NAME_SUFFIX, suf))
		return false;
	end = len - suf;                        /* the pid ends here */
	for (at = end; at > pre + TIME_LEN + 1 && name[at - 1] >= '0' && name[at - 1] <= '9'; at--)
		;
	n_pid = end - at;
	if (n_pid < 1 || n_pid > 10 || name[at] == '0' || name[at - 1] != '-')
		return false;
	pid = digits(name + at, n_pid);
	if (pid < 1 || pid > INT32_MAX)
		return false;
	/* the service: from after the time's '-' to before the pid's */
	at--;
	if (at <= pre + TIME_LEN + 1 || at - (pre + TIME_LEN + 1) > PROFDIR_SERVICE_MAX)
		return false;
	for (size_t i = pre + TIME_LEN + 1; i < at; i++)
		if (!service_char(name[i]))
			return false;
	return true;
}

bool profdir_name_match(const char *name)
{
	return name_match(name, strlen(name));
}

/* Whether name is outfile's temporary file for a profile name: ".NAME.hwspy-PID-XXXXXX". */
static bool tmp_match(const char *name)
{
	size_t len = strlen(name), at, tag = strlen(TMP_TAG);

	if (len < 1 + tag + 1 + 1 + TMP_RAND || name[0] != '.' || name[len - TMP_RAND - 1] != '-')
		return false;
	for (size_t i = len - TMP_RAND; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9')))
			return false;
	at = len - TMP_RAND - 1;                /* the PID ends here */
	for (size_t n = 0; at > 0 && name[at - 1] >= '0' && name[at - 1] <= '9'; at--)
		if (++n > 10)
			return false;
	if (at == len - TMP_RAND - 1 || at < 1 + tag || strncmp(name + at - tag, TMP_TAG, tag))
		return false;
	return name_match(name + 1, at - tag - 1);
}

/* The users whose files are ours: the effective uid and, when it is root under sudo, the
 * invoking user (as base/outfile.c reads SUDO_UID); (uid_t) -1 when none. */
static uid_t sudo_uid(void)
{
	const char *s = getenv("SUDO_UID");
	char *end;
	unsigned long v;

	if (geteuid() != 0 || !s || *s < '0' || *s > '9' || !getenv("SUDO_GID"))
		return (uid_t) -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= UINT32_MAX)
		return (uid_t) -1;
	return (uid_t) v;
}

static bool ours(uid_t uid, uid_t sudo)
{
	return uid == geteuid() || (sudo != (uid_t) -1 && uid == sudo);
}

int profdir_open(const char *dir, struct profdir **ret, const char **ret_why)
{
	const char *why_buf, **why = ret_why ? ret_why : &why_buf;
	struct profdir *d;
	struct stat st;
	int fd;

	*ret = NULL;
	*why = NULL;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		*why = "cannot be created";
		return -errno;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		struct stat lst;

		/* O_DIRECTORY|O_NOFOLLOW on a link: ENOTDIR or ELOOP, as the kernel decides */
		if ((e == -ELOOP || e == -ENOTDIR) && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode)) {
			*why = "is a symbolic link: give the directory it points to";
			return -ELOOP;
		}
		*why = e == -ENOTDIR ? "is not a directory" : "cannot be opened";
		return e;
	}
	if (fstat(fd, &st) < 0) {
		int e = -errno;

		(void) close(fd);
		*why = "cannot be opened";
		return e;
	}
	if (st.st_uid != 0 && !ours(st.st_uid, sudo_uid())) {
		(void) close(fd);
		*why = "is owned by another user than root or us";
		return -EPERM;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		(void) close(fd);
		*why = "is writable by group or others and not sticky (chmod go-w, or +t)";
		return -EPERM;
	}
	d = malloc(sizeof(*d));
	if (!d) {
		(void) close(fd);
		return -ENOMEM;
	}
	d->fd = fd;
	*ret = d;
	return 0;
}

void profdir_close(struct profdir *d)
{
	if (!d)
		return;
	(void) close(d->fd);
	free(d);
}

int profdir_fd(const struct profdir *d)
{
	return d->fd;
}

/* A profile found: its name (owned) and size. */
struct entry {
	char *name;
	uint64_t size;
};

/* Oldest first: by the time in the name, then by name. */
static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = memcmp(x->name + strlen(NAME_PREFIX), y->name + strlen(NAME_PREFIX), TIME_LEN);

	return c ? c : strcmp(x->name, y->name);
}

/* Removes a stale temporary file of ours (see profdir.h). */
static void remove_stale(int dirfd, const char *name, const struct stat *st, uid_t sudo)
{
	struct timespec now;
	struct stat st2;
	uint64_t mtime, now_ns;
	int f;

	if (!S_ISREG(st->st_mode) || !ours(st->st_uid, sudo) ||
	    clock_gettime(CLOCK_REALTIME, &now) < 0 || st->st_mtim.tv_sec < 0)
		return;
	mtime = (uint64_t) st->st_mtim.tv_sec * 1000000000u + (uint64_t) st->st_mtim.tv_nsec;
	now_ns = (uint64_t) now.tv_sec * 1000000000u + (uint64_t) now.tv_nsec;
	if (now_ns < mtime || now_ns - mtime < PROFDIR_STALE_NS)
		return;
	f = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (f < 0)
		return;
	/* the same file, and no writer holds its lock */
	if (fstat(f, &st2) == 0 && st2.st_dev == st->st_dev && st2.st_ino == st->st_ino &&
	    flock(f, LOCK_EX | LOCK_NB) == 0)
		(void) unlinkat(dirfd, name, 0);
	(void) close(f);
}

/* The profiles of ours in dirfd, and stale temporary files removed on the way. */
static int scan(int dirfd, struct entry **ret, size_t *ret_n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	uid_t sudo = sudo_uid();
	unsigned seen = 0;
	struct dirent *de;
	int e = 0;

	if (!dir) {
		e = -errno;
		if (fd >= 0)
			(void) close(fd);
		return e;
	}
	for (;;) {
		struct stat st;

		errno = 0;
		if (seen++ >= PROFDIR_SCAN_MAX || !(de = readdir(dir))) {
			e = -errno;
			break;
		}
		if (de->d_name[0] == '.') {
			if (tmp_match(de->d_name) &&
			    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				remove_stale(dirfd, de->d_name, &st, sudo);
			continue;
		}
		if (!profdir_name_match(de->d_name) ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || !ours(st.st_uid, sudo))
			continue;
		if (array_grow((void **) &v, &cap, n + 1, sizeof(*v), 64) < 0 ||
		    !(v[n].name = strdup(de->d_name))) {
			e = -ENOMEM;
			break;
		}
		v[n++].size = (uint64_t) st.st_size;
	}
	(void) closedir(dir);
	if (e < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i].name);
		free(v);
		return e;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int profdir_prune(struct profdir *d, size_t keep, uint64_t max_bytes)
{
	struct entry *v = NULL;
	size_t n = 0, left;
	uint64_t total = 0;
	int removed = 0, e = scan(d->fd, &v, &n);

	if (e < 0)
		return e;
	if (n > 1)              /* (qsort's array may not be NULL, even for none) */
		qsort(v, n, sizeof(*v), cmp_entry);
	for (size_t i = 0; i < n; i++)
		total = total > UINT64_MAX - v[i].size ? UINT64_MAX : total + v[i].size;
	left = n;
	for (size_t i = 0; i < n && ((keep && left > keep) || (max_bytes && total > max_bytes));
	     i++) {
		if (unlinkat(d->fd, v[i].name, 0) == 0) {
			removed++;
		} else if (errno != ENOENT) {
			if (e == 0)
				e = -errno;
			continue;       /* still there: it still counts */
		}
		left--;
		total -= v[i].size;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return e < 0 ? e : removed;
}
