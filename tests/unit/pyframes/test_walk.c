/*
 * walk.c: thread state lookup and frame walks over synthetic CPython memory laid out with the
 * real 3.8 / 3.11 / 3.12 tables: names, lines, entry flags (3.11 is_entry, 3.12 shim frames,
 * <=3.10 every frame), truncation, loops, bad pointers mid-walk, non-code objects, too-deep
 * chains, the checks of a walk over a running thread (--nonblocking), code-cache reuse of
 * an address (noticed on the very next walk, with and without a readv in the reader; one readv
 * per walk, neighbouring headers read through one range), and walks of captured frames (the
 * capture spec per version, the stack as captured though the thread ran on, captures cut short,
 * frames no longer mapped, bad captures).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pyframes/pyframes_internal.h"
#include "split_capture.h"

#define BASE 0x100000ull
#define SIZE (1ull << 20)
#define TID 1234

struct fake {
	unsigned char *mem;
	uint64_t next;              /* bump allocator */
	unsigned readv_calls, readv_ranges;
	/* the thread running on: at read number poke_at, before it copies, *poke_addr = poke_val */
	unsigned reads, poke_at;
	uint64_t poke_addr, poke_val;
	/* ... and at the first read that starts at pokes[i].on, *pokes[i].addr = pokes[i].val */
	struct poke {
		uint64_t on, addr, val;
	} pokes[4];
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	if (++f->reads == f->poke_at)
		memcpy(f->mem + (f->poke_addr - BASE), &f->poke_val, 8);
	for (size_t i = 0; i < sizeof(f->pokes) / sizeof(f->pokes[0]); i++)
		if (f->pokes[i].on && f->pokes[i].on == addr) {
			memcpy(f->mem + (f->pokes[i].addr - BASE), &f->pokes[i].val, 8);
			f->pokes[i].on = 0;
		}
	if (addr < BASE || addr + len > BASE + SIZE || addr + len < addr)
		return -EFAULT;
	memcpy(buf, f->mem + (addr - BASE), len);
	return 0;
}

/* as process_vm_readv: the ranges in order, up to the first unreadable one */
static int fake_readv(void *ctx, const struct remote_range *r, size_t n)
{
	struct fake *f = ctx;
	size_t i;

	assert_true(n >= 1 && n <= REMOTE_MEM_READV_MAX);
	f->readv_calls++;
	f->readv_ranges += (unsigned) n;
	for (i = 0; i < n; i++)
		if (fake_read(ctx, r[i].addr, r[i].buf, r[i].len) < 0)
			break;
	return (int) i;
}

static uint64_t alloc(struct fake *f, size_t n)
{
	uint64_t a = f->next;

	f->next += (n + 15) & ~(size_t) 15;
	assert_true(f->next <= BASE + SIZE);
	return a;
}

static void put8(struct fake *f, uint64_t a, uint8_t v) { f->mem[a - BASE] = v; }
static void put32(struct fake *f, uint64_t a, uint32_t v) { memcpy(f->mem + (a - BASE), &v, 4); }
static void put64(struct fake *f, uint64_t a, uint64_t v) { memcpy(f->mem + (a - BASE), &v, 8); }

struct world {
	struct fake f;
	struct remote_mem rm;
	const struct py_layout *l;
	uint64_t runtime, interp, tstate, type;
	struct pyframes *pf;
};

static uint64_t mk_str(struct world *w, const char *s)
{
	const struct py_layout *l = w->l;
	size_t n = strlen(s);
	uint64_t a = alloc(&w->f, l->str_ascii_size + n + 1);
	uint32_t st = 1u << l->str_kind_shift | 1u << l->str_compact_bit | 1u << l->str_ascii_bit;

	if (l->str_ready_bit != PF_NONE)
		st |= 1u << l->str_ready_bit;
	put64(&w->f, a + l->str_length, n);
	put32(&w->f, a + l->str_state, st);
	memcpy(w->f.mem + (a - BASE) + l->str_ascii_size, s, n);
	return a;
}

static uint64_t mk_bytes(struct world *w, const uint8_t *b, size_t n)
{
	uint64_t a = alloc(&w->f, w->l->bytes_sval + n + 1);

	put64(&w->f, a + w->l->ob_size, n);
	memcpy(w->f.mem + (a - BASE) + w->l->bytes_sval, b, n);
	return a;
}

/* A code object at first_line whose lines are first+1 for the first 4 units (8 bytes) and
 * first+3 after. */
static uint64_t mk_code(struct world *w, const char *name, int first_line)
{
	static const uint8_t lnotab[] = { 0, 1, 8, 2 };
	static const uint8_t locs[] = { 0xdb, 0, 0, 0xe3, 0, 0 };
	const struct py_layout *l = w->l;
	size_t size = l->co_code_adaptive != PF_NONE ? l->co_code_adaptive + 16 : l->co_size;
	uint64_t a = alloc(&w->f, size);

	static uint32_t versions;

	put64(&w->f, a + l->ob_type, w->type);
	put64(&w->f, a + l->ob_size, 8);
	put32(&w->f, a + l->co_firstlineno, (uint32_t) first_line);
	if (pf_co_version(l) != PF_NONE)        /* 3.12+: a counter's, as CPython sets it */
		put32(&w->f, a + pf_co_version(l), ++versions);
	put64(&w->f, a + l->co_name, mk_str(w, name));
	if (l->co_qualname != PF_NONE)
		put64(&w->f, a + l->co_qualname, mk_str(w, name));
	put64(&w->f, a + l->co_filename, mk_str(w, "t.py"));
	if (l->lines == PY_LINES_LOCATIONS)
		put64(&w->f, a + l->co_linetable, mk_bytes(w, locs, sizeof(locs)));
	else
		put64(&w->f, a + l->co_linetable, mk_bytes(w, lnotab, sizeof(lnotab)));
	return a;
}

static uint64_t get64(struct world *w, uint64_t a) { return pf_u64(w->f.mem, (uint32_t) (a - BASE)); }

/* Frame a now runs code at instruction unit idx (3.11+) / byte offset 2*idx (3.8). */
static void run_at(struct world *w, uint64_t a, uint64_t code, int idx)
{
	const struct py_layout *l = w->l;

	put64(&w->f, a + l->fr_code, code);
	if (l->frames == PY_FRAMES_OBJECT)
		put32(&w->f, a + l->fr_instr, (uint32_t) (2 * idx));
	else
		put64(&w->f, a + l->fr_instr, code + l->co_code_adaptive + 2 * (uint64_t) idx);
}

/* A frame running code at instruction unit idx (3.11+) / byte offset 2*idx (3.8). */
static uint64_t mk_frame(struct world *w, uint64_t code, int idx, uint8_t owner, bool entry)
{
	const struct py_layout *l = w->l;
	uint64_t a = alloc(&w->f, l->fr_size);

	run_at(w, a, code, idx);
	if (l->frames == PY_FRAMES_OBJECT)
		put64(&w->f, a, 1);     /* ob_refcnt: a frame the thread runs is referenced */
	if (l->frames == PY_FRAMES_INTERP) {
		put8(&w->f, a + l->fr_owner, owner);
		if (l->fr_is_entry != PF_NONE)
			put8(&w->f, a + l->fr_is_entry, entry);
	}
	return a;
}

static void link_frames(struct world *w, uint64_t from, uint64_t to)
{
	put64(&w->f, from + w->l->fr_previous, to);
}

static void world_init_layout(struct world *w, const struct py_layout *l)
{
	uint64_t name;

	memset(w, 0, sizeof(*w));
	w->l = l;
	w->f.mem = calloc(1, SIZE);
	assert_non_null(w->f.mem);
	w->f.next = BASE + 0x1000;
	w->rm.read = fake_read;
	w->rm.ctx = &w->f;
	w->runtime = alloc(&w->f, 1024);
	w->interp = alloc(&w->f, l->is_threads_head + 64);
	w->tstate = alloc(&w->f, l->ts_size);
	w->type = alloc(&w->f, 64);
	name = alloc(&w->f, 16);
	memcpy(w->f.mem + (name - BASE), "code", 5);
	put64(&w->f, w->type + l->tp_name, name);
	put64(&w->f, w->runtime + l->rt_interp_head, w->interp);
	put64(&w->f, w->interp + l->is_threads_head, w->tstate);
	put64(&w->f, w->tstate + l->ts_interp, w->interp);
	if (l->ts_native_thread_id != PF_NONE) {
		put64(&w->f, w->tstate + l->ts_native_thread_id, TID);
	} else {
		uint64_t pt = alloc(&w->f, 2048);

		put64(&w->f, w->tstate + l->ts_thread_id, pt);
		put32(&w->f, pt + 0x2d0, TID);
	}
	assert_int_equal(pyframes_new_from_layout(&w->rm, l, w->runtime, 0, 1, &w->pf), 0);
	if (l->ts_native_thread_id == PF_NONE)
		pyframes_set_pthread_tid_offset(w->pf, 0x2d0);
}

static void world_init(struct world *w, int minor)
{
	world_init_layout(w, layout_static(3, minor));
}

static void set_top(struct world *w, uint64_t frame)
{
	const struct py_layout *l = w->l;

	if (l->ts_cframe != PF_NONE) {
		uint64_t cf = alloc(&w->f, 32);

		put64(&w->f, w->tstate + l->ts_cframe, cf);
		put64(&w->f, cf + l->cf_current_frame, frame);
	} else {
		put64(&w->f, w->tstate + l->ts_frame, frame);
	}
}

static void world_free(struct world *w)
{
	pyframes_free(w->pf);
	free(w->f.mem);
}

/* f0 <- f1 <- f2 (f0 innermost); returns the code objects */
static void chain3(struct world *w, uint64_t fr[3], uint64_t co[3])
{
	co[0] = mk_code(w, "A.f0", 10);
	co[1] = mk_code(w, "f1", 20);
	co[2] = mk_code(w, "f2", 30);
	fr[0] = mk_frame(w, co[0], 1, 0, false);
	fr[1] = mk_frame(w, co[1], 5, 0, true);
	fr[2] = mk_frame(w, co[2], 0, 0, false);
	link_frames(w, fr[0], fr[1]);
	link_frames(w, fr[1], fr[2]);
	set_top(w, fr[0]);
}

static void test_walk_311(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t fr[3], co[3];
	size_t n;

	(void) state;
	world_init(&w, 11);
	chain3(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "A.f0");
	assert_string_equal(out[0].file, "t.py");
	assert_int_equal(out[0].line, 11);
	assert_int_equal(out[0].first_line, 10);
	assert_int_equal(out[0].code, co[0]);
	assert_false(out[0].entry);
	assert_string_equal(out[1].name, "f1");
	assert_int_equal(out[1].line, 23);
	assert_true(out[1].entry);
	assert_int_equal(out[2].line, 31);
	/* again: all from the code cache */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(pyframes_stats(w.pf)->code_cache_hits, 3);
	assert_int_equal(pyframes_stats(w.pf)->code_cache_misses, 3);
	/* keep the innermost 2 */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 2, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[1].name, "f1");
	assert_int_equal(pyframes_stats(w.pf)->truncated, 1);
	/* unknown thread */
	assert_int_equal(pyframes_thread_stack(w.pf, TID + 1, out, 8, &n, NULL), -ENOENT);
	assert_int_equal(pyframes_stats(w.pf)->no_thread, 1);
	/* no Python code running */
	set_top(&w, 0);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 0);
	world_free(&w);
}

static void test_walk_loop(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t fr[3], co[3];
	size_t n = 99;

	(void) state;
	world_init(&w, 11);
	chain3(&w, fr, co);
	link_frames(&w, fr[2], fr[0]);   /* f2 -> f0: a cycle */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	assert_int_equal(n, 0);
	link_frames(&w, fr[2], fr[2]);   /* a frame that is its own parent */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	assert_int_equal(pyframes_stats(w.pf)->torn, 2);
	/* the loop is found quickly, not after PF_MAX_DEPTH reads */
	assert_true(pyframes_stats(w.pf)->remote_reads < 64);
	world_free(&w);
}

static void test_walk_bad_pointers(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t fr[3], co[3];
	size_t n;

	(void) state;
	world_init(&w, 11);
	chain3(&w, fr, co);
	link_frames(&w, fr[1], 0xdead0000);              /* unmapped, mid-walk */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	link_frames(&w, fr[1], fr[2] + 3);               /* misaligned */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	link_frames(&w, fr[1], fr[2]);
	put64(&w.f, fr[2] + w.l->fr_code, w.tstate);     /* not a code object */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	put64(&w.f, fr[2] + w.l->fr_code, co[2]);
	put64(&w.f, fr[2] + w.l->fr_instr, co[2] + w.l->co_code_adaptive + 2 * 500); /* past the code */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	put8(&w.f, fr[2] + w.l->fr_owner, 9);            /* no such owner */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	assert_int_equal(pyframes_stats(w.pf)->torn, 5);
	/* the thread list itself pointing into nowhere */
	put64(&w.f, w.interp + w.l->is_threads_head, 0xdead0000);
	assert_int_equal(pyframes_thread_stack(w.pf, TID + 7, out, 8, &n, NULL), -EAGAIN);
	world_free(&w);
}

static void test_walk_too_deep(void **state)
{
	struct world w;
	struct py_frame out[8], *out_all;
	uint64_t co, prev = 0, top = 0, frames[8];
	size_t n, i;
	struct pyframes_cut cut;

	(void) state;
	world_init(&w, 11);
	co = mk_code(&w, "deep", 1);
	for (i = 0; i < PF_MAX_DEPTH + 10; i++) {
		uint64_t f = mk_frame(&w, co, 0, 0, false);

		if (i < 8)
			frames[i] = f;
		if (prev)
			link_frames(&w, prev, f);
		else
			top = f;
		prev = f;
	}
	set_top(&w, top);
	/* the innermost 8 kept, the rest counted: a stack cut at its root end, not a torn one */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, &cut), 0);
	assert_int_equal(n, 8);
	assert_string_equal(out[7].name, "deep");
	assert_int_equal(cut.n, PF_MAX_DEPTH + 10 - 8);
	assert_false(cut.more);
	assert_int_equal(pyframes_stats(w.pf)->truncated, 1);
	/* asked for more than a walk keeps: PF_MAX_DEPTH */
	out_all = calloc(PF_MAX_DEPTH + 100, sizeof(*out_all));
	assert_non_null(out_all);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out_all, PF_MAX_DEPTH + 100, &n, &cut), 0);
	assert_int_equal(n, PF_MAX_DEPTH);
	assert_int_equal(cut.n, 10);
	assert_false(cut.more);
	/* a chain of exactly what is kept: nothing cut */
	link_frames(&w, frames[7], 0);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, &cut), 0);
	assert_int_equal(n, 8);
	assert_int_equal(cut.n, 0);
	free(out_all);
	world_free(&w);
}

static void test_walk_312_shim(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t co[3], fr[3], shim, incomplete;
	size_t n;

	(void) state;
	world_init(&w, 12);
	co[0] = mk_code(&w, "inner", 10);
	co[1] = mk_code(&w, "C.middle", 20);
	co[2] = mk_code(&w, "outer", 30);
	fr[0] = mk_frame(&w, co[0], 4, 0, false);
	fr[1] = mk_frame(&w, co[1], 0, 1, false);       /* a generator's frame */
	shim = mk_frame(&w, co[2], 0, 3, false);        /* FRAME_OWNED_BY_CSTACK */
	fr[2] = mk_frame(&w, co[2], 0, 0, false);
	incomplete = mk_frame(&w, co[2], 0, 0, false);  /* pushed, RESUME not run yet */
	put64(&w.f, incomplete + w.l->fr_instr, co[2] + w.l->co_code_adaptive - 2);
	link_frames(&w, incomplete, fr[0]);
	link_frames(&w, fr[0], fr[1]);
	link_frames(&w, fr[1], shim);
	link_frames(&w, shim, fr[2]);
	set_top(&w, incomplete);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "inner");
	assert_int_equal(out[0].line, 13);
	assert_false(out[0].entry);
	assert_string_equal(out[1].name, "C.middle");
	assert_true(out[1].entry);                     /* the frame above the shim */
	assert_string_equal(out[2].name, "outer");
	assert_true(out[2].entry);                     /* the outermost frame */
	world_free(&w);
}

/* CPython's _PyFrame_IsIncomplete(): a frame before its code's _co_firsttraceable, unless a
 * generator owns it, is left out: the 3.13+ _Py_InitCleanup shim (first traceable 4 of its 3
 * units) between a class call and its __init__, and a frame in its prelude. */
static void test_walk_incomplete(void **state)
{
	static const int minors[] = { 11, 12 };
	size_t k;

	(void) state;
	for (k = 0; k < sizeof(minors) / sizeof(minors[0]); k++) {
		struct world w;
		struct py_frame out[8];
		uint64_t co_work, co_init, co_shim, co_gen, co_mod, co_pre, fr[6];
		size_t n;

		world_init(&w, minors[k]);
		co_pre = mk_code(&w, "prelude", 5);
		co_work = mk_code(&w, "work", 10);
		co_init = mk_code(&w, "A.__init__", 20);
		co_shim = mk_code(&w, "__init__", 0);
		co_gen = mk_code(&w, "gen", 30);
		co_mod = mk_code(&w, "<module>", 40);
		put64(&w.f, co_shim + w.l->ob_size, 3);
		put32(&w.f, co_shim + w.l->co_firsttraceable, 4);
		put32(&w.f, co_pre + w.l->co_firsttraceable, 2);
		put32(&w.f, co_gen + w.l->co_firsttraceable, 2);
		put32(&w.f, co_mod + w.l->co_firsttraceable, (uint32_t) -5);   /* hostile: as 0 */
		fr[0] = mk_frame(&w, co_pre, 1, 0, false);     /* MAKE_CELL before RESUME */
		fr[1] = mk_frame(&w, co_work, 1, 0, false);
		fr[2] = mk_frame(&w, co_init, 5, 0, false);
		fr[3] = mk_frame(&w, co_shim, 0, 0, false);    /* EXIT_INIT_CHECK, waiting */
		fr[4] = mk_frame(&w, co_gen, 0, 1, false);     /* a generator's: never incomplete */
		fr[5] = mk_frame(&w, co_mod, 0, 0, true);
		for (n = 0; n + 1 < 6; n++)
			link_frames(&w, fr[n], fr[n + 1]);
		set_top(&w, fr[0]);
		assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
		assert_int_equal(n, 4);
		assert_string_equal(out[0].name, "work");
		assert_string_equal(out[1].name, "A.__init__");
		assert_string_equal(out[2].name, "gen");
		assert_string_equal(out[3].name, "<module>");
		assert_true(out[3].entry);
		assert_int_equal(pyframes_stats(w.pf)->truncated, 0);  /* left out, not cut */
		world_free(&w);
	}
}

static void test_walk_38(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t fr[3], co[3];
	size_t n;

	(void) state;
	world_init(&w, 8);
	chain3(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "A.f0");
	assert_int_equal(out[0].line, 11);   /* byte offset 2 */
	assert_int_equal(out[1].line, 23);   /* byte offset 10 */
	assert_int_equal(out[2].line, 31);
	assert_true(out[0].entry && out[1].entry && out[2].entry);
	/* the thread's pthread now names another tid: the thread state is not that thread's */
	put32(&w.f, pf_u64(w.f.mem, (uint32_t) (w.tstate + w.l->ts_thread_id - BASE)) + 0x2d0, TID + 1);
	assert_int_equal(pyframes_thread_stack(w.pf, TID + 2, out, 8, &n, NULL), -ENOENT);
	assert_int_equal(pyframes_thread_stack(w.pf, TID + 1, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	world_free(&w);
}

/* The thread changes *addr to val as the next walk reads from on (a page of frames, the start
 * of the re-read of a frame's caller link, ...). */
static void poke_on(struct world *w, size_t slot, uint64_t on, uint64_t addr, uint64_t val)
{
	w->f.pokes[slot] = (struct poke) { on, addr, val };
}

/* Where the walker's page cache reads the frame at a from. */
static uint64_t page_of(uint64_t a)
{
	return a & ~(uint64_t) (PF_PAGE - 1);
}

/* A frame on a page of its own, so that a walk reads it (through the page cache) at a moment
 * of its own. */
static uint64_t mk_frame_paged(struct world *w, uint64_t code, int idx, uint8_t owner, bool entry)
{
	(void) alloc(&w->f, PF_PAGE - (w->f.next & (PF_PAGE - 1)));
	return mk_frame(w, code, idx, owner, entry);
}

/* A thread's whole chain as the interpreter leaves it: fr[0] (innermost, the thread's current
 * frame) ... fr[n - 1], each on a page of its own, the outermost an eval loop's entry (3.11:
 * is_entry; 3.12+: a shim frame below it, *ret_shim; <=3.10: f_back NULL). */
static void thread_chain(struct world *w, const uint64_t *co, uint64_t *fr, size_t n,
			 uint64_t *ret_shim)
{
	*ret_shim = 0;
	for (size_t i = 0; i < n; i++) {
		fr[i] = mk_frame_paged(w, co[i], (int) i + 1, 0, i == n - 1);
		if (i > 0)
			link_frames(w, fr[i - 1], fr[i]);
	}
	if (w->l->owner_cstack_min != PF_NONE) {
		*ret_shim = mk_frame_paged(w, co[n - 1], 0, (uint8_t) w->l->owner_cstack_min, false);
		link_frames(w, fr[n - 1], *ret_shim);
	}
	set_top(w, fr[0]);
}

/* The thread's current frame, as the walker reads it from the thread state. */
static uint64_t top_slot(struct world *w)
{
	const struct py_layout *l = w->l;

	if (l->ts_cframe != PF_NONE)
		return get64(w, w->tstate + l->ts_cframe) + l->cf_current_frame;
	return w->tstate + l->ts_frame;
}

/* Walks (verify on, then off) that are expected to give r_verify and r_plain. */
static void walk_is_at(int line, struct world *w, int r_verify, int r_plain, size_t n_plain)
{
	struct py_frame out[16];
	size_t n;
	int r;

	pyframes_set_verify(w->pf, true);
	r = pyframes_thread_stack(w->pf, TID, out, 16, &n, NULL);
	if (r != r_verify)
		fail_msg("line %d (3.%d): the verified walk gave %d, not %d", line, w->l->minor, r,
			 r_verify);
	memset(w->f.pokes, 0, sizeof(w->f.pokes));
	pyframes_set_verify(w->pf, false);
	r = pyframes_thread_stack(w->pf, TID, out, 16, &n, NULL);
	if (r != r_plain)
		fail_msg("line %d (3.%d): the plain walk gave %d, not %d", line, w->l->minor, r,
			 r_plain);
	if (r_plain == 0 && n != n_plain)
		fail_msg("line %d (3.%d): the plain walk gave %zu frames, not %zu", line,
			 w->l->minor, n, n_plain);
}
#define walk_is(...) walk_is_at(__LINE__, __VA_ARGS__)

/* 3.11+: the thread returned to fr[2] and called leaf() there while the walk read fr[0]:
 * the walk reads leaf as fr[1]'s caller; by the re-read it recursed again (fr[2] recurse),
 * or it returned further (fr[3]'s caller link another); the leaf's slot reused after the walk
 * read it; chains that end at a frame no eval loop entered from C (the walk ran into a popped
 * frame whose caller link was cleared). */
static void verify_interp_cases(struct world *w, const uint64_t *co, const uint64_t *fr,
				uint64_t shim, uint64_t leaf)
{
	const struct py_layout *l = w->l;

	poke_on(w, 0, page_of(fr[0]), fr[2] + l->fr_code, leaf);
	poke_on(w, 1, fr[0] + l->fr_previous, fr[2] + l->fr_code, co[2]);
	walk_is(w, -EAGAIN, 0, 5);
	poke_on(w, 0, fr[1] + l->fr_previous, fr[3] + l->fr_previous, fr[1]);
	walk_is(w, -EAGAIN, -EAGAIN, 0);        /* a loop now, whoever walks */
	link_frames(w, fr[3], fr[4]);
	poke_on(w, 0, fr[0] + l->fr_previous, fr[0] + l->fr_previous, fr[2]);
	walk_is(w, -EAGAIN, 0, 4);
	link_frames(w, fr[0], fr[1]);
	/* returned from fr[0] and fr[1] after the walk read them, their code cleared as 3.14
	 * clears a frame it pops: moved on, not torn */
	poke_on(w, 0, page_of(fr[4]), fr[0] + l->fr_code, 0);
	poke_on(w, 1, page_of(fr[4]), fr[1] + l->fr_code, 0);
	poke_on(w, 2, page_of(fr[4]), top_slot(w), fr[2]);
	walk_is(w, 0, 0, 3);
	run_at(w, fr[0], co[0], 1);
	run_at(w, fr[1], co[1], 2);
	set_top(w, fr[0]);
	/* ... but a frame read after it was popped so is torn */
	put64(&w->f, fr[1] + l->fr_code, 0);
	walk_is(w, -EAGAIN, -EAGAIN, 0);
	run_at(w, fr[1], co[1], 2);

	link_frames(w, fr[2], 0);
	walk_is(w, -EAGAIN, 0, 3);
	link_frames(w, fr[2], fr[3]);
	if (shim) {
		/* 3.12+: the thread's chain ends at the shim below its first frame */
		link_frames(w, fr[4], 0);
		walk_is(w, -EAGAIN, 0, 5);
		link_frames(w, fr[4], shim);
	} else {
		put8(&w->f, fr[4] + l->fr_is_entry, 0);
		walk_is(w, -EAGAIN, 0, 5);
		put8(&w->f, fr[4] + l->fr_is_entry, 1);
	}
	walk_is(w, 0, 0, 5);
}

/* 3.8-3.10: frame objects, freed on return (count 0; onto the free list, f_back its link, or
 * kept as their code's zombie frame) and taken by later calls. Torn: a frame read after it was
 * freed (the walk would end recurse;recurse;recurse;recurse with no <module>, through the free
 * list). */
static void verify_object_cases(struct world *w, const uint64_t *co, const uint64_t *fr)
{
	uint64_t freed[2];

	freed[0] = mk_frame_paged(w, co[0], 3, 0, false);
	freed[1] = mk_frame_paged(w, co[0], 3, 0, false);
	put64(&w->f, freed[0], 0);
	put64(&w->f, freed[1], 0);
	link_frames(w, freed[0], freed[1]);
	put64(&w->f, fr[1], 0);
	link_frames(w, fr[1], freed[0]);
	walk_is(w, -EAGAIN, 0, 4);
	/* ... freed as the walk reads fr[0] */
	put64(&w->f, fr[1], 1);
	link_frames(w, fr[1], fr[2]);
	poke_on(w, 0, page_of(fr[0]), fr[1], 0);
	poke_on(w, 1, page_of(fr[0]), fr[1] + w->l->fr_previous, freed[0]);
	walk_is(w, -EAGAIN, 0, 4);
	put64(&w->f, fr[1], 1);
	link_frames(w, fr[1], fr[2]);
	walk_is(w, 0, 0, 5);
}

/* --nonblocking walks (verify on) of a running thread, as seen with a recursion that returns
 * and re-enters fast (tests/targets/recurse.py): the frames read must form a stack the thread
 * had (the cases per frame kind above). Not torn: the thread moving on meanwhile (called into
 * a new frame; returned from frames the walk read, their memory not reused). Torn: a
 * generator's frame outermost (read after it yielded, its caller link cleared). Without
 * verify (a stopped thread) every one of them walks. */
static void verify_cases(int minor)
{
	struct world w;
	struct py_frame out[16];
	uint64_t co[5], fr[5], shim, moved, leaf;
	size_t n;

	world_init(&w, minor);
	co[0] = mk_code(&w, "recurse", 10);
	co[1] = co[2] = co[0];
	co[3] = mk_code(&w, "loop", 20);
	co[4] = mk_code(&w, "<module>", 30);
	leaf = mk_code(&w, "leaf", 40);
	thread_chain(&w, co, fr, 5, &shim);
	/* whole and still: a stack */
	walk_is(&w, 0, 0, 5);
	pyframes_set_verify(w.pf, true);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 16, &n, NULL), 0);
	assert_int_equal(n, 5);
	assert_string_equal(out[0].name, "recurse");
	assert_string_equal(out[4].name, "<module>");

	if (w.l->frames == PY_FRAMES_INTERP)
		verify_interp_cases(&w, co, fr, shim, leaf);
	else
		verify_object_cases(&w, co, fr);

	/* the thread moved on as the walk read its outermost frame: called into a new frame,
	 * or returned from fr[0] and fr[1] (<=3.10: freed) */
	moved = mk_frame_paged(&w, leaf, 0, 0, false);
	link_frames(&w, moved, fr[0]);
	poke_on(&w, 0, fr[4], top_slot(&w), moved);
	walk_is(&w, 0, 0, 6);                   /* the plain walk starts at moved */
	set_top(&w, fr[0]);
	poke_on(&w, 0, fr[4], top_slot(&w), fr[2]);
	if (w.l->frames == PY_FRAMES_OBJECT) {
		poke_on(&w, 1, fr[4], fr[0], 0);
		poke_on(&w, 2, fr[4], fr[1], 0);
		poke_on(&w, 3, fr[4], fr[1] + w.l->fr_previous, 0);
	}
	walk_is(&w, 0, 0, 3);
	set_top(&w, fr[0]);
	if (w.l->frames == PY_FRAMES_OBJECT) {
		put64(&w.f, fr[0], 1);
		put64(&w.f, fr[1], 1);
		link_frames(&w, fr[1], fr[2]);
		walk_is(&w, 0, 0, 5);
	}

	/* a generator's frame outermost: read after it yielded, its caller link cleared */
	link_frames(&w, fr[1], 0);
	if (w.l->fr_gen != PF_NONE)
		put64(&w.f, fr[1] + w.l->fr_gen, 0x4242);
	else
		put8(&w.f, fr[1] + w.l->fr_owner, (uint8_t) w.l->owner_generator);
	walk_is(&w, -EAGAIN, 0, 2);
	world_free(&w);
}

static void test_walk_verify(void **state)
{
	(void) state;
	verify_cases(8);
	verify_cases(9);
	verify_cases(10);
	verify_cases(11);
	verify_cases(12);
}

/* The re-read of a verified walk: one readv for the frames' links (two ranges each) where the
 * reader has one, whatever the depth; the innermost PF_MAX_DEPTH frames of a deeper chain. */
static void test_walk_verify_reads(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t co, prev = 0, top = 0, f = 0;
	size_t n, i;

	(void) state;
	world_init(&w, 11);
	w.rm.readv = fake_readv;
	co = mk_code(&w, "rec", 1);
	for (i = 0; i < 40; i++) {
		f = mk_frame(&w, co, 0, 0, i == 39);
		if (prev)
			link_frames(&w, prev, f);
		else
			top = f;
		prev = f;
	}
	set_top(&w, top);
	pyframes_set_verify(w.pf, true);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	w.f.readv_calls = w.f.readv_ranges = 0;
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 8);
	/* the code check (one range), the frames' links (80 ranges) */
	assert_int_equal(w.f.readv_calls, 2);
	assert_int_equal(w.f.readv_ranges, 1 + 2 * 40);
	/* an outer frame changed after the walk read it, past the 8 kept: still torn */
	poke_on(&w, 0, top + w.l->fr_previous, f + w.l->fr_code, co + 8);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	world_free(&w);
}

static uint64_t walk_misses(struct world *w)
{
	return pyframes_stats(w->pf)->code_cache_misses;
}

/* A code object freed and its address taken by another one is named afresh on the very next
 * walk, whichever identifying field differs; with and without the reader's readv. */
static void code_reuse_cases(int minor, bool readv)
{
	struct world w;
	struct py_frame out[8];
	uint64_t fr[3], co[3], misses;
	uint32_t name_off;
	size_t n;

	world_init(&w, minor);
	if (readv)
		w.rm.readv = fake_readv;
	name_off = w.l->co_qualname != PF_NONE ? w.l->co_qualname : w.l->co_name;
	chain3(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_string_equal(out[0].name, "A.f0");
	assert_int_equal(walk_misses(&w), 3);
	/* another function at co[0]'s address */
	put64(&w.f, co[0] + name_off, mk_str(&w, "B.other"));
	put32(&w.f, co[0] + w.l->co_firstlineno, 100);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "B.other");
	assert_int_equal(out[0].line, 101);
	assert_string_equal(out[1].name, "f1");
	assert_string_equal(out[2].name, "f2");
	assert_int_equal(walk_misses(&w), 4);
	/* only the file differs */
	put64(&w.f, co[2] + w.l->co_filename, mk_str(&w, "u.py"));
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_string_equal(out[2].file, "u.py");
	assert_int_equal(walk_misses(&w), 5);
	/* only the first line differs */
	put32(&w.f, co[1] + w.l->co_firstlineno, 40);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(out[1].first_line, 40);
	assert_int_equal(out[1].line, 43);
	assert_int_equal(walk_misses(&w), 6);
	/* only the line table differs */
	put64(&w.f, co[1] + w.l->co_linetable, pf_u64(w.f.mem, (uint32_t) (co[0] + w.l->co_linetable - BASE)));
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(walk_misses(&w), 7);
	if (w.l->co_code_adaptive != PF_NONE) {
		/* only the code size differs */
		put64(&w.f, co[2] + w.l->ob_size, 9);
		assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
		assert_int_equal(walk_misses(&w), 8);
		/* a reused address whose code is shorter than the running instruction: torn */
		put64(&w.f, co[1] + name_off, mk_str(&w, "tiny"));
		put64(&w.f, fr[1] + w.l->fr_instr, co[1] + w.l->co_code_adaptive + 2 * 50);
		assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
		put64(&w.f, co[1] + w.l->ob_size, 100);
		assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
		assert_string_equal(out[1].name, "tiny");
	}
	/* no longer a code object at all: torn, then fine again */
	put64(&w.f, co[2] + w.l->ob_type, w.tstate);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	put64(&w.f, co[2] + w.l->ob_type, w.type);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	/* nothing changed: all hits, and with readv all three checked in one call */
	misses = walk_misses(&w);
	w.f.readv_calls = w.f.readv_ranges = 0;
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(walk_misses(&w), misses);
	assert_int_equal(w.f.readv_calls, readv ? 1 : 0);
	assert_int_equal(w.f.readv_ranges, readv ? 1 : 0);   /* the three lie on one page */
	world_free(&w);
}

static void test_code_reuse(void **state)
{
	(void) state;
	code_reuse_cases(11, false);
	code_reuse_cases(11, true);
	code_reuse_cases(8, false);
	code_reuse_cases(8, true);
	code_reuse_cases(12, true);
}

/* One readv per walk however deep the recursion: each code object is checked once. */
static void test_code_validate_recursion(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t rec, prev = 0, top = 0, reads;
	size_t n, i;

	(void) state;
	world_init(&w, 11);
	w.rm.readv = fake_readv;
	rec = mk_code(&w, "rec", 1);
	for (i = 0; i < 10; i++) {
		uint64_t f = mk_frame(&w, rec, 0, 0, false);

		if (prev)
			link_frames(&w, prev, f);
		else
			top = f;
		prev = f;
	}
	set_top(&w, top);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 8);
	reads = pyframes_stats(w.pf)->remote_reads;
	w.f.readv_calls = w.f.readv_ranges = 0;
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(w.f.readv_calls, 1);
	assert_int_equal(w.f.readv_ranges, 1);
	/* the walk's own reads (thread state, frames) plus the one readv */
	assert_true(pyframes_stats(w.pf)->remote_reads - reads <= 4);
	world_free(&w);
}

/* Code objects on one page, or on neighbouring pages, are checked through one range; one far
 * away through a range of its own. A change to any of them shows on the next walk. */
static void test_code_validate_ranges(void **state)
{
	struct world w;
	struct py_frame out[8];
	uint64_t co[4], fr[4];
	size_t n, i;

	(void) state;
	world_init(&w, 11);
	w.rm.readv = fake_readv;
	co[0] = mk_code(&w, "a", 10);
	co[1] = mk_code(&w, "b", 20);
	(void) alloc(&w.f, 3 * PF_PAGE);
	co[2] = mk_code(&w, "c", 30);
	(void) alloc(&w.f, 3 * PF_PAGE);
	co[3] = mk_code(&w, "d", 40);
	for (i = 0; i < 4; i++) {
		fr[i] = mk_frame(&w, co[i], 0, 0, false);
		if (i > 0)
			link_frames(&w, fr[i - 1], fr[i]);
	}
	set_top(&w, fr[0]);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	w.f.readv_calls = w.f.readv_ranges = 0;
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(w.f.readv_calls, 1);
	assert_int_equal(w.f.readv_ranges, 3);
	put64(&w.f, co[1] + w.l->co_qualname, mk_str(&w, "b2"));
	put64(&w.f, co[3] + w.l->co_qualname, mk_str(&w, "d2"));
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 4);
	assert_string_equal(out[0].name, "a");
	assert_string_equal(out[1].name, "b2");
	assert_string_equal(out[2].name, "c");
	assert_string_equal(out[3].name, "d2");
	assert_int_equal(pyframes_stats(w.pf)->code_cache_misses, 6);
	world_free(&w);
}

/* More code objects than one round checks: several readv calls, far fewer ranges than code
 * objects, and a change in the middle still seen at once. */
static void test_code_validate_many(void **state)
{
	struct world w;
	struct py_frame *out;
	uint64_t prev = 0, top = 0, mid = 0;
	size_t n, i, distinct = 300;

	(void) state;
	out = calloc(distinct, sizeof(*out));
	assert_non_null(out);
	world_init(&w, 11);
	w.rm.readv = fake_readv;
	for (i = 0; i < distinct; i++) {
		char name[16];
		uint64_t co, f;

		snprintf(name, sizeof(name), "g%zu", i);
		co = mk_code(&w, name, (int) i + 1);
		f = mk_frame(&w, co, 0, 0, false);
		if (prev)
			link_frames(&w, prev, f);
		else
			top = f;
		if (i == distinct / 2)
			mid = co;
		prev = f;
	}
	set_top(&w, top);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, distinct, &n, NULL), 0);
	assert_int_equal(n, distinct);
	w.f.readv_calls = w.f.readv_ranges = 0;
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, distinct, &n, NULL), 0);
	assert_true(w.f.readv_calls >= 2 && w.f.readv_calls <= 8);
	assert_true(w.f.readv_ranges < distinct / 4);
	assert_int_equal(pyframes_stats(w.pf)->code_cache_misses, distinct);
	put64(&w.f, mid + w.l->co_qualname, mk_str(&w, "middle"));
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, distinct, &n, NULL), 0);
	assert_string_equal(out[distinct / 2].name, "middle");
	assert_string_equal(out[distinct / 2 - 1].name, "g149");
	assert_string_equal(out[distinct - 1].name, "g299");
	assert_int_equal(pyframes_stats(w.pf)->code_cache_misses, distinct + 1);
	world_free(&w);
	free(out);
}

/* ---- captured walks ---- */

#define STRIDE (8 + PYFRAMES_CAPTURE_FRAME_MAX)
#define GONE   0x10000ull   /* below BASE: reads fail there, as in memory freed since */

static struct pyframes_capture_spec spec_of(struct world *w)
{
	struct pyframes_capture_spec s;

	assert_int_equal(pyframes_capture_spec(w->pf, &s), 0);
	return s;
}

/* What the capture program does at a sample: follows the spec from the thread state, copying
 * at most max_nodes frames into nodes, stride bytes each. */
static struct pyframes_capture capture(struct world *w, unsigned char *nodes, size_t stride,
				       size_t max_nodes)
{
	struct pyframes_capture_spec s = spec_of(w);
	struct pyframes_capture cap = { .nodes = nodes, .stride = stride };
	uint64_t p = get64(w, w->tstate + s.head_off1), frame;

	assert_true(stride >= 8 + s.frame_bytes);
	frame = s.head_off2 == PYFRAMES_NO_OFF ? p : p ? get64(w, p + s.head_off2) : 0;
	cap.head = frame;
	while (frame && cap.n < max_nodes) {
		unsigned char *node = nodes + cap.n++ * stride;

		memcpy(node, &frame, 8);
		memcpy(node + 8, w->f.mem + (frame - BASE), s.frame_bytes);
		frame = get64(w, frame + s.next_off);
	}
	return cap;
}

/* Moves a whole captured chain (cap, over nodes) to addresses that no longer read (GONE): the
 * walk can only succeed from the capture's bytes alone. */
static void move_capture(struct world *w, unsigned char *nodes, struct pyframes_capture *cap)
{
	struct pyframes_capture_spec s = spec_of(w);
	size_t i;

	assert_ptr_equal(cap->nodes, nodes);
	for (i = 0; i < cap->n; i++) {
		unsigned char *node = nodes + i * cap->stride;
		uint64_t at = GONE + 0x100 * i, next = GONE + 0x100 * (i + 1);

		memcpy(node, &at, 8);
		if (i + 1 < cap->n)
			memcpy(node + 8 + s.next_off, &next, 8);
		else
			assert_int_equal(pf_u64(node + 8, s.next_off), 0);
	}
	cap->head = GONE;
}

static void assert_frames_equal(const struct py_frame *a, const struct py_frame *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		assert_int_equal(a[i].code, b[i].code);
		assert_string_equal(a[i].name, b[i].name);
		assert_string_equal(a[i].file, b[i].file);
		assert_int_equal(a[i].line, b[i].line);
		assert_int_equal(a[i].first_line, b[i].first_line);
		assert_int_equal(a[i].entry, b[i].entry);
	}
}

/* chain3(), with a shim frame between f1 and f2 where the version has them (3.12+): f1 is then
 * an entry frame by the shim. Returns the frames in the chain. */
static size_t chain3_shim(struct world *w, uint64_t fr[3], uint64_t co[3])
{
	uint64_t shim;

	chain3(w, fr, co);
	if (w->l->owner_cstack_min == PF_NONE)
		return 3;
	shim = mk_frame(w, co[2], 0, (uint8_t) w->l->owner_cstack_min, false);
	link_frames(w, fr[1], shim);
	link_frames(w, shim, fr[2]);
	return 4;
}

/* The stack as captured, though the thread ran on: the leaf's slot now runs other code at
 * another line and links elsewhere, the middle frame moved on a line, a new frame is on top. A
 * live walk sees the new stack, the captured walk the old one, before and after it, and also
 * with the frames' memory gone. */
static void captured_cases(int minor)
{
	struct world w;
	struct py_frame was[8], out[8];
	unsigned char nodes[8 * STRIDE];
	struct pyframes_capture cap;
	uint64_t fr[3], co[3], reused, top, nf;
	size_t n, chain;

	world_init(&w, minor);
	chain = chain3_shim(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, was, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(was[0].name, "A.f0");
	assert_int_equal(was[0].line, 11);
	assert_true(was[1].entry);
	cap = capture(&w, nodes, STRIDE, 8);
	assert_int_equal(cap.head, fr[0]);
	assert_int_equal(cap.n, chain);

	reused = mk_code(&w, "B.reused", 50);
	top = mk_code(&w, "C.top", 60);
	run_at(&w, fr[0], reused, 6);
	link_frames(&w, fr[0], fr[2]);
	run_at(&w, fr[1], co[1], 0);
	nf = mk_frame(&w, top, 1, 0, false);
	link_frames(&w, nf, fr[0]);
	set_top(&w, nf);

	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 3);
	assert_int_equal(out[1].line, 23);
	assert_int_equal(pyframes_stats(w.pf)->walks, 2);
	/* live: the new stack (no capture left over) */
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "C.top");
	assert_int_equal(out[0].line, 61);
	assert_string_equal(out[1].name, "B.reused");
	assert_int_equal(out[1].line, 53);
	assert_string_equal(out[2].name, "f2");
	/* the capture again, once the code cache holds the new code objects */
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 3);
	/* keep the innermost 2 */
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 2, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_frames_equal(out, was, 2);
	assert_int_equal(pyframes_stats(w.pf)->truncated, 1);
	/* every frame's memory gone since: the capture alone (and the fields it holds) suffice */
	move_capture(&w, nodes, &cap);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 3);
	assert_int_equal(pyframes_stats(w.pf)->torn, 0);
	world_free(&w);
}

static void test_captured(void **state)
{
	(void) state;
	captured_cases(8);
	captured_cases(11);
	captured_cases(12);
}

/* Only the 2 innermost frames captured: the outer ones are read live (their changes show), the
 * captured ones as they were. */
static void captured_cut_cases(int minor)
{
	struct world w;
	struct py_frame was[8], out[8];
	unsigned char nodes[8 * (8 + 112)];
	struct pyframes_capture cap;
	uint64_t fr[3], co[3];
	size_t n;
	struct pyframes_cut cut;

	world_init(&w, minor);
	(void) chain3_shim(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, was, 8, &n, NULL), 0);
	cap = capture(&w, nodes, 8 + spec_of(&w).frame_bytes, 2);
	assert_int_equal(cap.n, 2);
	run_at(&w, fr[0], mk_code(&w, "B.reused", 50), 6);
	run_at(&w, fr[1], co[1], 0);
	run_at(&w, fr[2], co[2], 5);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 2);
	assert_string_equal(out[2].name, "f2");
	assert_int_equal(out[2].line, 33);   /* live: was 31 */
	assert_int_equal(out[2].entry, was[2].entry);
	/* the live rest loops back into the captured frames (the thread moved on): the captured
	 * frames, cut where the capture ends, how many more not known */
	link_frames(&w, fr[2], fr[0]);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, &cut), 0);
	assert_int_equal(n, 2);
	assert_frames_equal(out, was, 2);
	assert_int_equal(cut.n, 0);
	assert_true(cut.more);
	assert_int_equal(pyframes_stats(w.pf)->torn, 0);
	assert_int_equal(pyframes_stats(w.pf)->truncated, 1);
	/* or unreadable now */
	link_frames(&w, fr[1], GONE);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, &cut), 0);
	assert_int_equal(n, 2);
	assert_int_equal(cut.n, 0);
	assert_true(cut.more);
	world_free(&w);
}

static void test_captured_cut(void **state)
{
	(void) state;
	captured_cut_cases(8);
	captured_cut_cases(11);
	captured_cut_cases(12);
}

/* What the capture program does with the spec's extras too: per node, after its frame, each
 * extra's bytes at its pointer (address 0 where that leads outside the world's memory). */
static struct pyframes_capture capture_x(struct world *w, unsigned char *nodes, size_t max_nodes)
{
	struct pyframes_capture_spec s = spec_of(w);
	struct pyframes_capture cap;
	size_t stride = 8 + s.frame_bytes, i, j;

	for (j = 0; j < s.n_extras; j++)
		stride += 8 + s.extra[j].len;
	assert_true(stride <= PYFRAMES_CAPTURE_STRIDE_MAX);
	cap = capture(w, nodes, stride, max_nodes);
	cap.n_extras = s.n_extras;
	for (i = 0; i < cap.n; i++) {
		unsigned char *body = nodes + i * stride + 8, *at = body + s.frame_bytes;

		for (j = 0; j < s.n_extras; at += 8 + s.extra[j].len, j++) {
			uint64_t p = pf_u64(body, s.extra[j].from) & s.extra[j].mask;
			uint64_t a = p ? p + s.extra[j].off : 0;

			if (a < BASE || a + s.extra[j].len > BASE + SIZE)
				a = 0;
			else
				memcpy(at + 8, w->f.mem + (a - BASE), s.extra[j].len);
			memcpy(at, &a, 8);
		}
	}
	return cap;
}

static uint32_t name_field(const struct py_layout *l)
{
	return l->co_qualname != PF_NONE ? l->co_qualname : l->co_name;
}

/* Rewrites the text of the str object at a in place (same length). */
static void str_set(struct world *w, uint64_t a, const char *s)
{
	assert_int_equal(get64(w, a + w->l->str_length), strlen(s));
	memcpy(w->f.mem + (a - BASE) + w->l->str_ascii_size, s, strlen(s));
}

/* Code objects freed after the sample: named as they were then, from the capture. */
static void captured_gone_cases(int minor)
{
	struct world w;
	struct py_frame was[8], out[8];
	unsigned char nodes[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	unsigned char nodes2[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	struct pyframes_capture cap, cap2;
	uint64_t fr[3], co[3];
	size_t n, i;
	static const char *const names[3] = { "A.f0", "f1", "f2" };      /* chain3() */

	/* freed, and the address taken by another code object whose name and file pointers are
	 * the same (their strings freed and taken by others too): the cache, which holds the
	 * first, must not name the second's capture by it, nor the first's by the second */
	world_init(&w, minor);
	chain3(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, was, 8, &n, NULL), 0);
	cap = capture_x(&w, nodes, 8);
	assert_int_equal(cap.n, 3);
	assert_true(cap.n_extras >= 3);
	str_set(&w, get64(&w, co[0] + name_field(w.l)), "B.g0");
	str_set(&w, get64(&w, co[0] + w.l->co_filename), "u.py");
	cap2 = capture_x(&w, nodes2, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap2, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "B.g0");
	assert_string_equal(out[0].file, "u.py");
	assert_frames_equal(out + 1, was + 1, 2);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 3);
	world_free(&w);

	/* freed, the memory now another object's (zeros here): the capture alone names them */
	world_init(&w, minor);
	chain3(&w, fr, co);
	cap = capture_x(&w, nodes, 8);
	for (i = 0; i < 3; i++) {
		char other[16] = "XXXXXXXXXXXXXXX";

		other[strlen(names[i])] = '\0';
		str_set(&w, get64(&w, co[i] + name_field(w.l)), other);
		memset(w.f.mem + (co[i] - BASE), 0, w.l->co_size);
	}
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	for (i = 0; i < 3; i++) {
		assert_string_equal(out[i].name, names[i]);
		assert_string_equal(out[i].file, "t.py");
		assert_int_equal(out[i].first_line, 10 * (int) (i + 1));
		/* the line table's bytes, where a capture happens to hold them (next to the
		 * file name here), else the first line */
		assert_in_range(out[i].line, 10 * (i + 1), 10 * (i + 1) + 3);
	}
	assert_int_equal(pyframes_stats(w.pf)->gone_named, 3);
	world_free(&w);
}

static void test_captured_gone(void **state)
{
	(void) state;
	captured_gone_cases(8);
	captured_gone_cases(10);
	captured_gone_cases(11);
	captured_gone_cases(12);
}

/* A captured walk whose capture holds each code object's identifying fields checks its cached
 * code objects there: a stack seen before costs no read of the target. Where the capture's
 * fields differ from the cache's (the code at that address changed since), it is named as
 * captured. */
static void captured_cached_cases(int minor)
{
	struct world w;
	struct py_frame was[8], out[8];
	unsigned char nodes[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	unsigned char nodes2[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	struct pyframes_capture cap, other;
	uint64_t fr[3], co[3], reads;
	size_t n;

	world_init(&w, minor);
	chain3(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, was, 8, &n, NULL), 0);
	cap = capture_x(&w, nodes, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 3);
	reads = pyframes_stats(w.pf)->remote_reads;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 3);
	assert_int_equal(pyframes_stats(w.pf)->remote_reads, reads);
	/* the code freed and its address, name and file pointers taken by another's (its name's
	 * bytes differ): a capture of it names it so, and the older one the first */
	str_set(&w, get64(&w, co[0] + name_field(w.l)), "Z.g0");
	other = capture_x(&w, nodes2, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &other, out, 8, &n, NULL), 0);
	assert_string_equal(out[0].name, "Z.g0");
	assert_frames_equal(out + 1, was + 1, 2);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_frames_equal(out, was, 3);
	str_set(&w, get64(&w, co[0] + name_field(w.l)), "A.f0");
	/* f1's code now starts at line 40: a capture taken since says so, the old one still
	 * names the code as it was */
	put32(&w.f, co[1] + w.l->co_firstlineno, 40);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_frames_equal(out, was, 3);
	cap = capture_x(&w, nodes, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(out[1].first_line, 40);
	assert_string_equal(out[1].name, "f1");
	assert_frames_equal(out, was, 1);
	world_free(&w);
}

static void test_captured_cached(void **state)
{
	(void) state;
	captured_cached_cases(8);
	captured_cached_cases(10);
	captured_cached_cases(11);
	captured_cached_cases(12);
}

/* The captured walk of a capture that shares its outermost nodes, byte for byte, with the
 * thread's previous one takes those nodes' frames from that walk (pf->memo): the frames are
 * those the same capture gives walked whole (tid 0: no memo), and a live walk of the same
 * stack where nothing changed in place since. */
static void assert_captured_memo(struct world *w, unsigned char *nodes, pid_t tid,
				 uint64_t spliced, bool as_live)
{
	static uint64_t last_walk[2];   /* of TID and TID + 1: the walk each memo is of */
	struct py_frame live[8], out[8], whole[8];
	struct pyframes_capture cap;
	struct pyframes_cut cut;
	uint64_t before = w->pf->memo_spliced;
	size_t n, n_live, n_whole;

	if (spliced == 0)
		last_walk[0] = last_walk[1] = 0;
	cap = capture_x(w, nodes, 8);
	cap.tid = tid;
	assert_int_equal(pyframes_thread_stack_captured(w->pf, &cap, out, 8, &n, &cut), 0);
	assert_int_equal(w->pf->memo_spliced, spliced);
	/* the frames taken are the last ones, and the walk they were taken from is said */
	assert_true(cut.walk > last_walk[tid - TID]);
	assert_int_equal(cut.spliced, spliced - before);
	assert_int_equal(cut.memo_walk, cut.spliced ? last_walk[tid - TID] : 0);
	last_walk[tid - TID] = cut.walk;
	cap.tid = 0;
	assert_int_equal(pyframes_thread_stack_captured(w->pf, &cap, whole, 8, &n_whole, NULL), 0);
	assert_int_equal(w->pf->memo_spliced, spliced);
	assert_int_equal(n, n_whole);
	assert_frames_equal(out, whole, n);
	assert_int_equal(pyframes_thread_stack(w->pf, TID, live, 8, &n_live, NULL), 0);
	if (as_live) {
		assert_int_equal(n, n_live);
		assert_frames_equal(out, live, n);
	}
}

static void captured_memo_cases(int minor)
{
	struct world w;
	unsigned char nodes[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	uint64_t fr[3], co[3], top, nf, spliced = 0, past0 = 3;

	world_init(&w, minor);
	(void) chain3_shim(&w, fr, co);
	/* the first of its thread: walked whole; the same again: node 0's frame and those past
	 * it, all three (3.12+ emits a frame once the next node is walked, so the frame pending
	 * from the node walked is the memo's; 3.8-3.11 splice before the first shared node) */
	assert_captured_memo(&w, nodes, TID, 0, true);
	assert_captured_memo(&w, nodes, TID, spliced += past0, true);
	/* a new frame on top: fr[0]'s node and those past it are shared */
	top = mk_code(&w, "C.top", 60);
	nf = mk_frame(&w, top, 1, 0, false);
	link_frames(&w, nf, fr[0]);
	set_top(&w, nf);
	assert_captured_memo(&w, nodes, TID, spliced += past0, true);
	/* the middle frame moved on a line: only the nodes past it are shared, f2's (and the
	 * shim's, whose walk emits f1): f2 is spliced */
	run_at(&w, fr[1], co[1], 2);
	assert_captured_memo(&w, nodes, TID, spliced += 1, true);
	/* ... and back: the memo is the last walk's nodes, not the ones before it (which this
	 * capture equals, and whose frames would be named at the line before) */
	run_at(&w, fr[1], co[1], 5);
	assert_captured_memo(&w, nodes, TID, spliced += 1, true);
	/* another thread with the same stack: none of its own yet */
	assert_captured_memo(&w, nodes, TID + 1, spliced, true);
	assert_captured_memo(&w, nodes, TID + 1, spliced += past0 + 1, true);
	/* the outermost code renamed in place: its node differs, nothing is shared */
	str_set(&w, get64(&w, co[2] + name_field(w.l)), "g2");
	assert_captured_memo(&w, nodes, TID, spliced, false);
	/* named as the capture holds it (the live walk's cache checks the code's fields alone) */
	{
		struct py_frame out[8];
		struct pyframes_capture cap = capture_x(&w, nodes, 8);
		size_t n;

		cap.tid = TID;
		assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
		assert_int_equal(n, 4);
		assert_string_equal(out[3].name, "g2");
		assert_int_equal(w.pf->memo_spliced, spliced += past0 + 1);
	}
	world_free(&w);
}

static void test_captured_memo(void **state)
{
	(void) state;
	captured_memo_cases(8);
	captured_memo_cases(10);
	captured_memo_cases(11);
	captured_memo_cases(12);
}

static void test_captured_bad(void **state)
{
	struct world w;
	struct py_frame out[8];
	unsigned char nodes[8 * STRIDE];
	struct pyframes_capture cap, bad;
	uint64_t fr[3], co[3], junk = 0xdead0000;
	size_t n = 99;

	(void) state;
	world_init(&w, 11);
	chain3(&w, fr, co);
	cap = capture(&w, nodes, STRIDE, 8);
	/* the caller's mistakes: -EINVAL, and no walk */
	bad = cap;
	bad.stride = 8 + spec_of(&w).frame_bytes - 1;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &bad, out, 8, &n, NULL), -EINVAL);
	bad = cap;
	bad.n = PYFRAMES_CAPTURE_MAX_NODES + 1;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &bad, out, 8, &n, NULL), -EINVAL);
	bad = cap;
	bad.nodes = NULL;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &bad, out, 8, &n, NULL), -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(pyframes_stats(w.pf)->walks, 0);
	/* no Python code at the sample */
	bad = (struct pyframes_capture) { .head = 0 };
	n = 99;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &bad, out, 8, &n, NULL), 0);
	assert_int_equal(n, 0);
	bad = cap;
	bad.head = 0;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &bad, out, 8, &n, NULL), 0);
	assert_int_equal(n, 0);
	/* a capture that looped (f2 -> f0 when it was taken), though the live chain does not */
	link_frames(&w, fr[2], fr[0]);
	cap = capture(&w, nodes, STRIDE, 8);
	assert_int_equal(cap.n, 8);
	link_frames(&w, fr[2], 0);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), -EAGAIN);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	/* the loop within the first 3 nodes alone */
	cap.n = 3;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), -EAGAIN);
	/* a captured caller link into nowhere: the frames before it, cut there */
	memcpy(nodes + STRIDE + 8 + w.l->fr_previous, &junk, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_int_equal(pyframes_stats(w.pf)->torn, 2);
	assert_int_equal(pyframes_stats(w.pf)->walks, 6);
	/* no verify: an outermost generator frame is what the capture saw, not a torn read */
	link_frames(&w, fr[2], 0);
	put8(&w.f, fr[2] + w.l->fr_owner, (uint8_t) w.l->owner_generator);
	pyframes_set_verify(w.pf, true);
	cap = capture(&w, nodes, STRIDE, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), -EAGAIN);
	world_free(&w);
}

static void captured_split_cases(int minor)
{
	struct world w;
	struct py_frame live[8], whole[8], out[8];
	unsigned char nodes[8 * PYFRAMES_CAPTURE_STRIDE_MAX], compact[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	const unsigned char *ident[8];
	struct pyframes_capture x, cap;
	struct pyframes_capture_spec s;
	uint64_t fr[3], co[3], spliced;
	size_t n, n_live, n_whole;
	static const char *const names[3] = { "A.f0", "f1", "f2" };      /* chain3() */

	world_init(&w, minor);
	s = spec_of(&w);
	assert_true(s.n_identity > 0 && s.n_identity < s.n_extras);
	chain3(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, live, 8, &n_live, NULL), 0);
	x = capture_x(&w, nodes, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &x, whole, 8, &n_whole, NULL), 0);
	assert_int_equal(n_whole, n_live);
	assert_frames_equal(whole, live, n_live);
	/* named as the whole nodes name them; for a thread, the second time (its names left
	 * out, as known) from its memo */
	cap = split_capture(&x, &s, compact, ident);
	cap.tid = TID;
	for (int i = 0; i < 2; i++) {
		spliced = w.pf->memo_spliced;
		cap.n_names = i == 0 ? cap.n : 0;
		assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
		assert_int_equal(n, n_whole);
		assert_frames_equal(out, whole, n);
		assert_true(i == 0 ? w.pf->memo_spliced == spliced : w.pf->memo_spliced > spliced);
	}
	cap.tid = 0;
	/* an identity the reader lacks, names left out: the code checked in memory instead */
	ident[1] = NULL;
	cap.n_names = 1;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, n_whole);
	assert_frames_equal(out, whole, n);
	/* identities by pointer need the names' slots */
	cap.names_stride = 0;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), -EINVAL);
	world_free(&w);
	/* code objects gone from memory since, none cached: the identities and names captured
	 * name them */
	world_init(&w, minor);
	chain3(&w, fr, co);
	x = capture_x(&w, nodes, 8);
	cap = split_capture(&x, &s, compact, ident);
	for (size_t i = 0; i < 3; i++)
		memset(w.f.mem + (co[i] - BASE), 0, w.l->co_size);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(out[i].name, names[i]);
	world_free(&w);
	/* a code named, another at its address named since (the cache holds that one), then one
	 * with the first's identity bytes again (a module imported anew), its names left out of
	 * the record as its check was sent before, and gone from memory: named by what its check
	 * was sent with, not read from memory (dropped as unreadable, before) */
	world_init(&w, minor);
	chain3(&w, fr, co);
	x = capture_x(&w, nodes, 8);
	cap = split_capture(&x, &s, compact, ident);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	{
		unsigned char nodes_b[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
		unsigned char compact_b[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
		const unsigned char *ident_b[8];
		struct pyframes_capture xb, cb;
		uint32_t line = pf_u32(w.f.mem, (uint32_t) (co[0] + w.l->co_firstlineno - BASE));

		put32(&w.f, co[0] + w.l->co_firstlineno, line + 100);
		str_set(&w, get64(&w, co[0] + name_field(w.l)), "B.g0");
		xb = capture_x(&w, nodes_b, 8);
		cb = split_capture(&xb, &s, compact_b, ident_b);
		assert_int_equal(pyframes_thread_stack_captured(w.pf, &cb, out, 8, &n, NULL), 0);
		assert_string_equal(out[0].name, "B.g0");
	}
	for (size_t i = 0; i < 3; i++)
		memset(w.f.mem + (co[i] - BASE), 0, w.l->co_size);
	cap.n_names = 0;
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(out[i].name, names[i]);
	world_free(&w);
}

/* A thread's split captures whose shim's names come every time (3.13+ sends a C-stack entry
 * frame's, its "code" never known): the nodes past it are still taken from the memo, as the
 * whole capture names them; a frame's names sent there again are not. */
static void captured_split_shim_cases(int minor)
{
	struct world w;
	struct py_frame whole[8], out[8];
	unsigned char nodes[8 * PYFRAMES_CAPTURE_STRIDE_MAX], compact[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	const unsigned char *ident[8];
	struct pyframes_capture x, cap;
	struct pyframes_capture_spec s;
	uint64_t fr[3], co[3], spliced, none = 0, sent[4];
	size_t n, n_whole;

	world_init(&w, minor);
	s = spec_of(&w);
	assert_int_equal(chain3_shim(&w, fr, co), 4);   /* f0, f1, the shim, f2 */
	x = capture_x(&w, nodes, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &x, whole, 8, &n_whole, NULL), 0);
	cap = split_capture(&x, &s, compact, ident);
	cap.tid = TID;
	for (size_t k = 0; k < 4; k++)
		memcpy(&sent[k], cap.names + k * cap.names_stride, 8);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	/* every names slot left out (address 0) but the shim's */
	for (size_t k = 0; k < 4; k++)
		if (k != 2)
			memcpy(nodes + k * x.stride + (size_t) (cap.names - x.nodes), &none, 8);
	assert_true(sent[2] != 0 && sent[3] != 0);
	for (int i = 0; i < 3; i++) {
		spliced = w.pf->memo_spliced;
		/* the last time, the outermost frame's names sent again too */
		if (i == 2)
			memcpy(nodes + 3 * x.stride + (size_t) (cap.names - x.nodes), &sent[3], 8);
		assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
		assert_int_equal(n, n_whole);
		assert_frames_equal(out, whole, n);
		assert_true(i < 2 ? w.pf->memo_spliced > spliced : w.pf->memo_spliced == spliced);
	}
	world_free(&w);
}

/* Whether node k of captures a and b (capture_x()'s) holds the same identity extras. */
static bool ident_same(const struct pyframes_capture_spec *s, const struct pyframes_capture *a,
		       const struct pyframes_capture *b, size_t k)
{
	size_t at = 8 + s->frame_bytes, len = 0;

	for (uint32_t j = 0; j < s->n_identity; j++)
		len += 8 + s->extra[j].len;
	return memcmp(a->nodes + k * a->stride + at, b->nodes + k * b->stride + at, len) == 0;
}

/* A code's identity (the program's check is a digest of it: a code whose check was sent
 * before goes without its names) tells it from a code freed and another made at its address,
 * with its name and file strings at their addresses and every other header word the same
 * (exec(compile(...)) in a loop does this): by its version (3.12+: the spec's unique word),
 * else by its name's text or its file's hash (CPython's, of its text: the capture reads a
 * path's first bytes alone). The same code, captured again, has the same identity. */
static void captured_rename_cases(int minor)
{
	struct world w;
	unsigned char n1[8 * PYFRAMES_CAPTURE_STRIDE_MAX], n2[8 * PYFRAMES_CAPTURE_STRIDE_MAX];
	struct pyframes_capture a, b;
	struct pyframes_capture_spec s;
	struct py_frame out[8];
	uint64_t fr[3], co[3], file;
	size_t n;

	world_init(&w, minor);
	s = spec_of(&w);
	chain3(&w, fr, co);
	a = capture_x(&w, n1, 8);
	b = capture_x(&w, n2, 8);
	for (size_t k = 0; k < 3; k++)
		assert_true(ident_same(&s, &a, &b, k));
	assert_int_equal(s.unique_at != 0, pf_co_version(w.l) != PF_NONE);
	if (s.unique_at) {
		uint32_t version = pf_u32(w.f.mem, (uint32_t) (co[1] + pf_co_version(w.l) - BASE));

		assert_true(version > 0);
		assert_int_equal(pf_u32(a.nodes + a.stride, 8 + s.unique_at), version);
		assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
		assert_string_equal(out[n - 2].name, "f1");
		put32(&w.f, co[1] + pf_co_version(w.l), version + 1000);
		b = capture_x(&w, n2, 8);
		assert_true(ident_same(&s, &a, &b, 0));
		assert_false(ident_same(&s, &a, &b, 1));
		/* and the code cache, read from memory: the new code by its version, not the
		 * cached one by its address and pointers */
		str_set(&w, get64(&w, co[1] + name_field(w.l)), "g1");
		assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
		assert_string_equal(out[n - 2].name, "g1");
		world_free(&w);
		return;
	}
	str_set(&w, get64(&w, co[1] + name_field(w.l)), "g1");
	b = capture_x(&w, n2, 8);
	assert_true(ident_same(&s, &a, &b, 0));
	assert_false(ident_same(&s, &a, &b, 1));
	str_set(&w, get64(&w, co[1] + name_field(w.l)), "f1");
	b = capture_x(&w, n2, 8);
	assert_true(ident_same(&s, &a, &b, 1));
	file = get64(&w, co[2] + w.l->co_filename);
	put64(&w.f, file + w.l->str_length + 8, 0x5eed);      /* ob_hash, after the length */
	b = capture_x(&w, n2, 8);
	assert_false(ident_same(&s, &a, &b, 2));
	world_free(&w);
}

static void test_captured_split(void **state)
{
	(void) state;
	captured_split_cases(8);
	captured_split_cases(10);
	captured_split_cases(11);
	captured_split_cases(12);
	captured_split_shim_cases(12);
	captured_rename_cases(8);
	captured_rename_cases(10);
	captured_rename_cases(11);
	captured_rename_cases(12);
}

static void spec_is(const struct py_layout *l, int r, uint32_t off1, uint32_t off2,
		    uint32_t bytes, uint32_t next)
{
	struct pyframes_capture_spec s = { 0 };
	struct remote_mem rm = { .read = fake_read };
	struct pyframes *pf;

	assert_int_equal(pyframes_new_from_layout(&rm, l, BASE, 0, 1, &pf), 0);
	assert_int_equal(pyframes_capture_spec(pf, &s), r);
	if (r == 0) {
		assert_int_equal(s.head_off1, off1);
		assert_int_equal(s.head_off2, off2);
		assert_int_equal(s.frame_bytes, bytes);
		assert_int_equal(s.next_off, next);
	}
	pyframes_free(pf);
}

static void test_capture_spec(void **state)
{
	struct py_layout l;

	(void) state;
	/* tstate->frame; f_back; up to f_lasti (f_gen before it) */
	spec_is(layout_static(3, 8), 0, 24, PYFRAMES_NO_OFF, 112, 24);
	spec_is(layout_static(3, 9), 0, 24, PYFRAMES_NO_OFF, 112, 24);
	spec_is(layout_static(3, 10), 0, 24, PYFRAMES_NO_OFF, 104, 24);
	/* tstate->cframe->current_frame; previous; the whole _PyInterpreterFrame */
	spec_is(layout_static(3, 11), 0, 56, 8, 80, 48);
	spec_is(layout_static(3, 12), 0, 56, 0, 80, 8);
	/* 3.13+ (as from _Py_DebugOffsets): tstate->current_frame */
	l = *layout_static(3, 12);
	l.minor = 13;
	l.ts_cframe = l.cf_current_frame = PF_NONE;
	l.ts_frame = 72;
	spec_is(&l, 0, 72, PYFRAMES_NO_OFF, 80, 8);
	/* a frame over 128 bytes: the fields read (owner at 70) */
	l.fr_size = 200;
	spec_is(&l, 0, 72, PYFRAMES_NO_OFF, 72, 8);
	/* fields the walker reads past 128: no spec */
	l.fr_instr = 160;
	spec_is(&l, -EINVAL, 0, 0, 0, 0);
	/* past what the walker reads of a frame at all: refused (layout_check()) */
	{
		struct remote_mem rm = { .read = fake_read };
		struct pyframes *pf;

		l.fr_owner = 600;
		l.fr_size = 700;
		assert_int_equal(pyframes_new_from_layout(&rm, &l, BASE, 0, 1, &pf), -EBADMSG);
	}
}

/* The word the capture's code cache watches (capture.h's version_at): 3.12's code versions
 * where detection found _Py_next_func_version's symbol (pf->versions_at), 3.14's count of
 * the codes freed in the main interpreter (interpreter_state.code_object_generation), none
 * for 3.13 (no such field) nor before 3.12 (no code versions: no unique word). */
static void test_capture_versions(void **state)
{
	static struct py_layout l;
	struct pyframes_capture_spec s;
	struct world w;

	(void) state;
	world_init(&w, 12);
	s = spec_of(&w);
	assert_int_equal(s.versions_at, 0);
	w.pf->versions_at = BASE + 0x40;
	s = spec_of(&w);
	assert_int_not_equal(s.unique_at, 0);
	assert_int_equal(s.versions_at, BASE + 0x40);
	assert_int_equal(s.versions_kind, PYFRAMES_VERSIONS_NEXT32);
	world_free(&w);
	world_init(&w, 11);
	w.pf->versions_at = BASE + 0x40;
	s = spec_of(&w);
	assert_int_equal(s.unique_at, 0);
	assert_int_equal(s.versions_at, 0);
	world_free(&w);
	l = *layout_static(3, 12);
	l.minor = 14;
	l.is_code_gen = 7992;
	world_init_layout(&w, &l);
	s = spec_of(&w);
	assert_int_equal(s.versions_at, w.interp + 7992);
	assert_int_equal(s.versions_kind, PYFRAMES_VERSIONS_FREED64);
	world_free(&w);
	l.minor = 13;
	l.is_code_gen = 0;
	world_init_layout(&w, &l);
	s = spec_of(&w);
	assert_int_equal(s.versions_at, 0);
	world_free(&w);
}

/* A frame larger than a capture holds: the walker reads only the fields it needs, so a walk of
 * frames whose memory is gone still succeeds from the capture; a layout no capture fits gets
 * no captured walk. */
static void test_captured_big_frame(void **state)
{
	static struct py_layout l;
	struct world w;
	struct py_frame was[8], out[8];
	unsigned char nodes[8 * STRIDE];
	struct pyframes_capture cap;
	uint64_t fr[3], co[3];
	size_t n;

	(void) state;
	l = *layout_static(3, 12);
	l.fr_size = 200;
	world_init_layout(&w, &l);
	chain3(&w, fr, co);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, was, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	cap = capture(&w, nodes, 8 + 72, 8);
	move_capture(&w, nodes, &cap);
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_frames_equal(out, was, 3);
	world_free(&w);

	l.fr_instr = 160;
	world_init_layout(&w, &l);
	cap = (struct pyframes_capture) { .head = 0 };
	assert_int_equal(pyframes_thread_stack_captured(w.pf, &cap, out, 8, &n, NULL), -EINVAL);
	world_free(&w);
}

/* A fake /proc under dir: task tid of pid 1 (the world's pid) with the NSpid line nspid. */
static void fake_task(const char *dir, pid_t tid, const char *nspid)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/1", dir);
	(void) mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/1/task", dir);
	(void) mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/1/task/%d", dir, (int) tid);
	(void) mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/1/task/%d/status", dir, (int) tid);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "Name:\tpython3\nPid:\t%d\nNSpid:\t%s\n", (int) tid, nspid);
	assert_int_equal(fclose(f), 0);
}

/* A second thread state, thread TID's (ns tid 2), running fr; its struct pthread holds 2 at
 * tid_off and a 1 (a flag, say) at 0x18, as the main thread's does. */
static void second_thread_38(struct world *w, uint64_t fr, uint32_t tid_off)
{
	const struct py_layout *l = w->l;
	uint64_t b = alloc(&w->f, l->ts_size), pb = alloc(&w->f, 2048);

	put64(&w->f, b + l->ts_interp, w->interp);
	put64(&w->f, b + l->ts_thread_id, pb);
	put32(&w->f, pb + tid_off, 2);
	put32(&w->f, pb + 0x18, 1);
	put64(&w->f, b + l->ts_frame, fr);
	put64(&w->f, w->tstate + l->ts_next, b);
}

/* A target in a PID namespace of its own: it knows its threads by that namespace's ids (its
 * native_thread_id, its struct pthread's tid), perf and /proc by the host's; pyframes maps the
 * one to the other through NSpid. Process 1 is 1 in its namespace, thread TID is 2: ids so
 * small that other words of struct pthread hold them too. */
static void test_pid_namespace(void **state)
{
	char dir[64], cmd[96];
	struct world w;
	struct py_frame out[8];
	uint64_t fr[3], co[3], pa;
	size_t n;

	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/test_walk_ns.XXXXXX");
	assert_non_null(mkdtemp(dir));
	fake_task(dir, 1, "1\t1");
	fake_task(dir, TID, "1234\t2");
	/* 3.11+: native_thread_id */
	world_init(&w, 11);
	chain3(&w, fr, co);
	put64(&w.f, w.tstate + w.l->ts_native_thread_id, 2);
	pyframes_set_proc(w.pf, dir);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "A.f0");
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);   /* cached */
	assert_int_equal(n, 3);
	assert_int_equal(pyframes_thread_stack(w.pf, 1, out, 8, &n, NULL), -ENOENT);
	assert_int_equal(pyframes_thread_stack(w.pf, 2, out, 8, &n, NULL), -ENOENT);  /* no such host tid */
	/* a thread without a thread state (1, just now) keeps its mapped id for a while: no /proc
	 * read at each of its samples */
	snprintf(cmd, sizeof(cmd), "%s/1/task/1/status", dir);
	assert_int_equal(unlink(cmd), 0);
	put64(&w.f, w.tstate + w.l->ts_native_thread_id, 1);
	assert_int_equal(pyframes_thread_stack(w.pf, 1, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	fake_task(dir, 1, "1\t1");
	world_free(&w);
	/* <= 3.10, two threads: the tid's offset in struct pthread (not glibc's here: another
	 * libc) is the word that holds both threads' ids, not the flag that holds the main
	 * thread's pid (1) in both */
	world_init(&w, 8);
	chain3(&w, fr, co);
	pa = get64(&w, w.tstate + w.l->ts_thread_id);
	put32(&w.f, pa + 0x2d8, 1);
	put32(&w.f, pa + 0x18, 1);
	second_thread_38(&w, fr[1], 0x2d8);
	pyframes_set_pthread_tid_offset(w.pf, 0);
	pyframes_set_proc(w.pf, dir);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].name, "f1");
	assert_int_equal(pyframes_thread_stack(w.pf, 1, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "A.f0");
	world_free(&w);
	/* the main thread alone when the offset is found: both words tie, glibc's wins; the
	 * thread started later is found by it */
	world_init(&w, 8);
	chain3(&w, fr, co);
	pa = get64(&w, w.tstate + w.l->ts_thread_id);
	put32(&w.f, pa + 0x2d0, 1);
	put32(&w.f, pa + 0x18, 1);
	pyframes_set_pthread_tid_offset(w.pf, 0);
	pyframes_set_proc(w.pf, dir);
	assert_int_equal(pyframes_thread_stack(w.pf, 1, out, 8, &n, NULL), 0);
	assert_int_equal(n, 3);
	second_thread_38(&w, fr[2], 0x2d0);
	assert_int_equal(pyframes_thread_stack(w.pf, TID, out, 8, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].name, "f2");
	world_free(&w);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* The thread state a capture program starts from; no walk counted. */
static void test_thread_state(void **state)
{
	static const int minors[] = { 8, 11, 12 };
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		struct world w;
		uint64_t ts = 1;

		world_init(&w, minors[i]);
		assert_int_equal(pyframes_thread_state(w.pf, TID, &ts), 0);
		assert_int_equal(ts, w.tstate);
		assert_int_equal(pyframes_thread_state(w.pf, TID, &ts), 0);   /* cached */
		assert_int_equal(ts, w.tstate);
		assert_int_equal(pyframes_thread_state(w.pf, TID + 1, &ts), -ENOENT);
		assert_int_equal(ts, 0);
		assert_int_equal(pyframes_stats(w.pf)->walks, 0);
		assert_int_equal(pyframes_stats(w.pf)->no_thread, 0);
		world_free(&w);
	}
}

/* The search spec, followed as a capture program follows it, finds TID's state in a list where
 * another thread's state comes first; before 3.11 through struct pthread. */
static void test_search_spec(void **state)
{
	static const int minors[] = { 8, 10, 11, 12 };

	(void) state;
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		struct pyframes_search_spec sp;
		struct world w;
		uint64_t other, ts, found = 0;

		world_init(&w, minors[i]);
		other = alloc(&w.f, w.l->ts_size);
		put64(&w.f, other + w.l->ts_next, w.tstate);
		put64(&w.f, w.interp + w.l->is_threads_head, other);
		assert_int_equal(pyframes_search_spec(w.pf, &sp), 0);
		ts = get64(&w, get64(&w, sp.interp_at) + sp.threads_off);
		for (int n = 0; ts && n < 4 && !found; n++) {
			uint64_t id = get64(&w, ts + sp.tid_off1);

			if (sp.tid_off2 != PYFRAMES_NO_OFF)
				id = id ? get64(&w, id + sp.tid_off2) : 0;
			if ((uint32_t) id == TID)
				found = ts;
			ts = get64(&w, ts + sp.next_off);
		}
		assert_int_equal(found, w.tstate);
		assert_int_equal(sp.tid_off2 == PYFRAMES_NO_OFF, minors[i] >= 11);
		world_free(&w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_311),
		cmocka_unit_test(test_walk_loop),
		cmocka_unit_test(test_walk_bad_pointers),
		cmocka_unit_test(test_walk_too_deep),
		cmocka_unit_test(test_walk_312_shim),
		cmocka_unit_test(test_walk_incomplete),
		cmocka_unit_test(test_walk_38),
		cmocka_unit_test(test_walk_verify),
		cmocka_unit_test(test_walk_verify_reads),
		cmocka_unit_test(test_code_reuse),
		cmocka_unit_test(test_code_validate_recursion),
		cmocka_unit_test(test_code_validate_ranges),
		cmocka_unit_test(test_code_validate_many),
		cmocka_unit_test(test_capture_spec),
		cmocka_unit_test(test_capture_versions),
		cmocka_unit_test(test_captured),
		cmocka_unit_test(test_captured_cut),
		cmocka_unit_test(test_captured_bad),
		cmocka_unit_test(test_captured_gone),
		cmocka_unit_test(test_captured_cached),
		cmocka_unit_test(test_captured_memo),
		cmocka_unit_test(test_captured_split),
		cmocka_unit_test(test_captured_big_frame),
		cmocka_unit_test(test_thread_state),
		cmocka_unit_test(test_search_spec),
		cmocka_unit_test(test_pid_namespace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
