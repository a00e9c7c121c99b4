/* The folded writer: frame texts, merging of identical lines, hostile names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "output/output.h"

static char *write_folded(const struct profile *p, size_t column)
{
	struct folded_opts o = { .column = column };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(folded_write(p, &o, f), 0);
	fclose(f);
	return text;
}

static uint32_t frame(struct profile *p, enum frame_kind kind, const char *name, const char *file, int line)
{
	struct profile_frame f = { kind, name, file, line, NULL };
	uint32_t id;

	assert_int_equal(profile_frame_id(p, &f, &id), 0);
	return id;
}

static void test_frame_texts(void **state)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1);
	struct buf b;
	(void) state;

	buf_init(&b);
	struct {
		enum frame_kind kind;
		const char *name, *file;
		int line;
		const char *want;
	} cases[] = {
		{ FRAME_PYTHON, "Model.forward", "/srv/model.py", 42, "Model.forward (/srv/model.py:42)" },
		{ FRAME_PYTHON, "<module>", "x.py", 0, "<module> (x.py)" },
		{ FRAME_PYTHON, "a;b", "c;d.py", 1, "a_b (c_d.py:1)" },
		{ FRAME_PYTHON, "new\nline", "tab\t.py", 2, "new_line (tab_.py:2)" },
		{ FRAME_PYTHON, "calculé", "données.py", 7, "calculé (données.py:7)" },
		{ FRAME_NATIVE, "memcpy", NULL, 0, "memcpy" },
		{ FRAME_NATIVE, "deflate_slow", "libz.so.1", 0, "deflate_slow [libz.so.1]" },
		{ FRAME_NATIVE, "libz.so.1+0x1f00", "libz.so.1", 0, "libz.so.1+0x1f00 [libz.so.1]" },
		{ FRAME_NATIVE, "f", "lib;x\n.so", 0, "f [lib_x_.so]" },
		{ FRAME_KERNEL, "do_page_fault", NULL, 0, "do_page_fault_[k]" },
		{ FRAME_SPECIAL, "[native]", NULL, 0, "[native]" },
		{ FRAME_NATIVE, "worker 12", NULL, 0, "worker_12" },      /* never ends in " digits" */
		{ FRAME_NATIVE, "v 1 2", NULL, 0, "v 1_2" },
		{ FRAME_THREAD, "[thread 12 python3]", NULL, 0, "[thread 12 python3]" },
		{ FRAME_NATIVE, "", NULL, 0, "[unnamed]" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* for native frames the file column of the table holds the module */
		bool native = cases[i].kind == FRAME_NATIVE;
		struct profile_frame f = { cases[i].kind, cases[i].name, native ? NULL : cases[i].file,
					   cases[i].line, native ? cases[i].file : NULL };
		buf_reset(&b);
		assert_int_equal(folded_frame_text(&f, &b), 0);
		assert_string_equal(b.data, cases[i].want);
	}
	buf_release(&b);
	profile_free(p);
}

static void test_write_merges_and_orders(void **state)
{
	const char *ev[] = { "cpu-clock", "page-faults" };
	struct profile *p = profile_new(ev, 2);
	uint32_t m = frame(p, FRAME_PYTHON, "<module>", "w.py", 1);
	uint32_t f = frame(p, FRAME_PYTHON, "f", "w.py", 5);
	uint32_t g = frame(p, FRAME_PYTHON, "g", "w.py", 9);
	uint32_t s1[] = { m, f }, s2[] = { m, g }, s3[] = { m, f, g };
	uint64_t v1[] = { 1, 10000000, 3 }, v2[] = { 1, 10000000, 0 };
	char *text;
	(void) state;

	assert_int_equal(profile_add(p, 100, s1, 2, v1), 0);
	assert_int_equal(profile_add(p, 101, s1, 2, v1), 0);   /* other thread, same text: merged */
	assert_int_equal(profile_add(p, 100, s2, 2, v2), 0);
	assert_int_equal(profile_add(p, 100, s3, 3, v1), 0);
	text = write_folded(p, 1);
	assert_string_equal(text, "<module> (w.py:1);f (w.py:5) 20000000\n"
				  "<module> (w.py:1);g (w.py:9) 10000000\n"
				  "<module> (w.py:1);f (w.py:5);g (w.py:9) 10000000\n");
	free(text);
	/* page-faults column: stacks with zero weight are left out */
	text = write_folded(p, 2);
	assert_string_equal(text, "<module> (w.py:1);f (w.py:5) 6\n"
				  "<module> (w.py:1);f (w.py:5);g (w.py:9) 3\n");
	free(text);
	profile_free(p);
}

static void test_every_line_parses(void **state)
{
	const char *ev[] = { "cycles" };
	struct profile *p = profile_new(ev, 1);
	const char *hostile[] = { "a;b;c", "x\ny", "9", "end 99", "\x01\x02", "tab\tname 5",
				  "\xff\xfe bad utf8", "semi;colon 3" };
	uint64_t v[] = { 1, 5 };
	char *text, *line, *save;
	(void) state;

	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		uint32_t ids[2] = { frame(p, FRAME_NATIVE, "root", NULL, 0),
				    frame(p, FRAME_NATIVE, hostile[i], NULL, 0) };
		assert_int_equal(profile_add(p, 1, ids, 2, v), 0);
	}
	text = write_folded(p, 1);
	int lines = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		assert_non_null(sp);
		assert_string_equal(sp + 1, "5");
		*sp = '\0';
		/* exactly two frames, and the leaf does not end in " <digits>" */
		char *semi = strchr(line, ';');
		assert_non_null(semi);
		assert_null(strchr(semi + 1, ';'));
		char *leaf_sp = strrchr(semi + 1, ' ');
		if (leaf_sp)
			assert_true(leaf_sp[1] == '\0' || strspn(leaf_sp + 1, "0123456789") < strlen(leaf_sp + 1));
		for (char *c = line; *c; c++)
			assert_true((unsigned char) *c >= 0x20 && *c != 0x7f);
		lines++;
	}
	assert_int_equal(lines, 8);
	free(text);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_texts),
		cmocka_unit_test(test_write_merges_and_orders),
		cmocka_unit_test(test_every_line_parses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
