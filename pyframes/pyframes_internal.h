/*
 * pyframes_internal: what the files of pyframes/ share, and the seams the unit tests use.
 *
 * struct py_layout is the one description of a CPython version the walker reads: every offset
 * it needs, resolved either from a static table (layouts/py3XX.h, 3.8-3.12) or from the
 * target's own _Py_DebugOffsets (3.13+). layout.c is the only file that knows which is which.
 *
 * All remote reads of a walk go through pf_read(), which counts them and serves them from a
 * per-walk page cache (4 KiB aligned pages, so a cached read never touches a page the object
 * does not itself occupy). During a captured walk, an overlay of the captured frames sits
 * under every read (pf_read, pf_read_raw, pf_readv, and so the page cache's fills too).
 */
#ifndef HWSPY_PYFRAMES_INTERNAL_H
#define HWSPY_PYFRAMES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyframes/pyframes.h"

#define PF_NONE           UINT32_MAX /* offset of a field this version does not have */
#define PF_MAX_DEPTH      4096       /* frames a walk keeps at most (the innermost) */
#define PF_MAX_WALK       16384      /* frames a walk follows (counting those past its max) */
#define PF_MEMO_MAX       512        /* nodes and frames of a captured walk kept for the next */
#define PF_MEMO_SLOTS     8          /* threads whose last captured walk is kept */
#define PF_MAX_THREADS    4096       /* thread states followed per interpreter list walk */
#define PF_MAX_INTERPS    256        /* interpreters followed */
#define PF_GIL_READ_MAX   64         /* bytes read of struct _gil_runtime_state */
#define PF_MAX_STR        1024       /* bytes of UTF-8 kept of a name or file name */
#define PF_MAX_LINETABLE  (256 * 1024) /* bytes of line table read per code object */
#define PF_PAGE           4096u
#define PF_PAGE_SLOTS     64         /* pages cached per walk */

/* The bytes the walker copies of each kind of object into a buffer of its own. Every offset it
 * indexes such a copy with lies, with its width, inside these: layout_check() refuses a layout
 * where one does not, once, before any walk. */
#define PF_TSTATE_READ_MAX 4096      /* a thread state: min(ts_size, this) bytes */
#define PF_FRAME_READ_MAX  512       /* a frame: the span of the fields the walker reads */
#define PF_CODE_READ_MAX   4096      /* a code object's header: co_size (at most this) bytes */
#define PF_BYTES_HEAD_MAX  64        /* a bytes object's header: bytes_sval (at most this) */
#define PF_STR_HEAD_MAX    128       /* a str object's header: str_compact_size + 8, or
                                      * str_ascii_size (at most this) */
#define PF_WHY_MAX         192       /* a refused layout's one-line reason */

enum py_frames_kind {
	PY_FRAMES_OBJECT = 1,    /* 3.8-3.10: PyFrameObject chain through f_back */
	PY_FRAMES_INTERP = 2,    /* 3.11+: _PyInterpreterFrame chain through previous */
};

enum py_line_format {
	PY_LINES_LNOTAB = 1,     /* 3.8-3.9 co_lnotab, byte offsets */
	PY_LINES_310 = 2,        /* 3.10 co_linetable, byte offsets */
	PY_LINES_LOCATIONS = 3,  /* 3.11+ location table, code units */
};

/* How dicts and instance attributes are laid out (threads.c). */
enum py_objs_kind {
	PY_OBJS_38 = 1,          /* 3.8-3.10: dict keys with dk_size; __dict__ at tp_dictoffset */
	PY_OBJS_311 = 2,         /* 3.11: dk_log2_size keys; managed dict, values at obj - 32 */
	PY_OBJS_312 = 3,         /* 3.12: managed dict-or-values (tagged) at obj - 24 */
	PY_OBJS_313 = 4,         /* 3.13+: inline values at obj + tp_basicsize, dict at obj - 24 */
};

struct py_layout {
	int major, minor;
	enum py_frames_kind frames;
	enum py_line_format lines;
	bool from_debug_offsets;

	/* _PyRuntime */
	uint32_t rt_interp_head;
	/* PyInterpreterState */
	uint32_t is_next, is_threads_head;
	/* PyThreadState */
	uint32_t ts_size, ts_next, ts_interp, ts_thread_id, ts_native_thread_id;
	uint32_t ts_frame;           /* PyFrameObject * (<=3.10) or _PyInterpreterFrame * (3.13+) */
	uint32_t ts_cframe;          /* 3.11-3.12: _PyCFrame *; PF_NONE otherwise */
	uint32_t cf_current_frame;   /* in _PyCFrame */
	/* frame: PyFrameObject (<=3.10) or _PyInterpreterFrame (3.11+) */
	uint32_t fr_size, fr_previous, fr_code, fr_instr, fr_owner, fr_is_entry;
	uint64_t fr_code_mask;       /* ~7 for 3.14's tagged _PyStackRef, else ~0 */
	uint32_t owner_cstack_min;   /* owner >= this is a shim / C-stack frame (3.12+), else PF_NONE */
	uint32_t owner_generator;    /* FRAME_OWNED_BY_GENERATOR (3.11+) */
	uint32_t fr_gen;             /* PyFrameObject.f_gen (<=3.10): set in a generator's frame */
	/* PyCodeObject */
	uint32_t co_size, co_name, co_qualname, co_filename, co_firstlineno, co_linetable;
	uint32_t co_code_adaptive;   /* 3.11+ */
	uint32_t co_firsttraceable;  /* 3.11+ (3.13+: co_code_adaptive - 16, not in _Py_DebugOffsets) */
	/* objects */
	uint32_t ob_type, ob_size, tp_name;
	uint32_t bytes_sval;
	uint32_t str_length, str_state, str_ascii_size, str_compact_size;
	uint32_t str_kind_shift, str_compact_bit, str_ascii_bit, str_ready_bit; /* ready: PF_NONE from 3.12 */
	/* threading's registry of threads (threads.c), read only for thread names */
	enum py_objs_kind objs;
	uint32_t is_modules;         /* PyInterpreterState: sys.modules (PF_NONE: unknown) */
	uint32_t ht_cached_keys;     /* PyHeapTypeObject: the shared keys of split instance dicts */
	/* the GIL (gil.c): struct _gil_runtime_state in _PyRuntime.ceval.gil (3.8-3.11: rt_gil),
	 * or where the main interpreter's ceval.gil points (3.12+: is_ceval_gil); PF_NONE both
	 * where there is no GIL */
	uint32_t rt_gil, is_ceval_gil;
	uint32_t gil_locked;         /* int locked (inside _Py_atomic_int up to 3.12) */
	uint32_t gil_holder;         /* last_holder: a PyThreadState * */
	/* the cyclic GC (gc.c): struct _gc_runtime_state in _PyRuntime.gc (3.8: rt_gc), or in the
	 * main interpreter's gc (3.9+: is_gc), PF_NONE both where it is not known; its int
	 * collecting (1 while a collection runs), PF_NONE where not known */
	uint32_t rt_gc, is_gc;
	uint32_t gc_collecting;
	/* 3.14+: the interpreter's count of the code objects freed (a u64,
	 * _code_object_generation), 0 where not known (the static tables: no such field) */
	uint32_t is_code_gen;
};

/* layout.c */
const struct py_layout *layout_static(int major, int minor);
/* Parses a _Py_DebugOffsets block (len bytes copied from the start of _PyRuntime). Checks the
 * cookie, that its version is hex_version's major.minor (3.13 or 3.14 block layout), that it is
 * not a free-threaded build, and that every offset lies inside the struct size it names.
 * 0, -EINVAL (corrupt: why, if not NULL, says which field, in one line of at most why_size
 * bytes), -ENOTSUP (a block layout this code does not know). A layout it returns must still
 * pass layout_check(). */
int layout_from_debug_offsets(const void *block, size_t len, struct py_layout *ret,
			      char *why, size_t why_size);
/* The one check of a layout, static table or parsed _Py_DebugOffsets, before any walk uses it:
 * every offset the walker indexes one of its own copies with (thread state, frame, code
 * header, bytes and str headers: PF_*_READ_MAX above), plus its width, lies inside the bytes
 * it copies of that object; the fields it must have are there; state bits fit their 32 bits.
 * 0, or -EINVAL with why (if not NULL) naming the first field that does not, as
 * _Py_DebugOffsets names it ("'code_object.qualname' offset 5000 lies outside ..."). */
int layout_check(const struct py_layout *l, char *why, size_t why_size);
#define PY_DEBUG_OFFSETS_MAX 1024    /* bytes to copy for layout_from_debug_offsets() */
/* The layout for CPython major.minor whose _PyRuntime is at runtime_addr: the static table
 * (3.8-3.12), or the target's own _Py_DebugOffsets (3.13+, read through mem), passed through
 * layout_check() either way. 0; -ENOTSUP (a version, block layout or build not supported);
 * -EBADMSG (refused: why, if not NULL, gets one line naming the field and saying whose offsets
 * they are); an error of mem->read(). */
int layout_select(const struct remote_mem *mem, int major, int minor, uint64_t runtime_addr,
		  struct py_layout *ret, char *why, size_t why_size);

/* mem.c: counted, page-cached reads */
struct pf_pagecache {
	uint64_t page[PF_PAGE_SLOTS];   /* page address + 1, 0 = empty */
	unsigned char *data;            /* PF_PAGE_SLOTS * PF_PAGE */
};

#define PF_SPANS_MAX_ (PYFRAMES_CAPTURE_MAX_NODES * (1 + PYFRAMES_CAPTURE_MAX_EXTRAS))

/* len bytes at remote addr that read as data (a captured frame, or the part of it no other
 * span holds) */
struct pf_span {
	uint64_t addr;
	const unsigned char *data;
	uint32_t len;
	uint32_t node;                  /* its node's index in the capture (orders equal addresses) */
};

struct pf_mem {
	const struct remote_mem *mem;
	struct pf_pagecache pc;
	uint64_t *reads;                /* where reads are counted (stats.remote_reads) */
	bool cache_on;
	struct pf_span *spans;          /* the overlay (PF_SPANS_MAX slots) */
	size_t n_spans;                 /* spans in use, sorted by address, disjoint; 0: no overlay */
	bool overlay_only;              /* with an overlay: what it does not hold fails (-EFAULT,
	                                 * no remote read): the bytes of objects freed since */
	struct pf_seen *seen;           /* PF_SEEN_SLOTS: the extras pieces of this overlay */
	uint32_t gen;                   /* which overlay a seen slot belongs to */
	struct pf_order *order;         /* the last overlay's sort, kept: a thread that stays in
	                                 * one stack gives the same spans sample after sample */
};

/* The spans of the last overlay as they were added (addr, len, node), and the order that sorted
 * them: from spans added the same way, the same order (no sort). */
struct pf_order {
	struct pf_span added[PF_SPANS_MAX_];
	uint16_t sorted[PF_SPANS_MAX_];         /* sorted position i: the added span it is */
	uint16_t at_node[PF_SPANS_MAX_];        /* a span's node order value: where it was added */
	uint64_t key_addr[PF_SPANS_MAX_];
	uint32_t key_len[PF_SPANS_MAX_], key_node[PF_SPANS_MAX_];
	size_t n;                               /* spans in the last overlay (0: none kept) */
};

#define PF_SEEN_SLOTS 4096

struct pf_seen {
	uint64_t addr;
	uint32_t len, gen;
};

#define PF_SPANS_MAX PF_SPANS_MAX_

int pf_mem_init(struct pf_mem *m, const struct remote_mem *mem, uint64_t *reads);
void pf_mem_release(struct pf_mem *m);
void pf_mem_invalidate(struct pf_mem *m);
/* The target's bytes as they are now, past the overlay and the cache (counted). */
int pf_read_live(struct pf_mem *m, uint64_t addr, void *buf, size_t len);
/* Uncached read of exactly len bytes. */
int pf_read_raw(struct pf_mem *m, uint64_t addr, void *buf, size_t len);
/* Read through the page cache (if on); len may span pages. */
int pf_read(struct pf_mem *m, uint64_t addr, void *buf, size_t len);
int pf_read_u64(struct pf_mem *m, uint64_t addr, uint64_t *ret);
/* Uncached reads of n ranges, with as few readv() calls as the reader allows (each counted
 * once; without readv, one read per range). ret_ok[i]: range i was read in full. 0 or -ESRCH. */
int pf_readv(struct pf_mem *m, const struct remote_range *r, size_t n, bool *ret_ok);
/* Until pf_mem_overlay_clear(), every read of m sees the frames of a capture in place of the
 * target's bytes at their addresses: n nodes of stride bytes, each a u64 remote address and
 * then frame_bytes bytes copied from there, then n_extras pieces, each a u64 address (0: none)
 * and extra_len[j] bytes copied from there (struct pyframes_capture). Where pieces overlap, the
 * one at the lower address wins, then the earlier node's, then the earlier piece of a node;
 * pieces at address 0 or running past the address space are left out. A read the overlay
 * covers in full makes no remote read (nor counts one); one it covers in part is read and then
 * patched. The nodes must outlive the overlay. Both drop the page cache (and clear ends
 * overlay_only). 0 or -EINVAL (n > PYFRAMES_CAPTURE_MAX_NODES, frame_bytes 0 or >
 * PYFRAMES_CAPTURE_FRAME_MAX, n_extras > PYFRAMES_CAPTURE_MAX_EXTRAS, an extra_len 0 or >
 * PYFRAMES_CAPTURE_EXTRA_MAX; with n > 0: nodes NULL, stride under what a node holds). With
 * names (not NULL), a node carries its first names->n_inline extras alone, and nodes [0,
 * names->n) the others at names->at + k x names->stride, the same way (struct pyframes_capture);
 * the other nodes none of them; with names->ident, node k's extras, all of them, lie at
 * ident[k] (none where NULL), not in the node nor the names' slots. */
struct pf_names {
	const unsigned char *at;
	size_t n, stride, n_inline;
	const unsigned char *const *ident;      /* every extra by node, as
						 * pyframes_capture.ident (NULL: inline) */
};
int pf_mem_overlay_set(struct pf_mem *m, const unsigned char *nodes, size_t n, size_t stride,
		       size_t frame_bytes, const uint32_t *extra_len, size_t n_extras,
		       const struct pf_names *names);
void pf_mem_overlay_clear(struct pf_mem *m);
/* The overlay's bytes of [addr, addr + len) into buf, zeros where it holds none. */
void pf_read_overlay(const struct pf_mem *m, uint64_t addr, void *buf, size_t len);
/* How many bytes from addr on (at most max) the overlay holds, without a gap. */
size_t pf_mem_covered(const struct pf_mem *m, uint64_t addr, size_t max);
/* The overlay's piece that holds addr: how many of its bytes lie from addr on (*ret points to
 * them; *ret_more: the next piece goes on where it ends); 0 and NULL where none holds addr. */
size_t pf_overlay_piece(const struct pf_mem *m, uint64_t addr, const unsigned char **ret,
			bool *ret_more);
/* Whether the overlay holds all of the n fields [base + off[k], + size[k]), off ascending, each
 * inside [lo, hi): then buf gets the overlay's bytes of [base + lo, base + hi), zeros where it
 * holds none. One search for them all (a code object's identifying fields, at each sample). */
bool pf_overlay_fields(const struct pf_mem *m, uint64_t base, const uint32_t *off,
		       const uint32_t *size, size_t n, uint32_t lo, uint32_t hi, void *buf);

static inline bool pf_ptr_ok(uint64_t p)
{
	return p >= 4096 && p < (1ull << 47) && (p & 7) == 0;
}

static inline uint64_t pf_u64(const void *base, uint32_t off)
{
	uint64_t v;

	__builtin_memcpy(&v, (const char *) base + off, 8);
	return v;
}

static inline uint32_t pf_u32(const void *base, uint32_t off)
{
	uint32_t v;

	__builtin_memcpy(&v, (const char *) base + off, 4);
	return v;
}

/* code.c: strings, line tables, code objects */
/* Decodes a str object at addr into UTF-8 (at most PF_MAX_STR - 1 bytes, cut at a character
 * boundary). 0, -EFAULT, -EINVAL (not a str this layout understands). */
int pf_read_str(struct pf_mem *m, const struct py_layout *l, uint64_t addr, char *ret, size_t size);
/* Pure converters, exposed for tests: kind 1, 2 or 4 code units -> UTF-8 into ret (NUL
 * terminated, cut at a character boundary). Returns bytes written or -EINVAL (bad code point). */
int pf_ucs_to_utf8(const void *data, size_t n, int kind, char *ret, size_t size);

/* Line number of the instruction at byte offset addr (<=3.10) or code-unit index (3.11+,
 * pass the index: the function multiplies as its format needs). -1 when the table says
 * "no line" for it. */
int pf_line_lnotab(const uint8_t *tab, size_t len, int first_line, int64_t byte_offset);
int pf_line_310(const uint8_t *tab, size_t len, int first_line, int64_t byte_offset);
int pf_line_locations(const uint8_t *tab, size_t len, int first_line, int64_t unit_index);

struct pf_code;      /* one cached code object */
struct pf_codecache;

/* 3.12+'s co_version: set from a counter as each code object is made (0 once it ran out),
 * after co_firstlineno and five ints in every layout since; PF_NONE before 3.12. */
static inline uint32_t pf_co_version(const struct py_layout *l)
{
	return l->major == 3 && l->minor >= 12 && l->co_firstlineno != PF_NONE ?
	       l->co_firstlineno + 24 : PF_NONE;
}

struct pf_codecache *pf_codecache_new(void);
void pf_codecache_free(struct pf_codecache *cc);
/* A captured node's identity extras (the capture spec's first n): piece j covers the code's
 * bytes [off[j], off[j] + len[j]), as its u64 address (the code's plus off[j]) and then the
 * bytes, the pieces one after another from a node's identity (struct pf_ident). */
struct pf_ident {
	uint32_t n;
	uint32_t off[PYFRAMES_CAPTURE_MAX_EXTRAS], len[PYFRAMES_CAPTURE_MAX_EXTRAS];
};
/* Checks the cached code objects of frames[0..n) (their .code) against the target for walk
 * number walk: a few header fields that identify a code object (type, name and file pointers,
 * line table, first line, code size), of all of them in one readv(). Entries that still match
 * count as checked for this walk; the others are left for pf_code_resolve() to read afresh.
 * Uncached addresses are skipped. In a captured walk, from the capture instead: where ident
 * (may be NULL) has ident[i], where frame i's own node holds its code's identity (laid out as
 * id says), with no search of the overlay by address; else the overlay's bytes at its address.
 * 0 or -ESRCH. */
int pf_code_validate_ident(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
			   uint64_t walk, const struct py_frame *frames, size_t n,
			   const unsigned char *const *ident, const struct pf_ident *id);
/* Resolves code object addr (instr: byte offset / code unit index as the layout counts it,
 * -1 if unknown) into ret (name, file, first_line, line). A cached entry not checked in this
 * walk (pf_code_validate_ident) has its header read and compared first; one that changed is filled
 * afresh. 0; 1 where instr lies before the code's _co_firsttraceable (3.11+: the frame has not
 * reached its RESUME, or is a shim such as 3.13+'s _Py_InitCleanup, whose first traceable
 * instruction lies past its end), which CPython's _PyFrame_IsIncomplete() calls incomplete
 * unless a generator owns it; -EFAULT, -EINVAL (not a code object: torn), -ENOMEM. */
int pf_code_resolve(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
		    uint64_t code_type, uint64_t walk, uint64_t addr, int64_t instr,
		    struct py_frame *ret, struct pyframes_stats *st);
/* Learns the address of PyCode_Type from a code object's type name ("code"). */
int pf_code_check_type(struct pf_mem *m, const struct py_layout *l, uint64_t type_addr);

/* detect.c */
struct pf_detect {
	struct pyframes_info info;
	uint64_t runtime_addr;
	uint64_t code_type;             /* PyCode_Type, 0 if unknown */
	uint64_t versions_at;           /* 3.12's _Py_next_func_version, 0 if unknown */
	uint64_t hex_version;           /* PY_VERSION_HEX if known */
	uint64_t scan_start, scan_end;  /* remote range to scan for _PyRuntime if no symbol */
	bool scan_is_pyruntime_section;
};
int pf_detect(pid_t pid, const struct remote_mem *mem, struct pf_detect *ret);
/* Parses "3.11.7" or "3.11.7+" style strings at the start of s. */
int pf_parse_version(const char *s, int *major, int *minor, int *micro);

/* gil.c: the main interpreter, the last of _PyRuntime's list (bounded), read uncached and
 * counted in no stats: 0, -ESRCH, -EFAULT (the list head unreadable), -EAGAIN (a bad or
 * looping list). */
int pf_main_interp(const struct pyframes *pf, uint64_t *ret);

/* threads.c: Python's names of the threads (pyframes_thread_names()), from the interpreter
 * whose _PyRuntime is at runtime. */
int pf_thread_names(struct pf_mem *m, const struct py_layout *l, uint64_t runtime,
		    struct pyframes_thread_name *ret, size_t max, size_t *ret_n);

/* walk.c: building a struct pyframes without /proc (tests, fuzzers). -EBADMSG: a layout
 * layout_check() refuses. */
int pyframes_new_from_layout(const struct remote_mem *mem, const struct py_layout *l,
			     uint64_t runtime_addr, uint64_t code_type, pid_t pid,
			     struct pyframes **ret);
/* Overrides the discovered offset of the kernel tid in glibc's struct pthread (<=3.10). */
void pyframes_set_pthread_tid_offset(struct pyframes *pf, uint32_t off);
/* Reads the target's thread ids (NSpid) under proc instead of "/proc" (a fake tree; the
 * string must outlive pf). */
void pyframes_set_proc(struct pyframes *pf, const char *proc);

/* ---- struct pyframes (walk.c: lifecycle and frames; tstate.c: thread states) ---- */

#define TID_SLOTS 1024          /* tid -> thread state cache, power of two */

struct tid_slot {
	pid_t tid;                  /* 0 = empty */
	pid_t target_tid;           /* tid as the target knows it (its own PID namespace's) */
	uint64_t mapped_at;         /* CLOCK_MONOTONIC_COARSE ns when target_tid was read */
	uint64_t tstate;            /* 0: none found (yet) */
	uint64_t pthread;           /* <=3.10: thread_id the tstate had when it was matched */
};

struct pyframes {
	const struct remote_mem *remote;
	struct pf_mem mem;
	struct py_layout layout;
	struct pyframes_info info;
	struct pyframes_stats stats;
	uint64_t clears_told;       /* stats.code_cache_clears, as pyframes_codes_forgotten() said */
	struct pf_codecache *codes;
	pid_t pid;
	const char *proc;           /* the procfs mount the tids are read from */
	enum { PF_NS_UNKNOWN, PF_NS_SAME, PF_NS_OWN } ns;  /* the target's PID namespace vs proc's */
	uint64_t runtime;
	uint64_t code_type;         /* PyCode_Type, 0 until known */
	/* the u32 each new code takes its version from and moves on (3.12's
	 * _Py_next_func_version, found by its symbol): 0 if unknown */
	uint64_t versions_at;
	uint32_t pthread_tid_off;   /* offset of tid in struct pthread, 0 = unknown */
	uint32_t frame_len;         /* bytes of a frame the walker reads (frame_read_len) */
	/* the capture spec's parts the layout alone makes (walk.c's layout_spec()), or the error
	 * it gave: pyframes_capture_spec() adds the code versions' word */
	struct pyframes_capture_spec spec;
	int spec_error;
	bool verify;                /* check a walk over a running thread (walk.c, verify_chain) */
	struct tid_slot tids[TID_SLOTS];
	/* a verified walk: each frame it read (the innermost PF_MAX_DEPTH), its caller link and
	 * code word as read, to compare with what the target holds once the walk is done */
	struct pf_link {
		uint64_t addr, prev, code;
	} links[PF_MAX_DEPTH];
	size_t n_links;
	struct remote_range vr[REMOTE_MEM_READV_MAX];   /* the re-read's ranges, in batches */
	uint64_t vbuf[REMOTE_MEM_READV_MAX];
	bool vok[REMOTE_MEM_READV_MAX];
	int64_t instr[PF_MAX_DEPTH];  /* per kept frame of the current walk, until it is resolved */
	/* per kept frame of a captured walk: its node's code identity in the capture, or NULL */
	const unsigned char *ident[PF_MAX_DEPTH];
	struct pf_ident ident_layout;
	bool by_gen[PF_MAX_DEPTH];    /* per kept frame: a generator owns it (never incomplete) */
	/* the last captured walk of a few threads each (walk.c, walk_splice()), and the one being
	 * made of the current walk */
	struct pf_memo {
		pid_t tid;                  /* 0: empty */
		uint64_t clears, misses;    /* stats.code_cache_clears and _misses when it was made:
		                             * its frames are the cache's as long as neither moves */
		uint64_t code_type;
		uint64_t walk;              /* the id of the walk that made it (pyframes_cut.walk) */
		size_t stride, n_nodes, n_emit;
		uint32_t ident_at;
		bool bottom_entry;
		unsigned char *nodes;       /* a copy of its capture's n_nodes x stride bytes */
		size_t nodes_cap;
		uint16_t after[PF_MEMO_MAX];        /* per node: frames emitted once it was walked */
		struct py_frame frame[PF_MEMO_MAX]; /* per frame emitted: as named, before the
		                                     * incomplete ones were left out */
		bool dropped[PF_MEMO_MAX];          /* ... left out as incomplete */
	} memo[PF_MEMO_SLOTS], memo_new;
	unsigned memo_next;           /* the slot a new thread's memo takes */
	uint64_t memo_spliced;        /* frames a walk took from a memo (tests, bench) */
};

/* tstate.c: thread tid's (as perf and proc give it) thread state, copied into ts (tlen bytes),
 * its address into *ret; errors as pyframes_thread_state(). */
int pf_find_tstate(struct pyframes *pf, pid_t tid, unsigned char *ts, size_t tlen, uint64_t *ret);

#endif
