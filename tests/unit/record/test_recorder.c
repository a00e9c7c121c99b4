/*
 * Unit tests of record/ as a stage: the recorder's objects linked alone with fake stages
 * (fake_stages.h: a scripted sampler, pyframes and symbolizer), driven through record.h's
 * lifecycle. A sample stream goes in, the profile (or a sink) comes out: Python stacks and the
 * frames that stand for what could not be read ([native], [unknown]), the values per event,
 * thread names; an exec mid-run (the old interpreter dropped, the new one found, the capture
 * started again); stacks cut at the root; the capture's paths (captured, uncaptured until the
 * thread's root is known, found by the program's search, a kernel refusing the larger program,
 * no capture at all) and the fallback to another mode between failed starts; exact mode by
 * stops (the walk at the stop, the rest after the resume); native and kernel frames merged;
 * an unsupported Python ending the run.
 *
 * Profile stacks are checked as text, root first: Python frames by name, native frames as
 * "name [module]", kernel frames "name_[k]", others by their name.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "record/internal.h"
#include "record/record.h"
#include "tests/unit/record/fake_stages.h"

static const struct event_spec events[2] = {
	{ .name = "cpu-clock", .kind = EVENT_SOFTWARE },
	{ .name = "page-faults", .kind = EVENT_SOFTWARE },
};

/* A pid no process has here, so that /proc tells nothing of its threads. */
static pid_t absent_pid(void)
{
	char path[64];

	for (pid_t pid = 4000000; pid > 1000; pid -= 7919) {
		snprintf(path, sizeof(path), "/proc/%d", (int) pid);
		if (access(path, F_OK) < 0)
			return pid;
	}
	fail_msg("no free pid");
	return 0;
}

static struct record_opts opts_for(enum record_mode mode)
{
	return (struct record_opts) {
		.pid = absent_pid(), .events = events, .n_events = 1, .freq = 100, .mode = mode,
		.stack_size = 16,
	};
}

static struct fake_image *image(size_t i, const char *version)
{
	struct fake_image *im = &fake.images[i];

	if (fake.n_images <= i)
		fake.n_images = i + 1;
	im->version = version;
	return im;
}

static struct fake_thread *thread(struct fake_image *im, pid_t tid, const char *stack)
{
	struct fake_thread *t = &im->threads[im->n_threads++];

	*t = (struct fake_thread) { .tid = tid, .stack = stack };
	return t;
}

static struct fake_item *item(enum fake_item_kind kind, pid_t tid)
{
	struct fake_item *it = &fake.items[fake.n_items++];

	*it = (struct fake_item) { .kind = kind, .tid = tid };
	return it;
}

static struct fake_item *samples(pid_t tid, unsigned n)
{
	struct fake_item *it = NULL;

	for (unsigned i = 0; i < n; i++)
		it = item(FAKE_SAMPLE, tid);
	return it;
}

/* Launch: the options for mode that launch argv (fake.launch_pid, a pid no process has). */
static struct record_opts launch(enum record_mode mode, char **argv)
{
	struct record_opts o = opts_for(mode);

	o.pid = 0;
	o.argv = argv;
	fake.launch_pid = absent_pid();
	return o;
}

/* Attach: new, find the interpreter, symbols, start. */
static struct recorder *attach(const struct record_opts *o, const struct record_sink *sink)
{
	struct recorder *rec;

	assert_int_equal(recorder_new(o, sink, &rec), 0);
	(void) recorder_find_python(rec);
	assert_int_equal(recorder_load_symbols(rec, true), 0);
	assert_int_equal(recorder_start(rec), 0);
	return rec;
}

static void run(struct recorder *rec)
{
	volatile sig_atomic_t stop = 0;
	struct record_run r = { .stop = &stop };

	assert_int_equal(recorder_run(rec, &r), 0);
}

/* Everything the fakes made is given back. */
static void done(struct recorder *rec)
{
	recorder_free(rec);
	assert_int_equal(fake.pf_live, 0);
	assert_int_equal(fake.sym_live, 0);
	assert_int_equal(fake.mem_opens, fake.mem_closes);
	assert_int_equal(fake.sampler_frees, fake.sampler_news - (fake.start_errors[0] < 0));
	fake_world_reset();
}

static void render(const struct profile *p, const struct profile_stack *st, char *buf, size_t n)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < st->depth && at < n; i++) {
		const struct profile_frame *f = profile_frame(p, st->frames[i]);
		const char *sep = i ? ";" : "";

		if (f->kind == FRAME_NATIVE && f->module)
			at += (size_t) snprintf(buf + at, n - at, "%s%s [%s]", sep, f->name, f->module);
		else if (f->kind == FRAME_KERNEL)
			at += (size_t) snprintf(buf + at, n - at, "%s%s_[k]", sep, f->name);
		else
			at += (size_t) snprintf(buf + at, n - at, "%s%s", sep, f->name);
	}
}

/* The sum of column col (0: samples, 1 + i: event i) over the profile's stacks that read
 * text (any thread). */
static uint64_t weight(struct recorder *rec, const char *text, size_t col)
{
	const struct profile *p = recorder_profile(rec);
	uint64_t sum = 0;
	char buf[1024];

	for (size_t i = 0; i < profile_n_stacks(p); i++) {
		render(p, profile_stack(p, i), buf, sizeof(buf));
		if (!strcmp(buf, text))
			sum += profile_values(p, i)[col];
	}
	return sum;
}

static void dump(struct recorder *rec)
{
	const struct profile *p = recorder_profile(rec);
	char buf[1024];

	for (size_t i = 0; i < profile_n_stacks(p); i++) {
		render(p, profile_stack(p, i), buf, sizeof(buf));
		print_message("# %s %llu\n", buf, (unsigned long long) profile_values(p, i)[0]);
	}
}

static size_t n_samples(struct recorder *rec)
{
	return (size_t) profile_total(recorder_profile(rec), 0);
}

/* ---- a sample stream in, the profile out ------------------------------------------------- */

static void test_stream_to_profile(void **state)
{
	struct record_opts o = opts_for(RECORD_NONBLOCKING);
	struct fake_image *im = image(0, "3.11.7");
	const struct record_stats *st;
	struct record_python py;
	struct recorder *rec;

	(void) state;
	o.n_events = 2;
	thread(im, 101, "main;work;inner")->name = "MainThread";
	thread(im, 102, "main;serve")->name = "worker-1";
	im->threads[1].torn_reads = 2;          /* torn twice, whole at the third try */
	thread(im, 103, "");                    /* runs no Python code */
	thread(im, 104, "main")->error = -EFAULT;
	thread(im, 106, "main")->torn_reads = 100;
	/* 105: no thread state, and no such thread in /proc: gone */
	for (int i = 0; i < 3; i++)
		item(FAKE_SAMPLE, 101)->values[1] = 7;
	samples(102, 2)->values[0] = 5000;
	samples(103, 1);
	samples(104, 1);
	samples(105, 1);
	samples(106, 1);

	rec = attach(&o, NULL);
	recorder_python(rec, &py);
	assert_true(py.found);
	assert_string_equal(py.info->version, "3.11.7");
	assert_false(fake.last_opts.exact);
	assert_false(fake.last_opts.capture);
	assert_int_equal(fake.last_opts.n_events, 2);
	assert_int_equal(fake.last_opts.freq, 100);
	assert_true(fake.verify);               /* the threads run on during the walks */
	run(rec);
	dump(rec);

	assert_int_equal(weight(rec, "main;work;inner", 0), 3);
	assert_int_equal(weight(rec, "main;work;inner", 1), 3000);
	assert_int_equal(weight(rec, "main;work;inner", 2), 21);
	assert_int_equal(weight(rec, "main;serve", 0), 2);
	assert_int_equal(weight(rec, "main;serve", 1), 6000);
	assert_int_equal(weight(rec, "[native]", 0), 2);
	assert_int_equal(weight(rec, "[unknown]", 0), 2);
	assert_int_equal(n_samples(rec), 9);
	assert_string_equal(profile_thread_name(recorder_profile(rec), 101), "MainThread");
	assert_string_equal(profile_thread_name(recorder_profile(rec), 102), "worker-1");

	st = recorder_stats(rec);
	assert_non_null(st->sampler);
	assert_int_equal(st->sampler->samples, 9);
	assert_int_equal(st->no_python, 1);
	assert_int_equal(st->read_after_exit, 1);
	assert_int_equal(st->dropped_torn, 1);
	assert_int_equal(st->dropped_unreadable, 1);
	assert_int_equal(st->captured + st->uncaptured, 0);
	assert_int_equal(st->n_late, 9);        /* nonblocking: every read after its sample */
	assert_int_equal(fake.sampler_stops, 1);
	/* 102's torn reads retried (2 + 1), 106's given up after 4 */
	assert_int_equal(fake.live_reads, 3 + (3 + 1) + 1 + 1 + 1 + 4);
	done(rec);
}

struct sink_log {
	unsigned seen, refuse_every;
	uint64_t periods;
	char last[256];
	struct recorder *rec;
};

static int log_sample(void *ctx, const struct record_sample *s)
{
	struct sink_log *l = ctx;
	struct profile_stack st = { .tid = (uint32_t) s->tid, .depth = (uint32_t) s->depth,
				    .frames = s->frames };

	l->seen++;
	assert_int_equal(s->n_values, 2);
	assert_int_equal(s->values[0], 1);
	l->periods += s->values[1];
	assert_true(s->time_ns > 0);
	render(recorder_profile(l->rec), &st, l->last, sizeof(l->last));
	return l->refuse_every && l->seen % l->refuse_every == 0 ? -ENOMEM : 0;
}

/* A sink gets every finished sample (frames as the recorder's frame ids); the recorder's own
 * profile then stays empty; a sample the sink refuses is counted. */
static void test_sink(void **state)
{
	struct record_opts o = opts_for(RECORD_NONBLOCKING);
	struct sink_log log = { .refuse_every = 3 };
	struct record_sink sink = { .sample = log_sample, .ctx = &log };
	struct recorder *rec;

	(void) state;
	thread(image(0, "3.12.1"), 7, "main;f;g");
	samples(7, 7);
	assert_int_equal(recorder_new(&o, &sink, &rec), 0);
	log.rec = rec;
	assert_int_equal(recorder_find_python(rec), 0);
	assert_int_equal(recorder_load_symbols(rec, false), 0);
	assert_int_equal(recorder_start(rec), 0);
	run(rec);
	assert_int_equal(log.seen, 7);
	assert_int_equal(log.periods, 7000);
	assert_string_equal(log.last, "main;f;g");
	assert_int_equal(recorder_stats(rec)->add_failed, 2);
	assert_int_equal(profile_n_stacks(recorder_profile(rec)), 0);
	done(rec);
}

/* ---- an exec mid-run ---------------------------------------------------------------------- */

/* A launched wrapper (no Python) execs the interpreter: its samples before are [native], those
 * after are named by the new interpreter, found afresh. */
static void test_exec_launched(void **state)
{
	char *argv[] = { "wrapper.sh", NULL };
	struct record_opts o = launch(RECORD_NONBLOCKING, argv);
	struct record_python py;
	struct recorder *rec;
	pid_t lp = fake.launch_pid;

	(void) state;
	image(0, NULL)->open_error = -ENOENT;
	thread(&fake.images[0], lp, "");
	thread(image(1, "3.13.0"), lp, "<module>;run");
	samples(lp, 2);
	item(FAKE_EXEC, lp);
	samples(lp, 3);

	assert_int_equal(recorder_new(&o, NULL, &rec), 0);
	assert_int_equal(recorder_start(rec), 0);
	assert_int_equal(recorder_pid(rec), lp);
	assert_non_null(fake.last_opts.argv);
	recorder_python(rec, &py);
	assert_false(py.found);
	run(rec);
	dump(rec);

	assert_int_equal(weight(rec, "[native]", 0), 2);
	assert_int_equal(weight(rec, "<module>;run", 0), 3);
	recorder_python(rec, &py);
	assert_true(py.found);
	assert_int_equal(py.result, 0);
	assert_string_equal(py.info->version, "3.13.0");
	assert_int_equal(recorder_stats(rec)->sampler->execs, 1);
	assert_int_equal(recorder_stats(rec)->no_python, 2);
	/* the wrapper looked at once (then not again within the detection interval), the new
	 * image at its first sample */
	assert_int_equal(fake.pf_opens, 2);
	assert_int_equal(fake.sym_news, 2);     /* the old image's symbols dropped at the exec */
	done(rec);
}

/* In capture mode, an exec drops the old interpreter's program: the first sample after it is
 * read live, the capture is started again for the new interpreter, and the samples after that
 * are captured. */
static void test_exec_capture(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	const struct record_stats *st;
	struct recorder *rec;

	(void) state;
	thread(image(0, "3.11.7"), 300, "main;live_old")->tstate = 0x7000;
	thread(image(1, "3.12.1"), 300, "main;live_new")->tstate = 0x8000;
	samples(300, 1)->captured = "main;old_image";
	item(FAKE_EXEC, 300);
	samples(300, 1)->captured = "main;not_yet";
	samples(300, 1)->captured = "main;new_image";
	samples(300, 1)->captured = "main;new_image";

	rec = attach(&o, NULL);
	assert_true(fake.last_capture_spec);    /* the interpreter known: captured from the first */
	assert_int_equal(fake.roots[0], 0x7000);
	run(rec);
	dump(rec);
	st = recorder_stats(rec);
	assert_int_equal(weight(rec, "main;old_image", 0), 1);
	assert_int_equal(weight(rec, "main;live_new", 0), 1);
	assert_int_equal(weight(rec, "main;new_image", 0), 2);
	assert_int_equal(weight(rec, "main;not_yet", 0), 0);
	assert_int_equal(st->captured, 3);
	assert_int_equal(st->uncaptured, 1);
	assert_int_equal(fake.capture_starts, 2);
	assert_int_equal(fake.roots[0], 0x8000);        /* the new image's root, given */
	assert_int_equal(st->capture_error, 0);
	done(rec);
}

/* A thread first sampled before it joined Python's registry, then not again (it sleeps), is
 * named from the registry between slices: it left it before the run ended. One whose first
 * sample comes after it left (its last moments, drained once it exited) keeps the name an
 * earlier read saw. */
static void test_names_between_slices(void **state)
{
	struct record_opts o = opts_for(RECORD_NONBLOCKING);
	struct fake_image *im = image(0, "3.14.0");
	const pid_t tid = 3999501, brief = 3999502;     /* no such threads in /proc: no comm */
	const uint64_t after_next_read = RECORD_PYNAMES_MS * 1000000ull + 10000000;
	struct recorder *rec;

	(void) state;
	o.threads = true;
	thread(im, tid, "sleeper");
	thread(im, brief, "brief")->name = "brief";
	samples(tid, 1);
	item(FAKE_SLICE, tid)->name_now = "sleeper-1";
	fake.items[fake.n_items - 1].pause_ns = after_next_read;
	item(FAKE_SLICE, tid)->name_now = "-";  /* it has exited */
	item(FAKE_SLICE, brief)->name_now = "-";
	fake.items[fake.n_items - 1].pause_ns = after_next_read;
	samples(brief, 1);

	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	assert_int_equal(weight(rec, "[thread 3999501 sleeper-1];sleeper", 0), 1);
	assert_int_equal(weight(rec, "[thread 3999502 brief];brief", 0), 1);
	done(rec);
}

/* ---- truncation --------------------------------------------------------------------------- */

/* A stack cut at its root end is marked there (after the thread's frame): how many frames were
 * left out, more than how many, or, a capture whose outer frames were gone when read, only
 * that some were. */
static void test_truncation(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct fake_image *im = image(0, "3.12.1");
	const struct record_stats *st;
	struct recorder *rec;

	(void) state;
	o.threads = true;
	thread(im, 401, "f;g")->tstate = 0x401;
	thread(im, 402, "f;g")->tstate = 0x402;
	thread(im, 403, "f;g")->cut = (struct pyframes_cut) { .n = 12 };    /* no root: live */
	im->threads[0].name = "deep";
	samples(401, 1)->captured_cut = (struct pyframes_cut) { .n = 904 };
	samples(401, 1)->captured_cut = (struct pyframes_cut) { .n = 12288, .more = true };
	samples(402, 1)->captured_cut = (struct pyframes_cut) { .more = true };
	samples(402, 1);
	samples(403, 1);

	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	assert_int_equal(weight(rec, "[thread 401 deep];[truncated: 904 frames];f;g", 0), 1);
	assert_int_equal(weight(rec, "[thread 401 deep];[truncated: over 12288 frames];f;g", 0), 1);
	assert_int_equal(weight(rec, "[thread 402];[truncated];f;g", 0), 1);
	assert_int_equal(weight(rec, "[thread 402];f;g", 0), 1);
	assert_int_equal(weight(rec, "[thread 403];[truncated: 12 frames];f;g", 0), 1);
	st = recorder_stats(rec);
	assert_int_equal(st->truncated, 3);
	assert_int_equal(st->truncated_gone, 1);
	assert_int_equal(st->captured, 4);
	assert_int_equal(st->uncaptured, 1);
	done(rec);
}

/* ---- the capture's paths ------------------------------------------------------------------ */

/* Captured stacks are the ones at the sample, not the thread's stack when read; a thread whose
 * state did not exist when its root was asked for is read live once, then given its root; a
 * kernel that refuses the program with its extras gets the frames alone. A walk that starts
 * the code cache over has the capture send every name again, once. */
static void test_capture_paths(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct fake_image *im = image(0, "3.12.1");
	const struct record_stats *st;
	struct recorder *rec;

	(void) state;
	fake.capture_errors[0] = -E2BIG;
	thread(im, 501, "main;now")->tstate = 0x501;
	thread(im, 502, "main;late_start");     /* no state yet when the program goes on */
	for (int i = 0; i < 2; i++)
		samples(501, 1)->captured = "main;then";
	samples(502, 1)->tstate = 0x502;
	for (int i = 0; i < 2; i++)
		samples(502, 1)->captured = "main;captured_502";
	fake.items[fake.n_items - 2].codes_forgotten = true;

	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	st = recorder_stats(rec);
	assert_int_equal(fake.capture_forgets, 1);
	assert_int_equal(fake.capture_starts, 2);
	assert_int_equal(fake.capture_extras[0], 2);
	assert_int_equal(fake.capture_extras[1], 0);    /* the frames alone */
	assert_int_equal(fake.captured_walk_extras, 0);
	assert_int_equal(st->capture_error, 0);
	assert_int_equal(weight(rec, "main;then", 0), 2);
	assert_int_equal(weight(rec, "main;now", 0), 0);
	assert_int_equal(weight(rec, "main;late_start", 0), 1);
	assert_int_equal(weight(rec, "main;captured_502", 0), 2);
	assert_int_equal(st->captured, 4);
	assert_int_equal(st->uncaptured, 1);
	assert_int_equal(st->n_late, 1);
	done(rec);
}

/* A captured walk that took its outer frames from its thread's previous walk (pyframes_cut's
 * memo_walk and spliced) takes their profile ids too, where that walk's frames were interned:
 * a walk that says so of frames it names otherwise shows the earlier walk's (pyframes' word
 * is taken); one that names a walk never seen, or none, has its frames interned. */
static void test_capture_memo_ids(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct fake_image *im = image(0, "3.12.1");
	struct fake_item *it;
	struct recorder *rec;

	(void) state;
	thread(im, 601, "main;run;work")->tstate = 0x601;
	thread(im, 602, "main;serve")->tstate = 0x602;
	it = samples(601, 1);
	it->captured = "main;run;work";
	it->captured_cut = (struct pyframes_cut) { .walk = 11 };
	it = samples(601, 1);
	it->captured = "main;run;leaf";
	it->captured_cut = (struct pyframes_cut) { .walk = 12, .memo_walk = 11, .spliced = 2 };
	it = samples(602, 1);
	it->captured = "main;serve";
	it->captured_cut = (struct pyframes_cut) { .walk = 13 };
	it = samples(601, 1);
	it->captured = "x;y;leaf2";
	it->captured_cut = (struct pyframes_cut) { .walk = 14, .memo_walk = 12, .spliced = 2 };
	it = samples(601, 1);
	it->captured = "p;q;r";
	it->captured_cut = (struct pyframes_cut) { .walk = 15, .memo_walk = 99, .spliced = 2 };
	it = samples(601, 1);
	it->captured = "p;q;s";
	it->captured_cut = (struct pyframes_cut) { .walk = 16, .memo_walk = 15, .spliced = 4 };

	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	assert_int_equal(weight(rec, "main;run;work", 0), 1);
	assert_int_equal(weight(rec, "main;run;leaf", 0), 1);
	assert_int_equal(weight(rec, "main;serve", 0), 1);
	assert_int_equal(weight(rec, "main;run;leaf2", 0), 1);
	assert_int_equal(weight(rec, "x;y;leaf2", 0), 0);
	assert_int_equal(weight(rec, "p;q;r", 0), 1);
	/* more frames said taken than the walk it names had: all interned */
	assert_int_equal(weight(rec, "p;q;s", 0), 1);
	assert_int_equal(rec->py_ids_taken, 4);
	done(rec);
}

/* The GIL at each sample: from its capture, else read live (then compared with the thread's
 * state); --gil keeps only the samples whose thread held it, counting the others; each thread's
 * counts cover every sample. */
static void test_gil(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct fake_image *im = image(0, "3.12.1");
	const struct record_gil_thread *gt;
	const struct record_stats *st;
	struct recorder *rec;
	size_t n;

	(void) state;
	im->gil = true;
	im->gil_holder = 0x502;
	thread(im, 501, "main;now")->tstate = 0x501;
	thread(im, 502, "main;b")->tstate = 0x502;
	thread(im, 503, "");                    /* no state: whether it holds it is unknown */
	for (int i = 0; i < 5; i++) {
		struct fake_item *it = samples(501, 1);

		it->captured = "main;a";
		it->gil = i < 3 ? RECORD_GIL_HELD : RECORD_GIL_FREE;
	}
	/* captured without the GIL (its read failed): read live, held by 502, then free */
	samples(502, 1)->captured = "main;b";
	samples(502, 1)->gil_holder_now = FAKE_GIL_FREE;
	fake.items[fake.n_items - 1].captured = "main;b";
	samples(503, 1)->gil_holder_now = 0x502;
	o.gil_only = true;

	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	st = recorder_stats(rec);
	assert_int_equal(fake.capture_gil_at[0], FAKE_GIL_AT);
	assert_int_equal(weight(rec, "main;a", 0), 3);
	assert_int_equal(weight(rec, "main;b", 0), 1);
	assert_int_equal(n_samples(rec), 3 + 1);
	assert_int_equal(st->gil_dropped_free, 2 + 1);
	assert_int_equal(st->gil_dropped_unknown, 1);
	assert_int_equal(st->gil_live, 3);
	assert_int_equal(st->gil_late, 3);
	gt = recorder_gil_threads(rec, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		const uint64_t want[3][3] = { { 5, 5, 3 }, { 2, 2, 1 }, { 1, 0, 0 } };
		size_t k = (size_t) (gt[i].tid - 501);

		assert_true(k < 3);
		assert_int_equal(gt[i].samples, want[k][0]);
		assert_int_equal(gt[i].known, want[k][1]);
		assert_int_equal(gt[i].held, want[k][2]);
		assert_int_equal(gt[i].weight, want[k][0] * 1000);
	}
	done(rec);

	/* no GIL (free-threaded): none in the spec, every sample unknown and kept */
	o = opts_for(RECORD_CAPTURE);
	im = image(0, "3.13.0");
	thread(im, 501, "main;ft")->tstate = 0x501;
	for (int i = 0; i < 3; i++)
		samples(501, 1)->captured = "main;ft";
	rec = attach(&o, NULL);
	run(rec);
	st = recorder_stats(rec);
	assert_int_equal(fake.capture_gil_at[0], 0);
	assert_int_equal(weight(rec, "main;ft", 0), 3);
	assert_int_equal(st->gil_live, 0);
	gt = recorder_gil_threads(rec, &n);
	assert_int_equal(n, 1);
	assert_int_equal(gt[0].samples, 3);
	assert_int_equal(gt[0].known, 0);
	done(rec);
	/* stopped samples read theirs in the stop, not late */
	o = opts_for(RECORD_STOPS);
	im = image(0, "3.12.1");
	im->gil = true;
	im->gil_holder = 0x501;
	thread(im, 501, "main;st")->tstate = 0x501;
	for (int i = 0; i < 3; i++)
		item(FAKE_SAMPLE, 501)->stopped = true;
	rec = attach(&o, NULL);
	run(rec);
	st = recorder_stats(rec);
	assert_int_equal(st->gil_live, 3);
	assert_int_equal(st->gil_late, 0);
	gt = recorder_gil_threads(rec, &n);
	assert_int_equal(n, 1);
	assert_int_equal(gt[0].held, 3);
	done(rec);
}

/* [gc] ends the stack of a sample taken while its thread ran the cyclic GC: from the capture
 * where it read the GC's flag, exact; never where the thread did not hold the GIL; a stack
 * captured without the flag is not marked (a flag read later is not the sample's); else read
 * live: at a stop (exact, however old the sample), or late but not stale (a read more than
 * RECORD_GC_STALE_NS late says nothing). [gc] comes before the kernel's frames. An interpreter
 * whose flag is not placed has no [gc]; one that places it only later (a launched command) gets
 * a program that reads it, once. The GIL the sink sees is the sample's own. */
static void test_gc(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct fake_image *im = image(0, "3.12.1");
	const struct record_gil_thread *gt;
	struct fake_item *it;
	struct recorder *rec;
	size_t n;

	(void) state;
	im->gil = true;
	im->gc = true;
	im->gil_holder = 0x701;
	thread(im, 701, "main;collect")->tstate = 0x701;
	thread(im, 702, "main;other")->tstate = 0x702;
	thread(im, 703, "main;rootless");       /* no state yet: no root, read live */
	for (int i = 0; i < 4; i++) {
		it = samples(701, 1);
		it->captured = "main;collect";
		it->gil = RECORD_GIL_HELD;
		it->gc = i < 3 ? 2 : 1;
	}
	/* another thread while 701 collects: it does not hold the GIL */
	it = samples(702, 1);
	it->captured = "main;other";
	it->gil = RECORD_GIL_FREE;
	it->gc = 2;
	/* captured, the flag unread: not marked, though a live read now says collecting */
	it = samples(701, 1);
	it->captured = "main;unread";
	it->gil = RECORD_GIL_HELD;
	it->gc_now = 2;
	/* no capture of the stack: read live, then as late as stale */
	samples(703, 1);
	samples(703, 1)->age_ns = 2 * RECORD_GC_STALE_NS;

	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	assert_int_equal(fake.capture_gc_at[0], FAKE_GC_AT);
	assert_int_equal(weight(rec, "main;collect;[gc]", 0), 3);
	assert_int_equal(weight(rec, "main;collect", 0), 1);
	assert_int_equal(weight(rec, "main;other", 0), 1);
	assert_int_equal(weight(rec, "main;unread", 0), 1);
	assert_int_equal(weight(rec, "main;rootless;[gc]", 0), 1);
	assert_int_equal(weight(rec, "main;rootless", 0), 1);
	assert_int_equal(fake.gc_reads, 1);
	gt = recorder_gil_threads(rec, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		if (gt[i].tid == 701)
			assert_int_equal(gt[i].held, 5);
	done(rec);

	/* the flag placed after the capture started: the program made again with it, once */
	o = opts_for(RECORD_CAPTURE);
	im = image(0, "3.11.2");
	im->gil = true;
	im->gil_holder = 0x701;
	thread(im, 701, "main;late")->tstate = 0x701;
	it = samples(701, 1);
	it->captured = "main;late";
	it->gc = 2;                             /* not read: the program has no flag */
	it->gc_placed = true;
	item(FAKE_SLICE, 0);
	it = samples(701, 1);
	it->captured = "main;late";
	it->gc = 2;
	item(FAKE_SLICE, 0);
	samples(701, 1)->captured = "main;late";
	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	assert_int_equal(fake.capture_starts, 2);
	assert_int_equal(fake.capture_gc_at[0], 0);
	assert_int_equal(fake.capture_gil_at[1], FAKE_GIL_AT);
	assert_int_equal(fake.capture_gc_at[1], FAKE_GC_AT);
	assert_int_equal(weight(rec, "main;late;[gc]", 0), 1);
	assert_int_equal(weight(rec, "main;late", 0), 2);
	done(rec);

	/* stops: read in the stop, exact however old the sample; the GIL held (not or'ed) */
	o = opts_for(RECORD_STOPS);
	im = image(0, "3.8.18");
	im->gil = true;
	im->gc = true;
	im->gil_holder = 0x701;
	thread(im, 701, "main;stopped")->tstate = 0x701;
	for (int i = 0; i < 3; i++) {
		it = item(FAKE_SAMPLE, 701);
		it->stopped = true;
		it->age_ns = 2 * RECORD_STALE_READ_NS;
		it->gc_now = i < 2 ? 2 : 1;
	}
	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	assert_int_equal(weight(rec, "main;stopped;[gc]", 0), 2);
	assert_int_equal(weight(rec, "main;stopped", 0), 1);
	gt = recorder_gil_threads(rec, &n);
	assert_int_equal(n, 1);
	assert_int_equal(gt[0].held, 3);
	done(rec);

	/* no GIL known: the flag alone says; --kernel: the kernel's frames stay at the leaf end;
	 * no flag placed: no [gc] */
	o = opts_for(RECORD_NONBLOCKING);
	o.kernel = true;
	im = image(0, "3.13.0");
	im->gc = true;
	im->gc_collecting = true;
	thread(im, 701, "main;nogil");
	samples(701, 2);
	it = samples(701, 1);
	it->ip = FAKE_IP_K_READ;
	it->kernel[0] = FAKE_IP_K_READ;
	it->kernel[1] = FAKE_IP_K_SYSCALL;
	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	assert_int_equal(weight(rec, "main;nogil;[gc]", 0), 2);
	assert_int_equal(weight(rec, "main;nogil;[gc];entry_SYSCALL_64_[k];ksys_read_[k]", 0), 1);
	done(rec);
	o = opts_for(RECORD_NONBLOCKING);
	im = image(0, "3.12.1");
	im->gc_collecting = true;
	thread(im, 701, "main;unplaced");
	samples(701, 2);
	rec = attach(&o, NULL);
	run(rec);
	assert_int_equal(weight(rec, "main;unplaced", 0), 2);
	done(rec);
}

/* A thread started later: the program finds its state itself (the search spec given with the
 * capture) and captures it from its first sample. */
static void test_capture_search(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct fake_image *im = image(0, "3.12.1");
	struct recorder *rec;

	(void) state;
	im->searchable = true;
	thread(im, 601, "main;spawned");
	samples(601, 1)->tstate = 0x601;
	samples(601, 1);

	rec = attach(&o, NULL);
	run(rec);
	assert_int_not_equal(fake.capture_search_at[0], 0);
	assert_int_equal(weight(rec, "main;spawned", 0), 2);
	assert_int_equal(recorder_stats(rec)->captured, 2);
	assert_int_equal(recorder_stats(rec)->uncaptured, 0);
	done(rec);
}

/* No capture at all (BPF not allowed): one try, the failure kept for the summary, every sample
 * read live. */
static void test_capture_refused(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	const struct record_stats *st;
	struct recorder *rec;

	(void) state;
	fake.capture_errors[0] = -EPERM;
	thread(image(0, "3.12.1"), 701, "main;x")->tstate = 0x701;
	samples(701, 3);

	rec = attach(&o, NULL);
	run(rec);
	st = recorder_stats(rec);
	assert_int_equal(fake.capture_starts, 1);       /* -EPERM: no smaller program either */
	assert_int_equal(st->capture_error, -EPERM);
	assert_int_equal(st->capture_failures, 1);
	assert_int_equal(weight(rec, "main;x", 0), 3);
	assert_int_equal(st->uncaptured, 3);
	assert_int_equal(st->captured, 0);
	done(rec);
}

/* ---- the caller's fallbacks, exact mode by stops ------------------------------------------ */

/* A start refused (ptrace not allowed) leaves nothing behind and may be tried again in
 * another mode. */
static void test_start_fallback(void **state)
{
	struct record_opts o = opts_for(RECORD_STOPS);
	struct recorder *rec;

	(void) state;
	fake.start_errors[0] = -EPERM;
	thread(image(0, "3.10.13"), 801, "main;y");
	samples(801, 2);

	assert_int_equal(recorder_new(&o, NULL, &rec), 0);
	assert_int_equal(recorder_find_python(rec), 0);
	assert_int_equal(recorder_load_symbols(rec, false), 0);
	assert_false(fake.verify);              /* stopped threads: no verify */
	assert_int_equal(recorder_start(rec), -EPERM);
	assert_true(fake.last_opts.exact);
	assert_null(recorder_stats(rec)->sampler);
	recorder_set_mode(rec, RECORD_NONBLOCKING);
	assert_int_equal(recorder_mode(rec), RECORD_NONBLOCKING);
	assert_true(fake.verify);
	assert_int_equal(recorder_start(rec), 0);
	assert_false(fake.last_opts.exact);
	assert_int_equal(fake.sampler_news, 2);
	run(rec);
	assert_int_equal(weight(rec, "main;y", 0), 2);
	done(rec);
}

/* Exact mode by stops: the Python walk is made at the stop (the thread runs on after it); the
 * rest of the sample is finished once the thread is resumed, with its own stack copy. */
static void test_stops(void **state)
{
	struct record_opts o = opts_for(RECORD_STOPS);
	struct fake_item *it;
	struct recorder *rec;

	(void) state;
	o.native = true;
	thread(image(0, "3.12.1"), 901, "main;at_stop");
	for (int i = 0; i < 3; i++) {
		it = samples(901, 1);
		it->stopped = true;
		it->after = i == 2 ? "main;ran_on" : NULL;
		memcpy(it->native, (uint64_t[]) { FAKE_IP_DEFLATE, FAKE_IP_EVAL, FAKE_IP_MAIN,
						  FAKE_IP_START }, 4 * sizeof(uint64_t));
	}
	samples(901, 1);                        /* read late, no stop (its budget spent) */

	rec = attach(&o, NULL);
	assert_true(fake.last_opts.exact);
	assert_int_not_equal(fake.last_opts.stack_user_size, 0);
	run(rec);
	dump(rec);
	assert_int_equal(weight(rec, "main;at_stop;deflate [libz.so.1]", 0), 3);
	assert_int_equal(weight(rec, "main;ran_on", 0), 1);
	assert_int_equal(recorder_stats(rec)->n_late, 1);
	/* the walks at the stops need no check; the one past the budget, of a running thread,
	 * is checked for a torn stack */
	assert_int_equal(fake.live_reads, 4);
	assert_int_equal(fake.verified_reads, 1);
	assert_int_equal(recorder_stats(rec)->unwound, 3);
	assert_int_equal(fake.unwinds_in_stop, 0);      /* after the resume, off its time */
	done(rec);
}

/* ---- native and kernel frames ------------------------------------------------------------- */

/* --native: the eval loop's frame becomes the Python frames, the interpreter's other frames go,
 * other modules' stay (a nameless one by its module and offset); a stack read too long after
 * its sample keeps its native frames with [python]; the modules get their build-ids. */
static void test_native(void **state)
{
	struct record_opts o = opts_for(RECORD_NONBLOCKING);
	static const uint64_t stack[] = { FAKE_IP_DEFLATE, FAKE_IP_CALL, FAKE_IP_EVAL,
					  FAKE_IP_RUNMAIN, FAKE_IP_MAIN, FAKE_IP_START };
	static const uint64_t nameless[] = { FAKE_IP_NONAME, FAKE_IP_EVAL, FAKE_IP_MAIN,
					     FAKE_IP_START };
	const struct record_stats *st;
	struct recorder *rec;
	char text[128];

	(void) state;
	o.native = true;
	thread(image(0, "3.12.1"), 1001, "main;compress_it");
	memcpy(samples(1001, 1)->native, stack, sizeof(stack));
	memcpy(samples(1001, 1)->native, stack, sizeof(stack));
	fake.items[1].age_ns = 2 * RECORD_STALE_READ_NS;
	memcpy(samples(1001, 1)->native, nameless, sizeof(nameless));

	rec = attach(&o, NULL);
	assert_int_equal(fake.sym_warms, 1);
	assert_int_equal(fake.last_opts.stack_user_size, 16);
	assert_int_not_equal(fake.last_opts.regs_user_mask, 0);
	run(rec);
	dump(rec);
	st = recorder_stats(rec);
	assert_int_equal(weight(rec, "main;compress_it;deflate [libz.so.1]", 0), 1);
	assert_int_equal(weight(rec, "[python];deflate [libz.so.1]", 0), 1);
	snprintf(text, sizeof(text), "main;compress_it;libz.so.1+0x%x [libz.so.1]",
		 (unsigned) (FAKE_IP_NONAME & 0xfff));
	assert_int_equal(weight(rec, text, 0), 1);
	assert_int_equal(st->late_unfit, 1);
	assert_int_equal(st->unwound, 3);
	assert_string_equal(profile_build_id(recorder_profile(rec), "libz.so.1"),
			    FAKE_BUILD_ID_LIBZ);
	done(rec);
}

/* A launch whose mappings could not be read when its interpreter was found: they are read
 * again at its samples (SYM_TRIES times), and what was not unwound is counted. */
static void native_maps_later(unsigned failures, uint64_t unwound, uint64_t not_unwound)
{
	static const uint64_t stack[] = { FAKE_IP_DEFLATE, FAKE_IP_EVAL, FAKE_IP_MAIN };
	char *argv[] = { "python3.12", NULL };
	struct record_opts o;
	volatile sig_atomic_t stop = 0;
	struct record_run r = { .stop = &stop };
	const struct record_stats *st;
	struct recorder *rec;

	fake_world_reset();
	o = launch(RECORD_NONBLOCKING, argv);
	o.native = true;
	fake.sym_failures = failures;
	thread(image(0, "3.12.1"), fake.launch_pid, "main;compress_it");
	for (int i = 0; i < 3; i++)
		memcpy(samples(fake.launch_pid, 1)->native, stack, sizeof(stack));

	assert_int_equal(recorder_new(&o, NULL, &rec), 0);
	assert_int_equal(recorder_start(rec), 0);
	assert_int_equal(recorder_run(rec, &r), 0);
	st = recorder_stats(rec);
	assert_int_equal(st->unwound, unwound);
	assert_int_equal(st->not_unwound_maps, not_unwound);
	assert_int_equal(st->not_unwound_stack, 0);
	if (unwound)
		assert_int_equal(weight(rec, "main;compress_it;deflate [libz.so.1]", 0), unwound);
	done(rec);
}

static void test_native_maps_later(void **state)
{
	(void) state;
	native_maps_later(1, 3, 0);     /* read again at the first sample */
	native_maps_later(100, 0, 3);   /* never: counted (the next try is 20 ms later) */
}

/* Without --native, a sample in another module than the interpreter's gets that function as
 * its leaf; --kernel appends the kernel's frames, innermost last. */
static void test_leaf_and_kernel(void **state)
{
	struct record_opts o = opts_for(RECORD_NONBLOCKING);
	struct fake_item *it;
	struct recorder *rec;

	(void) state;
	o.kernel = true;
	thread(image(0, "3.12.1"), 1101, "main;read_file");
	samples(1101, 1)->ip = FAKE_IP_DEFLATE;
	samples(1101, 1)->ip = FAKE_IP_EVAL;    /* in the interpreter: no leaf */
	it = samples(1101, 1);
	it->ip = FAKE_IP_K_READ;
	it->kernel[0] = FAKE_IP_K_READ;
	it->kernel[1] = FAKE_IP_K_SYSCALL;

	rec = attach(&o, NULL);
	assert_true(fake.last_opts.kernel_callchain);
	run(rec);
	dump(rec);
	assert_int_equal(weight(rec, "main;read_file;deflate [libz.so.1]", 0), 1);
	assert_int_equal(weight(rec, "main;read_file", 0), 1);
	assert_int_equal(weight(rec, "main;read_file;entry_SYSCALL_64_[k];ksys_read_[k]", 0), 1);
	assert_int_equal(recorder_stats(rec)->kernel_frames, 2);
	done(rec);
}

/* Without --native, a Python stack read over RECORD_STALE_LEAF_NS after its sample (a launched
 * command's first samples) may be a later one: never paired with the sample's own leaf
 * function, which stays, under [python]. A sample in the interpreter keeps the stack read, as
 * any read after its sample does; so does one read late by less. */
static void test_stale_leaf(void **state)
{
	struct record_opts o = opts_for(RECORD_NONBLOCKING);
	const struct record_stats *st;
	struct recorder *rec;

	(void) state;
	thread(image(0, "3.10.13"), 1201, "main;Foo.run");
	samples(1201, 1)->ip = FAKE_IP_DEFLATE;
	fake.items[0].age_ns = 2 * RECORD_STALE_LEAF_NS;
	samples(1201, 1)->ip = FAKE_IP_EVAL;
	fake.items[1].age_ns = 2 * RECORD_STALE_READ_NS;
	samples(1201, 1)->ip = FAKE_IP_DEFLATE;
	fake.items[2].age_ns = RECORD_STALE_LEAF_NS / 2;

	rec = attach(&o, NULL);
	run(rec);
	dump(rec);
	st = recorder_stats(rec);
	assert_int_equal(weight(rec, "[python];deflate [libz.so.1]", 0), 1);
	assert_int_equal(weight(rec, "main;Foo.run", 0), 1);
	assert_int_equal(weight(rec, "main;Foo.run;deflate [libz.so.1]", 0), 1);
	assert_int_equal(n_samples(rec), 3);
	assert_int_equal(st->late_unfit, 1);
	assert_int_equal(st->no_python, 0);
	done(rec);
}

/* ---- a Python hwspy cannot read ----------------------------------------------------------- */

/* A launched command whose interpreter is unsupported ends the run at once, saying which:
 * found between slices (capture mode looks for it there) before any sample is played, or at
 * the first sample. */
static void unsupported(enum record_mode mode, size_t played)
{
	char *argv[] = { "python3.15", NULL };
	struct record_opts o = launch(mode, argv);
	volatile sig_atomic_t stop = 0;
	struct record_run r = { .stop = &stop };
	struct record_python py;
	struct recorder *rec;

	image(0, "3.15.0")->open_error = -ENOTSUP;
	thread(&fake.images[0], fake.launch_pid, "main");
	for (int i = 0; i < 4; i++) {
		item(FAKE_SLICE, 0);
		samples(fake.launch_pid, 5);
	}

	assert_int_equal(recorder_new(&o, NULL, &rec), 0);
	assert_int_equal(recorder_start(rec), 0);
	assert_int_equal(recorder_run(rec, &r), 0);
	recorder_python(rec, &py);
	assert_false(py.found);
	assert_int_equal(py.fatal, -ENOTSUP);
	assert_string_equal(py.info->version, "3.15.0");
	assert_int_equal(recorder_stats(rec)->sampler->samples, played);
	assert_int_equal(fake.sampler_stops, 1);
	done(rec);
}

static void test_unsupported(void **state)
{
	(void) state;
	unsupported(RECORD_CAPTURE, 0);
	unsupported(RECORD_NONBLOCKING, 1);
}

/* A launch's interpreter that reads as corrupt (its layout read while the loader still maps
 * it) is looked for again, and refused only once it has read so for BAD_LAYOUT_SETTLE_NS:
 * corrupt for corrupt_opens looks, slices pause_ns apart. found: it was. */
static void corrupt(unsigned corrupt_opens, uint64_t pause_ns, unsigned slices, bool found)
{
	char *argv[] = { "python3.13", NULL };
	struct record_opts o;
	volatile sig_atomic_t stop = 0;
	struct record_run r = { .stop = &stop };
	struct record_python py;
	struct recorder *rec;
	uint64_t t0;

	fake_world_reset();
	o = launch(RECORD_CAPTURE, argv);
	image(0, "3.13.1")->corrupt_opens = corrupt_opens;
	thread(&fake.images[0], fake.launch_pid, "main");
	for (unsigned i = 0; i < slices; i++)
		item(FAKE_SLICE, 0)->pause_ns = pause_ns;
	samples(fake.launch_pid, 1);

	assert_int_equal(recorder_new(&o, NULL, &rec), 0);
	assert_int_equal(recorder_start(rec), 0);
	t0 = clock_now_ns();
	assert_int_equal(recorder_run(rec, &r), 0);
	recorder_python(rec, &py);
	assert_int_equal(py.found, found);
	if (found) {
		assert_int_equal(py.fatal, 0);
		assert_string_equal(py.info->version, "3.13.1");
	} else {
		assert_int_equal(py.fatal, -EBADMSG);
		assert_true(clock_now_ns() - t0 >= BAD_LAYOUT_SETTLE_NS);
	}
	done(rec);
}

static void test_corrupt_settles(void **state)
{
	(void) state;
	corrupt(2, DETECT_INTERVAL_NS + 1000000, 4, true);          /* for a moment */
	corrupt(100, DETECT_INTERVAL_NS + 1000000, 100, false);   /* for good */
}

/* recorder_free copes with recorders never started, and with NULL. */
static void test_free_unstarted(void **state)
{
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct recorder *rec;

	(void) state;
	recorder_free(NULL);
	image(0, "3.12.1");
	assert_int_equal(recorder_new(&o, NULL, &rec), 0);
	assert_int_equal(recorder_find_python(rec), 0);
	assert_int_equal(recorder_find_python(rec), 0);         /* again: nothing leaks */
	assert_int_equal(fake.pf_live, 1);
	assert_int_equal(fake.mem_opens, 1);
	assert_null(recorder_stats(rec)->sampler);
	assert_int_equal(recorder_stats(rec)->elapsed_ns, 0);
	recorder_stop(rec);
	done(rec);
}

/* record/'s mode policy (fallback.c): each choice told as a note */
struct noted {
	enum record_note notes[8];
	int errs[8];
	size_t n;
};

static void on_note(void *ctx, enum record_note n, int err, const char *name)
{
	struct noted *c = ctx;

	(void) name;
	if (c->n < 8) {
		c->notes[c->n] = n;
		c->errs[c->n++] = err;
	}
}

static void test_policy(void **state)
{
	struct event_spec ev[2] = { events[0], events[1] };
	struct record_opts o = opts_for(RECORD_CAPTURE);
	struct noted c = { .n = 0 };
	struct record_fallback f = { .auto_mode = true, .note_fn = on_note, .note_ctx = &c };
	struct recorder *rec;

	(void) state;
	image(0, "3.11.7");
	o.events = ev;
	o.n_events = 2;
	assert_int_equal(recorder_new(&o, NULL, &rec), 0);
	/* BPF allowed: the capture, nothing said */
	assert_int_equal(recorder_choose_mode(rec, &f), RECORD_CAPTURE);
	assert_int_equal(c.n, 0);
	/* refused: stops, said with the probe's error; the calling process: never stopped */
	fake.capture_probe = -EPERM;
	assert_int_equal(recorder_choose_mode(rec, &f), RECORD_STOPS);
	assert_int_equal(c.notes[0], RECORD_NOTE_NO_CAPTURE);
	assert_int_equal(c.errs[0], -EPERM);
	f.self = true;
	assert_int_equal(recorder_choose_mode(rec, &f), RECORD_NONBLOCKING);
	assert_int_equal(c.notes[1], RECORD_NOTE_NO_CAPTURE_ASLEEP);
	/* ... with no signal mode either (a SIGTRAP handler of the host's), said */
	assert_int_equal(c.notes[2], RECORD_NOTE_NO_SIGNAL);
	assert_int_equal(c.errs[2], -EBUSY);
	/* the calling process where the signal mode works: exact by it, said */
	fake.signal_probe = 1;
	assert_int_equal(recorder_choose_mode(rec, &f), RECORD_SIGNAL);
	assert_int_equal(c.notes[3], RECORD_NOTE_SIGNAL);
	assert_int_equal(c.errs[3], -EPERM);
	fake.signal_probe = 0;
	/* asked for, no choosing */
	f = (struct record_fallback) { .mode = RECORD_STOPS, .note_fn = on_note, .note_ctx = &c };
	assert_int_equal(recorder_choose_mode(rec, &f), RECORD_STOPS);
	assert_int_equal(c.n, 4);

	/* stops refused: nonblocking; kernel mode refused: user space only, every event */
	fake.start_errors[0] = -EPERM;
	fake.start_errors[1] = -EACCES;
	assert_int_equal(recorder_start_fallback(rec, &f, ev), 0);
	assert_int_equal(fake.sampler_news, 3);
	assert_int_equal(recorder_mode(rec), RECORD_NONBLOCKING);
	assert_int_equal(c.n, 6);
	assert_int_equal(c.notes[4], RECORD_NOTE_STOPS_REFUSED);
	assert_int_equal(c.notes[5], RECORD_NOTE_USER_ONLY);
	assert_true(ev[0].attr.exclude_kernel && ev[1].attr.exclude_kernel);
	recorder_free(rec);
	assert_int_equal(fake.sampler_frees, 1);       /* the two refused made none */
	fake_world_reset();
}

static int reset(void **state)
{
	(void) state;
	fake_world_reset();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_stream_to_profile, reset),
		cmocka_unit_test_setup(test_sink, reset),
		cmocka_unit_test_setup(test_exec_launched, reset),
		cmocka_unit_test_setup(test_exec_capture, reset),
		cmocka_unit_test_setup(test_truncation, reset),
		cmocka_unit_test_setup(test_capture_paths, reset),
		cmocka_unit_test_setup(test_capture_memo_ids, reset),
		cmocka_unit_test_setup(test_capture_search, reset),
		cmocka_unit_test_setup(test_gil, reset),
		cmocka_unit_test_setup(test_gc, reset),
		cmocka_unit_test_setup(test_capture_refused, reset),
		cmocka_unit_test_setup(test_start_fallback, reset),
		cmocka_unit_test_setup(test_stops, reset),
		cmocka_unit_test_setup(test_native, reset),
		cmocka_unit_test_setup(test_native_maps_later, reset),
		cmocka_unit_test_setup(test_leaf_and_kernel, reset),
		cmocka_unit_test_setup(test_stale_leaf, reset),
		cmocka_unit_test_setup(test_unsupported, reset),
		cmocka_unit_test_setup(test_corrupt_settles, reset),
		cmocka_unit_test_setup(test_names_between_slices, reset),
		cmocka_unit_test_setup(test_free_unstarted, reset),
		cmocka_unit_test_setup(test_policy, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
