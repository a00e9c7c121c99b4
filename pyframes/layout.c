/*
 * layout: the one selection point between the per-version tables (3.8-3.12) and the target's
 * own _Py_DebugOffsets (3.13+).
 */
#include <errno.h>
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
	uint32_t runtime, interp, thread, frame, code, pyobject, type, bytes, unicode;
};

static const struct dbg_map dbg_maps[] = {
	{ .minor = 13, .total = 584, .runtime = 24, .interp = 48, .thread = 152, .frame = 224,
	  .code = 272, .pyobject = 352, .type = 368, .bytes = 512, .unicode = 536 },
	{ .minor = 14, .total = 760, .runtime = 24, .interp = 48, .thread = 176, .frame = 248,
	  .code = 312, .pyobject = 400, .type = 416, .bytes = 592, .unicode = 616 },
};

#define DBG_STRUCT_MAX (16u << 20)   /* no CPython struct is near 16 MiB */

struct dbg_reader {
	const unsigned char *b;
	int err;
};

/* Field i (1-based, after the size) of the section at sec, checked to leave width bytes
 * inside the struct size. */
static uint32_t dbg_field(struct dbg_reader *d, uint32_t sec, unsigned i, unsigned width)
{
	uint64_t size = pf_u64(d->b, sec), off = pf_u64(d->b, sec + 8 * i);

	if (size == 0 || size > DBG_STRUCT_MAX || off > size || size - off < width) {
		d->err = -EINVAL;
		return 0;
	}
	return (uint32_t) off;
}

static uint32_t dbg_size(struct dbg_reader *d, uint32_t sec)
{
	uint64_t size = pf_u64(d->b, sec);

	if (size == 0 || size > DBG_STRUCT_MAX) {
		d->err = -EINVAL;
		return 0;
	}
	return (uint32_t) size;
}

int layout_from_debug_offsets(const void *block, size_t len, struct py_layout *ret)
{
	const struct dbg_map *map = NULL;
	struct dbg_reader d = { .b = block };
	struct py_layout l;
	uint64_t version;
	unsigned i;
	int major, minor;

	if (len < 24 || memcmp(block, "xdebugpy", 8) != 0)
		return -EINVAL;
	version = pf_u64(block, 8);
	major = (int) ((version >> 24) & 0xff);
	minor = (int) ((version >> 16) & 0xff);
	if (major != 3 || (version >> 32) != 0)
		return -EINVAL;
	for (i = 0; i < sizeof(dbg_maps) / sizeof(dbg_maps[0]); i++)
		if (dbg_maps[i].minor == minor)
			map = &dbg_maps[i];
	if (!map)
		return minor >= 13 ? -ENOTSUP : -EINVAL;
	if (len < map->total)
		return -EINVAL;
	if (pf_u64(block, 16) > 1)
		return -EINVAL;
	if (pf_u64(block, 16) != 0)
		return -ENOTSUP;   /* free-threaded build */

	memset(&l, 0, sizeof(l));
	l.major = major;
	l.minor = minor;
	l.frames = PY_FRAMES_INTERP;
	l.lines = PY_LINES_LOCATIONS;
	l.from_debug_offsets = true;

	/* runtime_state: size, finalizing, interpreters_head */
	l.rt_interp_head = dbg_field(&d, map->runtime, 2, 8);
	/* interpreter_state: size, id, next, threads_head, ... */
	l.is_next = dbg_field(&d, map->interp, 2, 8);
	l.is_threads_head = dbg_field(&d, map->interp, 3, 8);
	/* thread_state: size, prev, next, interp, current_frame, thread_id, native_thread_id */
	l.ts_size = dbg_size(&d, map->thread);
	l.ts_next = dbg_field(&d, map->thread, 2, 8);
	l.ts_interp = dbg_field(&d, map->thread, 3, 8);
	l.ts_frame = dbg_field(&d, map->thread, 4, 8);
	l.ts_thread_id = dbg_field(&d, map->thread, 5, 8);
	l.ts_native_thread_id = dbg_field(&d, map->thread, 6, 8);
	l.ts_cframe = PF_NONE;
	l.cf_current_frame = PF_NONE;
	/* interpreter_frame: size, previous, executable, instr_ptr, localsplus, owner */
	l.fr_size = dbg_size(&d, map->frame);
	l.fr_previous = dbg_field(&d, map->frame, 1, 8);
	l.fr_code = dbg_field(&d, map->frame, 2, 8);
	l.fr_instr = dbg_field(&d, map->frame, 3, 8);
	l.fr_owner = dbg_field(&d, map->frame, 5, 1);
	l.fr_is_entry = PF_NONE;
	l.fr_gen = PF_NONE;
	/* 3.14 f_executable is a _PyStackRef whose low bits are tags */
	l.fr_code_mask = minor >= 14 ? ~(uint64_t) 7 : ~(uint64_t) 0;
	/* 3.13 FRAME_OWNED_BY_CSTACK = 3; 3.14 FRAME_OWNED_BY_INTERPRETER = 3, CSTACK = 4 */
	l.owner_cstack_min = 3;
	l.owner_generator = 1;
	/* code_object: size, filename, name, qualname, linetable, firstlineno, ..., co_code_adaptive */
	l.co_size = dbg_size(&d, map->code);
	l.co_filename = dbg_field(&d, map->code, 1, 8);
	l.co_name = dbg_field(&d, map->code, 2, 8);
	l.co_qualname = dbg_field(&d, map->code, 3, 8);
	l.co_linetable = dbg_field(&d, map->code, 4, 8);
	l.co_firstlineno = dbg_field(&d, map->code, 5, 4);
	l.co_code_adaptive = dbg_field(&d, map->code, 9, 0);
	l.co_firsttraceable = PF_NONE;
	/* pyobject: size, ob_type; type_object: size, tp_name */
	l.ob_type = dbg_field(&d, map->pyobject, 1, 8);
	l.tp_name = dbg_field(&d, map->type, 1, 8);
	/* bytes_object: size, ob_size, ob_sval */
	l.ob_size = dbg_field(&d, map->bytes, 1, 8);
	l.bytes_sval = dbg_field(&d, map->bytes, 2, 0);
	/* unicode_object: size, state, length, asciiobject_size */
	l.str_state = dbg_field(&d, map->unicode, 1, 4);
	l.str_length = dbg_field(&d, map->unicode, 2, 8);
	{
		uint64_t ascii = pf_u64(block, map->unicode + 24);
		uint64_t usize = pf_u64(block, map->unicode);

		if (ascii < 24 || ascii > usize || ascii > 4096)
			d.err = -EINVAL;
		l.str_ascii_size = (uint32_t) ascii;
		/* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.12+) */
		l.str_compact_size = (uint32_t) ascii + 16;
	}
	l.str_kind_shift = 2;
	l.str_compact_bit = 5;
	l.str_ascii_bit = 6;
	l.str_ready_bit = PF_NONE;

	if (d.err)
		return d.err;
	/* the walker reads whole frames and the code header in one go: keep them sane */
	if (l.fr_size > 4096 || l.co_size > 4096 || l.ts_size > 64 * 1024)
		return -EINVAL;
	if (l.co_code_adaptive < l.co_linetable || l.ob_size >= l.co_size)
		return -EINVAL;
	*ret = l;
	return 0;
}
