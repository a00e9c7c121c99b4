/*
 * sample: one sample -> one stack, handed to the sink (see record.h, internal.h). The Python frames are
 * read first, while an exact-mode sample's thread is stopped; native frames come from the
 * user stack copy, kernel frames from the callchain; merge.c puts them in one order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "record/internal.h"

static bool capturing(const struct recorder *rec)
{
	return rec->opts.mode == RECORD_CAPTURE || rec->opts.mode == RECORD_SIGNAL;
}

int record_special_frame(struct recorder *rec, const char *name, uint32_t *ret)
{
	struct profile_frame f = { .kind = FRAME_SPECIAL, .name = name };

	return profile_frame_id(rec->prof, &f, ret);
}

void record_python_found(struct recorder *rec)
{
	const char *slash = strrchr(rec->info.binary, '/');

	rec->interp_module = slash ? slash + 1 : rec->info.binary;
	/* walks of threads that run on: --nonblocking, and a capture's misses */
	pyframes_set_verify(rec->pf, rec->opts.mode != RECORD_STOPS);
	rec->gil_addr = rec->gil_tried_ns = 0;  /* record_gil_addr() looks */
	rec->pf_gen++;
	(void) profile_set_python(rec->prof, rec->info.version);
}

/* Native frames of the sample, innermost first: the unwound user stack (--native), or only
 * the function the thread is in when that is outside the interpreter (C extensions, libc). */
static size_t native_frames(struct recorder *rec, const struct sample *s)
{
	size_t n = 0, nips = 0;

	if (rec->in_child)
		return 0;               /* a child's mappings are not the target's */
	if (!rec->sym && rec->pf && rec->sym_tries < SYM_TRIES &&
	    clock_now_ns() - rec->sym_tried_ns >= DETECT_INTERVAL_NS) {
		/* its mappings could not be read when the interpreter was found: again, a while */
		rec->sym_tried_ns = clock_now_ns();
		rec->sym_tries++;
		(void) symbolizer_new(rec->pid, &rec->sym);
	}
	if (!rec->sym) {
		rec->stats.not_unwound_maps += rec->opts.native;
		return 0;
	}
	if (!rec->opts.native) {
		if (!s->user)
			return 0;
		const char *mod = symbolizer_module_name(rec->sym, s->ip);
		if (!mod || (rec->interp_module && !strcmp(mod, rec->interp_module)))
			return 0;
		/* the containing function by its symbol, not an inlined callee: no DWARF */
		return symbolizer_lookup_name(rec->sym, s->ip, rec->nat) == 0 ? 1 : 0;
	}
	if (!s->regs || !s->stack ||
	    symbolizer_unwind(rec->sym, s->regs, s->n_regs, s->stack, s->stack_size, rec->ips,
			      MAX_NATIVE, &nips) < 0) {
		rec->stats.not_unwound_stack++;
		return 0;
	}
	rec->stats.unwound++;
	for (size_t i = 0; i < nips && n < MAX_NATIVE; i++) {
		size_t k = 0;
		if (symbolizer_lookup(rec->sym, rec->ips[i], i > 0, rec->nat + n, MAX_NATIVE - n, &k) < 0 ||
		    k == 0) {
			rec->nat[n] = (struct native_frame) {
				.addr = rec->ips[i],
				.module = symbolizer_module_name(rec->sym, rec->ips[i]),
			};
			k = 1;
		}
		n += k;
	}
	rec->stats.unwound_frames += n;
	return n;
}

/* Kernel frames of the sample (--kernel), appended at the leaf end of ret: innermost last. */
static size_t kernel_frames(struct recorder *rec, const struct sample *s, struct profile_frame *ret,
			    size_t max)
{
	size_t n = 0, start = SIZE_MAX;

	if (!rec->opts.kernel || !rec->sym)
		return 0;
	for (size_t i = 0; i < s->n_callchain; i++) {
		uint64_t ip = s->callchain[i];
		if (ip >= (uint64_t) PERF_CONTEXT_MAX) {
			if (ip == (uint64_t) PERF_CONTEXT_KERNEL) {
				start = i + 1;
				continue;
			}
			if (start != SIZE_MAX)
				break;
			continue;
		}
		if (start == SIZE_MAX)
			continue;
		n = i + 1 - start;
	}
	if (start == SIZE_MAX)
		return 0;
	if (n > max)
		n = max;
	for (size_t k = 0; k < n; k++) {
		/* callchain is innermost first; the profile wants root first */
		struct native_frame nf;
		uint64_t ip = s->callchain[start + n - 1 - k];
		if (symbolizer_kernel(rec->sym, ip, &nf) < 0 || !nf.name)
			ret[k] = (struct profile_frame) { .kind = FRAME_KERNEL, .name = "[unknown]" };
		else
			ret[k] = (struct profile_frame) { .kind = FRAME_KERNEL, .name = nf.name };
	}
	rec->stats.kernel_frames += n;
	return n;
}

void record_on_event(void *ctx, const struct sampler_event *e)
{
	struct recorder *rec = ctx;
	uint64_t root;

	switch (e->kind) {
	case SAMPLER_EVENT_EXEC:
		/* the names of waiting samples belong to the old image's interpreter */
		record_flush(rec);
		pyframes_free(rec->pf);
		rec->pf = NULL;
		rec->gil_addr = rec->gil_tried_ns = 0;
		record_build_ids(rec);
		symbolizer_free(rec->sym);
		rec->sym = NULL;
		rec->interp_module = NULL;
		rec->last_detect_ns = 0;
		break;
	case SAMPLER_EVENT_CAPTURE_THREAD:
		/* the capture program's root for the thread: its PyThreadState */
		if (rec->pf && pyframes_thread_state(rec->pf, e->tid, &root) == 0)
			(void) sampler_capture_set_root(e->sampler, e->tid, root);
		else if (rec->opts.subprocesses && record_proc_root(rec, e->tid, &root))
			(void) sampler_capture_set_root(e->sampler, e->tid, root);
		break;
	case SAMPLER_EVENT_CHILD_EXEC:
	case SAMPLER_EVENT_CHILD_EXIT:
		record_proc_event(rec, e);
		break;
	case SAMPLER_EVENT_SWITCH_OUT:
	case SAMPLER_EVENT_SWITCH_IN:
	case SAMPLER_EVENT_DRAINED:
		record_offcpu_switch(rec, e);
		break;
	}
}

int record_capture_spec(const struct recorder *rec, struct sampler_capture_spec *ret)
{
	struct pyframes_capture_spec ps;
	struct pyframes_search_spec srch;
	int r = rec->pf ? pyframes_capture_spec(rec->pf, &ps) : -ENOENT;

	if (r < 0)
		return r;
	*ret = (struct sampler_capture_spec) {
		.head_off1 = ps.head_off1,
		.head_off2 = ps.head_off2 == PYFRAMES_NO_OFF ? SAMPLER_CAPTURE_NO_OFF : ps.head_off2,
		.node_bytes = ps.frame_bytes,
		.next_off = ps.next_off,
		.n_extras = ps.n_extras,
		.n_identity = ps.n_identity,
		.unique_at = ps.unique_at,
		.stacked = ps.stacked,
		.shim_at = ps.shim_at,
		.shim_min = ps.shim_min,
	};
	for (uint32_t i = 0; i < ps.n_extras; i++)
		ret->extra[i] = (struct sampler_capture_extra) {
			.from = ps.extra[i].from, .off = ps.extra[i].off, .len = ps.extra[i].len,
			.mask = ps.extra[i].mask, .reuse = ps.extra[i].reuse,
		};
	ret->version_at = ps.versions_at;
	ret->version_kind = ps.versions_kind == PYFRAMES_VERSIONS_FREED64 ? SAMPLER_VERSION_FREED64
									 : SAMPLER_VERSION_NEXT32;
	/* threads started later: the program finds their state at their first sample */
	if (pyframes_search_spec(rec->pf, &srch) == 0) {
		ret->search_at = srch.interp_at;
		ret->search_list_off = srch.threads_off;
		ret->search_next_off = srch.next_off;
		ret->search_id_off1 = srch.tid_off1;
		ret->search_id_off2 = srch.tid_off2 == PYFRAMES_NO_OFF ? SAMPLER_CAPTURE_NO_OFF
								       : srch.tid_off2;
	}
	/* the GIL at each overflow (none: free-threaded, or not created yet; read live then) */
	if (pyframes_gil_spec(rec->pf, &ret->gil_at, &ret->gil_locked_off, &ret->gil_holder_off) < 0)
		ret->gil_at = 0;
	/* the cyclic GC's flag at each overflow (gc.c; none: not placed, or not found yet) */
	(void) pyframes_gc_spec(rec->pf, &ret->gc_at);
	return 0;
}

int record_capture_start(struct recorder *rec)
{
	struct sampler_capture_spec ss;
	int r;

	if (!capturing(rec) || !rec->pf)
		return 0;
	if (rec->capture_gen == rec->pf_gen)
		return record_gil_capture_late(rec);
	rec->capture_gen = rec->pf_gen;     /* one try per interpreter */
	rec->capture_gil_tries = 0;
	r = record_capture_spec(rec, &ss);
	if (r >= 0)
		r = sampler_capture_start(rec->sampler, &ss);
	rec->capture_extras = r >= 0 ? ss.n_extras : 0;
	rec->capture_gil = r >= 0 && ss.gil_at;
	rec->capture_gc = r >= 0 && ss.gc_at;
	if (r < 0 && r != -EPERM && ss.n_extras) {
		/* a kernel that refuses the larger program: the frames alone */
		ss.n_extras = 0;
		r = sampler_capture_start(rec->sampler, &ss);
	}
	rec->stats.capture_error = r < 0 ? r : 0;
	rec->stats.capture_failures += r < 0;
	return r;
}

int record_walk(struct recorder *rec, struct pyframes *pf, bool capture_fits,
		const struct sample *s, size_t *ret_n, struct pyframes_cut *ret_cut)
{
	const struct sample_capture *c = s->capture;
	int r;

	if (c && capture_fits && c->status != SAMPLE_CAPTURE_NO_ROOT) {
		struct pyframes_capture cap = { c->head, c->nodes, c->n, c->stride,
						rec->capture_extras, c->names, c->n_names,
						c->names_stride, s->tid, c->ident };

		rec->stats.captured++;
		/* the frames past the capture's last come from memory, after the sample */
		rec->stats.captured_cut += c->status == SAMPLE_CAPTURE_CUT;
		r = pyframes_thread_stack_captured(pf, &cap, rec->pyf, MAX_PY_FRAMES, ret_n,
						   ret_cut);
		rec->stats.captured_dropped += r < 0 && r != -ENOENT;
		/* the names the capture sent once are gone from the cache: again, please */
		if (pyframes_codes_forgotten(pf))
			(void) sampler_capture_forget(rec->sampler);
		return r;
	}
	if (capturing(rec)) {
		uint64_t root;

		rec->stats.uncaptured++;
		/* a thread whose state did not exist when its events opened: the next sample
		 * will be captured */
		if (c && capture_fits && pyframes_thread_state(pf, s->tid, &root) == 0)
			(void) sampler_capture_set_root(rec->sampler, s->tid, root);
	}
	/* a thread that runs on while it is read (--nonblocking, a capture's miss, a stop past its
	 * budget, a launched command's first samples): the stack must be checked, and is torn
	 * (dropped) where the thread changed it under the read */
	pyframes_set_verify(pf, !s->stopped);
	r = pyframes_thread_stack(pf, s->tid, rec->pyf, MAX_PY_FRAMES, ret_n, ret_cut);
	/* a running thread moved under the read: another try gives a whole stack */
	for (int retry = 0; r == -EAGAIN && !s->stopped && retry < 3; retry++)
		r = pyframes_thread_stack(pf, s->tid, rec->pyf, MAX_PY_FRAMES, ret_n, ret_cut);
	return r;
}

/* Launch mode: the interpreter appears once the loader has mapped it; look again now and then. */
void record_detect(struct recorder *rec)
{
	uint64_t now = clock_now_ns();
	bool old_sym = rec->sym != NULL;
	int r;

	if (rec->pf || rec->fatal || !rec->pid || now - rec->last_detect_ns < DETECT_INTERVAL_NS)
		return;
	rec->last_detect_ns = now;
	if (!rec->sym)
		(void) symbolizer_new(rec->pid, &rec->sym);
	if (!rec->mem_open) {
		if (remote_mem_open_pid(rec->pid, &rec->mem) < 0)
			return;
		rec->mem_open = true;
	}
	r = pyframes_open(rec->pid, &rec->mem, &rec->pf, &rec->info);
	rec->detect_error = r;
	if (r == -ENOTSUP) {
		rec->fatal = r;         /* a version or build read whole that hwspy cannot read */
	} else if (r == -EBADMSG) {
		/* a corrupt layout; or one read while the loader was still mapping the interpreter
		 * (a segment's address holding another's bytes for a moment: a 3.13 launch was
		 * refused so): for good once it stays so */
		if (!rec->bad_layout_ns)
			rec->bad_layout_ns = now;
		if (now - rec->bad_layout_ns >= BAD_LAYOUT_SETTLE_NS)
			rec->fatal = r;
	} else if (r >= 0) {
		if (old_sym) {
			/* the mappings were read while no interpreter was there: maybe another image
			 * (a wrapper script's, which exec'd the interpreter with no event to say so
			 * outside exact mode by stops), whose files' build-ids are not this one's */
			record_build_ids(rec);
			symbolizer_free(rec->sym);
			rec->sym = NULL;
			(void) symbolizer_new(rec->pid, &rec->sym);
		}
		record_python_found(rec);
		/* the capture program starts between two sampler_run() calls: let this one end */
		if (capturing(rec) && rec->sampler)
			sampler_break(rec->sampler);
	}
}

/* The frame that marks a Python stack cut at its root end: how many frames were left out, more
 * than how many, or (a capture whose outer frames were gone when read) only that some were. */
static void cut_frame(struct recorder *rec, uint64_t cut, bool more, size_t *depth)
{
	char name[64];

	if (more && cut == 0)
		snprintf(name, sizeof(name), "[truncated]");
	else
		snprintf(name, sizeof(name), "[truncated: %s%" PRIu64 " frames]", more ? "over " : "",
			 cut);
	if (record_special_frame(rec, name, &rec->ids[*depth]) >= 0)
		(*depth)++;
	if (more && cut == 0)
		rec->stats.truncated_gone++;
	else
		rec->stats.truncated++;
}

/* The ids of the Python frames a captured walk took from its thread's memo (cut): copied to
 * rec->py_ids_tail, the last cut->spliced of them; false if they are not known. */
static bool py_ids_take(struct recorder *rec, const struct pyframes_cut *cut)
{
	for (size_t i = 0; cut->memo_walk && cut->spliced && i < RECORD_PY_IDS; i++) {
		const struct py_ids *p = &rec->py_ids[i];

		if (p->walk != cut->memo_walk)
			continue;
		if (p->n < cut->spliced || cut->spliced > MAX_PY_FRAMES)
			return false;
		memcpy(rec->py_ids_tail, p->id + (p->n - cut->spliced),
		       cut->spliced * sizeof(*p->id));
		return true;
	}
	return false;
}

/* Where the ids of the Python frames of captured walk cut->walk (n frames, of thread tid) go:
 * the thread's entry, emptied; NULL if none can hold them. */
static struct py_ids *py_ids_keep(struct recorder *rec, pid_t tid, const struct pyframes_cut *cut,
				  size_t n)
{
	struct py_ids *p = NULL;

	if (!cut->walk || n == 0)
		return NULL;
	for (size_t i = 0; i < RECORD_PY_IDS && !p; i++)
		if (rec->py_ids[i].tid == tid)
			p = &rec->py_ids[i];
	if (!p) {
		p = &rec->py_ids[rec->py_ids_next];
		rec->py_ids_next = (rec->py_ids_next + 1) % RECORD_PY_IDS;
	}
	p->walk = 0;
	p->tid = tid;
	if (array_grow((void **) &p->id, &p->cap, n, sizeof(*p->id), 64) < 0)
		return NULL;
	memset(p->id, 0xff, n * sizeof(*p->id));
	p->n = n;
	p->walk = cut->walk;
	return p;
}

/* The profile ids of rec->merged's nm merged and nk kernel frames, appended to rec->ids at
 * *depth. cut: the captured walk of the n Python frames among them (NULL: none, or not
 * merged): the outer frames it took from its thread's previous walk take their ids from that
 * walk's sample too, where that walk's frames were interned (their strings and lines are the
 * same bytes, so their frames the same), and its own are kept for the next. py: NULL, or the
 * nm Python frames, alone, that rec->merged's first nm stand for (root first) and do not hold
 * yet: each made there only if its id is not taken so. */
static void intern_merged(struct recorder *rec, pid_t tid, const struct pyframes_cut *cut,
			  const struct py_frame *py, size_t n, size_t nm, size_t nk, size_t *depth)
{
	size_t taken_from = SIZE_MAX;
	struct py_ids *keep = NULL;

	if (cut) {
		if (cut->spliced <= n && py_ids_take(rec, cut))
			taken_from = n - cut->spliced;
		keep = py_ids_keep(rec, tid, cut, n);
	}
	for (size_t i = 0; i < nm + nk; i++) {
		int32_t j = i >= nm || !cut ? -1 : py ? (int32_t) (nm - 1 - i) : rec->py_at[i];
		uint32_t *id = &rec->ids[*depth];

		if (j >= 0 && (size_t) j >= taken_from &&
		    rec->py_ids_tail[(size_t) j - taken_from] != UINT32_MAX) {
			*id = rec->py_ids_tail[(size_t) j - taken_from];
			rec->py_ids_taken++;
		} else {
			if (py && i < nm)
				merge_py_frame(&py[nm - 1 - i], rec->opts.function, &rec->merged[i]);
			if (profile_frame_id(rec->prof, &rec->merged[i], id) < 0)
				continue;
		}
		if (keep && j >= 0 && (size_t) j < keep->n)
			keep->id[j] = *id;
		(*depth)++;
	}
}

/* mi's frames merged into rec->merged: how many. *lazy: NULL, or (the Python frames alone) the
 * frames whose root-first order rec->merged's first stand for, made there by intern_merged()
 * where their ids are not the thread's last walk's (at depth 60, a tenth of a sample's
 * decoding). late_ns: finish()'s. */
static size_t merge(struct recorder *rec, struct merge_in *mi, uint64_t late_ns,
		    const struct py_frame **lazy)
{
	size_t nm = 0;
	int rm;

	if (mi->n_native == 0 && !mi->py_unknown && mi->n_py <= MAX_PY_FRAMES + MAX_NATIVE) {
		*lazy = mi->py;
		return mi->n_py;
	}
	rm = merge_stacks(mi, rec->merged, MAX_PY_FRAMES + MAX_NATIVE, &nm);
	if (rm == -EPROTO && late_ns) {
		/* so is one read a little late that does not fit: keep the native frames and mark
		 * where Python code ran */
		rec->stats.late_unfit++;
		mi->n_py = 0;
		mi->py_unknown = true;
		rm = merge_stacks(mi, rec->merged, MAX_PY_FRAMES + MAX_NATIVE, &nm);
	} else if (rm == -EPROTO) {
		/* never a mis-ordered stack: keep the Python frames alone */
		rec->stats.merge_failed++;
		mi->n_native = 0;
		rm = merge_stacks(mi, rec->merged, MAX_PY_FRAMES + MAX_NATIVE, &nm);
	}
	return rm < 0 && rm != -E2BIG ? 0 : nm;
}

/* Everything after the Python walk: native and kernel frames, merge, the profile. late_ns: how
 * long after the sample its Python stack was read (no capture, no stop), 0 if at the sample. */
static void finish(struct recorder *rec, const struct sample *s, int r, const struct py_frame *py,
		   size_t n, const struct pyframes_cut *cut, uint64_t late_ns, bool gone, int gil,
		   const char *initial_reason, uint64_t initial_read_ns)
{
	const struct record_opts *o = &rec->opts;
	uint64_t values[SAMPLER_MAX_EVENTS + 1] = { 1 };
	struct record_sample out;
	size_t depth = 0;
	bool py_truncated = r == 0 && (cut->n > 0 || cut->more);
	/* a switch-out read after the thread may have run on (before the capture started): its
	 * stack is the wait's if the thread was not switched in before the read (offcpu.c) */
	bool tentative = s->off_cpu && o->mode == RECORD_CAPTURE &&
			 late_ns > RECORD_OFF_CPU_STALE_NS;
	size_t n_prefix;

	uint32_t thread = record_thread_frame(rec, s->tid);

	if (o->subprocesses)
		rec->ids[depth++] = record_proc_frame(rec, s->pid);
	if (o->threads)
		rec->ids[depth++] = thread;
	n_prefix = depth;
	if (py_truncated)
		cut_frame(rec, cut->n, cut->more, &depth);
	if (r == 0 || r == -ENOENT) {
		struct merge_in mi = {
			.native = rec->nat, .n_native = native_frames(rec, s),
			.py = py, .n_py = r == 0 ? n : 0,
			.interp_module = rec->interp_module,
			.function_lines = o->function,
			.py_truncated = py_truncated,
			.scratch = rec->scratch, .scratch_size = MAX_NATIVE * MERGE_SCRATCH_PER_FRAME,
			.py_at = rec->py_at,
		};
		const struct py_frame *lazy = NULL;
		size_t nm, nk;
		bool py_root;

		/* a Python stack read long after the sample is a later one, not this sample's
		 * (a launched command's first samples wait while hwspy finds the interpreter and
		 * loads symbols, and may even fit a later stack by chance): the native frames are
		 * the sample's own, never paired with it (without --native: the function the
		 * sample was in, outside the interpreter; with none, the late stack stands for
		 * the sample as any read after it does) */
		if (mi.n_py && (o->native || mi.n_native) && !tentative &&
		    late_ns > (o->native ? RECORD_STALE_READ_NS : RECORD_STALE_LEAF_NS)) {
			rec->stats.late_unfit++;
			mi.n_py = 0;
			mi.py_unknown = true;
		}
		nm = merge(rec, &mi, late_ns, &lazy);
		nk = kernel_frames(rec, s, rec->merged + nm, MAX_FRAMES - nm);
		/* Python code no one can name where no eval-loop frame says where it ran (no
		 * --native: the leaf alone, if outside the interpreter; no unwind): at the root */
		py_root = mi.py_unknown && (!o->native || nm == 0);
		if (py_root) {
			if (record_special_frame(rec, RECORD_PY_UNKNOWN, &rec->ids[depth]) >= 0)
				depth++;
		} else if (nm == 0 && mi.n_py == 0 && gone) {
			rec->stats.read_after_exit++;
		} else if (nm == 0 && mi.n_py == 0) {
			rec->stats.no_python++;
		}
		if (nm == 0 && !py_root)
			rec->ids[depth++] = rec->native_frame;
		intern_merged(rec, s->tid, r == 0 && mi.n_py ? cut : NULL, lazy, n, nm, nk, &depth);
	} else {
		if (r == -EAGAIN)
			rec->stats.dropped_torn++;
		else
			rec->stats.dropped_unreadable++;
		rec->ids[depth++] = rec->unknown_frame;
	}
	gil = record_gc_frame(rec, gil, &depth);        /* [gc] ends a collection's stacks */
	for (size_t i = 0; i < s->n_values && i < SAMPLER_MAX_EVENTS; i++)
		values[i + 1] = s->values[i];
	out = (struct record_sample) {
		.tid = s->tid, .time_ns = s->time_ns, .frames = rec->ids, .depth = depth,
		.values = values, .n_values = 1 + rec->opts.n_events, .gil = gil,
		.event = s->event, .late_ns = late_ns,
	};
	if (s->off_cpu) {
		char reason[256];

		/* it weighs its time off the CPU, known once the thread runs again */
		if (initial_reason)
			snprintf(reason, sizeof(reason), "%s", initial_reason);
		else
			record_wait_reason(rec, s, reason, sizeof(reason));
		record_offcpu_sample(rec, &out, reason, initial_reason ? initial_read_ns :
				     tentative ? s->time_ns + late_ns : 0, n_prefix,
				     initial_reason != NULL);
	} else {
		if (rec->offcpu)
			record_offcpu_ran(rec, s->tid, s->time_ns);
		if (rec->sink.sample(rec->sink.ctx, &out) < 0)
			rec->stats.add_failed++;
	}
}

void record_finish_wait(struct recorder *rec, const struct sample *s, int r, size_t n,
			const struct pyframes_cut *cut, const char *reason, uint64_t read_end_ns)
{
	finish(rec, s, r, rec->pyf, n, cut, 0, false, RECORD_GIL_UNKNOWN, reason, read_end_ns);
}

void record_flush(void *ctx)
{
	struct recorder *rec = ctx;

	for (size_t i = 0; i < rec->n_pending; i++) {
		struct pending *p = &rec->pending[i];
		finish(rec, &p->s, p->r, p->py, p->n_py, &p->cut, 0, false, p->gil, NULL, 0);
	}
	rec->n_pending = 0;
}

/* Copies what finish() needs from s, whose pointers go into the ring: false if no slot. */
static bool defer(struct recorder *rec, const struct sample *s, int r, size_t n,
		  const struct pyframes_cut *cut, int gil)
{
	struct pending *p;

	if (!rec->pending || rec->n_pending == MAX_PENDING)
		return false;
	p = &rec->pending[rec->n_pending];
	p->s = *s;
	p->r = r;
	p->gil = gil;
	p->n_py = r == 0 ? n : 0;
	p->cut = *cut;
	memcpy(p->py, rec->pyf, p->n_py * sizeof(*p->py));
	p->s.n_regs = s->n_regs < 32 ? s->n_regs : 32;
	p->s.regs = s->regs ? memcpy(p->regs, s->regs, p->s.n_regs * sizeof(*s->regs)) : NULL;
	p->s.n_callchain = s->n_callchain < MAX_KERNEL + 8 ? s->n_callchain : MAX_KERNEL + 8;
	p->s.callchain = s->callchain ?
		memcpy(p->callchain, s->callchain, p->s.n_callchain * sizeof(*s->callchain)) : NULL;
	if (s->stack && p->stack && s->stack_size <= rec->opts.stack_size) {
		p->s.stack = memcpy(p->stack, s->stack, s->stack_size);
	} else {
		p->s.stack = NULL;
		p->s.stack_size = 0;
	}
	rec->n_pending++;
	return true;
}

int record_pending_init(struct recorder *rec, size_t stack_size)
{
	rec->pending = calloc(MAX_PENDING, sizeof(*rec->pending));
	if (!rec->pending)
		return -ENOMEM;
	for (size_t i = 0; i < MAX_PENDING && stack_size; i++) {
		rec->pending[i].stack = malloc(stack_size);
		if (!rec->pending[i].stack)
			return -ENOMEM;
	}
	return 0;
}

void record_pending_free(struct recorder *rec)
{
	for (size_t i = 0; rec->pending && i < MAX_PENDING; i++)
		free(rec->pending[i].stack);
	free(rec->pending);
	rec->pending = NULL;
}

/* Module's build-id is bid in the image the symbolizer reads now. A module name that another
 * file had earlier in the run (an exec: a wrapper script's system loader, then the target's
 * own ld-linux-x86-64.so.2) gets none: its frames come from both files. */
static void set_build_id(struct recorder *rec, const char *module, const char *bid)
{
	const char *have = profile_build_id(rec->prof, module);

	for (size_t i = 0; i < rec->n_bid_ambiguous; i++)
		if (rec->bid_ambiguous[i] == module)
			return;
	if (!have) {
		(void) profile_set_build_id(rec->prof, module, bid);
		return;
	}
	if (!strcasecmp(have, bid))
		return;
	profile_drop_build_id(rec->prof, module);
	if (array_grow((void **) &rec->bid_ambiguous, &rec->cap_bid_ambiguous,
		       rec->n_bid_ambiguous + 1, sizeof(*rec->bid_ambiguous), 8) < 0)
		return;         /* dropped now; a later image may give it one again */
	rec->bid_ambiguous[rec->n_bid_ambiguous++] = module;
}

void record_build_ids(struct recorder *rec)
{
	const char **seen = NULL;
	size_t n_seen = 0, cap = 0;

	if (!rec->sym || !rec->prof)
		return;
	for (uint32_t id = 0; id < profile_n_frames(rec->prof); id++) {
		const struct profile_frame *f = profile_frame(rec->prof, id);
		const char *bid;
		size_t i;

		if (f->kind != FRAME_NATIVE || !f->module)
			continue;
		/* the profile interns strings: one pointer per module name */
		for (i = 0; i < n_seen && seen[i] != f->module; i++)
			;
		if (i < n_seen)
			continue;
		if (array_grow((void **) &seen, &cap, n_seen + 1, sizeof(*seen), 64) < 0)
			break;
		seen[n_seen++] = f->module;
		bid = symbolizer_build_id(rec->sym, f->module);
		if (bid)
			set_build_id(rec, f->module, bid);
	}
	free(seen);
}

void record_on_sample(void *ctx, const struct sample *s)
{
	struct recorder *rec = ctx;
	size_t n = 0;
	uint64_t captured_before = rec->stats.captured;
	uint64_t late_ns = 0;
	struct pyframes_cut cut = { 0 };
	bool late;
	bool gone;
	char task[64];
	int r = -ENOENT, gil = RECORD_GIL_UNKNOWN;

	rec->in_child = rec->opts.subprocesses && rec->pid && s->pid != rec->pid;
	if (rec->in_child) {
		r = record_proc_walk(rec, s, &n, &cut);
	} else {
		if (!rec->pf)
			record_detect(rec);
		if (rec->pf)
			r = record_walk(rec, rec->pf, rec->capture_gen == rec->pf_gen, s, &n,
					&cut);
	}
	/* a switched-out thread's: its leaf says whether it waits for the GIL */
	if (rec->pf && !rec->in_child && !s->off_cpu)
		gil = record_gc_at_sample(rec, s, record_gil_at_sample(rec, s));
	late = !s->stopped && rec->stats.captured == captured_before;
	if (late) {
		uint64_t t = clock_now_ns();

		late_ns = t > s->time_ns ? t - s->time_ns : 1;
		if (rec->late_us && rec->stats.n_late < LATE_MAX)
			rec->late_us[rec->stats.n_late++] = (uint32_t) (late_ns / 1000);
	}
	/* no thread state: a thread that runs no Python, or one that has exited since */
	gone = false;
	if (late && r == -ENOENT && (rec->pf || rec->in_child)) {
		snprintf(task, sizeof(task), "/proc/%d/task/%d", (int) s->pid, (int) s->tid);
		gone = access(task, F_OK) < 0;
	}
	/* the thread waits only for its Python stack; the rest is done once it runs again */
	if (!s->stopped || !defer(rec, s, r, n, &cut, gil))
		finish(rec, s, r, rec->pyf, n, &cut, late_ns, gone, gil, NULL, 0);
	rec->in_child = false;
	if (rec->fatal && rec->stop)
		*rec->stop = 1;
}
