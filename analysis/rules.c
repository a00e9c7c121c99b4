/*
 * rules: the findings of hwspy stat (analysis/stat.h). One table of rules, each a metric of the
 * counts, a threshold and where that threshold comes from, what it means in plain words and
 * what to do next; `hwspy stat --explain` prints it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/stat.h"

enum metric_kind {
	M_RATIO,                        /* scale * num / den */
	M_RATE,                         /* num per second of wall time */
	M_CORES,                        /* num (ns) / wall (ns): CPUs used */
	M_INVOLUNTARY,                  /* involuntary switches (/proc) per second */
	M_GIL,                          /* the most a thread waited for the GIL, in % of its time
	                                 * on the CPU and waiting for it (gil_share()) */
};

struct rule {
	const char *id;
	const char *metric;             /* as the finding names it */
	enum metric_kind kind;
	const char *num, *den;          /* events ("a|b": the first counted); den for M_RATIO */
	double scale;
	enum stat_cmp cmp;
	double threshold;
	const char *unit;
	const char *meaning, *advice;
	const char *by;                 /* the event its functions are named by, NULL: none */
	const char *source;             /* where the threshold comes from */
	const char *told_by;            /* a rule before it for the same cause: when that one
	                                 * fired, this one is left out (NULL: none) */
};

static const struct rule rules[] = {
	{
		"low-ipc", "IPC (instructions per cycle)", M_RATIO, "instructions", "cycles|cpu-cycles",
		1, STAT_BELOW, 1.0, "",
		"the CPU stalls more than it computes: waiting on memory (cache or TLB misses) or on "
		"long chains of dependent instructions",
		"see the cache and TLB findings, and where IPC is low: 'hwspy record -e "
		"cycles,instructions -o ipc.svg'",
		"cycles",
		/* Gregg's rule of thumb for modern x86 */
		"Brendan Gregg, 'CPU Utilization is Wrong' (2017): an IPC under 1.0 likely means a "
		"stall-bound (memory-bound) workload, over 1.0 an instruction-bound one",
	},
	{
		"high-llc-mpki", "LLC-load-misses per 1k instructions", M_RATIO, "LLC-load-misses",
		"instructions", 1000, STAT_ABOVE, 10, "",
		"many loads miss the last-level cache and wait for DRAM: a scattered access pattern "
		"or a working set larger than the cache",
		"touch memory in order (contiguous arrays, loops over the last axis), shrink the data "
		"(smaller dtypes, fewer copies), block or tile loops over large arrays",
		"LLC-load-misses",
		"hwspy's choice: a DRAM access costs ~100 ns (hundreds of instructions' time), so over "
		"10 per 1k instructions the misses take most of the time",
	},
	{
		"high-cache-mpki", "cache-misses per 1k instructions", M_RATIO, "cache-misses",
		"instructions", 1000, STAT_ABOVE, 10, "",
		"many memory accesses miss the caches: a scattered access pattern or a working set "
		"larger than the cache",
		"touch memory in order (contiguous arrays, loops over the last axis), shrink the data "
		"(smaller dtypes, fewer copies), block or tile loops over large arrays",
		"cache-misses",
		"hwspy's choice, as for LLC-load-misses (cache-misses counts last-level misses on x86)",
		"high-llc-mpki",
	},
	{
		"high-cache-miss-rate", "cache miss rate", M_RATIO, "cache-misses", "cache-references",
		100, STAT_ABOVE, 10, "%",
		"a large share of the references to the last-level cache miss it",
		"improve locality: process data in the order it is laid out, keep hot data together",
		"cache-misses",
		"perf stat's own colours (tools/perf/util/stat-shadow.c): a miss rate over 5% is "
		"yellow, over 10% magenta, over 20% red; hwspy flags magenta and up",
	},
	{
		"high-l1d-mpki", "L1-dcache-load-misses per 1k instructions", M_RATIO,
		"L1-dcache-load-misses", "instructions", 1000, STAT_ABOVE, 50, "",
		"many loads miss the first-level cache: strided or scattered accesses",
		"access arrays with unit stride (contiguous, C order), avoid pointer chasing "
		"(lists of Python objects) in hot loops",
		"L1-dcache-load-misses",
		"hwspy's choice: an L1 miss that hits L2 costs only ~10 cycles, so only one in every "
		"20 instructions (50 per 1k) is worth a look",
	},
	{
		"high-dtlb-mpki", "dTLB-load-misses per 1k instructions", M_RATIO, "dTLB-load-misses",
		"instructions", 1000, STAT_ABOVE, 1, "",
		"many loads miss the TLB: memory touched over a large range in small (4 KiB) pages",
		"use huge pages (transparent huge pages: madvise(MADV_HUGEPAGE), or "
		"/sys/kernel/mm/transparent_hugepage/enabled), keep hot data together, avoid "
		"fragmented heaps",
		"dTLB-load-misses",
		"hwspy's choice: each miss is a page walk of tens of cycles, more when the page "
		"tables miss the cache; over 1 per 1k instructions they cost several percent",
	},
	{
		"high-branch-miss-rate", "branch miss rate", M_RATIO, "branch-misses",
		"branch-instructions|branches", 100, STAT_ABOVE, 5, "%",
		"the CPU mispredicts many branches: branches on unpredictable data",
		"sort or partition the data before branching on it, or use branch-free vectorised "
		"operations (numpy.where, masks)",
		"branch-misses",
		"perf stat's own colours (tools/perf/util/stat-shadow.c): a branch miss rate over 5% "
		"is coloured",
	},
	{
		"gil-contention", "time a thread waited for the GIL (the most, in % of its time on "
		"the CPU and waiting for it)", M_GIL, NULL, NULL, 1, STAT_ABOVE, 20, "%",
		"threads take turns on the GIL: Python code in several threads runs one thread at a "
		"time, so the others wait instead of running",
		"run CPU-bound Python in processes (multiprocessing, concurrent.futures."
		"ProcessPoolExecutor) or in native code that releases the GIL (numpy, a C "
		"extension), or on a free-threaded build (3.13t+); see where threads wait for it: "
		"'hwspy record --wall' (their [wait: GIL] frames), and what runs while they do: "
		"'hwspy record --gil'",
		NULL,
		"hwspy's choice: a thread that waits for the GIL a fifth of the time it would run "
		"loses that much to turn-taking (two threads running Python code wait about half "
		"of it each, on a busy machine as on an idle one); only threads that waited 5% of "
		"the run or more count",
	},
	{
		"low-cpu-utilization", "CPU utilisation", M_CORES, "task-clock", NULL, 1,
		STAT_BELOW, 0.5, " CPUs",
		"the program waits most of the time: for I/O, a lock, a sleep, or another thread's GIL",
		"see where it waits and why: 'hwspy record --wall' (time on and off the CPU, each "
		"wait's reason as a [wait: ...] frame) or 'hwspy record --off-cpu' (the waits alone)",
		"context-switches",
		"hwspy's choice: under half a CPU over the whole run, the process is off the CPU "
		"more than on it",
	},
	{
		"high-switch-rate", "context switches per second", M_RATE, "context-switches", NULL, 1,
		STAT_ABOVE, 1000, "/s",
		"threads block and wake very often: contention on a lock or the GIL, many small I/O "
		"calls, or more busy threads than CPUs",
		"batch work per wakeup, use fewer threads (processes for CPU-bound Python), and see "
		"where the threads block and for how long: 'hwspy record --off-cpu' (or --wall)",
		"context-switches",
		"hwspy's choice: a CPU-bound thread is switched out ~100-250 times a second by the "
		"scheduler's slices; 1000 a second means blocking, and each switch costs a few us "
		"plus cold caches",
	},
	{
		"high-involuntary-switches", "involuntary context switches per second", M_INVOLUNTARY,
		NULL, NULL, 1, STAT_ABOVE, 500, "/s",
		"threads are preempted while runnable: more busy threads than CPUs, or a busy machine "
		"(or a container's CPU quota)",
		"run as many busy threads as CPUs, and check what else runs on the machine",
		"context-switches",
		"hwspy's choice: the scheduler's slices preempt a busy thread a few hundred times a "
		"second only where others wait for its CPU",
	},
	{
		"many-major-faults", "major faults per second", M_RATE, "major-faults", NULL, 1,
		STAT_ABOVE, 10, "/s",
		"pages are read from disk or swap as they are touched: memory pressure, or I/O through "
		"mmap (memory-mapped files, numpy.memmap, model weights)",
		"read files with explicit I/O in large blocks or prefetch them (madvise "
		"MADV_WILLNEED), or give the process more memory",
		"major-faults",
		"hwspy's choice: each major fault waits for a disk read (0.1-10 ms): 10 a second "
		"can cost a tenth of a CPU's time",
	},
	{
		"many-page-faults", "page faults per second", M_RATE, "page-faults", NULL, 1, STAT_ABOVE,
		5000, "/s",
		"memory is touched for the first time at a high rate (fresh allocations): every first "
		"touch of a 4 KiB page is a fault",
		"reuse buffers instead of allocating anew (numpy out=, preallocated arrays), allocate "
		"outside hot loops, or use huge pages",
		"page-faults",
		"hwspy's choice: 5000 faults a second (20 MiB/s of new 4 KiB pages, ~1-2 us each) is "
		"more than a program that has warmed up does",
	},
};

#define N_RULES (sizeof(rules) / sizeof(rules[0]))

bool stat_same_event(const char *a, const char *b)
{
	size_t n = strcspn(a, ":"), m = strcspn(b, ":");

	return n == m && !strncmp(a, b, n);
}

const struct stat_event *stat_event(const struct stat_totals *t, const char *name)
{
	for (size_t i = 0; i < t->n_ev; i++)
		if (stat_same_event(t->ev[i].name, name))
			return &t->ev[i];
	return NULL;
}

/* The first of "a|b" asked, preferring one counted; NULL: none asked. *ret_name: its name. */
static const struct stat_event *event_of(const struct stat_totals *t, const char *alts,
					 const char **ret_name)
{
	const struct stat_event *first = NULL;
	char name[96];

	*ret_name = alts;
	for (const char *p = alts; *p;) {
		size_t n = strcspn(p, "|");
		const struct stat_event *e;

		snprintf(name, sizeof(name), "%.*s", (int) n, p);
		e = stat_event(t, name);
		if (e && e->counted)
			return e;
		if (e && !first)
			first = e;
		p += n + (p[n] == '|');
	}
	return first;
}

/* A thread's wait for the GIL as a share of its time on the CPU and waiting for it (where its
 * CPU time is not known, of the run's): on a busy machine its threads are preempted as often
 * as they wait, and a share of the run would shrink with the load. */
static double gil_share(const struct stat_totals *t, const struct stat_gil_wait *g)
{
	double of = g->cpu_ns >= 0 ? g->cpu_ns + g->wait_ns : (double) t->wall_ns;

	return of > 0 ? g->wait_ns / of : 0;
}

/* Whether a thread's wait counts at all: 5% of the run or more (a thread that ran 1 ms and
 * waited 1 ms waited half its time, and cost nothing). */
static bool gil_counts(const struct stat_totals *t, const struct stat_gil_wait *g)
{
	return g->wait_ns >= 0.05 * (double) t->wall_ns;
}

/* The rule's metric from t: 1 and *ret, 0 not asked for, -1 asked but not measured (the
 * event missing in *ret_missing). */
static int rule_value(const struct rule *r, const struct stat_totals *t, double *ret,
		      const struct stat_event **ret_missing)
{
	double wall_s = (double) t->wall_ns / 1e9;
	const struct stat_event *num = NULL, *den = NULL;
	const char *name;

	*ret_missing = NULL;
	if (r->kind == M_GIL) {
		/* the sampling run took the switches off the CPU (not with --no-profile, nor by
		 * stops) */
		if (!t->gil_measured || t->wall_ns == 0)
			return 0;
		*ret = 0;
		for (size_t i = 0; i < t->n_gil; i++)
			if (gil_counts(t, &t->gil[i]) && 100 * gil_share(t, &t->gil[i]) > *ret)
				*ret = 100 * gil_share(t, &t->gil[i]);
		return 1;
	}
	if (r->kind == M_INVOLUNTARY) {
		/* a thread that wakes another is often preempted by it (a lock handed over, a
		 * queue): starvation only where preemption outweighs blocking */
		if (t->involuntary < 0 || wall_s <= 0 || t->involuntary <= t->voluntary)
			return 0;
		*ret = (double) t->involuntary / wall_s;
		return 1;
	}
	num = event_of(t, r->num, &name);
	if (r->kind == M_RATIO)
		den = event_of(t, r->den, &name);
	if (!num || (r->kind == M_RATIO && !den))
		return 0;
	if (!num->counted || (den && !den->counted)) {
		*ret_missing = !num->counted ? num : den;
		return -1;
	}
	if (r->kind == M_RATIO) {
		if (den->value <= 0)
			return 0;
		*ret = r->scale * num->value / den->value;
	} else if (r->kind == M_RATE) {
		if (wall_s <= 0)
			return 0;
		*ret = num->value / wall_s;
	} else {
		if (t->wall_ns == 0)
			return 0;
		*ret = num->value / (double) t->wall_ns;
	}
	return 1;
}

static bool crosses(const struct rule *r, double v)
{
	return r->cmp == STAT_ABOVE ? v > r->threshold : v < r->threshold;
}

/* Whether the finding id was made already. */
static bool found(const struct stat_findings *f, const char *id)
{
	for (size_t i = 0; id && i < f->n; i++)
		if (!strcmp(f->f[i].id, id))
			return true;
	return false;
}

/* The GIL finding's threads: those whose wait counts and is over the threshold, longest
 * wait first, each with its share (gil_share()). */
static void gil_threads(const struct stat_totals *t, double threshold, struct stat_finding *f)
{
	f->threads = true;
	for (size_t i = 0; i < t->n_gil && f->n_funcs < STAT_MAX_FUNCS; i++) {
		struct stat_func *x = &f->funcs[f->n_funcs];
		double share = gil_share(t, &t->gil[i]);

		if (!gil_counts(t, &t->gil[i]) || 100 * share <= threshold)
			continue;
		*x = (struct stat_func) { .share = share, .tid = t->gil[i].tid };
		snprintf(x->text, sizeof(x->text), "%s", t->gil[i].name);
		f->n_funcs++;
	}
}

void stat_find(const struct stat_totals *t, const struct stat_attribution *attr,
	       struct stat_findings *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < N_RULES; i++) {
		const struct rule *r = &rules[i];
		const struct stat_event *missing;
		struct stat_finding *f;
		double v;
		int k = rule_value(r, t, &v, &missing);

		if (k < 0 && ret->n_unmeasured < STAT_MAX_FINDINGS) {
			ret->u[ret->n_unmeasured++] = (struct stat_unmeasured) {
				.id = r->id, .metric = r->metric, .missing = missing->name,
				.error = missing->error,
			};
			continue;
		}
		if (k <= 0 || !isfinite(v) || !crosses(r, v) || ret->n == STAT_MAX_FINDINGS ||
		    found(ret, r->told_by))
			continue;
		f = &ret->f[ret->n++];
		*f = (struct stat_finding) {
			.id = r->id, .metric = r->metric, .value = v, .threshold = r->threshold,
			.cmp = r->cmp, .unit = r->unit, .meaning = r->meaning, .advice = r->advice,
			.event = r->by,
		};
		if (r->kind == M_GIL)
			gil_threads(t, r->threshold, f);
		else if (attr && attr->functions && r->by)
			f->n_funcs = attr->functions(attr->ctx, r->by, f->funcs, STAT_MAX_FUNCS,
						     &f->samples);
	}
}

/* The metric's formula in words, into buf[0..size). */
static const char *metric_how(const struct rule *r, char *buf, size_t size)
{
	switch (r->kind) {
	case M_RATIO:
		if (r->scale == 1000)
			snprintf(buf, size, "1000 x %s / %s", r->num, r->den);
		else
			snprintf(buf, size, "%s / %s%s", r->num, r->den,
				 r->scale == 100 ? ", in %" : "");
		break;
	case M_RATE:
		snprintf(buf, size, "%s per second of wall time", r->num);
		break;
	case M_CORES:
		snprintf(buf, size, "%s / wall time (CPUs used)", r->num);
		break;
	case M_INVOLUNTARY:
		snprintf(buf, size, "%s", "nonvoluntary_ctxt_switches of /proc/PID/task/*/status, "
			 "per second, where they outnumber the voluntary ones");
		break;
	case M_GIL:
		snprintf(buf, size, "%s", "each thread's time off the CPU waiting for the GIL "
			 "([wait: GIL], from the sampling run's switches), in % of that and its time "
			 "on the CPU (the sampling run's cpu-clock, else its task-clock; else the "
			 "run's wall time); the most of any thread that waited 5% of the run or more");
		break;
	}
	return buf;
}

size_t stat_n_rules(void)
{
	return N_RULES;
}

bool stat_rule(size_t i, struct stat_rule_info *ret, char *buf, size_t size)
{
	const struct rule *r;

	if (i >= N_RULES)
		return false;
	r = &rules[i];
	*ret = (struct stat_rule_info) {
		.id = r->id, .metric = r->metric, .unit = r->unit, .meaning = r->meaning,
		.advice = r->advice, .source = r->source, .by = r->by, .cmp = r->cmp,
		.threshold = r->threshold, .threads = r->kind == M_GIL,
		.how = metric_how(r, buf, size),
	};
	return true;
}

void stat_explain(FILE *out)
{
	fprintf(out, "hwspy stat's findings: each rule, its threshold, and where the threshold "
		     "comes from\n");
	for (size_t i = 0; i < N_RULES; i++) {
		const struct rule *r = &rules[i];

		char how[512];

		fprintf(out, "\n%s: %s %s %g%s\n  metric: ", r->id, r->metric,
			r->cmp == STAT_ABOVE ? ">" : "<", r->threshold, r->unit);
		fputs(metric_how(r, how, sizeof(how)), out);
		fprintf(out, "\n  means:  %s\n  next:   %s\n  source: %s\n", r->meaning, r->advice,
			r->source);
		if (r->by)
			fprintf(out, "  names the Python functions behind it by their share of the "
				     "samples '%s' took itself in a light sampling run (from %d of "
				     "them on; not with --no-profile)\n", r->by, STAT_MIN_SAMPLES);
		if (r->kind == M_GIL)
			fputs("  names the threads that waited, from the same sampling run (not with "
			      "--no-profile or --ptrace)\n", out);
	}
}

size_t stat_rule_events(const char **ret, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < N_RULES && n < max; i++) {
		const char *by = rules[i].by;
		bool seen = false;

		for (size_t k = 0; by && k < n; k++)
			seen |= !strcmp(ret[k], by);
		if (by && !seen)
			ret[n++] = by;
	}
	return n;
}
