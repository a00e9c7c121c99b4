/*
 * Unit tests of hwspy stat's findings (analysis/rules.c) and report (analysis/report.c,
 * report_json.c) on synthetic counts: each rule fires past its threshold and not at it,
 * hardware rules on hardware counts no machine here has, what is missing is said as not measured, functions are
 * named from the attribution callback, one cause is told once, and the JSON parses.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/stat.h"

#define WALL_NS 5000000000ull   /* 5 s */

static void add(struct stat_totals *t, const char *name, double value, bool hardware)
{
	struct stat_event *e = &t->ev[t->n_ev++];

	*e = (struct stat_event) { .counted = value >= 0, .error = value >= 0 ? 0 : -ENOENT,
				   .value = value >= 0 ? value : 0, .hardware = hardware,
				   .listed = value >= 0, .enabled_ns = WALL_NS,
				   .running_ns = WALL_NS };
	snprintf(e->name, sizeof(e->name), "%s", name);
}

/* A software-only machine: the hardware events did not open. */
static void software(struct stat_totals *t, double cpus, double switches_s, double faults_s)
{
	*t = (struct stat_totals) { .wall_ns = WALL_NS, .voluntary = -1, .involuntary = -1 };
	snprintf(t->target, sizeof(t->target), "pid 1");
	add(t, "task-clock", cpus * WALL_NS, false);
	add(t, "context-switches", switches_s * 5, false);
	add(t, "page-faults", faults_s * 5, false);
	add(t, "major-faults", 0, false);
	add(t, "cycles", -1, true);
	add(t, "instructions", -1, true);
	add(t, "LLC-load-misses", -1, true);
}

static const struct stat_finding *found(const struct stat_findings *f, const char *id)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->f[i].id, id))
			return &f->f[i];
	return NULL;
}

static bool unmeasured(const struct stat_findings *f, const char *id)
{
	for (size_t i = 0; i < f->n_unmeasured; i++)
		if (!strcmp(f->u[i].id, id))
			return true;
	return false;
}

/* The attribution: every event's functions are "busy (t.py:1)" 70% (no label: its text is it)
 * and "other (/src/t/o.py:9)" 30%, labelled "other (o.py:9)" */
static unsigned attr_calls;
static size_t fake_functions(void *ctx, const char *ev, struct stat_func *ret, size_t max,
			     uint64_t *ret_samples)
{
	(void) ctx;
	attr_calls++;
	*ret_samples = 340;
	assert_non_null(ev);
	assert_true(max >= 2);
	snprintf(ret[0].text, sizeof(ret[0].text), "busy (t.py:1)");
	ret[0].share = 0.7;
	snprintf(ret[1].text, sizeof(ret[1].text), "other (/src/t/o.py:9)");
	snprintf(ret[1].label, sizeof(ret[1].label), "other (o.py:9)");
	ret[1].share = 0.3;
	return 2;
}

static void test_cpu_bound(void **state)
{
	struct stat_totals t;
	struct stat_findings f;

	(void) state;
	software(&t, 0.99, 50, 100);
	stat_find(&t, NULL, &f);
	assert_int_equal(f.n, 0);
	/* the hardware rules could not be looked for, and say so */
	assert_true(unmeasured(&f, "low-ipc"));
	assert_true(unmeasured(&f, "high-llc-mpki"));
	/* a rule whose events were not asked for at all is no "not measured" */
	assert_false(unmeasured(&f, "high-branch-miss-rate"));
}

static void test_waiting(void **state)
{
	struct stat_attribution attr = { .functions = fake_functions };
	const struct stat_finding *x;
	struct stat_totals t;
	struct stat_findings f;

	(void) state;
	software(&t, 0.02, 20, 10);
	attr_calls = 0;
	stat_find(&t, &attr, &f);
	x = found(&f, "low-cpu-utilization");
	assert_non_null(x);
	assert_true(x->value > 0.019 && x->value < 0.021);
	assert_true(x->threshold == 0.5);
	assert_int_equal(x->n_funcs, 2);
	assert_string_equal(x->funcs[0].text, "busy (t.py:1)");
	assert_int_equal(f.n, 1);
	/* exactly at the threshold is no finding */
	software(&t, 0.5, 20, 10);
	stat_find(&t, NULL, &f);
	assert_null(found(&f, "low-cpu-utilization"));
	software(&t, 0.49, 20, 10);
	stat_find(&t, NULL, &f);
	assert_non_null(found(&f, "low-cpu-utilization"));
}

static void test_switches_and_faults(void **state)
{
	struct stat_attribution attr = { .functions = fake_functions };
	struct stat_totals t;
	struct stat_findings f;

	(void) state;
	software(&t, 1.5, 4000, 60000);
	t.voluntary = 18000;
	t.involuntary = 2000 * 5;                /* 2000 /s */
	t.ev[3].value = 200;                     /* 40 major faults a second */
	stat_find(&t, &attr, &f);
	assert_non_null(found(&f, "high-switch-rate"));
	assert_non_null(found(&f, "many-page-faults"));
	assert_non_null(found(&f, "many-major-faults"));
	assert_null(found(&f, "high-involuntary-switches"));     /* fewer than voluntary */
	t.voluntary = 1000;
	stat_find(&t, &attr, &f);
	assert_non_null(found(&f, "high-involuntary-switches"));
	assert_null(found(&f, "low-cpu-utilization"));
	assert_int_equal(found(&f, "many-page-faults")->n_funcs, 2);
	assert_string_equal(found(&f, "many-page-faults")->event, "page-faults");
	assert_true(found(&f, "many-page-faults")->value > 59999.0 &&
		    found(&f, "many-page-faults")->value < 60001.0);
	/* under each threshold: none */
	software(&t, 1.0, 999, 4999);
	t.involuntary = 499 * 5;
	t.ev[3].value = 50;                      /* 10 a second: not over */
	stat_find(&t, NULL, &f);
	assert_int_equal(f.n, 0);
}

/* Hardware counts (no PMU here: synthetic), each rule past its threshold and not. */
static void hardware(struct stat_totals *t, double ipc, double llc_mpki, double cache_mpki,
		     double dtlb_mpki, double branch_rate)
{
	double insn = 1e10;

	*t = (struct stat_totals) { .wall_ns = WALL_NS, .voluntary = -1, .involuntary = -1,
				    .have_pmu = true };
	add(t, "task-clock", WALL_NS, false);
	add(t, "cycles", insn / ipc, true);
	add(t, "instructions:u", insn, true);
	add(t, "LLC-load-misses", llc_mpki * insn / 1000, true);
	add(t, "cache-misses", cache_mpki * insn / 1000, true);
	add(t, "cache-references", cache_mpki * insn / 1000 * 20, true);    /* 5% miss rate */
	add(t, "dTLB-load-misses", dtlb_mpki * insn / 1000, true);
	add(t, "branches", insn / 5, true);
	add(t, "branch-misses", insn / 5 * branch_rate / 100, true);
}

static void test_hardware_rules(void **state)
{
	struct stat_totals t;
	struct stat_findings f;
	const struct stat_finding *x;

	(void) state;
	hardware(&t, 0.6, 41, 45, 2.5, 7);
	stat_find(&t, NULL, &f);
	x = found(&f, "low-ipc");
	assert_non_null(x);
	assert_true(x->value > 0.59 && x->value < 0.61);
	x = found(&f, "high-llc-mpki");
	assert_non_null(x);
	assert_true(x->value > 40.9 && x->value < 41.1);
	assert_string_equal(x->event, "LLC-load-misses");
	/* cache-misses per 1k instructions is the same cause: told once */
	assert_null(found(&f, "high-cache-mpki"));
	assert_null(found(&f, "high-cache-miss-rate"));         /* 5% */
	assert_non_null(found(&f, "high-dtlb-mpki"));
	x = found(&f, "high-branch-miss-rate");                  /* "branches" stands for it */
	assert_non_null(x);
	assert_true(x->value > 6.9 && x->value < 7.1);
	assert_int_equal(f.n_unmeasured, 0);

	hardware(&t, 1.5, 5, 12, 0.5, 2);
	stat_find(&t, NULL, &f);
	assert_null(found(&f, "low-ipc"));
	assert_null(found(&f, "high-llc-mpki"));
	assert_non_null(found(&f, "high-cache-mpki"));          /* without the LLC finding */
	assert_null(found(&f, "high-dtlb-mpki"));
	assert_null(found(&f, "high-branch-miss-rate"));
	/* a counter that never ran: its rules are not measured, not 0 */
	t.ev[1].counted = false;
	t.ev[1].error = 0;
	stat_find(&t, NULL, &f);
	assert_true(unmeasured(&f, "low-ipc"));
}

static void test_report(void **state)
{
	struct stat_attribution attr = { .functions = fake_functions };
	char path[] = "/tmp/hwspy-stat-XXXXXX", cmd[320], text[8192], *line;
	struct stat_totals t;
	struct stat_findings f;
	FILE *out;
	size_t n;
	int fd;

	(void) state;
	software(&t, 0.02, 20, 10);
	t.sampled = true;
	t.ev[0].running_ns = WALL_NS / 2;        /* multiplexed: shown as (50.0%) */
	stat_find(&t, &attr, &f);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	out = fdopen(fd, "w+");
	stat_report_text(&t, &f, false, out);
	rewind(out);
	n = fread(text, 1, sizeof(text) - 1, out);
	text[n] = '\0';
	/* line by line: cmocka cuts a long message, and the TAP line after it with it */
	for (char *l = text, *end; *l; l = end + 1) {
		end = l + strcspn(l, "\n");
		if (!*end) {
			print_message("# %s\n", l);
			break;
		}
		*end = '\0';
		print_message("# %s\n", l);
		*end = '\n';
	}
	assert_non_null(strstr(text, "task-clock"));
	assert_non_null(strstr(text, "0.020 CPUs utilised"));
	assert_non_null(strstr(text, "(50.0%)"));
	assert_non_null(strstr(text, "CPU utilisation: 0.02 CPUs (low, < 0.5 CPUs)"));
	/* by their labels (module-relative paths) */
	assert_non_null(strstr(text, "70% of 340 context-switches samples in busy (t.py:1), 30% in "
				    "other (o.py:9)"));
	/* without a PMU, the families of what is missing, in one short line */
	line = strstr(text, "\n not measured (no hardware PMU here): instructions and cache "
		      "events; see 'hwspy list'\n");
	assert_non_null(line);
	assert_true(strchr(line + 1, '\n') - line <= 100);
	assert_null(strstr(text, "without the sampling run"));
	assert_null(strstr(text, "<not supported>      cycles"));   /* defaults that do not open */
	/* --full-paths: by their texts */
	assert_int_equal(ftruncate(fd, 0), 0);
	rewind(out);
	stat_report_text(&t, &f, true, out);
	rewind(out);
	n = fread(text, 1, sizeof(text) - 1, out);
	text[n] = '\0';
	assert_non_null(strstr(text, "in busy (t.py:1), 30% in other (/src/t/o.py:9)"));
	/* the JSON parses, and holds the finding, its functions with full paths (data) */
	assert_int_equal(ftruncate(fd, 0), 0);
	rewind(out);
	assert_int_equal(stat_report_json(&t, &f, out), 0);
	fclose(out);
	snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; d=json.load(open(\"%s\")); "
		 "assert d[\"findings\"][0][\"id\"]==\"low-cpu-utilization\"; "
		 "assert \"other (/src/t/o.py:9)\" in str(d)' 2>&1", path);
	if (system("python3 -c pass 2>/dev/null") == 0)
		assert_int_equal(system(cmd), 0);
	unlink(path);
}

/* Kernel mode refused (user space only): context-switches not counted, and said so apart from
 * the events a PMU would count; the JSON says user_space_only. */
static void test_user_only_report(void **state)
{
	struct stat_totals t;
	struct stat_findings f;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	(void) state;
	software(&t, 0.9, 0, 10);
	t.user_only = true;
	t.ev[1].counted = false;                /* context-switches */
	t.ev[1].error = -EACCES;
	stat_find(&t, NULL, &f);
	assert_true(unmeasured(&f, "high-switch-rate"));
	out = open_memstream(&text, &len);
	assert_non_null(out);
	stat_report_text(&t, &f, false, out);
	assert_int_equal(fclose(out), 0);
	assert_non_null(strstr(text, "<not counted>      context-switches"));
	assert_non_null(strstr(text, "not measured (no hardware PMU here): instructions and cache "
				    "events"));
	assert_non_null(strstr(text, "they need 'context-switches', which happen in the kernel: "
				    "not counted in user space alone"));
	free(text);
	text = NULL;
	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(stat_report_json(&t, &f, out), 0);
	assert_int_equal(fclose(out), 0);
	assert_non_null(strstr(text, "\"user_space_only\":true"));
	assert_non_null(strstr(text, "{\"name\":\"context-switches\",\"counted\":false,\"why\":"
				    "\"happens in the kernel: not counted in user space only\"}"));
	free(text);
}

/* The GIL finding: a thread's wait as a share of its time on the CPU and waiting for it (of the
 * run's where its CPU time is not known), from 5% of the run on; the threads it names. */
static void test_gil(void **state)
{
	struct stat_gil_wait gil[] = {
		{ .tid = 11, .name = "MainThread", .wait_ns = 1.2e9, .cpu_ns = 1.0e9 },
		{ .tid = 12, .name = "worker-1", .wait_ns = 1.0e9, .cpu_ns = 1.1e9 },
		{ .tid = 13, .name = "short", .wait_ns = 0.2e9, .cpu_ns = 0.01e9 },   /* 4% of 5 s */
		{ .tid = 14, .name = "", .wait_ns = 0.3e9, .cpu_ns = -1 },            /* 6% of 5 s */
	};
	const struct stat_finding *x;
	struct stat_totals t;
	struct stat_findings f;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	(void) state;
	software(&t, 0.6, 20, 10);
	t.gil = gil;
	t.n_gil = 4;
	stat_find(&t, NULL, &f);
	assert_null(found(&f, "gil-contention"));               /* not measured: no finding */
	t.gil_measured = true;
	stat_find(&t, NULL, &f);
	x = found(&f, "gil-contention");
	assert_non_null(x);
	assert_true(x->value > 54.5 && x->value < 54.6);        /* 1.2 / 2.2 */
	assert_true(x->threads);
	assert_int_equal(x->n_funcs, 2);                        /* short waited too little, 14 6% */
	assert_string_equal(x->funcs[0].text, "MainThread");
	assert_int_equal(x->funcs[0].tid, 11);
	assert_int_equal(x->funcs[1].tid, 12);
	assert_true(x->funcs[1].share > 0.47 && x->funcs[1].share < 0.48);
	out = open_memstream(&text, &len);
	stat_report_text(&t, &f, false, out);
	fclose(out);
	assert_non_null(strstr(text, "waiting: MainThread (tid 11) 55%, worker-1 (tid 12) 48%"));
	assert_non_null(strstr(text, "'hwspy record --wall'"));
	assert_null(strstr(text, "-e context-switches"));
	free(text);
	/* under the threshold: 0.3 / (2 + 0.3) */
	gil[0] = (struct stat_gil_wait) { .tid = 11, .wait_ns = 0.3e9, .cpu_ns = 2e9 };
	t.n_gil = 1;
	stat_find(&t, NULL, &f);
	assert_null(found(&f, "gil-contention"));
}

/* Too few samples of a finding's event: no share, and the report says how many there were. */
static size_t few_functions(void *ctx, const char *ev, struct stat_func *ret, size_t max,
			    uint64_t *ret_samples)
{
	(void) ctx;
	(void) ev;
	(void) ret;
	(void) max;
	*ret_samples = 12;
	return 0;
}

static void test_few_samples(void **state)
{
	struct stat_attribution attr = { .functions = few_functions };
	struct stat_totals t;
	struct stat_findings f;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	(void) state;
	software(&t, 1.0, 20, 60000);
	stat_find(&t, &attr, &f);
	assert_non_null(found(&f, "many-page-faults"));
	assert_int_equal(found(&f, "many-page-faults")->n_funcs, 0);
	assert_int_equal(found(&f, "many-page-faults")->samples, 12);
	out = open_memstream(&text, &len);
	stat_report_text(&t, &f, false, out);
	fclose(out);
	assert_non_null(strstr(text, "too few page-faults samples in Python code (12, under 30) to "
				     "name where"));
	free(text);
}

static void test_explain(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	const char *ev[16];
	size_t n = stat_rule_events(ev, 16), rules = 0;

	(void) state;
	stat_explain(out);
	fclose(out);
	for (const char *p = text; (p = strstr(p, "\n  source: ")); p++)
		rules++;
	assert_true(rules >= 10);
	assert_non_null(strstr(text, "low-ipc: IPC (instructions per cycle) < 1"));
	assert_non_null(strstr(text, "Brendan Gregg"));
	assert_true(n >= 5);
	free(text);
}

/* The derived metrics take the reference of a miss event from output/ratios.h's one map: a
 * store miss is a share of its stores, a prefetch miss of its prefetches (stat had its own map
 * of cache, branch and load misses alone), branch-misses of branches where that is counted. */
static void test_miss_references(void **state)
{
	static const char *const lines[] = {
		"0.50 per 1k instructions, 10.00% of L1-dcache-stores",
		"0.20 per 1k instructions, 4.00% of L1-dcache-prefetches",
		"1.00 per 1k instructions, 20.00% of LLC-loads",
		"2.00 per 1k instructions, 0.40% of branches",
	};
	struct stat_totals t = { .wall_ns = WALL_NS, .voluntary = -1, .involuntary = -1 };
	struct stat_findings f;
	struct stat_derived d;
	char *text = NULL;
	size_t size = 0;
	FILE *out;

	(void) state;
	add(&t, "instructions", 1e9, true);
	add(&t, "L1-dcache-store-misses", 5e5, true);
	add(&t, "L1-dcache-stores", 5e6, true);
	add(&t, "L1-dcache-prefetch-misses", 2e5, true);
	add(&t, "L1-dcache-prefetches", 5e6, true);
	add(&t, "LLC-load-misses:u", 1e6, true);
	add(&t, "LLC-loads", 5e6, true);
	add(&t, "branch-misses", 2e6, true);
	add(&t, "branches", 5e8, true);
	stat_derive(&t, &t.ev[1], &d);
	assert_string_equal(d.reference, "L1-dcache-stores");
	assert_true(d.miss_rate > 9.99 && d.miss_rate < 10.01);
	stat_derive(&t, &t.ev[2], &d);
	assert_string_equal(d.reference, "");
	assert_true(isnan(d.mpki) && isnan(d.miss_rate));
	stat_find(&t, NULL, &f);
	out = open_memstream(&text, &size);
	assert_non_null(out);
	stat_report_text(&t, &f, false, out);
	assert_int_equal(fclose(out), 0);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (!strstr(text, lines[i]))
			fail_msg("no '%s' in the table", lines[i]);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_bound),
		cmocka_unit_test(test_waiting),
		cmocka_unit_test(test_switches_and_faults),
		cmocka_unit_test(test_hardware_rules),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_user_only_report),
		cmocka_unit_test(test_gil),
		cmocka_unit_test(test_few_samples),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_miss_references),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
