/* profdir: profile names, the directory's checks, and pruning in a temporary directory that
 * also holds what must never go (the user's notes, a link and a directory named like ours,
 * another user's profile, another file's temporary file). Another user's file needs root to
 * make (chown): without root that one check is left out, said on stderr. */
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/outfile.h"
#include "output/profdir.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define T0 1796323512ull        /* 2026-12-03 18:45:12 UTC */
#define NS 1000000000ull
#define OTHER_UID 12345

/* ---- helpers -------------------------------------------------------------------------------- */

struct tdir {
	char path[64];
	int fd;
};

static void tdir_make(struct tdir *t)
{
	strcpy(t->path, "/tmp/hwspy-profdir-XXXXXX");
	assert_non_null(mkdtemp(t->path));
	assert_int_equal(chmod(t->path, 0755), 0);
	t->fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(t->fd >= 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void tdir_free(struct tdir *t)
{
	(void) close(t->fd);
	assert_int_equal(nftw(t->path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* A file name in t holding size bytes, its mtime age_s seconds ago. */
static void put(const struct tdir *t, const char *name, size_t size, unsigned age_s)
{
	int fd = openat(t->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	char buf[512] = { 0 };
	struct timespec ts[2];

	assert_true(fd >= 0);
	for (size_t left = size; left;) {
		size_t n = left < sizeof(buf) ? left : sizeof(buf);
		assert_int_equal(write(fd, buf, n), (ssize_t) n);
		left -= n;
	}
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts[0]), 0);
	ts[0].tv_sec -= age_s;
	ts[1] = ts[0];
	assert_int_equal(futimens(fd, ts), 0);
	assert_int_equal(close(fd), 0);
}

static char *name_at(uint64_t s, const char *service, pid_t pid)
{
	static char buf[8][PROFDIR_NAME_MAX];
	static unsigned next;
	char *b = buf[next++ % N_ELEMS(buf)];

	assert_true(profdir_name(s * NS, service, pid, b, PROFDIR_NAME_MAX) > 0);
	return b;
}

static bool exists(const struct tdir *t, const char *name)
{
	struct stat st;

	return fstatat(t->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static size_t count_entries(const struct tdir *t)
{
	int fd = openat(t->fd, ".", O_RDONLY | O_DIRECTORY);
	DIR *d = fdopendir(fd);
	size_t n = 0;
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static struct profdir *open_ok(const struct tdir *t)
{
	struct profdir *d = NULL;
	const char *why = "unset";

	assert_int_equal(profdir_open(t->path, &d, &why), 0);
	assert_null(why);
	assert_non_null(d);
	return d;
}

/* ---- names ---------------------------------------------------------------------------------- */

static void test_names(void **state)
{
	char buf[PROFDIR_NAME_MAX], small[20], svc[200];
	int n;
	(void) state;

	n = profdir_name(T0 * NS + 999999999, "api", 123, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-20261203T184512Z-api-123.pb.gz");
	assert_int_equal(n, strlen(buf));
	assert_true(profdir_name_match(buf));
	profdir_name(T0 * NS, "my svc/ü:x", 7, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-20261203T184512Z-my_svc____x-7.pb.gz");
	profdir_name(T0 * NS, "", 7, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-20261203T184512Z-python-7.pb.gz");
	profdir_name(0, NULL, 1, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-19700101T000000Z-python-1.pb.gz");
	profdir_name(T0 * NS, "a-b.c_d-9", 42, buf, sizeof(buf));
	assert_string_equal(buf, "hwspy-20261203T184512Z-a-b.c_d-9-42.pb.gz");
	assert_true(profdir_name_match(buf));

	/* cut to 64 bytes; the longest name fits PROFDIR_NAME_MAX */
	memset(svc, 'x', sizeof(svc) - 1);
	svc[sizeof(svc) - 1] = '\0';
	n = profdir_name(UINT64_MAX, svc, INT32_MAX, buf, sizeof(buf));
	assert_int_equal(n, PROFDIR_NAME_MAX - 1);
	assert_int_equal(strspn(buf + 23, "x"), PROFDIR_SERVICE_MAX);
	assert_true(profdir_name_match(buf));

	assert_int_equal(profdir_name(T0 * NS, "api", 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(profdir_name(T0 * NS, "api", -5, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(profdir_name(T0 * NS, "api", 123, small, sizeof(small)), -ENOBUFS);
	assert_string_equal(small, "");
	assert_int_equal(profdir_name(T0 * NS, "api", 123, buf, 36), -ENOBUFS);
	assert_int_equal(profdir_name(T0 * NS, "api", 123, buf, 37), 36);

	/* what profdir_name() cannot have written */
	static const char *const not_ours[] = {
		"notes.txt", "", "hwspy-", "hwspy-20261203T184512Z-api-123.pb.gz.bak",
		".hwspy-20261203T184512Z-api-123.pb.gz",
		"hwspy-20261203T184512Z-api-0123.pb.gz",        /* leading zero */
		"hwspy-20261203T184512Z-api-0.pb.gz",
		"hwspy-20261203T184512Z-api-2147483648.pb.gz",  /* past INT32_MAX */
		"hwspy-20261203T184512Z-api-.pb.gz",
		"hwspy-20261203T184512Z--123.pb.gz",            /* empty service */
		"hwspy-20261203T184512Z-123.pb.gz",
		"hwspy-20261203T184512Z-a b-123.pb.gz",
		"hwspy-20260231T184512Z-api-123.pb.gz",         /* 31 February */
		"hwspy-20261203T244512Z-api-123.pb.gz",
		"hwspy-20261203 184512Z-api-123.pb.gz",
		"hwspy-20261203T184512-api-123.pb.gz",
		"hwspy-2026120T3184512Z-api-123.pb.gz",
		"hwspy-19691231T235959Z-api-123.pb.gz",
		"hwspy-20261203T184512Z-api-123.pb",
		"HWSPY-20261203T184512Z-api-123.pb.gz",
	};
	for (size_t i = 0; i < N_ELEMS(not_ours); i++)
		if (profdir_name_match(not_ours[i]))
			fail_msg("'%s' matched", not_ours[i]);
	memset(svc, 'x', sizeof(svc));
	n = snprintf(svc, sizeof(svc), "hwspy-20261203T184512Z-%065d-1.pb.gz", 0);  /* 65 bytes */
	assert_true(n > 0);
	assert_false(profdir_name_match(svc));
}

/* ---- open ----------------------------------------------------------------------------------- */

static void test_open(void **state)
{
	struct tdir t;
	struct profdir *d = NULL;
	const char *why = NULL;
	char path[128];
	struct stat st;
	mode_t old = umask(022);
	(void) state;

	tdir_make(&t);
	/* created 0755 when missing; a missing parent is ENOENT */
	snprintf(path, sizeof(path), "%s/profiles", t.path);
	assert_int_equal(profdir_open(path, &d, &why), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_true(profdir_fd(d) >= 0);
	assert_int_equal(fstat(profdir_fd(d), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	profdir_close(d);
	profdir_close(NULL);
	snprintf(path, sizeof(path), "%s/no/profiles", t.path);
	assert_int_equal(profdir_open(path, &d, &why), -ENOENT);
	assert_null(d);
	assert_string_equal(why, "cannot be created");

	/* world-writable without the sticky bit: EPERM; with it: fine; group-writable: EPERM */
	assert_int_equal(chmod(t.path, 0777), 0);
	assert_int_equal(profdir_open(t.path, &d, &why), -EPERM);
	assert_null(d);
	assert_non_null(strstr(why, "writable by group or others and not sticky"));
	assert_int_equal(chmod(t.path, 01777), 0);
	d = open_ok(&t);
	profdir_close(d);
	assert_int_equal(chmod(t.path, 0775), 0);
	assert_int_equal(profdir_open(t.path, &d, NULL), -EPERM);
	assert_int_equal(chmod(t.path, 0755), 0);

	/* a link to a good directory, a file */
	snprintf(path, sizeof(path), "%s/link", t.path);
	assert_int_equal(symlink(t.path, path), 0);
	assert_int_equal(profdir_open(path, &d, &why), -ELOOP);
	assert_non_null(strstr(why, "symbolic link"));
	put(&t, "file", 1, 0);
	snprintf(path, sizeof(path), "%s/file", t.path);
	assert_int_equal(profdir_open(path, &d, &why), -ENOTDIR);
	assert_string_equal(why, "is not a directory");

	/* another user's directory */
	snprintf(path, sizeof(path), "%s/theirs", t.path);
	assert_int_equal(mkdir(path, 0755), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
		assert_int_equal(profdir_open(path, &d, &why), -EPERM);
		assert_string_equal(why, "is owned by another user than root or us");
	} else {
		fprintf(stderr, "# not root: another user's directory not checked\n");
	}
	tdir_free(&t);
	umask(old);
}

/* ---- prune ---------------------------------------------------------------------------------- */

/* What must never go: the user's file, a link and a directory named like the oldest profile,
 * and (as root) another user's profile, older than all. */
static void put_foreign(const struct tdir *t, bool *ret_other)
{
	put(t, "notes.txt", 100000, 3600);
	assert_int_equal(symlinkat("notes.txt", t->fd, name_at(T0 - 1000, "api", 1)), 0);
	assert_int_equal(mkdirat(t->fd, name_at(T0 - 999, "api", 2), 0755), 0);
	*ret_other = geteuid() == 0;
	if (*ret_other) {
		put(t, name_at(T0 - 998, "api", 3), 100000, 0);
		assert_int_equal(fchownat(t->fd, name_at(T0 - 998, "api", 3), OTHER_UID, OTHER_UID,
					  AT_SYMLINK_NOFOLLOW), 0);
	} else {
		fprintf(stderr, "# not root: another user's profile not checked\n");
	}
}

static void assert_foreign(const struct tdir *t, bool other)
{
	struct stat st;

	assert_true(exists(t, "notes.txt"));
	assert_int_equal(fstatat(t->fd, name_at(T0 - 1000, "api", 1), &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(fstatat(t->fd, name_at(T0 - 999, "api", 2), &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode));
	if (other)
		assert_true(exists(t, name_at(T0 - 998, "api", 3)));
}

static void test_prune_keep(void **state)
{
	struct tdir t;
	struct profdir *d;
	bool other;
	(void) state;

	tdir_make(&t);
	put_foreign(&t, &other);
	/* five of ours, written in another order than their times */
	put(&t, name_at(T0 + 40, "api", 10), 10, 0);
	put(&t, name_at(T0 + 0, "worker", 11), 10, 0);
	put(&t, name_at(T0 + 30, "api", 12), 10, 0);
	put(&t, name_at(T0 + 10, "api", 13), 10, 0);
	put(&t, name_at(T0 + 20, "db", 14), 10, 0);
	d = open_ok(&t);

	assert_int_equal(profdir_prune(d, 0, 0), 0);    /* no bound */
	assert_int_equal(profdir_prune(d, 10, 0), 0);
	assert_int_equal(profdir_prune(d, 2, 0), 3);
	assert_true(exists(&t, name_at(T0 + 40, "api", 10)));
	assert_true(exists(&t, name_at(T0 + 30, "api", 12)));
	assert_false(exists(&t, name_at(T0 + 20, "db", 14)));
	assert_false(exists(&t, name_at(T0 + 10, "api", 13)));
	assert_false(exists(&t, name_at(T0 + 0, "worker", 11)));
	assert_foreign(&t, other);
	assert_int_equal(profdir_prune(d, 2, 0), 0);
	assert_int_equal(profdir_prune(d, 1, 0), 1);
	assert_true(exists(&t, name_at(T0 + 40, "api", 10)));
	assert_int_equal(count_entries(&t), 4 + other);

	/* the same time: by name ("api-10" < "api-9" < "b-1"), the first ones go */
	put(&t, name_at(T0 + 50, "api", 9), 10, 0);
	put(&t, name_at(T0 + 50, "b", 1), 10, 0);
	put(&t, name_at(T0 + 50, "api", 10), 10, 0);
	assert_int_equal(profdir_prune(d, 1, 0), 3);
	assert_true(exists(&t, name_at(T0 + 50, "b", 1)));
	assert_foreign(&t, other);
	profdir_close(d);
	tdir_free(&t);
}

static void test_prune_bytes(void **state)
{
	struct tdir t;
	struct profdir *d;
	bool other;
	(void) state;

	tdir_make(&t);
	put_foreign(&t, &other);        /* 100000-byte foreign files: not counted */
	put(&t, name_at(T0 + 1, "api", 1), 100, 0);
	put(&t, name_at(T0 + 2, "api", 1), 200, 0);
	put(&t, name_at(T0 + 3, "api", 1), 300, 0);
	put(&t, name_at(T0 + 4, "api", 1), 400, 0);
	d = open_ok(&t);
	assert_int_equal(profdir_prune(d, 0, 1000), 0);
	assert_int_equal(profdir_prune(d, 0, 750), 2);          /* 1000 -> 900 -> 700 */
	assert_false(exists(&t, name_at(T0 + 1, "api", 1)));
	assert_false(exists(&t, name_at(T0 + 2, "api", 1)));
	assert_true(exists(&t, name_at(T0 + 3, "api", 1)));
	assert_true(exists(&t, name_at(T0 + 4, "api", 1)));
	/* both bounds: the stricter holds */
	put(&t, name_at(T0 + 5, "api", 1), 10, 0);
	put(&t, name_at(T0 + 6, "api", 1), 10, 0);
	assert_int_equal(profdir_prune(d, 3, 100000), 1);       /* keep 3 */
	assert_int_equal(profdir_prune(d, 3, 20), 1);           /* 420 -> 20 bytes */
	assert_true(exists(&t, name_at(T0 + 5, "api", 1)));
	assert_true(exists(&t, name_at(T0 + 6, "api", 1)));
	/* one bigger than the bound: it goes too */
	assert_int_equal(profdir_prune(d, 0, 5), 2);
	assert_int_equal(count_entries(&t), 3 + other);
	assert_foreign(&t, other);
	profdir_close(d);
	tdir_free(&t);
}

/* Temporary files: outfile's own, from a child that died while writing (its lock gone), go
 * once a minute old; a fresh one, one whose writer holds the lock, another file's and another
 * user's stay. */
static void test_prune_temporaries(void **state)
{
	struct tdir t;
	struct profdir *d;
	struct outfile live;
	char path[256], dead_tmp[256];
	const char *name = name_at(T0, "api", 1);
	struct timespec old[2];
	int fd, status;
	pid_t pid;
	(void) state;

	tdir_make(&t);
	snprintf(path, sizeof(path), "%s/%s", t.path, name);
	/* a live writer (us): locked; first, as outfile_open() itself removes dead writers' */
	assert_int_equal(outfile_open(&live, path), 0);
	assert_non_null(live.tmp);
	/* a writer that died: its temporary file stays, unlocked */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct outfile o;

		if (outfile_open(&o, path) < 0 || !o.tmp)
			_exit(1);
		fputs("partial", o.f);
		fflush(o.f);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	{
		int dfd = openat(t.fd, ".", O_RDONLY | O_DIRECTORY);
		DIR *dir = fdopendir(dfd);
		struct dirent *de;

		assert_non_null(dir);
		dead_tmp[0] = '\0';
		while ((de = readdir(dir)))
			if (de->d_name[0] == '.' && strcmp(de->d_name, live.tmp) &&
			    strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				snprintf(dead_tmp, sizeof(dead_tmp), "%s", de->d_name);
		closedir(dir);
	}
	assert_true(dead_tmp[0] == '.');
	put(&t, ".notes.txt.hwspy-1-abcdef", 10, 3600);                    /* not a profile's */
	put(&t, ".hwspy-20261203T184512Z-api-2.pb.gz.hwspy-1-abcdef", 10, 0);  /* fresh */
	if (geteuid() == 0) {
		put(&t, ".hwspy-20261203T184512Z-api-3.pb.gz.hwspy-1-abcdef", 10, 3600);
		assert_int_equal(fchownat(t.fd, ".hwspy-20261203T184512Z-api-3.pb.gz.hwspy-1-abcdef",
					  OTHER_UID, OTHER_UID, 0), 0);
	}
	/* the two of outfile's, a minute and more old */
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &old[0]), 0);
	old[0].tv_sec -= 61;
	old[1] = old[0];
	assert_int_equal(utimensat(t.fd, dead_tmp, old, 0), 0);
	assert_int_equal(utimensat(t.fd, live.tmp, old, 0), 0);

	d = open_ok(&t);
	assert_int_equal(profdir_prune(d, 1, 0), 0);    /* no profile: none counted */
	assert_false(exists(&t, dead_tmp));
	assert_true(exists(&t, live.tmp));
	assert_true(exists(&t, ".notes.txt.hwspy-1-abcdef"));
	assert_true(exists(&t, ".hwspy-20261203T184512Z-api-2.pb.gz.hwspy-1-abcdef"));
	if (geteuid() == 0)
		assert_true(exists(&t, ".hwspy-20261203T184512Z-api-3.pb.gz.hwspy-1-abcdef"));

	/* the live one committed: a profile, counted */
	fputs("whole", live.f);
	assert_int_equal(outfile_commit(&live), 0);
	assert_true(exists(&t, name));
	fd = openat(t.fd, name, O_RDONLY);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(profdir_prune(d, 0, 1), 1);
	assert_false(exists(&t, name));
	profdir_close(d);
	tdir_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_prune_keep),
		cmocka_unit_test(test_prune_bytes),
		cmocka_unit_test(test_prune_temporaries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
