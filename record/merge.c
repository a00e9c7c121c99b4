/*
 * merge: native + Python frames -> one root-first stack (rules in merge.h).
 *
 * At most three walks over the inputs, no allocation: plan() classifies the native frames and
 * counts entries (E) and segments (S) and decides how they pair; then walk() writes the
 * innermost max frames of the output, after a walk to count them where they may not fit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "record/merge.h"

#define EVAL_NAME "_PyEval_EvalFrameDefault"
#define TAIL_CALL_PREFIX "_TAIL_CALL_"

enum frame_class {
	CLS_EVAL,               /* _PyEval_EvalFrameDefault and clones */
	CLS_HANDLER,            /* 3.14 tail-call handler */
	CLS_DROP,               /* interpreter internal, trampoline */
	CLS_UNNAMED_INTERP,     /* nameless frame of the interpreter's module (dropped) */
	CLS_KEEP,               /* everything shown */
};

struct name {
	const char *s;
	size_t len;
};
#define NAME(s) { s, sizeof(s) - 1 }
static const struct name eval_name = NAME(EVAL_NAME);

/* GC entry points and GIL / lock waits, by version (merge.h). */
static const struct name kept_internal[] = {
	NAME("collect"),                /* 3.8-3.9 gcmodule.c */
	NAME("gc_collect_main"),        /* 3.10-3.13, 3.14 gc_free_threading.c */
	NAME("_PyGC_Collect"),          /* 3.13+ */
	NAME("gc_collect_young"),       /* 3.14 incremental gc.c */
	NAME("gc_collect_increment"),
	NAME("gc_collect_full"),
	NAME("take_gil"),
	NAME("drop_gil"),
	NAME("PyThread_acquire_lock_timed"),
	NAME("PyThread_acquire_lock_timed_with_retries"),  /* 3.13+ */
	NAME("_PyMutex_LockTimed"),     /* 3.13+ PyMutex slow path (threading.Lock in 3.13+) */
	NAME("_PyParkingLot_Park"),     /* 3.13+ */
	NAME("PyEvent_WaitTimed"),      /* 3.13+ (thread join, stop-the-world) */
};

/* Frames that only the outermost part of a complete unwind holds. */
static const struct name thread_roots[] = {
	NAME("_start"), NAME("__libc_start_main"), NAME("__libc_start_main_impl"),
	NAME("__libc_start_call_main"),
	NAME("start_thread"),
	NAME("clone"), NAME("__clone"), NAME("clone3"), NAME("__clone3"), NAME("main"),
	NAME("Py_RunMain"), NAME("Py_BytesMain"), NAME("Py_Main"), NAME("pymain_main"),
	NAME("pythread_wrapper"), NAME("t_bootstrap"), NAME("thread_run"),
};

/* name is base, or base followed by a compiler suffix (".cold", ".constprop.0" ...): its part
 * before its first '.' is base (no base has a '.'), compared only where the lengths agree (a
 * --native sample's hundred frames against these thirty names, each a strncmp: 14% of hwspy's
 * CPU at 100 Hz). */
static bool name_is(const char *name, size_t len, const struct name *base)
{
	return base->len == len && memcmp(name, base->s, len) == 0;
}

static bool name_in(const char *name, const struct name *list, size_t n)
{
	size_t len = strcspn(name, ".");

	for (size_t i = 0; i < n; i++)
		if (name_is(name, len, &list[i]))
			return true;
	return false;
}

bool merge_is_eval_frame(const char *name)
{
	if (!name)
		return false;
	return name_in(name, &eval_name, 1) ||
	       strncmp(name, TAIL_CALL_PREFIX, sizeof(TAIL_CALL_PREFIX) - 1) == 0;
}

bool merge_is_kept_internal(const char *name)
{
	return name && name_in(name, kept_internal, sizeof(kept_internal) / sizeof(kept_internal[0]));
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "python", "python3", "python3.11", "python3.13t": a launcher executable. */
static bool is_launcher(const char *module)
{
	const char *p;

	if (strncmp(module, "python", 6) != 0)
		return false;
	for (p = module + 6; (*p >= '0' && *p <= '9') || *p == '.'; p++)
		;
	for (; *p >= 'a' && *p <= 'z'; p++)
		;
	return *p == '\0';
}

static const char *frame_name(const struct native_frame *f)
{
	return f->name && f->name[0] ? f->name : NULL;
}

static enum frame_class classify(const struct merge_in *in, const struct native_frame *f)
{
	const char *name = frame_name(f);
	bool interp = false;

	if (name && name_in(name, &eval_name, 1))
		return CLS_EVAL;
	if (name && strncmp(name, TAIL_CALL_PREFIX, sizeof(TAIL_CALL_PREFIX) - 1) == 0)
		return CLS_HANDLER;
	if (f->module) {
		const char *m = base_name(f->module);

		interp = (in->interp_module && strcmp(m, base_name(in->interp_module)) == 0) ||
			 is_launcher(m);
	}
	if (interp) {
		if (!name)
			return CLS_UNNAMED_INTERP;
		return merge_is_kept_internal(name) ? CLS_KEEP : CLS_DROP;
	}
	if (f->jit && name && strncmp(name, "py::", 4) == 0)
		return CLS_DROP;
	return CLS_KEEP;
}

/* Whether native[i] (innermost-first index) starts a new entry; *open tracks whether the
 * current entry may still be continued (no kept frame since its eval frame). Frames must be
 * fed root first. */
static bool starts_entry(const struct merge_in *in, size_t i, enum frame_class cls, bool *open)
{
	bool inlined_in_eval = false;

	if (cls == CLS_KEEP) {
		*open = false;
		return false;
	}
	if (cls != CLS_EVAL && cls != CLS_HANDLER)
		return false;
	if (in->native[i].inlined && i + 1 < in->n_native) {
		enum frame_class outer = classify(in, &in->native[i + 1]);

		inlined_in_eval = outer == CLS_EVAL || outer == CLS_HANDLER;
	}
	if (inlined_in_eval || (cls == CLS_HANDLER && *open))
		return false;
	*open = true;
	return true;
}

struct plan {
	size_t n_entries, n_segments;
	size_t root_segments;   /* outer segments placed before every native frame */
	size_t skip_outer;      /* outermost entries without a segment */
	size_t skip_inner;      /* innermost entries without a segment */
};

static int plan(const struct merge_in *in, struct plan *p)
{
	size_t i, k, kept_outer = SIZE_MAX, unnamed_inner = 0;
	bool open = false, complete = false, unnamed = false, py_cut;

	memset(p, 0, sizeof(*p));
	for (i = in->n_py; i-- > 0;)
		if (i == in->n_py - 1 || in->py[i].entry)
			p->n_segments++;
	if (in->n_native == 0)
		return 0;
	if (in->py_unknown)
		return 0;       /* each entry becomes MERGE_PY_UNKNOWN (walk) */
	for (k = in->n_native; k-- > 0;) {
		const struct native_frame *f = &in->native[k];
		enum frame_class cls = classify(in, f);

		if (starts_entry(in, k, cls, &open))
			p->n_entries++;
		if (cls == CLS_UNNAMED_INTERP) {
			unnamed = true;
			unnamed_inner = k;      /* index of the innermost one (fed root first) */
		}
		if (cls == CLS_KEEP && kept_outer == SIZE_MAX)
			kept_outer = k;         /* index of the outermost kept frame */
		if (frame_name(f) && name_in(f->name, thread_roots,
					     sizeof(thread_roots) / sizeof(thread_roots[0])))
			complete = true;
	}
	if (p->n_entries == p->n_segments)
		return 0;
	py_cut = in->py_truncated || (in->n_py > 0 && !in->py[in->n_py - 1].entry);
	if (p->n_entries > p->n_segments) {
		if (py_cut) {
			if (unnamed)
				return -EPROTO;
			p->skip_outer = p->n_entries - p->n_segments;
			return 0;
		}
		/* a nameless eval frame would make S + 2 entries, which no whole Python stack
		 * leaves: so here none is, and the innermost entry has no frame */
		if (p->n_entries == p->n_segments + 1) {
			p->skip_inner = 1;
			return 0;
		}
		return -EPROTO;
	}
	/* fewer entries than segments: only an unwind cut short explains it */
	if (complete)
		return -EPROTO;
	/* a nameless interpreter frame may be an eval frame: safe only when no entry is paired
	 * and every kept frame lies inside every nameless one */
	if (unnamed && !(p->n_entries == 0 && (kept_outer == SIZE_MAX || kept_outer < unnamed_inner)))
		return -EPROTO;
	p->root_segments = p->n_segments - p->n_entries;
	return 0;
}

struct out {
	struct profile_frame *ret;
	size_t skip;            /* outermost frames not written (second walk) */
	size_t n;               /* frames produced so far */
	bool write;
	bool unknown_open;      /* the last frame produced is MERGE_PY_UNKNOWN */
	char *scratch;
	size_t scratch_left;
	int32_t *py_at;         /* merge_in.py_at */
	int32_t cur_py;         /* the index in py of the frame put() writes, or -1 */
};

static void put(struct out *o, const struct profile_frame *f)
{
	if (o->write && o->n >= o->skip) {
		o->ret[o->n - o->skip] = *f;
		if (o->py_at)
			o->py_at[o->n - o->skip] = o->cur_py;
	}
	o->n++;
	o->unknown_open = false;
}

/* One MERGE_PY_UNKNOWN frame for a run of entries with no kept frame between them. */
static void put_unknown(struct out *o)
{
	const struct profile_frame f = { .kind = FRAME_SPECIAL, .name = MERGE_PY_UNKNOWN };

	if (o->unknown_open)
		return;
	put(o, &f);
	o->unknown_open = true;
}

static bool will_write(const struct out *o)
{
	return o->write && o->n >= o->skip;
}

void merge_py_frame(const struct py_frame *py, bool function_lines, struct profile_frame *ret)
{
	*ret = (struct profile_frame) {
		.kind = FRAME_PYTHON, .name = py->name ? py->name : "<unknown>", .file = py->file,
		.line = function_lines ? py->first_line : py->line,
	};
}

/* Python frames from py[*cursor] inwards up to the next entry frame; *cursor moves past them. */
static void put_segment(const struct merge_in *in, struct out *o, size_t *cursor)
{
	bool first = true;

	while (*cursor > 0) {
		const struct py_frame *pf = &in->py[*cursor - 1];
		struct profile_frame f;

		if (!first && pf->entry)
			break;
		first = false;
		merge_py_frame(pf, in->function_lines, &f);
		o->cur_py = (int32_t) (*cursor - 1);
		put(o, &f);
		o->cur_py = -1;
		(*cursor)--;
	}
}

static void put_native(struct out *o, const struct native_frame *nf)
{
	struct profile_frame f = {
		.kind = FRAME_NATIVE, .name = frame_name(nf), .file = nf->file, .line = nf->line,
		.module = nf->module ? base_name(nf->module) : NULL,
	};

	if (!f.name && !f.module) {
		f.kind = FRAME_SPECIAL;
		f.name = "[unknown]";
	} else if (!f.name) {
		f.name = f.module;
		if (will_write(o) && o->scratch) {
			int len = snprintf(o->scratch, o->scratch_left, "%s+0x%" PRIx64, f.module,
					   nf->module_offset);

			if (len > 0 && (size_t) len < o->scratch_left) {
				f.name = o->scratch;
				o->scratch += len + 1;
				o->scratch_left -= (size_t) len + 1;
			}
		}
	}
	put(o, &f);
}

static void walk(const struct merge_in *in, const struct plan *p, struct out *o)
{
	size_t cursor = in->n_py, seg, entry = 0, k;
	bool open = false;

	for (seg = 0; seg < p->root_segments; seg++)
		put_segment(in, o, &cursor);
	if (in->n_native == 0) {
		while (cursor > 0)
			put_segment(in, o, &cursor);
		return;
	}
	for (k = in->n_native; k-- > 0;) {
		enum frame_class cls = classify(in, &in->native[k]);

		if (starts_entry(in, k, cls, &open)) {
			if (in->py_unknown)
				put_unknown(o);
			else if (entry >= p->skip_outer && entry < p->n_entries - p->skip_inner)
				put_segment(in, o, &cursor);
			entry++;
		}
		if (cls == CLS_KEEP)
			put_native(o, &in->native[k]);
	}
}

int merge_stacks(const struct merge_in *in, struct profile_frame *ret, size_t max, size_t *ret_n)
{
	struct out o = { .ret = ret, .py_at = in->py_at, .cur_py = -1 };
	struct plan p;
	int r;

	*ret_n = 0;
	if ((in->n_native && !in->native) || (in->n_py && !in->py) || (max && !ret) ||
	    (in->py_unknown && in->n_py))
		return -EINVAL;
	r = plan(in, &p);
	if (r < 0)
		return r;
	/* a walk puts each Python frame once at most, and at most two frames per native one
	 * (a frame of its own, a MERGE_PY_UNKNOWN before it): where that fits, no walk to count
	 * first (at depth 60, a tenth of a sample's decoding) */
	if (in->n_py + 2 * in->n_native > max) {
		walk(in, &p, &o);
		if (o.n == 0)
			return 0;
		o.skip = o.n > max ? o.n - max : 0;
		o.n = 0;
		o.unknown_open = false;
	}
	o.write = true;
	o.scratch = in->scratch_size ? in->scratch : NULL;
	o.scratch_left = in->scratch_size;
	walk(in, &p, &o);
	*ret_n = o.n - o.skip;
	return o.skip ? -E2BIG : 0;
}
