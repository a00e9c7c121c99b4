/*
 * tstate: thread states. A kernel TID (as perf and /proc give it) -> the thread as the target
 * knows it (its own PID namespace's id, NSpid) -> its PyThreadState, by native_thread_id
 * (3.11+) or by the tid in glibc's struct pthread that thread_id points to (<= 3.10; the tid's
 * offset there discovered once), through a cache of tid slots checked on every use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/procfs.h"
#include "pyframes/pyframes_internal.h"

#define PTHREAD_SCAN 2048       /* bytes of glibc's struct pthread searched for the tid */
#define PTHREAD_TIDS 4096       /* threads listed to confirm a tid offset */
#define PTHREAD_STATES 64       /* thread states whose struct pthread is searched */
#define PTHREAD_TID_GLIBC 0x2d0 /* offsetof(struct pthread, tid) in x86-64 glibc */
#define TID_MAP_TTL_NS 1000000000ull  /* a tid's mapped id is read from /proc again after */

void pyframes_set_pthread_tid_offset(struct pyframes *pf, uint32_t off)
{
	pf->pthread_tid_off = off;
}

void pyframes_set_proc(struct pyframes *pf, const char *proc)
{
	pf->proc = proc;
	pf->ns = PF_NS_UNKNOWN;
}

typedef int (*tstate_fn)(struct pyframes *pf, uint64_t tstate, const unsigned char *ts, void *arg);

/* Calls fn for every thread state of every interpreter (bounded); fn returns > 0 to stop. */
static int for_each_tstate(struct pyframes *pf, tstate_fn fn, void *arg)
{
	const struct py_layout *l = &pf->layout;
	unsigned char ts[PF_TSTATE_READ_MAX];
	uint64_t interp, n_interp = 0;
	size_t tlen = l->ts_size < sizeof(ts) ? l->ts_size : sizeof(ts);
	int r;

	r = pf_read_u64(&pf->mem, pf->runtime + l->rt_interp_head, &interp);
	if (r < 0)
		return r;
	while (interp && n_interp++ < PF_MAX_INTERPS) {
		uint64_t tstate, next_interp, n = 0;

		if (!pf_ptr_ok(interp))
			return -EAGAIN;
		r = pf_read_u64(&pf->mem, interp + l->is_threads_head, &tstate);
		if (r < 0)
			return r == -ESRCH ? r : -EAGAIN;
		r = pf_read_u64(&pf->mem, interp + l->is_next, &next_interp);
		if (r < 0)
			return r == -ESRCH ? r : -EAGAIN;
		while (tstate && n++ < PF_MAX_THREADS) {
			if (!pf_ptr_ok(tstate))
				return -EAGAIN;
			r = pf_read(&pf->mem, tstate, ts, tlen);
			if (r < 0)
				return r == -ESRCH ? r : -EAGAIN;
			if (pf_u64(ts, l->ts_interp) != interp)
				return -EAGAIN;
			r = fn(pf, tstate, ts, arg);
			if (r != 0)
				return r;
			tstate = pf_u64(ts, l->ts_next);
		}
		interp = next_interp;
	}
	return 0;
}

/* tid (as perf and proc give it) as the target knows it: in a PID namespace of its own
 * (containers), its threads' ids there, which native_thread_id and struct pthread hold. */
static int target_tid(struct pyframes *pf, pid_t tid, pid_t *ret)
{
	int levels;
	pid_t id;

	if (pf->ns == PF_NS_UNKNOWN &&
	    procfs_ns_tid(pf->proc, pf->pid, pf->pid, &id, &levels) == 0)
		pf->ns = levels > 1 ? PF_NS_OWN : PF_NS_SAME;
	if (pf->ns != PF_NS_OWN) {
		*ret = tid;
		return 0;
	}
	return procfs_ns_tid(pf->proc, pf->pid, tid, ret, NULL) < 0 ? -ENOENT : 0;
}

struct ptscan {
	uint32_t vals[PTHREAD_STATES][PTHREAD_SCAN / 4];  /* each thread state's struct pthread */
	size_t n;
	pid_t main;                 /* the target's pid, as it knows it */
	pid_t live[PTHREAD_TIDS];   /* its threads' ids, as it knows them, sorted */
	size_t nlive;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return (x > y) - (x < y);
}

static int ptscan_one(struct pyframes *pf, uint64_t tstate, const unsigned char *ts, void *arg)
{
	struct ptscan *s = arg;
	uint64_t pt = pf_u64(ts, pf->layout.ts_thread_id);

	(void) tstate;
	if (pf_ptr_ok(pt) && pf_read_raw(&pf->mem, pt, s->vals[s->n], sizeof(s->vals[0])) == 0)
		s->n++;
	return s->n == PTHREAD_STATES;
}

/* How many distinct live thread ids the thread states' struct pthreads hold at word i, if one
 * of them is the main thread's pid; else 0. */
static unsigned ptscan_score(const struct ptscan *s, unsigned i)
{
	pid_t ids[PTHREAD_STATES];
	size_t n = 0, k;
	unsigned distinct = 0;
	bool main_found = false;

	for (k = 0; k < s->n; k++) {
		pid_t v = (pid_t) s->vals[k][i];

		if (s->vals[k][i] == 0 || s->vals[k][i] >= (1u << 30))
			continue;
		if (v == s->main)
			main_found = true;
		else if (!bsearch(&v, s->live, s->nlive, sizeof(v), cmp_pid))
			continue;
		ids[n++] = v;
	}
	if (!main_found)
		return 0;
	qsort(ids, n, sizeof(ids[0]), cmp_pid);
	for (k = 0; k < n; k++)
		distinct += k == 0 || ids[k] != ids[k - 1];
	return distinct;
}

/* The word of struct pthread that holds the thread's tid: the one where the thread states'
 * struct pthreads hold the most distinct live thread ids, the main thread's pid among them.
 * Small ids (a target in a PID namespace of its own is pid 1) also fill other fields, so a tie
 * goes to glibc's x86-64 offset, then to the lowest. */
static int discover_pthread_tid(struct pyframes *pf)
{
	struct ptscan *s = calloc(1, sizeof(*s));
	unsigned i, best = 0, best_score = 0;
	int r;

	if (!s)
		return -ENOMEM;
	r = target_tid(pf, pf->pid, &s->main);
	if (r >= 0) {
		/* none listed (the target exits): only the main thread's pid can confirm */
		(void) procfs_ns_tids(pf->proc, pf->pid, s->live, PTHREAD_TIDS, &s->nlive);
		r = for_each_tstate(pf, ptscan_one, s);
	}
	for (i = 1; r >= 0 && i < PTHREAD_SCAN / 4; i++) {
		unsigned score = ptscan_score(s, i);

		if (score > best_score || (score == best_score && score &&
					   i == PTHREAD_TID_GLIBC / 4)) {
			best = i;
			best_score = score;
		}
	}
	free(s);
	if (r < 0)
		return r;
	if (!best_score)
		return -ENOENT;
	pf->pthread_tid_off = best * 4;
	return 0;
}

static struct tid_slot *tid_slot(struct pyframes *pf, pid_t tid)
{
	return &pf->tids[((uint32_t) tid * 2654435761u) & (TID_SLOTS - 1)];
}

struct tid_find {
	pid_t tid;
	uint64_t tstate, pthread;
};

static int tid_find_one(struct pyframes *pf, uint64_t tstate, const unsigned char *ts, void *arg)
{
	const struct py_layout *l = &pf->layout;
	struct tid_find *f = arg;

	if (l->ts_native_thread_id != PF_NONE) {
		if ((pid_t) pf_u64(ts, l->ts_native_thread_id) != f->tid)
			return 0;
	} else {
		uint64_t pt = pf_u64(ts, l->ts_thread_id);
		uint32_t v;

		if (!pf_ptr_ok(pt) || pf_read(&pf->mem, pt + pf->pthread_tid_off, &v, 4) < 0)
			return 0;
		if ((pid_t) v != f->tid)
			return 0;
		f->pthread = pt;
	}
	/* the last one listed: a thread state made by thread X for a new thread carries X's ids
	 * until the new thread starts and sets its own (3.8-3.11's t_bootstrap), and CPython lists
	 * it first, before X's own */
	f->tstate = tstate;
	return 0;
}

/* Finds tid's thread state; copies it into ts. */
/* tid as the target knows it, kept in its slot for TID_MAP_TTL_NS: a thread without a thread
 * state (a native worker) is looked up at every one of its samples, and reading NSpid costs
 * ~20 us; after that time it is read again, so a host tid reused by a new thread is not left
 * mapped to the old thread's id. Leaves the slot holding tid and no thread state. */
static int slot_target_tid(struct pyframes *pf, struct tid_slot *slot, pid_t tid, pid_t *ret)
{
	uint64_t t = clock_coarse_ns();
	int r;

	if (slot->tid == tid && slot->target_tid > 0 && t && t - slot->mapped_at < TID_MAP_TTL_NS) {
		*ret = slot->target_tid;
		return 0;
	}
	r = target_tid(pf, tid, ret);
	if (r < 0)
		return r;
	slot->tid = tid;
	slot->target_tid = *ret;
	slot->tstate = 0;
	slot->mapped_at = t;
	return 0;
}

int pf_find_tstate(struct pyframes *pf, pid_t tid, unsigned char *ts, size_t tlen,
		   uint64_t *ret)
{
	const struct py_layout *l = &pf->layout;
	struct tid_slot *slot = tid_slot(pf, tid);
	struct tid_find f = { 0 };
	int r;

	if (slot->tid == tid && pf_ptr_ok(slot->tstate)) {
		r = pf_read(&pf->mem, slot->tstate, ts, tlen);
		if (r == -ESRCH)
			return r;
		if (r == 0) {
			if (l->ts_native_thread_id != PF_NONE ?
			    (pid_t) pf_u64(ts, l->ts_native_thread_id) == slot->target_tid :
			    pf_u64(ts, l->ts_thread_id) == slot->pthread) {
				*ret = slot->tstate;
				return 0;
			}
		}
		slot->tid = 0;
	}
	r = slot_target_tid(pf, slot, tid, &f.tid);
	if (r < 0)
		return r;
	if (l->ts_native_thread_id == PF_NONE && !pf->pthread_tid_off) {
		r = discover_pthread_tid(pf);
		if (r < 0)
			return r;
	}
	r = for_each_tstate(pf, tid_find_one, &f);
	if (r < 0)
		return r;
	if (!f.tstate)
		return -ENOENT;
	r = pf_read(&pf->mem, f.tstate, ts, tlen);
	if (r < 0)
		return r == -ESRCH ? r : -EAGAIN;
	slot->tstate = f.tstate;
	slot->pthread = f.pthread;
	*ret = f.tstate;
	return 0;
}

int pyframes_thread_state(struct pyframes *pf, pid_t tid, uint64_t *ret_tstate)
{
	const struct py_layout *l = &pf->layout;
	unsigned char ts[PF_TSTATE_READ_MAX];
	size_t tlen = l->ts_size < sizeof(ts) ? l->ts_size : sizeof(ts);

	*ret_tstate = 0;
	pf_mem_invalidate(&pf->mem);
	return pf_find_tstate(pf, tid, ts, tlen, ret_tstate);
}

/* The program's search for a thread started later (sampler_capture_spec): the ids it compares
 * are those of hwspy's PID namespace, so a target in its own namespace is not found by it */
int pyframes_search_spec(struct pyframes *pf, struct pyframes_search_spec *ret)
{
	const struct py_layout *l = &pf->layout;
	int r;

	if (l->ts_native_thread_id == PF_NONE && !pf->pthread_tid_off &&
	    (r = discover_pthread_tid(pf)) < 0)
		return r;
	*ret = (struct pyframes_search_spec) {
		.interp_at = pf->runtime + l->rt_interp_head, .threads_off = l->is_threads_head,
		.next_off = l->ts_next, .tid_off1 = l->ts_native_thread_id, .tid_off2 = PYFRAMES_NO_OFF,
	};
	if (l->ts_native_thread_id == PF_NONE) {
		ret->tid_off1 = l->ts_thread_id;
		ret->tid_off2 = pf->pthread_tid_off;
	}
	return 0;
}
