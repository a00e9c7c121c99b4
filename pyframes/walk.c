/*
 * walk: struct pyframes and frame chains, read live or from a capture (the frames' bytes from
 * the capture, through mem.c's overlay). Thread states (kernel TID -> PyThreadState): tstate.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyframes/pyframes_internal.h"

_Static_assert(PYFRAMES_CAPTURE_MAX_NODES <= PF_MAX_DEPTH,
	       "a capture holds no more frames than a walk follows");

const struct pyframes_info *pyframes_info(const struct pyframes *pf)
{
	return &pf->info;
}

const struct pyframes_stats *pyframes_stats(const struct pyframes *pf)
{
	return &pf->stats;
}

bool pyframes_codes_forgotten(struct pyframes *pf)
{
	bool r = pf->stats.code_cache_clears != pf->clears_told;

	pf->clears_told = pf->stats.code_cache_clears;
	return r;
}

void pyframes_free(struct pyframes *pf)
{
	if (!pf)
		return;
	pf_codecache_free(pf->codes);
	pf_mem_release(&pf->mem);
	for (size_t i = 0; i < PF_MEMO_SLOTS; i++)
		free(pf->memo[i].nodes);
	free(pf);
}

static uint32_t field_end(uint32_t off, uint32_t width)
{
	return off == PF_NONE ? 0 : off + width;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Bytes from a frame's start that span every field the walker reads from it. */
static uint32_t frame_read_len(const struct py_layout *l)
{
	uint32_t n = max_u32(field_end(l->fr_code, 8), field_end(l->fr_previous, 8));

	if (l->frames == PY_FRAMES_OBJECT)
		return max_u32(n, max_u32(field_end(l->fr_instr, 4), field_end(l->fr_gen, 8)));
	n = max_u32(n, field_end(l->fr_instr, 8));
	return max_u32(n, max_u32(field_end(l->fr_owner, 1), field_end(l->fr_is_entry, 1)));
}

static int layout_spec(const struct py_layout *l, uint32_t frame_len,
		       struct pyframes_capture_spec *ret);

int pyframes_new_from_layout(const struct remote_mem *mem, const struct py_layout *l,
			     uint64_t runtime_addr, uint64_t code_type, pid_t pid,
			     struct pyframes **ret)
{
	struct pyframes *pf;
	int r;

	/* every offset it indexes a copy with, inside that copy (frame_len included) */
	if (layout_check(l, NULL, 0) < 0)
		return -EBADMSG;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->remote = mem;
	pf->layout = *l;
	pf->runtime = runtime_addr;
	pf->code_type = code_type;
	pf->pid = pid;
	pf->proc = "/proc";
	pf->info.major = l->major;
	pf->info.minor = l->minor;
	pf->info.runtime_addr = runtime_addr;
	pf->frame_len = frame_read_len(l);
	pf->spec_error = layout_spec(l, pf->frame_len, &pf->spec);
	r = pf_mem_init(&pf->mem, mem, &pf->stats.remote_reads);
	if (r < 0)
		goto fail;
	pf->codes = pf_codecache_new();
	if (!pf->codes) {
		r = -ENOMEM;
		goto fail;
	}
	*ret = pf;
	return 0;
fail:
	pyframes_free(pf);
	return r;
}

int pyframes_thread_names(struct pyframes *pf, struct pyframes_thread_name *ret, size_t max,
			  size_t *ret_n)
{
	pf_mem_invalidate(&pf->mem);
	return pf_thread_names(&pf->mem, &pf->layout, pf->runtime, ret, max, ret_n);
}

/* ---- frames ---- */

struct walk {
	struct pyframes *pf;
	struct py_frame *out;
	size_t max, n, total;
	bool more;                       /* stopped at PF_MAX_WALK frames: more than total */
	bool capture_end;                /* stop where the capture ends (its frames alone) */
	bool unknown;                    /* stopped there: how many more frames is not known */
	uint64_t tortoise, power, lam;   /* Brent's cycle detection */
	bool verify;                     /* the checks of a walk over a running thread */
	bool bottom_entry;               /* the last frame read may end a thread's chain: one an
	                                  * eval loop entered from C (3.11 is_entry, 3.12+ a shim),
	                                  * or any frame where the layout tells none apart */
	/* a captured walk whose nodes hold their code's identity (pf->ident_layout), or point to
	 * it (cap->ident): the capture, and where a node's identity starts in it */
	const struct pyframes_capture *cap;
	uint32_t ident_at;               /* 0: at cap->ident[node] */
	/* ... and its thread's previous one (walk_splice()): the nodes [splice_from, cap->n) are
	 * the memo's [memo_from, memo->n_nodes), byte for byte */
	const struct pf_memo *memo;
	size_t splice_from, memo_from;
	size_t n_fresh;                  /* frames [0, n_fresh) were walked, the rest spliced */
	size_t depth;                    /* nodes walked (spliced ones too) */
	size_t n_emit;                   /* frames emitted, before the incomplete ones left */
	bool memo_ok;                    /* the walk can be a memo: pf->memo_new follows it */
	uint64_t id, memo_walk;          /* pyframes_cut's walk and memo_walk */
	size_t spliced;                  /* ... and spliced: kept frames past n_fresh */
};

static uint64_t walk_ids;               /* the last captured walk's id, in the process */

/* Where the capture's node at depth holds its code's identity, if that node is the frame read
 * at frame (the walk follows the chain the capture copied, node by node); NULL if not. */
static const unsigned char *node_ident(const struct walk *w, size_t depth, uint64_t frame)
{
	const unsigned char *node;

	if (!w->cap || depth >= w->cap->n)
		return NULL;
	node = w->cap->nodes + depth * w->cap->stride;
	if (pf_u64(node, 0) != frame)
		return NULL;
	return w->cap->ident ? w->cap->ident[depth] : node + w->ident_at;
}

/* The memo made of this walk notes how many frames were emitted once node d was walked. */
static void memo_note(struct walk *w, size_t d)
{
	if (d < PF_MEMO_MAX)
		w->pf->memo_new.after[d] = (uint16_t) (w->n < PF_MEMO_MAX ? w->n : PF_MEMO_MAX);
}

/*
 * A deep stack's outer frames are the same bytes sample after sample: a captured walk takes
 * them from its thread's previous captured walk (the memo) rather than walk and name them
 * again. If node d (the frame at frame) is the first of the nodes this capture shares with the
 * memo at its outermost end, appends the frames the memo emitted from its own copy of node d
 * on, as the memo named them, and ends the walk (true).
 *
 * It first notes how many frames were emitted once the last node walked was. walked: called
 * as the walk leaves node d (the last walked). A 3.12+ frame waits for the next node (a shim
 * marks it an entry), so the frame of node d itself is among the memo's, and the frame pending
 * from node d - 1 was emitted by the walk of node d. Else (3.8-3.11, whose walks emit a node's
 * frame as they read it) called before node d is read (node d - 1 the last walked): the frames
 * emitted are those of the nodes before it, and the memo's from its copy of node d on are the
 * rest. What was emitted after a node was walked depends on that node and
 * those past it alone. Nodes equal byte for byte hold the same frames, caller links,
 * instructions and code identities (or, cap->ident, checks of them: equal checks, equal
 * identities), so they name the same code objects: the names need no check while the code
 * cache neither cleared nor (re)filled an entry since the memo was made (a fill reads the line
 * table, past what a capture holds). A memo is made only of a walk that ended within its
 * capture, every frame kept, so nothing past the shared nodes was read from memory.
 */
static bool walk_splice(struct walk *w, size_t d, uint64_t frame, bool walked)
{
	struct pf_memo *nw = &w->pf->memo_new;
	const struct pf_memo *old = w->memo;
	size_t from, count, depth;

	if (walked)
		memo_note(w, d);
	else if (d > 0)
		memo_note(w, d - 1);
	if (!old || d != w->splice_from ||
	    pf_u64(w->cap->nodes + d * w->cap->stride, 0) != frame)
		return false;
	from = walked ? old->after[w->memo_from] :
	       w->memo_from > 0 ? old->after[w->memo_from - 1] : 0;
	count = old->n_emit - from;
	depth = d + (old->n_nodes - w->memo_from);
	if (w->n != w->total || w->n + count > w->max || w->n + count > PF_MEMO_MAX ||
	    depth > PF_MAX_WALK || depth > PF_MEMO_MAX)
		return false;
	memcpy(&w->out[w->n], &old->frame[from], count * sizeof(*w->out));
	memcpy(&nw->frame[w->n], &old->frame[from], count * sizeof(*w->out));
	memcpy(&nw->dropped[w->n], &old->dropped[from], count * sizeof(*nw->dropped));
	for (size_t k = walked; d + k < depth; k++)
		nw->after[d + k] = (uint16_t) (old->after[w->memo_from + k] - from + w->n);
	w->n_fresh = w->n;
	w->memo_walk = old->walk;
	w->n += count;
	w->total += count;
	w->depth = depth;
	w->bottom_entry = old->bottom_entry;
	w->pf->memo_spliced += count;
	w->memo_ok = true;              /* the memo's walk ended within its capture */
	return true;
}

/* As the walk leaves its chain after depth nodes (frame: where it would go on, 0 at its end). */
static void walk_left(struct walk *w, size_t depth, uint64_t frame)
{
	if (depth > 0)
		memo_note(w, depth - 1);
	w->depth = depth;
	w->memo_ok = frame == 0;
}

/* A PyFrameObject (3.8-3.10) is a PyObject: its reference count first. Frames the thread runs
 * hold references (their callee's f_back, the call in progress); a freed one has 0 (on the
 * frame free list, its f_back the list's link, or its code's zombie frame). A live frame
 * object's f_back and f_code stay what they were made with (a generator's f_back aside: one
 * outermost is refused apart), and it keeps its f_back alive: a chain of frames each alive when
 * read is the chain the innermost was called from. A frame freed and taken by another call
 * between its callee's read and its own would join two chains; the free list hands out the
 * frame freed last first, so a call at the same depth takes the memory its predecessor had
 * there, with the same f_back and code. Frames freed after they were read (the thread
 * returned) change nothing read. */
#define PF_OB_REFCNT 0

/* A verified walk of _PyInterpreterFrames notes each frame it read, with its caller link and
 * code word as read (verify_chain). */
static void walk_link(struct walk *w, uint64_t frame, uint64_t prev, uint64_t code)
{
	struct pyframes *pf = w->pf;

	if (w->verify && pf->n_links < PF_MAX_DEPTH)
		pf->links[pf->n_links++] = (struct pf_link) { frame, prev, code };
}

/* Whether the walk ends before frame: PF_MAX_WALK frames followed, or (capture_end) a frame
 * the capture does not hold. */
static bool walk_stop(struct walk *w, uint64_t frame, size_t depth)
{
	if (depth >= PF_MAX_WALK) {
		w->more = true;
		return true;
	}
	if (w->capture_end && pf_mem_covered(&w->pf->mem, frame, w->pf->frame_len) < w->pf->frame_len) {
		w->unknown = true;
		return true;
	}
	return false;
}

static int walk_loop_check(struct walk *w, uint64_t addr)
{
	if (addr == w->tortoise)
		return -EAGAIN;
	if (++w->lam == w->power) {
		w->tortoise = addr;
		w->power *= 2;
		w->lam = 0;
	}
	return 0;
}

/* Adds one frame; once max (at most PF_MAX_DEPTH) are kept, later (outer) ones are counted and
 * dropped. Names come later, from walk_resolve(). */
static int walk_emit(struct walk *w, uint64_t code, int64_t instr, bool entry, bool by_gen,
		     const unsigned char *ident)
{
	w->total++;
	if (w->n >= w->max || w->n >= PF_MAX_DEPTH)
		return 0;
	memset(&w->out[w->n], 0, sizeof(w->out[w->n]));
	w->out[w->n].code = code;
	w->out[w->n].entry = entry;
	w->pf->instr[w->n] = instr;
	w->pf->by_gen[w->n] = by_gen;
	w->pf->ident[w->n] = ident;
	w->n++;
	return 0;
}

/* Names the kept frames: the cached code objects among them are checked in one vectored read,
 * then each frame is resolved (reading only what is not cached or no longer current). */
static int walk_resolve(struct walk *w)
{
	struct pyframes *pf = w->pf;
	size_t i, kept = 0;
	int r;

	if (w->n == 0)
		return 0;
	if (!pf->code_type) {
		uint64_t t;

		/* learn PyCode_Type from the first frame's code object */
		r = pf_read_u64(&pf->mem, w->out[0].code + pf->layout.ob_type, &t);
		if (r < 0)
			return r;
		r = pf_code_check_type(&pf->mem, &pf->layout, t);
		if (r < 0)
			return r == -ESRCH ? r : -EAGAIN;
		pf->code_type = t;
	}
	r = pf_code_validate_ident(pf->codes, &pf->mem, &pf->layout, pf->stats.walks, w->out,
				   w->n_fresh, w->cap ? pf->ident : NULL, &pf->ident_layout);
	if (r < 0)
		return r;
	/* the frames of a memo made of this walk, as named (the compaction below changes them) */
	w->memo_ok = w->memo_ok && w->n == w->total && w->n <= PF_MEMO_MAX;
	w->n_emit = w->n;
	for (i = 0; i < w->n; i++) {
		bool drop;

		if (i >= w->n_fresh) {
			/* spliced from the memo: as it named them */
			drop = pf->memo_new.dropped[i];
		} else {
			/* fills code, name, file, lines; entry stays */
			r = pf_code_resolve(pf->codes, &pf->mem, &pf->layout, pf->code_type,
					    pf->stats.walks, w->out[i].code, pf->instr[i], &w->out[i],
					    &pf->stats);
			if (r < 0)
				return r;
			drop = r == 1 && !pf->by_gen[i];
			if (w->memo_ok) {
				pf->memo_new.frame[i] = w->out[i];
				pf->memo_new.dropped[i] = drop;
			}
		}
		/* an incomplete frame (CPython's _PyFrame_IsIncomplete: before its first traceable
		 * instruction, not a generator's) is left out, as CPython's tracebacks leave it:
		 * 3.13+'s _Py_InitCleanup shim between a class call and its __init__, a frame still
		 * in its prelude. An entry flag it carries stays with its eval-loop entry. */
		if (drop) {
			if (w->out[i].entry && kept > 0)
				w->out[kept - 1].entry = true;
			w->total--;     /* not a frame of the stack: no truncation */
			continue;
		}
		if (kept != i)
			w->out[kept] = w->out[i];
		kept++;
		w->spliced += i >= w->n_fresh;
	}
	w->n = kept;
	return 0;
}

static int walk_frame_objects(struct walk *w, uint64_t frame)
{
	const struct py_layout *l = &w->pf->layout;
	unsigned char buf[PF_FRAME_READ_MAX];
	size_t depth;
	int r;

	for (depth = 0; frame; depth++) {
		uint64_t code, prev;
		int32_t lasti;

		/* node depth - 1's frame is emitted: the memo's from node depth on */
		if (walk_splice(w, depth, frame, false))
			return 0;
		if (walk_stop(w, frame, depth))
			break;
		if (!pf_ptr_ok(frame))
			return -EAGAIN;
		r = walk_loop_check(w, frame);
		if (r < 0)
			return r;
		r = pf_read(&w->pf->mem, frame, buf, w->pf->frame_len);
		if (r < 0)
			return r;
		code = pf_u64(buf, l->fr_code);
		lasti = (int32_t) pf_u32(buf, l->fr_instr);
		prev = pf_u64(buf, l->fr_previous);
		/* a frame freed since the thread ran it: its f_back leads nowhere it was called
		 * from (the free list's link: recurse;recurse with no <module>) */
		if (w->verify && (int64_t) pf_u64(buf, PF_OB_REFCNT) <= 0)
			return -EAGAIN;
		r = walk_emit(w, code, lasti, true, false, node_ident(w, depth, frame));
		if (r < 0)
			return r;
		/* as in walk_interp_frames(): a generator's frame read after it yielded */
		if (!prev && w->verify && l->fr_gen != PF_NONE && pf_u64(buf, l->fr_gen))
			return -EAGAIN;
		frame = prev;
	}
	walk_left(w, depth, frame);
	return 0;
}

static int walk_interp_frames(struct walk *w, uint64_t frame)
{
	const struct py_layout *l = &w->pf->layout;
	unsigned char buf[PF_FRAME_READ_MAX];
	size_t depth;
	bool have_pending = false, p_gen = false;
	const unsigned char *p_ident = NULL;
	uint64_t p_code = 0, last = 0;
	int64_t p_instr = 0;
	bool pending_emits = l->fr_is_entry == PF_NONE;
	int r;

	/* A frame is emitted once the next one is known, since 3.12+ marks an entry by the
	 * shim frame that follows it (pending_emits; 3.11's own is_entry flag says it). */
	for (depth = 0; frame; depth++) {
		uint64_t code, instr, prev;
		unsigned owner = 0;
		bool shim, is_entry = false;

		/* 3.12+: the frame pending, node depth - 1's, is among those the memo emitted after
		 * it; 3.11 emits as it reads: the memo's from node depth on */
		if (pending_emits ? depth > 0 && walk_splice(w, depth - 1, last, true) :
		    walk_splice(w, depth, frame, false))
			return 0;
		last = frame;
		if (walk_stop(w, frame, depth))
			break;
		if (!pf_ptr_ok(frame))
			return -EAGAIN;
		r = walk_loop_check(w, frame);
		if (r < 0)
			return r;
		r = pf_read(&w->pf->mem, frame, buf, w->pf->frame_len);
		if (r < 0)
			return r;
		code = pf_u64(buf, l->fr_code) & l->fr_code_mask;
		instr = pf_u64(buf, l->fr_instr);
		prev = pf_u64(buf, l->fr_previous);
		if (l->fr_owner != PF_NONE)
			owner = buf[l->fr_owner];
		if (l->fr_is_entry != PF_NONE)
			is_entry = buf[l->fr_is_entry] != 0;
		shim = l->owner_cstack_min != PF_NONE && owner >= l->owner_cstack_min;
		walk_link(w, frame, prev, code);
		/* 3.12+: every eval-loop entry pushes a shim below its first frame, so a thread's
		 * chain ends at one; 3.11: at a frame flagged is_entry */
		if (l->owner_cstack_min != PF_NONE)
			w->bottom_entry = shim;
		else if (l->fr_is_entry != PF_NONE)
			w->bottom_entry = is_entry;
		if (shim) {
			if (have_pending) {
				r = walk_emit(w, p_code, p_instr, true, p_gen, p_ident);
				if (r < 0)
					return r;
				have_pending = false;
			}
			frame = prev;
			continue;
		}
		if (owner > 4)
			return -EAGAIN;
		if (have_pending) {
			r = walk_emit(w, p_code, p_instr, false, p_gen, p_ident);
			if (r < 0)
				return r;
			have_pending = false;
		}
		if (!pf_ptr_ok(code))
			return -EAGAIN;
		{
			uint64_t start = code + l->co_code_adaptive;
			int64_t idx;

			/* instr_ptr / prev_instr point into co_code_adaptive (2-byte units); 3.11-3.12
			 * start at code - 1 unit before the first instruction: incomplete frame */
			if (instr < start) {
				if (owner != l->owner_generator) {
					frame = prev;
					continue;
				}
				idx = -1;
			} else {
				idx = (int64_t) ((instr - start) / 2);
			}
			if (l->fr_is_entry != PF_NONE) {
				r = walk_emit(w, code, idx, is_entry, owner == l->owner_generator,
					      node_ident(w, depth, frame));
				if (r < 0)
					return r;
			} else {
				have_pending = true;
				p_code = code;
				p_instr = idx;
				p_gen = owner == l->owner_generator;
				p_ident = node_ident(w, depth, frame);
			}
		}
		/* the outermost frame of a running thread is never a suspended generator's: this one
		 * was read after it yielded, when its caller link was already cleared */
		if (!prev && w->verify && l->owner_generator != PF_NONE &&
		    owner == l->owner_generator)
			return -EAGAIN;
		frame = prev;
	}
	walk_left(w, depth, frame);
	if (have_pending) {
		r = walk_emit(w, p_code, p_instr, true, p_gen, p_ident);
		if (r < 0)
			return r;
	}
	return 0;
}

void pyframes_set_verify(struct pyframes *pf, bool on)
{
	pf->verify = on;
}

/*
 * The checks of a walk over a running thread, once its frames are read and before they are
 * named: the frames read must form a stack the thread had, not pieces of several.
 *   - The chain ended where a thread's chain ends (walk.bottom_entry): a frame that an eval
 *     loop entered from C. A chain that ends elsewhere ran into a frame popped mid-walk, its
 *     caller link stale or cleared.
 *   - 3.11+: each frame read still holds the caller link and code it was read with (one fresh
 *     readv of them all), or no code (3.14 clears it when it pops a frame: the thread returned
 *     from it since, and a frame read as popped failed the walk). Frames live in a stack of
 *     slots that a return leaves as they were (3.14: its code cleared) and a call overwrites:
 *     a frame whose slot was popped and reused mid-walk holds another call now, and the frames
 *     read past it belong to another moment. (3.8-3.10: frame objects, each checked alive as
 *     it is read, PF_OB_REFCNT. A re-read would find the frames the thread returned from
 *     since changed, their f_back the free list's link, and drop stacks it had: 95% of a
 *     recursion's.)
 * The thread having moved on (its current frame now another, frames popped since but not yet
 * reused) is no reason to drop the stack: one that calls and returns often (a generator
 * feeding sum()) moves on during almost every walk, and dropping those would bias against it.
 * 0, -EAGAIN (torn), -ESRCH.
 */
static int verify_chain(struct walk *w)
{
	struct pyframes *pf = w->pf;
	const struct py_layout *l = &pf->layout;
	const size_t batch = REMOTE_MEM_READV_MAX / 2;

	if (!w->more && !w->unknown && !w->bottom_entry)
		return -EAGAIN;
	for (size_t i = 0; i < pf->n_links; i += batch) {
		size_t n = pf->n_links - i < batch ? pf->n_links - i : batch;
		int r;

		for (size_t k = 0; k < n; k++) {
			pf->vr[2 * k] = (struct remote_range) { pf->links[i + k].addr + l->fr_previous,
								&pf->vbuf[2 * k], 8 };
			pf->vr[2 * k + 1] = (struct remote_range) { pf->links[i + k].addr + l->fr_code,
								    &pf->vbuf[2 * k + 1], 8 };
		}
		r = pf_readv(&pf->mem, pf->vr, 2 * n, pf->vok);
		if (r < 0)
			return r;
		for (size_t k = 0; k < n; k++) {
			const struct pf_link *x = &pf->links[i + k];
			uint64_t code = pf->vbuf[2 * k + 1] & l->fr_code_mask;

			if (!pf->vok[2 * k] || !pf->vok[2 * k + 1])
				return -EAGAIN;
			/* 3.14 clears a popped frame's code: the thread returned from it since */
			if (code == 0)
				continue;
			if (pf->vbuf[2 * k] != x->prev || code != x->code)
				return -EAGAIN;
		}
	}
	return 0;
}

/* Walks the chain from frame and names its frames. */
static int walk_chain(struct walk *w, uint64_t frame)
{
	int r;

	w->pf->n_links = 0;
	w->bottom_entry = true;
	w->n_fresh = SIZE_MAX;
	w->memo_ok = false;
	w->memo_walk = 0;
	w->spliced = 0;
	if (w->pf->layout.frames == PY_FRAMES_OBJECT)
		r = walk_frame_objects(w, frame);
	else
		r = walk_interp_frames(w, frame);
	if (r >= 0 && w->verify)
		r = verify_chain(w);
	if (w->n_fresh > w->n)
		w->n_fresh = w->n;
	if (r >= 0)
		r = walk_resolve(w);
	/* a pointer that went bad mid-walk, or a non-code object: the stack moved under us */
	if (r == -EFAULT || r == -EINVAL)
		r = -EAGAIN;
	return r;
}

/* Counts a walk's result r in the stats; hands out its frame count and its cut (if asked). */
static int walk_done(struct walk *w, int r, size_t *ret_n, struct pyframes_cut *ret_cut)
{
	struct pyframes_stats *st = &w->pf->stats;

	if (r < 0) {
		if (r == -EAGAIN)
			st->torn++;
		else if (r == -EFAULT)
			st->unreadable++;
		else if (r == -ENOENT)
			st->no_thread++;
		return r;
	}
	if (w->total > w->n)
		st->truncated++;
	if (w->unknown)
		st->truncated++;
	if (ret_cut)
		*ret_cut = (struct pyframes_cut) {
			w->total - w->n, w->more || w->unknown, w->id,
			w->spliced ? w->memo_walk : 0, w->spliced,
		};
	*ret_n = w->n;
	return 0;
}

int pyframes_thread_stack(struct pyframes *pf, pid_t tid, struct py_frame *ret_frames,
			  size_t max, size_t *ret_n, struct pyframes_cut *ret_cut)
{
	const struct py_layout *l = &pf->layout;
	unsigned char ts[PF_TSTATE_READ_MAX];
	size_t tlen = l->ts_size < sizeof(ts) ? l->ts_size : sizeof(ts);
	struct walk w = { .pf = pf, .out = ret_frames, .max = max, .power = 1, .verify = pf->verify };
	uint64_t tstate, frame;
	int r;

	*ret_n = 0;
	if (ret_cut)
		*ret_cut = (struct pyframes_cut) { 0 };
	pf->stats.walks++;
	pf_mem_invalidate(&pf->mem);
	r = pf_find_tstate(pf, tid, ts, tlen, &tstate);
	if (r < 0)
		return walk_done(&w, r, ret_n, ret_cut);
	if (l->ts_cframe != PF_NONE) {
		uint64_t cframe = pf_u64(ts, l->ts_cframe);

		frame = 0;
		if (cframe) {
			if (!pf_ptr_ok(cframe))
				return walk_done(&w, -EAGAIN, ret_n, ret_cut);
			r = pf_read_u64(&pf->mem, cframe + l->cf_current_frame, &frame);
			if (r < 0)
				return walk_done(&w, r == -ESRCH ? r : -EAGAIN, ret_n, ret_cut);
		}
	} else {
		frame = pf_u64(ts, l->ts_frame);
	}
	r = walk_chain(&w, frame);
	return walk_done(&w, r, ret_n, ret_cut);
}

static uint32_t round8(uint32_t n)
{
	return (n + 7) & ~7u;
}

static uint32_t round8_down(uint32_t n)
{
	return n & ~7u;
}

/* Where extra i's address lies in a node's body (past the node's own address). */
static uint32_t extra_at(const struct pyframes_capture_spec *sp, uint32_t i)
{
	uint32_t at = sp->frame_bytes;

	for (uint32_t k = 0; k < i; k++)
		at += 8 + sp->extra[k].len;
	return at;
}

static int cmp_u32pair(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The body position of the u64 field at code offset off, in the code pieces of sp; 0 if none
 * holds it (0 is a frame's own bytes, never a code piece's). */
static uint32_t code_field_at(const struct pyframes_capture_spec *sp, uint32_t n_pieces, uint32_t off)
{
	for (uint32_t i = 0; i < n_pieces; i++)
		if (off >= sp->extra[i].off && off + 8 <= sp->extra[i].off + sp->extra[i].len)
			return extra_at(sp, i) + 8 + off - sp->extra[i].off;
	return 0;
}

/* The extras: the code object's fields that identify it (code.c's cc_current; 3.12+ its
 * version among them), in as few pieces as they allow, and before 3.12 a print of its name's
 * and file name's text (their str objects' length, CPython's hash of the text where it was
 * made, state, and the name's first bytes): its identity, whose digest the program's
 * names-once check is (a code freed and another made at its address, its strings at theirs,
 * has every other header word of the first: exec(compile()) in a loop). Each piece is a
 * reuse one: a node whose code an outer node of the same sample had (a recursion, a
 * framework's wrapper between each of its callbacks) copies that node's bytes, not a read
 * (~0.1 us in the target): one code object in one sample, held by both frames. Then the
 * start of its name and file name (str objects, from their header on), as much of them as
 * the stride leaves room for. */
static void capture_extras(const struct py_layout *l, struct pyframes_capture_spec *sp)
{
	uint32_t name_off = l->co_qualname != PF_NONE ? l->co_qualname : l->co_name;
	uint32_t f[7][2] = { { l->ob_type, 8 }, { name_off, 8 }, { l->co_filename, 8 },
			     { l->co_linetable, 8 }, { l->co_firstlineno, 4 }, { l->ob_size, 8 } };
	uint32_t nf = l->co_code_adaptive != PF_NONE ? 6 : 5, used, room, name_at, file_at, n;

	if (pf_co_version(l) != PF_NONE) {
		f[nf][0] = pf_co_version(l);
		f[nf++][1] = 4;
	}

	qsort(f, nf, sizeof(f[0]), cmp_u32pair);
	sp->n_extras = 0;
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t lo = round8_down(f[i][0]), hi = round8(f[i][0] + f[i][1]);
		struct pyframes_capture_extra *e = sp->n_extras ? &sp->extra[sp->n_extras - 1] : NULL;

		/* one read, gaps and all, costs less than two (a call of ~0.2 us in the target) */
		if (e && hi - e->off <= PYFRAMES_CAPTURE_EXTRA_MAX) {
			if (hi > e->off + e->len)
				e->len = hi - e->off;
			continue;
		}
		sp->extra[sp->n_extras++] = (struct pyframes_capture_extra) {
			.from = l->fr_code, .off = lo, .len = hi - lo, .mask = l->fr_code_mask,
			.reuse = true,
		};
	}
	n = sp->n_extras;
	name_at = code_field_at(sp, n, name_off);
	file_at = code_field_at(sp, n, l->co_filename);
	sp->unique_at = 0;
	for (uint32_t i = 0; pf_co_version(l) != PF_NONE && i < n; i++)
		if (pf_co_version(l) >= sp->extra[i].off &&
		    pf_co_version(l) + 4 <= sp->extra[i].off + sp->extra[i].len)
			sp->unique_at = extra_at(sp, i) + 8 + pf_co_version(l) - sp->extra[i].off;
	/* 3.12+: the code's version, in the piece above, tells one code object from any other
	 * made at its address (but where it is 0: the program sends those every time). Before,
	 * a print of the names, one read each (~0.1 us in the target): the name's length, hash,
	 * state and first 16 bytes (3.11 does not make a nested qualname's hash); the file's
	 * length, hash and state (a path's first bytes are its directory); each copied from an
	 * outer node of the sample whose code has the same string (a module's functions calling
	 * each other, a recursion) */
	if (name_at && file_at && !sp->unique_at) {
		sp->extra[n++] = (struct pyframes_capture_extra) { .from = name_at,
			.off = l->str_length, .len = round8(l->str_ascii_size + 16) - l->str_length,
			.mask = UINT64_MAX, .reuse = true };
		sp->extra[n++] = (struct pyframes_capture_extra) { .from = file_at,
			.off = l->str_length, .len = round8(l->str_state + 4) - l->str_length,
			.mask = UINT64_MAX, .reuse = true };
		sp->n_extras = n;
	}
	sp->n_identity = n;
	used = extra_at(sp, n) + 8;
	if (!name_at || !file_at || used + 2 * 8 + 2 * 64 > PYFRAMES_CAPTURE_STRIDE_MAX ||
	    n + 2 > PYFRAMES_CAPTURE_MAX_EXTRAS)
		return;
	room = PYFRAMES_CAPTURE_STRIDE_MAX - used - 2 * 8;
	/* the name: up to 96 bytes; the file name (a path, longer): the rest, up to 128 */
	sp->extra[n] = (struct pyframes_capture_extra) { .from = name_at, .off = 0,
		.len = round8_down(room / 2 < 96 ? room / 2 : 96), .mask = UINT64_MAX };
	room -= sp->extra[n].len;
	sp->extra[n + 1] = (struct pyframes_capture_extra) { .from = file_at, .off = 0,
		.len = round8_down(room < PYFRAMES_CAPTURE_FILE_MAX ? room : PYFRAMES_CAPTURE_FILE_MAX),
		.mask = UINT64_MAX };
	sp->n_extras = n + 2;
}

/* The spec's parts that follow from the layout alone (pyframes_new_from_layout() keeps them in
 * pf->spec, so that no walk builds them again): 0 or -EINVAL. */
static int layout_spec(const struct py_layout *l, uint32_t frame_len,
		       struct pyframes_capture_spec *ret)
{
	uint32_t bytes = round8(frame_len);

	memset(ret, 0, sizeof(*ret));
	/* a whole _PyInterpreterFrame where it fits; else (and for a PyFrameObject, far larger)
	 * the fields the walker reads */
	if (l->frames == PY_FRAMES_INTERP && round8(l->fr_size) <= PYFRAMES_CAPTURE_FRAME_MAX &&
	    round8(l->fr_size) > bytes)
		bytes = round8(l->fr_size);
	if (bytes > PYFRAMES_CAPTURE_FRAME_MAX)
		return -EINVAL;
	if (l->ts_cframe != PF_NONE) {
		ret->head_off1 = l->ts_cframe;
		ret->head_off2 = l->cf_current_frame;
	} else {
		ret->head_off1 = l->ts_frame;
		ret->head_off2 = PYFRAMES_NO_OFF;
	}
	ret->frame_bytes = bytes;
	ret->next_off = l->fr_previous;
	/* 3.11+: _PyInterpreterFrames in the thread's data stack chunks (a generator's in the
	 * generator, read where it is); before, frame objects, a caller's most often allocated
	 * just below its callee's (measured on 3.8: 60 nested calls' frames on 11 pages) */
	ret->stacked = true;
	capture_extras(l, ret);
	ret->versions_kind = PYFRAMES_VERSIONS_NEXT32;
	if (l->owner_cstack_min != PF_NONE && l->fr_owner != PF_NONE && l->owner_cstack_min > 0 &&
	    l->owner_cstack_min <= 255) {
		ret->shim_at = l->fr_owner;
		ret->shim_min = l->owner_cstack_min;
	}
	return 0;
}

int pyframes_capture_spec(const struct pyframes *pf, struct pyframes_capture_spec *ret)
{
	const struct py_layout *l = &pf->layout;
	uint64_t interp;

	if (pf->spec_error < 0)
		return pf->spec_error;
	*ret = pf->spec;
	if (ret->unique_at && pf->versions_at) {
		ret->versions_at = pf->versions_at;
	} else if (ret->unique_at && l->is_code_gen && pf_main_interp(pf, &interp) == 0) {
		ret->versions_at = interp + l->is_code_gen;
		ret->versions_kind = PYFRAMES_VERSIONS_FREED64;
	}
	return 0;
}

/* Thread tid's memo slot, or NULL. */
static struct pf_memo *memo_of(struct pyframes *pf, pid_t tid)
{
	for (size_t i = 0; i < PF_MEMO_SLOTS; i++)
		if (pf->memo[i].tid == tid)
			return &pf->memo[i];
	return NULL;
}

/* Whether capture node k's slot in the names area holds its names (not left out: its code's
 * address read, where a node whose code the ring's records carried before has 0). */
static bool node_named(const struct pyframes_capture *cap, size_t k)
{
	uint64_t addr;

	if (!cap->names || !cap->names_stride || k >= cap->n_names)
		return false;
	memcpy(&addr, cap->names + k * cap->names_stride, sizeof(addr));
	return addr != 0;
}

/* Whether capture node k is a shim (3.12+: an eval-loop entry's frame on the C stack), whose
 * owner and caller link alone a walk reads (walk_interp_frames()): by the spec's shim byte, as
 * the program tells them. */
static bool node_is_shim(const struct pyframes *pf, const struct pyframes_capture *cap, size_t k)
{
	return pf->spec.shim_min &&
	       cap->nodes[k * cap->stride + 8 + pf->spec.shim_at] >= pf->spec.shim_min;
}

/* The memo of the captured walk w begins (cap->tid's), if its capture shares nodes with it. */
static void memo_find(struct pyframes *pf, struct walk *w, size_t max)
{
	const struct pyframes_capture *cap = w->cap;
	const struct pf_memo *m;
	size_t shared = 0, first = 0, count, most;

	if (!cap->tid || cap->n == 0 || cap->n > PF_MEMO_MAX || !cap->nodes ||
	    cap->stride < 8 + (size_t) pf->spec.frame_bytes)
		return;
	m = memo_of(pf, cap->tid);
	if (!m || m->clears != pf->stats.code_cache_clears ||
	    m->misses != pf->stats.code_cache_misses || m->code_type != pf->code_type ||
	    m->stride != cap->stride || m->ident_at != w->ident_at)
		return;
	most = cap->n < m->n_nodes ? cap->n : m->n_nodes;
	/* most often every node but the innermost: one comparison (not one a node) */
	if (most > 1 && memcmp(cap->nodes + (cap->n - most + 1) * cap->stride,
			       m->nodes + (m->n_nodes - most + 1) * m->stride,
			       (most - 1) * cap->stride) == 0)
		shared = most - 1;
	while (shared < most &&
	       memcmp(cap->nodes + (cap->n - 1 - shared) * cap->stride,
		      m->nodes + (m->n_nodes - 1 - shared) * m->stride, cap->stride) == 0)
		shared++;
	/* a node with names of its own (its code new to the thread's capture) is walked; not a
	 * shim, whose names no walk reads (3.13+ sends a C-stack entry frame's every time) */
	for (size_t k = cap->n - shared; k < cap->n && k < cap->n_names; k++)
		if (node_named(cap, k) && !node_is_shim(pf, cap, k))
			shared = cap->n - k - 1;
	if (shared == 0)
		return;
	first = cap->n - shared;
	/* what walk_splice() will ask, as far as it is known now (at most a frame emitted per node
	 * walked before it): a walk that will not splice reads every node */
	count = m->n_emit - m->after[m->n_nodes - shared];
	if (first + 1 + count > max || first + 1 + count > PF_MEMO_MAX)
		return;
	w->memo = m;
	w->splice_from = first;
	w->memo_from = m->n_nodes - shared;
}

/* The captured walk w, just done, is its thread's memo now, if it may be one. */
static void memo_keep(struct pyframes *pf, struct walk *w)
{
	const struct pyframes_capture *cap = w->cap;
	struct pf_memo *nw = &pf->memo_new, *m;
	size_t bytes = cap->n * cap->stride;

	if (!cap->tid || !w->memo_ok || cap->n == 0 || w->depth != cap->n || cap->n > PF_MEMO_MAX)
		return;
	m = memo_of(pf, cap->tid);
	if (!m) {
		m = &pf->memo[pf->memo_next];
		pf->memo_next = (pf->memo_next + 1) % PF_MEMO_SLOTS;
	}
	if (bytes > m->nodes_cap) {
		unsigned char *b = realloc(m->nodes, bytes);

		if (!b) {
			m->tid = 0;
			return;
		}
		m->nodes = b;
		m->nodes_cap = bytes;
	}
	if (w->memo == m && w->memo_walk && m->stride == cap->stride) {
		/* spliced from this memo: its nodes [memo_from, n_nodes) are the capture's
		 * [splice_from, n) already, byte for byte (memo_find()); moved there, and the
		 * nodes before them copied (a spin at depth 60: one node, not sixty) */
		size_t shared = cap->n - w->splice_from;

		if (w->memo_from != w->splice_from)
			memmove(m->nodes + w->splice_from * cap->stride,
				m->nodes + w->memo_from * cap->stride, shared * cap->stride);
		memcpy(m->nodes, cap->nodes, w->splice_from * cap->stride);
	} else {
		memcpy(m->nodes, cap->nodes, bytes);
	}
	memcpy(m->after, nw->after, cap->n * sizeof(*m->after));
	/* w->n_emit: the frames emitted, before walk_resolve() left the incomplete ones out */
	memcpy(m->frame, nw->frame, w->n_emit * sizeof(*m->frame));
	memcpy(m->dropped, nw->dropped, w->n_emit * sizeof(*m->dropped));
	m->tid = cap->tid;
	m->walk = w->id;
	m->clears = pf->stats.code_cache_clears;
	m->misses = pf->stats.code_cache_misses;
	m->code_type = pf->code_type;
	m->stride = cap->stride;
	m->n_nodes = cap->n;
	m->n_emit = w->n_emit;
	m->ident_at = w->ident_at;
	m->bottom_entry = w->bottom_entry;
}

/* The capture's first n nodes (and its names area) laid over the target's memory. */
static int overlay_nodes(struct pyframes *pf, const struct pyframes_capture *cap, size_t n,
			 const struct pyframes_capture_spec *spec, const uint32_t *extra_len,
			 const struct pf_names *names)
{
	struct pf_names first = *names;

	/* the slots of those nodes alone (a memo's shared nodes may have names: a shim's) */
	if (first.n > n)
		first.n = n;
	return pf_mem_overlay_set(&pf->mem, cap->nodes, n, cap->stride, spec->frame_bytes,
				  extra_len, cap->n_extras, cap->names_stride ? &first : NULL);
}

int pyframes_thread_stack_captured(struct pyframes *pf, const struct pyframes_capture *cap,
				   struct py_frame *ret_frames, size_t max, size_t *ret_n,
				   struct pyframes_cut *ret_cut)
{
	struct walk w = { .pf = pf, .out = ret_frames, .max = max, .power = 1 };
	const struct pyframes_capture_spec *spec = &pf->spec;
	uint32_t extra_len[PYFRAMES_CAPTURE_MAX_EXTRAS];
	struct pf_names names;
	size_t n_over;
	int r;

	*ret_n = 0;
	if (ret_cut)
		*ret_cut = (struct pyframes_cut) { 0 };
	if (pf->spec_error < 0)
		return pf->spec_error;
	if (cap->n_extras && cap->n_extras != spec->n_extras)
		return -EINVAL;
	for (size_t i = 0; i < cap->n_extras; i++)
		extra_len[i] = spec->extra[i].len;
	names = (struct pf_names) { cap->names, cap->n_names, cap->names_stride, spec->n_identity,
				    cap->ident };
	if ((cap->names_stride || cap->ident) &&
	    (!cap->names_stride || cap->n_extras != spec->n_extras || spec->n_identity == 0 ||
	     spec->n_identity >= spec->n_extras))
		return -EINVAL;
	/* each node's code identity, its first pieces, where the node itself holds them */
	if (spec->n_identity && cap->n_extras >= spec->n_identity) {
		/* the code's pieces (the first ones; the strings' after them) */
		pf->ident_layout.n = 0;
		for (uint32_t i = 0; i < spec->n_identity && spec->extra[i].from == pf->layout.fr_code;
		     i++) {
			pf->ident_layout.off[i] = spec->extra[i].off;
			pf->ident_layout.len[i] = spec->extra[i].len;
			pf->ident_layout.n++;
		}
		w.cap = cap;
		w.ident_at = cap->ident ? 0 : 8 + spec->frame_bytes;    /* 0: by pointer */
		memo_find(pf, &w, max);
	}
	/* a walk that will splice at node splice_from reads no node past it */
	n_over = w.memo ? w.splice_from + 1 : cap->n;
	r = overlay_nodes(pf, cap, n_over, spec, extra_len, &names);
	if (r < 0)
		return r;
	pf->stats.walks++;
	w.id = __atomic_add_fetch(&walk_ids, 1, __ATOMIC_RELAXED);
	r = walk_chain(&w, cap->head);
	if (n_over < cap->n && (!w.memo_walk || r < 0)) {
		/* it did not splice after all (its chain left the nodes' order), or failed: again
		 * over every node, whose bytes it may have read from memory instead */
		uint64_t id = w.id;

		pf_mem_overlay_clear(&pf->mem);
		r = overlay_nodes(pf, cap, cap->n, spec, extra_len, &names);
		if (r < 0)
			return r;
		w = (struct walk) { .pf = pf, .out = ret_frames, .max = max, .power = 1,
				    .cap = w.cap, .ident_at = w.ident_at, .id = id };
		r = walk_chain(&w, cap->head);
	}
	if (r >= 0 && w.cap)
		memo_keep(pf, &w);
	if (r < 0 && r != -ENOMEM && cap->n > 0) {
		/* the frames past the capture's last, read from memory now, failed (the thread
		 * returned from them, or the target is gone): the captured ones, cut there */
		struct walk again = { .pf = pf, .out = ret_frames, .max = max, .power = 1,
				      .capture_end = true, .cap = w.cap, .ident_at = w.ident_at,
				      .id = w.id };

		r = walk_chain(&again, cap->head);
		if (r >= 0)
			w = again;
	}
	pf_mem_overlay_clear(&pf->mem);
	return walk_done(&w, r, ret_n, ret_cut);
}

/* ---- open ---- */

/* A candidate _PyRuntime survives if its first interpreter's first thread state points back. */
static int runtime_plausible(struct pf_mem *m, const struct py_layout *l, uint64_t interp)
{
	uint64_t ts, back;

	if (!pf_ptr_ok(interp))
		return 0;
	if (pf_read_u64(m, interp + l->is_threads_head, &ts) < 0 || !pf_ptr_ok(ts))
		return 0;
	if (pf_read_u64(m, ts + l->ts_interp, &back) < 0)
		return 0;
	return back == interp;
}

static int scan_runtime(struct pyframes *pf, uint64_t start, uint64_t end, uint64_t *ret)
{
	const struct py_layout *l = &pf->layout;
	size_t chunk = 64 * 1024;
	unsigned char *buf;
	uint64_t a;

	if (end <= start || end - start > (64u << 20))
		return -ENOENT;
	buf = malloc(chunk + 8);
	if (!buf)
		return -ENOMEM;
	start &= ~(uint64_t) 7;
	for (a = start; a < end; a += chunk) {
		size_t len = end - a < chunk ? end - a : chunk, o;

		if (pf_read_raw(&pf->mem, a, buf, len) < 0)
			continue;
		for (o = 0; o + l->rt_interp_head + 8 <= len; o += 8) {
			uint64_t interp = pf_u64(buf, (uint32_t) (o + l->rt_interp_head));

			if (!runtime_plausible(&pf->mem, l, interp))
				continue;
			*ret = a + o;
			free(buf);
			return 0;
		}
	}
	free(buf);
	return -ENOENT;
}

int pyframes_open(pid_t pid, const struct remote_mem *mem, struct pyframes **ret,
		  struct pyframes_info *ret_info)
{
	struct pf_detect d;
	struct py_layout l;
	struct pyframes *pf = NULL;
	int r;

	*ret = NULL;
	if (ret_info)
		memset(ret_info, 0, sizeof(*ret_info));
	r = pf_detect(pid, mem, &d);
	if (ret_info)
		*ret_info = d.info;
	if (r < 0)
		return r;
	r = layout_select(mem, d.info.major, d.info.minor, d.runtime_addr, &l,
			  ret_info ? ret_info->error : NULL, ret_info ? sizeof(ret_info->error) : 0);
	if (r < 0)
		return r;
	r = pyframes_new_from_layout(mem, &l, d.runtime_addr, d.code_type, pid, &pf);
	if (r < 0)
		return r;
	pf->info = d.info;
	/* 3.12 alone: its codes' versions come from that word (3.13+: the interpreter's) */
	if (l.major == 3 && l.minor == 12 && pf_co_version(&l) != PF_NONE)
		pf->versions_at = d.versions_at;
	if (!pf->runtime) {
		r = scan_runtime(pf, d.scan_start, d.scan_end, &pf->runtime);
		if (r < 0) {
			pyframes_free(pf);
			return r;
		}
		pf->info.runtime_addr = pf->runtime;
	}
	if (pf->code_type && pf_code_check_type(&pf->mem, &pf->layout, pf->code_type) < 0)
		pf->code_type = 0;
	if (ret_info)
		*ret_info = pf->info;
	*ret = pf;
	return 0;
}
