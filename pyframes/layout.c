/*
 * layout: the one selection point between the per-version tables (3.8-3.12) and the target's
 * own _Py_DebugOffsets (3.13+), and the one check (layout_check()) every layout passes before
 * a walk uses it: the target's offsets are held against the buffers the walker indexes with
 * them, not only against the struct sizes the target declares.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "pyframes/pyframes_internal.h"

#include "pyframes/layouts/py38.h"
#include "pyframes/layouts/py39.h"
#include "pyframes/layouts/py310.h"
#include "pyframes/layouts/py311.h"
#include "pyframes/layouts/py312.h"

const struct py_layout *layout_static(int major, int minor)
{
	if (major != 3)
		return NULL;
	switch (minor) {
	case 8:
		return &py38_layout;
	case 9:
		return &py39_layout;
	case 10:
		return &py310_layout;
	case 11:
		return &py311_layout;
	case 12:
		return &py312_layout;
	default:
		return NULL;
	}
}

/*
 * Where the sections of _Py_DebugOffsets start. Each section is a run of uint64_t whose first
 * is the size of the CPython struct the others are offsets into. The block grew between 3.13
 * and 3.14 (threads_main, code generations, frame stackpointer/tlbc_index, co_tlbc, set,
 * gen, llist_node and debugger sections), so each minor version has its own map.
 */
struct dbg_map {
	int minor;
	uint32_t total;
	uint32_t runtime, interp, thread, frame, code, pyobject, type, bytes, unicode, gc;
};

static const struct dbg_map dbg_maps[] = {
	{ .minor = 13, .total = 584, .runtime = 24, .interp = 48, .thread = 152, .frame = 224,
	  .code = 272, .pyobject = 352, .type = 368, .bytes = 512, .unicode = 536, .gc = 568 },
	{ .minor = 14, .total = 760, .runtime = 24, .interp = 48, .thread = 176, .frame = 248,
	  .code = 312, .pyobject = 400, .type = 416, .bytes = 592, .unicode = 616, .gc = 648 },
};

#define DBG_STRUCT_MAX (16u << 20)   /* no CPython struct is near 16 MiB */

struct dbg_reader {
	const unsigned char *b;
	int err;
	char *why;
	size_t why_size;
};

static void dbg_fail(struct dbg_reader *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Records the first error, and its reason. */
static void dbg_fail(struct dbg_reader *d, const char *fmt, ...)
{
	va_list ap;

	if (d->err)
		return;
	d->err = -EINVAL;
	if (!d->why || !d->why_size)
		return;
	va_start(ap, fmt);
	(void) vsnprintf(d->why, d->why_size, fmt, ap);
	va_end(ap);
}

/* The size of the struct of the section at sec (named name). */
static uint32_t dbg_size(struct dbg_reader *d, uint32_t sec, const char *name)
{
	uint64_t size = pf_u64(d->b, sec);

	if (size == 0 || size > DBG_STRUCT_MAX) {
		dbg_fail(d, "'%s.size' %" PRIu64 " is no struct size", name, size);
		return 0;
	}
	return (uint32_t) size;
}

/* Field i (1-based, after the size) of the section at sec, checked to leave width bytes
 * inside the struct size. */
static uint32_t dbg_field(struct dbg_reader *d, uint32_t sec, const char *name, unsigned i,
			  const char *field, unsigned width)
{
	uint64_t size = pf_u64(d->b, sec), off = pf_u64(d->b, sec + 8 * i);

	if (size == 0 || size > DBG_STRUCT_MAX) {
		(void) dbg_size(d, sec, name);
		return 0;
	}
	if (off > size || size - off < width) {
		dbg_fail(d, "'%s.%s' offset %" PRIu64 " lies outside the %" PRIu64
			 "-byte struct the target declares", name, field, off, size);
		return 0;
	}
	return (uint32_t) off;
}

/* The block's header: its cookie, version and build, and the map of its sections for that
 * version. 0, -ENOTSUP (a version after the last known, or a free-threaded build), or d->err. */
static int dbg_header(struct dbg_reader *d, size_t len, const struct dbg_map **ret_map,
		      int *ret_minor)
{
	const unsigned char *block = d->b;
	const struct dbg_map *map = NULL;
	uint64_t version;
	int major, minor;

	if (len < 24 || memcmp(block, "xdebugpy", 8) != 0) {
		dbg_fail(d, "its cookie is not 'xdebugpy'");
		return d->err;
	}
	version = pf_u64(block, 8);
	major = (int) ((version >> 24) & 0xff);
	minor = (int) ((version >> 16) & 0xff);
	if (major != 3 || (version >> 32) != 0) {
		dbg_fail(d, "'version' %#" PRIx64 " is no Python 3 version", version);
		return d->err;
	}
	for (unsigned i = 0; i < sizeof(dbg_maps) / sizeof(dbg_maps[0]); i++)
		if (dbg_maps[i].minor == minor)
			map = &dbg_maps[i];
	if (!map) {
		if (minor >= 13)
			return -ENOTSUP;
		dbg_fail(d, "'version' %#" PRIx64 " is older than the block (3.13)", version);
		return d->err;
	}
	if (len < map->total) {
		dbg_fail(d, "its %zu bytes are short of the %u of a 3.%d block", len, map->total,
			 minor);
		return d->err;
	}
	if (pf_u64(block, 16) > 1) {
		dbg_fail(d, "'free_threaded' is %" PRIu64 ", neither 0 nor 1", pf_u64(block, 16));
		return d->err;
	}
	if (pf_u64(block, 16) != 0)
		return -ENOTSUP;   /* free-threaded build */
	*ret_map = map;
	*ret_minor = minor;
	return 0;
}

/* The GIL's offsets from the interpreter_state section: ceval_gil (where interp->ceval.gil,
 * the pointer to the state in use, lies), gil_runtime_state (the interpreter's own _gil) and
 * gil_runtime_state_locked / _holder (its fields, as offsets in PyInterpreterState too: made
 * relative to _gil here). Fields 8-12 after the size in 3.13, 9-13 in 3.14 (threads_main came
 * before them). Offsets that do not fit leave the GIL unknown (PF_NONE), not the layout
 * refused: stacks do not need it. */
static void dbg_gil(const unsigned char *block, const struct dbg_map *map, int minor,
		    struct py_layout *l)
{
	uint32_t first = map->interp + 8 * (minor >= 14 ? 9 : 8);
	uint64_t size = pf_u64(block, map->interp), ceval_gil = pf_u64(block, first);
	uint64_t own = pf_u64(block, first + 8);
	uint64_t locked = pf_u64(block, first + 24), holder = pf_u64(block, first + 32);

	l->rt_gil = PF_NONE;
	l->is_ceval_gil = PF_NONE;
	l->gil_locked = PF_NONE;
	l->gil_holder = PF_NONE;
	if (size > DBG_STRUCT_MAX || ceval_gil > size || size - ceval_gil < 8 || own > size ||
	    locked < own || locked - own > PF_GIL_READ_MAX - 4 || holder < own ||
	    holder - own > PF_GIL_READ_MAX - 8)
		return;
	l->is_ceval_gil = (uint32_t) ceval_gil;
	l->gil_locked = (uint32_t) (locked - own);
	l->gil_holder = (uint32_t) (holder - own);
}

/* The cyclic GC's offsets: interpreter_state.gc (where the interpreter's struct
 * _gc_runtime_state lies: field 4 after the size in 3.13, 5 in 3.14, after threads_main) and
 * the gc section's size and collecting. Offsets that do not fit (the state past the
 * interpreter, collecting past the state) leave the GC unknown (PF_NONE), not the layout
 * refused: stacks do not need it. */
static void dbg_gc(const unsigned char *block, const struct dbg_map *map, int minor,
		   struct py_layout *l)
{
	uint64_t isize = pf_u64(block, map->interp);
	uint64_t at = pf_u64(block, map->interp + 8 * (minor >= 14 ? 5 : 4));
	uint64_t size = pf_u64(block, map->gc), collecting = pf_u64(block, map->gc + 8);

	l->rt_gc = PF_NONE;
	l->is_gc = PF_NONE;
	l->gc_collecting = PF_NONE;
	if (isize > DBG_STRUCT_MAX || size > DBG_STRUCT_MAX || at > isize || isize - at < size ||
	    collecting > size || size - collecting < 4)
		return;
	l->is_gc = (uint32_t) at;
	l->gc_collecting = (uint32_t) collecting;
}

/* 3.14+: interpreter_state.code_object_generation (field 14 after the size), where it fits
 * the interpreter; else 0 (not known): the capture reads each code's identity each time. */
static void dbg_code_gen(const unsigned char *block, const struct dbg_map *map, int minor,
			 struct py_layout *l)
{
	uint64_t size = pf_u64(block, map->interp), at = pf_u64(block, map->interp + 8 * 14);

	l->is_code_gen = 0;
	if (minor >= 14 && size <= DBG_STRUCT_MAX && at >= 8 && at + 8 <= size && at % 8 == 0)
		l->is_code_gen = (uint32_t) at;
}

/* Every offset of the layout from the block's sections (errors in d). */
static void dbg_layout(struct dbg_reader *d, const struct dbg_map *map, int minor,
		       struct py_layout *ret)
{
	const unsigned char *block = d->b;
	struct py_layout l;

	memset(&l, 0, sizeof(l));
	l.major = 3;
	l.minor = minor;
	l.frames = PY_FRAMES_INTERP;
	l.lines = PY_LINES_LOCATIONS;
	l.from_debug_offsets = true;

	/* runtime_state: size, finalizing, interpreters_head */
	l.rt_interp_head = dbg_field(d, map->runtime, "runtime_state", 2, "interpreters_head", 8);
	/* interpreter_state: size, id, next, threads_head, ... */
	l.is_next = dbg_field(d, map->interp, "interpreter_state", 2, "next", 8);
	l.is_threads_head = dbg_field(d, map->interp, "interpreter_state", 3, "threads_head", 8);
	/* thread_state: size, prev, next, interp, current_frame, thread_id, native_thread_id */
	l.ts_size = dbg_size(d, map->thread, "thread_state");
	l.ts_next = dbg_field(d, map->thread, "thread_state", 2, "next", 8);
	l.ts_interp = dbg_field(d, map->thread, "thread_state", 3, "interp", 8);
	l.ts_frame = dbg_field(d, map->thread, "thread_state", 4, "current_frame", 8);
	l.ts_thread_id = dbg_field(d, map->thread, "thread_state", 5, "thread_id", 8);
	l.ts_native_thread_id = dbg_field(d, map->thread, "thread_state", 6, "native_thread_id", 8);
	l.ts_cframe = PF_NONE;
	l.cf_current_frame = PF_NONE;
	/* interpreter_frame: size, previous, executable, instr_ptr, localsplus, owner */
	l.fr_size = dbg_size(d, map->frame, "interpreter_frame");
	l.fr_previous = dbg_field(d, map->frame, "interpreter_frame", 1, "previous", 8);
	l.fr_code = dbg_field(d, map->frame, "interpreter_frame", 2, "executable", 8);
	l.fr_instr = dbg_field(d, map->frame, "interpreter_frame", 3, "instr_ptr", 8);
	l.fr_owner = dbg_field(d, map->frame, "interpreter_frame", 5, "owner", 1);
	l.fr_is_entry = PF_NONE;
	l.fr_gen = PF_NONE;
	/* 3.14 f_executable is a _PyStackRef whose low bits are tags */
	l.fr_code_mask = minor >= 14 ? ~(uint64_t) 7 : ~(uint64_t) 0;
	/* 3.13 FRAME_OWNED_BY_CSTACK = 3; 3.14 FRAME_OWNED_BY_INTERPRETER = 3, CSTACK = 4 */
	l.owner_cstack_min = 3;
	l.owner_generator = 1;
	/* code_object: size, filename, name, qualname, linetable, firstlineno, ..., co_code_adaptive */
	l.co_size = dbg_size(d, map->code, "code_object");
	l.co_filename = dbg_field(d, map->code, "code_object", 1, "filename", 8);
	l.co_name = dbg_field(d, map->code, "code_object", 2, "name", 8);
	l.co_qualname = dbg_field(d, map->code, "code_object", 3, "qualname", 8);
	l.co_linetable = dbg_field(d, map->code, "code_object", 4, "linetable", 8);
	l.co_firstlineno = dbg_field(d, map->code, "code_object", 5, "firstlineno", 4);
	l.co_code_adaptive = dbg_field(d, map->code, "code_object", 9, "co_code_adaptive", 0);
	/* not in the block: _co_firsttraceable (int) and co_extra (pointer) end the header before
	 * co_code_adaptive in 3.12-3.14 default builds (measured on pyenv 3.13.0, Debian 3.13/3.14) */
	l.co_firsttraceable = l.co_code_adaptive >= 16 ? l.co_code_adaptive - 16 : PF_NONE;
	/* pyobject: size, ob_type; type_object: size, tp_name */
	l.ob_type = dbg_field(d, map->pyobject, "pyobject", 1, "ob_type", 8);
	l.tp_name = dbg_field(d, map->type, "type_object", 1, "tp_name", 8);
	/* bytes_object: size, ob_size, ob_sval */
	l.ob_size = dbg_field(d, map->bytes, "bytes_object", 1, "ob_size", 8);
	l.bytes_sval = dbg_field(d, map->bytes, "bytes_object", 2, "ob_sval", 0);
	/* unicode_object: size, state, length, asciiobject_size */
	l.str_state = dbg_field(d, map->unicode, "unicode_object", 1, "state", 4);
	l.str_length = dbg_field(d, map->unicode, "unicode_object", 2, "length", 8);
	{
		uint64_t ascii = pf_u64(block, map->unicode + 24);
		uint64_t usize = pf_u64(block, map->unicode);

		if (ascii < 24 || ascii > usize || ascii > 4096)
			dbg_fail(d, "'unicode_object.asciiobject_size' %" PRIu64 " is no header size "
				 "inside the %" PRIu64 "-byte struct the target declares", ascii, usize);
		l.str_ascii_size = (uint32_t) ascii;
		/* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.12+) */
		l.str_compact_size = (uint32_t) ascii + 16;
	}
	/* interpreter_state: size, id, next, threads_head, (3.14: threads_main), gc, imports_modules;
	 * ht_cached_keys is not in the block: 880 in pyenv 3.13.0, Debian 3.13 and 3.14 (measured) */
	l.objs = PY_OBJS_313;
	l.is_modules = dbg_field(d, map->interp, "interpreter_state", minor >= 14 ? 6 : 5,
				 "imports_modules", 8);
	l.ht_cached_keys = 880;
	dbg_gil(block, map, minor, &l);
	dbg_gc(block, map, minor, &l);
	dbg_code_gen(block, map, minor, &l);
	l.str_kind_shift = 2;
	l.str_compact_bit = 5;
	l.str_ascii_bit = 6;
	l.str_ready_bit = PF_NONE;

	*ret = l;
}

int layout_from_debug_offsets(const void *block, size_t len, struct py_layout *ret,
			      char *why, size_t why_size)
{
	const struct dbg_map *map = NULL;
	struct dbg_reader d = { .b = block, .why = why, .why_size = why_size };
	struct py_layout l;
	int minor, r;

	if (why && why_size)
		why[0] = '\0';
	r = dbg_header(&d, len, &map, &minor);
	if (r < 0)
		return r;
	dbg_layout(&d, map, minor, &l);
	if (d.err)
		return d.err;
	if (l.co_code_adaptive < l.co_linetable)
		dbg_fail(&d, "'code_object.co_code_adaptive' offset %u lies before 'linetable' (%u)",
			 l.co_code_adaptive, l.co_linetable);
	else if (l.ob_size >= l.co_size)
		dbg_fail(&d, "'bytes_object.ob_size' offset %u lies outside the %u-byte code object "
			 "the target declares", l.ob_size, l.co_size);
	if (d.err)
		return d.err;
	*ret = l;
	return 0;
}

/* ---- selection ---- */

int layout_select(const struct remote_mem *mem, int major, int minor, uint64_t runtime_addr,
		  struct py_layout *ret, char *why, size_t why_size)
{
	unsigned char block[PY_DEBUG_OFFSETS_MAX];
	char reason[PF_WHY_MAX];
	const struct py_layout *st;
	int r;

	if (major != 3 || minor < 8)
		return -ENOTSUP;
	if (minor >= 13) {
		if (!runtime_addr)
			return -ENOTSUP;
		r = mem->read(mem->ctx, runtime_addr, block, sizeof(block));
		if (r < 0)
			return r;
		r = layout_from_debug_offsets(block, sizeof(block), ret, reason, sizeof(reason));
		if (r == 0)
			r = layout_check(ret, reason, sizeof(reason));
		if (r == -EINVAL) {
			if (why && why_size)
				snprintf(why, why_size, "%s: the target's _Py_DebugOffsets is corrupt",
					 reason);
			return -EBADMSG;
		}
		return r;
	}
	st = layout_static(major, minor);
	if (!st)
		return -ENOTSUP;
	if (layout_check(st, reason, sizeof(reason)) < 0) {
		/* never: test_layout checks every table */
		if (why && why_size)
			snprintf(why, why_size, "%s: hwspy's own 3.%d table is wrong", reason, minor);
		return -EBADMSG;
	}
	*ret = *st;
	return 0;
}

/* ---- the one check of a layout ---- */

enum lc_obj { LC_TSTATE, LC_FRAME, LC_CODE, LC_BYTES, LC_STR_SHORT, LC_STR };

struct lc_field {
	const char *name;       /* as _Py_DebugOffsets names it */
	size_t at;              /* offsetof(struct py_layout, ...) */
	unsigned width;
	enum lc_obj obj;
	bool optional;          /* PF_NONE allowed: the walker tests for it */
};

#define LC(n, f, w, o, opt) { n, offsetof(struct py_layout, f), w, o, opt }

/* Every offset the walker indexes one of its own copies with. The header sizes come first:
 * they bound the copies the fields after them index. */
static const struct lc_field lc_fields[] = {
	LC("bytes_object.ob_sval", bytes_sval, 0, LC_BYTES, false),
	LC("unicode_object.asciiobject_size", str_ascii_size, 0, LC_STR, false),
	LC("thread_state.next", ts_next, 8, LC_TSTATE, false),
	LC("thread_state.interp", ts_interp, 8, LC_TSTATE, false),
	LC("thread_state.current_frame", ts_frame, 8, LC_TSTATE, true),
	LC("thread_state.cframe", ts_cframe, 8, LC_TSTATE, true),
	LC("thread_state.thread_id", ts_thread_id, 8, LC_TSTATE, false),
	LC("thread_state.native_thread_id", ts_native_thread_id, 8, LC_TSTATE, true),
	LC("interpreter_frame.previous", fr_previous, 8, LC_FRAME, false),
	LC("interpreter_frame.executable", fr_code, 8, LC_FRAME, false),
	LC("interpreter_frame.owner", fr_owner, 1, LC_FRAME, true),
	LC("interpreter_frame.is_entry", fr_is_entry, 1, LC_FRAME, true),
	LC("interpreter_frame.f_gen", fr_gen, 8, LC_FRAME, true),
	LC("pyobject.ob_type", ob_type, 8, LC_CODE, false),
	LC("bytes_object.ob_size", ob_size, 8, LC_CODE, false),
	LC("code_object.filename", co_filename, 8, LC_CODE, false),
	LC("code_object.name", co_name, 8, LC_CODE, false),
	LC("code_object.qualname", co_qualname, 8, LC_CODE, true),
	LC("code_object.linetable", co_linetable, 8, LC_CODE, false),
	LC("code_object.firstlineno", co_firstlineno, 4, LC_CODE, false),
	LC("code_object._co_firsttraceable", co_firsttraceable, 4, LC_CODE, true),
	LC("bytes_object.ob_size", ob_size, 8, LC_BYTES, false),
	LC("unicode_object.state", str_state, 4, LC_STR_SHORT, false),
	LC("unicode_object.length", str_length, 8, LC_STR_SHORT, false),
};

static const char *const lc_what[] = {
	[LC_TSTATE] = "a thread state",
	[LC_FRAME] = "a frame",
	[LC_CODE] = "a code object",
	[LC_BYTES] = "a bytes object's header",
	[LC_STR_SHORT] = "an ASCII str object's header",
	[LC_STR] = "a str object's header",
};

static uint32_t lc_u32(const struct py_layout *l, size_t at)
{
	uint32_t v;

	memcpy(&v, (const char *) l + at, sizeof(v));
	return v;
}

/* The bytes the walker copies of obj (walk.c, code.c). */
static uint64_t lc_len(const struct py_layout *l, enum lc_obj obj)
{
	switch (obj) {
	case LC_TSTATE:
		return l->ts_size < PF_TSTATE_READ_MAX ? l->ts_size : PF_TSTATE_READ_MAX;
	case LC_FRAME:
		return PF_FRAME_READ_MAX;
	case LC_CODE:
		return l->co_size;
	case LC_BYTES:
		return l->bytes_sval;
	case LC_STR_SHORT:
		return l->str_ascii_size;
	default:
		return PF_STR_HEAD_MAX;
	}
}

static int lc_fail(char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int lc_fail(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	if (why && why_size) {
		va_start(ap, fmt);
		(void) vsnprintf(why, why_size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int layout_check(const struct py_layout *l, char *why, size_t why_size)
{
	const uint32_t bits[] = { l->str_compact_bit, l->str_ascii_bit, l->str_ready_bit };
	size_t i;

	if (why && why_size)
		why[0] = '\0';
	if (l->frames != PY_FRAMES_OBJECT && l->frames != PY_FRAMES_INTERP)
		return lc_fail(why, why_size, "its frame kind %d is unknown", (int) l->frames);
	if (l->co_size > PF_CODE_READ_MAX)
		return lc_fail(why, why_size, "'code_object.size' %u is over the %u bytes hwspy "
			       "reads of a code object", l->co_size, PF_CODE_READ_MAX);
	if (l->bytes_sval > PF_BYTES_HEAD_MAX)
		return lc_fail(why, why_size, "'bytes_object.ob_sval' offset %u lies outside the "
			       "%u bytes hwspy reads of a bytes object's header", l->bytes_sval,
			       PF_BYTES_HEAD_MAX);
	for (i = 0; i < sizeof(lc_fields) / sizeof(lc_fields[0]); i++) {
		const struct lc_field *f = &lc_fields[i];
		uint64_t off = lc_u32(l, f->at), len = lc_len(l, f->obj);

		if (off == PF_NONE && f->optional)
			continue;
		if (off + f->width > len)
			return lc_fail(why, why_size, "'%s' offset %" PRIu64 " lies outside the %"
				       PRIu64 " bytes hwspy reads of %s", f->name, off, len,
				       lc_what[f->obj]);
	}
	/* f_lasti (int) up to 3.10, instr_ptr / prev_instr (a pointer) after */
	{
		uint64_t off = l->fr_instr, width = l->frames == PY_FRAMES_OBJECT ? 4 : 8;

		if (off + width > PF_FRAME_READ_MAX)
			return lc_fail(why, why_size, "'interpreter_frame.instr_ptr' offset %" PRIu64
				       " lies outside the %u bytes hwspy reads of a frame", off,
				       PF_FRAME_READ_MAX);
	}
	/* the compact header (and a legacy str's data pointer after it): asciiobject_size + 16
	 * from 3.12 on */
	if ((uint64_t) l->str_compact_size + 8 > PF_STR_HEAD_MAX)
		return lc_fail(why, why_size, "'unicode_object.asciiobject_size' %u leaves a compact "
			       "str header of %u bytes, over the %u hwspy reads", l->str_ascii_size,
			       l->str_compact_size + 8, PF_STR_HEAD_MAX);
	if (l->ts_frame == PF_NONE && l->ts_cframe == PF_NONE)
		return lc_fail(why, why_size, "'thread_state.current_frame' is missing");
	if (l->ts_cframe != PF_NONE && l->cf_current_frame == PF_NONE)
		return lc_fail(why, why_size, "'cframe.current_frame' is missing");
	if (l->str_ascii_size > l->str_compact_size)
		return lc_fail(why, why_size, "'unicode_object.asciiobject_size' %u is over the "
			       "compact header's %u", l->str_ascii_size, l->str_compact_size);
	/* state bits: kind is 3 bits from str_kind_shift */
	if (l->str_kind_shift > 29)
		return lc_fail(why, why_size, "'unicode_object.state' kind bits from %u lie outside "
			       "its 32 bits", l->str_kind_shift);
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (bits[i] > 31 && !(i == 2 && bits[i] == PF_NONE))
			return lc_fail(why, why_size, "'unicode_object.state' bit %u lies outside "
				       "its 32 bits", bits[i]);
	return 0;
}
