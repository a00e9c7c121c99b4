/* record_report: what the sampling commands say on stderr (args.h): the words of every line
 * libhwspy's (summary) functions choose, in one table keyed by the line's code, and the loop
 * that says them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/args.h"

/* what thins the switches sampled, where every one is taken (--off-cpu, --wall) */
#define FEWER "record a part of the program that switches less, or sample every Nth switch " \
	"instead, '-e context-switches -c N' (switches counted, not the time waited)"
#define THREAD "gil: thread %d%w%s: "
#define ROOT "run hwspy as root"
#define PARANOID_1 "set kernel.perf_event_paranoid to 1"
#define NOT_WRITTEN "so nothing was written"
#define LOST_BY "records were lost by the kernel (a ring filled before hwspy read it)"
#define SLEEP "samples threads as they go to sleep: --ptrace would stop them there and interrupt " \
	"their system calls; leave --ptrace out (the BPF capture) or use --nonblocking"
#define LESS_OFTEN "at high rates they may lose samples"

#define SUMMARY_LINES 128               /* the summary's, with the GIL's ten threads */
#define L(c) [HWSPY_L_##c]
#define W(c) [HWSPY_W_##c]
static const char *const words[HWSPY_L_N] = {
	L(SAMPLED) = "sampled %s%w%s for %.2f s: '%s' at %w%llu%w%w",
	L(SAMPLED_OFF_CPU) = "sampled %s%w%s for %.2f s: 'off-cpu', every switch off the CPU, in ns",
	L(COUNTS) = "%llu samples, weight %llu, %llu lost, %llu dropped, %llu threads",
	L(DROPPED) = "dropped: %llu torn Python stacks (read after their sample, their thread "
		"changed them under the read), %llu unreadable: each sample kept as [unknown]",
	L(SPEEDSCOPE_LOG) = "speedscope: samples merged by stack, not in time order: their log "
		"passed its %u MiB (record for less time, or at a lower rate)",
	L(NATIVE) = "native: %llu stacks unwound, %.1f frames on average",
	L(NOT_UNWOUND) = "native: %llu samples not unwound (%llu: the target's mappings could not "
		"be read; %llu: no copy of their user stack)",
	L(MERGE_FAILED) = "%llu samples whose native and Python stacks could not be merged (kept "
		"with their Python frames only)",
	L(LATE_UNFIT) = "%llu samples whose Python stack, read after the sample without a capture, "
		"was a later one (read over %llu ms late, or not fitting their native stack): kept "
		"with their native frames, " HWSPY_PY_UNKNOWN " where Python code ran",
	L(NO_KERNEL_FRAMES) = "no kernel frames were recorded (the event counts user space only?)",
	L(TRUNCATED) = "%llu stacks deeper than %d Python frames: their outer frames left out, "
		"marked '[truncated: N frames]' at the root",
	L(TRUNCATED_GONE) = "%llu captured stacks deeper than the capture's %d frames whose outer "
		"frames were gone when read (the thread had returned, or the target exited): kept "
		"as captured, marked '[truncated]' at the root",
	L(NO_PYTHON) = "%llu samples on threads running no Python code (kept as [native])",
	L(AFTER_EXIT) = "%llu samples read after their thread had exited, their Python stack gone "
		"(kept as [native])",
	L(SUBPROCESSES) = "subprocesses: %llu processes had samples (%w)",
	L(OFF_CPU_WAITED) = "off-cpu: threads waited %.3f s in all",
	L(OFF_CPU_CAPPED) = "off-cpu: %llu waits lost the record of their end (the ring "
		"overflowed): each ends where its thread was next seen to run",
	L(OFF_CPU_INITIAL) = "off-cpu: %llu threads already waiting at the start, each read where "
		"it waits, weighed from the start",
	L(OFF_CPU_STALE) = "%llu switches off the CPU were read (before the capture started) after "
		"the thread had run on: their Python stack is [unknown]",
	L(OFF_CPU_REGS) = "off-cpu: %llu switches' waits named from the registers their thread "
		"entered the kernel with, no kernel stack walked (%llu unknown: none found there, "
		"or the sample's record lost)",
	L(EXACT_CAPTURE) = "exact: %llu Python stacks captured at their sample by BPF, %llu read "
		"after it (before the capture started, or a thread's first samples)",
	L(CAPTURE_CUT) = "; %llu captured stacks were deeper than the capture's %d frames: their "
		"outer frames were read after the sample",
	L(CAPTURE_DROPPED) = "; %llu captured stacks were dropped, and %llu captured frames "
		"came without their code's identity (its record lost): checked against memory",
	L(CAPTURE_VERSIONS) = "; a code object read once, not once a frame, while the "
		"interpreter %w",
	L(EXACT_STOPS) = "exact: each sample read with its thread stopped (%llu stops",
	L(EINTR_UNDONE) = "; %llu system calls they interrupted were made again, unseen",
	L(BUDGET_LATE) = "%llu samples read late, without a stop: their thread had spent over %u%% "
		"of its time stopped (%d ms window; over %llu times; --stop-budget)",
	L(LATE) = "%w were late by median %u us, p99 %u us, max %u us",
	L(GIL_DROPPED) = "--gil: %llu samples dropped, their thread not holding the GIL, %llu not "
		"known whether it did%w",
	L(GIL_LATE) = "gil: %llu samples' GIL was read after the sample, not at it (no capture), "
		"while its thread ran on",
	L(GIL_WAITED) = THREAD "waited %.3f s for the GIL (%.0f%% of its %.3f s from its first "
		"switch-out to its last switch-in; %.3f s off the CPU)",
	L(GIL_HELD) = THREAD "held the GIL in %.0f%% of its samples (%llu of %llu; %llu more not "
		"known)",
	L(GIL_UNKNOWN) = THREAD "not known whether it held the GIL (%llu samples)",
	L(GIL_MORE) = "gil: %zu more threads",
	L(GIL_WAITED_ALL) = "gil: threads waited %.3f s in all for the GIL",
	L(THREADS_FAILED) = "%llu of %llu threads not profiled: %s%w",
	L(CPU_RINGS_SHRUNK) = "%u of %u per-CPU rings are smaller, down to %ld KiB (not %ld KiB), "
		"to fit the locked-memory limit: " LESS_OFTEN,
	L(THREADS_SHRUNK) = "%llu threads got a smaller ring, down to %ld KiB (not %ld KiB), to fit "
		"the locked-memory limit: " LESS_OFTEN,
	L(CAPTURE_THREADS_FAILED) = "%llu times a thread could not get the BPF capture (no free "
		"slot or fd): its stacks were read after their samples",
	L(LOST_OFF_CPU) = "%llu records were lost by the kernel (samples at switches off the CPU, "
		"switch records, BPF captures: a ring filled before hwspy read it): --off-cpu takes "
		"every switch, which no -c or -F thins; to lose fewer, " FEWER,
	L(LOST) = "%llu samples were lost by the kernel: %w",
	L(LOST_WALL_UNKNOWN) = "%llu " LOST_BY ", of samples on the CPU or at switches off it (this "
		"kernel does not tell which): -F lowers the rate on the CPU; --wall takes every "
		"switch, which -F does not thin: to lose fewer of those, " FEWER,
	L(LOST_WALL) = "%llu " LOST_BY ": %llu of the switches off the CPU (samples and switch "
		"records), %llu others (samples on the CPU, at -F, and BPF captures of either); %w",
	L(THROTTLED) = "the kernel throttled the sampling event %llu times (more samples at once "
		"than kernel.perf_event_max_sample_rate allows): samples are missing there; lower "
		"the rate (-F) or use a period (-c)",
	L(ADD_FAILED) = "%llu samples could not be stored (out of memory)",
	L(WROTE) = "wrote %w%s%w (%s)",
	L(EMPTY_WALL) = "no samples: %s neither ran on a CPU nor waited in %.2f s (no thread of it "
		"was seen), " NOT_WRITTEN,
	L(EMPTY_OFF_CPU) = "no samples: the threads of %s never waited in %.2f s (none was blocked "
		"at the start or switched off a CPU), " NOT_WRITTEN "; record without --off-cpu to "
		"see where they run",
	L(EMPTY_ON_CPU) = "no samples: %s did not run on a CPU long enough for one in %.2f s ('%s' "
		"samples running threads only), " NOT_WRITTEN "; to see where its threads wait, "
		"record with --wall (time on and off the CPU) or --off-cpu",
	L(EMPTY_EVENT) = "no samples: %s had %w '%s' event in %.2f s, " NOT_WRITTEN,
	L(PROGRESS_FOR) = "%.1f / %.0f s  %llu samples  %llu lost",
	L(PROGRESS) = "%.1f s  %llu samples  %llu lost  (Ctrl-C stops)",
	L(LIMIT_RING) = "cannot map a perf ring for %s: over the locked-memory limit, ",
	L(RING_TAIL) = "; raise 'ulimit -l' or the sysctl, or run hwspy with CAP_IPC_LOCK",
	L(LIMIT_FILES) = "cannot open perf events for %s: out of file descriptors (",
	L(FILES_TAIL) = "%w); raise 'ulimit -n'",
	L(START_FAILED) = "cannot start sampling %s",
	L(MEMLOCK) = "RLIMIT_MEMLOCK ",
	L(MLOCK_KB) = " ('ulimit -l') beyond kernel.perf_event_mlock_kb ",
	L(PER_CPU) = " per CPU", L(NOFILE) = "ulimit -n ", L(KIB) = "%llu KiB", L(NUMBER) = "%llu",
	L(UNLIMITED) = "unlimited", L(UNREADABLE) = "(unreadable)",
	L(MISSED_FILES) = "%llu out of file descriptors (",
	L(MISSED_MEMLOCK) = "%llu over the locked-memory limit (",
	L(MISSED_MEMORY) = "%llu out of memory",
	L(MISSED_TABLE) = "%llu over hwspy's table of threads",
	L(MISSED_PTRACE) = "%llu could not be stopped (ptrace refused)",
	L(MISSED_OTHER) = "%llu failed (%s)", L(CLOSE) = ")", L(SEP) = ", ", L(NAME) = "%s",
	L(PY_UNSUPPORTED) = "%s runs unsupported Python %w%s; hwspy supports 3.8-3.14",
	L(PY_NONE) = "%s%s is not a Python process (no libpython or _PyRuntime found)%w",
	L(PY_BADMSG) = "cannot read the Python frames of %s: %s",
	L(PY_FAILED) = "cannot read the Python interpreter of %s",
	L(PERM_KERNEL) = "not allowed to record kernel frames (--kernel) of %s: %s allows them "
		"only to root or CAP_PERFMON; " ROOT ", or " PARANOID_1,
	L(PERM_ROOT) = "not allowed to profile %s: %s",
	L(PERM_UID) = "not allowed to profile %s: it runs as uid %ld, not as yours: " ROOT ", as "
		"that user, or with CAP_PERFMON and CAP_SYS_PTRACE (%s)",
	L(PERM_PARANOID) = "not allowed to profile %s: %s refuses perf events to users without "
		"CAP_PERFMON even on their own processes: " ROOT ", or set "
		"kernel.perf_event_paranoid to 2 (user space only) or lower",
	L(PERM_DUMPABLE) = "not allowed to profile %s: it runs as your user but is not dumpable (a "
		"set-uid or set-gid program, or prctl(PR_SET_DUMPABLE, 0)), which only root or "
		"CAP_SYS_PTRACE may read: " ROOT,
	L(PERM_REFUSED) = "not allowed to profile %s, though it runs as your user (a security "
		"module, or Yama's ptrace_scope, refused it; %s): " ROOT,
	L(OFF_CPU_EVENTS) = "--off-cpu samples every context switch and weighs it by the time the "
		"thread waited: leave -e out (or profile the events on the CPU in a run of their own)",
	L(OFF_CPU_RATE) = "--off-cpu takes every switch: -F and -c do not apply to it",
	L(WALL_OFF_CPU) = "--wall already holds --off-cpu's samples (and the CPU's): give one of "
		"them",
	L(WALL_EVENTS) = "--wall samples cpu-clock and every switch off the CPU, both in "
		"nanoseconds: leave -e and -c out (-F sets the rate on the CPU)",
	L(WALL_STOPS) = "--wall " SLEEP,
	L(USER_KERNEL_ONLY) = "'%s' counts nothing: %w happens in the kernel, which ':u' leaves "
		"out; leave ':u' out",
	L(COUNT_RATE) = "'%s' counts occurrences: -F would let the kernel size its periods from "
		"bursts and stall on them; give a period instead, '-c N' (its default, -c %llu, "
		"needs neither)",
	L(STOPS_ASLEEP) = "'%s' " SLEEP,
	L(EVENT_NO_PMU) = "event '%s' needs a hardware PMU, and this machine exposes none (a VM?): "
		"%s ('hwspy list' shows the events that work here)",
	L(EVENT_UNSUPPORTED) = "event '%s' is not supported on this machine; events that work "
		"here: ",
	L(EVENT_FAILED) = "cannot open event '%s'",
	L(KR_OPTION_HEAD) = "%s", L(KR_EVENT_HEAD) = "'%s'",
	L(KR_ALLOWED) = " needs kernel samples of each %w, which perf_event_open refused here "
		"although %s allows them (a security module or seccomp filter?): " ROOT,
	L(KR_OPTION) = "%s needs kernel samples of context switches (a switch happens in the "
		"kernel), which %s allows only to root or CAP_PERFMON: " ROOT ", or " PARANOID_1,
	L(KR_EVENT) = "'%s' counts in the kernel (a %w happens there): in user space alone (':u', "
		"all that %s allows without root or CAP_PERFMON) it would count none; " ROOT ", or "
		PARANOID_1,
	L(NO_PROCESS) = "no process with pid %d",
	L(DUMP_READ) = "cannot dump pid %d",
	L(DUMP_TRACED) = "cannot stop the running threads of pid %d: it is traced by pid %d (a "
		"debugger or profiler); add --nonblocking to read them without a stop",
	L(DUMP_PTRACE) = "cannot stop the running threads of pid %d: ptrace refused (Yama "
		"ptrace_scope or no CAP_SYS_PTRACE); add --nonblocking to read them without a stop",
	L(DUMP_STOP) = "cannot stop the threads of pid %d",
	L(DUMP_NATIVE) = "cannot read the mappings of pid %d: no native frames",
	L(KERNEL_THREAD) = "pid %d is a kernel thread, not a Python process",
	L(COMMAND) = "cannot run '%s'",
	L(CHILD_WAITING) = "waiting for '%s' (pid %d) after SIG%s in %.3g s (Ctrl-C: SIGKILL now)",
	L(CHILD_STOPPED) = "'%s' (pid %d) was ended by SIG%s as sampling ended",
	L(CHILD_KILLING) = "interrupted again: killing '%s' (pid %d)",
	L(CHILD_KEPT) = "'%s' (pid %d) keeps running (--keep-running)",
	L(CHILD_ENDED) = "'%s' (pid %d) was ended by hwspy's SIG%s: exit status %d",
	L(CHILD_KILLED) = "'%s' (pid %d) was killed by SIG%s%w%s: exit status %d",
	L(CHILD_EXITED) = "'%s' (pid %d) exited with status %d%w%s",
	W(NONE) = "", W(PYTHON) = ", Python ", W(EVERY) = "every ", W(HZ) = " Hz",
	W(EVENTS) = " events", W(WALL) = " on the CPU and every switch off it, in ns",
	W(TARGET_AMONG) = "the target among them", W(TARGET_NONE) = "the target had none",
	W(LATE_CAPTURE) = "reads without a capture", W(LATE_NONBLOCKING) = "nonblocking: reads",
	W(LATE_STOPS) = "reads without a stop", W(NO_GIL) = " (a free-threaded Python has no GIL)",
	W(SPACE) = " ", W(RAISE) = "; raise the limit to profile them",
	W(LOWER_RATE) = "lower the rate (-F)", W(LARGER_PERIOD) = "sample less often (a larger -c)",
	W(WALL_FEWER) = "--wall takes every switch, which -F does not thin: to lose fewer, " FEWER,
	W(TOO_FEW) = "too few of the", W(NO) = "no", W(FILE_MAX) = ", or the system's fs.file-max",
	W(UNKNOWN_VERSION) = "(unknown version)", W(SWITCH) = "context switch",
	W(MIGRATION) = "migration", W(A_SWITCH) = "a switch", W(A_MIGRATION) = "a migration",
	W(AFTER_SIG) = " after hwspy's SIG", W(QUOTE) = "'", W(STDOUT) = "to standard output",
	W(NATIVE_ALONE) = "; add --native for its native code",
	W(SHELL) = ": a shell (a pyenv shim would have exec'd by now); see --subprocesses",
	W(DUMP_READS) = "; hwspy dump reads Python stacks",
	W(CODES_MADE) = "makes no code (its code versions, 3.12)",
	W(CODES_FREED) = "frees no code (its count of codes freed, 3.14+)",
};

void record_say(const struct hwspy_line *l, size_t n, bool error)
{
	for (size_t i = 0, j; i < n; i = j + 1) {
		char *text;

		for (j = i; j + 1 < n && l[j].more; j++)
			;
		text = hwspy_lines_text(words, l + i, j - i + 1);
		if (!text)
			log_error("out of memory");
		else if (l[j].err)
			(void) log_errno(l[j].err, "%s", text);
		else
			(error ? log_error : log_info)("%s", text);
		free(text);
	}
}

int record_python_error(int r, const struct hwspy_recorder *rec, const char *what)
{
	struct hwspy_line l[RECORD_LINES];

	record_say(l, hwspy_python_lines(r, rec, what, l, RECORD_LINES), true);
	return r;
}

void record_permission_error(const char *target, pid_t pid, bool kernel)
{
	struct hwspy_line l[RECORD_LINES];

	record_say(l, hwspy_permission_lines(target, pid, kernel, l, RECORD_LINES), true);
}

void record_limit_error(int r, const char *target)
{
	struct hwspy_line l[RECORD_LINES];

	record_say(l, hwspy_limit_lines(r, target, l, RECORD_LINES), true);
}

void record_progress(struct hwspy_recorder *rec, double duration, bool final)
{
	struct hwspy_summary_opts so = { .duration = duration };
	struct hwspy_line l[1];
	char *text = final ? NULL : hwspy_lines_text(words, l, hwspy_recorder_progress_lines(rec,
						     &so, l, 1));

	fprintf(stderr, "\r\033[K%s%s", text ? "hwspy: " : "", text ? text : "");
	free(text);
}

/* Without -v, the summary's short form: its lines that are no detail. */
static void say_run(struct hwspy_recorder *rec, const struct record_args *o, const char *path,
		    bool empty)
{
	struct hwspy_summary_opts so = { o->target, path, record_event_name(o, 0), o->duration,
					 (size_t) format_column(&o->fmt, hwspy_recorder_profile(rec)) };
	struct hwspy_line l[SUMMARY_LINES];
	size_t n, kept = 0;

	n = empty ? hwspy_recorder_empty_lines(rec, &so, l, SUMMARY_LINES) :
	    hwspy_recorder_summary(rec, &so, l, SUMMARY_LINES);
	for (size_t i = 0; i < n; i++)
		if (!l[i].detail || log_level >= LOG_VERBOSE)
			l[kept++] = l[i];
	record_say(l, kept, empty);
}

void record_no_samples(struct hwspy_recorder *rec, const struct record_args *o)
{
	say_run(rec, o, NULL, true);
}

void record_summary(struct hwspy_recorder *rec, const struct record_args *o, const char *path)
{
	say_run(rec, o, path, false);
}

int record_threads_missed(const struct hwspy_record_stats *st, struct buf *out)
{
	struct hwspy_line l[RECORD_LINES * 2];
	char *text = hwspy_lines_text(words, l, hwspy_threads_missed_lines(st, l, RECORD_LINES * 2));
	int r = text ? buf_puts(out, text) : -ENOMEM;

	free(text);
	return r;
}

