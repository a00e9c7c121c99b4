/* The SVG flame graph writer: XML validity (xmllint) whatever the names, tooltips with every
 * event, layout (widths, flame vs icicle), pruning, stable colours, the script, speed. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "output/output.h"
#include "output_test.h"

#define LONG_NAME 10240

/* Events cycles and instructions. Totals: cycles 1,100,000, instructions 1,352,001. */
static struct profile *build_profile(bool reverse)
{
	const char *ev[] = { "cycles", "instructions" };
	struct profile *p = profile_new(ev, 2);
	static char long_name[LONG_NAME + 1];
	uint32_t t, main_, work, nat, k, h1, h3, lng, tiny;

	assert_non_null(p);
	memset(long_name, 'x', LONG_NAME);
	assert_int_equal(profile_set_target(p, "pid 42 (python3 <x>\x1b)"), 0);
	assert_int_equal(profile_set_python(p, "3.11.7"), 0);
	assert_int_equal(profile_set_event_rate(p, 0, 99, 0, true), 0);
	profile_meta(p)->duration_ns = 2500000000ull;
	t = frame(p, FRAME_THREAD, "[thread 1 python3]", NULL, 0, NULL);
	main_ = frame(p, FRAME_PYTHON, "<module>", "app.py", 10, NULL);
	work = frame(p, FRAME_PYTHON, "work", "app.py", 20, NULL);
	nat = frame(p, FRAME_NATIVE, "memcpy", NULL, 0, "libc.so.6");
	k = frame(p, FRAME_KERNEL, "do_page_fault", NULL, 0, NULL);
	h1 = frame(p, FRAME_NATIVE, "a&b<c>d\"e'f", NULL, 0, NULL);
	h3 = frame(p, FRAME_NATIVE, "bad\xff utf8 \xef\xbf\xbe", NULL, 0, NULL);
	lng = frame(p, FRAME_NATIVE, long_name, NULL, 0, NULL);
	tiny = frame(p, FRAME_PYTHON, "tiny", "app.py", 30, NULL);

	struct { uint32_t f[4]; size_t depth; uint64_t v[3]; } st[] = {
		{ { t, main_, work, nat }, 4, { 10, 600000, 1200000 } },
		{ { t, main_, work, k }, 4, { 5, 300000, 100000 } },
		{ { t, main_, h1 }, 3, { 2, 100000, 50000 } },
		{ { t, main_, h3 }, 3, { 1, 50000, 1000 } },
		{ { t, lng }, 2, { 1, 49999, 1000 } },
		{ { t, main_, tiny }, 3, { 1, 1, 1 } },
	};
	size_t n = sizeof(st) / sizeof(st[0]);
	for (size_t i = 0; i < n; i++) {
		size_t j = reverse ? n - 1 - i : i;
		assert_int_equal(profile_add(p, 1, st[j].f, st[j].depth, st[j].v), 0);
	}
	return p;
}

static char *write_svg(const struct profile *p, const struct svg_opts *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(svg_write(p, o, f), 0);
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

struct rect {
	double x, y, w;
	unsigned rgb[3];
};

/* The rect of the frame whose tooltip starts with tip (then a newline). */
static bool find_rect(const char *text, const char *tip, struct rect *ret)
{
	char key[256];
	const char *s;

	snprintf(key, sizeof(key), "<g><title>%s\n", tip);
	s = strstr(text, key);
	if (!s)
		return false;
	s = strstr(s, "<rect ");
	assert_non_null(s);
	assert_int_equal(sscanf(s, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"15\" fill=\"rgb(%u,%u,%u)\"",
				&ret->x, &ret->y, &ret->w, &ret->rgb[0], &ret->rgb[1], &ret->rgb[2]), 6);
	return true;
}

/* xmllint --noout on text: 0 valid, 1 invalid, -1 xmllint missing. */
static int xmllint(const char *text)
{
	char dir[] = "/tmp/test_svg.XXXXXX", path[64], cmd[128];
	FILE *f;
	int r;

	if (system("command -v xmllint >/dev/null 2>&1") != 0) {
		printf("# skip xmllint check: xmllint not installed (Debian package libxml2-utils)\n");
		return -1;
	}
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.svg", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	r = system(cmd) == 0 ? 0 : 1;
	unlink(path);
	rmdir(dir);
	return r;
}

static void test_valid_xml(void **state)
{
	struct profile *p = build_profile(false);
	struct svg_opts o = { .title = "My \x01 <graph> & \"co\" \xc0", .icicle = true };
	char *a = write_svg(p, NULL), *b = write_svg(p, &o);
	(void) state;

	assert_int_not_equal(xmllint(a), 1);
	assert_int_not_equal(xmllint(b), 1);
	/* no raw control character but newlines and tabs */
	for (const char *c = a; *c; c++)
		assert_true((unsigned char) *c >= 0x20 || *c == '\n' || *c == '\t');
	free(a);
	free(b);
	profile_free(p);
}

static void test_text(void **state)
{
	struct profile *p = build_profile(false);
	struct svg_opts o = { .title = "My \x01 <graph> & \"co\" \xc0" };
	char *text = write_svg(p, NULL), *t2 = write_svg(p, &o), expect[256], xs[4200];
	(void) state;

	assert_non_null(strstr(text, "<text id=\"title\" x=\"600\" y=\"24\">Flame Graph</text>"));
	assert_non_null(strstr(text, ">cycles, 99 Hz, 2.50 s, pid 42 (python3 &lt;x&gt;\xef\xbf\xbd), "
				     "Python 3.11.7</text>"));
	assert_non_null(strstr(t2, ">My \xef\xbf\xbd &lt;graph&gt; &amp; &quot;co&quot; \xef\xbf\xbd</text>"));
	/* drawn: all, thread, <module>, work, memcpy, do_page_fault, a&b, bad, long; not tiny */
	assert_int_equal(count(text, "<title>"), 9);
	assert_int_equal(count(text, "<g><title>"), 9);
	assert_int_equal(count(text, "<rect x="), 9 + 1);       /* + the background */
	assert_null(strstr(text, "tiny"));
	assert_non_null(strstr(text, ">1 frames narrower than 0.1 px not drawn</text>"));
	/* totals exact, tiny included; every event's count and share, then IPC */
	assert_non_null(strstr(text, "<g><title>all\ncycles: 1,100,000 (100.0%)\n"
				     "instructions: 1,352,001 (100.0%)\nsamples: 20\nIPC: 1.23</title>"));
	snprintf(expect, sizeof(expect), "<g><title>work (app.py:20)\ncycles: 900,000 (%.1f%%)\n"
		 "instructions: 1,300,000 (%.1f%%)\nsamples: 15\nIPC: %.2f</title>",
		 100.0 * 900000 / 1100000, 100.0 * 1300000 / 1352001, 1300000.0 / 900000);
	assert_non_null(strstr(text, expect));
	assert_non_null(strstr(expect, "(81.8%)"));
	assert_non_null(strstr(expect, "(96.2%)"));
	assert_non_null(strstr(expect, "IPC: 1.44<"));
	snprintf(expect, sizeof(expect), "<g><title>&lt;module&gt; (app.py:10)\ncycles: 1,050,001 (%.1f%%)\n"
		 "instructions: 1,351,001 (%.1f%%)\nsamples: 19\nIPC: %.2f</title>",
		 100.0 * 1050001 / 1100000, 100.0 * 1351001 / 1352001, 1351001.0 / 1050001);
	assert_non_null(strstr(text, expect));
	assert_non_null(strstr(text, "<title>do_page_fault_[k]\ncycles: 300,000 (27.3%)\n"));
	/* hostile names */
	assert_non_null(strstr(text, "<title>a&amp;b&lt;c&gt;d&quot;e&#39;f\n"));
	assert_non_null(strstr(text, "<title>bad\xef\xbf\xbd utf8 \xef\xbf\xbd\n"));
	assert_null(strstr(text, "a&b"));
	/* the 10 KB name: 4096 bytes in the tooltip, a cut label */
	memset(xs, 'x', 4096);
	strcpy(xs + 4096, "...\ncycles: 49,999 (4.5%)");
	assert_non_null(strstr(text, xs));
	memset(xs, 'x', 4097);
	xs[4097] = '\0';
	assert_null(strstr(text, xs));
	assert_non_null(strstr(text, ">xxxxx..</text></g>"));
	free(text);
	free(t2);
	profile_free(p);
}

static void test_layout(void **state)
{
	struct profile *p = build_profile(false);
	struct svg_opts ins = { .column = 2, .icicle = true }, tiny = { .min_width_px = 1e-6 };
	char *flame = write_svg(p, NULL), *icicle = write_svg(p, &ins), *all = write_svg(p, &tiny);
	struct rect root, leaf, work, nat, k;
	(void) state;

	/* widths proportional to cycles: 1200 - 2 * 10 px for 1,100,000 */
	assert_true(find_rect(flame, "work (app.py:20)", &work));
	assert_true(work.w > 1180.0 * 900000 / 1100000 - 0.01 && work.w < 1180.0 * 900000 / 1100000 + 0.01);
	assert_true(find_rect(flame, "all", &root));
	assert_true(root.x == 10 && root.w == 1180);
	/* flame: root at the bottom; children in name order: do_page_fault_[k] before memcpy */
	assert_true(find_rect(flame, "memcpy [libc.so.6]", &leaf));
	assert_true(find_rect(flame, "do_page_fault_[k]", &k));
	assert_true(root.y > work.y && work.y > leaf.y);
	assert_true(k.x < leaf.x && k.x + k.w <= leaf.x + 0.01);
	assert_true(k.x > work.x - 0.01 && k.x < work.x + 0.01);
	/* icicle, by instructions: root at the top */
	assert_true(find_rect(icicle, "all", &root));
	assert_true(find_rect(icicle, "memcpy [libc.so.6]", &leaf));
	assert_true(root.y < leaf.y);
	assert_true(find_rect(icicle, "work (app.py:20)", &work));
	assert_true(work.w > 1180.0 * 1300000 / 1352001 - 0.01 && work.w < 1180.0 * 1300000 / 1352001 + 0.01);
	assert_non_null(strstr(icicle, ">instructions, 2.50 s, pid 42"));
	/* no pruning under a lower min width */
	assert_non_null(strstr(all, "<g><title>tiny (app.py:30)\ncycles: 1 (0.0%)\ninstructions: 1 (0.0%)\n"));
	assert_null(strstr(all, "not drawn"));
	assert_int_equal(count(all, "<g><title>"), 10);
	/* colours by kind */
	assert_true(find_rect(flame, "memcpy [libc.so.6]", &nat));
	assert_true(nat.rgb[0] >= 205 && nat.rgb[2] <= 50);
	assert_true(find_rect(flame, "do_page_fault_[k]", &k));
	assert_true(k.rgb[2] >= 200 && k.rgb[0] <= 140);
	assert_true(work.rgb[1] >= 190 && work.rgb[2] <= 100);
	assert_true(find_rect(flame, "[thread 1 python3]", &root));
	assert_true(root.rgb[0] == root.rgb[1] && root.rgb[1] == root.rgb[2]);
	free(flame);
	free(icicle);
	free(all);
	profile_free(p);
}

/* The same stacks added in another order give the same file: layout and colours are stable. */
/* Frames off the CPU (FRAME_WAIT) have a colour family of their own, which a legend names;
 * a profile without them has no such legend. */
static void test_waits(void **state)
{
	const char *ev[] = { "wall" };
	struct profile *p = profile_new(ev, 1), *q = build_profile(false);
	uint32_t f[2];
	uint64_t v[2] = { 1, 5000000 };
	struct rect r;
	char *a, *b;
	(void) state;

	assert_non_null(p);
	f[0] = frame(p, FRAME_PYTHON, "pipe_wait", "app.py", 3, NULL);
	f[1] = frame(p, FRAME_WAIT, "[wait: read fd 5 (pipe)]", NULL, 0, NULL);
	assert_int_equal(profile_add(p, 1, f, 2, v), 0);
	a = write_svg(p, NULL);
	b = write_svg(q, NULL);
	assert_int_equal(count(a, "<g id=\"legend-waits\">"), 1);
	assert_int_equal(count(b, "legend-waits"), 0);
	assert_true(find_rect(a, "[wait: read fd 5 (pipe)]", &r));
	/* purple: more blue than green, more red than green */
	assert_true(r.rgb[2] > r.rgb[1] && r.rgb[0] > r.rgb[1]);
	if (xmllint(a) == 1)
		fail_msg("the SVG with a wait legend is not valid XML");
	free(a);
	free(b);
	profile_free(p);
	profile_free(q);
}

static void test_stable(void **state)
{
	struct profile *p = build_profile(false), *q = build_profile(true);
	char *a = write_svg(p, NULL), *b = write_svg(q, NULL);
	struct rect ra, rb;
	(void) state;

	assert_true(find_rect(a, "memcpy [libc.so.6]", &ra));
	assert_true(find_rect(b, "memcpy [libc.so.6]", &rb));
	assert_memory_equal(ra.rgb, rb.rgb, sizeof(ra.rgb));
	assert_string_equal(a, b);
	free(a);
	free(b);
	profile_free(p);
	profile_free(q);
}

static void test_script(void **state)
{
	struct profile *p = build_profile(false);
	char *text = write_svg(p, NULL);
	(void) state;

	assert_non_null(strstr(text, "<script type=\"text/ecmascript\"><![CDATA[\n"));
	assert_int_equal(count(text, "]]>"), 1);
	assert_non_null(strstr(text, "\"Matched: \""));
	assert_non_null(strstr(text, "q.get(\"s\")"));
	assert_non_null(strstr(text, "set_param(\"s\", src)"));
	assert_non_null(strstr(text, "set_param(\"x\", z.xs)"));
	assert_non_null(strstr(text, "onload=\"init()\""));
	assert_non_null(strstr(text, ">Reset Zoom</text>"));
	assert_non_null(strstr(text, ">Search</text>"));
	assert_null(strstr(text, "href="));     /* self-contained */
	free(text);
	profile_free(p);
}

/* The whole tooltip of the frame whose text is name (a static buffer), or NULL. */
static const char *tooltip(const char *text, const char *name)
{
	static char tip[1024];
	char key[256];
	const char *s, *e;

	snprintf(key, sizeof(key), "<g><title>%s\n", name);
	s = strstr(text, key);
	if (!s)
		return NULL;
	s += strlen("<g><title>");
	e = strstr(s, "</title>");
	assert_non_null(e);
	assert_true((size_t) (e - s) < sizeof(tip));
	memcpy(tip, s, (size_t) (e - s));
	tip[e - s] = '\0';
	return tip;
}

/* Derived ratios after the counts: IPC, misses per 1k instructions, miss rates; a ratio whose
 * denominator is 0 for the frame is left out. */
static void test_ratios(void **state)
{
	const char *ev[] = { "cycles", "instructions", "cache-misses", "cache-references",
			     "branch-misses", "branches" };
	const char *ev2[] = { "cycles:u", "instructions:u", "L1-dcache-load-misses:u",
			      "L1-dcache-loads:u", "branch-misses", "branch-instructions",
			      "dTLB-load-misses", "dTLB-load-misses:k" };
	const char *ev3[] = { "cache-misses", "cache-references" };
	struct profile *p = profile_new(ev, 6), *p2 = profile_new(ev2, 8), *p3 = profile_new(ev3, 2);
	uint32_t main_, hot, cold, s[2];
	char *text;
	(void) state;

	/* samples, cycles, instructions, cache-misses, cache-references, branch-misses, branches */
	uint64_t v_hot[] = { 10, 2000000, 3000000, 6000, 50000, 1500, 500000 };
	uint64_t v_cold[] = { 5, 1000000, 0, 0, 0, 30, 0 };
	main_ = frame(p, FRAME_PYTHON, "main", "app.py", 1, NULL);
	hot = frame(p, FRAME_PYTHON, "hot", "app.py", 2, NULL);
	cold = frame(p, FRAME_PYTHON, "cold", "app.py", 3, NULL);
	s[0] = main_;
	s[1] = hot;
	assert_int_equal(profile_add(p, 1, s, 2, v_hot), 0);
	s[1] = cold;
	assert_int_equal(profile_add(p, 1, s, 2, v_cold), 0);
	text = write_svg(p, NULL);
	assert_string_equal(tooltip(text, "hot (app.py:2)"),
			    "hot (app.py:2)\n"
			    "cycles: 2,000,000 (66.7%)\n"
			    "instructions: 3,000,000 (100.0%)\n"
			    "cache-misses: 6,000 (100.0%)\n"
			    "cache-references: 50,000 (100.0%)\n"
			    "branch-misses: 1,500 (98.0%)\n"
			    "branches: 500,000 (100.0%)\n"
			    "samples: 10\n"
			    "IPC: 1.50\n"
			    "cache-misses per 1k instructions: 2.00\n"
			    "cache miss rate: 12.0%\n"
			    "branch-misses per 1k instructions: 0.50\n"
			    "branch miss rate: 0.3%");
	/* no instructions, no references: only IPC is left */
	assert_string_equal(tooltip(text, "cold (app.py:3)"),
			    "cold (app.py:3)\n"
			    "cycles: 1,000,000 (33.3%)\n"
			    "instructions: 0 (0.0%)\n"
			    "cache-misses: 0 (0.0%)\n"
			    "cache-references: 0 (0.0%)\n"
			    "branch-misses: 30 (2.0%)\n"
			    "branches: 0 (0.0%)\n"
			    "samples: 5\n"
			    "IPC: 0.00");
	/* inclusive values: the parent's ratios are of its sums */
	assert_non_null(strstr(tooltip(text, "main (app.py:1)"),
			       "\nsamples: 15\nIPC: 1.00\ncache-misses per 1k instructions: 2.00\n"
			       "cache miss rate: 12.0%\nbranch-misses per 1k instructions: 0.51\n"
			       "branch miss rate: 0.3%"));
	assert_non_null(strstr(tooltip(text, "all"), "\nIPC: 1.00\n"));
	free(text);

	/* modifiers ignored in matching and cut from the labels; perf's cache events find their
	 * reference by name; a miss event without one gets no rate; one line set per name */
	uint64_t v2[] = { 1, 1000, 2000, 40, 800, 10, 400, 4, 6 };
	main_ = frame(p2, FRAME_PYTHON, "main", "app.py", 1, NULL);
	assert_int_equal(profile_add(p2, 1, &main_, 1, v2), 0);
	text = write_svg(p2, NULL);
	assert_non_null(strstr(tooltip(text, "main (app.py:1)"),
			       "\nsamples: 1\n"
			       "IPC: 2.00\n"
			       "L1-dcache-load-misses per 1k instructions: 20.00\n"
			       "L1-dcache-load miss rate: 5.0%\n"
			       "branch-misses per 1k instructions: 5.00\n"
			       "branch miss rate: 2.5%\n"
			       "dTLB-load-misses per 1k instructions: 2.00"));
	assert_int_equal(count(text, "dTLB-load-misses per 1k"), 2);   /* main and all */
	assert_null(strstr(text, "dTLB-load miss rate"));
	free(text);

	/* no cycles or instructions: only the rate */
	uint64_t v3[] = { 3, 7, 28 };
	main_ = frame(p3, FRAME_PYTHON, "main", "app.py", 1, NULL);
	assert_int_equal(profile_add(p3, 1, &main_, 1, v3), 0);
	text = write_svg(p3, NULL);
	assert_string_equal(tooltip(text, "main (app.py:1)"),
			    "main (app.py:1)\ncache-misses: 7 (100.0%)\ncache-references: 28 (100.0%)\n"
			    "samples: 3\ncache miss rate: 25.0%");
	free(text);
	profile_free(p);
	profile_free(p2);
	profile_free(p3);
}

static void test_errors(void **state)
{
	struct profile *p = build_profile(false);
	struct svg_opts bad = { .column = 3 };
	const char *ev[] = { "cycles" };
	struct profile *empty = profile_new(ev, 1);
	FILE *broken;
	int fds[2];
	char *text;
	(void) state;

	assert_int_equal(svg_write(p, &bad, stdout), -EINVAL);
	/* a write error: a pipe whose reader is gone (EPIPE; SIGPIPE ignored) */
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(close(fds[0]), 0);
	assert_true(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
	broken = fdopen(fds[1], "w");
	assert_non_null(broken);
	assert_true(svg_write(p, NULL, broken) < 0);
	(void) fclose(broken);
	(void) signal(SIGPIPE, SIG_DFL);
	text = write_svg(empty, NULL);
	assert_int_equal(count(text, "<g><title>"), 0);
	assert_int_not_equal(xmllint(text), 1);
	free(text);
	profile_free(empty);
	profile_free(p);
}

/* ---- --color-by ---- */

/* The text of the element with id (a static buffer), or NULL. */
static const char *text_of(const char *text, const char *id)
{
	static char buf[256];
	char key[64];
	const char *s, *e;

	snprintf(key, sizeof(key), " id=\"%s\"", id);
	s = strstr(text, key);
	if (!s)
		return NULL;
	s = strchr(s, '>') + 1;
	e = strchr(s, '<');
	assert_non_null(e);
	assert_true((size_t) (e - s) < sizeof(buf));
	memcpy(buf, s, (size_t) (e - s));
	buf[e - s] = '\0';
	return buf;
}

static bool is_grey(const struct rect *r)
{
	return r->rgb[0] == 180 && r->rgb[1] == 180 && r->rgb[2] == 180;
}

/* Events task-clock (the widths), page-faults, cpu-clock; the metric page-faults/cpu-clock.
 * Under main: a, b, c, d with ratios 0.01, 0.05, 0.10, 0.20 (20 samples each); few (ratio 0.9,
 * 5 samples: grey); zero (cpu-clock 0: grey); with spike, a narrow frame (50 of 6,050 task-clock,
 * 0.8% of the width) of ratio 10, past the 98th percentile. */
static struct profile *color_profile(bool spike)
{
	const char *ev[] = { "task-clock", "page-faults", "cpu-clock" };
	struct profile *p = profile_new(ev, 3);
	struct { const char *name; uint64_t v[4]; } st[] = {
		{ "a", { 20, 1000, 10, 1000 } },
		{ "b", { 20, 1000, 50, 1000 } },
		{ "c", { 20, 1000, 100, 1000 } },
		{ "d", { 20, 1000, 200, 1000 } },
		{ "few", { 5, 1000, 900, 1000 } },
		{ "zero", { 20, 1000, 7, 0 } },
		{ "spike", { 10, 50, 500, 50 } },
	};
	uint32_t s[2];

	assert_non_null(p);
	s[0] = frame(p, FRAME_PYTHON, "main", "app.py", 1, NULL);
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]) - !spike; i++) {
		s[1] = frame(p, FRAME_PYTHON, st[i].name, "app.py", 2 + (int) i, NULL);
		assert_int_equal(profile_add(p, 1, s, 2, st[i].v), 0);
	}
	return p;
}

/* Each frame's fill follows its ratio's order (YlOrRd: green falls from low to high), the ends
 * are the ramp's; grey for too few samples and a 0 denominator; the legend's ends; the
 * tooltips. */
static void test_color_order(void **state)
{
	struct profile *p = color_profile(false);
	struct svg_opts o = { .color_by = "page-faults/cpu-clock" };
	char *text = write_svg(p, &o);
	const char *order[] = { "a (app.py:2)", "b (app.py:3)", "c (app.py:4)", "d (app.py:5)",
				"main (app.py:1)" };
	struct rect r[5], few, zero, all;
	(void) state;

	for (size_t i = 0; i < 5; i++) {
		assert_true(find_rect(text, order[i], &r[i]));
		if (i)
			assert_true(r[i].rgb[1] < r[i - 1].rgb[1]);
		/* the ramp: red and blue never rise as green falls */
		if (i)
			assert_true(r[i].rgb[0] <= r[i - 1].rgb[0] && r[i].rgb[2] <= r[i - 1].rgb[2]);
		assert_false(is_grey(&r[i]));
	}
	/* a is the 2nd percentile (its 1,000 of 16,000 weighted), main and all (0.2534) the 98th */
	assert_true(r[0].rgb[0] == 254 && r[0].rgb[1] == 217 && r[0].rgb[2] == 118);
	assert_true(r[4].rgb[0] == 227 && r[4].rgb[1] == 26 && r[4].rgb[2] == 28);
	assert_true(find_rect(text, "all", &all));
	assert_memory_equal(all.rgb, r[4].rgb, sizeof(all.rgb));
	/* c is at (0.10 - 0.01) / (0.2534 - 0.01) = 0.37 of the scale: between stops 1 and 2 */
	assert_true(r[2].rgb[1] < 178 && r[2].rgb[1] > 141);
	assert_true(find_rect(text, "few (app.py:6)", &few));
	assert_true(find_rect(text, "zero (app.py:7)", &zero));
	assert_true(is_grey(&few) && is_grey(&zero));
	/* widths stay task-clock's */
	assert_true(fabs(r[0].w - 1180.0 / 6) < 0.01);

	/* in faults per ms of CPU: cpu-clock counts nanoseconds */
	assert_non_null(strstr(text, "<g id=\"legend\"><title>Frames coloured by "
				     "page-faults per ms of CPU"));
	assert_string_equal(text_of(text, "legend-name"), "colour: page-faults per ms of CPU");
	assert_string_equal(text_of(text, "legend-low"), "10000");
	assert_string_equal(text_of(text, "legend-high"), "253400");
	assert_string_equal(text_of(text, "legend-grey-text"), "under 10 samples, or cpu-clock is 0");
	assert_non_null(strstr(text, "<rect id=\"legend-scale\""));
	assert_non_null(strstr(text, "fill=\"url(#color-scale)\""));
	assert_non_null(strstr(text, "<linearGradient id=\"color-scale\""));
	assert_non_null(strstr(text, "<rect id=\"legend-grey\""));

	assert_string_equal(tooltip(text, "a (app.py:2)"),
			    "a (app.py:2)\ntask-clock: 1,000 (16.7%)\npage-faults: 10 (0.8%)\n"
			    "cpu-clock: 1,000 (20.0%)\nsamples: 20\npage-faults per ms of CPU: 10000");
	assert_string_equal(tooltip(text, "few (app.py:6)"),
			    "few (app.py:6)\ntask-clock: 1,000 (16.7%)\npage-faults: 900 (71.0%)\n"
			    "cpu-clock: 1,000 (20.0%)\nsamples: 5\npage-faults per ms of CPU: 900000, too few "
			    "samples to colour (5, under 10)");
	assert_non_null(strstr(tooltip(text, "zero (app.py:7)"),
			       "\nsamples: 20\npage-faults per ms of CPU: none (cpu-clock is 0)"));
	assert_non_null(strstr(tooltip(text, "main (app.py:1)"),
			       "\nsamples: 105\npage-faults per ms of CPU: 253400"));
	assert_int_not_equal(xmllint(text), 1);
	free(text);
	profile_free(p);
}

/* One narrow frame of an extreme ratio: clipped to the 98th percentile, which the legend marks;
 * the order still holds. */
static void test_color_clip(void **state)
{
	struct profile *p = color_profile(true);
	struct svg_opts o = { .color_by = "page-faults/cpu-clock" };
	char *text = write_svg(p, &o);
	struct rect spike, main_, d;
	char expect[64];
	(void) state;

	assert_true(find_rect(text, "spike (app.py:8)", &spike));
	assert_true(find_rect(text, "main (app.py:1)", &main_));
	assert_true(find_rect(text, "d (app.py:5)", &d));
	assert_true(spike.rgb[0] == 227 && spike.rgb[1] == 26 && spike.rgb[2] == 28);
	assert_memory_equal(spike.rgb, main_.rgb, sizeof(spike.rgb));
	assert_true(d.rgb[1] > main_.rgb[1]);
	/* main: (1,267 + 500) / 5,050 */
	snprintf(expect, sizeof(expect), "\xe2\x89\xa5 %.0f", 1767.0 / 5050 * 1e6);
	assert_string_equal(text_of(text, "legend-high"), expect);
	assert_string_equal(text_of(text, "legend-low"), "10000");
	assert_non_null(strstr(tooltip(text, "spike (app.py:8)"),
			       "\npage-faults per ms of CPU: 10000000"));
	free(text);
	profile_free(p);
}

/* icicle, min-width and another width column with a metric: pruned frames stay out, the
 * colours follow the ratios, the frames start under the legend. */
static void test_color_layout(void **state)
{
	struct profile *p = color_profile(false);
	struct svg_opts o = { .color_by = "page-faults:u/cpu-clock", .icicle = true,
			      .min_width_px = 50, .column = 2 };
	char *text = write_svg(p, &o);
	struct rect root, b, c, d;
	(void) state;

	/* by page-faults (1,267): a (10) is 9 px, zero (7) 6.5 px: not drawn; b (50) 47 px
	 * neither; c, d, few are */
	assert_null(strstr(text, "<title>a (app.py:2)"));
	assert_null(strstr(text, "<title>b (app.py:3)"));
	assert_false(find_rect(text, "b (app.py:3)", &b));
	assert_true(find_rect(text, "c (app.py:4)", &c));
	assert_true(find_rect(text, "d (app.py:5)", &d));
	assert_true(find_rect(text, "all", &root));
	assert_true(fabs(d.w - 1180.0 * 200 / 1267) < 0.01);
	assert_true(root.y == 96 && c.y == 96 + 2 * 16);       /* under the legend's row */
	assert_true(d.rgb[1] < c.rgb[1]);
	assert_non_null(strstr(text, ">3 frames narrower than 50 px not drawn</text>"));
	/* the label says the metric in its units, with the profile's names */
	assert_string_equal(text_of(text, "legend-name"), "colour: page-faults per ms of CPU");
	assert_int_not_equal(xmllint(text), 1);
	free(text);
	profile_free(p);
}

/* ipc and mpki: the metric's line first among the ratios, not repeated; the errors. */
static void test_color_named(void **state)
{
	const char *ev[] = { "cycles", "instructions", "cache-misses" };
	const char *ev2[] = { "cycles", "instructions", "cache-misses", "branch-misses:u" };
	const char *ev3[] = { "cpu/event=0x3c,umask=0x00/", "instructions" };
	struct profile *p = profile_new(ev, 3), *p2 = profile_new(ev2, 4), *p3 = profile_new(ev3, 2);
	struct profile *base = build_profile(false);
	struct svg_opts ipc = { .color_by = "ipc" }, mpki = { .color_by = "MPKI" };
	struct svg_opts pmu = { .color_by = "cpu/event=0x3c,umask=0x00//instructions" };
	struct svg_opts diff = { .color_by = "ipc", .diff = true };
	uint64_t v[] = { 12, 1000, 2000, 8 }, v2[] = { 12, 1000, 2000, 8, 1 }, v3[] = { 12, 500, 1000 };
	struct svg_metric_error err;
	uint32_t m;
	char *text;
	(void) state;

	m = frame(p, FRAME_PYTHON, "main", "app.py", 1, NULL);
	assert_int_equal(profile_add(p, 1, &m, 1, v), 0);
	text = write_svg(p, &mpki);
	assert_string_equal(tooltip(text, "main (app.py:1)"),
			    "main (app.py:1)\ncycles: 1,000 (100.0%)\ninstructions: 2,000 (100.0%)\n"
			    "cache-misses: 8 (100.0%)\nsamples: 12\n"
			    "cache-misses per 1k instructions: 4.00\nIPC: 2.00");
	assert_string_equal(text_of(text, "legend-name"), "colour: cache-misses per 1k instructions");
	assert_string_equal(text_of(text, "legend-low"), "4.00");
	free(text);
	text = write_svg(base, &ipc);
	assert_int_equal(count(text, "IPC: "), 9);      /* once per drawn frame */
	assert_non_null(strstr(tooltip(text, "work (app.py:20)"), "\nsamples: 15\nIPC: 1.44"));
	free(text);
	m = frame(p3, FRAME_PYTHON, "main", "app.py", 1, NULL);
	assert_int_equal(profile_add(p3, 1, &m, 1, v3), 0);
	text = write_svg(p3, &pmu);
	assert_non_null(strstr(tooltip(text, "main (app.py:1)"),
			       "\ncpu/event=0x3c,umask=0x00/ per 1k instructions: 500"));
	free(text);

	/* two miss events: mpki is ambiguous; no cycles: no ipc */
	m = frame(p2, FRAME_PYTHON, "main", "app.py", 1, NULL);
	assert_int_equal(profile_add(p2, 1, &m, 1, v2), 0);
	assert_int_equal(svg_color_check(p2, "mpki", &err), -ENOENT);
	assert_non_null(strstr(err.why, "more than one '*-misses'"));
	assert_int_equal(svg_write(p2, &mpki, stdout), -ENOENT);
	assert_int_equal(svg_color_check(p3, "ipc", &err), -ENOENT);
	assert_non_null(strstr(err.why, "'cycles'"));
	assert_int_equal(svg_color_check(p3, "mpki", &err), -ENOENT);
	assert_int_equal(svg_write(base, &diff, stdout), -EINVAL);

	/* markup in the events' names and the metric: escaped, the file stays valid XML */
	const char *ev4[] = { "a<&>", "b\"'" };
	struct profile *p4 = profile_new(ev4, 2);
	struct svg_opts hostile = { .color_by = "a<&>/b\"'" };
	uint64_t v4[] = { 20, 7, 0 };

	m = frame(p4, FRAME_PYTHON, "main", "app.py", 1, NULL);
	assert_int_equal(profile_add(p4, 1, &m, 1, v4), 0);
	text = write_svg(p4, &hostile);
	assert_non_null(strstr(text, "\na&lt;&amp;&gt; per b&quot;&#39;: none (b&quot;&#39; is 0)"));
	assert_non_null(strstr(text, ">colour: a&lt;&amp;&gt; per b&quot;&#39;</text>"));
	assert_null(strstr(text, "a<&>"));
	assert_int_not_equal(xmllint(text), 1);
	free(text);
	profile_free(p4);
	profile_free(p);
	profile_free(p2);
	profile_free(p3);
	profile_free(base);
}

/* An A/B metric's legend and tooltip in units a person reads: a count per ms of a time
 * event's nanoseconds, per 1k instructions (the mpki ratio's own line) or cycles, a time as a
 * share of another, IPC for instructions/cycles; any other pair as A per B. */
static void test_color_units(void **state)
{
	const char *ev[] = { "cpu-clock", "instructions", "cycles", "LLC-load-misses", "wall",
			     "page-faults", "minor-faults" };
	struct profile *p = profile_new(ev, 7);
	static const struct {
		const char *metric, *label, *value;
	} cases[] = {
		{ "page-faults/cpu-clock", "page-faults per ms of CPU", "250" },
		{ "page-faults/wall", "page-faults per ms of wall time", "125" },
		{ "LLC-load-misses/instructions", "LLC-load-misses per 1k instructions", "4.00" },
		{ "LLC-load-misses/cycles", "LLC-load-misses per 1k cycles", "8" },
		{ "instructions/cycles", "IPC", "2.00" },
		{ "cpu-clock/wall", "cpu-clock as a share of wall", "50.0%" },
		{ "minor-faults/page-faults", "minor-faults per page-faults", "0.5" },
	};
	/* samples, cpu-clock 4 ms, 2M instructions, 1M cycles, 8k misses, 8 ms wall, 1000 faults */
	uint64_t v[] = { 40, 4000000, 2000000, 1000000, 8000, 8000000, 1000, 500 };
	uint32_t m;
	(void) state;

	m = frame(p, FRAME_PYTHON, "main", "app.py", 1, NULL);
	assert_int_equal(profile_add(p, 1, &m, 1, v), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct svg_opts o = { .color_by = cases[i].metric };
		char *text = write_svg(p, &o), line[128];

		print_message("# %s: %s\n", cases[i].metric, text_of(text, "legend-name"));
		snprintf(line, sizeof(line), "colour: %s", cases[i].label);
		assert_string_equal(text_of(text, "legend-name"), line);
		snprintf(line, sizeof(line), "\nsamples: 40\n%s: %s", cases[i].label, cases[i].value);
		assert_non_null(strstr(tooltip(text, "main (app.py:1)"), line));
		free(text);
	}
	profile_free(p);
}

/* svg_color_check(): the form alone, then against a profile's events. */
static void test_color_check(void **state)
{
	struct profile *p = color_profile(false);
	struct svg_opts bad = { .color_by = "page-faults/nope" };
	struct svg_metric_error err;
	(void) state;

	assert_int_equal(svg_color_check(NULL, "", &err), -EINVAL);
	assert_string_equal(err.why, "is empty");
	assert_int_equal(svg_color_check(NULL, "A/", &err), -EINVAL);
	assert_string_equal(err.why, "has no event after '/'");
	assert_int_equal(svg_color_check(NULL, "/B", &err), -EINVAL);
	assert_string_equal(err.why, "has no event before '/'");
	assert_int_equal(svg_color_check(NULL, "cache-misses", &err), -EINVAL);
	assert_int_equal(svg_color_check(NULL, "A/B", NULL), 0);
	assert_int_equal(svg_color_check(NULL, "A/B/C", NULL), 0);  /* a PMU name holds '/' */
	assert_int_equal(svg_color_check(NULL, "ipc", NULL), 0);
	assert_int_equal(svg_color_check(NULL, "mpki", NULL), 0);

	assert_int_equal(svg_color_check(p, "page-faults/cpu-clock", NULL), 0);
	assert_int_equal(svg_color_check(p, "page-faults:u/cpu-clock:k", NULL), 0);
	assert_int_equal(svg_color_check(p, "page-faults/nope", &err), -ENOENT);
	assert_true(err.at == 12 && err.len == 4);
	assert_int_equal(svg_color_check(p, "nope/cpu-clock", &err), -ENOENT);
	assert_true(err.at == 0 && err.len == 4);
	assert_int_equal(svg_color_check(p, "page-faults/cpu-clock/task-clock", &err), -EINVAL);
	assert_true(err.len == 0 && strstr(err.why, "more than one '/'"));
	assert_int_equal(svg_color_check(p, "ipc", &err), -ENOENT);
	assert_int_equal(svg_write(p, &bad, stdout), -ENOENT);
	profile_free(p);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 10^5 distinct stacks of depth 7 over 31 frames. */
static void test_speed(void **state)
{
	const char *ev[] = { "cycles", "instructions" };
	struct profile *p = profile_new(ev, 2);
	uint32_t t, py[10], nat[10], k[7];
	char name[64], *text;
	double t0, dt;
	(void) state;

	assert_non_null(p);
	t = frame(p, FRAME_THREAD, "[thread 7 python3]", NULL, 0, NULL);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "py_func_%d", i);
		py[i] = frame(p, FRAME_PYTHON, name, "mod.py", i + 1, NULL);
		snprintf(name, sizeof(name), "native_func_%d", i);
		nat[i] = frame(p, FRAME_NATIVE, name, NULL, 0, "libfoo.so");
	}
	for (int i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "kfunc_%d", i);
		k[i] = frame(p, FRAME_KERNEL, name, NULL, 0, NULL);
	}
	for (uint32_t i = 0; i < 100000; i++) {
		uint32_t s[] = { t, py[i % 10], py[i / 10 % 10], py[i / 100 % 10], nat[i / 1000 % 10],
				 nat[i / 10000 % 10], k[i % 7] };
		uint64_t v[] = { 1, 1 + i % 13, 2 };
		assert_int_equal(profile_add(p, 7, s, 7, v), 0);
	}
	assert_int_equal(profile_n_stacks(p), 100000);
	t0 = now();
	text = write_svg(p, NULL);
	dt = now() - t0;
	printf("# 10^5 stacks: %.3f s, %zu bytes, %zu frames drawn\n", dt, strlen(text),
	       count(text, "<g><title>"));
	assert_true(dt < 2.0);
	assert_int_not_equal(xmllint(text), 1);
	free(text);
	/* coloured by IPC: the scale's fit and the fills cost little more */
	t0 = now();
	text = write_svg(p, &(struct svg_opts) { .color_by = "ipc" });
	dt = now() - t0;
	printf("# 10^5 stacks coloured by ipc: %.3f s, %zu bytes\n", dt, strlen(text));
	assert_true(dt < 2.0);
	assert_non_null(strstr(text, "<g id=\"legend\">"));
	free(text);
	profile_free(p);
}

/* Labels stay legible on every fill (WCAG contrast 4.5:1 or more): the kinds' shades, 300
 * names each, and a metric's ramp, whose red end takes white labels. */
static void test_label_contrast(void **state)
{
	static const enum frame_kind kinds[] = { FRAME_PYTHON, FRAME_NATIVE, FRAME_KERNEL,
						 FRAME_WAIT, FRAME_SPECIAL };
	const char *ev = "cpu-clock";
	struct profile *p = profile_new(&ev, 1), *c = color_profile(false);
	struct svg_opts color = { .color_by = "page-faults/cpu-clock" };
	size_t white = 0;
	char name[32], *text;

	(void) state;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (int i = 0; i < 300; i++) {
			uint32_t x;

			snprintf(name, sizeof(name), kinds[k] == FRAME_WAIT ? "[wait: w%d]" :
				 kinds[k] == FRAME_SPECIAL ? "[s%d]" : "f%d", i);
			x = frame(p, kinds[k], name, kinds[k] == FRAME_PYTHON ? "app.py" : NULL, 0,
				  kinds[k] == FRAME_NATIVE ? "lib.so" : NULL);
			assert_int_equal(profile_add(p, 0, &x, 1, (uint64_t[]) { 1, 10 }), 0);
		}
	}
	text = write_svg(p, NULL);
	assert_int_equal(assert_labels_legible(text, NULL), 1501);
	free(text);
	text = write_svg(c, &color);
	assert_true(assert_labels_legible(text, &white) >= 5);
	assert_true(white >= 1);
	free(text);
	profile_free(c);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_xml),
		cmocka_unit_test(test_waits),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_stable),
		cmocka_unit_test(test_script),
		cmocka_unit_test(test_ratios),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_color_order),
		cmocka_unit_test(test_color_clip),
		cmocka_unit_test(test_color_layout),
		cmocka_unit_test(test_color_named),
		cmocka_unit_test(test_color_units),
		cmocka_unit_test(test_color_check),
		cmocka_unit_test(test_label_contrast),
		cmocka_unit_test(test_speed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
