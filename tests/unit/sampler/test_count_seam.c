/*
 * count.c: what the kernel here cannot be made to do, through the seam of the open and read
 * calls (struct counter_sys) on real processes: a group member refused (split), multiplexed
 * times (scaled), a group never run (never_ran, split by the run), PERF_FORMAT_GROUP refused
 * with inherit, perf events not allowed; a group the kernel does make here (msr/tsc/ with
 * task-clock, after perf's exclude_guest retry); and counter_attr() against perf stat -vv
 * (count_attrs.txt) and against what counter_new() opens. Skipped, saying why, where perf
 * events are not allowed here (the attrs need nothing).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/count_internal.h"
#include "sampler/internal.h"

#include "count_children.h"

/* ---- groups the kernel will not make, multiplexing (the seam) ---- */

/* task-clock with msr/tsc/ in one group. Nothing makes the kernel refuse a group here (no
 * hardware PMU; msr/ and the software PMUs group with each other): the split is tested through
 * the seam below. This one checks perf's retry without exclude_guest (the msr PMU refuses the
 * exclusion bits: EINVAL, as `perf stat -vv -e msr/tsc/` shows), which keeps the group whole. */
static void test_group_exclusion_retry(void **state)
{
	static const char *const names[] = { "task-clock", "msr/tsc/" };
	static const unsigned groups[] = { 7, 7 };
	struct event_spec ev[2];
	struct counter_opts o = { .at_exec = true, .events = ev, .groups = groups, .n_events = 2 };
	struct counter_value v[2];
	struct counter *c;
	int status;

	(void) state;
	need_perf();
	if (access("/sys/bus/event_source/devices/msr", F_OK) < 0) {
		print_message("# no msr PMU here\n");
		skip();
	}
	parse(names, 2, ev);
	assert_true(ev[1].attr.exclude_guest);
	o.pid = fork_held("1", "50", "0");
	assert_int_equal(counter_new(&o, &c), 0);
	assert_int_equal(kill(o.pid, SIGCONT), 0);
	assert_int_equal(counter_run(c, NULL, 0), 0);
	counter_stop(c);
	counter_totals(c, v);
	print_message("# task-clock %llu, msr/tsc/ %llu in one group\n",
		      (unsigned long long) v[0].raw, (unsigned long long) v[1].raw);
	assert_false(v[0].split || v[1].split);
	assert_int_equal(v[0].error, 0);
	assert_int_equal(v[1].error, 0);
	assert_true(v[0].raw > 40000000ULL);
	assert_true(v[1].raw > 0);
	assert_true(v[0].enabled_ns == v[1].enabled_ns);
	counter_free(c);
	assert_int_equal(waitpid(o.pid, &status, 0), o.pid);
}

/* The seam: the kernel's calls, with a group member refused (ENOSPC: the PMU has no room) or
 * the times a read gives changed (multiplexed: running half of enabled; never ran: 0) */
struct fake {
	uint64_t refuse_config;         /* a member with this software config: -ENOSPC */
	bool halve, zero;               /* running := enabled / 2, or 0 (group leaders only) */
	int leaders[64];
	int n_leaders;
	int refused;
};

static int fake_open(void *ctx, struct perf_event_attr *a, pid_t tid, int group_fd)
{
	struct fake *f = ctx;
	int fd;

	if (group_fd >= 0 && a->type == PERF_TYPE_SOFTWARE && a->config == f->refuse_config) {
		f->refused++;
		return -ENOSPC;
	}
	fd = count_kernel_sys.open(NULL, a, tid, group_fd);
	for (int i = 0; fd >= 0 && i < f->n_leaders; i++)      /* a number closed, given again */
		if (f->leaders[i] == fd)
			f->leaders[i] = -1;
	if (fd >= 0 && (a->read_format & PERF_FORMAT_GROUP) && group_fd < 0 && f->n_leaders < 64)
		f->leaders[f->n_leaders++] = fd;
	return fd;
}

static ssize_t fake_read(void *ctx, int fd, void *buf, size_t n)
{
	struct fake *f = ctx;
	ssize_t r = count_kernel_sys.read(NULL, fd, buf, n);
	uint64_t *u = buf;
	bool lead = false;

	for (int i = 0; i < f->n_leaders; i++)
		lead |= f->leaders[i] == fd;
	if (r < 24 || (f->zero && !lead))
		return r;
	/* a group: nr, enabled, running ...; alone: value, enabled, running */
	if (f->zero)
		u[2] = 0;
	else if (f->halve)
		u[2] = u[1] / 2;
	return r;
}

static struct counter *count_fake(struct fake *f, const unsigned *groups, pid_t *ret_pid)
{
	static const char *const names[] = { "task-clock", "context-switches", "page-faults" };
	static struct event_spec ev[3];
	struct counter_sys sys = { .open = fake_open, .read = fake_read, .ctx = f };
	struct counter_opts o = { .at_exec = true, .events = ev, .groups = groups, .n_events = 3,
				  .sys = &sys };
	struct counter *c;

	parse(names, 3, ev);
	o.pid = *ret_pid = fork_held("200", "300", "10");
	assert_int_equal(counter_new(&o, &c), 0);
	assert_int_equal(kill(o.pid, SIGCONT), 0);
	return c;
}

/* A member the PMU has no room for (ENOSPC) that opens alone: the group splits */
static void test_split_seam(void **state)
{
	static const unsigned groups[] = { 1, 1, 1 };
	struct fake f = { .refuse_config = PERF_COUNT_SW_CONTEXT_SWITCHES };
	struct counter_value v[3];
	struct counter *c;
	pid_t pid;
	int status;

	(void) state;
	need_perf();
	c = count_fake(&f, groups, &pid);
	assert_int_equal(counter_run(c, NULL, 0), 0);
	counter_stop(c);
	counter_totals(c, v);
	assert_true(f.refused >= 1);
	for (int i = 0; i < 3; i++) {
		assert_true(v[i].split);
		assert_int_equal(v[i].error, 0);
		assert_true(v[i].raw > 0);
	}
	assert_true(v[0].raw > 250000000ULL);
	counter_free(c);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* Multiplexed (running half of enabled): scaled = raw * enabled / running, alone and grouped */
static void test_multiplexed_seam(void **state)
{
	static const unsigned groups[] = { 0, 1, 1 };
	struct fake f = { .refuse_config = UINT64_MAX, .halve = true };
	struct counter_value v[3];
	struct counter *c;
	pid_t pid;
	int status;

	(void) state;
	need_perf();
	c = count_fake(&f, groups, &pid);
	assert_int_equal(counter_run(c, NULL, 0), 0);
	counter_stop(c);
	counter_totals(c, v);
	for (int i = 0; i < 3; i++) {
		double want = (double) v[i].raw * (double) v[i].enabled_ns / (double) v[i].running_ns;
		assert_false(v[i].split);
		assert_false(v[i].never_ran);
		assert_true(v[i].running_ns < v[i].enabled_ns);
		assert_true(rel(v[i].scaled, want) < 1e-9);
		assert_true(rel(v[i].scaled, 2.0 * (double) v[i].raw) < 1e-6);
	}
	assert_true(v[1].enabled_ns == v[2].enabled_ns && v[1].running_ns == v[2].running_ns);
	counter_free(c);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* A group enabled that never ran: never_ran and scaled 0 when read only at the stop; split
 * by counter_run() (its events reopened alone, counting from then on) when it runs */
static void test_never_ran_seam(void **state)
{
	static const unsigned groups[] = { 0, 0, 0 };
	struct fake f = { .refuse_config = UINT64_MAX, .zero = true };
	struct counter_value v[3];
	struct counter *c;
	pid_t pid;
	int status;

	(void) state;
	need_perf();
	c = count_fake(&f, groups, &pid);
	assert_int_equal(waitpid(pid, &status, 0), pid);        /* no counter_run() */
	counter_stop(c);
	counter_totals(c, v);
	for (int i = 0; i < 3; i++) {
		assert_true(v[i].never_ran);
		assert_true(v[i].enabled_ns > 0 && v[i].running_ns == 0);
		assert_true(v[i].scaled == 0);
		assert_false(v[i].split);
	}
	counter_free(c);

	f.n_leaders = 0;
	c = count_fake(&f, groups, &pid);
	assert_int_equal(counter_run(c, NULL, 0), 0);
	counter_stop(c);
	counter_totals(c, v);
	print_message("# never ran, split by the run: task-clock %llu ns after the split\n",
		      (unsigned long long) v[0].raw);
	for (int i = 0; i < 3; i++) {
		assert_true(v[i].split);
		assert_false(v[i].never_ran);
		assert_true(v[i].running_ns == v[i].enabled_ns);
	}
	/* counted from the first tick that saw the group idle (100 ms in) to the end: part of
	 * the 300 ms burn (200 ms alone, 251 to 271 ms beside two spinners) */
	assert_true(v[0].raw > 20000000ULL && v[0].raw < 300000000ULL);
	counter_free(c);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static int no_group_read_open(void *ctx, struct perf_event_attr *a, pid_t tid, int group_fd)
{
	(void) ctx;
	if ((a->read_format & PERF_FORMAT_GROUP) && a->inherit)
		return -EINVAL;
	return count_kernel_sys.open(NULL, a, tid, group_fd);
}

/* A kernel that refuses PERF_FORMAT_GROUP with inherit (the seam: EINVAL for it): the group
 * still opens as one, each fd read alone with its times (stats.group_read false) */
static void test_no_group_read_seam(void **state)
{
	static const char *const names[] = { "task-clock", "page-faults", "context-switches" };
	static const unsigned groups[] = { 3, 3, 3 };
	struct counter_sys sys = { .open = no_group_read_open, .read = count_kernel_sys.read };
	struct event_spec ev[3];
	struct counter_opts o = { .at_exec = true, .events = ev, .groups = groups, .n_events = 3,
				  .sys = &sys };
	struct counter_value v[3];
	struct counter *c;
	int status;

	(void) state;
	need_perf();
	parse(names, 3, ev);
	o.pid = fork_held("300", "50", "5");
	assert_int_equal(counter_new(&o, &c), 0);
	assert_false(counter_stats(c)->group_read);
	assert_int_equal(kill(o.pid, SIGCONT), 0);
	assert_int_equal(counter_run(c, NULL, 0), 0);
	counter_stop(c);
	counter_totals(c, v);
	assert_true(v[0].raw > 40000000ULL);
	assert_true(v[1].raw >= 300);
	assert_true(v[2].raw >= 5);
	for (int i = 0; i < 3; i++) {
		assert_false(v[i].split);
		assert_int_equal(v[i].error, 0);
		assert_true(v[i].enabled_ns > 0 && v[i].enabled_ns == v[i].running_ns);
	}
	counter_free(c);
	assert_int_equal(waitpid(o.pid, &status, 0), o.pid);
}

/* ---- counter_attr() against perf stat -vv (count_attrs.txt, from gen_count_attrs.sh) ---- */

static const char *const stat_defaults[] = {
	"cycles", "instructions", "cache-references", "cache-misses", "branch-instructions",
	"branch-misses", "L1-dcache-load-misses", "LLC-load-misses", "dTLB-load-misses",
	"task-clock", "context-switches", "cpu-migrations", "page-faults", "minor-faults",
	"major-faults",
};

static void test_attrs_as_perf(void **state)
{
	char path[PATH_MAX + 32], line[512];
	size_t rows[sizeof(stat_defaults) / sizeof(stat_defaults[0])] = { 0 };
	FILE *f;

	(void) state;
	snprintf(path, sizeof(path), "%s/count_attrs.txt", data_dir);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read '%s': give test_count the folder of count_attrs.txt", path);
	while (fgets(line, sizeof(line), f)) {
		char spec[96], when[16], role[16];
		unsigned long long v[13];
		struct perf_event_attr a;
		struct event_spec e;

		if (line[0] == '#')
			continue;
		assert_int_equal(sscanf(line, "%95s %15s %15s %llu %llx %llu %llu %llu %llu %llu %llu "
					"%llu %llu %llu %llu %llu", spec, when, role, &v[0], &v[1], &v[2],
					&v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
					&v[11], &v[12]), 16);
		assert_int_equal(events_parse(spec, &e), 0);
		counter_attr(&e, !strcmp(role, "leader"), !strcmp(when, "exec"), &a);
		assert_int_equal(a.type, v[0]);
		assert_int_equal(a.config, v[1]);
		assert_int_equal(a.read_format, v[2]);
		assert_int_equal(a.sample_type, v[3]);
		assert_int_equal(a.inherit, v[4]);
		assert_int_equal(a.disabled, v[5]);
		assert_int_equal(a.enable_on_exec, v[6]);
		assert_int_equal(a.exclude_user, v[7]);
		assert_int_equal(a.exclude_kernel, v[8]);
		assert_int_equal(a.exclude_hv, v[9]);
		assert_int_equal(a.exclude_host, v[10]);
		assert_int_equal(a.exclude_guest, v[11]);
		assert_int_equal(a.exclude_idle, v[12]);
		assert_int_equal(a.size, sizeof(a));
		assert_int_equal(a.sample_period, 0);
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
			rows[i] += !strcmp(spec, stat_defaults[i]);
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (rows[i] != 3)
			print_message("# '%s' lacks rows: run gen_count_attrs.sh\n", stat_defaults[i]);
		assert_int_equal(rows[i], 3);
	}
}

/* What counter_new() opens is counter_attr()'s attr: an event alone, a group's leader (its
 * read_format with GROUP | ID) and member */
struct opened {
	struct perf_event_attr a[8];
	int group[8];
	int n;
};

static int record_open(void *ctx, struct perf_event_attr *a, pid_t tid, int group_fd)
{
	struct opened *o = ctx;

	if (o->n < 8) {
		o->a[o->n] = *a;
		o->group[o->n++] = group_fd;
	}
	return count_kernel_sys.open(NULL, a, tid, group_fd);
}

static void test_opens_counter_attr(void **state)
{
	static const char *const names[] = { "task-clock", "page-faults", "context-switches" };
	static const unsigned groups[] = { 5, 2, 2 };
	struct opened rec = { .n = 0 };
	struct counter_sys sys = { .open = record_open, .read = count_kernel_sys.read, .ctx = &rec };
	struct event_spec ev[3];
	struct counter_opts o = { .at_exec = true, .events = ev, .groups = groups, .n_events = 3,
				  .sys = &sys };
	struct perf_event_attr want;
	struct counter *c;
	int status;

	(void) state;
	need_perf();
	parse(names, 3, ev);
	o.pid = fork_held("1", "1", "0");
	assert_int_equal(counter_new(&o, &c), 0);
	assert_int_equal(rec.n, 3);
	counter_attr(&ev[0], true, true, &want);
	assert_memory_equal(&rec.a[0], &want, sizeof(want));
	assert_int_equal(rec.group[0], -1);
	counter_attr(&ev[1], true, true, &want);
	want.read_format |= PERF_FORMAT_GROUP | PERF_FORMAT_ID;
	assert_memory_equal(&rec.a[1], &want, sizeof(want));
	assert_int_equal(rec.group[1], -1);
	counter_attr(&ev[2], false, true, &want);
	assert_memory_equal(&rec.a[2], &want, sizeof(want));
	assert_true(rec.group[2] >= 0);
	counter_free(c);
	(void) kill(o.pid, SIGKILL);
	assert_int_equal(waitpid(o.pid, &status, 0), o.pid);
}

/* The process's CPU time (user + system, every thread's, the exited ones' too) from
 * /proc/PID/stat, in ns: precise to a clock tick (10 ms at USER_HZ 100) */
static int refuse_open(void *ctx, struct perf_event_attr *a, pid_t tid, int group_fd)
{
	(void) a;
	(void) tid;
	(void) group_fd;
	return *(int *) ctx;
}

/* Not allowed (perf_event_paranoid, no CAP_PERFMON: every open -EACCES or -EPERM): that
 * error, on an attach and on a launch (whose command then never runs) */
static void test_not_allowed_seam(void **state)
{
	char *argv[] = { self_exe, "burn", "1", "1", "0", NULL };
	int err = -EACCES;
	struct counter_sys sys = { .open = refuse_open, .read = count_kernel_sys.read, .ctx = &err };
	struct event_spec ev[2];
	static const char *const names[] = { "task-clock", "page-faults" };
	struct counter_opts o = { .pid = getpid(), .events = ev, .n_events = 2, .sys = &sys };
	struct counter *c;
	int fds = open_fds();

	(void) state;
	parse(names, 2, ev);
	assert_int_equal(counter_new(&o, &c), -EACCES);
	err = -EPERM;
	o.pid = 0;
	o.argv = argv;
	assert_int_equal(counter_new(&o, &c), -EPERM);
	assert_null(c);
	assert_int_equal(open_fds(), fds);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);       /* the child reaped */
	assert_int_equal(errno, ECHILD);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_exclusion_retry),
		cmocka_unit_test(test_split_seam),
		cmocka_unit_test(test_multiplexed_seam),
		cmocka_unit_test(test_never_ran_seam),
		cmocka_unit_test(test_no_group_read_seam),
		cmocka_unit_test(test_attrs_as_perf),
		cmocka_unit_test(test_opens_counter_attr),
		cmocka_unit_test(test_not_allowed_seam),
	};
	int r = count_children_main(argc, argv);

	if (r >= 0)
		return r;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
