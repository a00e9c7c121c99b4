/* The folded reader: frame typing, counts, every malformed line, and the round trip through
 * folded_write() with hostile names; lines as perf's stackcollapse and py-spy write them. */
#include <errno.h>
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
#include "output_test.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static struct profile *new_profile(void)
{
	const char *ev[] = { "samples" };
	struct profile *p = profile_new(ev, 1);

	assert_non_null(p);
	return p;
}

/* Reads len bytes of text (NULs allowed) into p. */
static int read_bytes(struct profile *p, const char *text, size_t len, struct folded_read_error *err)
{
	FILE *f = tmpfile();
	int r;

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	rewind(f);
	r = folded_read(f, p, err);
	fclose(f);
	return r;
}

static int read_text(struct profile *p, const char *text, struct folded_read_error *err)
{
	return read_bytes(p, text, strlen(text), err);
}

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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The lines of text, sorted, joined by '\n' (text is cut up). */
static char *sorted_lines(char *text)
{
	char *lines[256], *save, *l;
	size_t n = 0;
	struct buf b;

	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		assert_true(n < N_ELEMS(lines));
		lines[n++] = l;
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	buf_init(&b);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(buf_printf(&b, "%s\n", lines[i]), 0);
	return buf_detach(&b);
}

static bool str_eq_null(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool frame_eq(const struct profile_frame *a, const struct profile_frame *b)
{
	return a->kind == b->kind && strcmp(a->name, b->name) == 0 && str_eq_null(a->file, b->file) &&
	       a->line == b->line && str_eq_null(a->module, b->module);
}

static void assert_frames(const struct profile *p, size_t stack, const struct profile_frame *want,
			  size_t n)
{
	const struct profile_stack *st = profile_stack(p, stack);

	assert_non_null(st);
	assert_int_equal(st->depth, n);
	assert_int_equal(st->tid, 0);
	for (size_t i = 0; i < n; i++) {
		const struct profile_frame *got = profile_frame(p, st->frames[i]);
		if (!frame_eq(got, &want[i]))
			fail_msg("frame %zu: got kind %d name '%s' file '%s' line %d module '%s', "
				 "want '%s'", i, got->kind, got->name, got->file ? got->file : "(null)",
				 got->line, got->module ? got->module : "(null)", want[i].name);
	}
}

static void test_frame_kinds(void **state)
{
	static const struct profile_frame want[] = {
		{ FRAME_THREAD, "[thread 12 python3 main]", NULL, 0, NULL },
		{ FRAME_PYTHON, "<module>", "/srv/train.py", 10, NULL },
		{ FRAME_PYTHON, "Model.forward", "model.py", 42, NULL },
		{ FRAME_PYTHON, "<lambda>", "x.py", 0, NULL },
		{ FRAME_PYTHON, "f (a)", "dir (copy)/b.py", 3, NULL },
		{ FRAME_PYTHON, "a:b", "file:with:colons.py", 9, NULL },
		{ FRAME_PYTHON, "h", "c.py:012", 0, NULL },          /* leading zero: part of the file */
		{ FRAME_PYTHON, "i", "d.py:0", 0, NULL },
		{ FRAME_PYTHON, "j", "e.py:99999999999", 0, NULL },  /* over INT_MAX */
		{ FRAME_PYTHON, "", "f.py", 1, NULL },
		{ FRAME_NATIVE, "deflate_slow", NULL, 0, "libz.so.1" },
		{ FRAME_NATIVE, "g [x]", NULL, 0, "lib [v2].so" },
		{ FRAME_NATIVE, "memcpy", NULL, 0, NULL },
		{ FRAME_NATIVE, "std::vector<int>::push_back(int const&)", NULL, 0, NULL },
		{ FRAME_NATIVE, "x (unbalanced", NULL, 0, NULL },
		{ FRAME_NATIVE, "x(y) [", NULL, 0, NULL },
		{ FRAME_NATIVE, "worker 12", NULL, 0, NULL },
		{ FRAME_NATIVE, "données\xff", NULL, 0, NULL },      /* bytes kept as they are */
		{ FRAME_KERNEL, "do_page_fault", NULL, 0, NULL },
		{ FRAME_KERNEL, "", NULL, 0, NULL },
		{ FRAME_SPECIAL, "[native]", NULL, 0, NULL },
		{ FRAME_SPECIAL, "[unknown]", NULL, 0, NULL },
		{ FRAME_SPECIAL, "[libc.so.6]", NULL, 0, NULL },
		{ FRAME_NATIVE, "[not special]", NULL, 0, NULL },
		{ FRAME_WAIT, "[wait: read fd 5 (pipe)]", NULL, 0, NULL },
		{ FRAME_WAIT, "[preempted]", NULL, 0, NULL },
		{ FRAME_NATIVE, "[wait: ]", NULL, 0, NULL },         /* no reason: not a wait */
	};
	const char *text =
		"[thread 12 python3 main];<module> (/srv/train.py:10);Model.forward (model.py:42);"
		"<lambda> (x.py);f (a) (dir (copy)/b.py:3);a:b (file:with:colons.py:9);h (c.py:012);"
		"i (d.py:0);j (e.py:99999999999); (f.py:1);deflate_slow [libz.so.1];"
		"g [x] [lib [v2].so];memcpy;std::vector<int>::push_back(int const&);x (unbalanced;"
		"x(y) [;worker 12;données\xff;do_page_fault_[k];_[k];[native];[unknown];[libc.so.6];"
		"[not special];[wait: read fd 5 (pipe)];[preempted];[wait: ] 5\n";
	struct profile *p = new_profile();
	struct folded_read_error err = { 99, "x" };
	(void) state;

	assert_int_equal(read_text(p, text, &err), 0);
	assert_int_equal(err.line, 0);
	assert_null(err.reason);
	assert_int_equal(profile_n_stacks(p), 1);
	assert_frames(p, 0, want, N_ELEMS(want));
	profile_free(p);
}

static void test_counts(void **state)
{
	const char *ev[] = { "cpu-clock", "page-faults" };
	struct profile *p = profile_new(ev, 2);
	const char *text =
		"\xef\xbb\xbf# a comment\n"
		"a;b 3\r\n"
		"\n"
		"   \n"
		"a;c 0\n"                       /* checked, adds nothing */
		"a;b 4\n"
		"a 18446744073709551000\n"
		"a;b 0005";                     /* no final newline */
	(void) state;

	assert_non_null(p);
	assert_int_equal(read_text(p, text, NULL), 0);
	assert_int_equal(profile_n_stacks(p), 2);
	for (size_t i = 0; i < 2; i++) {
		const uint64_t *v = profile_values(p, i);
		uint64_t want = profile_stack(p, i)->depth == 2 ? 12 : 18446744073709551000u;
		assert_true(v[0] == want && v[1] == want);
		assert_int_equal(v[2], 0);
	}
	assert_true(profile_total(p, 1) == 18446744073709551012u);
	/* a second file adds to the same stacks, and the 64-bit total is still watched */
	assert_int_equal(read_text(p, "a;b 600\n", NULL), 0);
	assert_true(profile_total(p, 1) == 18446744073709551612u);
	assert_int_equal(read_text(p, "a;b 4\n", NULL), -EOVERFLOW);
	profile_free(p);
}

static void test_malformed(void **state)
{
	static const struct {
		const char *text;
		size_t len;             /* 0: strlen */
		int ret;
		uint64_t line;
	} cases[] = {
		{ "a;b 1\nno_count\n", 0, -EINVAL, 2 },
		{ "a;b x\n", 0, -EINVAL, 1 },
		{ "a;b 1.5\n", 0, -EINVAL, 1 },
		{ "a;b -3\n", 0, -EINVAL, 1 },
		{ "a;b +3\n", 0, -EINVAL, 1 },
		{ "a;b 3x\n", 0, -EINVAL, 1 },
		{ "a;b \n", 0, -EINVAL, 1 },
		{ "a;b 5 \n", 0, -EINVAL, 1 },
		{ "a;b\t5\n", 0, -EINVAL, 1 },
		{ " 5\n", 0, -EINVAL, 1 },
		{ "# x\n\na 1\r\nb 2 x\r\n", 0, -EINVAL, 4 },
		{ "a;;b 5\n", 0, -EINVAL, 1 },
		{ ";a 5\n", 0, -EINVAL, 1 },
		{ "a 1\na; 5\n", 0, -EINVAL, 2 },
		{ "a 18446744073709551616\n", 0, -EOVERFLOW, 1 },
		{ "a 99999999999999999999999\n", 0, -EOVERFLOW, 1 },
		{ "a 18446744073709551615\nb 1\n", 0, -EOVERFLOW, 2 },
		{ "a 1\na\0b 1\n", 10, -EINVAL, 2 },
	};
	(void) state;

	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		struct profile *p = new_profile();
		struct folded_read_error err = { 0 };
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		int r = read_bytes(p, cases[i].text, len, &err);

		if (r != cases[i].ret || err.line != cases[i].line)
			fail_msg("case %zu: got %d at line %llu, want %d at line %llu", i, r,
				 (unsigned long long) err.line, cases[i].ret,
				 (unsigned long long) cases[i].line);
		assert_non_null(err.reason);
		assert_true(err.reason[0] != '\0');
		profile_free(p);
	}
}

static void test_limits(void **state)
{
	struct profile *p;
	struct folded_read_error err;
	struct buf b;
	(void) state;

	/* a line over 1 MiB */
	buf_init(&b);
	assert_int_equal(buf_puts(&b, "ok 1\n"), 0);
	for (size_t i = 0; i < FOLDED_READ_MAX_LINE; i++)
		assert_int_equal(buf_putc(&b, 'x'), 0);
	assert_int_equal(buf_puts(&b, " 1\n"), 0);
	p = new_profile();
	assert_int_equal(read_bytes(p, b.data, b.len, &err), -E2BIG);
	assert_int_equal(err.line, 2);
	assert_non_null(err.reason);
	profile_free(p);

	/* exactly FOLDED_READ_MAX_FRAMES frames is fine, one more is not */
	buf_reset(&b);
	for (size_t i = 0; i < FOLDED_READ_MAX_FRAMES; i++)
		assert_int_equal(buf_puts(&b, i ? ";f" : "f"), 0);
	assert_int_equal(buf_puts(&b, " 1\n"), 0);
	p = new_profile();
	assert_int_equal(read_bytes(p, b.data, b.len, &err), 0);
	assert_int_equal(profile_stack(p, 0)->depth, FOLDED_READ_MAX_FRAMES);
	profile_free(p);
	b.len -= 3;
	assert_int_equal(buf_puts(&b, ";f 1\n"), 0);
	p = new_profile();
	assert_int_equal(read_bytes(p, b.data, b.len, &err), -E2BIG);
	assert_int_equal(err.line, 1);
	assert_non_null(err.reason);
	profile_free(p);
	buf_release(&b);
}

/* folded_write(folded_read(text)) == text, line for line, and the total is kept. */
static void test_round_trip(void **state)
{
	const char *ev[] = { "cycles", "instructions" };
	struct profile *p = profile_new(ev, 2), *q = new_profile();
	uint32_t ids[] = {
		frame(p, FRAME_THREAD, "[thread 7 my [worker] (1)]", NULL, 0, NULL),
		frame(p, FRAME_PYTHON, "<module>", "/srv/my app (v2)/main.py", 1, NULL),
		frame(p, FRAME_PYTHON, "Klass.méthode", "données [copie].py", 42, NULL),
		frame(p, FRAME_PYTHON, "f (x) [y]", "a:b:c.py", 0, NULL),
		frame(p, FRAME_PYTHON, "g", "", 3, NULL),
		frame(p, FRAME_NATIVE, "operator() (int)", NULL, 0, "lib odd [1].so"),
		frame(p, FRAME_NATIVE, "plain symbol", NULL, 0, NULL),
		frame(p, FRAME_NATIVE, "日本語", NULL, 0, NULL),
		frame(p, FRAME_NATIVE, "\xff\xfe bytes", NULL, 0, "\xc3"),
		frame(p, FRAME_KERNEL, "asm_exc_page_fault", NULL, 0, NULL),
		frame(p, FRAME_SPECIAL, "[native]", NULL, 0, NULL),
		frame(p, FRAME_SPECIAL, "[unknown]", NULL, 0, NULL),
		/* only the text survives for these: written the same, typed otherwise */
		frame(p, FRAME_PYTHON, "h", "a(.py", 2, NULL),
		frame(p, FRAME_NATIVE, "n 12", NULL, 0, NULL),
	};
	const size_t n_exact = 12;
	uint64_t v1[] = { 1, 1000, 7 }, v2[] = { 2, 5, 0 }, v3[] = { 1, 0, 3 };
	char *text, *again, *s1, *s2;
	(void) state;

	assert_non_null(p);
	for (size_t i = 0; i < N_ELEMS(ids); i++) {
		uint32_t st[3] = { ids[0], ids[1], ids[i] };
		assert_int_equal(profile_add(p, 7, st, i < 2 ? i + 1 : 3, v1), 0);
		assert_int_equal(profile_add(p, 8, st, i < 2 ? i + 1 : 3, v2), 0);
		assert_int_equal(profile_add(p, 9, &ids[i], 1, v3), 0);  /* 0 in column 1 */
		assert_int_equal(profile_add(p, 9, &ids[i], 1, v3), 0);
	}
	text = write_folded(p, 1);
	assert_int_equal(read_text(q, text, NULL), 0);
	again = write_folded(q, 1);
	s1 = sorted_lines(text);
	s2 = sorted_lines(again);
	assert_string_equal(s1, s2);
	assert_true(profile_total(q, 1) == profile_total(p, 1));
	assert_true(profile_total(q, 0) == profile_total(p, 1));
	/* the frames that carry no ambiguity come back with every field */
	for (size_t i = 0; i < n_exact; i++) {
		const struct profile_frame *want = profile_frame(p, ids[i]);
		bool found = false;
		for (uint32_t j = 0; j < profile_n_frames(q) && !found; j++)
			found = frame_eq(profile_frame(q, j), want);
		if (!found)
			fail_msg("frame '%s' did not come back", want->name);
	}
	free(text);
	free(again);
	free(s1);
	free(s2);
	profile_free(p);
	profile_free(q);
}

/* perf script | stackcollapse-perf.pl (with --pid and --kernel annotations) */
static void test_perf_stackcollapse(void **state)
{
	static const struct profile_frame want[] = {
		{ FRAME_NATIVE, "python3-4242/4250", NULL, 0, NULL },
		{ FRAME_NATIVE, "_start", NULL, 0, NULL },
		{ FRAME_NATIVE, "__libc_start_main", NULL, 0, NULL },
		{ FRAME_NATIVE, "Py_BytesMain", NULL, 0, NULL },
		{ FRAME_NATIVE, "_PyEval_EvalFrameDefault", NULL, 0, NULL },
		{ FRAME_SPECIAL, "[libcrypto.so.3]", NULL, 0, NULL },
		{ FRAME_NATIVE, "__GI___libc_read", NULL, 0, NULL },
		{ FRAME_KERNEL, "entry_SYSCALL_64_after_hwframe", NULL, 0, NULL },
		{ FRAME_KERNEL, "do_syscall_64", NULL, 0, NULL },
		{ FRAME_KERNEL, "ksys_read", NULL, 0, NULL },
	};
	const char *text =
		"python3-4242/4250;_start;__libc_start_main;Py_BytesMain;_PyEval_EvalFrameDefault;"
		"[libcrypto.so.3];__GI___libc_read;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];"
		"ksys_read_[k] 31\n"
		"python3-4242/4250;_start;__libc_start_main;Py_BytesMain;_PyEval_EvalFrameDefault;"
		"[libcrypto.so.3];__GI___libc_read;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];"
		"ksys_read_[k] 11\n"
		"swapper;secondary_startup_64_no_verify_[k];cpu_startup_entry_[k];do_idle_[k] 1203\n";
	struct profile *p = new_profile();
	(void) state;

	assert_int_equal(read_text(p, text, NULL), 0);
	assert_int_equal(profile_n_stacks(p), 2);
	assert_frames(p, 0, want, N_ELEMS(want));
	assert_int_equal(profile_values(p, 0)[1], 42);
	assert_int_equal(profile_values(p, 1)[1], 1203);
	profile_free(p);
}

/* py-spy record --format raw (with --threads and --idle) */
static void test_pyspy_raw(void **state)
{
	static const struct profile_frame want[] = {
		{ FRAME_PYTHON, "<module>", "train.py", 10, NULL },
		{ FRAME_PYTHON, "step", "model.py", 42, NULL },
	};
	static const struct profile_frame want_thread[] = {
		{ FRAME_PYTHON, "thread", "0x7F3A2C1B5740", 0, NULL },
		{ FRAME_PYTHON, "<module>", "/home/me/train.py", 10, NULL },
		{ FRAME_PYTHON, "wait", "/usr/lib/python3.11/threading.py", 324, NULL },
	};
	const char *text =
		"<module> (train.py:10);step (model.py:42) 17\n"
		"thread (0x7F3A2C1B5740);<module> (/home/me/train.py:10);"
		"wait (/usr/lib/python3.11/threading.py:324) 230\n"
		"<module> (train.py:10);step (model.py:42) 3\n";
	struct profile *p = new_profile();
	(void) state;

	assert_int_equal(read_text(p, text, NULL), 0);
	assert_int_equal(profile_n_stacks(p), 2);
	assert_frames(p, 0, want, N_ELEMS(want));
	assert_frames(p, 1, want_thread, N_ELEMS(want_thread));
	assert_int_equal(profile_values(p, 0)[0], 20);
	assert_int_equal(profile_total(p, 1), 250);
	profile_free(p);
}

/* austin: `P<pid>;T<thread>;file:function:line;... COUNT`, with its "# mode:" header */
static void test_austin(void **state)
{
	static const struct profile_frame want[] = {
		{ FRAME_THREAD, "[thread 0x7f45645646]", NULL, 0, NULL },
		{ FRAME_PYTHON, "foo", "foo_module.py", 10, NULL },
		{ FRAME_PYTHON, "bar", "/srv/bar sample.py", 20, NULL },
	};
	static const struct profile_frame want_odd[] = {
		{ FRAME_THREAD, "[thread 0:4242]", NULL, 0, NULL },
		{ FRAME_PYTHON, "_find_and_load", "<frozen importlib._bootstrap>", 0, NULL },
		{ FRAME_NATIVE, "no_colons", NULL, 0, NULL },
		{ FRAME_PYTHON, "f", "C:\\x.py", 3, NULL },
	};
	static const struct profile_frame want_idle[] = {
		{ FRAME_THREAD, "[thread 0x7f4564aaaa]", NULL, 0, NULL },
	};
	const char *text =
		"# austin: 3.6.0\n# mode: wall\n\n"
		"P42;T0x7f45645646;foo_module.py:foo:10;/srv/bar sample.py:bar:20 1000\n"
		"P42;T0:4242;<frozen importlib._bootstrap>:_find_and_load:0;no_colons;C:\\x.py:f:3 5\n"
		"P42;T0x7f4564aaaa 7\n"
		"P42;T0x7f45645646;foo_module.py:foo:10;/srv/bar sample.py:bar:20 24\n";
	struct profile *p = new_profile();
	(void) state;

	assert_int_equal(read_text(p, text, NULL), 0);
	assert_int_equal(profile_n_stacks(p), 3);
	assert_frames(p, 0, want, N_ELEMS(want));
	assert_frames(p, 1, want_odd, N_ELEMS(want_odd));
	assert_frames(p, 2, want_idle, N_ELEMS(want_idle));
	assert_int_equal(profile_values(p, 0)[1], 1024);
	assert_int_equal(profile_total(p, 1), 1036);
	profile_free(p);
}

static void test_empty_input(void **state)
{
	struct profile *p = new_profile();
	struct folded_read_error err;
	(void) state;

	assert_int_equal(read_text(p, "", &err), 0);
	assert_int_equal(read_text(p, "# only a comment\n\n", &err), 0);
	assert_int_equal(profile_n_stacks(p), 0);
	profile_free(p);
}

/* The header line: written where the profile names its event or knows its length, read back
 * into a folded file's "samples" profile; a hostile or misplaced one is only a comment. */
static void test_header(void **state)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1), *q = new_profile(), *h;
	struct folded_opts o = { .column = 1, .header = true };
	uint32_t id;
	uint64_t v[2] = { 5, 5 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void) state;
	assert_non_null(p);
	assert_non_null(f);
	assert_int_equal(profile_frame_id(p, &(struct profile_frame) { .kind = FRAME_PYTHON,
					   .name = "f", .file = "a.py", .line = 1 }, &id), 0);
	assert_int_equal(profile_add(p, 0, &id, 1, v), 0);
	profile_meta(p)->duration_ns = 2500000000ULL;
	assert_int_equal(folded_write(p, &o, f), 0);
	fclose(f);
	assert_string_equal(text, "# hwspy event=cpu-clock duration_ns=2500000000\nf (a.py:1) 5\n");
	assert_int_equal(read_text(q, text, NULL), 0);
	assert_string_equal(profile_event(q, 0)->name, "cpu-clock");
	assert_int_equal(profile_meta_const(q)->duration_ns, 2500000000ULL);
	assert_int_equal(profile_total(q, 1), 5);
	free(text);
	profile_free(q);

	/* a folded file's own "samples" and no length: no header, as other tools' files */
	q = new_profile();
	assert_int_equal(read_text(q, "g 3\n", NULL), 0);
	text = write_folded(q, 1);
	assert_string_equal(text, "g 3\n");
	free(text);
	profile_free(q);

	/* hostile: a ';' in the name, an overflowing or non-numeric length, after a stack */
	static const char *bad[] = {
		"# hwspy event=a;b duration_ns=18446744073709551616\nf 1\n",
		"# hwspy duration_ns=12x event=\nf 1\n",
		"f 1\n# hwspy event=cycles duration_ns=7\n",
		"# hwspyevent=cycles\nf 1\n",
	};
	for (size_t i = 0; i < N_ELEMS(bad); i++) {
		h = new_profile();
		assert_int_equal(read_text(h, bad[i], NULL), 0);
		assert_string_equal(profile_event(h, 0)->name, "samples");
		assert_int_equal(profile_meta_const(h)->duration_ns, 0);
		assert_int_equal(profile_total(h, 1), 1);
		profile_free(h);
	}
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_kinds),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_perf_stackcollapse),
		cmocka_unit_test(test_pyspy_raw),
		cmocka_unit_test(test_austin),
		cmocka_unit_test(test_empty_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
