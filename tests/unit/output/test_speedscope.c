/* The speedscope writer: escaping, UTF-8 repair, which profiles are written, time order.
 *
 * `test_output_speedscope --write DIR` writes DIR/out.speedscope.json and DIR/out.txt (merged
 * stacks), DIR/logged.speedscope.json and DIR/logged.txt (a time-ordered log, thread names) for
 * check_speedscope.py, which validates each file against speedscope's schema and checks every
 * index, stack and total against its .txt (frame texts there are hex: no escaping). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "output/output.h"
#include "output_test.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const hostile[] = {
	"quote\"back\\slash",
	"ctl\x01\x1f\n\t\x7f",
	"bad\xff\xc0\xed\xa0\x80 utf8",
	"cut \xe6\x97",                 /* a 3-byte sequence missing its last byte */
	"日本語 é 🐍",
	"</script><b>&amp;",
	"",
};

/* Events cpu-clock, cache-misses:u (nothing on thread 5678) and page-faults (all 0); threads
 * 1234 and 5678 and stacks without a thread (tid 0). */
static struct profile *build_profile(void)
{
	const char *ev[] = { "cpu-clock", "cache-misses:u", "page-faults" };
	struct profile *p = profile_new(ev, 3);
	uint32_t root, py, nat, k;

	assert_non_null(p);
	assert_int_equal(profile_set_target(p, "pid 42 (python3 \"x\")"), 0);
	root = frame(p, FRAME_THREAD, "[thread 1234 python3]", NULL, 0, NULL);
	py = frame(p, FRAME_PYTHON, "<module>", "/srv/app (v2)/main.py", 10, NULL);
	nat = frame(p, FRAME_NATIVE, "deflate_slow", NULL, 0, "libz.so.1");
	k = frame(p, FRAME_KERNEL, "asm_exc_page_fault", NULL, 0, NULL);
	for (size_t i = 0; i < N_ELEMS(hostile); i++) {
		uint32_t h = frame(p, i % 2 ? FRAME_PYTHON : FRAME_NATIVE, hostile[i],
				   i % 2 ? hostile[i] : NULL, (int) i, i % 2 ? NULL : hostile[i]);
		uint32_t s1[] = { root, py, h }, s2[] = { py, nat, h, k }, s3[] = { h };
		uint64_t v1[] = { 1, 1000000 * (i + 1), 3, 0 }, v2[] = { 2, 2000000, 0, 0 };
		uint64_t v3[] = { 1, 10, 1, 0 };

		assert_int_equal(profile_add(p, 1234, s1, 3, v1), 0);
		assert_int_equal(profile_add(p, 1234, s2, 4, v1), 0);
		assert_int_equal(profile_add(p, 5678, s2, 4, v2), 0);
		assert_int_equal(profile_add(p, 0, s3, 1, v3), 0);
	}
	/* weight 0 in every column: in no profile */
	uint32_t z[] = { nat };
	uint64_t vz[] = { 0, 0, 0, 0 };
	assert_int_equal(profile_add(p, 5678, z, 1, vz), 0);
	return p;
}

static char *write_speedscope(const struct profile *p, const struct speedscope_opts *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(speedscope_write(p, o, f), 0);
	fclose(f);
	assert_int_equal(strlen(text), len);
	return text;
}

static size_t count(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *s = strstr(text, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

static void test_strings_escaped(void **state)
{
	struct profile *p = build_profile();
	char *text = write_speedscope(p, NULL);
	(void) state;

	assert_non_null(strstr(text, "\"quote\\\"back\\\\slash\""));
	assert_non_null(strstr(text, "\"ctl\\u0001\\u001f\\u000a\\u0009\x7f\""));
	/* one U+FFFD per maximal invalid subsequence, as Python and browsers decode */
	assert_non_null(strstr(text, "\"bad\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd utf8\""));
	assert_non_null(strstr(text, "\"cut \\ufffd\""));
	assert_non_null(strstr(text, "\"日本語 é 🐍\""));
	assert_non_null(strstr(text, "\"name\":\"pid 42 (python3 \\\"x\\\")\""));
	assert_non_null(strstr(text, "\"exporter\":\"hwspy " HWSPY_VERSION "\""));
	/* no raw control character but the newlines between items */
	for (const char *c = text; *c; c++)
		assert_true((unsigned char) *c >= 0x20 || *c == '\n');
	free(text);
	profile_free(p);
}

static void test_frames(void **state)
{
	struct profile *p = build_profile();
	char *text = write_speedscope(p, NULL);
	(void) state;

	assert_non_null(strstr(text, "{\"name\":\"[thread 1234 python3]\"}"));
	assert_non_null(strstr(text, "{\"name\":\"<module>\",\"file\":\"/srv/app (v2)/main.py\",\"line\":10}"));
	assert_non_null(strstr(text, "{\"name\":\"deflate_slow\",\"file\":\"libz.so.1\"}"));
	assert_non_null(strstr(text, "{\"name\":\"asm_exc_page_fault\",\"file\":\"[kernel.kallsyms]\"}"));
	assert_int_equal(count(text, "{\"name\":"), profile_n_frames(p));
	free(text);
	profile_free(p);
}

static void test_profiles_chosen(void **state)
{
	struct profile *p = build_profile();
	struct speedscope_opts o = { .name = "run 1" };
	char *text = write_speedscope(p, &o);
	const char *a, *b, *c, *d;
	(void) state;

	/* cpu-clock: all threads, 1234, 5678; cache-misses:u: all threads, 1234; page-faults: none */
	assert_int_equal(count(text, "\"type\":\"sampled\""), 5);
	a = strstr(text, "\"cpu-clock, all threads\"");
	b = strstr(text, "\"cpu-clock, thread 1234\"");
	c = strstr(text, "\"cpu-clock, thread 5678\"");
	d = strstr(text, "\"cache-misses:u, thread 1234\"");
	assert_true(a && b && c && d && a < b && b < c && c < d);
	assert_null(strstr(text, "cache-misses:u, thread 5678"));
	assert_null(strstr(text, "page-faults"));
	assert_int_equal(count(text, "\"unit\":\"nanoseconds\""), 3);
	assert_int_equal(count(text, "\"unit\":\"none\""), 2);
	assert_non_null(strstr(text, "\"name\":\"run 1\""));
	assert_non_null(strstr(text, "\"activeProfileIndex\":0"));
	free(text);
	profile_free(p);
}

/* Events cpu-clock and page-faults, the time-ordered log on: thread 1234 ("CustomThreadNameLong")
 * runs stack A at t=30, B at 10, A at 20, B at 10 (a tie: in the order logged); thread 5678 (no
 * name) runs A at 5; one page fault at B (t=10, the first). Added out of time order. */
static struct profile *build_logged(void)
{
	const char *ev[] = { "cpu-clock", "page-faults" };
	struct profile *p = profile_new(ev, 2);
	uint32_t m, fa, fb;

	assert_non_null(p);
	assert_int_equal(profile_log_start(p, 1 << 20), 0);
	assert_int_equal(profile_set_thread_name(p, 1234, "CustomThreadNameLong"), 0);
	m = frame(p, FRAME_PYTHON, "main", "m.py", 1, NULL);
	fa = frame(p, FRAME_PYTHON, "phase_a", "m.py", 5, NULL);
	fb = frame(p, FRAME_PYTHON, "phase_b", "m.py", 9, NULL);
	uint32_t a[] = { m, fa }, b[] = { m, fb };
	uint64_t v1[] = { 1, 100, 0 }, v2[] = { 1, 200, 1 }, v3[] = { 1, 300, 0 }, v4[] = { 1, 400, 0 };

	assert_int_equal(profile_add_at(p, 1234, a, 2, v1, 30), 0);
	assert_int_equal(profile_add_at(p, 1234, b, 2, v2, 10), 0);
	assert_int_equal(profile_add_at(p, 5678, a, 2, v3, 5), 0);
	assert_int_equal(profile_add_at(p, 1234, a, 2, v3, 20), 0);
	assert_int_equal(profile_add_at(p, 1234, b, 2, v4, 10), 0);
	return p;
}

static void test_time_order(void **state)
{
	struct profile *p = build_logged();
	char *text = write_speedscope(p, NULL);
	char want[256];
	const char *t;
	(void) state;

	assert_int_equal(profile_log_len(p), 5);
	assert_int_equal(profile_n_stacks(p), 3);
	t = strstr(text, "\"cpu-clock, thread 1234 CustomThreadNameLong\"");
	assert_non_null(t);
	/* frames: main 0, phase_a 1, phase_b 2; by time B(10) B(10) A(20) A(30) */
	snprintf(want, sizeof(want), "\"samples\":[[0,2],[0,2],[0,1],[0,1]],\n\"weights\":"
		 "[200,400,300,100]");
	assert_non_null(strstr(t, want));
	assert_non_null(strstr(text, "\"cpu-clock, thread 5678\""));
	t = strstr(text, "\"page-faults, thread 1234 CustomThreadNameLong\"");
	assert_non_null(t);
	assert_non_null(strstr(t, "\"samples\":[[0,2]],\n\"weights\":[1]"));
	assert_null(strstr(text, "page-faults, thread 5678"));
	free(text);
	profile_free(p);
}

/* A log past its bytes: the stacks hold every sample, the writer the merged stacks alone. */
static void test_log_cut(void **state)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1);
	uint32_t f;
	uint64_t v[] = { 1, 5 };
	char *text;
	(void) state;

	assert_non_null(p);
	assert_int_equal(profile_log_start(p, 3 * 20), 0);    /* 3 entries of 20 bytes */
	f = frame(p, FRAME_PYTHON, "f", "m.py", 1, NULL);
	for (int i = 0; i < 3; i++)
		assert_int_equal(profile_add_at(p, 7, &f, 1, v, (uint64_t) i), 0);
	assert_true(profile_log_complete(p));
	assert_int_equal(profile_log_len(p), 3);
	assert_int_equal(profile_add_at(p, 7, &f, 1, v, 3), 0);
	assert_false(profile_log_complete(p));
	assert_int_equal(profile_log_len(p), 0);
	assert_int_equal(profile_values(p, 0)[1], 20);
	text = write_speedscope(p, NULL);
	assert_non_null(strstr(text, "\"samples\":[[0]],\n\"weights\":[20]"));
	free(text);
	profile_free(p);
}

static void test_empty(void **state)
{
	const char *ev[] = { "task-clock" };
	struct profile *p = profile_new(ev, 1);
	char *text;
	(void) state;

	text = write_speedscope(p, NULL);
	assert_string_equal(text, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
				  "\"exporter\":\"hwspy " HWSPY_VERSION "\",\"activeProfileIndex\":0,\n"
				  "\"shared\":{\"frames\":[]},\n\"profiles\":[]}\n");
	free(text);
	profile_free(p);
}

static void put_hex(FILE *f, const char *s)
{
	if (!s) {
		fputs("-", f);
		return;
	}
	fputs("x", f);      /* so that "" is not empty */
	for (; *s; s++)
		fprintf(f, "%02x", (unsigned char) *s);
}

/* The profile as check_speedscope.py expects it: frames, then profiles in order. */
static int write_expected(const struct profile *p, FILE *f)
{
	static const char *const kinds[] = { "python", "native", "kernel", "thread", "special" };
	uint32_t tids[] = { 0, 1234, 5678 };

	for (uint32_t id = 0; id < profile_n_frames(p); id++) {
		const struct profile_frame *fr = profile_frame(p, id);
		const char *file = fr->kind == FRAME_PYTHON ? fr->file :
				   fr->kind == FRAME_NATIVE ? fr->module :
				   fr->kind == FRAME_KERNEL ? "[kernel.kallsyms]" : NULL;
		fprintf(f, "F\t%u\t%s\t%d\t", id, kinds[fr->kind], fr->kind == FRAME_PYTHON ? fr->line : 0);
		put_hex(f, fr->name);
		fputs("\t", f);
		put_hex(f, file);
		fputs("\n", f);
	}
	for (size_t col = 1; col < profile_n_values(p); col++) {
		for (size_t t = 0; t < N_ELEMS(tids); t++) {
			const char *ev = profile_event(p, col - 1)->name;
			uint64_t total = 0;
			for (size_t i = 0; i < profile_n_stacks(p); i++)
				if (profile_stack(p, i)->tid == tids[t])
					total += profile_values(p, i)[col];
			if (total == 0)
				continue;
			if (tids[t])
				fprintf(f, "P\t%s, thread %u\t%llu\n", ev, tids[t], (unsigned long long) total);
			else
				fprintf(f, "P\t%s, all threads\t%llu\n", ev, (unsigned long long) total);
			for (size_t i = 0; i < profile_n_stacks(p); i++) {
				const struct profile_stack *st = profile_stack(p, i);
				if (st->tid != tids[t] || profile_values(p, i)[col] == 0)
					continue;
				fprintf(f, "S\t%llu\t", (unsigned long long) profile_values(p, i)[col]);
				for (uint32_t d = 0; d < st->depth; d++)
					fprintf(f, d ? ",%u" : "%u", st->frames[d]);
				fputs("\n", f);
			}
		}
	}
	return ferror(f) ? 1 : 0;
}

/* The logged profile as check_speedscope.py expects it: "ORDERED", then samples in time order. */
static int write_expected_logged(const struct profile *p, FILE *f)
{
	static const struct { uint32_t tid; const char *name; } th[] = {
		{ 1234, "thread 1234 CustomThreadNameLong" }, { 5678, "thread 5678" },
	};
	/* log entries by thread, then time: 1234 at 10, 10, 20, 30 (entries 1, 4, 3, 0); 5678: 2 */
	static const size_t order[][4] = { { 1, 4, 3, 0 }, { 2, SIZE_MAX } };

	fputs("ORDERED\n", f);
	for (uint32_t id = 0; id < profile_n_frames(p); id++) {
		const struct profile_frame *fr = profile_frame(p, id);

		fprintf(f, "F\t%u\tpython\t%d\t", id, fr->line);
		put_hex(f, fr->name);
		fputs("\t", f);
		put_hex(f, fr->file);
		fputs("\n", f);
	}
	for (size_t col = 1; col < profile_n_values(p); col++) {
		for (size_t t = 0; t < N_ELEMS(th); t++) {
			uint64_t total = 0;

			for (size_t k = 0; k < 4 && order[t][k] != SIZE_MAX; k++)
				total += profile_log_values(p, order[t][k])[col - 1];
			if (!total)
				continue;
			fprintf(f, "P\t%s, %s\t%llu\n", profile_event(p, col - 1)->name, th[t].name,
				(unsigned long long) total);
			for (size_t k = 0; k < 4 && order[t][k] != SIZE_MAX; k++) {
				const struct profile_stack *st =
					profile_stack(p, profile_log_stack(p, order[t][k]));
				uint64_t w = profile_log_values(p, order[t][k])[col - 1];

				if (!w)
					continue;
				fprintf(f, "S\t%llu\t", (unsigned long long) w);
				for (uint32_t d = 0; d < st->depth; d++)
					fprintf(f, d ? ",%u" : "%u", st->frames[d]);
				fputs("\n", f);
			}
		}
	}
	return ferror(f) ? 1 : 0;
}

static int write_pair(const char *dir, const char *tag, struct profile *p,
		      int (*expected)(const struct profile *, FILE *))
{
	char path[4096];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/%s.speedscope.json", dir, tag);
	f = fopen(path, "w");
	if (!f)
		return 1;
	r = speedscope_write(p, NULL, f) < 0;
	r |= fclose(f) != 0;
	snprintf(path, sizeof(path), "%s/%s.txt", dir, tag);
	f = fopen(path, "w");
	if (!f)
		return 1;
	r |= expected(p, f);
	r |= fclose(f) != 0;
	profile_free(p);
	return r;
}

static int write_files(const char *dir)
{
	return write_pair(dir, "out", build_profile(), write_expected) |
	       write_pair(dir, "logged", build_logged(), write_expected_logged);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings_escaped),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_profiles_chosen),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_time_order),
		cmocka_unit_test(test_log_cut),
	};

	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_files(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
