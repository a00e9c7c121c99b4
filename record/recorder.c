/*
 * recorder: the recorder's lifecycle (record.h): its making, finding the interpreter, the
 * sampler's start with the capture, the run loop and the end of a run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "record/internal.h"

/* a pyframes capture spec fits the sampler's program as it is */
_Static_assert(PYFRAMES_CAPTURE_STRIDE_MAX == SAMPLER_CAPTURE_MAX_STRIDE &&
	       PYFRAMES_CAPTURE_MAX_EXTRAS == SAMPLER_CAPTURE_MAX_EXTRAS &&
	       PYFRAMES_CAPTURE_EXTRA_MAX == SAMPLER_CAPTURE_MAX_EXTRA_BYTES &&
	       PYFRAMES_CAPTURE_FRAME_MAX == SAMPLER_CAPTURE_MAX_NODE_BYTES,
	       "pyframes' capture limits are the sampler's");

static int profile_sink(void *ctx, const struct record_sample *s)
{
	return profile_add_at(ctx, (uint32_t) s->tid, s->frames, s->depth, s->values, s->time_ns);
}

int recorder_new(const struct record_opts *opts, const struct record_sink *sink,
		 struct recorder **ret)
{
	const char *names[SAMPLER_MAX_EVENTS];
	struct recorder *rec;
	size_t n = opts->n_events < SAMPLER_MAX_EVENTS ? opts->n_events : SAMPLER_MAX_EVENTS;

	*ret = NULL;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->opts = *opts;
	rec->pid = opts->pid;
	for (size_t i = 0; i < n; i++)
		names[i] = opts->events[i].name;
	if (opts->off_cpu || opts->wall)        /* its samples weigh nanoseconds, not switches */
		names[0] = opts->off_cpu ? "off-cpu" : "wall";
	rec->prof = profile_new(names, n);
	if (!rec->prof || record_special_frame(rec, "[native]", &rec->native_frame) < 0 ||
	    record_special_frame(rec, "[unknown]", &rec->unknown_frame) < 0)
		goto fail;
	profile_set_event_rate(rec->prof, 0, opts->freq, opts->period, true);
	for (size_t i = 1; i < n; i++) {
		struct sampler_opts so = { .events = opts->events, .n_events = n, .freq = opts->freq };
		uint64_t freq, period;

		if (!(opts->leaders >> i & 1))
			continue;
		sampler_leader_rate(&so, i, &freq, &period);
		profile_set_event_rate(rec->prof, i, freq, period, true);
	}
	if (opts->log_bytes)
		(void) profile_log_start(rec->prof, opts->log_bytes);
	rec->user_sink = sink && sink->sample ? *sink :
			 (struct record_sink) { .sample = profile_sink, .ctx = rec->prof };
	if (opts->subprocesses) {
		/* counts the processes whose samples the sink took (their root frames) */
		rec->procs_sink = rec->user_sink;
		rec->procs_last_frame = UINT32_MAX;
		rec->user_sink = (struct record_sink) { .sample = record_procs_sink, .ctx = rec };
	}
	rec->sink = (struct record_sink) { .sample = record_gil_sink, .ctx = rec };
	rec->scratch = malloc(MAX_NATIVE * MERGE_SCRATCH_PER_FRAME);
	/* reads after the sample: how late (exact mode by stops reads late too: samples past a
	 * thread's stop budget) */
	rec->late_us = malloc(LATE_MAX * sizeof(*rec->late_us));
	if (!rec->scratch || !rec->late_us ||
	    record_pending_init(rec, opts->native ? opts->stack_size : 0) < 0 ||
	    ((opts->off_cpu || opts->wall || opts->gil_waits) && record_offcpu_init(rec) < 0))
		goto fail;
	*ret = rec;
	return 0;
fail:
	recorder_free(rec);
	return -ENOMEM;
}

void recorder_free(struct recorder *rec)
{
	if (!rec)
		return;
	sampler_free(rec->sampler);
	pyframes_free(rec->pf);
	if (rec->mem_open)
		remote_mem_close(&rec->mem);
	symbolizer_free(rec->sym);
	record_pending_free(rec);
	record_offcpu_free(rec);
	record_procs_free(rec);
	record_gil_free(rec);
	free(rec->scratch);
	for (size_t i = 0; i < RECORD_PY_IDS; i++)
		free(rec->py_ids[i].id);
	profile_free(rec->prof);
	free(rec->names);
	free(rec->pynames);
	free(rec->pynames_read);
	free(rec->late_us);
	free(rec->bid_ambiguous);
	free(rec);
}

int recorder_find_python(struct recorder *rec)
{
	int r = 0;

	/* called again: the interpreter is looked for afresh, in the memory already open */
	pyframes_free(rec->pf);
	rec->pf = NULL;
	if (!rec->mem_open && (r = remote_mem_open_pid(rec->pid, &rec->mem)) >= 0)
		rec->mem_open = true;
	/* attached: a process started a moment ago may still be loading its interpreter */
	if (r >= 0 && rec->opts.pid)
		r = pyframes_open_settled(rec->pid, &rec->mem, &rec->pf, &rec->info);
	else if (r >= 0)
		r = pyframes_open(rec->pid, &rec->mem, &rec->pf, &rec->info);
	rec->detect_error = r;
	return r;
}

int recorder_load_symbols(struct recorder *rec, bool warm)
{
	struct native_frame nf;
	int r = symbolizer_new(rec->pid, &rec->sym);

	if (r < 0 || !warm)
		return r;
	if (rec->opts.native)
		(void) symbolizer_warm(rec->sym);
	if (rec->opts.kernel)   /* loads /proc/kallsyms */
		(void) symbolizer_kernel(rec->sym, 0, &nf);
	return 0;
}

void recorder_set_mode(struct recorder *rec, enum record_mode mode)
{
	rec->opts.mode = mode;
	if (rec->pf)    /* walks of threads that run on: verified */
		pyframes_set_verify(rec->pf, mode != RECORD_STOPS);
}

enum record_mode recorder_mode(const struct recorder *rec)
{
	return rec->opts.mode;
}

/* The capture asked of sampler_new(): where it failed for the larger program (a kernel that
 * refuses it), the frames alone. */
static void capture_started(struct recorder *rec, struct sampler_capture_spec *cspec)
{
	int r;

	rec->capture_gen = rec->pf_gen;
	r = sampler_capture_error(rec->sampler);
	if (r && r != -EPERM && cspec->n_extras) {
		cspec->n_extras = 0;
		r = sampler_capture_start(rec->sampler, cspec);
	}
	rec->capture_extras = r ? 0 : cspec->n_extras;
	rec->capture_gil = !r && cspec->gil_at;
	rec->capture_gc = !r && cspec->gc_at;
	rec->capture_gil_tries = 0;
	rec->stats.capture_error = r;
	rec->stats.capture_failures += r != 0;
}

int recorder_start(struct recorder *rec)
{
	const struct record_opts *o = &rec->opts;
	bool capture = o->mode == RECORD_CAPTURE, signal = o->mode == RECORD_SIGNAL;
	struct sampler_capture_spec cspec;
	struct sampler_opts so = {
		.pid = o->pid, .argv = o->argv, .events = o->events, .n_events = o->n_events,
		.freq = o->freq, .period = o->period, .leaders = o->leaders,
		.exact = o->mode == RECORD_STOPS,
		.stop_budget_pct = o->stop_budget, .capture = capture, .signal = signal,
		.stack_user_size = o->native ? o->stack_size : 0,
		.kernel_callchain = o->kernel, .off_cpu = o->off_cpu,
		/* a switch-out's stop would interrupt the system call it sleeps in */
		.wall = o->wall || (o->gil_waits && o->mode != RECORD_STOPS),
		.switch_stack_size = o->wall && o->native ? o->stack_size : 0,
		.subprocesses = o->subprocesses,
		.regs_user_mask = REGS_USER_MASK,
		.event_fn = record_on_event, .event_ctx = rec,
		.exec_fn = o->exec_fn, .exec_ctx = o->exec_ctx,
		.sigchld = o->sigchld, .raise_nofile = o->raise_nofile,
		.ring_pages = o->ring_pages ? o->ring_pages
			      : o->native ? (capture ? 512 : 256) : capture ? 256 : 0,
		.read_ms = o->read_ms,
	};
	int r;

	if (rec->pf && rec->pf_gen == 0)
		record_python_found(rec);
	/* attach: the interpreter is known, so every sample can be captured from the first */
	if ((capture || signal) && rec->pf && record_capture_spec(rec, &cspec) == 0) {
		so.capture_spec = &cspec;
		/* made for this interpreter: --subprocesses, the roots of the children's threads
		 * that sampler_new() opens are given where their layout is the same */
		rec->capture_gen = rec->pf_gen;
	}
	r = sampler_new(&so, &rec->sampler);
	if (r < 0)
		return r;
	if (so.capture_spec)
		capture_started(rec, &cspec);
	sampler_set_resumed_fn(rec->sampler, record_flush);
	rec->pid = sampler_pid(rec->sampler);
	return 0;
}

pid_t recorder_pid(const struct recorder *rec)
{
	return rec->pid;
}

int recorder_pause(struct recorder *rec)
{
	return rec->sampler ? sampler_pause(rec->sampler) : 0;
}

int recorder_resume(struct recorder *rec)
{
	return rec->sampler ? sampler_resume(rec->sampler) : 0;
}

/* The reads after their sample, how late: median, p99, max. */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

static void late_figures(struct recorder *rec)
{
	size_t n = rec->stats.n_late;

	if (!n)
		return;
	qsort(rec->late_us, n, sizeof(*rec->late_us), cmp_u32);
	rec->stats.late_median_us = rec->late_us[n / 2];
	rec->stats.late_p99_us = rec->late_us[n * 99 / 100];
	rec->stats.late_max_us = rec->late_us[n - 1];
}

void recorder_stop(struct recorder *rec)
{
	if (!rec->sampler || rec->run_over)
		return;
	/* stopping drains what is left in the rings through the callback */
	sampler_stop(rec->sampler);
	record_flush(rec);
	record_offcpu_end(rec, sampler_stats(rec->sampler)->target_exited);
	record_build_ids(rec);
	rec->stats.elapsed_ns = rec->run_start_ns ? clock_now_ns() - rec->run_start_ns : 0;
	rec->run_over = true;
	late_figures(rec);
}

void recorder_wake(struct recorder *rec)
{
	if (rec->sampler)
		sampler_wake(rec->sampler);
}

/* The next slice of sampling, at most the run's slice (SLICE_NS where a thread's Python name
 * is still looked for between slices) and what is left of the duration: its length, or 0 when
 * the duration is over or the interpreter found is one hwspy cannot read. Each slice wakes
 * hwspy (~0.1 ms of its CPU on this VM): 1 s rather than 250 ms took its fixed part from
 * 0.54 to 0.35 ms/s (bench/README.md). */
static uint64_t next_slice(struct recorder *rec, const struct record_run *run)
{
	uint64_t slice = SLICE_NS, elapsed = clock_now_ns() - rec->run_start_ns;

	if (run->slice_ns > SLICE_NS && !record_thread_names_pending(rec))
		slice = run->slice_ns < SLICE_MAX_NS ? run->slice_ns : SLICE_MAX_NS;

	if (rec->opts.read_ms * 1000000ULL > slice)
		slice = rec->opts.read_ms * 1000000ULL;

	/* a launched command's interpreter: look for it often, not only when samples come in
	 * (every 100 ms in capture mode), so that the capture starts with its first Python
	 * frames */
	if ((rec->opts.mode == RECORD_CAPTURE || rec->opts.mode == RECORD_SIGNAL) && !rec->pf &&
	    !rec->fatal) {
		record_detect(rec);
		(void) record_capture_start(rec);
		slice = DETECT_INTERVAL_NS;
	}
	if (rec->fatal)         /* a Python hwspy cannot read, found between samples */
		return 0;
	if (run->duration_ns) {
		if (elapsed >= run->duration_ns)
			return 0;
		if (run->duration_ns - elapsed < slice)
			slice = run->duration_ns - elapsed;
	}
	return slice;
}

int recorder_run(struct recorder *rec, const struct record_run *run)
{
	int r = 0;

	rec->stop = run->stop;
	/* the run is as long as the events counted: a launch's start-up before now is in it */
	rec->run_start_ns = sampler_stats(rec->sampler)->start_ns;
	if (!rec->run_start_ns)
		rec->run_start_ns = clock_now_ns();
	(void) record_capture_start(rec);
	record_offcpu_initial(rec);
	while (!*run->stop && !sampler_stats(rec->sampler)->target_exited) {
		uint64_t slice = next_slice(rec, run);

		if (!slice)
			break;
		r = sampler_run(rec->sampler, record_on_sample, rec, run->stop, slice);
		if (r >= 0)             /* the interpreter of a launched command, found */
			(void) record_capture_start(rec);
		record_thread_names_poll(rec);
		if (run->slice_fn)
			r = run->slice_fn(run->ctx, rec, r);
		if (r < 0)
			break;
	}
	recorder_stop(rec);
	if (!rec->fatal)
		record_thread_names_final(rec);
	return r;
}

void recorder_python(const struct recorder *rec, struct record_python *ret)
{
	*ret = (struct record_python) {
		.result = rec->pf ? 0 : rec->detect_error, .fatal = rec->fatal,
		.found = rec->pf != NULL, .info = &rec->info,
	};
}

struct profile *recorder_profile(struct recorder *rec)
{
	return rec->prof;
}

const struct record_gil_thread *recorder_gil_threads(const struct recorder *rec, size_t *ret_n)
{
	*ret_n = rec->gil.n;
	return rec->gil.t;
}

const struct record_stats *recorder_stats(struct recorder *rec)
{
	rec->stats.sampler = rec->sampler ? sampler_stats(rec->sampler) : NULL;
	rec->stats.pyframes = rec->pf ? pyframes_stats(rec->pf) : NULL;
	rec->stats.symbolizer = rec->sym ? symbolizer_stats(rec->sym) : NULL;
	if (!rec->run_over && rec->run_start_ns)
		rec->stats.elapsed_ns = clock_now_ns() - rec->run_start_ns;
	return &rec->stats;
}
