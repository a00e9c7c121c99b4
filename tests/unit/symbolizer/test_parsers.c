/* The text parsers on fixtures: /proc/PID/maps lines, kallsyms (kallsyms.txt), perf maps
 * (perf-map.txt, malformed lines included), and the string pool; sym_open_planted() on files a
 * target could plant (a FIFO, links, another user's file, a big one). argv[1]: this folder. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "symbolizer/symbolizer_internal.h"

static const char *dir = ".";

static void fixture(char *path, size_t size, const char *name)
{
	snprintf(path, size, "%s/%s", dir, name);
}

static void test_maps_lines(void **state)
{
	struct maps_line l;
	char a[] = "55e48d3a7000-55e48d3ab020 r-xp 00001000 fd:01 1234567   /usr/bin/python3.11";
	char b[] = "7fff1000-7fff2000 rw-p 00000000 00:00 0 ";
	char c[] = "7f400f436000-7f400f437000 r-xp 00000000 00:00 0                          [vdso]";
	char d[] = "7f0000000000-7f0000001000 r-xp 00002000 08:02 42 /tmp/a b (deleted)";
	char bad1[] = "7f00-7e00 r-xp 00000000 00:00 0";
	char bad2[] = "garbage";
	char bad3[] = "7f00-7f10 r-xp";
	char bad4[] = "11112222333344445-7f10 r-xp 00000000 00:00 0";
	char bad5[] = "";

	(void) state;
	assert_int_equal(maps_parse_line(a, &l), 0);
	assert_int_equal(l.start, 0x55e48d3a7000);
	assert_int_equal(l.end, 0x55e48d3ab020);
	assert_string_equal(l.perms, "r-xp");
	assert_int_equal(l.pgoff, 0x1000);
	assert_int_equal(l.dev_major, 0xfd);
	assert_int_equal(l.dev_minor, 1);
	assert_int_equal(l.ino, 1234567);
	assert_string_equal(l.path, "/usr/bin/python3.11");
	assert_int_equal(maps_parse_line(b, &l), 0);
	assert_string_equal(l.path, "");
	assert_int_equal(maps_parse_line(c, &l), 0);
	assert_string_equal(l.path, "[vdso]");
	assert_int_equal(maps_parse_line(d, &l), 0);
	assert_string_equal(l.path, "/tmp/a b (deleted)");
	assert_int_equal(maps_parse_line(bad1, &l), -EINVAL);
	assert_int_equal(maps_parse_line(bad2, &l), -EINVAL);
	assert_int_equal(maps_parse_line(bad3, &l), -EINVAL);
	assert_int_equal(maps_parse_line(bad4, &l), -EINVAL);
	assert_int_equal(maps_parse_line(bad5, &l), -EINVAL);
}

static void test_kallsyms(void **state)
{
	struct strpool pool;
	struct kallsyms k;
	const struct ksym *s;
	char path[512];
	FILE *f;

	(void) state;
	strpool_init(&pool);
	kallsyms_init(&k);
	fixture(path, sizeof(path), "kallsyms.txt");
	assert_int_equal(kallsyms_load(&k, &pool, path), 0);
	assert_int_equal(k.n, 8);   /* text symbols only; malformed lines skipped */
	s = kallsyms_find(&k, 0xffffffff81001500);
	assert_non_null(s);
	assert_string_equal(s->name, "early_helper");
	assert_string_equal(s->module, "[kernel.kallsyms]");
	s = kallsyms_find(&k, 0xffffffff81003500);   /* past 'some_data' (D): still schedule */
	assert_non_null(s);
	assert_true(strncmp(s->name, "schedule", 8) == 0);
	s = kallsyms_find(&k, 0xffffffffc0001010);
	assert_non_null(s);
	assert_string_equal(s->name, "nft_do_chain");
	assert_string_equal(s->module, "[nf_tables]");
	assert_null(kallsyms_find(&k, 0xfffffffe00000000));
	assert_null(kallsyms_find(&k, 0xffffffffc0002000 + (4u << 20)));
	assert_int_equal(kallsyms_load(&k, &pool, "/nonexistent/kallsyms"), -ENOENT);
	assert_int_equal(k.n, 0);

	/* kptr_restrict: every address zero */
	snprintf(path, sizeof(path), "/tmp/hwspy-kallsyms-%d", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("0000000000000000 T _text\n0000000000000000 T schedule\n", f);
	fclose(f);
	assert_int_equal(kallsyms_load(&k, &pool, path), -EACCES);
	assert_null(kallsyms_find(&k, 0x1000));
	unlink(path);
	kallsyms_release(&k);
	strpool_release(&pool);
}

static void test_perfmap(void **state)
{
	struct strpool pool;
	struct perfmap pm;
	char path[512], *real;
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	(void) state;
	assert_true(root >= 0);
	strpool_init(&pool);
	perfmap_init(&pm);
	fixture(path, sizeof(path), "perf-map.txt");
	real = realpath(path, NULL);
	assert_non_null(real);
	assert_int_equal(perfmap_load(&pm, &pool, root, real, getuid()), 0);
	/* the last line has no newline yet: a JIT is still writing it */
	assert_int_equal(pm.n, 5);
	assert_int_equal(pm.malformed, 8);
	assert_string_equal(perfmap_find(&pm, 0x7f0000001005)->name, "replacement_of_outer_start");
	assert_string_equal(perfmap_find(&pm, 0x7f0000001020)->name, "py::outer:/app/main.py");
	assert_string_equal(perfmap_find(&pm, 0x7f0000001045)->name, "py::inner:/app/main.py");
	assert_string_equal(perfmap_find(&pm, 0x7f00000020ff)->name, "name with spaces (and parens)");
	assert_null(perfmap_find(&pm, 0x7f0000002100));
	assert_string_equal(perfmap_find(&pm, 0x7f0000006000)->name, "crlf_line");
	assert_null(perfmap_find(&pm, 0x7f0000003000));
	assert_null(perfmap_find(&pm, 0x7f0000007000));
	assert_null(perfmap_find(&pm, 0));

	{
		const char text[] = "1000 10 a\n1000 10 b\n1008 4 c\n2000 10 d";

		assert_int_equal(perfmap_parse(&pm, &pool, text, sizeof(text) - 1), 0);
		assert_int_equal(pm.n, 4);
		assert_int_equal(pm.malformed, 0);
		assert_string_equal(perfmap_find(&pm, 0x1001)->name, "b");
		assert_string_equal(perfmap_find(&pm, 0x1009)->name, "c");
		assert_string_equal(perfmap_find(&pm, 0x100c)->name, "b");
		assert_string_equal(perfmap_find(&pm, 0x2000)->name, "d");
		assert_int_equal(perfmap_parse(&pm, &pool, "", 0), 0);
		assert_int_equal(pm.n, 0);
	}
	{
		/* a name with a NUL byte, and an overlong line */
		char text[SYM_MAX_LINE + 64];

		memcpy(text, "1000 10 a\0b\n", 12);
		assert_int_equal(perfmap_parse(&pm, &pool, text, 12), 0);
		assert_int_equal(pm.malformed, 1);
		memset(text, 'x', sizeof(text));
		memcpy(text, "1000 10 ", 8);
		assert_int_equal(perfmap_parse(&pm, &pool, text, sizeof(text)), 0);
		assert_int_equal(pm.n, 0);
		assert_int_equal(pm.malformed, 1);
	}
	assert_int_equal(perfmap_load(&pm, &pool, root, "/nonexistent/perf-1.map", getuid()),
			 -ENOENT);
	free(real);
	(void) close(root);
	perfmap_release(&pm);
	strpool_release(&pool);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + t.tv_nsec / 1e9;
}

/* What a target can put where hwspy opens its files: a FIFO (opening it to read would wait for
 * a writer, for good), links (to a root-only file; an absolute one inside a container's root
 * leads to the host's), another user's file, a file past the size bound. */
static void test_planted(void **state)
{
	char tmp[] = "/tmp/hwspy-planted-XXXXXX", p[256];
	struct strpool pool;
	struct perfmap pm;
	struct stat st;
	double t0;
	int d, fd;
	FILE *f;

	(void) state;
	assert_non_null(mkdtemp(tmp));
	d = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(d >= 0);
	snprintf(p, sizeof(p), "%s/map", tmp);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("1000 10 planted_name\n", f);
	fclose(f);
	assert_int_equal(mkdir(strcat(strcpy(p, tmp), "/etc"), 0755), 0);
	assert_int_equal(mkfifo(strcat(strcpy(p, tmp), "/fifo"), 0644), 0);
	assert_int_equal(symlink("map", strcat(strcpy(p, tmp), "/link")), 0);
	assert_int_equal(symlink("/etc", strcat(strcpy(p, tmp), "/abs")), 0);
	assert_int_equal(symlink(".", strcat(strcpy(p, tmp), "/dir")), 0);

	/* the file itself */
	fd = sym_open_planted(d, "map", 0, getuid(), 1024, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 21);
	(void) close(fd);
	/* a FIFO: refused at once, not waited on */
	t0 = now_s();
	assert_int_equal(sym_open_planted(d, "fifo", 0, getuid(), 1024, NULL), -EINVAL);
	assert_int_equal(sym_open_planted(d, "fifo", SYM_PLANT_FOLLOW, (uid_t) -1, 1024, NULL),
			 -EINVAL);
	assert_true(now_s() - t0 < 1.0);
	/* a link: not followed, unless asked; then inside d */
	assert_int_equal(sym_open_planted(d, "link", 0, getuid(), 1024, NULL), -EINVAL);
	fd = sym_open_planted(d, "link", SYM_PLANT_FOLLOW, getuid(), 1024, NULL);
	assert_true(fd >= 0);
	(void) close(fd);
	/* /etc/passwd through an absolute link, resolved in d: d's etc, where there is none */
	assert_int_equal(sym_open_planted(d, "abs/passwd", SYM_PLANT_FOLLOW, (uid_t) -1, 1 << 20,
					  NULL), -ENOENT);
	assert_int_equal(sym_open_planted(d, "../../etc/passwd", 0, (uid_t) -1, 1 << 20, NULL),
			 -ENOENT);
	/* a link on the way: refused where no link may be */
	fd = sym_open_planted(d, "dir/map", 0, getuid(), 1024, NULL);
	assert_true(fd >= 0);
	(void) close(fd);
	assert_true(sym_open_planted(d, "dir/map", SYM_PLANT_NO_LINKS, getuid(), 1024, NULL) < 0);
	/* too big */
	assert_int_equal(sym_open_planted(d, "map", 0, getuid(), 20, NULL), -EFBIG);
	/* another user's (root may give it away; root's own files are always taken) */
	if (geteuid() == 0) {
		assert_int_equal(chown(strcat(strcpy(p, tmp), "/map"), 12345, 12345), 0);
		assert_int_equal(sym_open_planted(d, "map", 0, 54321, 1024, NULL), -EPERM);
		fd = sym_open_planted(d, "map", 0, 12345, 1024, NULL);
		assert_true(fd >= 0);
		(void) close(fd);
		assert_int_equal(chown(p, 0, 0), 0);
		fd = sym_open_planted(d, "map", 0, 54321, 1024, NULL);
		assert_true(fd >= 0);
		(void) close(fd);
	} else {
		print_message("# not root: another user's file not tried\n");
	}
	/* the perf map reader goes through it */
	strpool_init(&pool);
	perfmap_init(&pm);
	assert_int_equal(perfmap_load(&pm, &pool, d, "fifo", getuid()), -EINVAL);
	assert_int_equal(perfmap_load(&pm, &pool, d, "link", getuid()), -EINVAL);
	assert_int_equal(pm.n, 0);
	assert_int_equal(perfmap_load(&pm, &pool, d, "map", getuid()), 0);
	assert_string_equal(perfmap_find(&pm, 0x1000)->name, "planted_name");
	perfmap_release(&pm);
	strpool_release(&pool);

	(void) close(d);
	for (size_t i = 0; i < 6; i++) {
		static const char *const names[] = { "map", "fifo", "link", "abs", "dir", "etc" };

		snprintf(p, sizeof(p), "%s/%s", tmp, names[i]);
		(void) (i == 5 ? rmdir(p) : unlink(p));
	}
	assert_int_equal(rmdir(tmp), 0);
}

static void test_strpool(void **state)
{
	struct strpool pool;
	const char *a, *b, *c;
	char big[100000];

	(void) state;
	strpool_init(&pool);
	a = strpool_intern(&pool, "hello world", 5);
	assert_string_equal(a, "hello");
	b = strpool_intern(&pool, "hello", 5);
	assert_ptr_equal(a, b);
	c = strpool_intern(&pool, "hell", 4);
	assert_ptr_not_equal(a, c);
	assert_string_equal(c, "hell");
	for (int i = 0; i < 20000; i++) {
		char s[32];
		int n = snprintf(s, sizeof(s), "sym_%d", i);

		assert_string_equal(strpool_intern(&pool, s, (size_t)n), s);
	}
	memset(big, 'y', sizeof(big));
	a = strpool_intern(&pool, big, sizeof(big));
	assert_non_null(a);
	assert_int_equal(strlen(a), sizeof(big));
	assert_ptr_equal(strpool_intern(&pool, "sym_123", 7), strpool_intern(&pool, "sym_123", 7));
	assert_string_equal(b, "hello");
	strpool_release(&pool);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_lines),
		cmocka_unit_test(test_kallsyms),
		cmocka_unit_test(test_perfmap),
		cmocka_unit_test(test_planted),
		cmocka_unit_test(test_strpool),
	};

	if (argc > 1)
		dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
