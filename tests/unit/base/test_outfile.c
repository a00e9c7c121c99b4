/* base/outfile: the temporary file and the rename, links, stale temporary files, sudo owner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/outfile.h"

static char dir[64];

static void path_of(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void expect(const char *path, const char *text)
{
	char got[256] = "";
	FILE *f = fopen(path, "re");
	size_t n;

	assert_non_null(f);
	n = fread(got, 1, sizeof(got) - 1, f);
	got[n] = '\0';
	fclose(f);
	assert_string_equal(got, text);
}

/* Entries of dir whose name starts with a dot (temporary files). */
static int hidden(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static int setup(void **state)
{
	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/test_outfile.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void) state;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The old file stays whole until the commit; abort leaves it and nothing else. */
static void test_replace_and_abort(void **state)
{
	struct outfile o;
	char p[128];
	(void) state;

	path_of(p, sizeof(p), "prof.folded");
	put(p, "old\n");
	assert_int_equal(outfile_open(&o, p), 0);
	assert_non_null(o.tmp);
	fputs("new\n", o.f);
	expect(p, "old\n");
	assert_int_equal(hidden(), 1);
	assert_int_equal(outfile_commit(&o), 0);
	assert_null(o.f);
	expect(p, "new\n");
	assert_int_equal(hidden(), 0);

	assert_int_equal(outfile_open(&o, p), 0);
	fputs("half", o.f);
	outfile_abort(&o);
	outfile_abort(&o);      /* a no-op now */
	expect(p, "new\n");
	assert_int_equal(hidden(), 0);
}

static void test_errors(void **state)
{
	struct outfile o;
	char p[128];
	(void) state;

	assert_int_equal(outfile_open(&o, dir), -EISDIR);
	path_of(p, sizeof(p), "");
	assert_int_equal(outfile_open(&o, p), -EISDIR);         /* "dir/" */
	path_of(p, sizeof(p), "missing/x.folded");
	assert_int_equal(outfile_open(&o, p), -ENOENT);
	assert_int_equal(outfile_open(&o, ""), -ENOENT);
	assert_int_equal(hidden(), 0);
	assert_true(outfile_is_stdout("-"));
	assert_int_equal(outfile_open(&o, "-"), 0);
	assert_ptr_equal(o.f, stdout);
	assert_int_equal(outfile_commit(&o), 0);
}

/* Another user's link is replaced; the caller's own link is followed. */
static void test_links(void **state)
{
	struct outfile o;
	char victim[128], p[128], own[128];
	struct stat st;
	(void) state;

	path_of(victim, sizeof(victim), "victim");
	put(victim, "precious\n");
	path_of(own, sizeof(own), "own.folded");
	assert_int_equal(symlink(victim, own), 0);
	assert_int_equal(outfile_open(&o, own), 0);
	assert_null(o.tmp);
	fputs("mine\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	expect(victim, "mine\n");       /* followed, and truncated to what was written */
	assert_int_equal(lstat(own, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	if (geteuid() != 0)
		return;                 /* lchown to another user needs root */
	put(victim, "precious\n");
	path_of(p, sizeof(p), "planted.folded");
	assert_int_equal(symlink(victim, p), 0);
	assert_int_equal(lchown(p, 65534, 65534), 0);
	assert_int_equal(outfile_open(&o, p), 0);
	assert_non_null(o.tmp);
	fputs("profile\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	expect(victim, "precious\n");
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	expect(p, "profile\n");
}

/* A dead run's temporary file goes; a live one's, and other names, stay. */
static void test_stale(void **state)
{
	struct outfile o;
	char p[128], dead[160], live[160], other[160], other2[160];
	pid_t child = fork();
	(void) state;

	if (child == 0)
		_exit(0);
	assert_true(child > 0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	path_of(p, sizeof(p), "s.folded");
	snprintf(dead, sizeof(dead), "%s/.s.folded.hwspy-%d-abc123", dir, (int) child);
	snprintf(live, sizeof(live), "%s/.s.folded.hwspy-%d-abc123", dir, (int) getppid());
	snprintf(other, sizeof(other), "%s/.s.folded.hwspy-%d-abc12", dir, (int) child);
	snprintf(other2, sizeof(other2), "%s/.t.folded.hwspy-%d-abc123", dir, (int) child);
	put(dead, "");
	put(live, "");
	put(other, "");
	put(other2, "");
	assert_int_equal(outfile_open(&o, p), 0);
	fputs("x\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(access(dead, F_OK), -1);
	assert_int_equal(access(live, F_OK), 0);
	assert_int_equal(access(other, F_OK), 0);
	assert_int_equal(access(other2, F_OK), 0);
	unlink(live);
	unlink(other);
	unlink(other2);
}

static void test_sudo_owner(void **state)
{
	struct outfile o;
	char p[128];
	struct stat st;
	(void) state;

	if (geteuid() != 0)
		return;
	path_of(p, sizeof(p), "sudo.folded");
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65534", 1);
	assert_int_equal(outfile_open(&o, p), 0);
	fputs("x\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_gid, 65534);
	setenv("SUDO_UID", "-1", 1);    /* not a uid: root keeps it */
	assert_int_equal(outfile_open(&o, p), 0);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 0);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
}

/* "/dev/stdout", "/proc/self/fd/N" and a link to one mean the descriptor: written there when it
 * is open, -EBADF when it is closed, and the link is never replaced by a file. */
static void test_descriptors(void **state)
{
	struct outfile o;
	char p[128], link[128], got[16] = "";
	int fds[2], status;
	struct stat st;
	pid_t child;
	(void) state;

	assert_int_equal(pipe(fds), 0);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fds[1]);
	assert_int_equal(outfile_open(&o, p), 0);
	assert_null(o.tmp);
	fputs("piped\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(read(fds[0], got, sizeof(got) - 1), 6);
	assert_string_equal(got, "piped\n");
	snprintf(p, sizeof(p), "/dev/fd/%d", fds[1]);
	assert_int_equal(outfile_open(&o, p), 0);
	outfile_abort(&o);
	close(fds[0]);
	close(fds[1]);

	/* closed: an error, and nothing created (fds[1] is closed now) */
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fds[1]);
	assert_int_equal(outfile_open(&o, p), -EBADF);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fds[1]);
	path_of(link, sizeof(link), "stdout-like");     /* as /dev/stdout is root's */
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(outfile_open(&o, link), -EBADF);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(hidden(), 0);
	unlink(link);

	/* a closed standard output, in a child */
	child = fork();
	if (child == 0) {
		close(STDOUT_FILENO);
		_exit(outfile_open(&o, "-") == -EBADF && outfile_open(&o, "/proc/self/fd/1") == -EBADF
		      ? 0 : 1);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

/* With 0, 1 and 2 closed, the output's descriptor is none of them: a stray printf() or a
 * command's inherited stdout never lands in the profile. */
static void test_above_std(void **state)
{
	int status;
	pid_t child = fork();
	(void) state;

	if (child == 0) {
		struct outfile o;
		char p[128];
		int ok;

		path_of(p, sizeof(p), "std.folded");
		close(STDIN_FILENO);
		close(STDOUT_FILENO);
		close(STDERR_FILENO);
		ok = outfile_open(&o, p) == 0 && fileno(o.f) > STDERR_FILENO;
		outfile_abort(&o);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	assert_int_equal(hidden(), 0);
}

/* A dangling link of the caller's is not replaced: the file is made where it points. */
static void test_dangling_own_link(void **state)
{
	struct outfile o;
	char link[128], target[128];
	struct stat st;
	(void) state;

	path_of(link, sizeof(link), "latest.folded");
	path_of(target, sizeof(target), "run4.folded");
	assert_int_equal(symlink("run4.folded", link), 0);
	assert_int_equal(outfile_open(&o, link), 0);
	assert_non_null(o.tmp);
	fputs("run4\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	expect(target, "run4\n");
	assert_int_equal(hidden(), 0);
	unlink(link);
	unlink(target);
}

/* What appeared at the path while it was written, if not a regular file or another user's
 * link, is not renamed over: -EEXIST, it stays, the temporary file goes. */
static void test_appeared(void **state)
{
	struct outfile o;
	char p[128];
	struct stat st;
	(void) state;

	path_of(p, sizeof(p), "fifo.folded");
	assert_int_equal(outfile_open(&o, p), 0);
	fputs("x\n", o.f);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(outfile_commit(&o), -EEXIST);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(hidden(), 0);
	unlink(p);

	assert_int_equal(outfile_open(&o, p), 0);
	assert_int_equal(symlink("elsewhere", p), 0);   /* the caller's own link */
	assert_int_equal(outfile_commit(&o), -EEXIST);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(hidden(), 0);
	unlink(p);
}

/* A directory link is followed only when root, the caller or the invoking user owns it:
 * "evil/link/x" (evil's link to a root directory) never replaces that directory's x. */
static void test_dir_links(void **state)
{
	struct outfile o;
	char evil[128], rootdir[128], link[192], out[224], victim[160];
	(void) state;

	if (geteuid() != 0)
		return;                 /* lchown to another user needs root */
	path_of(evil, sizeof(evil), "evil");
	path_of(rootdir, sizeof(rootdir), "rootdir");
	assert_int_equal(mkdir(evil, 0755), 0);
	assert_int_equal(chown(evil, 65534, 65534), 0);
	assert_int_equal(mkdir(rootdir, 0755), 0);
	snprintf(victim, sizeof(victim), "%s/x.folded", rootdir);
	put(victim, "precious\n");
	snprintf(link, sizeof(link), "%s/link", evil);
	assert_int_equal(symlink(rootdir, link), 0);
	assert_int_equal(lchown(link, 65534, 65534), 0);
	snprintf(out, sizeof(out), "%s/x.folded", link);
	assert_int_equal(outfile_open(&o, out), -ENOLINK);
	assert_null(o.f);
	expect(victim, "precious\n");
	/* through a link of root's to that link: refused too */
	{
		char hop[128], via[160];

		path_of(hop, sizeof(hop), "hop");
		assert_int_equal(symlink("evil/link", hop), 0);
		snprintf(via, sizeof(via), "%s/x.folded", hop);
		assert_int_equal(outfile_open(&o, via), -ENOLINK);
		unlink(hop);
	}
	expect(victim, "precious\n");

	/* the invoking user's (sudo) link is followed */
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65534", 1);
	assert_int_equal(outfile_open(&o, out), 0);
	fputs("sudo user's\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	expect(victim, "sudo user's\n");
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");

	/* and root's own */
	assert_int_equal(lchown(link, 0, 0), 0);
	assert_int_equal(outfile_open(&o, out), 0);
	fputs("root's\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	expect(victim, "root's\n");
	unlink(victim);
	unlink(link);
	rmdir(evil);
	rmdir(rootdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replace_and_abort),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_sudo_owner),
		cmocka_unit_test(test_descriptors),
		cmocka_unit_test(test_above_std),
		cmocka_unit_test(test_dangling_own_link),
		cmocka_unit_test(test_appeared),
		cmocka_unit_test(test_dir_links),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
