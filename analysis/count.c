/*
 * count: what a counting session measures beside the counters' totals (analysis/stat.h): the
 * default events and their groups, user space only where kernel mode is refused, the context
 * switches each thread made by kind (from /proc), the totals and the threads from the counter,
 * the threads' names and their waits for the GIL.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stat.h"
#include "base/array.h"
#include "base/procfs.h"
#include "pyframes/pyframes.h"

/* perf stat's default set and more: those that open here are counted */
static const char *const default_events[] = {
	"task-clock", "context-switches", "cpu-migrations", "page-faults", "minor-faults",
	"major-faults", "cycles", "instructions", "cache-references", "cache-misses",
	"branch-instructions", "branch-misses", "L1-dcache-load-misses", "LLC-load-misses",
	"dTLB-load-misses",
};

/* Events counted in one group with the one before them (a ratio of the two is exact only when
 * both ran at the same time): NAME -> the event it is grouped with. */
static const char *const grouped_with[][2] = {
	{ "instructions", "cycles" },
	{ "cache-misses", "cache-references" },
	{ "branch-misses", "branch-instructions" },
};

int stat_default_events(struct stat_setup *s)
{
	s->n_events = 0;
	for (size_t i = 0; i < sizeof(default_events) / sizeof(default_events[0]); i++) {
		struct event_spec *e = &s->events[s->n_events];

		if (events_parse(default_events[i], e) < 0)
			return -EINVAL;
		s->listed[s->n_events] = events_probe(e, 0) >= 0;
		s->n_events++;
	}
	return 0;
}

void stat_groups(struct stat_setup *s)
{
	unsigned next = 0;

	for (size_t i = 0; i < s->n_events; i++) {
		s->groups[i] = next++;
		for (size_t k = 0; k < sizeof(grouped_with) / sizeof(grouped_with[0]); k++) {
			if (!stat_same_event(s->events[i].name, grouped_with[k][0]))
				continue;
			for (size_t j = 0; j < i; j++)
				if (stat_same_event(s->events[j].name, grouped_with[k][1]))
					s->groups[i] = s->groups[j];
		}
	}
}

/* Whether e is counted by the kernel's software context (software events, tracepoints): such
 * an event always schedules, so a group of them never multiplexes. */
static bool software_context(const struct event_spec *e)
{
	return e->attr.type == PERF_TYPE_SOFTWARE || e->attr.type == PERF_TYPE_TRACEPOINT;
}

void stat_groups_self(struct stat_setup *s)
{
	size_t first = s->n_events;

	for (size_t i = 0; i < s->n_events; i++) {
		if (!software_context(&s->events[i]))
			continue;
		if (first == s->n_events)
			first = i;
		s->groups[i] = s->groups[first];
	}
}

bool stat_kernel_only(const struct event_spec *e)
{
	return e->attr.type == PERF_TYPE_SOFTWARE &&
	       (e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
		e->attr.config == PERF_COUNT_SW_CGROUP_SWITCHES ||
		e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS);
}

void stat_user_only_event(const struct stat_setup *s, struct event_spec *e)
{
	if (!s->user_only)
		return;
	e->attr.exclude_kernel = 1;
	e->attr.exclude_hv = 1;
}

bool stat_user_only(struct stat_setup *s, bool defaults)
{
	struct event_spec user;
	size_t i;
	int r = 0;

	/* the first event refused that counts kernel mode, tried in user space alone */
	for (i = 0; i < s->n_events; i++) {
		if (s->events[i].attr.exclude_kernel)
			continue;
		r = events_probe(&s->events[i], 0);
		if (r >= 0 || r == -EACCES || r == -EPERM)
			break;
	}
	if (i == s->n_events || (r != -EACCES && r != -EPERM))
		return false;
	user = s->events[i];
	user.attr.exclude_kernel = 1;
	user.attr.exclude_hv = 1;
	if (events_probe(&user, 0) < 0)
		return false;
	s->user_only = true;
	for (i = 0; i < s->n_events; i++) {
		stat_user_only_event(s, &s->events[i]);
		if (defaults)
			s->listed[i] = events_probe(&s->events[i], 0) >= 0;
	}
	return true;
}

/* ---- context switches by kind, from /proc ---------------------------------------------- */

static struct stat_switches *switches_slot(struct stat_switch_log *l, pid_t tid)
{
	struct stat_switches *v;

	for (size_t i = 0; i < l->n; i++)
		if (l->t[i].tid == tid)
			return &l->t[i];
	if (l->n == STAT_SWITCH_THREADS)
		return NULL;
	if (array_grow((void **) &l->t, &l->cap, l->n + 1, sizeof(*l->t), 16) < 0)
		return NULL;
	v = &l->t[l->n++];
	*v = (struct stat_switches) { .tid = tid, .first_vol = -1 };
	return v;
}

void stat_switches_read(struct stat_switch_log *l, pid_t pid)
{
	pid_t *tids = malloc(STAT_SWITCH_THREADS * sizeof(*tids));
	int n = tids ? procfs_tasks(pid, tids, STAT_SWITCH_THREADS) : -ENOMEM;

	for (int i = 0; i < n; i++) {
		struct stat_switches *t;
		uint64_t v = 0, nv = 0;

		if (procfs_task_switches(pid, tids[i], &v, &nv) < 0)
			continue;
		t = switches_slot(l, tids[i]);
		if (!t)
			break;
		if (t->first_vol < 0 && !l->started_late) {
			t->first_vol = (int64_t) v;
			t->first_invol = (int64_t) nv;
		} else if (t->first_vol < 0) {
			t->first_vol = t->first_invol = 0;   /* started since: all of its own */
		}
		t->vol = (int64_t) v;
		t->invol = (int64_t) nv;
	}
	free(tids);
	if (n >= 0)
		l->started_late = true;
}

void stat_switches_sum(const struct stat_switch_log *l, int64_t *vol, int64_t *invol)
{
	*vol = *invol = l->n ? 0 : -1;
	for (size_t i = 0; i < l->n; i++) {
		*vol += l->t[i].vol - l->t[i].first_vol;
		*invol += l->t[i].invol - l->t[i].first_invol;
	}
}

void stat_switches_release(struct stat_switch_log *l)
{
	free(l->t);
	*l = (struct stat_switch_log) { 0 };
}

/* ---- the totals -------------------------------------------------------------------------- */

static void event_from(struct stat_event *e, const struct event_spec *spec,
		       const struct counter_value *v)
{
	*e = (struct stat_event) {
		.counted = !v->error && !v->never_ran, .error = v->error, .value = v->scaled,
		.raw = v->raw, .enabled_ns = v->enabled_ns, .running_ns = v->running_ns,
		.split = v->split,
		.hardware = spec->kind == EVENT_HARDWARE || spec->kind == EVENT_HW_CACHE ||
			    spec->kind == EVENT_RAW || spec->kind == EVENT_PMU,
	};
	snprintf(e->name, sizeof(e->name), "%s", spec->name);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct stat_thread *x = a, *y = b;

	return x->task_clock_ns < y->task_clock_ns ? 1 : x->task_clock_ns > y->task_clock_ns ? -1 :
	       (x->tid > y->tid) - (x->tid < y->tid);
}

static int index_of(const struct stat_setup *s, const char *name)
{
	for (size_t i = 0; i < s->n_events; i++)
		if (stat_same_event(s->events[i].name, name))
			return (int) i;
	return -1;
}

/* threads whose Python names are read, at most (the registry's, as dump reads it) */
#define STAT_PYNAMES_MAX 4096

void stat_python_names(pid_t pid, struct pyframes_thread_name **ret, size_t *ret_n)
{
	struct pyframes_thread_name *v = NULL;
	struct pyframes_info info = { 0 };
	struct pyframes *pf = NULL;
	struct remote_mem mem;
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (remote_mem_open_pid(pid, &mem) < 0)
		return;
	if (pyframes_open(pid, &mem, &pf, &info) >= 0) {
		v = calloc(STAT_PYNAMES_MAX, sizeof(*v));
		if (v && pyframes_thread_names(pf, v, STAT_PYNAMES_MAX, &n) < 0)
			n = 0;
	}
	pyframes_free(pf);
	remote_mem_close(&mem);
	if (!n) {
		free(v);
		return;
	}
	*ret = v;
	*ret_n = n;
}

/* Thread tid's name, as struct stat_names says (pid: its process, for /proc). */
static void thread_name(const struct stat_names *names, pid_t pid, pid_t tid, char *buf,
			size_t size)
{
	const char *other = names && names->name ? names->name(names->ctx, tid) : NULL;
	char path[96];
	FILE *f;

	buf[0] = '\0';
	for (size_t i = 0; names && i < names->n_py; i++) {
		if (names->py[i].tid == tid && names->py[i].name[0]) {
			snprintf(buf, size, "%s", names->py[i].name);
			return;
		}
	}
	if (other) {
		snprintf(buf, size, "%s", other);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int) pid, (int) tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int) size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static double scaled_of(const struct counter_value *v)
{
	if (!v->running_ns)
		return 0;
	if (v->running_ns >= v->enabled_ns)
		return (double) v->raw;
	return (double) v->raw * ((double) v->enabled_ns / (double) v->running_ns);
}

/* Event i summed over in's threads: raw and times added, each thread scaled on its own. */
static void sum_of(const struct stat_values *in, size_t n_events, size_t i,
		   struct counter_value *ret)
{
	*ret = (struct counter_value) { 0 };
	for (size_t k = 0; k < in->n_threads; k++) {
		const struct counter_value *v = &in->v[k * n_events + i];

		ret->raw += v->raw;
		ret->enabled_ns += v->enabled_ns;
		ret->running_ns += v->running_ns;
		ret->scaled += scaled_of(v);
		ret->error = v->error;
		ret->split |= v->split;
	}
	ret->never_ran = ret->enabled_ns > 0 && ret->running_ns == 0;
}

int stat_totals_from(struct stat_totals *t, const struct stat_setup *s,
		     const struct stat_values *in, const struct stat_names *names)
{
	struct counter_value v;
	int clock = index_of(s, "task-clock"), sw = index_of(s, "context-switches");
	size_t n = in->n_threads, ne = s->n_events;

	t->n_ev = 0;
	for (size_t i = 0; i < ne && t->n_ev < STAT_MAX_EVENTS; i++) {
		sum_of(in, ne, i, &v);
		event_from(&t->ev[t->n_ev], &s->events[i], &v);
		t->ev[t->n_ev].listed = s->listed[i];
		if (s->user_only && stat_kernel_only(&s->events[i]) && t->ev[t->n_ev].counted) {
			/* a switch or a migration happens in the kernel: its ':u' count is 0 */
			t->ev[t->n_ev].counted = false;
			t->ev[t->n_ev].error = -EACCES;
		}
		t->n_ev++;
	}
	if (s->user_only)
		sw = -1;
	t->wall_ns = in->wall_ns;
	t->threads = n ? calloc(n, sizeof(*t->threads)) : NULL;
	if (n && !t->threads)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		struct stat_thread *th = &t->threads[k];
		const struct counter_value *x = &in->v[k * ne];

		th->tid = in->tids[k];
		th->task_clock_ns = clock >= 0 && !x[clock].error ? scaled_of(&x[clock]) : -1;
		th->switches = sw >= 0 && !x[sw].error ? scaled_of(&x[sw]) : -1;
		for (size_t i = 0; i < ne; i++)
			th->value[i] = x[i].error || x[i].never_ran ? NAN : scaled_of(&x[i]);
		thread_name(names, in->pid, th->tid, th->name, sizeof(th->name));
	}
	t->n_threads = n;
	qsort(t->threads, n, sizeof(*t->threads), cmp_thread);
	return 0;
}

int stat_totals_fill(struct stat_totals *t, const struct stat_setup *s, struct counter *c,
		     const struct stat_names *names)
{
	size_t n = counter_n_threads(c), ne = s->n_events;
	struct stat_values in = { .n_threads = n, .wall_ns = counter_stats(c)->wall_ns,
				  .pid = counter_pid(c) };
	struct counter_value *v = calloc(n * ne + 1, sizeof(*v));
	pid_t *tids = calloc(n + 1, sizeof(*tids));
	int r = -ENOMEM;

	if (v && tids) {
		for (size_t k = 0; k < n; k++)
			tids[k] = counter_thread(c, k, &v[k * ne]);
		in.tids = tids;
		in.v = v;
		r = stat_totals_from(t, s, &in, names);
	}
	free(v);
	free(tids);
	return r;
}

static int cmp_gil(const void *a, const void *b)
{
	double x = ((const struct stat_gil_wait *) a)->wait_ns;
	double y = ((const struct stat_gil_wait *) b)->wait_ns;

	return x < y ? 1 : x > y ? -1 : 0;
}

int stat_gil_waits(struct stat_totals *t, const struct stat_gil_wait *in, size_t n,
		   bool measured, pid_t pid, const struct stat_names *names)
{
	/* stops are not taken at a switch, and in user space alone none is sampled */
	t->gil_measured = measured && !t->user_only;
	t->gil = t->gil_measured && n ? calloc(n, sizeof(*t->gil)) : NULL;
	if (t->gil_measured && n && !t->gil)
		return -ENOMEM;
	for (size_t i = 0; t->gil && i < n; i++) {
		struct stat_gil_wait *w = &t->gil[t->n_gil];

		if (!(in[i].wait_ns > 0))
			continue;
		*w = (struct stat_gil_wait) { .tid = in[i].tid, .wait_ns = in[i].wait_ns,
					      .cpu_ns = in[i].cpu_ns };
		/* its time on the CPU: the sampling run's where it is known, else the thread's
		 * own task-clock where it has counters of its own (attached; one started since
		 * counts in its creator's); < 0 not known */
		for (size_t k = 0; w->cpu_ns < 0 && k < t->n_threads; k++)
			if (t->threads[k].tid == w->tid)
				w->cpu_ns = t->threads[k].task_clock_ns;
		thread_name(names, pid, w->tid, w->name, sizeof(w->name));
		t->n_gil++;
	}
	if (t->n_gil)
		qsort(t->gil, t->n_gil, sizeof(*t->gil), cmp_gil);
	return 0;
}
