/*
 * record.c: the recording section of hwspy.h over record/'s recorder. What the command line's
 * session did around the recorder lives here now, as data: the mode chosen (capture where
 * BPF is allowed, else stops, else nonblocking) and fallen back from (stops refused or
 * impossible: nonblocking; kernel mode refused: user space only), each choice told through
 * opts.note_fn; the calling process recorded without stops, its recording threads left out
 * of the samples.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/procfs.h"
#include "lib/internal.h"
#include "lib/lib.h"
#include "output/output.h"
#include "record/record.h"
#include "sampler/capture.h"

/* hwspy.h's bounds are record/'s and sampler/'s */
_Static_assert(HWSPY_MAX_PY_FRAMES == RECORD_MAX_PY_FRAMES, "Python frames");
_Static_assert(HWSPY_STALE_READ_MS * 1000000ULL == RECORD_STALE_READ_NS, "stale read");
_Static_assert(HWSPY_STOP_BUDGET_PCT == SAMPLER_STOP_BUDGET_PCT, "stop budget");
_Static_assert(HWSPY_STOP_WINDOW_MS == SAMPLER_STOP_WINDOW_MS, "stop window");
_Static_assert(HWSPY_DEFAULT_STACK_SIZE == RECORD_DEFAULT_STACK_SIZE, "stack size");

#define EXCLUDED_MAX 16                 /* the recorder's own threads (self): callers of it */
#define SHIM_WAIT_NS 3000000000ULL      /* how long a shell that runs Python is given to exec it */
#define SHIM_POLL_NS 20000000L

struct hwspy_recorder {
	struct hwspy_record_opts opts;
	struct hwspy_events events;     /* a copy of opts.events (or cpu-clock) */
	struct record_opts ro;
	struct recorder *rec;
	struct hwspy_profile profile;   /* the recorder's (not owned) */
	hwspy_sample_fn sink;
	void *sink_ctx;
	bool opened, started;
	uint64_t run_start_ns;          /* hwspy_recorder_run()'s, the wall clock */
	uint64_t capture_failures;      /* told so far (HWSPY_NOTE_CAPTURE_FAILED) */
	uint64_t excluded;
	pid_t excluded_tids[EXCLUDED_MAX];
	size_t n_excluded;
	/* run's slice function, during hwspy_recorder_run() */
	const struct hwspy_run *run;
};

static void note(struct hwspy_recorder *h, enum hwspy_note n, int err, const char *detail)
{
	if (h->opts.note_fn)
		h->opts.note_fn(h->opts.note_ctx, n, err, detail ? detail : "");
}

/* self: the calling thread takes no part in the samples (it runs the recorder, not the
 * caller's code) */
static void exclude_caller(struct hwspy_recorder *h)
{
	pid_t tid = gettid();

	if (!h->opts.self)
		return;
	for (size_t i = 0; i < h->n_excluded; i++)
		if (h->excluded_tids[i] == tid)
			return;
	if (h->n_excluded < EXCLUDED_MAX)
		h->excluded_tids[h->n_excluded++] = tid;
}

static bool excluded(const struct hwspy_recorder *h, pid_t tid)
{
	for (size_t i = 0; i < h->n_excluded; i++)
		if (h->excluded_tids[i] == tid)
			return true;
	return false;
}

static int sample_sink(void *ctx, const struct record_sample *s)
{
	struct hwspy_recorder *h = ctx;
	struct hwspy_sample hs;

	if (h->n_excluded && excluded(h, s->tid)) {
		h->excluded++;
		return 0;
	}
	if (!h->sink)
		return profile_add_at(h->profile.p, (uint32_t) s->tid, s->frames, s->depth,
				      s->values, s->time_ns);
	hs = (struct hwspy_sample) {
		.tid = s->tid, .time_ns = s->time_ns, .frames = s->frames, .depth = s->depth,
		.values = s->values, .n_values = s->n_values, .event = s->event,
		.off_cpu = s->off_cpu, .late_ns = s->late_ns,
		.gil = s->gil == RECORD_GIL_HELD ? HWSPY_GIL_HELD :
		       s->gil == RECORD_GIL_FREE ? HWSPY_GIL_FREE : HWSPY_GIL_UNKNOWN,
	};
	return h->sink(h->sink_ctx, &hs);
}

void hwspy_record_opts_init(struct hwspy_record_opts *o)
{
	*o = (struct hwspy_record_opts) { .freq = 100, .mode = HWSPY_RECORD_AUTO };
}

static enum record_mode internal_mode(enum hwspy_record_mode m)
{
	return m == HWSPY_RECORD_STOPS ? RECORD_STOPS :
	       m == HWSPY_RECORD_NONBLOCKING ? RECORD_NONBLOCKING :
	       m == HWSPY_RECORD_SIGNAL ? RECORD_SIGNAL : RECORD_CAPTURE;
}

int hwspy_recorder_new(const struct hwspy_record_opts *opts, hwspy_sample_fn sink, void *ctx,
		       struct hwspy_recorder **ret)
{
	struct hwspy_recorder *h;
	struct record_sink rs;
	int targets = (opts->pid > 0) + (opts->argv != NULL) + opts->self;
	int r;

	lib_reason_clear();
	*ret = NULL;
	if (targets != 1)
		return lib_fail(-EINVAL, "give one target: a pid, a command or the calling process");
	if (opts->self && opts->mode == HWSPY_RECORD_STOPS)
		return lib_fail(-EINVAL, "the calling process cannot be recorded by stops (it would "
				"stop itself): give the capture or nonblocking mode");
	if (!opts->self && opts->mode == HWSPY_RECORD_SIGNAL)
		return lib_fail(-EINVAL, "the signal mode records the calling process only");
	if (!opts->sigchld && opts->mode == HWSPY_RECORD_STOPS)
		return lib_fail(-EINVAL, "recording by stops reads them through SIGCHLD: set "
				"opts.sigchld, or give the capture or nonblocking mode");
	if (opts->events && (opts->events->n == 0 || opts->events->n > HWSPY_MAX_EVENTS))
		return lib_fail(-EINVAL, "no event to sample");
	h = calloc(1, sizeof(*h));
	if (!h)
		return lib_fail(-ENOMEM, "out of memory");
	h->opts = *opts;
	h->opts.events = NULL;
	if (opts->events) {
		h->events = *opts->events;
	} else if (events_parse("cpu-clock", &h->events.spec[0]) == 0) {
		h->events.n = 1;
	} else {
		free(h);
		return lib_fail(-ENOENT, "no 'cpu-clock' event");
	}
	h->sink = sink;
	h->sink_ctx = ctx;
	h->ro = (struct record_opts) {
		.pid = opts->self ? getpid() : opts->pid, .argv = opts->argv,
		.events = h->events.spec, .n_events = h->events.n,
		.freq = opts->freq, .period = opts->period, .leaders = opts->leaders,
		.mode = internal_mode(opts->mode), .stop_budget = opts->stop_budget,
		.function = opts->function, .threads = opts->threads, .native = opts->native,
		.stack_size = opts->stack_size ? opts->stack_size : RECORD_DEFAULT_STACK_SIZE,
		.kernel = opts->kernel, .off_cpu = opts->off_cpu, .wall = opts->wall,
		.subprocesses = opts->subprocesses, .gil_only = opts->gil_only,
		.gil_waits = opts->gil_waits,
		.log_bytes = opts->log_bytes, .exec_fn = opts->exec_fn, .exec_ctx = opts->exec_ctx,
		.sigchld = opts->sigchld, .raise_nofile = opts->raise_nofile,
		.ring_pages = opts->ring_pages, .read_ms = opts->read_ms,
	};
	if (!h->ro.freq && !h->ro.period)
		h->ro.freq = 100;
	rs = (struct record_sink) { .sample = sample_sink, .ctx = h };
	r = recorder_new(&h->ro, &rs, &h->rec);
	if (r < 0) {
		free(h);
		return lib_fail(r, "out of memory");
	}
	h->profile = (struct hwspy_profile) { .p = recorder_profile(h->rec), .owned = false };
	exclude_caller(h);
	*ret = h;
	return 0;
}

void hwspy_recorder_free(struct hwspy_recorder *h)
{
	if (!h)
		return;
	recorder_free(h->rec);
	free(h);
}

static bool warm(const struct hwspy_recorder *h)
{
	/* nothing stops the target while the first samples are unwound slowly: load the modules'
	 * symbols and CFI before sampling starts, not while the rings fill */
	return h->opts.mode == HWSPY_RECORD_AUTO || h->opts.mode == HWSPY_RECORD_CAPTURE ||
	       h->opts.mode == HWSPY_RECORD_SIGNAL;
}

static bool is_shell(const char *exe)
{
	static const char *const shells[] = {
		"sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox", "env",
	};
	const char *base = strrchr(exe, '/');
	size_t len;

	base = base ? base + 1 : exe;
	len = strcspn(base, " ");       /* " (deleted)" */
	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (strlen(shells[i]) == len && !strncmp(base, shells[i], len))
			return true;
	return false;
}

int hwspy_process_exe(pid_t pid, char *buf, size_t size, bool *ret_shell)
{
	char dir[64], link[80];
	ssize_t n;
	int r;

	if (size < 2)
		return -EINVAL;
	/* a main thread gone (pthread_exit) has no exe: a live thread's directory has */
	r = procfs_mem_dir(pid, dir, sizeof(dir));
	if (r < 0)
		return r;
	snprintf(link, sizeof(link), "%s/exe", dir);
	n = readlink(link, buf, size - 1);      /* the link's text: nothing is followed */
	if (n < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	buf[n] = '\0';
	if (ret_shell)
		*ret_shell = is_shell(buf);
	return 0;
}

const char *hwspy_pid_name(pid_t pid, char *buf, size_t size)
{
	char exe[256];

	if (hwspy_process_exe(pid, exe, sizeof(exe), NULL) == 0)
		snprintf(buf, size, "pid %d (%s)", (int) pid, exe);
	else
		snprintf(buf, size, "pid %d", (int) pid);
	return buf;
}

/* Whether pid's command line names pyenv or python (a shim, a wrapper about to exec one). */
static bool runs_python(pid_t pid)
{
	char path[64], cmd[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, cmd, sizeof(cmd));
	(void) close(fd);
	return n > 0 && (memmem(cmd, (size_t) n, "pyenv", 5) || memmem(cmd, (size_t) n, "python", 6));
}

/* A shell or env that runs Python (a pyenv shim is bash for its first half second): waits,
 * a bounded while, for its exec of something else; true if it did, its exe into buf. */
static bool shim_exec_waited(pid_t pid, char *buf, size_t size)
{
	uint64_t end = clock_now_ns() + SHIM_WAIT_NS;
	bool shell = false;

	if (hwspy_process_exe(pid, buf, size, &shell) < 0 || !shell || !runs_python(pid))
		return false;
	while (clock_now_ns() < end) {
		struct timespec ts = { 0, SHIM_POLL_NS };

		(void) nanosleep(&ts, NULL);
		if (hwspy_process_exe(pid, buf, size, &shell) < 0)
			return false;
		if (!shell)
			return true;
	}
	return false;
}

int hwspy_recorder_open(struct hwspy_recorder *h)
{
	char was[256] = "", exe[256];
	bool shell = false;
	int pid = h->ro.pid, r;

	lib_reason_clear();
	exclude_caller(h);
	if (h->opts.argv)
		return lib_fail(-EINVAL, "a launched command is opened as it starts");
	/* a shim (a shell about to exec Python) that becomes Python is said to have done so */
	if (hwspy_process_exe(pid, was, sizeof(was), &shell) < 0 || !shell)
		was[0] = '\0';
	r = recorder_find_python(h->rec);
	if (r == -ENOENT && shim_exec_waited(pid, exe, sizeof(exe)))
		r = recorder_find_python(h->rec);
	if (r >= 0 && was[0] && hwspy_process_exe(pid, exe, sizeof(exe), &shell) == 0 && !shell)
		note(h, HWSPY_NOTE_SHIM_EXEC, 0, was);
	if (r == -EPERM || r == -EACCES)
		return lib_fail_errno(r, "not allowed to profile pid %d", pid);
	if (r == -ESRCH)
		return lib_fail(r, "no process with pid %d", pid);
	if (r == -ENOENT && h->opts.native) {
		note(h, HWSPY_NOTE_NOT_PYTHON, r, hwspy_process_exe(pid, exe, sizeof(exe), NULL) ?
		     NULL : exe);
	} else if (r == -ENOENT) {
		if (hwspy_process_exe(pid, exe, sizeof(exe), &shell) < 0)
			snprintf(exe, sizeof(exe), "?");
		return lib_fail(r, "pid %d (%s) is not a Python process (no libpython or _PyRuntime "
				"found)%s", pid, exe, shell ? "" : "; add native frames to profile its "
				"native code alone");
	} else if (r == -ENOTSUP) {
		return lib_fail(r, "pid %d runs an unsupported Python; hwspy supports 3.8-3.14", pid);
	} else if (r < 0) {
		return lib_fail_errno(r, "cannot read the Python interpreter of pid %d", pid);
	}
	r = recorder_load_symbols(h->rec, warm(h));
	if (r < 0)
		return lib_fail_errno(r, "cannot read the mappings of pid %d", pid);
	h->opened = true;
	return 0;
}

/* record/'s notes in the public codes, with the phrase they take */
static void policy_note(void *ctx, enum record_note n, int err, const char *name)
{
	struct hwspy_recorder *h = ctx;
	char why[320];

	switch (n) {
	case RECORD_NOTE_TRACEPOINT:
		note(h, HWSPY_NOTE_TRACEPOINT, err, name);
		break;
	case RECORD_NOTE_NO_CAPTURE_ASLEEP:
	case RECORD_NOTE_NO_CAPTURE:
		hwspy_bpf_refused_words(err, why, sizeof(why));
		note(h, n == RECORD_NOTE_NO_CAPTURE ? HWSPY_NOTE_NO_CAPTURE :
			HWSPY_NOTE_NO_CAPTURE_ASLEEP, err, why);
		break;
	case RECORD_NOTE_STOPS_BUSY:
		note(h, HWSPY_NOTE_STOPS_BUSY, err, NULL);
		break;
	case RECORD_NOTE_STOPS_REFUSED:
		note(h, HWSPY_NOTE_STOPS_REFUSED, err, NULL);
		break;
	case RECORD_NOTE_USER_ONLY:
		note(h, HWSPY_NOTE_USER_ONLY, err, NULL);
		break;
	case RECORD_NOTE_SIGNAL:
		hwspy_bpf_refused_words(err, why, sizeof(why));
		note(h, HWSPY_NOTE_SIGNAL, err, why);
		break;
	case RECORD_NOTE_NO_SIGNAL:
		note(h, HWSPY_NOTE_NO_SIGNAL, err, err == -EBUSY ? "the process has a SIGTRAP "
		     "handler of its own" : NULL);
		break;
	}
}

static struct record_fallback policy(struct hwspy_recorder *h)
{
	return (struct record_fallback) {
		/* the calling process asked for its capture: nonblocking where none is allowed */
		.auto_mode = h->opts.mode == HWSPY_RECORD_AUTO ||
			     (h->opts.mode == HWSPY_RECORD_CAPTURE && h->opts.self),
		.mode = internal_mode(h->opts.mode),
		/* never stopped: the calling process, or a target of a caller whose SIGCHLD the
		 * recorder may not take (stops are read through it) */
		.self = h->opts.self || !h->opts.sigchld,
		.note_fn = policy_note, .note_ctx = h,
	};
}

static void capture_told(struct hwspy_recorder *h)
{
	const struct record_stats *rs = recorder_stats(h->rec);

	if (rs->capture_failures == h->capture_failures)
		return;
	h->capture_failures = rs->capture_failures;
	note(h, HWSPY_NOTE_CAPTURE_FAILED, rs->capture_error, NULL);
}

int hwspy_recorder_start(struct hwspy_recorder *h)
{
	const char *target = h->opts.argv ? h->opts.argv[0] : NULL;
	struct record_fallback fb;
	int r;

	lib_reason_clear();
	exclude_caller(h);
	if (h->started)
		return lib_fail(-EINVAL, "the recorder has started already");
	if (!h->opts.argv && !h->opened && (r = hwspy_recorder_open(h)) < 0)
		return r;
	fb = policy(h);
	(void) recorder_choose_mode(h->rec, &fb);
	r = recorder_start_fallback(h->rec, &fb, h->events.spec);
	if (r == -ESRCH)
		return lib_fail(r, "no process with pid %d (it exited)", h->ro.pid);
	if (r == -EACCES || r == -EPERM)
		return lib_fail_errno(r, "not allowed to profile %s%s", target ? "" : "pid ",
				      target ? target : "");
	if (r == -ENOENT && !h->opts.argv)
		return lib_fail(r, "event '%s' cannot be opened on this machine",
				h->events.spec[0].name);
	if (r < 0)
		return lib_fail_errno(r, "cannot start sampling");
	h->started = true;
	capture_told(h);
	return 0;
}

enum hwspy_record_mode hwspy_recorder_mode(const struct hwspy_recorder *h)
{
	switch (recorder_mode(h->rec)) {
	case RECORD_STOPS: return HWSPY_RECORD_STOPS;
	case RECORD_NONBLOCKING: return HWSPY_RECORD_NONBLOCKING;
	case RECORD_SIGNAL: return HWSPY_RECORD_SIGNAL;
	default: return HWSPY_RECORD_CAPTURE;
	}
}

pid_t hwspy_recorder_pid(const struct hwspy_recorder *h)
{
	return h->opts.argv ? recorder_pid(h->rec) : h->ro.pid;
}

static int slice(void *ctx, struct recorder *rec, int r)
{
	struct hwspy_recorder *h = ctx;

	(void) rec;
	if (r >= 0)
		capture_told(h);   /* the interpreter of a launched command */
	if (h->run->slice_fn)
		return h->run->slice_fn(h->run->ctx, h, r);
	return r;
}

int hwspy_recorder_run(struct hwspy_recorder *h, const struct hwspy_run *run)
{
	static volatile sig_atomic_t never;
	static const struct hwspy_run none;
	struct record_run rr = { .slice_fn = slice, .ctx = h };
	int r;

	lib_reason_clear();
	exclude_caller(h);
	if (!h->started)
		return lib_fail(-EINVAL, "the recorder has not started");
	if (!run)
		run = &none;
	rr.stop = run->stop ? run->stop : &never;
	rr.duration_ns = run->duration_ns;
	rr.slice_ns = run->slice_ns;
	h->run = run;
	h->run_start_ns = (uint64_t) time(NULL) * 1000000000ULL;
	r = recorder_run(h->rec, &rr);
	h->run = NULL;
	if (r == -EBUSY)
		return lib_fail(r, "the target began to catch every signal hwspy could stop it "
				"with: sampling ended early");
	return r < 0 ? lib_fail_errno(r, "sampling stopped early") : 0;
}

int hwspy_recorder_pause(struct hwspy_recorder *h)
{
	lib_reason_clear();
	exclude_caller(h);
	return recorder_pause(h->rec);
}

int hwspy_recorder_resume(struct hwspy_recorder *h)
{
	int r;

	lib_reason_clear();
	exclude_caller(h);
	r = recorder_resume(h->rec);
	return r < 0 ? lib_fail_errno(r, "cannot take the target again") : 0;
}

void hwspy_recorder_stop(struct hwspy_recorder *h)
{
	exclude_caller(h);
	recorder_stop(h->rec);
}

void hwspy_recorder_wake(struct hwspy_recorder *h)
{
	recorder_wake(h->rec);
}

void hwspy_recorder_python(const struct hwspy_recorder *h, struct hwspy_python *ret)
{
	struct record_python py;

	recorder_python(h->rec, &py);
	*ret = (struct hwspy_python) {
		.result = py.result, .fatal = py.fatal, .found = py.found,
		.version = py.info ? py.info->version : "", .binary = py.info ? py.info->binary : "",
		.error = py.info ? py.info->error : "",
	};
	if (py.info) {
		ret->major = py.info->major;
		ret->minor = py.info->minor;
		ret->micro = py.info->micro;
	}
}

void hwspy_recorder_stats(struct hwspy_recorder *h, struct hwspy_record_stats *ret)
{
	const struct record_stats *rs = recorder_stats(h->rec);
	const struct sampler_stats *st = rs->sampler;

	*ret = (struct hwspy_record_stats) {
		.elapsed_ns = rs->elapsed_ns, .dropped_torn = rs->dropped_torn,
		.dropped_unreadable = rs->dropped_unreadable, .no_python = rs->no_python,
		.read_after_exit = rs->read_after_exit, .merge_failed = rs->merge_failed,
		.late_unfit = rs->late_unfit, .unwound = rs->unwound,
		.unwound_frames = rs->unwound_frames, .kernel_frames = rs->kernel_frames,
		.not_unwound_maps = rs->not_unwound_maps, .not_unwound_stack = rs->not_unwound_stack,
		.captured = rs->captured, .uncaptured = rs->uncaptured,
		.captured_cut = rs->captured_cut, .captured_dropped = rs->captured_dropped,
		.truncated = rs->truncated,
		.truncated_gone = rs->truncated_gone, .add_failed = rs->add_failed,
		.n_late = rs->n_late, .late_median_us = rs->late_median_us,
		.late_p99_us = rs->late_p99_us, .late_max_us = rs->late_max_us,
		.off_cpu_ns = rs->off_cpu_ns, .processes = rs->processes,
		.target_sampled = rs->target_sampled, .off_cpu_unmatched = rs->off_cpu_unmatched,
		.off_cpu_capped = rs->off_cpu_capped, .off_cpu_initial = rs->off_cpu_initial,
		.off_cpu_stale = rs->off_cpu_stale, .off_cpu_regs = rs->off_cpu_regs,
		.off_cpu_regs_unknown = rs->off_cpu_regs_unknown, .gil_live = rs->gil_live,
		.gil_late = rs->gil_late, .gil_dropped_free = rs->gil_dropped_free,
		.gil_dropped_unknown = rs->gil_dropped_unknown, .gil_untallied = rs->gil_untallied,
		.capture_error = rs->capture_error, .capture_failures = rs->capture_failures,
		.excluded = h->excluded + (rs->sampler ? rs->sampler->signal_self : 0),
		.have_symbolizer = rs->symbolizer != NULL,
	};
	if (rs->pyframes) {
		ret->py_walks = rs->pyframes->walks;
		ret->py_torn = rs->pyframes->torn;
		ret->py_unreadable = rs->pyframes->unreadable;
		ret->py_no_thread = rs->pyframes->no_thread;
		ret->py_truncated = rs->pyframes->truncated;
	}
	if (!st)
		return;
	ret->started = true;
	ret->samples = st->samples;
	ret->lost = st->lost;
	ret->lost_switches = st->lost_switches;
	ret->switch_lost_known = st->switch_lost_known;
	ret->throttled = st->throttled;
	ret->stops = st->stops;
	ret->stops_without_sample = st->stops_without_sample;
	ret->signals_forwarded = st->signals_forwarded;
	ret->eintr_undone = st->eintr_undone;
	ret->budget_late = st->budget_late;
	ret->budget_trips = st->budget_trips;
	ret->signal_changes = st->signal_changes;
	ret->threads_seen = st->threads_seen;
	ret->threads_failed = st->threads_failed;
	for (int i = 0; i < HWSPY_FAIL_N && i < SAMPLER_FAIL_N; i++)
		ret->threads_failed_by[i] = st->threads_failed_by[i];
	ret->threads_failed_errno = st->threads_failed_errno;
	ret->threads_shrunk = st->threads_shrunk;
	ret->cpu_rings = st->cpu_rings;
	ret->cpu_rings_shrunk = st->cpu_rings_shrunk;
	ret->ring_pages = st->ring_pages;
	ret->ring_pages_min = st->ring_pages_min;
	ret->execs = st->execs;
	ret->captured_by_sampler = st->captured;
	ret->capture_mismatched = st->capture_mismatched;
	ret->capture_ids_missed = st->capture_ids_missed;
	ret->capture_frames = st->capture_max_nodes;
	ret->capture_versions = st->capture_versions;
	ret->capture_threads_failed = st->capture_threads_failed;
	ret->signal_seen = st->signal_seen;
	ret->signal_taken = st->signal_taken;
	ret->signal_excluded = st->signal_excluded;
	ret->signal_dropped = st->signal_dropped;
	ret->signal_foreign = st->signal_foreign;
	ret->signal_unpaired = st->signal_unpaired;
	ret->signal_ns_total = st->signal_ns_total;
	ret->signal_ns_max = st->signal_ns_max;
	ret->target_exited = st->target_exited;
	ret->exit_status = st->exit_status;
}

size_t hwspy_recorder_gil_threads(const struct hwspy_recorder *h, struct hwspy_gil_thread *ret,
				  size_t max)
{
	size_t n;
	const struct record_gil_thread *t = recorder_gil_threads(h->rec, &n);

	for (size_t i = 0; i < n && i < max; i++)
		ret[i] = (struct hwspy_gil_thread) {
			.tid = t[i].tid, .samples = t[i].samples, .weight = t[i].weight,
			.known = t[i].known, .held = t[i].held, .off_ns = t[i].off_ns,
			.gil_wait_ns = t[i].gil_wait_ns, .first_ns = t[i].first_ns,
			.last_ns = t[i].last_ns,
		};
	return n;
}

uint64_t lib_recorder_gil_addr(struct hwspy_recorder *h)
{
	return h->started ? recorder_gil_addr(h->rec) : 0;
}

struct hwspy_profile *hwspy_recorder_profile(struct hwspy_recorder *h)
{
	return &h->profile;
}

int hwspy_profile_frame_text(const struct hwspy_profile *p, uint32_t id, char *buf, size_t size)
{
	struct buf b;
	int n;

	if (id >= profile_n_frames(p->p))
		return -ENOENT;
	buf_init(&b);
	n = folded_frame_text(profile_frame(p->p, id), &b) < 0 ? -ENOMEM :
	    snprintf(buf, size, "%s", b.len ? b.data : "");
	buf_release(&b);
	return n;
}

bool hwspy_profile_log_complete(const struct hwspy_profile *p)
{
	return profile_log_complete(p->p);
}

void hwspy_recorder_note_run(struct hwspy_recorder *h, const char *missed_why)
{
	struct hwspy_record_stats st;

	hwspy_recorder_stats(h, &st);
	hwspy_profile_set_run(&h->profile, h->run_start_ns, st.elapsed_ns, st.lost,
			      st.dropped_torn + st.dropped_unreadable, st.threads_seen);
	if (st.threads_failed)
		(void) hwspy_profile_set_threads_missed(&h->profile, st.threads_failed, missed_why);
}

int hwspy_recorder_verdict(struct hwspy_recorder *h)
{
	struct hwspy_record_stats st;
	struct hwspy_python py;

	hwspy_recorder_python(h, &py);
	hwspy_recorder_stats(h, &st);
	if (py.fatal)
		return py.fatal;
	/* gone before an interpreter was ever found: it was not a Python process */
	if (h->opts.argv && !py.found && !h->opts.native)
		return py.result && py.result != -ESRCH ? py.result : -ENOENT;
	/* an empty profile is nothing useful: the previous output stays */
	return !st.samples && !st.off_cpu_initial;
}

const struct hwspy_record_opts *lib_recorder_opts(const struct hwspy_recorder *h)
{
	return &h->opts;
}

const struct hwspy_events *lib_recorder_events(const struct hwspy_recorder *h)
{
	return &h->events;
}
