/*
 * fuzz_pyframes: the layout checks and the frame walker against hostile memory, through the
 * remote_mem seam. Seeds are realistic images of a thread running a few frames (code objects,
 * ASCII and UCS-2 names, line tables, a second thread, generator and shim / entry frames) built
 * with each layout hwspy knows: the static 3.8-3.12 tables and the 3.13 and 3.14
 * _Py_DebugOffsets blocks. Each execution takes one seed and mutates
 *  - the layout: a 3.13/3.14 block's words (a struct size up to 16 MiB and an offset inside it,
 *    past what hwspy copies, is the favourite), or a static table's offsets;
 *  - the memory: bytes, words, pointers to other objects, huge lengths, random regions, and
 *    where readable memory ends;
 * then runs layout acceptance (layout_from_debug_offsets, pyframes_new_from_layout, which
 * calls layout_check) and, for a layout accepted, thread-state lookup, a walk with code
 * resolution twice (the second from the code cache), with verify on or off, and a walk of a
 * capture taken from that memory as the BPF program would take it (its bytes mutated too),
 * and a read of Python's thread names from the threading registry every seed holds.
 * Memory safety is what is checked (run it under ASan: tests/run-all.sh does), plus that every
 * walk returns a documented result with its frames' names readable.
 *
 * Environment: HWSPY_FUZZ_SECONDS (time budget, default 20), HWSPY_FUZZ_ITERS (executions, 0:
 * no limit; with both, the first reached ends the run), HWSPY_FUZZ_SEED (default: from the
 * clock; printed), HWSPY_FUZZ_ONE=N (run execution N of that seed alone: the crash report names
 * it). Prints executions and executions per second as TAP comments.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pyframes/pyframes_internal.h"
#include "dbg_blocks.h"
#include "split_capture.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#define BASE    0x100000ull
#define SIZE    (256u * 1024)
#define TID     1234
#define TID2    1235
#define PT_TID  0x2d0          /* tid in the fake struct pthread (<=3.10) */
#define MAX_OBJ 256
#define N_SEEDS 7              /* 3.8 .. 3.14 */

struct image {
	unsigned char *mem;
	uint64_t next;              /* bump allocator */
	uint64_t limit;             /* reads past this fail (-EFAULT) */
	uint64_t obj[MAX_OBJ];      /* objects, for mutations that aim */
	uint32_t obj_len[MAX_OBJ];
	size_t n_obj;
};

struct seed {
	struct py_layout l;
	unsigned char block[PY_DEBUG_OFFSETS_MAX];  /* 3.13+: the _Py_DebugOffsets block */
	bool dbg;
	struct image img;
	uint64_t runtime, type, tstate;
};

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

/* ---- the fake target ---- */

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	if (addr < BASE || addr + len > im->limit || addr + len < addr)
		return -EFAULT;
	memcpy(buf, im->mem + (addr - BASE), len);
	return 0;
}

static int img_readv(void *ctx, const struct remote_range *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (img_read(ctx, r[i].addr, r[i].buf, r[i].len) < 0)
			break;
	return (int) i;
}

static uint64_t alloc(struct image *im, size_t n)
{
	uint64_t a = im->next;

	im->next += (n + 15) & ~(size_t) 15;
	assert_true(im->next <= BASE + SIZE);
	if (im->n_obj < MAX_OBJ) {
		im->obj[im->n_obj] = a;
		im->obj_len[im->n_obj++] = (uint32_t) n;
	}
	return a;
}

static void put(struct image *im, uint64_t a, const void *v, size_t n)
{
	assert_true(a >= BASE && a + n <= BASE + SIZE);
	memcpy(im->mem + (a - BASE), v, n);
}

static void put8(struct image *im, uint64_t a, uint8_t v) { put(im, a, &v, 1); }
static void put32(struct image *im, uint64_t a, uint32_t v) { put(im, a, &v, 4); }
static void put64(struct image *im, uint64_t a, uint64_t v) { put(im, a, &v, 8); }

/* ---- seeds: a realistic image per layout ---- */

static uint64_t mk_str(struct seed *s, const char *text, bool ucs2)
{
	const struct py_layout *l = &s->l;
	size_t n = strlen(text), i;
	uint64_t a;
	uint32_t st = 1u << l->str_compact_bit;

	if (l->str_ready_bit != PF_NONE)
		st |= 1u << l->str_ready_bit;
	if (ucs2) {
		a = alloc(&s->img, l->str_compact_size + 2 * n + 2);
		st |= 2u << l->str_kind_shift;
		for (i = 0; i < n; i++) {
			uint16_t c = (uint16_t) (i == 0 ? 0x3b1 : (unsigned char) text[i]);

			put(&s->img, a + l->str_compact_size + 2 * i, &c, 2);
		}
	} else {
		a = alloc(&s->img, l->str_ascii_size + n + 1);
		st |= 1u << l->str_kind_shift | 1u << l->str_ascii_bit;
		put(&s->img, a + l->str_ascii_size, text, n);
	}
	put64(&s->img, a + l->ob_type, 0);
	put64(&s->img, a + l->str_length, n);
	put32(&s->img, a + l->str_state, st);
	return a;
}

static uint64_t mk_code(struct seed *s, const char *name, int first_line, bool ucs2)
{
	static const uint8_t lnotab[] = { 0, 1, 8, 2, 4, 1 };
	static const uint8_t locs[] = { 0xdb, 0, 0, 0xe3, 0, 0, 0xf1, 2, 4, 6, 8 };
	const struct py_layout *l = &s->l;
	size_t units = 16;
	size_t size = l->co_code_adaptive != PF_NONE ? l->co_code_adaptive + 2 * units : l->co_size;
	uint64_t a = alloc(&s->img, size), t;
	const uint8_t *tab = l->lines == PY_LINES_LOCATIONS ? locs : lnotab;
	size_t tn = l->lines == PY_LINES_LOCATIONS ? sizeof(locs) : sizeof(lnotab);

	t = alloc(&s->img, l->bytes_sval + tn + 1);
	put64(&s->img, t + l->ob_size, tn);
	put(&s->img, t + l->bytes_sval, tab, tn);
	put64(&s->img, a + l->ob_type, s->type);
	put64(&s->img, a + l->ob_size, units);
	put32(&s->img, a + l->co_firstlineno, (uint32_t) first_line);
	put64(&s->img, a + l->co_name, mk_str(s, name, ucs2));
	if (l->co_qualname != PF_NONE)
		put64(&s->img, a + l->co_qualname, mk_str(s, name, false));
	put64(&s->img, a + l->co_filename, mk_str(s, "fuzz.py", false));
	put64(&s->img, a + l->co_linetable, t);
	return a;
}

static uint64_t mk_frame(struct seed *s, uint64_t code, int idx, uint8_t owner, bool entry)
{
	const struct py_layout *l = &s->l;
	uint64_t a = alloc(&s->img, l->fr_size < 512 ? l->fr_size : 512);

	/* 3.14: a tagged _PyStackRef */
	put64(&s->img, a + l->fr_code, code | (l->fr_code_mask != ~0ull ? 1 : 0));
	if (l->frames == PY_FRAMES_OBJECT) {
		put32(&s->img, a + l->fr_instr, (uint32_t) (2 * idx));
		if (owner == 1)
			put64(&s->img, a + l->fr_gen, s->tstate);   /* any non-zero: a generator */
	} else {
		put64(&s->img, a + l->fr_instr, code + l->co_code_adaptive + 2 * (uint64_t) idx);
		put8(&s->img, a + l->fr_owner, owner);
		if (l->fr_is_entry != PF_NONE)
			put8(&s->img, a + l->fr_is_entry, entry);
	}
	return a;
}

static uint64_t mk_tstate(struct seed *s, uint64_t interp, pid_t tid)
{
	const struct py_layout *l = &s->l;
	uint64_t ts = alloc(&s->img, l->ts_size < 4096 ? l->ts_size : 4096);

	put64(&s->img, ts + l->ts_interp, interp);
	if (l->ts_native_thread_id != PF_NONE) {
		put64(&s->img, ts + l->ts_native_thread_id, (uint64_t) tid);
		put64(&s->img, ts + l->ts_thread_id, 0x7f0000001000ull);
	} else {
		uint64_t pt = alloc(&s->img, 1024);

		put64(&s->img, ts + l->ts_thread_id, pt);
		put32(&s->img, pt + PT_TID, (uint32_t) tid);
	}
	return ts;
}

/* The current frame of thread state ts is frame. */
static void set_top(struct seed *s, uint64_t ts, uint64_t frame)
{
	const struct py_layout *l = &s->l;

	if (l->ts_cframe != PF_NONE) {
		uint64_t cf = alloc(&s->img, 32);

		put64(&s->img, ts + l->ts_cframe, cf);
		put64(&s->img, cf + l->cf_current_frame, frame);
	} else {
		put64(&s->img, ts + l->ts_frame, frame);
	}
}

/* ---- the threading registry (threads.c): sys.modules -> threading -> _active -> Threads ---- */

static uint64_t mk_int(struct seed *s, uint64_t v)
{
	uint64_t a = alloc(&s->img, 32);

	put64(&s->img, a + 16, s->l.objs >= PY_OBJS_312 ? 1u << 3 : 1);
	put32(&s->img, a + 24, (uint32_t) v);
	return a;
}

/* A keys object of n <= 3 entries (values NULL: a split table's shared keys). */
static uint64_t mk_keys(struct seed *s, const uint64_t *keys, const uint64_t *values, size_t n)
{
	bool old = s->l.objs == PY_OBJS_38;
	uint64_t a = alloc(&s->img, 48 + 3 * 24), e = old ? a + 48 : a + 40;
	uint32_t es = old ? 24 : 16, ko = old ? 8 : 0;

	if (old) {
		put64(&s->img, a + 8, 8);
		put64(&s->img, a + 32, n);
	} else {
		put8(&s->img, a + 8, 3);
		put8(&s->img, a + 9, 3);
		put8(&s->img, a + 10, values ? 1 : 2);
		put64(&s->img, a + 24, n);
	}
	for (size_t i = 0; i < n; i++) {
		put64(&s->img, e + i * es + ko, keys[i]);
		put64(&s->img, e + i * es + ko + 8, values ? values[i] : 0);
	}
	return a;
}

static uint64_t mk_dict(struct seed *s, const uint64_t *keys, const uint64_t *values, size_t n)
{
	uint64_t d = alloc(&s->img, 48);

	put64(&s->img, d + 32, mk_keys(s, keys, values, n));
	return d;
}

static uint64_t mk_thread(struct seed *s, uint64_t type, const char *name, pid_t tid)
{
	uint64_t keys[2] = { mk_str(s, "_name", false), mk_str(s, "_native_id", false) };
	uint64_t vals[2] = { mk_str(s, name, tid == TID2), mk_int(s, (uint64_t) tid) };
	uint64_t obj = alloc(&s->img, 96) + 32, v = alloc(&s->img, 16);

	put64(&s->img, obj + 8, type);
	put64(&s->img, v, vals[0]);
	put64(&s->img, v + 8, vals[1]);
	if (s->l.objs == PY_OBJS_38) {
		put64(&s->img, obj + 16, mk_dict(s, keys, vals, 2));
	} else if (s->l.objs == PY_OBJS_311) {
		put64(&s->img, obj - 32, v);
	} else if (s->l.objs == PY_OBJS_312) {
		put64(&s->img, obj - 24, v - 1);
	} else if (tid == TID2) {
		put64(&s->img, obj - 24, mk_dict(s, keys, vals, 2));   /* values moved to a dict */
	} else {
		put8(&s->img, obj + 16, 2);
		put8(&s->img, obj + 17, 2);
		put8(&s->img, obj + 19, 1);
		put64(&s->img, obj + 24, vals[0]);
		put64(&s->img, obj + 32, vals[1]);
	}
	return obj;
}

static void mk_registry(struct seed *s, uint64_t interp)
{
	const struct py_layout *l = &s->l;
	uint64_t type = alloc(&s->img, l->ht_cached_keys + 8), mod = alloc(&s->img, 32);
	uint64_t tk[2] = { mk_str(s, "_name", false), mk_str(s, "_native_id", false) };
	uint64_t ids[2] = { mk_int(s, 0x7f0000001000), mk_int(s, 0x7f0000002000) };
	uint64_t th[2], mk[2], mv[2], ak[2], av[2];

	put64(&s->img, type + 32, 16);
	put64(&s->img, type + 168, l->objs == PY_OBJS_38 ? 0 : l->objs == PY_OBJS_313 ? 0x14 : 0x10);
	put64(&s->img, type + 288, l->objs == PY_OBJS_38 ? 16 : (uint64_t) -1);
	put64(&s->img, type + l->ht_cached_keys, mk_keys(s, tk, NULL, 2));
	th[0] = mk_thread(s, type, "MainThread", TID);
	th[1] = mk_thread(s, type, "CustomThreadNameLong", TID2);
	ak[0] = mk_str(s, "_limbo", false);
	ak[1] = mk_str(s, "_active", false);
	av[0] = alloc(&s->img, 48);
	av[1] = mk_dict(s, ids, th, 2);
	put64(&s->img, mod + 16, mk_dict(s, ak, av, 2));
	mk[0] = mk_str(s, "sys", false);
	mk[1] = mk_str(s, "threading", false);
	mv[0] = alloc(&s->img, 32);
	mv[1] = mod;
	put64(&s->img, interp + l->is_modules, mk_dict(s, mk, mv, 2));
}

static void seed_build(struct seed *s)
{
	const struct py_layout *l = &s->l;
	static const char *const names[] = { "main", "Worker.run", "step", "inner", "leaf" };
	uint64_t interp, ts2, name, prev = 0, frames[8];
	size_t i, n = 0;

	s->img.mem = calloc(1, SIZE);
	assert_non_null(s->img.mem);
	s->img.next = BASE + 0x1000;
	s->img.limit = BASE + SIZE;
	s->runtime = alloc(&s->img, 1024);
	interp = alloc(&s->img, (l->is_modules > l->is_threads_head ? l->is_modules :
				 l->is_threads_head) + 64);
	s->type = alloc(&s->img, 64);
	name = alloc(&s->img, 16);
	put(&s->img, name, "code", 5);
	put64(&s->img, s->type + l->tp_name, name);
	s->tstate = mk_tstate(s, interp, TID);
	ts2 = mk_tstate(s, interp, TID2);
	put64(&s->img, s->tstate + l->ts_next, ts2);
	put64(&s->img, s->runtime + l->rt_interp_head, interp);
	put64(&s->img, interp + l->is_threads_head, s->tstate);
	/* outermost first: main, a generator's frame, a shim (3.12+), three more */
	for (i = 0; i < 5; i++) {
		uint64_t co = mk_code(s, names[i], 10 * (int) i + 1, i == 3);
		uint64_t fr = mk_frame(s, co, (int) i + 1, i == 1 ? 1 : 0, i == 2);

		if (i == 2 && l->owner_cstack_min != PF_NONE) {
			uint64_t shim = mk_frame(s, co, 0, (uint8_t) l->owner_cstack_min, false);

			put64(&s->img, shim + l->fr_previous, prev);
			prev = shim;
		}
		put64(&s->img, fr + l->fr_previous, prev);
		frames[n++] = prev = fr;
	}
	set_top(s, s->tstate, prev);
	set_top(s, ts2, frames[1]);
	mk_registry(s, interp);
}

static void seeds_init(struct seed *seeds)
{
	char why[PF_WHY_MAX];

	memset(seeds, 0, N_SEEDS * sizeof(*seeds));
	for (int i = 0; i < N_SEEDS; i++) {
		struct seed *s = &seeds[i];

		if (i < 5) {
			s->l = *layout_static(3, 8 + i);
		} else {
			s->dbg = true;
			if (i == 5)
				make_block(s->block, dbg313_words, sizeof(dbg313_words) / 8);
			else
				make_block(s->block, dbg314_words, sizeof(dbg314_words) / 8);
			assert_int_equal(layout_from_debug_offsets(s->block, sizeof(s->block), &s->l,
								   why, sizeof(why)), 0);
		}
		assert_int_equal(layout_check(&s->l, why, sizeof(why)), 0);
		seed_build(s);
	}
}

/* ---- mutations ---- */

/* A value a hostile target would write where hwspy expects an offset or a size. */
static uint64_t evil_value(struct rng *r, uint64_t size)
{
	switch (below(r, 8)) {
	case 0:
		return below(r, 64);
	case 1:
		return below(r, 4096 + 1024);
	case 2:
		return size ? size - 1 - below(r, size < 16 ? size : 16) : 0;
	case 3:
		return size ? below(r, size) : 0;
	case 4:
		return below(r, 16u << 20);
	case 5:
		return (16u << 20) - 8 * below(r, 4);
	case 6:
		return rnd(r);
	default:
		return UINT32_MAX - below(r, 16);
	}
}

/* Rewrites a few words of a _Py_DebugOffsets block: often a section's size (up to 16 MiB)
 * and one of its offsets inside it, the corruption a declared-size check lets through. */
static void mutate_block(struct rng *r, unsigned char *b, uint32_t total)
{
	unsigned k = 1 + (unsigned) below(r, 3);

	for (unsigned i = 0; i < k; i++) {
		uint32_t at = 24 + 8 * (uint32_t) below(r, (total - 24) / 8);
		uint64_t v;

		if (below(r, 2)) {
			/* a section size, then an offset just past/inside it a few words on */
			uint64_t size = below(r, 2) ? (16u << 20) : 512 + below(r, 65536);
			uint32_t f = at + 8 * (1 + (uint32_t) below(r, 6));

			memcpy(b + at, &size, 8);
			if (f + 8 <= total) {
				v = size - 8 * (1 + below(r, 3)) + below(r, 2) * below(r, 9);
				memcpy(b + f, &v, 8);
			}
			continue;
		}
		v = evil_value(r, 4096);
		memcpy(b + at, &v, 8);
	}
	if (below(r, 16) == 0)
		b[below(r, 24)] ^= (unsigned char) (1u << below(r, 8));
}

/* Rewrites a few offsets of a static table (as if hwspy's own table were wrong). */
static void mutate_layout(struct rng *r, struct py_layout *l)
{
	static const size_t fields[] = {
		offsetof(struct py_layout, rt_interp_head), offsetof(struct py_layout, is_next),
		offsetof(struct py_layout, is_threads_head), offsetof(struct py_layout, ts_size),
		offsetof(struct py_layout, ts_next), offsetof(struct py_layout, ts_interp),
		offsetof(struct py_layout, ts_thread_id), offsetof(struct py_layout, ts_native_thread_id),
		offsetof(struct py_layout, ts_frame), offsetof(struct py_layout, ts_cframe),
		offsetof(struct py_layout, cf_current_frame), offsetof(struct py_layout, fr_size),
		offsetof(struct py_layout, fr_previous), offsetof(struct py_layout, fr_code),
		offsetof(struct py_layout, fr_instr), offsetof(struct py_layout, fr_owner),
		offsetof(struct py_layout, fr_is_entry), offsetof(struct py_layout, fr_gen),
		offsetof(struct py_layout, co_size), offsetof(struct py_layout, co_name),
		offsetof(struct py_layout, co_qualname), offsetof(struct py_layout, co_filename),
		offsetof(struct py_layout, co_firstlineno), offsetof(struct py_layout, co_linetable),
		offsetof(struct py_layout, co_code_adaptive), offsetof(struct py_layout, ob_type),
		offsetof(struct py_layout, ob_size), offsetof(struct py_layout, tp_name),
		offsetof(struct py_layout, bytes_sval), offsetof(struct py_layout, str_length),
		offsetof(struct py_layout, str_state), offsetof(struct py_layout, str_ascii_size),
		offsetof(struct py_layout, str_compact_size), offsetof(struct py_layout, str_kind_shift),
		offsetof(struct py_layout, str_compact_bit), offsetof(struct py_layout, str_ascii_bit),
		offsetof(struct py_layout, str_ready_bit), offsetof(struct py_layout, owner_cstack_min),
	};
	unsigned k = 1 + (unsigned) below(r, 3);

	for (unsigned i = 0; i < k; i++) {
		uint32_t v = (uint32_t) evil_value(r, 512);

		memcpy((char *) l + fields[below(r, sizeof(fields) / sizeof(fields[0]))], &v, 4);
	}
}

static uint64_t some_obj(struct rng *r, const struct image *im)
{
	return im->obj[below(r, im->n_obj)];
}

static void mutate_mem(struct rng *r, struct image *im)
{
	unsigned k = 1 + (unsigned) below(r, 12);

	for (unsigned i = 0; i < k; i++) {
		size_t o = below(r, im->n_obj);
		uint64_t at = im->obj[o] + (below(r, 4) ? below(r, im->obj_len[o] + 8) : below(r, 640));
		uint64_t v;

		at &= below(r, 4) ? ~7ull : ~0ull;
		if (at < BASE || at + 8 > BASE + SIZE)
			continue;
		switch (below(r, 9)) {
		case 0:
			im->mem[at - BASE] ^= (unsigned char) (1u << below(r, 8));
			continue;
		case 1:
			v = some_obj(r, im) + below(r, 3) * below(r, 64);   /* another object */
			break;
		case 2:
			v = evil_value(r, 1u << 30);                         /* a length */
			break;
		case 3:
			v = 0;
			break;
		case 4:
			v = BASE + below(r, SIZE);                           /* anywhere, unaligned */
			break;
		case 5:
			v = BASE + SIZE - below(r, 64);                       /* at the end */
			break;
		case 6:
			v = 0xdead0000ull;                                    /* unmapped */
			break;
		case 7: {
			/* a region of random bytes */
			size_t n = below(r, 256);

			for (size_t j = 0; j < n && at + j < BASE + SIZE; j++)
				im->mem[at + j - BASE] = (unsigned char) rnd(r);
			continue;
		}
		default:
			v = rnd(r);
			break;
		}
		memcpy(im->mem + (at - BASE), &v, 8);
	}
	if (below(r, 8) == 0)
		im->limit = BASE + 0x1000 + below(r, SIZE - 0x1000);  /* memory ends early */
}

/* ---- one execution ---- */

struct counts {
	uint64_t execs, refused, accepted, walks_ok, walks_err, frames, captured, named;
	uint64_t split, split_same;     /* split captures walked; whole, compared with inline */
};

/* A result a walk may return, and frames whose strings are readable. */
static void check_walk(int r, const struct py_frame *out, size_t n, size_t max,
		       const struct pyframes_cut *cut, struct counts *c)
{
	assert_true(r == 0 || r == -EAGAIN || r == -EFAULT || r == -ENOENT || r == -EINVAL ||
		    r == -ENOMEM);
	if (r < 0) {
		assert_true(cut->n == 0 && !cut->more);
		c->walks_err++;
		return;
	}
	c->walks_ok++;
	assert_true(n <= max);
	assert_true(cut->n <= PF_MAX_WALK);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(out[i].name);
		assert_non_null(out[i].file);
		assert_true(strlen(out[i].name) < PF_MAX_STR && strlen(out[i].file) < PF_MAX_STR);
	}
	c->frames += n;
}

/* The capture the BPF program would take of TID's stack, from this memory; with the spec's
 * extras (n_extras of them: 0 or all) after each frame. */
static size_t take_capture(struct rng *r, struct pyframes *pf, struct image *im,
			   uint64_t tstate, unsigned char *nodes, size_t stride, size_t cap,
			   size_t n_extras, uint64_t *ret_head)
{
	struct pyframes_capture_spec sp;
	uint64_t p = 0, frame = 0;
	size_t n = 0, need;

	*ret_head = 0;
	if (pyframes_capture_spec(pf, &sp) < 0 || (n_extras && n_extras != sp.n_extras))
		return 0;
	need = 8 + sp.frame_bytes;
	for (size_t j = 0; j < n_extras; j++)
		need += 8 + sp.extra[j].len;
	if (need > stride)
		return 0;
	if (img_read(im, tstate + sp.head_off1, &p, 8) < 0)
		return 0;
	frame = p;
	if (sp.head_off2 != PYFRAMES_NO_OFF)
		frame = p && img_read(im, p + sp.head_off2, &frame, 8) == 0 ? frame : 0;
	*ret_head = frame;
	while (frame && n < cap) {
		unsigned char *node = nodes + n * stride;

		memcpy(node, &frame, 8);
		if (img_read(im, frame, node + 8, sp.frame_bytes) < 0)
			break;
		n++;
		memcpy(&frame, node + 8 + sp.next_off, 8);
		for (size_t j = 0, at = 8 + sp.frame_bytes; j < n_extras; at += 8 + sp.extra[j].len, j++) {
			uint64_t ptr, addr;

			memcpy(&ptr, node + 8 + sp.extra[j].from, 8);
			addr = (ptr & sp.extra[j].mask) + sp.extra[j].off;
			if (img_read(im, addr, node + at + 8, sp.extra[j].len) < 0)
				addr = 0;
			memcpy(node + at, &addr, 8);
		}
	}
	/* the capture itself, torn */
	if (n && below(r, 4) == 0)
		nodes[below(r, n * stride)] ^= (unsigned char) rnd(r);
	return n;
}

/* cap (extras inline: take_capture()) split as the BPF program's records are handed on
 * (split_capture()), unless whole some identities lacking (the reader had not read them) and
 * only the first n_names nodes with names. */
static struct pyframes_capture split_some(struct rng *r, const struct pyframes_capture *cap,
					  const struct pyframes_capture_spec *sp,
					  unsigned char *compact, const unsigned char **ident,
					  bool whole)
{
	struct pyframes_capture out = split_capture(cap, sp, compact, ident);

	if (whole)
		return out;
	for (size_t k = 0; k < cap->n; k++)
		if (below(r, 8) == 0)
			ident[k] = NULL;
	out.n_names = below(r, (uint32_t) cap->n + 1);
	return out;
}

/* What executions share: the image they mutate, the reader, and a struct pyframes per seed
 * that lives for a round of ROUND executions (its caches see memory change under them, as a
 * profiler's do) for the executions that keep the seed's layout. */
#define ROUND 256

struct run {
	struct seed *seeds;
	struct image im;
	struct remote_mem rm;
	struct pyframes *pf[N_SEEDS];
	struct counts c;
};

static void run_round_end(struct run *run)
{
	for (int i = 0; i < N_SEEDS; i++) {
		pyframes_free(run->pf[i]);
		run->pf[i] = NULL;
	}
}

static void exec_one(struct run *run, uint64_t seed, uint64_t iter)
{
	struct rng r = { .s = seed * 0x100000001b3ull ^ (iter + 1) * 0x9e3779b97f4a7c15ull };
	size_t si = below(&r, N_SEEDS);
	const struct seed *s = &run->seeds[si];
	struct image *im = &run->im;
	struct counts *c = &run->c;
	bool own = false;
	struct py_frame out[64];
	struct py_layout l = s->l;
	struct pyframes *pf = NULL;
	unsigned char nodes[32 * PYFRAMES_CAPTURE_STRIDE_MAX];
	size_t n, max = 1 + below(&r, 64), stride;
	uint64_t ts = 0, head;
	struct pyframes_cut cut;
	int rr;

	c->execs++;
	/* the memory: the seed's image, mutated (or not: the layout alone) */
	memcpy(im->mem, s->img.mem, SIZE);
	im->limit = s->img.limit;
	im->n_obj = s->img.n_obj;
	memcpy(im->obj, s->img.obj, sizeof(im->obj));
	memcpy(im->obj_len, s->img.obj_len, sizeof(im->obj_len));
	if (below(&r, 8) != 0)
		mutate_mem(&r, im);
	run->rm.readv = below(&r, 2) ? img_readv : NULL;
	/* the layout */
	if (s->dbg && below(&r, 2) == 0) {
		unsigned char b[PY_DEBUG_OFFSETS_MAX];
		char why[PF_WHY_MAX];

		memcpy(b, s->block, sizeof(b));
		mutate_block(&r, b, l.minor == 13 ? 584 : 760);
		own = true;
		rr = layout_from_debug_offsets(b, sizeof(b), &l, why, sizeof(why));
		if (rr < 0) {
			/* corrupt, named in one line; or a version or build hwspy does not know */
			assert_true(rr == -ENOTSUP || (rr == -EINVAL && why[0] && !strchr(why, '\n')));
			c->refused++;
			return;
		}
	} else if (!s->dbg && below(&r, 4) == 0) {
		own = true;
		mutate_layout(&r, &l);
	}
	pf = own ? NULL : run->pf[si];
	if (!pf) {
		rr = pyframes_new_from_layout(&run->rm, &l, s->runtime, below(&r, 2) ? s->type : 0,
					      1, &pf);
		if (rr < 0) {
			assert_true(own);   /* the seeds' own layouts pass */
			assert_int_equal(rr, -EBADMSG);
			c->refused++;
			return;
		}
		if (!own)
			run->pf[si] = pf;
	}
	c->accepted++;
	if (l.ts_native_thread_id == PF_NONE)
		pyframes_set_pthread_tid_offset(pf, below(&r, 8) ? PT_TID : (uint32_t) below(&r, 2048));
	pyframes_set_verify(pf, below(&r, 2));
	rr = pyframes_thread_stack(pf, TID, out, max, &n, &cut);
	check_walk(rr, out, n, max, &cut, c);
	rr = pyframes_thread_stack(pf, below(&r, 4) ? TID : TID2, out, max, &n, &cut);
	check_walk(rr, out, n, max, &cut, c);
	/* a capture of the same stack, as the BPF program takes it */
	if (pyframes_thread_state(pf, TID, &ts) == 0) {
		struct pyframes_capture cap = { 0 };
		struct pyframes_capture_spec sp;

		/* the frames alone, or with the extras (code objects, names) */
		if (below(&r, 2) && pyframes_capture_spec(pf, &sp) == 0) {
			cap.n_extras = sp.n_extras;
			stride = PYFRAMES_CAPTURE_STRIDE_MAX;
		} else {
			stride = 8 + PYFRAMES_CAPTURE_FRAME_MAX + 8 * below(&r, 2);
		}
		cap.n = take_capture(&r, pf, im, ts, nodes, stride, 32, cap.n_extras, &head);
		cap.head = below(&r, 8) ? head : some_obj(&r, im);
		cap.nodes = nodes;
		cap.stride = stride;
		rr = pyframes_thread_stack_captured(pf, &cap, out, max, &n, &cut);
		check_walk(rr, out, n, max, &cut, c);
		c->captured++;
		/* split as the BPF program sends it: whole, the same frames; else bounded */
		if (cap.n_extras && sp.n_identity && sp.n_identity < sp.n_extras) {
			static unsigned char compact[32 * (8 + PYFRAMES_CAPTURE_FRAME_MAX + 8)];
			const unsigned char *ident[32];
			struct py_frame split[64];
			struct pyframes_cut scut;
			bool whole = below(&r, 2);
			struct pyframes_capture sc = split_some(&r, &cap, &sp, compact, ident,
								whole);
			size_t ns;
			int rs = pyframes_thread_stack_captured(pf, &sc, split, max, &ns, &scut);

			check_walk(rs, split, ns, max, &scut, c);
			c->split++;
			if (whole && rr == 0 && rs == 0) {
				c->split_same++;
				assert_true(ns == n);
				for (size_t i = 0; i < n; i++)
					assert_true(split[i].code == out[i].code &&
						    !strcmp(split[i].name, out[i].name) &&
						    split[i].line == out[i].line);
			}
		}
		/* as its thread's, twice: the first walk is the memo the second takes the frames
		 * past the shared nodes from (walk.c, walk_splice()); the second must give the
		 * first's frames, its own walk of the nodes before them included */
		if (rr == 0) {
			struct py_frame first[64];
			struct pyframes_cut fcut;
			size_t nf;
			int rf;

			cap.tid = TID;
			rf = pyframes_thread_stack_captured(pf, &cap, first, max, &nf, &fcut);
			rr = pyframes_thread_stack_captured(pf, &cap, out, max, &n, &cut);
			check_walk(rr, out, n, max, &cut, c);
			if (rr == 0 && rf == 0) {
				assert_true(nf == n && fcut.n == cut.n && fcut.more == cut.more);
				for (size_t i = 0; i < n; i++)
					assert_true(first[i].code == out[i].code &&
						    !strcmp(first[i].name, out[i].name) &&
						    !strcmp(first[i].file, out[i].file) &&
						    first[i].line == out[i].line &&
						    first[i].first_line == out[i].first_line &&
						    first[i].entry == out[i].entry);
			}
		}
	}
	/* Python's thread names: bounded results, NUL-terminated names */
	{
		struct pyframes_thread_name names[4];
		size_t nmax = 1 + below(&r, 4);

		rr = pyframes_thread_names(pf, names, nmax, &n);
		assert_true(rr == 0 || rr == -ENOENT || rr == -EAGAIN || rr == -ENOTSUP ||
			    rr == -EFAULT || rr == -EINVAL);
		assert_true(n <= nmax && (rr == 0 || n == 0));
		for (size_t i = 0; i < n; i++) {
			assert_true(memchr(names[i].name, '\0', sizeof(names[i].name)) != NULL);
			assert_true(names[i].tid > 0);
		}
		c->named += n;
	}
	if (own)
		pyframes_free(pf);
}

/* ---- the run ---- */

static volatile uint64_t cur_seed, cur_iter;

static void say(const char *s)
{
	ssize_t w = write(2, s, strlen(s));

	(void) w;
}

static void say_u64(uint64_t v)
{
	char b[24];
	int i = (int) sizeof(b) - 1;

	b[i] = '\0';
	do {
		b[--i] = (char) ('0' + v % 10);
		v /= 10;
	} while (v);
	say(b + i);
}

/* Names the execution that crashed (async-signal-safe). */
static void on_death(void)
{
	say("# fuzz_pyframes: died in execution ");
	say_u64(cur_iter);
	say(" of seed ");
	say_u64(cur_seed);
	say("; reproduce with HWSPY_FUZZ_SEED=");
	say_u64(cur_seed);
	say(" HWSPY_FUZZ_ONE=");
	say_u64(cur_iter);
	say("\n");
}

static void on_signal(int sig)
{
	on_death();
	(void) sig;   /* SA_RESETHAND: returning re-runs the faulting access, with the default action */
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

static void test_fuzz(void **state)
{
	struct run run = { .rm = { .read = img_read } };
	double seconds = (double) env_u64("HWSPY_FUZZ_SECONDS", 20), t0, dt;
	uint64_t iters = env_u64("HWSPY_FUZZ_ITERS", 0);
	uint64_t seed = env_u64("HWSPY_FUZZ_SEED", (uint64_t) time(NULL) ^ (uint64_t) getpid() << 32);
	const char *one = getenv("HWSPY_FUZZ_ONE");
	struct counts *c = &run.c;

	(void) state;
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_set_death_callback(on_death);   /* a sanitizer's report */
#endif
	{
		/* a crash the sanitizers do not report: over cmocka's own handlers, which would
		 * carry on with the next test */
		struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };

		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		sigaction(SIGABRT, &sa, NULL);
	}
	run.seeds = calloc(N_SEEDS, sizeof(*run.seeds));
	assert_non_null(run.seeds);
	seeds_init(run.seeds);
	run.im.mem = calloc(1, SIZE);
	assert_non_null(run.im.mem);
	run.rm.ctx = &run.im;
	cur_seed = seed;
	print_message("# fuzz_pyframes: seed %" PRIu64 ", budget %.0f s%s\n", seed, seconds,
		      iters ? " or the executions asked" : "");
	t0 = now_s();
	if (one && *one) {
		/* its round, from the start: the shared caches are part of the state */
		uint64_t n = strtoull(one, NULL, 0);

		for (uint64_t i = n - n % ROUND; i <= n; i++) {
			cur_iter = i;
			exec_one(&run, seed, i);
		}
	} else {
		for (uint64_t i = 0; !iters || i < iters; i++) {
			cur_iter = i;
			if (i % ROUND == 0)
				run_round_end(&run);
			exec_one(&run, seed, i);
			if ((i & 63) == 63 && now_s() - t0 >= seconds)
				break;
		}
	}
	run_round_end(&run);
	dt = now_s() - t0;
	print_message("# fuzz_pyframes: %" PRIu64 " executions in %.1f s (%.0f/s): %" PRIu64
		      " layouts refused, %" PRIu64 " accepted; walks %" PRIu64 " ok (%" PRIu64
		      " frames), %" PRIu64 " errors; %" PRIu64 " captured walks (%" PRIu64
		      " split, %" PRIu64 " compared whole); %" PRIu64 " thread names\n", c->execs,
		      dt, dt > 0 ? (double) c->execs / dt : 0.0, c->refused, c->accepted,
		      c->walks_ok, c->frames, c->walks_err, c->captured, c->split, c->split_same,
		      c->named);
	/* the seeds are walked, not refused: the fuzzer reaches the walker, and the registry */
	assert_true(c->execs < 100 || c->walks_ok > 0);
	assert_true(c->execs < 100 || c->named > 0);
	for (int i = 0; i < N_SEEDS; i++)
		free(run.seeds[i].img.mem);
	free(run.seeds);
	free(run.im.mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
