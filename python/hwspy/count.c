/*
 * count.c: hwspy.count's engine side (module.h), over include/hwspy.h's counting:
 *
 * - Session(events): the calling process counted once (hwspy_count_start(c, 0, NULL), user
 *   space only where kernel mode is refused), kept open: the package keeps one per event set
 *   and process, so a `with` block opens nothing; it reads marks (hwspy_count_mark_read(): one
 *   read per group per thread, none for a thread that has not run since) at its start and
 *   end. mark() (a reading now), zero() (an empty
 *   sum), add(sum, a, b) (sum += b - a), result(sum) (the sum's values, threads, findings as
 *   one dict), info() (the events' names, which are unavailable and why, user space only),
 *   reads() (threads watched, read, skipped).
 * - measure(events, pid, duration_ns): another process counted for a while, the GIL released
 *   while it waits (in slices of 100 ms, signals checked between: Ctrl-C stops it), the dict
 *   of result() with its info().
 * - events(): the table of named events, each probed here (available, and why not).
 *
 * Errors are Python exceptions: an unknown event ValueError (naming the events this machine
 * has), no such pid ProcessLookupError, not allowed PermissionError (which privilege, what
 * still works), no event opens (or strict) UnavailableEventError (module.c's); the GIL is held while counters
 * are read (microseconds) and released where anything waits.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "python/hwspy/module.h"
#include "include/hwspy.h"

#define SLICE_NS 100000000ULL           /* measure(): signals checked this often */

static PyTypeObject *session_type, *mark_type;

struct session {
	PyObject_HEAD
	struct hwspy_count *c;          /* NULL: none of the events opens here */
	PyObject *info;                 /* dict: names, unavailable, user_only */
};

struct mark {
	PyObject_HEAD
	struct hwspy_count_mark *m;
	struct session *owner;          /* a mark is freed before its counting */
};

/* ---- words ---- */

/* Why event name (error: its open's, or the probe's) is not counted here, as one phrase. */
static PyObject *reason_of(const char *name, int error, bool user_only)
{
	char paranoid[64];
	const char *clause = hwspy_event_no_pmu(name, NULL);

	hwspy_paranoid_words(paranoid, sizeof(paranoid));
	if ((error == -ENOENT || error == -EOPNOTSUPP) && clause && !hwspy_have_hw_pmu())
		return PyUnicode_FromString("not supported on this machine (no hardware PMU: a "
					    "VM without one?); software events such as "
					    "'task-clock' and 'page-faults' still count");
	if (error == -ENOENT || error == -EOPNOTSUPP)
		return PyUnicode_FromString("not supported on this machine");
	if ((error == -EACCES || error == -EPERM) && user_only)
		return PyUnicode_FromFormat("happens in the kernel alone, and kernel-mode counting "
					    "is not allowed (%s, no CAP_PERFMON): counted in user "
					    "space only it counts nothing", paranoid);
	if (error == -EACCES || error == -EPERM)
		return PyUnicode_FromFormat("not allowed (%s; root or CAP_PERFMON allows it)",
					    paranoid);
	return PyUnicode_FromFormat("cannot be opened here: %s", strerror(error < 0 ? -error :
									     EINVAL));
}

/* ValueError for an unknown event: the reason, the closest names, the events that open. */
static PyObject *raise_unknown(const char *list)
{
	const char *names[48], *close[3];
	char bad[160] = "", msg[2048];
	const char *why = hwspy_reason(), *q;
	size_t n = hwspy_events_working(names, 48), k, len;

	q = why ? strchr(why, '\'') : NULL;
	if (q && strchr(q + 1, '\''))
		snprintf(bad, sizeof(bad), "%.*s", (int) (strchr(q + 1, '\'') - q - 1), q + 1);
	len = (size_t) snprintf(msg, sizeof(msg), "%s", why && *why ? why : "unknown event");
	k = bad[0] ? hwspy_events_suggest(bad, close, 3) : 0;
	for (size_t i = 0; i < k && len < sizeof(msg); i++)
		len += (size_t) snprintf(msg + len, sizeof(msg) - len, "%s'%s'",
					 i ? ", " : " (did you mean ", close[i]);
	if (k && len < sizeof(msg))
		len += (size_t) snprintf(msg + len, sizeof(msg) - len, "?)");
	for (size_t i = 0; i < n && len < sizeof(msg); i++)
		len += (size_t) snprintf(msg + len, sizeof(msg) - len, "%s%s",
					 i ? ", " : "; events this machine counts: ", names[i]);
	if (len < sizeof(msg))
		snprintf(msg + len, sizeof(msg) - len, " (hwspy.events() lists every event with "
			 "its availability)");
	(void) list;
	PyErr_SetString(PyExc_ValueError, msg);
	return NULL;
}

/* PermissionError for counting pid: which privilege, what still works. */
static PyObject *raise_not_allowed(pid_t pid)
{
	char paranoid[64];

	hwspy_paranoid_words(paranoid, sizeof(paranoid));
	PyErr_Format(PyExc_PermissionError, "not allowed to count pid %d (%s): counting a "
		     "process of another user needs root, or CAP_PERFMON with the right to trace "
		     "it (CAP_SYS_PTRACE); counting this process (hwspy.count without pid=) and "
		     "its own children in user space still works", (int) pid, paranoid);
	return NULL;
}

/* ---- dicts of values ---- */

static int set_item(PyObject *d, const char *key, PyObject *v)
{
	int r;

	if (!v)
		return -1;
	r = PyDict_SetItemString(d, key, v);
	Py_DECREF(v);
	return r;
}

static PyObject *event_dict(const struct hwspy_count_event *e)
{
	PyObject *d = PyDict_New();

	if (!d || set_item(d, "name", PyUnicode_FromString(e->name)) < 0 ||
	    set_item(d, "counted", PyBool_FromLong(e->counted)) < 0 ||
	    set_item(d, "error", PyLong_FromLong(e->error)) < 0 ||
	    set_item(d, "hardware", PyBool_FromLong(e->hardware)) < 0 ||
	    set_item(d, "split", PyBool_FromLong(e->split)) < 0 ||
	    set_item(d, "value", PyFloat_FromDouble(e->value)) < 0 ||
	    set_item(d, "raw", PyLong_FromUnsignedLongLong(e->raw)) < 0 ||
	    set_item(d, "enabled_ns", PyLong_FromUnsignedLongLong(e->enabled_ns)) < 0 ||
	    set_item(d, "running_ns", PyLong_FromUnsignedLongLong(e->running_ns)) < 0 ||
	    set_item(d, "per_second", PyFloat_FromDouble(e->per_second)) < 0 ||
	    set_item(d, "cpus", PyFloat_FromDouble(e->cpus)) < 0 ||
	    set_item(d, "ipc", PyFloat_FromDouble(e->ipc)) < 0 ||
	    set_item(d, "ghz", PyFloat_FromDouble(e->ghz)) < 0 ||
	    set_item(d, "mpki", PyFloat_FromDouble(e->mpki)) < 0 ||
	    set_item(d, "reference", PyUnicode_FromString(e->reference)) < 0 ||
	    set_item(d, "miss_rate", PyFloat_FromDouble(e->miss_rate)) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *thread_dict(const struct hwspy_count_thread *t, size_t n_ev)
{
	PyObject *d = PyDict_New(), *v = PyList_New((Py_ssize_t) n_ev);

	for (size_t i = 0; v && i < n_ev; i++) {
		PyObject *x = PyFloat_FromDouble(t->value[i]);

		if (!x || PyList_SetItem(v, (Py_ssize_t) i, x) < 0) {
			Py_CLEAR(v);
			break;
		}
	}
	if (!d || set_item(d, "tid", PyLong_FromLong(t->tid)) < 0 ||
	    set_item(d, "name", PyUnicode_FromString(t->name)) < 0 ||
	    set_item(d, "task_clock_ns", PyFloat_FromDouble(t->task_clock_ns)) < 0 ||
	    set_item(d, "values", v) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *finding_dict(const struct hwspy_finding *f)
{
	PyObject *d = PyDict_New(), *fs = PyList_New(0);

	for (size_t i = 0; fs && i < f->n_functions; i++) {
		PyObject *x = Py_BuildValue("{s:s,s:d,s:K,s:i}", "text", f->functions[i].text,
					    "share", f->functions[i].share, "samples",
					    (unsigned long long) f->functions[i].samples, "tid",
					    (int) f->functions[i].tid);

		if (!x || PyList_Append(fs, x) < 0) {
			Py_XDECREF(x);
			Py_CLEAR(fs);
			break;
		}
		Py_DECREF(x);
	}
	if (!d || set_item(d, "id", PyUnicode_FromString(f->id)) < 0 ||
	    set_item(d, "metric", PyUnicode_FromString(f->metric)) < 0 ||
	    set_item(d, "value", PyFloat_FromDouble(f->value)) < 0 ||
	    set_item(d, "threshold", PyFloat_FromDouble(f->threshold)) < 0 ||
	    set_item(d, "above", PyBool_FromLong(f->above)) < 0 ||
	    set_item(d, "unit", PyUnicode_FromString(f->unit ? f->unit : "")) < 0 ||
	    set_item(d, "meaning", PyUnicode_FromString(f->meaning ? f->meaning : "")) < 0 ||
	    set_item(d, "advice", PyUnicode_FromString(f->advice ? f->advice : "")) < 0 ||
	    set_item(d, "functions", fs) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

/* Appends each of n items made by make(base + i * size) to list l under d[key]. */
static int add_list(PyObject *d, const char *key, const void *base, size_t size, size_t n,
		    PyObject *(*make)(const void *, size_t), size_t arg)
{
	PyObject *l = PyList_New(0);

	for (size_t i = 0; l && i < n; i++) {
		PyObject *x = make((const char *) base + i * size, arg);

		if (!x || PyList_Append(l, x) < 0) {
			Py_XDECREF(x);
			Py_CLEAR(l);
			break;
		}
		Py_DECREF(x);
	}
	return set_item(d, key, l);
}

static PyObject *make_event(const void *p, size_t arg)
{
	(void) arg;
	return event_dict(p);
}

static PyObject *make_thread(const void *p, size_t n_ev)
{
	return thread_dict(p, n_ev);
}

static PyObject *make_finding(const void *p, size_t arg)
{
	(void) arg;
	return finding_dict(p);
}

static PyObject *make_unmeasured(const void *p, size_t arg)
{
	const struct hwspy_unmeasured *u = p;

	(void) arg;
	return Py_BuildValue("{s:s,s:s,s:s,s:i}", "id", u->id, "metric", u->metric,
			     "missing_event", u->missing_event ? u->missing_event : "", "error",
			     u->error);
}

/* c's last reading as a dict: events, threads, findings, unmeasured. */
static PyObject *reading_dict(struct hwspy_count *c)
{
	struct hwspy_findings *f = PyMem_Calloc(1, sizeof(*f));
	const struct hwspy_count_event *ev;
	const struct hwspy_count_thread *th;
	size_t n_ev, n_th;
	PyObject *d;
	int r;

	if (!f)
		return PyErr_NoMemory();
	r = hwspy_count_findings(c, f);
	if (r < 0) {
		PyMem_Free(f);
		return hwspy_py_raise(r, "cannot make the findings");
	}
	ev = hwspy_count_events(c, &n_ev);
	th = hwspy_count_threads(c, &n_th);
	d = PyDict_New();
	if (!d || add_list(d, "events", ev, sizeof(*ev), n_ev, make_event, 0) < 0 ||
	    add_list(d, "threads", th, sizeof(*th), n_th, make_thread, n_ev) < 0 ||
	    add_list(d, "findings", f->f, sizeof(f->f[0]), f->n, make_finding, 0) < 0 ||
	    add_list(d, "unmeasured", f->u, sizeof(f->u[0]), f->n_unmeasured, make_unmeasured,
		     0) < 0 ||
	    set_item(d, "user_only", PyBool_FromLong(hwspy_count_user_only(c))) < 0) {
		Py_XDECREF(d);
		d = NULL;
	}
	PyMem_Free(f);
	return d;
}

/* The events' names and the unavailable ones with why ({name: reason}), of c's last reading
 * (counting: true) or, none of them opening, each probed. */
static PyObject *info_dict(struct hwspy_count *c, bool counting)
{
	const struct hwspy_count_event *ev;
	PyObject *d = PyDict_New(), *names = PyList_New(0), *un = PyDict_New();
	bool user_only = hwspy_count_user_only(c);
	size_t n;

	ev = hwspy_count_events(c, &n);
	for (size_t i = 0; d && names && un && i < n; i++) {
		PyObject *name = PyUnicode_FromString(ev[i].name), *why = NULL;
		int err = ev[i].error;

		if (!name || PyList_Append(names, name) < 0) {
			Py_XDECREF(name);
			Py_CLEAR(d);
			break;
		}
		if (!counting)
			(void) hwspy_event_probe_name(ev[i].name, &err);
		if (!counting || !ev[i].counted)
			why = reason_of(ev[i].name, err ? err : -ENOENT, user_only);
		if ((why && PyDict_SetItem(un, name, why) < 0) || (!counting && !why) ||
		    (counting && !ev[i].counted && !why))
			Py_CLEAR(d);
		Py_DECREF(name);
		Py_XDECREF(why);
	}
	if (!d || !names || !un || set_item(d, "names", names) < 0 ||
	    set_item(d, "unavailable", un) < 0 ||
	    set_item(d, "user_only", PyBool_FromLong(user_only)) < 0 ||
	    set_item(d, "counting", PyBool_FromLong(counting)) < 0) {
		if (names && !d)
			Py_DECREF(names);
		if (un && !d)
			Py_DECREF(un);
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

/* A counting of events made (an unknown event: ValueError). */
static struct hwspy_count *count_new(const char *events)
{
	struct hwspy_count_opts o = { .events = events, .user_only_fallback = true };
	struct hwspy_count *c;
	int r = hwspy_count_new(&o, &c);

	if (r == -ENOENT) {
		raise_unknown(events);
		return NULL;
	}
	if (r < 0) {
		hwspy_py_raise(r, "cannot count these events");
		return NULL;
	}
	return c;
}

/* ---- Session ---- */

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "events", NULL };
	struct hwspy_count_mark *zero = NULL;
	const char *events;
	struct session *s;
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s", kwlist, &events))
		return NULL;
	s = (struct session *) PyType_GenericNew(type, NULL, NULL);
	if (!s)
		return NULL;
	s->c = count_new(events);
	if (!s->c) {
		Py_DECREF(s);
		return NULL;
	}
	r = hwspy_count_start(s->c, 0, NULL);
	if (r < 0 && r != -ENOENT) {
		Py_DECREF(s);
		return hwspy_py_raise(r, "cannot count this process");
	}
	if (r >= 0) {
		r = hwspy_count_mark_new(s->c, &zero);
		if (r >= 0)
			r = hwspy_count_use(s->c, zero);
		hwspy_count_mark_free(zero);
		if (r < 0) {
			Py_DECREF(s);
			return hwspy_py_raise(r, "cannot read the counters");
		}
	}
	s->info = info_dict(s->c, r >= 0);
	if (!s->info) {
		Py_DECREF(s);
		return NULL;
	}
	if (r < 0) {                    /* nothing opens: no counting kept */
		hwspy_count_free(s->c);
		s->c = NULL;
	}
	return (PyObject *) s;
}

static void session_dealloc(PyObject *self)
{
	struct session *s = (struct session *) self;
	PyTypeObject *tp = Py_TYPE(self);
	freefunc f = (freefunc) PyType_GetSlot(tp, Py_tp_free);

	hwspy_count_free(s->c);
	Py_XDECREF(s->info);
	f(self);
	Py_DECREF(tp);
}

static PyObject *mark_make(struct session *s, bool read)
{
	struct mark *m;
	int r;

	if (!s->c) {
		PyErr_SetString(hwspy_py_unavailable_error, "none of the events can be counted here");
		return NULL;
	}
	m = (struct mark *) PyType_GenericNew(mark_type, NULL, NULL);
	if (!m)
		return NULL;
	r = hwspy_count_mark_new(s->c, &m->m);
	if (r >= 0 && read)
		r = hwspy_count_mark_read(s->c, m->m);
	if (r < 0) {
		Py_DECREF(m);
		return hwspy_py_raise(r, "cannot read the counters");
	}
	Py_INCREF(s);
	m->owner = s;
	return (PyObject *) m;
}

static PyObject *session_mark(PyObject *self, PyObject *unused)
{
	(void) unused;
	return mark_make((struct session *) self, true);
}

static PyObject *session_zero(PyObject *self, PyObject *unused)
{
	(void) unused;
	return mark_make((struct session *) self, false);
}

/* A mark of this session, or TypeError. */
static struct hwspy_count_mark *mark_of(struct session *s, PyObject *o)
{
	if (!PyObject_TypeCheck(o, mark_type) || ((struct mark *) o)->owner != s) {
		PyErr_SetString(PyExc_TypeError, "a mark of this session expected");
		return NULL;
	}
	return ((struct mark *) o)->m;
}

static PyObject *session_add(PyObject *self, PyObject *args)
{
	struct session *s = (struct session *) self;
	struct hwspy_count_mark *sum, *a, *b;
	PyObject *o[3];

	if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2]))
		return NULL;
	if (!(sum = mark_of(s, o[0])) || !(a = mark_of(s, o[1])) || !(b = mark_of(s, o[2])))
		return NULL;
	hwspy_count_mark_add(sum, a, b);
	Py_RETURN_NONE;
}

static PyObject *session_result(PyObject *self, PyObject *arg)
{
	struct session *s = (struct session *) self;
	struct hwspy_count_mark *sum = s->c ? mark_of(s, arg) : NULL;
	int r;

	if (!sum)
		return s->c ? NULL : PyDict_New();
	r = hwspy_count_use(s->c, sum);
	if (r < 0)
		return hwspy_py_raise(r, "cannot read the counters");
	return reading_dict(s->c);
}

static PyObject *session_info(PyObject *self, PyObject *unused)
{
	struct session *s = (struct session *) self;

	(void) unused;
	Py_INCREF(s->info);
	return s->info;
}

/* How its readings went: threads watched, threads read and skipped as idle (bench, tests). */
static PyObject *session_reads(PyObject *self, PyObject *unused)
{
	struct session *s = (struct session *) self;
	struct hwspy_count_stats st = { 0 };

	(void) unused;
	if (s->c)
		hwspy_count_stats(s->c, &st);
	return Py_BuildValue("{sIsKsK}", "watched", st.threads_watched, "reads",
			     (unsigned long long) st.reads, "skipped",
			     (unsigned long long) st.reads_skipped);
}

static PyMethodDef session_methods[] = {
	{ "mark", session_mark, METH_NOARGS, "A reading of every counter now." },
	{ "zero", session_zero, METH_NOARGS, "An empty sum of intervals." },
	{ "add", session_add, METH_VARARGS, "add(sum, a, b): sum += b - a." },
	{ "result", session_result, METH_O, "The sum's values, threads and findings (dict)." },
	{ "info", session_info, METH_NOARGS, "The events, the unavailable ones and why." },
	{ "reads", session_reads, METH_NOARGS, "Threads watched, read and skipped (dict)." },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot session_slots[] = {
	{ Py_tp_new, (void *) session_new },
	{ Py_tp_dealloc, (void *) session_dealloc },
	{ Py_tp_methods, session_methods },
	{ Py_tp_doc, (void *) "Session(events): this process counted, kept open (internal)." },
	{ 0, NULL },
};

static PyType_Spec session_spec = {
	"hwspy._hwspy.Session", sizeof(struct session), 0, Py_TPFLAGS_DEFAULT, session_slots,
};

static void mark_dealloc(PyObject *self)
{
	struct mark *m = (struct mark *) self;
	PyTypeObject *tp = Py_TYPE(self);
	freefunc f = (freefunc) PyType_GetSlot(tp, Py_tp_free);

	hwspy_count_mark_free(m->m);
	Py_XDECREF(m->owner);
	f(self);
	Py_DECREF(tp);
}

static PyType_Slot mark_slots[] = {
	{ Py_tp_dealloc, (void *) mark_dealloc },
	{ Py_tp_doc, (void *) "A reading of a Session's counters, or a sum of intervals." },
	{ 0, NULL },
};

static PyType_Spec mark_spec = {
	"hwspy._hwspy.Mark", sizeof(struct mark), 0, Py_TPFLAGS_DEFAULT, mark_slots,
};

/* ---- measure(): another process ---- */

/* Counts c until duration_ns, the target's end or a signal's exception: 0, 1 (an exception
 * set), or -errno. */
static int measure_run(struct hwspy_count *c, uint64_t duration_ns)
{
	uint64_t done = 0;
	int r = 0;

	while (!duration_ns || done < duration_ns) {
		uint64_t slice = duration_ns && duration_ns - done < SLICE_NS ? duration_ns - done :
				 SLICE_NS;
		struct hwspy_count_stats st;

		Py_BEGIN_ALLOW_THREADS
		r = hwspy_count_run(c, NULL, slice);
		Py_END_ALLOW_THREADS
		if (r < 0)
			return r;
		done += slice;
		if (PyErr_CheckSignals() < 0)
			return 1;
		hwspy_count_stats(c, &st);
		if (st.target_exited)
			break;
	}
	return 0;
}

static PyObject *measure(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "events", "pid", "duration_ns", NULL };
	unsigned long long duration_ns;
	const char *events;
	struct hwspy_count *c;
	PyObject *d = NULL, *info = NULL;
	int pid, r;

	(void) self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "siK", kwlist, &events, &pid, &duration_ns))
		return NULL;
	if (pid <= 0) {
		PyErr_Format(PyExc_ValueError, "pid must be a process id (> 0), not %d", pid);
		return NULL;
	}
	c = count_new(events);
	if (!c)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = hwspy_count_start(c, pid, NULL);
	Py_END_ALLOW_THREADS
	if (r == -ESRCH)
		PyErr_Format(PyExc_ProcessLookupError, "no process with pid %d", pid);
	else if (r == -EACCES || r == -EPERM)
		raise_not_allowed(pid);
	else if (r == -ENOENT)
		PyErr_SetString(hwspy_py_unavailable_error, "none of the events can be counted here");
	else if (r < 0)
		hwspy_py_raise(r, "cannot count that process");
	if (r >= 0)
		r = measure_run(c, duration_ns);
	if (r < 0 && !PyErr_Occurred())
		hwspy_py_raise(r, "counting failed");
	/* stopped in every case: nothing of ours left on the target */
	if (hwspy_count_stop(c) >= 0 && r == 0) {
		d = reading_dict(c);
		info = d ? info_dict(c, true) : NULL;
		if (info && set_item(d, "info", info) < 0)
			Py_CLEAR(d);
		if (!info)
			Py_CLEAR(d);
	}
	hwspy_count_free(c);
	return d;
}

/* ---- events() ---- */

static const char *probe_words(enum hwspy_probe_result p)
{
	switch (p) {
	case HWSPY_PROBE_OK: return "";
	case HWSPY_PROBE_USER_ONLY: return "user space only (kernel-mode counting not allowed)";
	case HWSPY_PROBE_NO_PMU: return "no hardware PMU on this machine";
	case HWSPY_PROBE_UNSUPPORTED: return "not supported on this machine";
	case HWSPY_PROBE_NOT_ALLOWED: return "not allowed";
	case HWSPY_PROBE_INVALID: return "the kernel refused its attributes";
	case HWSPY_PROBE_UNPARSED: return "not an event hwspy parses";
	default: return "cannot be opened here";
	}
}

static PyObject *events(PyObject *self, PyObject *unused)
{
	size_t n;
	const struct hwspy_event_info *t = hwspy_event_table(&n);
	enum hwspy_probe_result *p = PyMem_Calloc(n + 1, sizeof(*p));
	PyObject *l = PyList_New(0);

	(void) self;
	(void) unused;
	if (!p || !l) {
		PyMem_Free(p);
		Py_XDECREF(l);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	for (size_t i = 0; i < n; i++) {
		int err;

		p[i] = hwspy_event_probe_name(t[i].name, &err);
	}
	Py_END_ALLOW_THREADS
	for (size_t i = 0; i < n; i++) {
		bool ok = p[i] == HWSPY_PROBE_OK || p[i] == HWSPY_PROBE_USER_ONLY;
		PyObject *x = Py_BuildValue("{s:s,s:z,s:s,s:s,s:O,s:s}", "name", t[i].name,
					    "alias", t[i].alias, "kind",
					    hwspy_event_kind_name(t[i].kind), "description",
					    t[i].desc ? t[i].desc : "", "available",
					    ok ? Py_True : Py_False, "reason", probe_words(p[i]));

		if (!x || PyList_Append(l, x) < 0) {
			Py_XDECREF(x);
			Py_CLEAR(l);
			break;
		}
		Py_DECREF(x);
	}
	PyMem_Free(p);
	return l;
}

/* check_events(events): an unknown event is a ValueError now, before any block opens one. */
static PyObject *check_events(PyObject *self, PyObject *args)
{
	const char *events;
	struct hwspy_count *c;

	(void) self;
	if (!PyArg_ParseTuple(args, "s", &events))
		return NULL;
	c = count_new(events);
	if (!c)
		return NULL;
	hwspy_count_free(c);
	Py_RETURN_NONE;
}

static PyMethodDef count_functions[] = {
	{ "check_events", check_events, METH_VARARGS, "Parses a list of events (ValueError)." },
	{ "measure", (PyCFunction) (void (*)(void)) measure, METH_VARARGS | METH_KEYWORDS,
	  "measure(events, pid, duration_ns): another process counted (dict)." },
	{ "events", events, METH_NOARGS, "The named events, each probed here." },
	{ NULL, NULL, 0, NULL },
};

int hwspy_py_count_init(PyObject *m)
{
	session_type = (PyTypeObject *) PyType_FromSpec(&session_spec);
	mark_type = (PyTypeObject *) PyType_FromSpec(&mark_spec);
	if (!session_type || !mark_type)
		return -1;
	Py_INCREF(session_type);
	if (PyModule_AddObject(m, "Session", (PyObject *) session_type) < 0 ||
	    PyModule_AddFunctions(m, count_functions) < 0)
		return -1;
	return 0;
}
