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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replace_and_abort),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_sudo_owner),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
