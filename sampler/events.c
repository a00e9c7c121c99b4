/*
 * events: event names -> struct perf_event_attr, encoded exactly as perf (6.1) encodes them.
 *
 * Forms: a named event from the table below (hardware, software, hardware-cache), any other
 * hardware-cache spelling perf accepts (TYPE[-OP][-RESULT] with perf's aliases), r<hex> (raw),
 * pmu/term=val,.../ (sysfs formats and named events), subsys:name (tracefs). Modifiers follow a
 * ':' (or directly the closing '/' of a pmu form) and are applied the way perf's
 * get_event_modifier() applies them: see events_apply_modifiers(). The sysfs and tracefs
 * forms, and everything else that reads sysfs, live in pmu.c.
 */
#include "sampler/events_internal.h"
#include "sampler/sampler.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CACHE(id, op, result) \
	((uint64_t) PERF_COUNT_HW_CACHE_##id | \
	 ((uint64_t) PERF_COUNT_HW_CACHE_OP_##op << 8) | \
	 ((uint64_t) PERF_COUNT_HW_CACHE_RESULT_##result << 16))

/* What a hardware event is, and what to do instead on a machine without a hardware PMU (a VM):
 * its family (for lists that group them) and one clause of advice (events_no_pmu()) */
#define NO_SW(what) "no software event counts " what ": '-e cpu-clock' shows where the time " \
	"goes, and 'hwspy stat' counts what this machine can"
#define CPU_TIME(family) family, "sample '-e cpu-clock' instead: CPU time, the closest " \
	"software event"
#define HW_CYCLES CPU_TIME("cycles")
#define HW_INSTRUCTIONS CPU_TIME("instructions")
#define HW_CACHE "cache", NO_SW("cache accesses or misses")
#define HW_TLB "TLB", NO_SW("TLB accesses or misses")
#define HW_BRANCH "branch", NO_SW("branches or their misses")
#define HW_NUMA "NUMA", NO_SW("NUMA node accesses")

/* Named events, in `hwspy list` order. event_config[i] is the config of event_table[i]. */
static const struct event_info event_table[] = {
	{ "cycles", "cpu-cycles", EVENT_HARDWARE, "CPU cycles", HW_CYCLES },
	{ "instructions", NULL, EVENT_HARDWARE, "instructions retired", HW_INSTRUCTIONS },
	{ "cache-references", NULL, EVENT_HARDWARE,
	  "cache accesses (usually last-level cache)", HW_CACHE },
	{ "cache-misses", NULL, EVENT_HARDWARE, "cache misses (usually last-level cache)", HW_CACHE },
	{ "branch-instructions", "branches", EVENT_HARDWARE,
	  "branch instructions retired", HW_BRANCH },
	{ "branch-misses", NULL, EVENT_HARDWARE, "mispredicted branches", HW_BRANCH },
	{ "bus-cycles", NULL, EVENT_HARDWARE, "bus cycles", HW_CYCLES },
	{ "stalled-cycles-frontend", "idle-cycles-frontend", EVENT_HARDWARE,
	  "stall cycles in the front end (fetch, decode)", HW_CYCLES },
	{ "stalled-cycles-backend", "idle-cycles-backend", EVENT_HARDWARE,
	  "stall cycles in the back end (execution, memory)", HW_CYCLES },
	{ "ref-cycles", NULL, EVENT_HARDWARE,
	  "reference cycles (not scaled by frequency)", HW_CYCLES },

	{ "L1-dcache-loads", NULL, EVENT_HW_CACHE, "level 1 data cache loads", HW_CACHE },
	{ "L1-dcache-load-misses", NULL, EVENT_HW_CACHE, "level 1 data cache load misses", HW_CACHE },
	{ "L1-dcache-stores", NULL, EVENT_HW_CACHE, "level 1 data cache stores", HW_CACHE },
	{ "L1-dcache-store-misses", NULL, EVENT_HW_CACHE,
	  "level 1 data cache store misses", HW_CACHE },
	{ "L1-dcache-prefetches", NULL, EVENT_HW_CACHE, "level 1 data cache prefetches", HW_CACHE },
	{ "L1-dcache-prefetch-misses", NULL, EVENT_HW_CACHE,
	  "level 1 data cache prefetch misses", HW_CACHE },
	{ "L1-icache-loads", NULL, EVENT_HW_CACHE, "level 1 instruction cache loads", HW_CACHE },
	{ "L1-icache-load-misses", NULL, EVENT_HW_CACHE,
	  "level 1 instruction cache load misses", HW_CACHE },
	{ "L1-icache-prefetches", NULL, EVENT_HW_CACHE,
	  "level 1 instruction cache prefetches", HW_CACHE },
	{ "L1-icache-prefetch-misses", NULL, EVENT_HW_CACHE,
	  "level 1 instruction cache prefetch misses", HW_CACHE },
	{ "LLC-loads", NULL, EVENT_HW_CACHE, "last-level cache loads", HW_CACHE },
	{ "LLC-load-misses", NULL, EVENT_HW_CACHE, "last-level cache load misses", HW_CACHE },
	{ "LLC-stores", NULL, EVENT_HW_CACHE, "last-level cache stores", HW_CACHE },
	{ "LLC-store-misses", NULL, EVENT_HW_CACHE, "last-level cache store misses", HW_CACHE },
	{ "LLC-prefetches", NULL, EVENT_HW_CACHE, "last-level cache prefetches", HW_CACHE },
	{ "LLC-prefetch-misses", NULL, EVENT_HW_CACHE, "last-level cache prefetch misses", HW_CACHE },
	{ "dTLB-loads", NULL, EVENT_HW_CACHE, "data TLB loads", HW_TLB },
	{ "dTLB-load-misses", NULL, EVENT_HW_CACHE, "data TLB load misses", HW_TLB },
	{ "dTLB-stores", NULL, EVENT_HW_CACHE, "data TLB stores", HW_TLB },
	{ "dTLB-store-misses", NULL, EVENT_HW_CACHE, "data TLB store misses", HW_TLB },
	{ "dTLB-prefetches", NULL, EVENT_HW_CACHE, "data TLB prefetches", HW_TLB },
	{ "dTLB-prefetch-misses", NULL, EVENT_HW_CACHE, "data TLB prefetch misses", HW_TLB },
	{ "iTLB-loads", NULL, EVENT_HW_CACHE, "instruction TLB loads", HW_TLB },
	{ "iTLB-load-misses", NULL, EVENT_HW_CACHE, "instruction TLB load misses", HW_TLB },
	{ "branch-loads", NULL, EVENT_HW_CACHE, "branch prediction unit lookups", HW_BRANCH },
	{ "branch-load-misses", NULL, EVENT_HW_CACHE, "branch prediction unit misses", HW_BRANCH },
	{ "node-loads", NULL, EVENT_HW_CACHE, "loads served by memory of a NUMA node", HW_NUMA },
	{ "node-load-misses", NULL, EVENT_HW_CACHE, "loads served by a remote NUMA node", HW_NUMA },
	{ "node-stores", NULL, EVENT_HW_CACHE, "stores to memory of a NUMA node", HW_NUMA },
	{ "node-store-misses", NULL, EVENT_HW_CACHE, "stores to a remote NUMA node", HW_NUMA },
	{ "node-prefetches", NULL, EVENT_HW_CACHE, "NUMA node prefetches", HW_NUMA },
	{ "node-prefetch-misses", NULL, EVENT_HW_CACHE, "NUMA node prefetch misses", HW_NUMA },

	{ "cpu-clock", NULL, EVENT_SOFTWARE, "CPU time, from a high-resolution per-CPU timer" },
	{ "task-clock", NULL, EVENT_SOFTWARE, "CPU time of the task, from its clock" },
	{ "page-faults", "faults", EVENT_SOFTWARE, "page faults (minor and major)" },
	{ "minor-faults", NULL, EVENT_SOFTWARE, "page faults served without I/O" },
	{ "major-faults", NULL, EVENT_SOFTWARE, "page faults that needed I/O" },
	{ "context-switches", "cs", EVENT_SOFTWARE, "context switches" },
	{ "cpu-migrations", "migrations", EVENT_SOFTWARE, "moves of the task to another CPU" },
	{ "alignment-faults", NULL, EVENT_SOFTWARE, "alignment faults fixed up by the kernel" },
	{ "emulation-faults", NULL, EVENT_SOFTWARE, "instructions emulated by the kernel" },
	{ "cgroup-switches", NULL, EVENT_SOFTWARE, "context switches to another cgroup" },
	{ "bpf-output", NULL, EVENT_SOFTWARE, "output of BPF programs (counts nothing itself)" },
	{ "dummy", NULL, EVENT_SOFTWARE, "counts nothing (placeholder for side-band records)" },
};

static const uint64_t event_config[] = {
	PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CACHE_REFERENCES,
	PERF_COUNT_HW_CACHE_MISSES, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, PERF_COUNT_HW_BRANCH_MISSES,
	PERF_COUNT_HW_BUS_CYCLES, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
	PERF_COUNT_HW_STALLED_CYCLES_BACKEND, PERF_COUNT_HW_REF_CPU_CYCLES,

	CACHE(L1D, READ, ACCESS), CACHE(L1D, READ, MISS), CACHE(L1D, WRITE, ACCESS),
	CACHE(L1D, WRITE, MISS), CACHE(L1D, PREFETCH, ACCESS), CACHE(L1D, PREFETCH, MISS),
	CACHE(L1I, READ, ACCESS), CACHE(L1I, READ, MISS), CACHE(L1I, PREFETCH, ACCESS),
	CACHE(L1I, PREFETCH, MISS),
	CACHE(LL, READ, ACCESS), CACHE(LL, READ, MISS), CACHE(LL, WRITE, ACCESS),
	CACHE(LL, WRITE, MISS), CACHE(LL, PREFETCH, ACCESS), CACHE(LL, PREFETCH, MISS),
	CACHE(DTLB, READ, ACCESS), CACHE(DTLB, READ, MISS), CACHE(DTLB, WRITE, ACCESS),
	CACHE(DTLB, WRITE, MISS), CACHE(DTLB, PREFETCH, ACCESS), CACHE(DTLB, PREFETCH, MISS),
	CACHE(ITLB, READ, ACCESS), CACHE(ITLB, READ, MISS),
	CACHE(BPU, READ, ACCESS), CACHE(BPU, READ, MISS),
	CACHE(NODE, READ, ACCESS), CACHE(NODE, READ, MISS), CACHE(NODE, WRITE, ACCESS),
	CACHE(NODE, WRITE, MISS), CACHE(NODE, PREFETCH, ACCESS), CACHE(NODE, PREFETCH, MISS),

	PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS,
	PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
	PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_MIGRATIONS,
	PERF_COUNT_SW_ALIGNMENT_FAULTS, PERF_COUNT_SW_EMULATION_FAULTS,
	PERF_COUNT_SW_CGROUP_SWITCHES, PERF_COUNT_SW_BPF_OUTPUT, PERF_COUNT_SW_DUMMY,
};

_Static_assert(sizeof(event_table) / sizeof(event_table[0]) ==
	       sizeof(event_config) / sizeof(event_config[0]), "event_config matches event_table");

#define N_EVENTS (sizeof(event_table) / sizeof(event_table[0]))

/* perf's spellings of the hardware-cache parts (tools/perf/util/evsel.c, parse-events.l),
 * matched exactly (case-sensitive) as perf 6.1's lexer does; that lexer lacks "branches". */
static const char *const cache_types[PERF_COUNT_HW_CACHE_MAX][5] = {
	[PERF_COUNT_HW_CACHE_L1D] = { "L1-dcache", "l1-d", "l1d", "L1-data" },
	[PERF_COUNT_HW_CACHE_L1I] = { "L1-icache", "l1-i", "l1i", "L1-instruction" },
	[PERF_COUNT_HW_CACHE_LL] = { "LLC", "L2" },
	[PERF_COUNT_HW_CACHE_DTLB] = { "dTLB", "d-tlb", "Data-TLB" },
	[PERF_COUNT_HW_CACHE_ITLB] = { "iTLB", "i-tlb", "Instruction-TLB" },
	[PERF_COUNT_HW_CACHE_BPU] = { "branch", "bpu", "btb", "bpc" },   /* no "branches" */
	[PERF_COUNT_HW_CACHE_NODE] = { "node" },
};

static const char *const cache_ops[PERF_COUNT_HW_CACHE_OP_MAX][5] = {
	[PERF_COUNT_HW_CACHE_OP_READ] = { "load", "loads", "read" },
	[PERF_COUNT_HW_CACHE_OP_WRITE] = { "store", "stores", "write" },
	[PERF_COUNT_HW_CACHE_OP_PREFETCH] = { "prefetch", "prefetches", "speculative-read",
					      "speculative-load" },
};

static const char *const cache_results[PERF_COUNT_HW_CACHE_RESULT_MAX][5] = {
	[PERF_COUNT_HW_CACHE_RESULT_ACCESS] = { "refs", "Reference", "ops", "access" },
	[PERF_COUNT_HW_CACHE_RESULT_MISS] = { "misses", "miss" },
};

/* Which ops each cache supports (perf's evsel__hw_cache_stat). */
static const unsigned cache_valid_ops[PERF_COUNT_HW_CACHE_MAX] = {
	[PERF_COUNT_HW_CACHE_L1D] = 7, [PERF_COUNT_HW_CACHE_L1I] = 5,
	[PERF_COUNT_HW_CACHE_LL] = 7, [PERF_COUNT_HW_CACHE_DTLB] = 7,
	[PERF_COUNT_HW_CACHE_ITLB] = 1, [PERF_COUNT_HW_CACHE_BPU] = 1,
	[PERF_COUNT_HW_CACHE_NODE] = 7,
};


const struct event_info *events_table(size_t *ret_n)
{
	if (ret_n)
		*ret_n = N_EVENTS;
	return event_table;
}

const char *events_no_pmu(const struct event_spec *spec, const char **ret_family)
{
	*ret_family = NULL;
	if (spec->kind != EVENT_HARDWARE && spec->kind != EVENT_HW_CACHE && spec->kind != EVENT_RAW)
		return NULL;
	for (size_t i = 0; i < N_EVENTS; i++) {
		if (event_table[i].kind != spec->kind || event_config[i] != spec->attr.config)
			continue;
		*ret_family = event_table[i].family;
		return event_table[i].no_pmu;
	}
	return NO_SW("what the hardware counts");
}

const char *event_kind_name(enum event_kind kind)
{
	switch (kind) {
	case EVENT_HARDWARE: return "hardware";
	case EVENT_HW_CACHE: return "hardware-cache";
	case EVENT_SOFTWARE: return "software";
	case EVENT_RAW: return "raw";
	case EVENT_PMU: return "pmu";
	case EVENT_TRACEPOINT: return "tracepoint";
	}
	return "unknown";
}

static uint32_t kind_type(enum event_kind kind)
{
	switch (kind) {
	case EVENT_HARDWARE: return PERF_TYPE_HARDWARE;
	case EVENT_HW_CACHE: return PERF_TYPE_HW_CACHE;
	case EVENT_SOFTWARE: return PERF_TYPE_SOFTWARE;
	default: return PERF_TYPE_RAW;
	}
}

/* Index of the alias list in names[n][5] that has an entry equal to the n bytes at s, or -1. */
static int match_alias(const char *const names[][5], int count, const char *s, size_t len)
{
	for (int i = 0; i < count; i++)
		for (int j = 0; j < 5 && names[i][j]; j++)
			if (strlen(names[i][j]) == len && !strncmp(names[i][j], s, len))
				return i;
	return -1;
}

/* TYPE[-OP_OR_RESULT[-OP_OR_RESULT]] as perf 6.1 reads it (the first op word is the op, the
 * first result word the result; missing op = read, missing result = access). perf silently
 * ignores a second op or result word ("LLC-misses-misses"); we refuse it. 0 or -ENOENT. */
static int cache_decode(const char *name, uint64_t *ret_config)
{
	const char *parts[3];
	size_t lens[3];
	size_t n = 0;
	int type = -1, op = -1, result = -1;

	/* Type names contain '-' themselves: try each type spelling as a prefix. */
	for (int i = 0; i < PERF_COUNT_HW_CACHE_MAX && type < 0; i++)
		for (int j = 0; j < 5 && cache_types[i][j]; j++) {
			size_t l = strlen(cache_types[i][j]);

			if (!strncmp(name, cache_types[i][j], l) && (name[l] == '-' || !name[l])) {
				type = i;
				name += l;
				break;
			}
		}
	if (type < 0)
		return -ENOENT;

	/* The rest: ("-" word){0,2}, where a word may itself contain '-' (speculative-read). */
	while (*name) {
		const char *w = name + 1;
		size_t best = 0;

		if (*name != '-' || n == 2)
			return -ENOENT;
		/* longest op/result spelling that matches here and ends at '-' or the end */
		for (size_t l = 1; w[l - 1]; l++)
			if ((w[l] == '-' || !w[l]) &&
			    (match_alias(cache_ops, PERF_COUNT_HW_CACHE_OP_MAX, w, l) >= 0 ||
			     match_alias(cache_results, PERF_COUNT_HW_CACHE_RESULT_MAX, w, l) >= 0))
				best = l;
		if (!best)
			return -ENOENT;
		parts[n] = w;
		lens[n++] = best;
		name = w + best;
	}

	for (size_t i = 0; i < n; i++) {
		int o = match_alias(cache_ops, PERF_COUNT_HW_CACHE_OP_MAX, parts[i], lens[i]);
		int r = match_alias(cache_results, PERF_COUNT_HW_CACHE_RESULT_MAX, parts[i], lens[i]);

		if (o >= 0 && op < 0)
			op = o;
		else if (r >= 0 && result < 0)
			result = r;
		else
			return -ENOENT;
	}
	if (op < 0)
		op = PERF_COUNT_HW_CACHE_OP_READ;
	if (result < 0)
		result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
	if (!(cache_valid_ops[type] & (1u << op)))
		return -ENOENT;
	*ret_config = (uint64_t) type | (uint64_t) op << 8 | (uint64_t) result << 16;
	return 0;
}

/* perf's get_event_modifier() + check_modifier(): letters u k h G H I p (up to ppp), no letter
 * twice except p. perf's P S D e W b (max precision, group and scheduling controls) are not
 * supported: -EINVAL. Without modifiers perf sets exclude_guest only. */
int events_apply_modifiers(const char *mods, struct perf_event_attr *attr)
{
	bool eu = false, ek = false, eh = false, eH = false, eG = false, eI = false;
	bool exclude = false, exclude_GH = false;
	unsigned precise = 0;

	if (!mods) {
		attr->exclude_guest = 1;
		return 0;
	}
	if (!*mods)
		return -EINVAL;
	for (const char *p = mods; *p; p++) {
		if (*p != 'p' && strchr(p + 1, *p))
			return -EINVAL;
		switch (*p) {
		case 'u':
			if (!exclude)
				exclude = eu = ek = eh = true;
			if (!exclude_GH)
				eG = true;
			eu = false;
			break;
		case 'k':
			if (!exclude)
				exclude = eu = ek = eh = true;
			ek = false;
			break;
		case 'h':
			if (!exclude)
				exclude = eu = ek = eh = true;
			eh = false;
			break;
		case 'G':
			if (!exclude_GH)
				exclude_GH = eG = eH = true;
			eG = false;
			break;
		case 'H':
			if (!exclude_GH)
				exclude_GH = eG = eH = true;
			eH = false;
			break;
		case 'I':
			eI = true;
			break;
		case 'p':
			precise++;
			if (!exclude_GH)
				eG = true;
			break;
		default:
			return -EINVAL;
		}
	}
	if (precise > 3)
		return -EINVAL;
	attr->exclude_user = eu;
	attr->exclude_kernel = ek;
	attr->exclude_hv = eh;
	attr->exclude_host = eH;
	attr->exclude_guest = eG;
	attr->exclude_idle = eI;
	attr->precise_ip = precise;
	return 0;
}


static bool all_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char) s[i]))
			return false;
	return len > 0;
}

int events_parse(const char *text, struct event_spec *ret)
{
	const char *colon, *mods = NULL;
	size_t len, base_len;
	uint64_t config;

	if (!text || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	len = strlen(text);
	if (!len || len >= sizeof(ret->name))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!isgraph((unsigned char) text[i]))
			return -EINVAL;
	memcpy(ret->name, text, len + 1);
	ret->attr.size = sizeof(ret->attr);

	if (strchr(text, '/'))
		return pmu_parse(text, ret);

	colon = strchr(text, ':');
	base_len = colon ? (size_t) (colon - text) : len;
	if (colon)
		mods = colon + 1;

	for (size_t i = 0; i < N_EVENTS; i++) {
		const struct event_info *e = &event_table[i];

		if ((strlen(e->name) == base_len && !strncmp(e->name, text, base_len)) ||
		    (e->alias && strlen(e->alias) == base_len && !strncmp(e->alias, text, base_len))) {
			ret->kind = e->kind;
			ret->attr.type = kind_type(e->kind);
			ret->attr.config = event_config[i];
			return events_apply_modifiers(mods, &ret->attr);
		}
	}

	if (text[0] == 'r' && base_len > 1 && (all_hex(text + 1, base_len - 1) ||
						isdigit((unsigned char) text[1]))) {
		if (!all_hex(text + 1, base_len - 1) || base_len - 1 > 16)
			return -EINVAL;
		config = strtoull(text + 1, NULL, 16);
		ret->kind = EVENT_RAW;
		ret->attr.type = PERF_TYPE_RAW;
		ret->attr.config = config;
		return events_apply_modifiers(mods, &ret->attr);
	}

	{
		char base[sizeof(ret->name)];

		memcpy(base, text, base_len);
		base[base_len] = '\0';
		if (cache_decode(base, &config) >= 0) {
			ret->kind = EVENT_HW_CACHE;
			ret->attr.type = PERF_TYPE_HW_CACHE;
			ret->attr.config = config;
			return events_apply_modifiers(mods, &ret->attr);
		}
	}

	/* subsys:name[:modifiers] */
	if (colon) {
		const char *name = colon + 1;
		const char *colon2 = strchr(name, ':');
		size_t name_len = colon2 ? (size_t) (colon2 - name) : strlen(name);

		if (pmu_tracepoint_id(text, base_len, name, name_len, &config) >= 0) {
			ret->kind = EVENT_TRACEPOINT;
			ret->attr.type = PERF_TYPE_TRACEPOINT;
			ret->attr.config = config;
			return events_apply_modifiers(colon2 ? colon2 + 1 : NULL, &ret->attr);
		}
	}
	return -ENOENT;
}

/* Optimal string alignment distance (Levenshtein + adjacent transpositions), ignoring case. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t rows[3][sizeof(((struct event_spec *) 0)->name) + 1];
	size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

	if (la >= sizeof(rows[0]) / sizeof(rows[0][0]) || lb >= sizeof(rows[0]) / sizeof(rows[0][0]))
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *t;

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char) a[i - 1]), cb = tolower((unsigned char) b[j - 1]);
			size_t d = prev[j - 1] + (ca != cb);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char) b[j - 2]) &&
			    tolower((unsigned char) a[i - 2]) == cb && prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
		}
		t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

size_t events_suggest(const char *text, const char **ret_names, size_t max)
{
	size_t dist[N_EVENTS];
	const char *best[N_EVENTS];
	char base[sizeof(((struct event_spec *) 0)->name)];
	size_t len, limit, n = 0;

	if (!text || !ret_names || !max)
		return 0;
	len = strcspn(text, ":");
	if (!len || len >= sizeof(base) || memchr(text, '/', len))
		return 0;
	memcpy(base, text, len);
	base[len] = '\0';
	limit = len / 3 > 2 ? len / 3 : 2;

	for (size_t i = 0; i < N_EVENTS; i++) {
		size_t d = edit_distance(base, event_table[i].name);

		best[i] = event_table[i].name;
		if (event_table[i].alias) {
			size_t da = edit_distance(base, event_table[i].alias);

			if (da < d) {
				d = da;
				best[i] = event_table[i].alias;
			}
		}
		dist[i] = d;
	}
	/* selection by (distance, table order) */
	while (n < max) {
		size_t pick = N_EVENTS;

		for (size_t i = 0; i < N_EVENTS; i++)
			if (dist[i] <= limit && (pick == N_EVENTS || dist[i] < dist[pick]))
				pick = i;
		if (pick == N_EVENTS)
			break;
		ret_names[n++] = best[pick];
		dist[pick] = SIZE_MAX;
	}
	return n;
}

int events_split(const char *list, char (*ret)[96], size_t max)
{
	size_t n = 0;
	const char *p = list;

	if (!list || !*list)
		return -EINVAL;
	for (;;) {
		bool in_pmu = false;
		size_t l = 0;

		/* commas inside pmu/.../ belong to the event */
		while (p[l] && (in_pmu || p[l] != ',')) {
			if (p[l] == '/')
				in_pmu = !in_pmu;
			l++;
		}
		if (!l || in_pmu)
			return -EINVAL;
		if (l >= sizeof(ret[0]))
			return -ENAMETOOLONG;
		if (n == max)
			return -E2BIG;
		memcpy(ret[n], p, l);
		ret[n][l] = '\0';
		n++;
		if (!p[l])
			break;
		p += l + 1;
	}
	return (int) n;
}

int events_probe(const struct event_spec *spec, pid_t pid)
{
	struct perf_event_attr attr;
	int fd;

	if (!spec)
		return -EINVAL;
	attr = spec->attr;
	attr.size = sizeof(attr);
	attr.disabled = 1;
	fd = (int) syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	(void) close(fd);
	return 0;
}

bool events_counts_occurrences(const struct perf_event_attr *attr)
{
	return attr->type == PERF_TYPE_SOFTWARE && attr->config != PERF_COUNT_SW_CPU_CLOCK &&
	       attr->config != PERF_COUNT_SW_TASK_CLOCK && attr->config != PERF_COUNT_SW_DUMMY &&
	       attr->config != PERF_COUNT_SW_BPF_OUTPUT;
}

uint64_t events_default_period(const struct perf_event_attr *attr)
{
	if (!events_counts_occurrences(attr))
		return 0;
	switch (attr->config) {
	case PERF_COUNT_SW_PAGE_FAULTS:
	case PERF_COUNT_SW_PAGE_FAULTS_MIN:
		/* a program that allocates faults 10^3 to 10^5 times a second: 10 to 1000
		 * samples/s; CPython's own start-up (~3,000-10,000 faults) 30 to 100 samples */
		return 100;
	case PERF_COUNT_SW_CONTEXT_SWITCHES:
	case PERF_COUNT_SW_CGROUP_SWITCHES:
		/* a thread that waits on I/O or locks switches ~10^3 times a second */
		return 10;
	default:
		/* major faults (each is disk I/O), migrations, alignment and emulation faults:
		 * rare, each one worth a sample */
		return 1;
	}
}
