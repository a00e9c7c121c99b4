/*
 * record_report: what hwspy record says on stderr about a run (see args.h): the progress line,
 * the summary at the end, and the words for a sampler that could set up no thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "cli/args.h"

/* The one line for a Python hwspy cannot read in what (r: pyframes_open()'s result). */
int record_python_error(int r, const struct hwspy_recorder *rec, const char *what)
{
	struct hwspy_python py;

	hwspy_recorder_python(rec, &py);
	if (r == -ENOTSUP)
		log_error("%s runs unsupported Python %s; hwspy supports 3.8-3.14", what,
			  py.version[0] ? py.version : "(unknown version)");
	else if (r == -ENOENT)
		log_error("%s is not a Python process (no libpython or _PyRuntime found); "
			  "add --native to profile its native code alone", what);
	else if (r == -EBADMSG)
		log_error("cannot read the Python frames of %s: %s", what, py.error);
	else
		log_errno(r, "cannot read the Python interpreter of %s", what);
	return r;
}

int record_paranoid(void)
{
	return hwspy_paranoid();
}

const char *record_paranoid_words(char *buf, size_t size)
{
	int paranoid = record_paranoid();

	if (paranoid == INT_MIN)
		snprintf(buf, size, "kernel.perf_event_paranoid");
	else
		snprintf(buf, size, "kernel.perf_event_paranoid=%d", paranoid);
	return buf;
}

/* Why a user refused perf events on a process may not profile it: the process is another
 * user's, or it is not dumpable, or perf_event_paranoid refuses everything. */
static void user_denied(const char *target, pid_t pid)
{
	int paranoid = record_paranoid();
	char words[64];
	bool not_dumpable = false;
	long uid = -1;
	int owner = pid > 0 ? hwspy_process_owner(pid, &uid, &not_dumpable) : -ESRCH;

	record_paranoid_words(words, sizeof(words));

	if (owner == 0 && uid != (long) getuid()) {
		log_error("not allowed to profile %s: it runs as uid %ld, not as yours: run hwspy as "
			  "root, as that user, or with CAP_PERFMON and CAP_SYS_PTRACE (%s)", target, uid,
			  words);
	} else if (paranoid > 2) {
		log_error("not allowed to profile %s: %s refuses perf events to users without "
			  "CAP_PERFMON even on their own processes: run hwspy as root, or set "
			  "kernel.perf_event_paranoid to 2 (user space only) or lower", target, words);
	} else if (owner == 0 && uid >= 0 && not_dumpable) {
		log_error("not allowed to profile %s: it runs as your user but is not dumpable (a "
			  "set-uid or set-gid program, or prctl(PR_SET_DUMPABLE, 0)), which only root "
			  "or CAP_SYS_PTRACE may read: run hwspy as root", target);
	} else {
		log_error("not allowed to profile %s, though it runs as your user (a security module, "
			  "or Yama's ptrace_scope, refused it; %s): run hwspy as root", target, words);
	}
}

/* The one line for a target hwspy may not profile, and what to do. */
void record_permission_error(const char *target, pid_t pid, bool kernel)
{
	char words[64];

	if (kernel && geteuid() != 0) {
		log_error("not allowed to record kernel frames (--kernel) of %s: %s allows them only "
			  "to root or CAP_PERFMON; run hwspy as root, or set "
			  "kernel.perf_event_paranoid to 1", target,
			  record_paranoid_words(words, sizeof(words)));
	} else if (geteuid() == 0) {
		char why[320];

		hwspy_root_denied_words(pid, why, sizeof(why));
		log_error("not allowed to profile %s: %s", target, why);
	} else {
		user_denied(target, pid);
	}
}

void record_kernel_refused(const struct record_args *o, bool migrations)
{
	const char *e = record_event_name(o, 0), *ev_what = migrations ? "migration" :
			"context switch";
	const char *what = o->off_cpu ? "--off-cpu" : o->wall ? "--wall" : NULL;
	int paranoid = record_paranoid();
	char words[64];

	record_paranoid_words(words, sizeof(words));
	if (paranoid != INT_MIN && paranoid <= 1) {
		/* kernel mode is not what paranoid refuses here */
		log_error("%s%s%s needs kernel samples of each %s, which perf_event_open refused here "
			  "although %s allows them (a security module or seccomp filter?): run hwspy "
			  "as root", what ? what : "'", what ? "" : e, what ? "" : "'",
			  what ? "context switch" : ev_what, words);
	} else if (what) {
		log_error("%s needs kernel samples of context switches (a switch happens in the "
			  "kernel), which %s allows only to root or CAP_PERFMON: run hwspy as root, or "
			  "set kernel.perf_event_paranoid to 1", what, words);
	} else {
		log_error("'%s' counts in the kernel (a %s happens there): in user space alone (':u', "
			  "all that %s allows without root or CAP_PERFMON) it would count none; run "
			  "hwspy as root, or set kernel.perf_event_paranoid to 1", e,
			  ev_what, words);
	}
}

/* sampler_new() could set up no thread of target: which limit stopped it, else the error. */
void record_limit_error(int r, const char *target)
{
	struct buf b;

	buf_init(&b);
	if (r == -ENOBUFS) {
		(void) record_memlock_limits(&b);
		log_error("cannot map a perf ring for %s: over the locked-memory limit, %s; raise "
			  "'ulimit -l' or the sysctl, or run hwspy with CAP_IPC_LOCK", target,
			  b.len ? b.data : "RLIMIT_MEMLOCK");
	} else if (r == -EMFILE || r == -ENFILE) {
		(void) record_nofile_limit(&b);
		log_error("cannot open perf events for %s: out of file descriptors (%s%s); raise "
			  "'ulimit -n'", target, b.len ? b.data : "ulimit -n",
			  r == -ENFILE ? ", or the system's fs.file-max" : "");
	} else {
		log_errno(r, "cannot start sampling %s", target);
	}
	buf_release(&b);
}

void record_progress(struct hwspy_recorder *rec, double duration, bool final)
{
	struct hwspy_record_stats st;
	double elapsed;

	hwspy_recorder_stats(rec, &st);
	elapsed = (double) st.elapsed_ns / 1e9;
	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}

	if (duration > 0)
		fprintf(stderr, "\r\033[Khwspy: %.1f / %.0f s  %" PRIu64 " samples  %" PRIu64 " lost",
			elapsed, duration, st.samples, st.lost);
	else
		fprintf(stderr, "\r\033[Khwspy: %.1f s  %" PRIu64 " samples  %" PRIu64 " lost  (Ctrl-C stops)",
			elapsed, st.samples, st.lost);
}

void record_no_samples(struct hwspy_recorder *rec, const struct record_args *o)
{
	const char *e = record_event_name(o, 0), *target = o->target;
	struct hwspy_record_stats st;
	double elapsed;

	hwspy_recorder_stats(rec, &st);
	elapsed = (double) st.elapsed_ns / 1e9;

	if (o->wall)
		log_error("no samples: %s neither ran on a CPU nor waited in %.2f s (no thread of it "
			  "was seen), so nothing was written", target, elapsed);
	else if (o->off_cpu)
		log_error("no samples: the threads of %s never waited in %.2f s (none was blocked at "
			  "the start or switched off a CPU), so nothing was written; record without "
			  "--off-cpu to see where they run", target, elapsed);
	else if (hwspy_events_counts_on_cpu(o->events, 0))
		log_error("no samples: %s did not run on a CPU long enough for one in %.2f s ('%s' "
			  "samples running threads only), so nothing was written; to see where its "
			  "threads wait, record with --wall (time on and off the CPU) or --off-cpu",
			  target, elapsed, e);
	else
		log_error("no samples: %s had %s '%s' event in %.2f s, so nothing was written",
			  target, o->period > 1 ? "too few of the" : "no", e, elapsed);
}

/* How exact the run was: captured, stopped, or read late (and how late). */
static void summary_exact(const struct hwspy_record_stats *rs, const struct record_args *o,
			  enum hwspy_record_mode mode)
{
	const struct hwspy_record_stats *st = rs;

	if (mode == HWSPY_RECORD_CAPTURE) {
		char deep[128] = "";

		if (rs->captured_cut)
			snprintf(deep, sizeof(deep), "; %" PRIu64 " captured stacks were deeper than the "
				 "capture's %d frames: their outer frames were read after the sample",
				 rs->captured_cut, HWSPY_CAPTURE_MAX_FRAMES);
		log_info("exact: %" PRIu64 " Python stacks captured at their sample by BPF, %" PRIu64
			 " read after it (before the capture started, or a thread's first samples)%s",
			 rs->captured, rs->uncaptured, deep);
	}
	else if (mode == HWSPY_RECORD_STOPS) {
		char undone[96] = "";

		if (st->eintr_undone)
			snprintf(undone, sizeof(undone), "; %" PRIu64 " system calls they interrupted "
				 "were made again, unseen", st->eintr_undone);
		log_info("exact: each sample read with its thread stopped (%" PRIu64 " stops%s)",
			 st->stops, undone);
		if (st->budget_late)
			log_info("%" PRIu64 " samples read late, without a stop: their thread had spent "
				 "over %u%% of its time stopped (%d ms window; over %" PRIu64 " times; "
				 "--stop-budget)", st->budget_late,
				 o->stop_budget ? o->stop_budget : HWSPY_STOP_BUDGET_PCT,
				 HWSPY_STOP_WINDOW_MS, st->budget_trips);
	}
	if (rs->n_late) {
		log_info("%s were late by median %u us, p99 %u us, max %u us",
			 mode == HWSPY_RECORD_CAPTURE ? "reads without a capture" :
			 mode == HWSPY_RECORD_NONBLOCKING ? "nonblocking: reads" : "reads without a stop",
			 rs->late_median_us, rs->late_p99_us, rs->late_max_us);
	}
}

#define GIL_TABLE_THREADS 10

/* A thread's time, for the GIL table's order: its weight, or off the CPU its span. */
static uint64_t gil_time(const struct hwspy_gil_thread *t, bool off_cpu)
{
	return off_cpu ? t->last_ns - t->first_ns : t->weight;
}

/* The GIL's lines: --gil's drops, then, for the GIL_TABLE_THREADS threads with the most time,
 * how often each held it (CPU events) or how long it waited for it (--off-cpu). */
static void summary_gil(struct hwspy_recorder *rec, const struct record_args *o,
			const struct hwspy_record_stats *rs)
{
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
	if (o->gil)
		log_info("--gil: %" PRIu64 " samples dropped, their thread not holding the GIL, %"
			 PRIu64 " not known whether it did%s", rs->gil_dropped_free,
			 rs->gil_dropped_unknown, known ? "" : " (a free-threaded Python has no GIL)");
	if (!o->off_cpu && !known) {
		free(all);
		return;
	}
	if (rs->gil_late)
		log_info("gil: %" PRIu64 " samples' GIL was read after the sample, not at it (no "
			 "capture), while its thread ran on", rs->gil_late);
	/* the top threads by time, by insertion into a short sorted list */
	for (size_t i = 0; i < n; i++) {
		uint64_t time = gil_time(&all[i], o->off_cpu);
		size_t k = n_top;

		if (n_top < GIL_TABLE_THREADS)
			n_top++;
		else if (gil_time(top[GIL_TABLE_THREADS - 1], o->off_cpu) >= time)
			continue;
		else
			k = GIL_TABLE_THREADS - 1;
		for (; k > 0 && gil_time(top[k - 1], o->off_cpu) < time; k--)
			top[k] = top[k - 1];
		top[k] = &all[i];
	}
	for (size_t i = 0; i < n_top; i++) {
		const struct hwspy_gil_thread *t = top[i];
		const char *name = hwspy_profile_thread_name(prof, t->tid);
		double span = (double) (t->last_ns - t->first_ns) / 1e9;

		if (o->off_cpu)
			log_info("gil: thread %d%s%s: waited %.3f s for the GIL (%.0f%% of its %.3f s "
				 "from its first switch-out to its last switch-in; %.3f s off the CPU)",
				 (int) t->tid, name ? " " : "", name ? name : "", t->gil_wait_ns / 1e9,
				 span > 0 ? 100.0 * (double) t->gil_wait_ns / 1e9 / span : 0.0, span,
				 t->off_ns / 1e9);
		else if (t->known)
			log_info("gil: thread %d%s%s: held the GIL in %.0f%% of its samples (%" PRIu64
				 " of %" PRIu64 "; %" PRIu64 " more not known)", (int) t->tid,
				 name ? " " : "", name ? name : "",
				 100.0 * (double) t->held / (double) t->known, t->held, t->known,
				 t->samples - t->known);
		else
			log_info("gil: thread %d%s%s: not known whether it held the GIL (%" PRIu64
				 " samples)", (int) t->tid, name ? " " : "", name ? name : "",
				 t->samples);
	}
	if (n > n_top)
		log_info("gil: %zu more threads", n - n_top);
	if (o->off_cpu)
		log_info("gil: threads waited %.3f s in all for the GIL", waited / 1e9);
	free(all);
}

/* what thins the switches sampled, where every one is taken (--off-cpu, --wall) */
#define FEWER_SWITCHES "record a part of the program that switches less, or sample every Nth " \
	"switch instead, '-e context-switches -c N' (switches counted, not the time waited)"

/* Samples the kernel lost (its ring full before hwspy read it), and what would lose fewer: a
 * lower rate or a larger period for the events sampled at one; --off-cpu and --wall's switches
 * are each taken (-c and -F do not apply to them), their own losses told apart where the
 * kernel counts them per event. */
static void summary_lost(const struct hwspy_record_stats *st, const struct record_args *o)
{
	uint64_t sw, other;

	if (!st->lost)
		return;
	if (o->off_cpu) {
		log_info("%" PRIu64 " records were lost by the kernel (samples at switches off the "
			 "CPU, switch records, BPF captures: a ring filled before hwspy read it): "
			 "--off-cpu takes every switch, which no -c or -F thins; to lose fewer, "
			 FEWER_SWITCHES, st->lost);
		return;
	}
	if (!o->wall) {
		log_info("%" PRIu64 " samples were lost by the kernel: %s", st->lost,
			 o->freq ? "lower the rate (-F)" : "sample less often (a larger -c)");
		return;
	}
	if (!st->switch_lost_known) {
		log_info("%" PRIu64 " records were lost by the kernel (a ring filled before hwspy "
			 "read it), of samples on the CPU or at switches off it (this kernel does not "
			 "tell which): -F lowers the rate on the CPU; --wall takes every switch, which "
			 "-F does not thin: to lose fewer of those, " FEWER_SWITCHES, st->lost);
		return;
	}
	sw = st->lost_switches < st->lost ? st->lost_switches : st->lost;
	other = st->lost - sw;
	log_info("%" PRIu64 " records were lost by the kernel (a ring filled before hwspy read it): "
		 "%" PRIu64 " of the switches off the CPU (samples and switch records), %" PRIu64
		 " others (samples on the CPU, at -F, and BPF captures of either); %s", st->lost, sw,
		 other, sw >= other ?
		 "--wall takes every switch, which -F does not thin: to lose fewer, " FEWER_SWITCHES :
		 "lower the rate (-F)");
}

void record_summary(struct hwspy_recorder *rec, const struct record_args *o, const char *path)
{
	struct hwspy_record_stats stats, *rs = &stats, *st = &stats;
	const struct hwspy_profile *prof = hwspy_recorder_profile(rec);
	const char *target = o->target, *ev = hwspy_profile_event(prof, 0);
	uint64_t dropped;
	double elapsed;
	enum hwspy_record_mode mode = hwspy_recorder_mode(rec);
	struct hwspy_profile_meta meta;
	struct hwspy_python py;

	hwspy_recorder_stats(rec, &stats);
	hwspy_recorder_python(rec, &py);
	dropped = rs->dropped_torn + rs->dropped_unreadable;
	elapsed = (double) rs->elapsed_ns / 1e9;
	if (o->off_cpu)
		log_info("sampled %s%s%s for %.2f s: 'off-cpu', every switch off the CPU, in ns",
			 target, py.found ? ", Python " : "", py.found ? py.version : "",
			 elapsed);
	else
		log_info("sampled %s%s%s for %.2f s: '%s' at %s%" PRIu64 "%s%s", target,
			 py.found ? ", Python " : "", py.found ? py.version : "", elapsed,
			 o->wall ? "wall" : ev, o->freq ? "" : "every ",
			 o->freq ? o->freq : o->period, o->freq ? " Hz" : " events",
			 o->wall ? " on the CPU and every switch off it, in ns" : "");
	log_info("%" PRIu64 " samples, weight %" PRIu64 ", %" PRIu64 " lost, %" PRIu64
		 " dropped, %" PRIu64 " threads", st->samples, hwspy_profile_total(prof, 1), st->lost,
		 dropped, st->threads_seen);
	if (dropped)
		log_info("dropped: %" PRIu64 " torn Python stacks (read after their sample, their "
			 "thread changed them under the read), %" PRIu64 " unreadable: each sample kept "
			 "as [unknown]", rs->dropped_torn, rs->dropped_unreadable);
	if (o->format == HWSPY_FORMAT_SPEEDSCOPE && !hwspy_profile_log_complete(prof))
		log_info("speedscope: samples merged by stack, not in time order: their log passed "
			 "its %u MiB (record for less time, or at a lower rate)", RECORD_LOG_BYTES >> 20);
	if (o->native)
		log_info("native: %" PRIu64 " stacks unwound, %.1f frames on average",
			 rs->unwound, rs->unwound ? (double) rs->unwound_frames / (double) rs->unwound : 0.0);
	if (rs->merge_failed)
		log_info("%" PRIu64 " samples whose native and Python stacks could not be merged "
			 "(kept with their Python frames only)", rs->merge_failed);
	if (rs->late_unfit)
		log_info("%" PRIu64 " samples whose Python stack, read after the sample without a "
			 "capture, was a later one (read over %llu ms late, or not fitting their native "
			 "stack): kept with their native frames, " HWSPY_PY_UNKNOWN " where Python code "
			 "ran", rs->late_unfit, (unsigned long long) HWSPY_STALE_READ_MS);
	if (o->kernel && !rs->kernel_frames)
		log_info("no kernel frames were recorded (the event counts user space only?)");
	if (rs->truncated)
		log_info("%" PRIu64 " stacks deeper than %d Python frames: their outer frames left out, "
			 "marked '[truncated: N frames]' at the root", rs->truncated, HWSPY_MAX_PY_FRAMES);
	if (rs->truncated_gone)
		log_info("%" PRIu64 " captured stacks deeper than the capture's %d frames whose outer "
			 "frames were gone when read (the thread had returned, or the target exited): "
			 "kept as captured, marked '[truncated]' at the root", rs->truncated_gone,
			 HWSPY_CAPTURE_MAX_FRAMES);
	if (rs->no_python)
		log_info("%" PRIu64 " samples on threads running no Python code (kept as [native])",
			 rs->no_python);
	if (rs->read_after_exit)
		log_info("%" PRIu64 " samples read after their thread had exited, their Python stack "
			 "gone (kept as [native])", rs->read_after_exit);
	if (o->subprocesses)
		log_info("subprocesses: %" PRIu64 " processes had samples (%s)", rs->processes,
			 rs->target_sampled ? "the target among them" : "the target had none");
	if (o->off_cpu || o->wall)
		log_info("off-cpu: threads waited %.3f s in all", rs->off_cpu_ns / 1e9);
	if (rs->off_cpu_capped)
		log_info("off-cpu: %" PRIu64 " waits lost the record of their end (the ring "
			 "overflowed): each ends where its thread was next seen to run",
			 rs->off_cpu_capped);
	if (rs->off_cpu_initial)
		log_info("off-cpu: %" PRIu64 " threads already waiting at the start, each read where "
			 "it waits, weighed from the start", rs->off_cpu_initial);
	if (rs->off_cpu_stale)
		log_info("%" PRIu64 " switches off the CPU were read (before the capture started) after "
			 "the thread had run on: their Python stack is [unknown]", rs->off_cpu_stale);
	summary_exact(rs, o, mode);
	summary_gil(rec, o, rs);
	if (st->threads_failed) {
		/* the reasons, as cmd_record put them in the profile's metadata */
		const char *why;

		hwspy_profile_meta(prof, &meta);
		why = meta.threads_missed_why;

		log_info("%" PRIu64 " of %" PRIu64 " threads not profiled: %s%s", st->threads_failed,
			 st->threads_seen + st->threads_failed, why ? why : "",
			 st->threads_failed_by[HWSPY_FAIL_FILES] ||
			 st->threads_failed_by[HWSPY_FAIL_MEMLOCK] ? "; raise the limit to profile them" : "");
	}
	if (st->cpu_rings_shrunk) {
		long kib = sysconf(_SC_PAGESIZE) / 1024;

		log_info("%u of %u per-CPU rings are smaller, down to %ld KiB (not %ld KiB), to fit "
			 "the locked-memory limit: at high rates they may lose samples",
			 st->cpu_rings_shrunk, st->cpu_rings, (long) st->ring_pages_min * kib,
			 (long) st->ring_pages * kib);
	}
	if (st->threads_shrunk) {
		long kib = sysconf(_SC_PAGESIZE) / 1024;

		log_info("%" PRIu64 " threads got a smaller ring, down to %ld KiB (not %ld KiB), to fit "
			 "the locked-memory limit: at high rates they may lose samples", st->threads_shrunk,
			 (long) st->ring_pages_min * kib, (long) st->ring_pages * kib);
	}
	if (st->capture_threads_failed)
		log_info("%" PRIu64 " times a thread could not get the BPF capture (no free slot or "
			 "fd): its stacks were read after their samples", st->capture_threads_failed);
	summary_lost(st, o);
	if (st->throttled)
		log_info("the kernel throttled the sampling event %" PRIu64 " times (more samples at "
			 "once than kernel.perf_event_max_sample_rate allows): samples are missing "
			 "there; lower the rate (-F) or use a period (-c)", st->throttled);
	if (rs->add_failed)
		log_info("%" PRIu64 " samples could not be stored (out of memory)", rs->add_failed);
	log_info("wrote %s", path);
}
