/*
 * summary.c: the (summary) part of hwspy.h's recording section: which lines a recording's
 * summary, its refusals and its end say, with their numbers and names, for a client's words
 * (cli/record_report.c's table): the decisions (which line applies, the GIL table's top
 * threads, the rates and shares) are here, the words are not.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "lib/lib.h"

#define GIL_TABLE_THREADS 10            /* the GIL's threads told, the most time first */

struct lines {
	struct hwspy_line *v;
	size_t n, max;
};

static void put(struct lines *l, struct hwspy_line line)
{
	if (l->n < l->max)
		l->v[l->n] = line;
	l->n++;
}

/* How many lines were written. */
static size_t done(const struct lines *l)
{
	return l->n < l->max ? l->n : l->max;
}

/* The line before goes on (more). */
static void join(struct lines *l)
{
	if (l->n && l->n <= l->max)
		l->v[l->n - 1].more = true;
}

#define LINE(code_, ...) ((struct hwspy_line) { .code = HWSPY_L_##code_, __VA_ARGS__ })
#define W(w) HWSPY_W_##w

const char *hwspy_paranoid_words(char *buf, size_t size)
{
	int paranoid = hwspy_paranoid();

	if (paranoid == INT_MIN)
		snprintf(buf, size, "kernel.perf_event_paranoid");
	else
		snprintf(buf, size, "kernel.perf_event_paranoid=%d", paranoid);
	return buf;
}

static _Thread_local char paranoid_buf[64], root_buf[320], totals_buf[160], exe_buf[280];

static const char *paranoid_name(void)
{
	return hwspy_paranoid_words(paranoid_buf, sizeof(paranoid_buf));
}

/* A limit's value: a number (in KiB), or unlimited (unreadable) where < 0. */
static void put_limit(struct lines *l, long long v, bool kib, enum hwspy_line_code none)
{
	if (v < 0)
		put(l, (struct hwspy_line) { .code = none, .more = true });
	else
		put(l, (struct hwspy_line) { .code = kib ? HWSPY_L_KIB : HWSPY_L_NUMBER, .more = true,
					     .n = { (uint64_t) v } });
}

static void put_memlock(struct lines *l)
{
	struct hwspy_limits lim;

	hwspy_limits(&lim);
	put(l, LINE(MEMLOCK, .more = true));
	put_limit(l, lim.memlock_kib, true, HWSPY_L_UNLIMITED);
	put(l, LINE(MLOCK_KB, .more = true));
	put_limit(l, lim.perf_mlock_kib, true, HWSPY_L_UNREADABLE);
	put(l, LINE(PER_CPU, .more = true));
}

static void put_nofile(struct lines *l)
{
	struct hwspy_limits lim;

	hwspy_limits(&lim);
	put(l, LINE(NOFILE, .more = true));
	put_limit(l, lim.nofile, false, HWSPY_L_UNLIMITED);
}

size_t hwspy_limit_lines(int r, const char *target, struct hwspy_line *ret, size_t max)
{
	struct lines l = { ret, 0, max };

	if (r == -ENOBUFS) {
		put(&l, LINE(LIMIT_RING, .more = true, .s = { target }));
		put_memlock(&l);
		put(&l, LINE(RING_TAIL));
	} else if (r == -EMFILE || r == -ENFILE) {
		put(&l, LINE(LIMIT_FILES, .more = true, .s = { target }));
		put_nofile(&l);
		put(&l, LINE(FILES_TAIL, .w = { r == -ENFILE ? W(FILE_MAX) : W(NONE) }));
	} else {
		put(&l, LINE(START_FAILED, .err = r, .s = { target }));
	}
	return done(&l);
}

size_t hwspy_threads_missed_lines(const struct hwspy_record_stats *st, struct hwspy_line *ret,
				  size_t max)
{
	static const enum hwspy_line_code code[HWSPY_FAIL_N] = {
		[HWSPY_FAIL_FILES] = HWSPY_L_MISSED_FILES,
		[HWSPY_FAIL_MEMLOCK] = HWSPY_L_MISSED_MEMLOCK,
		[HWSPY_FAIL_MEMORY] = HWSPY_L_MISSED_MEMORY,
		[HWSPY_FAIL_TABLE] = HWSPY_L_MISSED_TABLE,
		[HWSPY_FAIL_PTRACE] = HWSPY_L_MISSED_PTRACE,
		[HWSPY_FAIL_OTHER] = HWSPY_L_MISSED_OTHER,
	};
	struct lines l = { ret, 0, max };

	for (int i = 0; i < HWSPY_FAIL_N; i++) {
		if (!st->threads_failed_by[i])
			continue;
		if (l.n)
			put(&l, LINE(SEP, .more = true));
		put(&l, (struct hwspy_line) { .code = code[i], .more = true,
					      .n = { st->threads_failed_by[i] },
					      .s = { strerror(-st->threads_failed_errno) } });
		if (i == HWSPY_FAIL_FILES)
			put_nofile(&l);
		else if (i == HWSPY_FAIL_MEMLOCK)
			put_memlock(&l);
		if (i == HWSPY_FAIL_FILES || i == HWSPY_FAIL_MEMLOCK)
			put(&l, LINE(CLOSE, .more = true));
	}
	if (l.n && l.n <= l.max)
		l.v[l.n - 1].more = false;
	return done(&l);
}

size_t hwspy_recorder_progress_lines(struct hwspy_recorder *rec,
				     const struct hwspy_summary_opts *o, struct hwspy_line *ret,
				     size_t max)
{
	struct lines l = { ret, 0, max };
	struct hwspy_record_stats st;
	double elapsed;

	hwspy_recorder_stats(rec, &st);
	elapsed = (double) st.elapsed_ns / 1e9;
	if (o->duration > 0)
		put(&l, LINE(PROGRESS_FOR, .x = { elapsed, o->duration }, .n = { st.samples, st.lost }));
	else
		put(&l, LINE(PROGRESS, .x = { elapsed }, .n = { st.samples, st.lost }));
	return done(&l);
}

size_t hwspy_recorder_empty_lines(struct hwspy_recorder *rec, const struct hwspy_summary_opts *o,
				  struct hwspy_line *ret, size_t max)
{
	const struct hwspy_record_opts *ro = lib_recorder_opts(rec);
	struct lines l = { ret, 0, max };
	struct hwspy_record_stats st;
	double elapsed;

	hwspy_recorder_stats(rec, &st);
	elapsed = (double) st.elapsed_ns / 1e9;
	if (ro->wall)
		put(&l, LINE(EMPTY_WALL, .s = { o->target }, .x = { elapsed }));
	else if (ro->off_cpu)
		put(&l, LINE(EMPTY_OFF_CPU, .s = { o->target }, .x = { elapsed }));
	else if (hwspy_events_counts_on_cpu(lib_recorder_events(rec), 0))
		put(&l, LINE(EMPTY_ON_CPU, .s = { o->target, o->event }, .x = { elapsed }));
	else
		put(&l, LINE(EMPTY_EVENT, .s = { o->target, o->event }, .x = { elapsed },
			     .w = { ro->period > 1 ? W(TOO_FEW) : W(NO) }));
	return done(&l);
}

/* A thread's time, for the GIL table's order: its weight, or off the CPU its span. */
static uint64_t gil_time(const struct hwspy_gil_thread *t, bool off_cpu)
{
	return off_cpu ? t->last_ns - t->first_ns : t->weight;
}

/* The GIL's lines: gil_only's drops, then, for the GIL_TABLE_THREADS threads with the most
 * time, how often each held it (CPU events) or how long it waited for it (off_cpu). */
static void summary_gil(struct lines *l, struct hwspy_recorder *rec,
			const struct hwspy_record_stats *rs)
{
	const struct hwspy_record_opts *ro = lib_recorder_opts(rec);
	const struct hwspy_profile *prof = hwspy_recorder_profile(rec);
	const struct hwspy_gil_thread *top[GIL_TABLE_THREADS];
	struct hwspy_gil_thread *all;
	uint64_t known = 0, waited = 0;
	size_t n = hwspy_recorder_gil_threads(rec, NULL, 0), n_top = 0;

	all = calloc(n ? n : 1, sizeof(*all));
	if (!all)
		return;
	n = hwspy_recorder_gil_threads(rec, all, n);
	for (size_t i = 0; i < n; i++) {
		known += all[i].known;
		waited += all[i].gil_wait_ns;
	}
	if (ro->gil_only)
		put(l, LINE(GIL_DROPPED, .n = { rs->gil_dropped_free, rs->gil_dropped_unknown },
			    .w = { known ? W(NONE) : W(NO_GIL) }));
	if (!ro->off_cpu && !known) {
		free(all);
		return;
	}
	if (rs->gil_late)
		put(l, LINE(GIL_LATE, .n = { rs->gil_late }));
	/* the top threads by time, by insertion into a short sorted list */
	for (size_t i = 0; i < n; i++) {
		uint64_t time = gil_time(&all[i], ro->off_cpu);
		size_t k = n_top;

		if (n_top < GIL_TABLE_THREADS)
			n_top++;
		else if (gil_time(top[GIL_TABLE_THREADS - 1], ro->off_cpu) >= time)
			continue;
		else
			k = GIL_TABLE_THREADS - 1;
		for (; k > 0 && gil_time(top[k - 1], ro->off_cpu) < time; k--)
			top[k] = top[k - 1];
		top[k] = &all[i];
	}
	for (size_t i = 0; i < n_top; i++) {
		const struct hwspy_gil_thread *t = top[i];
		const char *name = hwspy_profile_thread_name(prof, t->tid);
		double span = (double) (t->last_ns - t->first_ns) / 1e9;
		uint64_t tid = (uint64_t) t->tid;
		enum hwspy_line_code sp = name ? W(SPACE) : W(NONE);

		if (!name)
			name = "";
		if (ro->off_cpu)
			put(l, LINE(GIL_WAITED, .n = { tid }, .s = { name }, .w = { sp },
				    .x = { t->gil_wait_ns / 1e9, span > 0 ? 100.0 *
					   (double) t->gil_wait_ns / 1e9 / span : 0.0, span,
					   t->off_ns / 1e9 }));
		else if (t->known)
			put(l, LINE(GIL_HELD, .n = { tid, t->held, t->known, t->samples - t->known },
				    .s = { name }, .w = { sp },
				    .x = { 100.0 * (double) t->held / (double) t->known }));
		else
			put(l, LINE(GIL_UNKNOWN, .n = { tid, t->samples }, .s = { name }, .w = { sp }));
	}
	if (n > n_top)
		put(l, LINE(GIL_MORE, .n = { n - n_top }));
	if (ro->off_cpu)
		put(l, LINE(GIL_WAITED_ALL, .x = { waited / 1e9 }));
	free(all);
}

/* How exact the run was: captured, stopped, or read late (and how late). */
static void summary_exact(struct lines *l, const struct hwspy_record_stats *rs,
			  const struct hwspy_record_opts *ro, enum hwspy_record_mode mode)
{
	if (mode == HWSPY_RECORD_CAPTURE) {
		put(l, LINE(EXACT_CAPTURE, .n = { rs->captured, rs->uncaptured }));
		if (rs->captured_cut) {
			join(l);
			put(l, LINE(CAPTURE_CUT, .n = { rs->captured_cut, rs->capture_frames }));
		}
		if (rs->captured_dropped || rs->capture_ids_missed) {
			join(l);
			put(l, LINE(CAPTURE_DROPPED, .n = { rs->captured_dropped,
							     rs->capture_ids_missed }));
		}
		if (rs->capture_versions) {
			join(l);
			put(l, LINE(CAPTURE_VERSIONS, .w = { rs->capture_versions == 1 ?
							      W(CODES_MADE) : W(CODES_FREED) }));
		}
	} else if (mode == HWSPY_RECORD_STOPS) {
		put(l, LINE(EXACT_STOPS, .more = true, .n = { rs->stops }));
		if (rs->eintr_undone)
			put(l, LINE(EINTR_UNDONE, .more = true, .n = { rs->eintr_undone }));
		put(l, LINE(CLOSE));
		if (rs->budget_late)
			put(l, LINE(BUDGET_LATE, .n = { rs->budget_late, ro->stop_budget ?
				ro->stop_budget : HWSPY_STOP_BUDGET_PCT, HWSPY_STOP_WINDOW_MS,
				rs->budget_trips }));
	}
	if (rs->n_late)
		put(l, LINE(LATE, .n = { rs->late_median_us, rs->late_p99_us, rs->late_max_us },
			    .w = { mode == HWSPY_RECORD_CAPTURE ? W(LATE_CAPTURE) :
				   mode == HWSPY_RECORD_NONBLOCKING ? W(LATE_NONBLOCKING) :
				   W(LATE_STOPS) }));
}

/* Samples the kernel lost, and what would lose fewer: a lower rate or a larger period for the
 * events sampled at one; off_cpu's and wall's switches are each taken, their own losses told
 * apart where the kernel counts them per event. */
static void summary_lost(struct lines *l, const struct hwspy_record_stats *st,
			 const struct hwspy_record_opts *ro)
{
	uint64_t sw = st->lost_switches < st->lost ? st->lost_switches : st->lost;

	if (!st->lost)
		return;
	if (ro->off_cpu)
		put(l, LINE(LOST_OFF_CPU, .n = { st->lost }));
	else if (!ro->wall)
		put(l, LINE(LOST, .n = { st->lost },
			    .w = { ro->freq ? W(LOWER_RATE) : W(LARGER_PERIOD) }));
	else if (!st->switch_lost_known)
		put(l, LINE(LOST_WALL_UNKNOWN, .n = { st->lost }));
	else
		put(l, LINE(LOST_WALL, .n = { st->lost, sw, st->lost - sw },
			    .w = { sw >= st->lost - sw ? W(WALL_FEWER) : W(LOWER_RATE) }));
}

/* The summary's details, marked: all but what was sampled, what was lost, dropped or left out,
 * what changes what the profile means, and what was written (a line and those it goes on with
 * as one). */
static void summary_details(struct lines *l)
{
	bool detail = false;

	for (size_t i = 0; i < done(l); i++) {
		switch (i && l->v[i - 1].more ? HWSPY_L_N : l->v[i].code) {
		case HWSPY_L_N:
			break;          /* goes on with the line before */
		case HWSPY_L_SAMPLED: case HWSPY_L_SAMPLED_OFF_CPU: case HWSPY_L_DROPPED:
		case HWSPY_L_SPEEDSCOPE_LOG: case HWSPY_L_NO_KERNEL_FRAMES: case HWSPY_L_GIL_DROPPED:
		case HWSPY_L_THREADS_FAILED: case HWSPY_L_LOST_OFF_CPU: case HWSPY_L_LOST:
		case HWSPY_L_LOST_WALL_UNKNOWN: case HWSPY_L_LOST_WALL: case HWSPY_L_THROTTLED:
		case HWSPY_L_ADD_FAILED: case HWSPY_L_WROTE:
			detail = false;
			break;
		default:
			detail = true;
			break;
		}
		l->v[i].detail = detail;
	}
}

size_t hwspy_recorder_summary(struct hwspy_recorder *rec, const struct hwspy_summary_opts *o,
			      struct hwspy_line *ret, size_t max)
{
	const struct hwspy_record_opts *ro = lib_recorder_opts(rec);
	const struct hwspy_profile *prof = hwspy_recorder_profile(rec);
	enum hwspy_record_mode mode = hwspy_recorder_mode(rec);
	struct lines l = { ret, 0, max };
	struct hwspy_record_stats st;
	struct hwspy_python py;
	uint64_t dropped;
	double elapsed;
	long kib = sysconf(_SC_PAGESIZE) / 1024;

	hwspy_recorder_stats(rec, &st);
	hwspy_recorder_python(rec, &py);
	dropped = st.dropped_torn + st.dropped_unreadable;
	elapsed = (double) st.elapsed_ns / 1e9;
	if (ro->off_cpu)
		put(&l, LINE(SAMPLED_OFF_CPU, .s = { o->target, py.found ? py.version : "" },
			     .w = { py.found ? W(PYTHON) : W(NONE) }, .x = { elapsed }));
	else
		put(&l, LINE(SAMPLED, .s = { o->target, py.found ? py.version : "",
					     ro->wall ? "wall" : hwspy_profile_event(prof, 0) },
			     .w = { py.found ? W(PYTHON) : W(NONE), ro->freq ? W(NONE) : W(EVERY),
				    ro->freq ? W(HZ) : W(EVENTS), ro->wall ? W(WALL) : W(NONE) },
			     .x = { elapsed }, .n = { ro->freq ? ro->freq : ro->period }));
	put(&l, LINE(COUNTS, .n = { st.samples, hwspy_profile_total(prof, 1), st.lost, dropped,
				    st.threads_seen }));
	if (dropped)
		put(&l, LINE(DROPPED, .n = { st.dropped_torn, st.dropped_unreadable }));
	if (ro->log_bytes && !hwspy_profile_log_complete(prof))
		put(&l, LINE(SPEEDSCOPE_LOG, .n = { ro->log_bytes >> 20 }));
	if (ro->native)
		put(&l, LINE(NATIVE, .n = { st.unwound }, .x = { st.unwound ?
			(double) st.unwound_frames / (double) st.unwound : 0.0 }));
	if (ro->native && st.not_unwound_maps + st.not_unwound_stack)
		put(&l, LINE(NOT_UNWOUND, .n = { st.not_unwound_maps + st.not_unwound_stack,
						 st.not_unwound_maps, st.not_unwound_stack }));
	if (st.merge_failed)
		put(&l, LINE(MERGE_FAILED, .n = { st.merge_failed }));
	if (st.late_unfit)
		put(&l, LINE(LATE_UNFIT, .n = { st.late_unfit, HWSPY_STALE_READ_MS }));
	if (ro->kernel && !st.kernel_frames)
		put(&l, LINE(NO_KERNEL_FRAMES));
	if (st.truncated)
		put(&l, LINE(TRUNCATED, .n = { st.truncated, HWSPY_MAX_PY_FRAMES }));
	if (st.truncated_gone)
		put(&l, LINE(TRUNCATED_GONE, .n = { st.truncated_gone, st.capture_frames }));
	if (st.no_python)
		put(&l, LINE(NO_PYTHON, .n = { st.no_python }));
	if (st.read_after_exit)
		put(&l, LINE(AFTER_EXIT, .n = { st.read_after_exit }));
	if (ro->subprocesses)
		put(&l, LINE(SUBPROCESSES, .n = { st.processes },
			     .w = { st.target_sampled ? W(TARGET_AMONG) : W(TARGET_NONE) }));
	if (ro->off_cpu || ro->wall)
		put(&l, LINE(OFF_CPU_WAITED, .x = { st.off_cpu_ns / 1e9 }));
	if (st.off_cpu_capped)
		put(&l, LINE(OFF_CPU_CAPPED, .n = { st.off_cpu_capped }));
	if (st.off_cpu_initial)
		put(&l, LINE(OFF_CPU_INITIAL, .n = { st.off_cpu_initial }));
	if (st.off_cpu_stale)
		put(&l, LINE(OFF_CPU_STALE, .n = { st.off_cpu_stale }));
	if (st.off_cpu_regs)
		put(&l, LINE(OFF_CPU_REGS, .n = { st.off_cpu_regs, st.off_cpu_regs_unknown }));
	summary_exact(&l, &st, ro, mode);
	summary_gil(&l, rec, &st);
	if (st.threads_failed) {
		struct hwspy_profile_meta meta;

		hwspy_profile_meta(prof, &meta);
		put(&l, LINE(THREADS_FAILED, .n = { st.threads_failed, st.threads_seen +
			st.threads_failed }, .s = { meta.threads_missed_why ?
			meta.threads_missed_why : "" }, .w = {
			st.threads_failed_by[HWSPY_FAIL_FILES] || st.threads_failed_by[HWSPY_FAIL_MEMLOCK] ?
			W(RAISE) : W(NONE) }));
	}
	if (st.cpu_rings_shrunk)
		put(&l, LINE(CPU_RINGS_SHRUNK, .n = { st.cpu_rings_shrunk, st.cpu_rings,
			     (uint64_t) (st.ring_pages_min * kib), (uint64_t) (st.ring_pages * kib) }));
	if (st.threads_shrunk)
		put(&l, LINE(THREADS_SHRUNK, .n = { st.threads_shrunk,
			     (uint64_t) (st.ring_pages_min * kib), (uint64_t) (st.ring_pages * kib) }));
	if (st.capture_threads_failed)
		put(&l, LINE(CAPTURE_THREADS_FAILED, .n = { st.capture_threads_failed }));
	summary_lost(&l, &st, ro);
	if (st.throttled)
		put(&l, LINE(THROTTLED, .n = { st.throttled }));
	if (st.add_failed)
		put(&l, LINE(ADD_FAILED, .n = { st.add_failed }));
	(void) hwspy_profile_totals_words(prof, o->col ? o->col : 1, totals_buf, sizeof(totals_buf));
	put(&l, LINE(WROTE, .s = { o->path ? o->path : "", totals_buf },
		     .w = { o->path ? W(QUOTE) : W(STDOUT), o->path ? W(QUOTE) : W(NONE) }));
	summary_details(&l);
	return done(&l);
}

/* What a process that is not Python runs (" (/usr/bin/sleep)": attached; a launched one is
 * named by its command), and the advice that fits: --native where it has native code of its
 * own, not for a shell (a pyenv shim?) */
static const char *not_python(const struct hwspy_recorder *rec, enum hwspy_line_code *ret_advice)
{
	pid_t pid = lib_recorder_opts(rec)->pid;
	char exe[256];
	bool shell = false;

	exe_buf[0] = '\0';
	if (hwspy_process_exe(pid ? pid : hwspy_recorder_pid(rec), exe, sizeof(exe), &shell) < 0)
		shell = false;
	else if (pid)
		snprintf(exe_buf, sizeof(exe_buf), " (%s)", exe);
	*ret_advice = shell ? HWSPY_W_SHELL : HWSPY_W_NATIVE_ALONE;
	return exe_buf;
}

size_t hwspy_python_lines(int r, const struct hwspy_recorder *rec, const char *what,
			  struct hwspy_line *ret, size_t max)
{
	struct lines l = { ret, 0, max };
	enum hwspy_line_code code;
	struct hwspy_python py;

	hwspy_recorder_python(rec, &py);
	if (r == -ENOTSUP)
		put(&l, LINE(PY_UNSUPPORTED, .s = { what, py.version },
			     .w = { py.version[0] ? W(NONE) : W(UNKNOWN_VERSION) }));
	else if (r == -ENOENT)
		put(&l, LINE(PY_NONE, .s = { what, not_python(rec, &code) }, .w = { code }));
	else if (r == -EBADMSG)
		put(&l, LINE(PY_BADMSG, .s = { what, py.error }));
	else
		put(&l, LINE(PY_FAILED, .s = { what }, .err = r));
	return done(&l);
}

size_t hwspy_permission_lines(const char *target, pid_t pid, bool kernel, struct hwspy_line *ret,
			      size_t max)
{
	struct lines l = { ret, 0, max };
	int paranoid = hwspy_paranoid();
	bool not_dumpable = false;
	long uid = -1;
	int owner;

	if (kernel && geteuid() != 0) {
		put(&l, LINE(PERM_KERNEL, .s = { target, paranoid_name() }));
		return done(&l);
	}
	if (geteuid() == 0) {
		hwspy_root_denied_words(pid, root_buf, sizeof(root_buf));
		put(&l, LINE(PERM_ROOT, .s = { target, root_buf }));
		return done(&l);
	}
	/* a user refused: another user's process, perf_event_paranoid, not dumpable, or else */
	owner = pid > 0 ? hwspy_process_owner(pid, &uid, &not_dumpable) : -ESRCH;
	if (owner == 0 && uid != (long) getuid())
		put(&l, LINE(PERM_UID, .s = { target, paranoid_name() }, .n = { (uint64_t) uid }));
	else if (paranoid > 2)
		put(&l, LINE(PERM_PARANOID, .s = { target, paranoid_name() }));
	else if (owner == 0 && uid >= 0 && not_dumpable)
		put(&l, LINE(PERM_DUMPABLE, .s = { target }));
	else
		put(&l, LINE(PERM_REFUSED, .s = { target, paranoid_name() }));
	return done(&l);
}

/* Events that happen in the kernel (off_cpu's and wall's switches, or a sampled context-switches
 * or cpu-migrations) where kernel mode is refused. */
static void kernel_refused(struct lines *l, const struct hwspy_record_opts *o, const char *e,
			   bool migrations)
{
	const char *what = o->off_cpu ? "--off-cpu" : o->wall ? "--wall" : NULL;
	int paranoid = hwspy_paranoid();

	if (paranoid != INT_MIN && paranoid <= 1) {
		/* kernel mode is not what paranoid refuses here */
		put(l, what ? LINE(KR_OPTION_HEAD, .more = true, .s = { what }) :
			      LINE(KR_EVENT_HEAD, .more = true, .s = { e }));
		put(l, LINE(KR_ALLOWED, .s = { paranoid_name() }, .w = {
			what || !migrations ? W(SWITCH) : W(MIGRATION) }));
	} else if (what) {
		put(l, LINE(KR_OPTION, .s = { what, paranoid_name() }));
	} else {
		put(l, LINE(KR_EVENT, .s = { e, paranoid_name() },
			    .w = { migrations ? W(MIGRATION) : W(SWITCH) }));
	}
}

size_t hwspy_check_lines(const struct hwspy_record_check *c, const struct hwspy_record_opts *o,
			 const struct hwspy_events *ev, struct hwspy_line *ret, size_t max)
{
	struct lines l = { ret, 0, max };
	size_t n_ev = ev ? hwspy_events_count(ev) : 0;
	const char *e0 = n_ev ? hwspy_events_name(ev, 0) : "";
	const char *e = c->event < n_ev ? hwspy_events_name(ev, c->event) : "";
	static const enum hwspy_line_code code[] = {
		[HWSPY_CHECK_OFF_CPU_EVENTS] = HWSPY_L_OFF_CPU_EVENTS,
		[HWSPY_CHECK_OFF_CPU_RATE] = HWSPY_L_OFF_CPU_RATE,
		[HWSPY_CHECK_WALL_OFF_CPU] = HWSPY_L_WALL_OFF_CPU,
		[HWSPY_CHECK_WALL_EVENTS] = HWSPY_L_WALL_EVENTS,
		[HWSPY_CHECK_WALL_STOPS] = HWSPY_L_WALL_STOPS,
		[HWSPY_CHECK_COUNT_RATE] = HWSPY_L_COUNT_RATE,
		[HWSPY_CHECK_STOPS_ASLEEP] = HWSPY_L_STOPS_ASLEEP,
		[HWSPY_CHECK_NO_PROCESS] = HWSPY_L_NO_PROCESS,
		[HWSPY_CHECK_KERNEL_THREAD] = HWSPY_L_KERNEL_THREAD,
		[HWSPY_CHECK_COMMAND] = HWSPY_L_COMMAND,
	};
	const char *names[8], *advice;
	size_t n;

	switch (c->fail) {
	case HWSPY_CHECK_OK:
	case HWSPY_CHECK_NO_EVENT:
		break;
	case HWSPY_CHECK_USER_KERNEL_ONLY:
		put(&l, LINE(USER_KERNEL_ONLY, .s = { e0 },
			     .w = { c->migrations ? W(A_MIGRATION) : W(A_SWITCH) }));
		break;
	case HWSPY_CHECK_EVENT_NO_PMU:
		/* the event, and what to do instead on this machine */
		advice = hwspy_event_no_pmu(e, NULL);
		put(&l, LINE(EVENT_NO_PMU, .s = { e, advice ? advice : "" }));
		break;
	case HWSPY_CHECK_EVENT_UNSUPPORTED:
		/* the event, and the events that work here */
		put(&l, LINE(EVENT_UNSUPPORTED, .s = { e }));
		n = hwspy_events_working(names, 8);
		for (size_t i = 0; i < n; i++) {
			join(&l);
			if (i)
				put(&l, LINE(SEP, .more = true));
			put(&l, LINE(NAME, .s = { names[i] }));
		}
		break;
	case HWSPY_CHECK_EVENT_FAILED:
		put(&l, LINE(EVENT_FAILED, .s = { e }, .err = c->err));
		break;
	case HWSPY_CHECK_KERNEL_REFUSED:
		kernel_refused(&l, o, e0, c->migrations);
		break;
	default:
		put(&l, (struct hwspy_line) { .code = code[c->fail], .s = { c->fail ==
			HWSPY_CHECK_COMMAND ? o->argv[0] : e0 }, .n = { c->fail ==
			HWSPY_CHECK_COUNT_RATE ? c->period : (uint64_t) o->pid }, .err = c->fail ==
			HWSPY_CHECK_COMMAND ? c->err : 0 });
		break;
	}
	return done(&l);
}

size_t hwspy_snapshot_lines(const struct hwspy_snapshot_process *p, struct hwspy_line *ret,
			    size_t max)
{
	struct lines l = { ret, 0, max };
	const char *what = hwspy_pid_name(p->pid, exe_buf, sizeof(exe_buf));
	uint64_t pid = (uint64_t) p->pid;
	int r = p->error;

	if (r && p->failed == HWSPY_SNAPSHOT_FAILED_TARGET) {
		if (r == -ESRCH)
			put(&l, LINE(NO_PROCESS, .n = { pid }));
		else if (r == -EPERM || r == -EACCES)
			return hwspy_permission_lines(what, p->pid, false, ret, max);
		else if (r == -ENOENT)
			put(&l, LINE(PY_NONE, .s = { what, "" }, .w = { W(DUMP_READS) }));
		else if (r == -ENOTSUP)
			put(&l, LINE(PY_UNSUPPORTED, .s = { what, p->python_version },
				     .w = { p->python_version[0] ? W(NONE) : W(UNKNOWN_VERSION) }));
		else if (r == -EBADMSG)
			put(&l, LINE(PY_BADMSG, .s = { what, p->python_error }));
		else
			put(&l, LINE(PY_FAILED, .s = { what }, .err = r));
	} else if (r && p->failed == HWSPY_SNAPSHOT_FAILED_READ) {
		put(&l, LINE(DUMP_READ, .n = { pid }, .err = r));
	} else if (r == -EPERM) {
		put(&l, p->tracer ? LINE(DUMP_TRACED, .n = { pid, (uint64_t) p->tracer }) :
				    LINE(DUMP_PTRACE, .n = { pid }));
	} else if (r) {
		put(&l, LINE(DUMP_STOP, .n = { pid }, .err = r));
	} else if (p->native_error) {
		put(&l, LINE(DUMP_NATIVE, .n = { pid }, .err = p->native_error));
	}
	return done(&l);
}

size_t hwspy_child_lines(const struct hwspy_child *c, const char *name, struct hwspy_line *ret,
			 size_t max)
{
	struct lines l = { ret, 0, max };
	int code = hwspy_child_exit_code(c);
	const char *sent = c->sent && sigabbrev_np(c->sent) ? sigabbrev_np(c->sent) : "?";
	const char *sig = WIFSIGNALED(c->status) && sigabbrev_np(WTERMSIG(c->status)) ?
			  sigabbrev_np(WTERMSIG(c->status)) : "?";
	enum hwspy_line_code after = c->sent ? HWSPY_W_AFTER_SIG : HWSPY_W_NONE;

	if (!c->sent)
		sent = "";
	if (c->kept)
		put(&l, LINE(CHILD_KEPT, .s = { name }, .n = { (uint64_t) c->pid }));
	else if (!c->ended)
		return 0;
	else if (c->as_asked && WIFSIGNALED(c->status))
		put(&l, LINE(CHILD_STOPPED, .s = { name, sig }, .n = { (uint64_t) c->pid }));
	else if (WIFSIGNALED(c->status) && WTERMSIG(c->status) == c->sent)
		put(&l, LINE(CHILD_ENDED, .s = { name, sent }, .n = { (uint64_t) c->pid,
			     (uint64_t) code }));
	else if (WIFSIGNALED(c->status))
		put(&l, LINE(CHILD_KILLED, .s = { name, sig, sent }, .w = { after },
			     .n = { (uint64_t) c->pid, (uint64_t) code }));
	else
		put(&l, LINE(CHILD_EXITED, .s = { name, sent }, .w = { after },
			     .n = { (uint64_t) c->pid, (uint64_t) WEXITSTATUS(c->status) }));
	return done(&l);
}

char *hwspy_lines_text(const char *const *words, const struct hwspy_line *l, size_t n_lines)
{
	struct buf b;

	buf_init(&b);
	for (const struct hwspy_line *end = l + n_lines; l < end; l++) {
		size_t n = 0, x = 0, s = 0, w = 0;

		for (const char *p = words[l->code]; *p; p++) {
			int prec = 6;

			if (*p != '%' || *++p == '%') {
				(void) buf_putc(&b, *p);
				continue;
			}
			if (*p == '.')
				prec = (int) strtol(p + 1, (char **) &p, 10);
			p += strspn(p, "hlzj");
			if (*p == 'f' || *p == 'g')
				(void) buf_printf(&b, *p == 'f' ? "%.*f" : "%.*g", prec, l->x[x++]);
			else if (*p == 's')
				(void) buf_puts(&b, l->s[s++]);
			else if (*p == 'w')
				(void) buf_puts(&b, words[l->w[w++]]);
			else if (*p == 'u')
				(void) buf_printf(&b, "%llu", (unsigned long long) l->n[n++]);
			else
				(void) buf_printf(&b, "%lld", (long long) l->n[n++]);
		}
	}
	return buf_detach(&b);
}
