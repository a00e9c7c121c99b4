/*
 * profile.c: hwspy.profile's engine (module.h): the type _hwspy.Recorder, one recording of the
 * calling process (hwspy_record_opts.self) by libhwspy's recorder, and its profile as data.
 *
 * The recorder runs on a thread of its own that this file starts (a pthread, no Python thread
 * state), and every call on the recorder is made from that thread: the library leaves the
 * threads that call a recorder out of its samples, so no thread of the user's may call it.
 * start() waits (the GIL released) until the events are open on every thread, so the block's
 * first work is sampled; stop() sets the run's stop flag and waits (the GIL released) until the
 * thread has finished every sample and ended. After the stop, the profile is read from the
 * Python thread (the recorder's thread is gone: one thread at a time, as hwspy.h asks).
 *
 * A Recorder records once: start() after stop() is a RuntimeError (the wrapper makes a new
 * one). Failures are Python exceptions with the library's words (an unknown event or a bad
 * argument ValueError; an event that exists but cannot be opened here, no PMU or not supported,
 * module.h's UnavailableEventError; not allowed PermissionError); nothing here crashes the
 * interpreter (a recorder dropped while it runs is stopped and joined by its dealloc; in a
 * child forked while one ran, its thread does not exist: stop() ends nothing, and says so).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/hwspy/module.h"
#include "include/hwspy.h"

#define NOTES_MAX 8
#define WHY_SIZE 1024
#define LOG_BYTES (32u << 20)           /* speedscope's time-ordered log, as the CLI keeps */

enum rec_state { ST_IDLE, ST_STARTING, ST_RUNNING, ST_STOPPING, ST_DONE };

struct rec_obj {
	PyObject_HEAD
	/* options */
	char event[256];                /* "" the default (the CLI's: cycles, else cpu-clock) */
	uint64_t freq, period;
	bool rate_given, native, threads, function, speedscope;
	enum hwspy_record_mode mode;
	/* state: changed under the GIL by the Python side; the thread's part under mu */
	enum rec_state state;
	pthread_t thread;
	pid_t owner_pid;                /* the process that started the thread */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool start_done;
	volatile sig_atomic_t stop;
	/* results, written by the recorder's thread before start_done / its end */
	pid_t tid;                      /* the recorder's thread */
	int start_r, run_r;
	char why[WHY_SIZE];
	bool unavailable;               /* start_r: the event exists but cannot be opened here */
	bool default_cpu_clock, user_only;
	char notes[NOTES_MAX][256];
	size_t n_notes;
	struct hwspy_events *ev;
	struct hwspy_recorder *rec;
};

/* module.c's mapping, and -EOPNOTSUPP (the event exists, but not here) UnavailableEventError */
static PyObject *raise_why(int r, const char *why)
{
	if (r != -EOPNOTSUPP)
		return hwspy_py_raise_why(r, why);
	PyErr_SetString(hwspy_py_unavailable_error, why);
	return NULL;
}

/* ---- the recorder's thread ---------------------------------------------------------------- */

static void note(void *ctx, enum hwspy_note n, int err, const char *detail)
{
	struct rec_obj *o = ctx;
	char *s;

	if (n == HWSPY_NOTE_USER_ONLY)
		o->user_only = true;
	if (o->n_notes >= NOTES_MAX)
		return;
	s = o->notes[o->n_notes++];
	switch (n) {
	case HWSPY_NOTE_USER_ONLY:
		snprintf(s, 256, "kernel mode may not be sampled here (%s): user space only",
			 detail && *detail ? detail : "kernel.perf_event_paranoid");
		break;
	case HWSPY_NOTE_NO_CAPTURE: case HWSPY_NOTE_NO_CAPTURE_ASLEEP:
		snprintf(s, 256, "no BPF capture (%s): Python stacks read just after their "
			 "samples (not exact)", detail && *detail ? detail : "not allowed");
		break;
	case HWSPY_NOTE_CAPTURE_FAILED:
		snprintf(s, 256, "the BPF capture did not start (%s): Python stacks read just "
			 "after their samples (not exact)", err ? strerror(-err) : detail);
		break;
	case HWSPY_NOTE_SIGNAL:
		snprintf(s, 256, "no BPF capture (%s): exact by a signal at each sample instead",
			 detail && *detail ? detail : "not allowed");
		break;
	case HWSPY_NOTE_TRACEPOINT:
		snprintf(s, 256, "'%s' is a tracepoint: Python stacks read just after their "
			 "samples (not exact)", detail);
		break;
	default:
		snprintf(s, 256, "note %d%s%s%s%s", (int) n, *detail ? ": " : "", detail,
			 err ? ": " : "", err ? strerror(-err) : "");
		break;
	}
}

/* "'-e NAME'" of the library's clause (the command line's words) as event='NAME' */
static void python_words(const char *clause, char *buf, size_t size)
{
	size_t k = 0;

	for (const char *c = clause; *c && k + 1 < size; ) {
		if (!strncmp(c, "'-e ", 4)) {
			const char *end = strchr(c + 4, '\'');

			if (end) {
				int n = snprintf(buf + k, size - k, "event='%.*s'", (int) (end - c - 4),
						 c + 4);

				k = n < 0 ? k : (size_t) n >= size - k ? size - 1 : k + (size_t) n;
				c = end + 1;
				continue;
			}
		}
		buf[k++] = *c++;
	}
	buf[k] = '\0';
}

static int unknown_event(struct rec_obj *o, int r)
{
	const char *near[3];
	size_t k = hwspy_events_suggest(o->event, near, 3);
	int n = snprintf(o->why, WHY_SIZE, "%s", hwspy_reason()[0] ? hwspy_reason() :
			 "unknown event");

	for (size_t i = 0; i < k && n > 0 && (size_t) n < WHY_SIZE; i++)
		n += snprintf(o->why + n, WHY_SIZE - (size_t) n, "%s'%s'",
			      i ? ", " : ": did you mean ", near[i]);
	if (n > 0 && (size_t) n < WHY_SIZE)
		snprintf(o->why + n, WHY_SIZE - (size_t) n, k ? "? hwspy.events() lists this "
			 "machine's events" : " (hwspy.events() lists this machine's events)");
	return r;
}

/* hwspy_record_check()'s refusal in the package's words */
static int check_failed(struct rec_obj *o, const struct hwspy_record_check *c, int r)
{
	const char *name = c->event < hwspy_events_count(o->ev) ?
			   hwspy_events_name(o->ev, c->event) : o->event;
	char alt[256] = "";
	const char *clause;

	switch (c->fail) {
	case HWSPY_CHECK_EVENT_NO_PMU:
		clause = hwspy_event_no_pmu(name, NULL);
		if (clause)
			python_words(clause, alt, sizeof(alt));
		snprintf(o->why, WHY_SIZE, "event '%s' cannot be sampled on this machine: it "
			 "has no hardware PMU (a virtual machine?)%s%s; hwspy.events() lists "
			 "the events that are", name, *alt ? ": " : "", alt);
		o->unavailable = true;
		return -ENOENT;
	case HWSPY_CHECK_EVENT_UNSUPPORTED:
		snprintf(o->why, WHY_SIZE, "event '%s' is not supported on this machine; "
			 "hwspy.events() lists the events that are", name);
		o->unavailable = true;
		return -ENOENT;
	case HWSPY_CHECK_EVENT_FAILED:
		snprintf(o->why, WHY_SIZE, "event '%s' cannot be opened: %s", name,
			 strerror(c->err < 0 ? -c->err : EIO));
		o->unavailable = c->err == -ENOENT || c->err == -EOPNOTSUPP || c->err == -ENODEV;
		return c->err < 0 ? c->err : -EIO;
	case HWSPY_CHECK_KERNEL_REFUSED: {
		char sysctl[64];

		snprintf(o->why, WHY_SIZE, "event '%s' happens in the kernel alone, and kernel "
			 "samples are not allowed here (%s; root or CAP_PERFMON may): sample a "
			 "user-space event such as 'cpu-clock'", name,
			 hwspy_paranoid_words(sysctl, sizeof(sysctl)));
		return -EACCES;
	}
	case HWSPY_CHECK_USER_KERNEL_ONLY:
		snprintf(o->why, WHY_SIZE, "event '%s' happens in the kernel alone: as ':u' it "
			 "samples nothing", name);
		return -EINVAL;
	case HWSPY_CHECK_COUNT_RATE:
		snprintf(o->why, WHY_SIZE, "event '%s' counts occurrences: it is sampled every "
			 "%llu of them (give period=N), not at a rate", name,
			 (unsigned long long) c->period);
		return -EINVAL;
	default:
		snprintf(o->why, WHY_SIZE, "%s", hwspy_reason()[0] ? hwspy_reason() :
			 "cannot record with these options");
		return r;
	}
}

static int recorder_begin(struct rec_obj *o)
{
	struct hwspy_record_opts ro;
	struct hwspy_record_check c;
	int r;

	o->tid = gettid();
	if ((r = hwspy_events_new(&o->ev)) < 0) {
		snprintf(o->why, WHY_SIZE, "out of memory");
		return r;
	}
	if (o->event[0] && (r = hwspy_events_add_list(o->ev, o->event)) < 0) {
		if (r == -ENOENT)
			return unknown_event(o, r);
		snprintf(o->why, WHY_SIZE, "%s", hwspy_reason()[0] ? hwspy_reason() :
			 "malformed event");
		return r == -E2BIG ? -EINVAL : r;
	}
	hwspy_record_opts_init(&ro);
	ro.self = true;
	ro.freq = o->freq;
	ro.period = o->period;
	if (o->period)
		ro.freq = 0;
	ro.mode = o->mode;
	ro.native = o->native;
	ro.threads = o->threads;
	ro.function = o->function;
	ro.log_bytes = o->speedscope ? LOG_BYTES : 0;
	ro.note_fn = note;
	ro.note_ctx = o;
	if ((r = hwspy_record_check(&ro, o->ev, o->rate_given, &c)) < 0)
		return check_failed(o, &c, r);
	o->default_cpu_clock = c.default_cpu_clock;
	if ((r = hwspy_recorder_new(&ro, NULL, NULL, &o->rec)) < 0) {
		snprintf(o->why, WHY_SIZE, "%s", hwspy_reason());
		return r;
	}
	if ((r = hwspy_recorder_start(o->rec)) < 0) {
		char sysctl[64];

		if (r == -EACCES || r == -EPERM)
			snprintf(o->why, WHY_SIZE, "%s: this process may not sample itself here "
				 "(%s; root or CAP_PERFMON may)", hwspy_reason(),
				 hwspy_paranoid_words(sysctl, sizeof(sysctl)));
		else
			snprintf(o->why, WHY_SIZE, "%s", hwspy_reason()[0] ? hwspy_reason() :
				 "cannot start sampling");
		/* the event known (parsed) yet not opened here */
		o->unavailable = r == -ENOENT || r == -EOPNOTSUPP || r == -ENODEV;
	}
	return r;
}

static void *recorder_thread(void *arg)
{
	struct rec_obj *o = arg;
	struct hwspy_run run = { .stop = &o->stop };
	sigset_t all;
	int r;

	/* the host's signals go to its own threads, never to this one */
	(void) sigfillset(&all);
	(void) pthread_sigmask(SIG_BLOCK, &all, NULL);
	r = recorder_begin(o);
	pthread_mutex_lock(&o->mu);
	o->start_r = r;
	o->start_done = true;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	if (r < 0)
		return NULL;
	r = hwspy_recorder_run(o->rec, &run);
	if (r < 0)
		snprintf(o->why, WHY_SIZE, "%s", hwspy_reason());
	hwspy_recorder_note_run(o->rec, NULL);
	o->run_r = r;
	return NULL;
}

/* ---- the type ----------------------------------------------------------------------------- */

static const char *const mode_names[] = { "auto", "capture", "stops", "nonblocking", "signal" };

static PyObject *rec_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "event", "rate", "period", "native", "threads", "function",
				  "mode", "speedscope", NULL };
	const char *event = NULL, *mode = "auto";
	PyObject *rate = Py_None;
	unsigned long long period = 0;
	int native = 0, threads = 0, function = 0, speedscope = 0;
	struct rec_obj *o;
	size_t m;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|zOKpppsp", kwlist, &event, &rate, &period,
					 &native, &threads, &function, &mode, &speedscope))
		return NULL;
	for (m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
		if (!strcmp(mode, mode_names[m]))
			break;
	if (m == sizeof(mode_names) / sizeof(mode_names[0]) || m == HWSPY_RECORD_STOPS)
		return PyErr_Format(PyExc_ValueError, "mode '%s': give 'auto', 'capture', "
				    "'signal' or 'nonblocking' (the calling process cannot be stopped)", mode);
	if (event && strlen(event) >= sizeof(o->event))
		return PyErr_Format(PyExc_ValueError, "event list too long");
	o = (struct rec_obj *) PyType_GenericAlloc(type, 0);
	if (!o)
		return NULL;
	o->state = ST_IDLE;
	if (event)
		snprintf(o->event, sizeof(o->event), "%s", event);
	o->freq = 100;
	if (rate != Py_None) {
		double hz = PyFloat_AsDouble(rate);

		if (hz == -1.0 && PyErr_Occurred()) {
			Py_DECREF(o);
			return NULL;
		}
		if (!(hz >= 1.0 && hz <= 100000.0)) {
			Py_DECREF(o);
			return PyErr_Format(PyExc_ValueError, "rate %R: give samples a second, 1 to "
					    "100000", rate);
		}
		o->freq = (uint64_t) hz;
		o->rate_given = true;
	}
	if (period && o->rate_given) {
		Py_DECREF(o);
		return PyErr_Format(PyExc_ValueError, "give a rate or a period, not both");
	}
	o->period = period;
	o->native = native;
	o->threads = threads;
	o->function = function;
	o->speedscope = speedscope;
	o->mode = (enum hwspy_record_mode) m;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	return (PyObject *) o;
}

/* Ends the thread (stop set, joined, GIL released by the caller) */
static void end_thread(struct rec_obj *o)
{
	o->stop = 1;
	if (o->owner_pid == getpid()) {
		/* at once, not at the recorder's next ring read */
		hwspy_recorder_wake(o->rec);
		(void) pthread_join(o->thread, NULL);
	}
}

static void rec_dealloc(PyObject *self)
{
	struct rec_obj *o = (struct rec_obj *) self;
	PyTypeObject *type = Py_TYPE(self);
	freefunc tp_free = (freefunc) PyType_GetSlot(type, Py_tp_free);

	if (o->state == ST_RUNNING) {
		Py_BEGIN_ALLOW_THREADS
		end_thread(o);
		Py_END_ALLOW_THREADS
	}
	if (o->owner_pid == getpid())
		hwspy_recorder_free(o->rec);    /* a forked child's is its parent's */
	hwspy_events_free(o->ev);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	tp_free(self);
	Py_DECREF(type);
}

static PyObject *rec_start(PyObject *self, PyObject *unused)
{
	struct rec_obj *o = (struct rec_obj *) self;
	int r;

	(void) unused;
	if (o->state != ST_IDLE)
		return PyErr_Format(PyExc_RuntimeError, o->state == ST_DONE ?
				    "this recording is over: a recorder records once" :
				    "this recorder is running already");
	o->state = ST_STARTING;
	o->start_done = false;
	o->unavailable = false;
	o->stop = 0;
	o->owner_pid = getpid();
	Py_BEGIN_ALLOW_THREADS
	r = pthread_create(&o->thread, NULL, recorder_thread, o);
	if (r == 0) {
		pthread_mutex_lock(&o->mu);
		while (!o->start_done)
			pthread_cond_wait(&o->cv, &o->mu);
		pthread_mutex_unlock(&o->mu);
		r = o->start_r;
		if (r < 0)
			(void) pthread_join(o->thread, NULL);
	} else {
		snprintf(o->why, WHY_SIZE, "cannot start the recorder's thread");
		r = -r;
	}
	Py_END_ALLOW_THREADS
	if (r < 0) {
		/* as new: a start may be tried again */
		hwspy_recorder_free(o->rec);
		o->rec = NULL;
		hwspy_events_free(o->ev);
		o->ev = NULL;
		o->n_notes = 0;
		o->state = ST_IDLE;
		if (o->unavailable) {
			PyErr_SetString(hwspy_py_unavailable_error, o->why);
			return NULL;
		}
		return raise_why(r, o->why);
	}
	o->state = ST_RUNNING;
	Py_RETURN_NONE;
}

static PyObject *rec_stop(PyObject *self, PyObject *unused)
{
	struct rec_obj *o = (struct rec_obj *) self;

	(void) unused;
	if (o->state == ST_DONE || o->state == ST_IDLE)
		Py_RETURN_NONE;
	if (o->state != ST_RUNNING)
		return PyErr_Format(PyExc_RuntimeError, "this recorder is starting or stopping "
				    "in another thread");
	if (o->owner_pid != getpid()) {
		o->state = ST_DONE;
		o->run_r = -ECHILD;
		return PyErr_Format(PyExc_RuntimeError, "this recording runs in process %d, not "
				    "in this one (forked): it has nothing here",
				    (int) o->owner_pid);
	}
	o->state = ST_STOPPING;
	Py_BEGIN_ALLOW_THREADS
	end_thread(o);
	Py_END_ALLOW_THREADS
	o->state = ST_DONE;
	if (o->run_r < 0)
		return raise_why(o->run_r, o->why);
	Py_RETURN_NONE;
}

/* The profile, once the recording is over (else NULL and RuntimeError) */
static struct hwspy_profile *done_profile(struct rec_obj *o)
{
	if (o->state != ST_DONE || !o->rec || o->owner_pid != getpid()) {
		PyErr_SetString(PyExc_RuntimeError, o->state == ST_DONE ?
				 "nothing was recorded" : "the recording is not over: stop it first");
		return NULL;
	}
	return hwspy_recorder_profile(o->rec);
}

static PyObject *rec_folded(PyObject *self, PyObject *unused)
{
	struct hwspy_profile *p = done_profile((struct rec_obj *) self);
	char *text = NULL;
	size_t len = 0;
	PyObject *s;
	FILE *f;
	int r;

	(void) unused;
	if (!p)
		return NULL;
	f = open_memstream(&text, &len);
	if (!f)
		return PyErr_NoMemory();
	r = hwspy_profile_write(p, HWSPY_FORMAT_FOLDED, NULL, f);
	if (fclose(f) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0) {
		free(text);
		return raise_why(r, "cannot write the folded profile");
	}
	s = PyUnicode_DecodeUTF8(text, (Py_ssize_t) len, "replace");
	free(text);
	return s;
}

static PyObject *rec_write(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "format", "title", NULL };
	struct hwspy_profile *p = done_profile((struct rec_obj *) self);
	struct hwspy_write_opts wo = { 0 };
	PyObject *path = NULL;
	const char *format = NULL, *title = NULL;
	enum hwspy_format f;
	int r;

	if (!p)
		return NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|zz", kwlist, PyUnicode_FSConverter, &path,
					 &format, &title))
		return NULL;
	if (format && hwspy_format_parse(format, &f) < 0) {
		Py_DECREF(path);
		return PyErr_Format(PyExc_ValueError, "format '%s': give 'folded', 'speedscope', "
				    "'svg' or 'pprof'", format);
	}
	if (!format)
		f = hwspy_format_of_path(PyBytes_AsString(path));
	wo.title = title;
	Py_BEGIN_ALLOW_THREADS
	r = hwspy_profile_write_file(p, f, &wo, PyBytes_AsString(path));
	Py_END_ALLOW_THREADS
	if (r < 0) {
		PyObject *name = PyUnicode_DecodeFSDefault(PyBytes_AsString(path));

		Py_DECREF(path);
		if (!name)
			return NULL;
		errno = -r;
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, name);
		Py_DECREF(name);
		return NULL;
	}
	Py_DECREF(path);
	Py_RETURN_NONE;
}

static const char *kind_name(enum hwspy_frame_kind k)
{
	static const char *const names[] = {
		[HWSPY_FRAME_PYTHON] = "python", [HWSPY_FRAME_NATIVE] = "native",
		[HWSPY_FRAME_KERNEL] = "kernel", [HWSPY_FRAME_THREAD] = "thread",
		[HWSPY_FRAME_SPECIAL] = "special", [HWSPY_FRAME_WAIT] = "wait",
	};

	return (size_t) k < sizeof(names) / sizeof(names[0]) && names[k] ? names[k] : "special";
}

/* [(kind, name, file, line, module, samples, weight)] for each frame some sample had at its
 * leaf (self), weight in column 1 (event 0's unit); with python_leaf, the leaf is a stack's
 * innermost Python frame where it has one (the native code it called is its own time) */
static PyObject *rec_leaves(PyObject *self, PyObject *args)
{
	struct hwspy_profile *p = done_profile((struct rec_obj *) self);
	size_t n_frames, n_stacks, col;
	uint64_t (*acc)[2];
	uint8_t *python;
	PyObject *list;
	int python_leaf = 0;

	if (!p || !PyArg_ParseTuple(args, "|p", &python_leaf))
		return NULL;
	n_frames = hwspy_profile_n_frames(p);
	n_stacks = hwspy_profile_n_stacks(p);
	col = hwspy_profile_n_events(p) ? 1 : 0;
	acc = calloc(n_frames ? n_frames : 1, sizeof(*acc));
	python = calloc(n_frames ? n_frames : 1, 1);
	if (!acc || !python) {
		free(acc);
		free(python);
		return PyErr_NoMemory();
	}
	for (size_t id = 0; python_leaf && id < n_frames; id++) {
		struct hwspy_frame fr;

		python[id] = hwspy_profile_frame(p, (uint32_t) id, &fr) == 0 &&
			     fr.kind == HWSPY_FRAME_PYTHON;
	}
	for (size_t i = 0; i < n_stacks; i++) {
		const uint32_t *frames;
		size_t depth, leaf;
		pid_t tid;
		const uint64_t *v = hwspy_profile_stack(p, i, &tid, &frames, &depth);

		if (!v || !depth)
			continue;
		leaf = depth - 1;
		for (size_t k = depth; python_leaf && k-- > 0; )
			if (frames[k] < n_frames && python[frames[k]]) {
				leaf = k;
				break;
			}
		if (frames[leaf] >= n_frames)
			continue;
		acc[frames[leaf]][0] += v[0];
		acc[frames[leaf]][1] += v[col];
	}
	free(python);
	list = PyList_New(0);
	for (size_t id = 0; list && id < n_frames; id++) {
		struct hwspy_frame fr;
		PyObject *t;

		if (!acc[id][0] || hwspy_profile_frame(p, (uint32_t) id, &fr) < 0)
			continue;
		t = Py_BuildValue("(sszizKK)", kind_name(fr.kind), fr.name, fr.file, fr.line,
				  fr.module, (unsigned long long) acc[id][0],
				  (unsigned long long) acc[id][1]);
		if (!t || PyList_Append(list, t) < 0)
			Py_CLEAR(list);
		Py_XDECREF(t);
	}
	free(acc);
	return list;
}

/* {tid: name or None} of the threads the profile's samples came from */
static PyObject *rec_threads(PyObject *self, PyObject *unused)
{
	struct hwspy_profile *p = done_profile((struct rec_obj *) self);
	PyObject *d;

	(void) unused;
	if (!p)
		return NULL;
	d = PyDict_New();
	for (size_t i = 0; d && i < hwspy_profile_n_stacks(p); i++) {
		pid_t tid = 0;
		const uint32_t *frames;
		size_t depth;
		const char *name;
		PyObject *k, *v;

		if (!hwspy_profile_stack(p, i, &tid, &frames, &depth))
			continue;
		name = hwspy_profile_thread_name(p, tid);
		k = PyLong_FromLong((long) tid);
		v = name ? PyUnicode_DecodeUTF8(name, (Py_ssize_t) strlen(name), "replace") :
		    (Py_INCREF(Py_None), Py_None);
		if (!k || !v || PyDict_SetItem(d, k, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	return d;
}

static const char *mode_now(struct rec_obj *o)
{
	if (!o->rec || o->owner_pid != getpid())
		return NULL;
	if (hwspy_live_mode(o->rec) == HWSPY_LIVE_CAPTURE_FAILED)
		return "nonblocking";
	switch (hwspy_recorder_mode(o->rec)) {
	case HWSPY_RECORD_CAPTURE: return "capture";
	case HWSPY_RECORD_STOPS: return "stops";
	case HWSPY_RECORD_NONBLOCKING: return "nonblocking";
	case HWSPY_RECORD_SIGNAL: return "signal";
	default: return "auto";
	}
}

static int set_u64(PyObject *d, const char *k, uint64_t v)
{
	PyObject *x = PyLong_FromUnsignedLongLong(v);
	int r = x ? PyDict_SetItemString(d, k, x) : -1;

	Py_XDECREF(x);
	return r;
}

/* What the recording says of itself: its numbers, mode and notes (after the start: its mode
 * and notes; after the stop, the numbers too) */
static PyObject *rec_info(PyObject *self, PyObject *unused)
{
	struct rec_obj *o = (struct rec_obj *) self;
	struct hwspy_record_stats st = { 0 };
	const char *mode;
	PyObject *d, *notes;
	struct hwspy_profile *p = NULL;

	(void) unused;
	if (o->state == ST_STARTING || o->state == ST_STOPPING)
		return PyErr_Format(PyExc_RuntimeError, "the recorder is starting or stopping");
	d = PyDict_New();
	if (!d)
		return NULL;
	mode = mode_now(o);
	if (o->state == ST_DONE && o->rec && o->owner_pid == getpid()) {
		hwspy_recorder_stats(o->rec, &st);
		p = hwspy_recorder_profile(o->rec);
	}
	notes = PyList_New(0);
	for (size_t i = 0; notes && i < o->n_notes; i++) {
		PyObject *s = PyUnicode_DecodeUTF8(o->notes[i], (Py_ssize_t) strlen(o->notes[i]),
						   "replace");

		if (!s || PyList_Append(notes, s) < 0)
			Py_CLEAR(notes);
		Py_XDECREF(s);
	}
	if (!notes || PyDict_SetItemString(d, "notes", notes) < 0 ||
	    set_u64(d, "samples", st.samples) < 0 || set_u64(d, "lost", st.lost) < 0 ||
	    set_u64(d, "dropped", st.dropped_torn + st.dropped_unreadable + st.late_unfit) < 0 ||
	    set_u64(d, "exact", st.captured) < 0 || set_u64(d, "late", st.n_late) < 0 ||
	    set_u64(d, "late_median_us", st.late_median_us) < 0 ||
	    set_u64(d, "late_max_us", st.late_max_us) < 0 ||
	    set_u64(d, "excluded", st.excluded) < 0 ||
	    /* signal mode: the handler's work in the profiled threads' own time */
	    set_u64(d, "signals", st.signal_seen) < 0 ||
	    set_u64(d, "signal_records", st.signal_taken) < 0 ||
	    set_u64(d, "signal_dropped", st.signal_dropped) < 0 ||
	    set_u64(d, "signal_unpaired", st.signal_unpaired) < 0 ||
	    set_u64(d, "handler_ns", st.signal_ns_total) < 0 ||
	    set_u64(d, "handler_max_ns", st.signal_ns_max) < 0 ||
	    set_u64(d, "threads", st.threads_seen) < 0 ||
	    set_u64(d, "elapsed_ns", st.elapsed_ns) < 0 ||
	    set_u64(d, "recorder_tid", (uint64_t) o->tid) < 0 ||
	    PyDict_SetItemString(d, "user_only", o->user_only ? Py_True : Py_False) < 0 ||
	    PyDict_SetItemString(d, "default_event", o->default_cpu_clock ? Py_True : Py_False)
	    < 0) {
		Py_XDECREF(notes);
		Py_DECREF(d);
		return NULL;
	}
	Py_DECREF(notes);
	if (mode) {
		PyObject *m = PyUnicode_FromString(mode);

		if (!m || PyDict_SetItemString(d, "mode", m) < 0) {
			Py_XDECREF(m);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(m);
	}
	if (o->ev && hwspy_events_count(o->ev)) {
		const char *e = p && hwspy_profile_n_events(p) ? hwspy_profile_event(p, 0) :
				hwspy_events_name(o->ev, 0);
		PyObject *m = PyUnicode_FromString(e);

		if (!m || PyDict_SetItemString(d, "event", m) < 0) {
			Py_XDECREF(m);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(m);
	}
	if (p && (set_u64(d, "total", hwspy_profile_total(p, hwspy_profile_n_events(p) ? 1 : 0))
		  < 0)) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyMethodDef rec_methods[] = {
	{ "start", rec_start, METH_NOARGS, "Starts sampling this process (every thread)." },
	{ "stop", rec_stop, METH_NOARGS, "Stops sampling; every sample is in when it returns." },
	{ "folded", rec_folded, METH_NOARGS, "The profile as folded text." },
	{ "write", (PyCFunction) (void (*)(void)) rec_write, METH_VARARGS | METH_KEYWORDS,
	  "write(path, format=None, title=None): the profile into a file (format from its name)." },
	{ "leaves", rec_leaves, METH_VARARGS, "leaves(python_leaf=False): self weight per frame: "
	  "[(kind, name, file, line, module, samples, weight)]." },
	{ "threads", rec_threads, METH_NOARGS, "{tid: name} of the sampled threads." },
	{ "info", rec_info, METH_NOARGS, "The recording's mode, notes and numbers, as a dict." },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot rec_slots[] = {
	{ Py_tp_new, (void *) rec_new },
	{ Py_tp_dealloc, (void *) rec_dealloc },
	{ Py_tp_methods, rec_methods },
	{ Py_tp_doc, (void *) "Recorder(event=None, rate=None, period=0, native=False, "
	  "threads=False, function=False, mode='auto', speedscope=False): one recording of this "
	  "process by libhwspy (hwspy.Profiler is the API)." },
	{ 0, NULL },
};

static PyType_Spec rec_spec = {
	.name = "hwspy._hwspy.Recorder",
	.basicsize = sizeof(struct rec_obj),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = rec_slots,
};

int hwspy_py_profile_init(PyObject *m)
{
	PyObject *t = PyType_FromSpec(&rec_spec);

	if (!t)
		return -1;
	if (PyModule_AddObject(m, "Recorder", t) < 0) {
		Py_DECREF(t);
		return -1;
	}
	return 0;
}
