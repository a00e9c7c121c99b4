/* The Prometheus / OpenMetrics writer: exact bytes of both formats, escaping, numbers, the
 * rules on names and labels, limits, content negotiation.
 *
 * `test_output_metrics --write DIR` writes DIR/metrics.prom (text 0.0.4), DIR/metrics.om
 * (OpenMetrics) and DIR/expected.txt (each family and sample, strings in hex: no escaping) for
 * check_metrics.py, which runs promtool over the first and parses both with Python's
 * prometheus_client. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "output/metrics.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static char *write_metrics(const struct metrics *m, bool openmetrics)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(metrics_write(m, openmetrics, f), 0);
	fclose(f);
	assert_int_equal(strlen(text), len);
	return text;
}

static size_t family(struct metrics *m, const char *name, enum metric_type t, const char *unit,
		     const char *help)
{
	size_t id;

	assert_int_equal(metrics_family(m, name, t, unit, help, &id), 0);
	return id;
}

/* The small set whose bytes test_exact_bytes() knows. */
static struct metrics *small_set(void)
{
	struct metrics *m = metrics_new();
	const char *common[] = { "host", "box", NULL };
	const char *l42[] = { "pid", "42", "comm", "python3", NULL };
	const char *l43[] = { "pid", "43", "comm", "a\"b\\c\nd", NULL };
	size_t samples, rss, off;

	assert_non_null(m);
	samples = family(m, "hwspy_samples", METRIC_COUNTER, "", "Samples taken, by process.");
	rss = family(m, "hwspy_rss_bytes", METRIC_GAUGE, "bytes",
		     "Resident memory.\nSecond line with \\ and \"q\"");
	off = family(m, "hwspy_off_cpu_seconds", METRIC_COUNTER, "seconds", "Off-CPU time.");
	family(m, "hwspy_up", METRIC_GAUGE, NULL, NULL);
	assert_int_equal(metrics_set_common(m, common), 0);
	assert_int_equal(metrics_add(m, samples, l42, 12345), 0);
	assert_int_equal(metrics_add(m, samples, l43, 0), 0);
	assert_int_equal(metrics_add(m, rss, l42, 1.5e9), 0);
	assert_int_equal(metrics_add(m, rss, l43, 0.1), 0);
	assert_int_equal(metrics_add(m, off, l42, 2.25), 0);
	return m;
}

static void test_exact_bytes(void **state)
{
	struct metrics *m = small_set();
	char *text = write_metrics(m, false), *om = write_metrics(m, true);

	(void) state;
	assert_string_equal(text,
		"# HELP hwspy_samples_total Samples taken, by process.\n"
		"# TYPE hwspy_samples_total counter\n"
		"hwspy_samples_total{host=\"box\",pid=\"42\",comm=\"python3\"} 12345\n"
		"hwspy_samples_total{host=\"box\",pid=\"43\",comm=\"a\\\"b\\\\c\\nd\"} 0\n"
		"# HELP hwspy_rss_bytes Resident memory.\\nSecond line with \\\\ and \"q\"\n"
		"# TYPE hwspy_rss_bytes gauge\n"
		"hwspy_rss_bytes{host=\"box\",pid=\"42\",comm=\"python3\"} 1500000000\n"
		"hwspy_rss_bytes{host=\"box\",pid=\"43\",comm=\"a\\\"b\\\\c\\nd\"} 0.1\n"
		"# HELP hwspy_off_cpu_seconds_total Off-CPU time.\n"
		"# TYPE hwspy_off_cpu_seconds_total counter\n"
		"hwspy_off_cpu_seconds_total{host=\"box\",pid=\"42\",comm=\"python3\"} 2.25\n"
		"# TYPE hwspy_up gauge\n");
	assert_string_equal(om,
		"# HELP hwspy_samples Samples taken, by process.\n"
		"# TYPE hwspy_samples counter\n"
		"hwspy_samples_total{host=\"box\",pid=\"42\",comm=\"python3\"} 12345\n"
		"hwspy_samples_total{host=\"box\",pid=\"43\",comm=\"a\\\"b\\\\c\\nd\"} 0\n"
		"# HELP hwspy_rss_bytes Resident memory.\\nSecond line with \\\\ and \\\"q\\\"\n"
		"# TYPE hwspy_rss_bytes gauge\n"
		"# UNIT hwspy_rss_bytes bytes\n"
		"hwspy_rss_bytes{host=\"box\",pid=\"42\",comm=\"python3\"} 1500000000\n"
		"hwspy_rss_bytes{host=\"box\",pid=\"43\",comm=\"a\\\"b\\\\c\\nd\"} 0.1\n"
		"# HELP hwspy_off_cpu_seconds Off-CPU time.\n"
		"# TYPE hwspy_off_cpu_seconds counter\n"
		"# UNIT hwspy_off_cpu_seconds seconds\n"
		"hwspy_off_cpu_seconds_total{host=\"box\",pid=\"42\",comm=\"python3\"} 2.25\n"
		"# TYPE hwspy_up gauge\n"
		"# EOF\n");
	free(text);
	free(om);
	metrics_free(m);
}

/* Samples without labels, families written in creation order even when filled in another. */
static void test_order_and_no_labels(void **state)
{
	struct metrics *m = metrics_new();
	size_t a = family(m, "a", METRIC_GAUGE, "", "A."), b = family(m, "b", METRIC_GAUGE, "", "B.");
	const char *x1[] = { "x", "1", NULL }, *x2[] = { "x", "2", NULL };
	char *text;

	(void) state;
	assert_int_equal(metrics_add(m, b, NULL, 1), 0);
	assert_int_equal(metrics_add(m, a, x2, 2), 0);
	assert_int_equal(metrics_add(m, a, x1, 3), 0);
	text = write_metrics(m, false);
	assert_string_equal(text, "# HELP a A.\n# TYPE a gauge\na{x=\"2\"} 2\na{x=\"1\"} 3\n"
				  "# HELP b B.\n# TYPE b gauge\nb 1\n");
	free(text);
	metrics_free(m);
}

static void test_utf8_repaired(void **state)
{
	struct metrics *m = metrics_new();
	size_t f = family(m, "g", METRIC_GAUGE, "", "bad \xff help \xe6\x97");
	const char *l[] = { "v", "bad\xff\xc0\xed\xa0\x80 utf8 \xe6\x97\xa5 \xf0\x9f\x90\x8d \t\r", NULL };
	char *text;

	(void) state;
	assert_int_equal(metrics_add(m, f, l, 1), 0);
	text = write_metrics(m, true);
	/* one U+FFFD per maximal invalid part (\xed\xa0\x80: a surrogate, three) as Python does */
	assert_string_equal(text,
		"# HELP g bad \xef\xbf\xbd help \xef\xbf\xbd\n# TYPE g gauge\n"
		"g{v=\"bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd utf8 \xe6\x97\xa5 "
		"\xf0\x9f\x90\x8d \t\r\"} 1\n# EOF\n");
	free(text);
	metrics_free(m);
}

static void test_values(void **state)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
		{ 0, "0" }, { -0.0, "0" }, { 1, "1" }, { -1, "-1" }, { 12345, "12345" },
		{ 1e15, "1000000000000000" }, { 9007199254740993.0, "9007199254740992" },
		{ -0x1p62, "-4611686018427387904" }, { 0x1p63, "9.223372036854776e+18" },
		{ 0.1, "0.1" }, { 2.5, "2.5" }, { 1.0 / 3, "0.3333333333333333" },
		{ 0.1 + 0.2, "0.30000000000000004" }, { 1e-7, "1e-07" }, { 1.5e300, "1.5e+300" },
		{ DBL_MAX, "1.7976931348623157e+308" }, { -DBL_MIN, "-2.2250738585072014e-308" },
		{ NAN, "NaN" }, { INFINITY, "+Inf" }, { -INFINITY, "-Inf" },
	};
	struct metrics *m = metrics_new();
	size_t f = family(m, "v", METRIC_GAUGE, "", "");

	(void) state;
	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		char key[16], want[64], *text;
		const char *l[] = { "i", key, NULL };

		snprintf(key, sizeof(key), "%zu", i);
		metrics_clear(m);
		assert_int_equal(metrics_add(m, f, l, cases[i].v), 0);
		text = write_metrics(m, false);
		snprintf(want, sizeof(want), "# TYPE v gauge\nv{i=\"%zu\"} %s\n", i, cases[i].text);
		assert_string_equal(text, want);
		free(text);
	}
	metrics_free(m);
}

/* Every finite double reads back as itself (random bit patterns, fixed seed). */
static void test_values_round_trip(void **state)
{
	struct metrics *m = metrics_new();
	size_t f = family(m, "v", METRIC_GAUGE, "", ""), n = 0;
	uint64_t x = 0x9e3779b97f4a7c15u;
	double want[2000];
	char *text, *p;

	(void) state;
	for (size_t i = 0; i < N_ELEMS(want); i++) {
		char key[16];
		const char *l[] = { "i", key, NULL };

		do {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			memcpy(&want[i], &x, sizeof(double));
			if (i % 2)      /* some nearer 1, where seconds and ratios are */
				want[i] = ldexp(want[i] - trunc(want[i]), -(int) (x % 40));
		} while (!isfinite(want[i]));
		snprintf(key, sizeof(key), "%zu", i);
		assert_int_equal(metrics_add(m, f, l, want[i]), 0);
	}
	text = write_metrics(m, false);
	for (p = strchr(text, '\n') + 1; *p; p = strchr(p, '\n') + 1, n++) {
		char *sp = strchr(p, ' ');
		double got = strtod(sp + 1, NULL);

		if (got != want[n] && !(got == 0 && want[n] == 0))
			fail_msg("sample %zu: %.17g written as %.*s", n, want[n],
				 (int) (strchr(p, '\n') - sp - 1), sp + 1);
	}
	assert_int_equal(n, N_ELEMS(want));
	free(text);
	metrics_free(m);
}

static void test_family_rules(void **state)
{
	struct metrics *m = metrics_new();
	size_t id, again;

	(void) state;
	assert_int_equal(metrics_family(m, "x_seconds", METRIC_COUNTER, "seconds", "h", &id), 0);
	assert_int_equal(metrics_family(m, "x_seconds", METRIC_COUNTER, "seconds", "h", &again), 0);
	assert_int_equal(id, again);
	/* same name, anything else different */
	assert_int_equal(metrics_family(m, "x_seconds", METRIC_GAUGE, "seconds", "h", &again), -EINVAL);
	assert_int_equal(metrics_family(m, "x_seconds", METRIC_COUNTER, "", "h", &again), -EINVAL);
	assert_int_equal(metrics_family(m, "x_seconds", METRIC_COUNTER, "seconds", "H", &again), -EINVAL);
	/* names */
	assert_int_equal(metrics_family(m, "", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "1x", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "a:b", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "a-b", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "a b", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "caf\xc3\xa9", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, NULL, METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "ev_total", METRIC_COUNTER, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "ev", (enum metric_type) 7, "", "", &id), -EINVAL);
	/* units: the name's suffix after '_' */
	assert_int_equal(metrics_family(m, "rss", METRIC_GAUGE, "bytes", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "rssbytes", METRIC_GAUGE, "bytes", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "bytes", METRIC_GAUGE, "bytes", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "rss_bytes", METRIC_GAUGE, "bytes", "", &id), 0);
	/* clashes with a counter's sample names, either way round */
	assert_int_equal(metrics_family(m, "x_seconds_total", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "x_seconds_created", METRIC_GAUGE, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "g_total", METRIC_GAUGE, "", "", &id), 0);
	assert_int_equal(metrics_family(m, "g", METRIC_COUNTER, "", "", &id), -EINVAL);
	assert_int_equal(metrics_family(m, "g_total_x", METRIC_GAUGE, "", "", &id), 0);
	metrics_free(m);
}

static void test_label_rules(void **state)
{
	struct metrics *m = metrics_new();
	size_t c = family(m, "c", METRIC_COUNTER, "", ""), g = family(m, "g", METRIC_GAUGE, "", "");
	const char *odd[] = { "a", NULL }, *bad1[] = { "1a", "x", NULL }, *bad2[] = { "a-b", "x", NULL };
	const char *reserved[] = { "__name__", "x", NULL }, *twice[] = { "a", "1", "a", "2", NULL };
	const char *empty_key[] = { "", "x", NULL }, *ok[] = { "_a", "", "b9", "x", NULL };
	const char *common[] = { "host", "box", NULL }, *has_host[] = { "host", "h", NULL };
	const char *many[2 * METRICS_MAX_LABELS + 3];
	char keys[METRICS_MAX_LABELS + 1][8];

	(void) state;
	assert_int_equal(metrics_add(m, c, odd, 1), -EINVAL);
	assert_int_equal(metrics_add(m, c, bad1, 1), -EINVAL);
	assert_int_equal(metrics_add(m, c, bad2, 1), -EINVAL);
	assert_int_equal(metrics_add(m, c, reserved, 1), -EINVAL);
	assert_int_equal(metrics_add(m, c, twice, 1), -EINVAL);
	assert_int_equal(metrics_add(m, c, empty_key, 1), -EINVAL);
	assert_int_equal(metrics_add(m, 2, ok, 1), -EINVAL);           /* no such family */
	/* counters: never NaN nor negative; +Inf is a value */
	assert_int_equal(metrics_add(m, c, ok, NAN), -EINVAL);
	assert_int_equal(metrics_add(m, c, ok, -1), -EINVAL);
	assert_int_equal(metrics_add(m, c, ok, -INFINITY), -EINVAL);
	assert_int_equal(metrics_add(m, c, ok, INFINITY), 0);
	assert_int_equal(metrics_add(m, g, ok, NAN), 0);
	assert_int_equal(metrics_count(m), 2);
	/* common labels: not a sample's own too, either way round */
	assert_int_equal(metrics_add(m, g, has_host, 1), 0);
	assert_int_equal(metrics_set_common(m, common), -EINVAL);
	metrics_clear(m);
	assert_int_equal(metrics_set_common(m, common), 0);
	assert_int_equal(metrics_add(m, g, has_host, 1), -EINVAL);
	assert_int_equal(metrics_set_common(m, reserved), -EINVAL);
	/* METRICS_MAX_LABELS pairs in all, the common one included */
	for (size_t i = 0; i <= METRICS_MAX_LABELS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		many[2 * i] = keys[i];
		many[2 * i + 1] = "v";
	}
	many[2 * (METRICS_MAX_LABELS - 1)] = NULL;
	assert_int_equal(metrics_add(m, g, many, 1), 0);
	many[2 * (METRICS_MAX_LABELS - 1)] = keys[METRICS_MAX_LABELS - 1];
	many[2 * METRICS_MAX_LABELS] = NULL;
	assert_int_equal(metrics_add(m, g, many, 1), -EINVAL);
	assert_int_equal(metrics_count(m), 1);
	metrics_free(m);
}

static void test_duplicates_and_limit(void **state)
{
	struct metrics *m = metrics_new();
	size_t a = family(m, "a", METRIC_GAUGE, "", ""), b = family(m, "b", METRIC_GAUGE, "", "");
	const char *xy[] = { "x", "1", "y", "2", NULL }, *yx[] = { "y", "2", "x", "1", NULL };
	const char *xy3[] = { "x", "1", "y", "3", NULL }, *x[] = { "x", "1", NULL };
	const char *split1[] = { "x", "1y", NULL }, *split2[] = { "x1", "y", NULL };
	char *text;

	(void) state;
	assert_int_equal(metrics_add(m, a, xy, 1), 0);
	assert_int_equal(metrics_add(m, a, yx, 2), -EEXIST);
	assert_int_equal(metrics_add(m, a, xy3, 3), 0);
	assert_int_equal(metrics_add(m, a, x, 4), 0);
	assert_int_equal(metrics_add(m, a, NULL, 5), 0);
	assert_int_equal(metrics_add(m, a, NULL, 6), -EEXIST);
	assert_int_equal(metrics_add(m, a, split1, 7), 0);
	assert_int_equal(metrics_add(m, a, split2, 8), 0);
	assert_int_equal(metrics_add(m, b, yx, 9), 0);           /* another family */
	assert_int_equal(metrics_count(m), 7);
	/* the limit: counts every family; a duplicate is still told as one */
	metrics_set_limit(m, 8);
	assert_int_equal(metrics_add(m, b, x, 10), 0);
	assert_int_equal(metrics_add(m, b, xy3, 11), -ENOSPC);
	assert_int_equal(metrics_add(m, b, x, 12), -EEXIST);
	assert_int_equal(metrics_count(m), 8);
	text = write_metrics(m, false);
	assert_string_equal(text, "# TYPE a gauge\na{x=\"1\",y=\"2\"} 1\na{x=\"1\",y=\"3\"} 3\n"
				  "a{x=\"1\"} 4\na 5\na{x=\"1y\"} 7\na{x1=\"y\"} 8\n"
				  "# TYPE b gauge\nb{y=\"2\",x=\"1\"} 9\nb{x=\"1\"} 10\n");
	free(text);
	/* clear: families kept, samples gone, the same series again */
	metrics_clear(m);
	assert_int_equal(metrics_count(m), 0);
	assert_int_equal(metrics_add(m, a, xy, 1), 0);
	assert_int_equal(metrics_add(m, a, yx, 1), -EEXIST);
	text = write_metrics(m, false);
	assert_string_equal(text, "# TYPE a gauge\na{x=\"1\",y=\"2\"} 1\n# TYPE b gauge\n");
	free(text);
	metrics_set_limit(m, 0);
	assert_int_equal(metrics_add(m, a, x, 1), -ENOSPC);
	metrics_free(m);
}

/* Many series: the table grows; refilled after a clear, nothing allocated grows further. */
static void test_many_series(void **state)
{
	struct metrics *m = metrics_new();
	size_t f = family(m, "s", METRIC_GAUGE, "", "");

	(void) state;
	for (int round = 0; round < 3; round++) {
		metrics_clear(m);
		for (int i = 0; i < 20000; i++) {
			char pid[16];
			const char *l[] = { "pid", pid, "thread", "main", NULL };

			snprintf(pid, sizeof(pid), "%d", i);
			assert_int_equal(metrics_add(m, f, l, i), 0);
		}
		assert_int_equal(metrics_count(m), 20000);
	}
	{
		const char *l[] = { "thread", "main", "pid", "19999", NULL };

		assert_int_equal(metrics_add(m, f, l, 1), -EEXIST);
	}
	metrics_free(m);
	metrics_free(NULL);
}

static void test_write_error(void **state)
{
	struct metrics *m = small_set();
	FILE *f = fopen("/dev/null", "r");      /* read-only: every write fails */

	(void) state;
	assert_non_null(f);
	assert_true(metrics_write(m, false, f) < 0);
	fclose(f);
	metrics_free(m);
}

static void test_negotiation(void **state)
{
	(void) state;
	/* Prometheus 2.42's scrape Accept header */
	assert_true(metrics_wants_openmetrics("application/openmetrics-text;version=1.0.0,"
		"application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
		"*/*;q=0.1"));
	/* Prometheus 3's, with escaping= parameters and text/plain version=1.0.0 */
	assert_true(metrics_wants_openmetrics("application/openmetrics-text;version=1.0.0;"
		"escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,"
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,"
		"*/*;q=0.2"));
	/* scrape_protocols asking for the text format first */
	assert_false(metrics_wants_openmetrics("text/plain;version=0.0.4;q=0.5,"
		"application/openmetrics-text;version=1.0.0;q=0.4,*/*;q=0.1"));
	assert_false(metrics_wants_openmetrics(NULL));
	assert_false(metrics_wants_openmetrics(""));
	assert_false(metrics_wants_openmetrics("*/*"));
	assert_false(metrics_wants_openmetrics("text/plain"));
	assert_false(metrics_wants_openmetrics("text/html,application/xhtml+xml,*/*;q=0.8"));
	assert_true(metrics_wants_openmetrics("Application/OpenMetrics-Text"));
	assert_true(metrics_wants_openmetrics(" application/openmetrics-text ; version=\"1.0.0\" "));
	assert_true(metrics_wants_openmetrics("text/plain;q=0.5, application/openmetrics-text"));
	assert_false(metrics_wants_openmetrics("application/openmetrics-text;q=0,text/plain"));
	assert_false(metrics_wants_openmetrics("application/openmetrics-text;version=2.0.0"));
	assert_false(metrics_wants_openmetrics("application/json"));
	/* equal q: the first */
	assert_false(metrics_wants_openmetrics("text/plain,application/openmetrics-text"));
	assert_true(metrics_wants_openmetrics("application/openmetrics-text;q=0.5,text/plain;q=0.500"));
	assert_true(metrics_wants_openmetrics("text/plain;q=0.499,application/openmetrics-text;q=0.5"));
	assert_string_equal(metrics_content_type(false), "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(metrics_content_type(true),
			    "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

/* ---- --write DIR: files for check_metrics.py ---------------------------------------------- */

static const char *const hostile[] = {
	"quote\"back\\slash",
	"ctl\x01\x1f\n\t\x7f\r",
	"bad\xff\xc0\xed\xa0\x80 utf8",
	"cut \xe6\x97",
	"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xc3\xa9 \xf0\x9f\x90\x8d",
	"} 1\n# EOF\nx{",
	"",
};

static void hex(FILE *f, const char *s)
{
	fputc('x', f);
	for (; *s; s++)
		fprintf(f, "%02x", (unsigned char) *s);
}

static int write_files(const char *dir)
{
	static const double values[] = { 0, 1, 12345, 0.1, 2.5e-9, 1e300, INFINITY, 4e18 };
	static const double gauge_values[] = { -1, NAN, -INFINITY, -0.25 };
	static const struct {
		const char *name, *unit;
		enum metric_type type;
		int help;
	} fam[] = {
		{ "hwspy_test_events", "", METRIC_COUNTER, 1 },
		{ "hwspy_test_off_cpu_seconds", "seconds", METRIC_COUNTER, 2 },
		{ "hwspy_test_rss_bytes", "bytes", METRIC_GAUGE, 0 },
	};
	struct metrics *m = metrics_new();
	const char *common[] = { "instance_name", "h\"o\\s\nt", NULL };
	char path[4096];
	size_t fams[N_ELEMS(fam)];
	FILE *f;

	snprintf(path, sizeof(path), "%s/expected.txt", dir);
	if (m == NULL || metrics_set_common(m, common) < 0 || (f = fopen(path, "w")) == NULL)
		return 1;
	fprintf(f, "C\tinstance_name\t");
	hex(f, common[1]);
	fputc('\n', f);
	for (size_t i = 0; i < N_ELEMS(fam); i++) {
		if (metrics_family(m, fam[i].name, fam[i].type, fam[i].unit, hostile[fam[i].help],
				   &fams[i]) < 0)
			return 1;
		fprintf(f, "F\t%s\t%s\t%s\t", fam[i].name,
			fam[i].type == METRIC_COUNTER ? "counter" : "gauge", fam[i].unit);
		hex(f, hostile[fam[i].help]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < 3 * N_ELEMS(hostile); i++) {
		size_t fi = i / N_ELEMS(hostile);
		const char *l[] = { "comm", hostile[i % N_ELEMS(hostile)], "pid", i % 2 ? "1" : "2",
				    NULL };
		double v = values[i % N_ELEMS(values)];

		if (fam[fi].type == METRIC_GAUGE && i % 2)
			v = gauge_values[i % N_ELEMS(gauge_values)];
		if (metrics_add(m, fams[fi], l, v) < 0)
			return 1;
		fprintf(f, "S\t%s\t", fam[fi].name);
		hex(f, l[1]);
		fprintf(f, "\t%s\t%.17g\n", l[3], v);
	}
	fclose(f);
	for (int om = 0; om < 2; om++) {
		snprintf(path, sizeof(path), "%s/metrics.%s", dir, om ? "om" : "prom");
		if ((f = fopen(path, "w")) == NULL || metrics_write(m, om, f) < 0)
			return 1;
		fclose(f);
	}
	metrics_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_bytes),
		cmocka_unit_test(test_order_and_no_labels),
		cmocka_unit_test(test_utf8_repaired),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_values_round_trip),
		cmocka_unit_test(test_family_rules),
		cmocka_unit_test(test_label_rules),
		cmocka_unit_test(test_duplicates_and_limit),
		cmocka_unit_test(test_many_series),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_negotiation),
	};

	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_files(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
