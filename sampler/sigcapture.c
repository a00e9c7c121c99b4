/*
 * sigcapture: the SIGTRAP handler that copies the overflowing thread's frames (sigcapture.h),
 * and the sampler's side: the records' rings, their pairing with the samples.
 *
 * Memory: one area mapped at sigcap_start() (MAP_NORESERVE: pages are touched only as deep as
 * the stacks are), SIGCAP_THREADS slots of c->records records each (by the sampling rate: see
 * sigcap_records()), and a work area per slot (MAP_NORESERVE too: the handler's windows, pages
 * and the codes it copied the names of, ~260 KB: 32 MB of address space for the 128 slots,
 * touched as used).
 *
 * The handler's cost is its system calls (process_vm_readv: a read that faults is refused, not a
 * crash of the host; ~2 us a call here, ~1 us more a page): it reads the lock, the collector
 * and the frame pointer in one, the nodes a window of pages at a time, every code's identity
 * from the pages that hold them, and a code's names only the first time its thread met that
 * code as identified (copy_extras()).
 *
 * A thread takes a free slot at its first signal (a compare-and-swap of the
 * slot's tid from 0) and is its ring's only producer (SIGTRAP is blocked while its handler
 * runs: no reentry on one thread); the sampler's thread is the only consumer. head/tail are
 * free-running counters, release/acquire.
 *
 * Slots are freed (a process that churns threads: pools, DataLoader workers), by the reader
 * only: sigcap_thread_exit() says a thread has exited (the sampler's PERF_RECORD_EXIT or its
 * scan), and the first sigcap_sweep() after the drain that read the exit frees its slot, every
 * sample the thread made being read by then (each ring is read to its end at each drain; a
 * sample held for its record, latehold.c, is retried before the sweep, and the thread made all
 * its records before it exited). Freeing: the reader swaps the tid for SLOT_FREEING (no handler
 * enters it any more), and once no handler is inside (users: a handler counts itself in, then
 * checks the tid again; sequentially consistent on both sides, so either the handler sees
 * SLOT_FREEING and leaves or the reader sees it inside and waits for a later sweep), empties it
 * (tail = head, no root) and stores tid 0. Linux reuses thread ids: a freed slot is empty
 * before any thread can take it, each record carries its thread's id, and a sample older than
 * the slot's last freeing is never paired from it (since_ns). Threads whose exit was never
 * read (a lost record) are found by the sweep when slots run out (tgkill(tid, 0): ESRCH).
 *
 * Globals: a signal handler has no context argument, so the sigcap in use, the handlers
 * running and the disposition found live in three statics (one per process: the disposition
 * is the process's).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "sampler/internal.h"
#include "sampler/sigcapture.h"

#define SIGCAP_THREADS 128
/* Records per thread's ring: a thread's samples over SIGCAP_COVER_MS of reader lag (read every
 * 1-5 ms, later when the machine is busy or the caller's callback slow), a power of 2 within
 * SIGCAP_RECORDS_MIN..MAX; SIGCAP_RECORDS_PERIOD where sampling goes by period (no rate). */
#define SIGCAP_COVER_MS 16
#define SIGCAP_RECORDS_MIN 8
#define SIGCAP_RECORDS_MAX 32
#define SIGCAP_RECORDS_PERIOD 16
#define SLOT_FREEING ((pid_t) -1)       /* a slot's tid while the reader empties it */
#define SIGCAP_LIVE_CHECK_NS 100000000ULL /* slots run out: look for exited threads this often */
#define SIGCAP_EXCLUDED 16
#define SIGCAP_SEARCH_TRIES 64          /* searches for a thread's root (one that runs no Python) */
#define SIGCAP_BUSY_WAIT_NS 2000000  /* for a record being written when its sample is read */
/* Stacked nodes (CPython 3.11+'s frames): a record reads its nodes a window at a time, the
 * node's page and those below it (its callers'), at most SIGCAP_WINDOWS windows a record */
#define SIGCAP_WINDOWS 4
#define SIGCAP_WINDOW_PAGES 4
#define SIGCAP_PAGE 4096ULL             /* x86-64's */
#define SIGCAP_WINDOW_BYTES ((SIGCAP_WINDOW_PAGES + 1) * SIGCAP_PAGE)
/* A code object's identity extras are read as one span, once per code in a record, where
 * they lie within this many bytes of each other; the pages that hold a record's spans are read
 * whole (code objects lie close together: a read costs ~1 us a page), up to this many */
#define SIGCAP_SPAN_MAX 256
#define SIGCAP_SPAN_PAGES 32
#define NO_PAGE 0xff
/* Per slot, the codes (their identity: sampler_capture_spec.n_identity) whose names the
 * thread's records carried already: later records leave them out. Buckets of 4 */
#define SIGCAP_KNOWN 1024
#define SIGCAP_KNOWN_WAYS 4
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
/* glibc 2.36's siginfo_t lacks _perf: si_perf_data is the u64 after si_addr */
#define SI_PERF_DATA_AT 24

/* before each record in a slot's ring */
struct sigcap_meta {
	uint64_t time_ns;               /* CLOCK_MONOTONIC at the handler's start */
	uint32_t len;                   /* the record's bytes (struct capture_record, nodes) */
	pid_t tid;                      /* the thread that made it */
};

struct sigcap_slot {
	pid_t tid;                      /* atomic: 0 free, SLOT_FREEING, else its thread's */
	uint32_t tries;                 /* the handler's failed searches for the root */
	uint64_t root;                  /* atomic */
	uint32_t head, tail;            /* atomic: records written / taken */
	int busy;                       /* atomic: the handler is writing the record at head */
	int users;                      /* atomic: handlers inside (slot_enter() to their end) */
	/* the reader's alone */
	uint64_t exit_ns;               /* its thread's exit read then (0: not) */
	uint64_t since_ns;              /* freed then: an older sample is not its thread's */
};

/* A slot's handler's room (no reentry on a thread: one record at a time): the windows, the
 * identity spans and what a record's extras need to know per node. */
struct sigcap_work {
	unsigned char window[SIGCAP_WINDOWS][SIGCAP_WINDOW_BYTES];
	unsigned char page[SIGCAP_SPAN_PAGES][SIGCAP_PAGE];
	uint64_t page_at[SIGCAP_SPAN_PAGES];            /* the target's page each holds */
	bool page_ok[SIGCAP_SPAN_PAGES];
	unsigned char span[SAMPLER_CAPTURE_MAX_NODES][SIGCAP_SPAN_MAX]; /* spans read alone */
	uint8_t span_page[SAMPLER_CAPTURE_MAX_NODES];   /* a code's span: in pages, or NO_PAGE */
	uint64_t code[SAMPLER_CAPTURE_MAX_NODES];       /* the distinct codes of the record */
	uint64_t digest[SAMPLER_CAPTURE_MAX_NODES];     /* per node */
	uint8_t of[SAMPLER_CAPTURE_MAX_NODES];          /* a node's code: its index in code[] */
	bool span_ok[SAMPLER_CAPTURE_MAX_NODES];
	bool want[SAMPLER_CAPTURE_MAX_NODES];           /* a node's names are to be read */
	/* emptied by the reader as it frees the slot: the digests of the codes whose names a
	 * record of this thread carried (0: none) */
	uint64_t known[SIGCAP_KNOWN];
};

struct sigcap {
	uint64_t cookie;
	pid_t pid;
	pid_t excluded[SIGCAP_EXCLUDED];        /* atomic */
	struct sampler_capture_spec spec;
	size_t stride, rec_size;        /* a record, its meta included */
	unsigned char *area;            /* atomic: SIGCAP_THREADS * records records, or NULL
	                                 * until sigcap_start() */
	size_t area_size;
	struct sigcap_work *work;       /* one per slot, the handler's (NULL: none could be had) */
	/* the identity extras as one span of the code object: [span_lo, span_hi) past the code's
	 * address (span_hi 0: read each alone) */
	uint32_t span_lo, span_hi;
	uint32_t records;               /* per slot, a power of 2 */
	struct sigcap_slot slot[SIGCAP_THREADS];
	/* the handler's counts (atomic) */
	uint64_t seen, taken, excluded_n, no_slot, full, foreign, ns_total, ns_max, unpaired;
	/* the reader's: slots freed, no_slot at the last look for exited threads, and when */
	uint64_t freed, no_slot_checked, live_check_ns;
};

static struct sigcap *sigcap_active;    /* atomic */
static int sigcap_running;              /* atomic: handlers between their start and end */
static struct sigaction sigcap_old;     /* the disposition found (SIG_DFL or SIG_IGN) */

/* sequentially consistent: sigcap_close()'s store of sigcap_active then load of
 * sigcap_running must not pass each other, nor the handler's add then load */
#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) ((void) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST))
#define CAS(p, expected, v) __atomic_compare_exchange_n((p), (expected), (v), false, \
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

static uint64_t now_ns(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* ---- the handler: async-signal-safe from here to sigcap_handler() ---- */

/* One read of a batch: len bytes at src into dst (src 0: none), ok once read. */
struct rdv {
	void *dst;
	uint64_t src;
	size_t len;
	bool ok;
};

#define RD_BATCH 32

/* Reads n <= RD_BATCH reads in as few system calls as it can (each costs ~2 us here, the
 * handler's whole cost): process_vm_readv stops at the first read that faults, so the reads
 * after it go in another call. */
static void rd_batch(pid_t pid, struct rdv *v, size_t n)
{
	struct iovec l[RD_BATCH], r[RD_BATCH];
	size_t i = 0;

	for (size_t k = 0; k < n; k++)
		v[k].ok = false;
	while (i < n) {
		size_t idx[RD_BATCH], m = 0, done;
		ssize_t got;

		for (; i < n; i++)
			if (v[i].src) {
				l[m] = (struct iovec) { v[i].dst, v[i].len };
				r[m] = (struct iovec) { (void *) (uintptr_t) v[i].src, v[i].len };
				idx[m++] = i;
			}
		if (!m)
			return;
		got = process_vm_readv(pid, l, m, r, m, 0);
		done = got > 0 ? (size_t) got : 0;
		for (size_t k = 0; k < m; k++) {
			if (done < v[idx[k]].len) {
				i = idx[k] + 1;         /* this one faulted: the rest again */
				break;
			}
			done -= v[idx[k]].len;
			v[idx[k]].ok = true;
		}
	}
}

static bool rd(pid_t pid, void *dst, uint64_t src, size_t len)
{
	struct rdv v = { dst, src, len, false };

	rd_batch(pid, &v, 1);
	return v.ok;
}

static bool rd64(pid_t pid, uint64_t *dst, uint64_t src)
{
	return rd(pid, dst, src, 8);
}

/* Extra i's place in a node's body (past the node's own address). */
static uint32_t extra_place(const struct sampler_capture_spec *sp, uint32_t i)
{
	uint32_t at = sp->node_bytes;

	for (uint32_t k = 0; k < i; k++)
		at += 8 + sp->extra[k].len;
	return at;
}

/* After rd_batch(): each extra's address before its bytes, 0 (and the bytes zeroed) where
 * the pointer was 0 or the read failed. */
static void extras_done(const struct rdv *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char *bytes = v[i].dst;
		uint64_t addr = v[i].ok ? v[i].src : 0;

		if (!v[i].ok)
			memset(bytes, 0, v[i].len);
		memcpy(bytes - 8, &addr, 8);
	}
}

/* Extras [from, to) of the n nodes at nodes (those with want[k], or all: want NULL), read in
 * batches of RD_BATCH. */
static void extras_read(const struct sigcap *c, unsigned char *nodes, uint32_t n, uint32_t from,
			uint32_t to, const bool *want)
{
	const struct sampler_capture_spec *sp = &c->spec;
	struct rdv v[RD_BATCH];
	size_t nv = 0;

	for (uint32_t k = 0; k < n; k++) {
		unsigned char *body = nodes + (size_t) k * c->stride + 8;

		if (want && !want[k])
			continue;
		for (uint32_t i = from; i < to; i++) {
			const struct sampler_capture_extra *e = &sp->extra[i];
			uint32_t at = extra_place(sp, i);
			uint64_t addr;

			memcpy(&addr, body + e->from, 8);
			addr = (addr & e->mask) + e->off;
			v[nv++] = (struct rdv) { body + at + 8, addr, e->len, false };
			if (nv == RD_BATCH) {
				rd_batch(c->pid, v, nv);
				extras_done(v, nv);
				nv = 0;
			}
		}
	}
	rd_batch(c->pid, v, nv);
	extras_done(v, nv);
}

/* The digest of a node's identity extras (their addresses and bytes), never 0; 0 where one of
 * them was not read. */
static uint64_t identity_digest(const struct sampler_capture_spec *sp, const unsigned char *body,
				uint32_t n_id)
{
	uint32_t from = extra_place(sp, 0), to = extra_place(sp, n_id);
	uint64_t d = 0xcbf29ce484222325ULL, addr;

	for (uint32_t i = 0; i < n_id; i++) {
		memcpy(&addr, body + extra_place(sp, i), 8);
		if (!addr)
			return 0;
	}
	for (uint32_t k = from; k < to; k++)
		d = (d ^ body[k]) * 0x100000001b3ULL;
	return d ? d : 1;
}

/* Whether the thread's records carried the names of the code of this digest. */
static bool known(const struct sigcap_work *w, uint64_t digest)
{
	const uint64_t *b = &w->known[((digest * 0x9e3779b97f4a7c15ULL) >> (64 - 8)) *
				      SIGCAP_KNOWN_WAYS];

	for (int i = 0; i < SIGCAP_KNOWN_WAYS; i++)
		if (b[i] == digest)
			return true;
	return false;
}

static void known_add(struct sigcap_work *w, uint64_t digest)
{
	uint64_t *b = &w->known[((digest * 0x9e3779b97f4a7c15ULL) >> (64 - 8)) * SIGCAP_KNOWN_WAYS];
	int i = 0;

	while (i < SIGCAP_KNOWN_WAYS && b[i] && b[i] != digest)
		i++;
	/* a full bucket: one of its four by the digest's low bits */
	b[i < SIGCAP_KNOWN_WAYS ? i : (int) (digest & (SIGCAP_KNOWN_WAYS - 1))] = digest;
}

/* The index of page (a page's address) among w's n pages, added if absent and room is left;
 * NO_PAGE if not. */
static uint8_t page_index(struct sigcap_work *w, uint32_t *n, uint64_t page)
{
	for (uint32_t i = 0; i < *n; i++)
		if (w->page_at[i] == page)
			return (uint8_t) i;
	if (*n == SIGCAP_SPAN_PAGES)
		return NO_PAGE;
	w->page_at[*n] = page;
	return (uint8_t) (*n)++;
}

/* Copies len bytes at addr from w's n pages read: whether they were all there. */
static bool from_pages(const struct sigcap_work *w, uint32_t n, uint64_t addr, unsigned char *dst,
		       size_t len)
{
	while (len) {
		uint64_t page = addr & ~(SIGCAP_PAGE - 1);
		size_t k = SIGCAP_PAGE - (addr - page) < len ? SIGCAP_PAGE - (addr - page) : len;
		uint32_t i = 0;

		while (i < n && w->page_at[i] != page)
			i++;
		if (i == n || !w->page_ok[i])
			return false;
		memcpy(dst, w->page[i] + (addr - page), k);
		dst += k;
		addr += k;
		len -= k;
	}
	return true;
}

/* The identity extras of the n nodes, each distinct code's span (c->span_hi) read once: from
 * the pages that hold them, read whole, or alone where the pages ran out. */
static void identity_read(const struct sigcap *c, struct sigcap_work *w, unsigned char *nodes,
			  uint32_t n, uint32_t n_id)
{
	const struct sampler_capture_spec *sp = &c->spec;
	uint32_t n_codes = 0, n_pages = 0, n_alone = 0, len = c->span_hi - c->span_lo;
	struct rdv v[RD_BATCH];
	uint8_t idx[RD_BATCH];

	for (uint32_t k = 0; k < n; k++) {
		const unsigned char *body = nodes + (size_t) k * c->stride + 8;
		uint64_t code;
		uint32_t d = 0;

		memcpy(&code, body + sp->extra[0].from, 8);
		code &= sp->extra[0].mask;
		while (d < n_codes && w->code[d] != code)
			d++;
		if (d == n_codes)
			w->code[n_codes++] = code;
		w->of[k] = (uint8_t) d;
	}
	for (uint32_t d = 0; d < n_codes; d++) {
		uint64_t a = w->code[d] + c->span_lo, b = a + len - 1;
		uint8_t first = NO_PAGE, second = 0;

		w->span_ok[d] = false;
		w->span_page[d] = NO_PAGE;
		if (!w->code[d] || b < a)
			continue;
		first = page_index(w, &n_pages, a & ~(SIGCAP_PAGE - 1));
		if (first != NO_PAGE && (b & ~(SIGCAP_PAGE - 1)) != (a & ~(SIGCAP_PAGE - 1)))
			second = page_index(w, &n_pages, b & ~(SIGCAP_PAGE - 1));
		w->span_page[d] = second == NO_PAGE ? NO_PAGE : first;
		if (w->span_page[d] == NO_PAGE)
			n_alone++;
	}
	/* the pages, then the spans that found none */
	for (uint32_t i = 0; i < n_pages; i += RD_BATCH) {
		uint32_t m = n_pages - i < RD_BATCH ? n_pages - i : RD_BATCH;

		for (uint32_t q = 0; q < m; q++)
			v[q] = (struct rdv) { w->page[i + q], w->page_at[i + q], SIGCAP_PAGE, false };
		rd_batch(c->pid, v, m);
		for (uint32_t q = 0; q < m; q++)
			w->page_ok[i + q] = v[q].ok;
	}
	for (uint32_t d = 0, m = 0; n_alone && d <= n_codes; d++) {
		if (d < n_codes && w->code[d] && w->span_page[d] == NO_PAGE) {
			idx[m] = (uint8_t) d;
			v[m++] = (struct rdv) { w->span[d], w->code[d] + c->span_lo, len, false };
		}
		if (m == RD_BATCH || (d == n_codes && m)) {
			rd_batch(c->pid, v, m);
			for (uint32_t q = 0; q < m; q++)
				w->span_ok[idx[q]] = v[q].ok;
			m = 0;
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		unsigned char *body = nodes + (size_t) k * c->stride + 8;
		uint32_t d = w->of[k];

		for (uint32_t i = 0; i < n_id; i++) {
			const struct sampler_capture_extra *e = &sp->extra[i];
			unsigned char *at = body + extra_place(sp, i);
			uint64_t addr = w->code[d] ? w->code[d] + e->off : 0;
			bool ok = addr && (w->span_page[d] != NO_PAGE ?
					   from_pages(w, n_pages, addr, at + 8, e->len) : w->span_ok[d]);

			if (ok && w->span_page[d] == NO_PAGE)
				memcpy(at + 8, w->span[d] + (e->off - c->span_lo), e->len);
			if (!ok) {
				addr = 0;
				memset(at + 8, 0, e->len);
			}
			memcpy(at, &addr, 8);
		}
	}
}

/* The extras of a record's n nodes: the identity ones of every node, then the names of those
 * whose code (as identified now) no record of this thread carried the names of; the others'
 * are left out (address 0), the reader knowing them from that record. */
static void copy_extras(struct sigcap *c, struct sigcap_work *w,
			unsigned char *nodes, uint32_t n)
{
	const struct sampler_capture_spec *sp = &c->spec;
	uint32_t n_id = sp->n_identity && sp->n_identity < sp->n_extras ? sp->n_identity
									   : sp->n_extras;
	uint32_t names = extra_place(sp, n_id), end = extra_place(sp, sp->n_extras);

	if (!w) {                       /* no room: every extra, every time */
		extras_read(c, nodes, n, 0, sp->n_extras, NULL);
		return;
	}
	if (c->span_hi)
		identity_read(c, w, nodes, n, n_id);
	else
		extras_read(c, nodes, n, 0, n_id, NULL);
	if (n_id == sp->n_extras)
		return;
	for (uint32_t k = 0; k < n; k++) {
		unsigned char *body = nodes + (size_t) k * c->stride + 8;

		w->digest[k] = identity_digest(sp, body, n_id);
		w->want[k] = !w->digest[k] || !known(w, w->digest[k]);
		if (!w->want[k])
			memset(body + names, 0, end - names);
	}
	extras_read(c, nodes, n, n_id, sp->n_extras, w->want);
	for (uint32_t k = 0; k < n; k++) {
		const unsigned char *body = nodes + (size_t) k * c->stride + 8;
		bool all = w->digest[k] != 0 && w->want[k];
		uint64_t addr;

		for (uint32_t i = n_id; all && i < sp->n_extras; i++) {
			memcpy(&addr, body + extra_place(sp, i), 8);
			all = addr != 0;
		}
		if (all)
			known_add(w, w->digest[k]);
	}
}

/* A window of stacked nodes read: [lo, hi) of the target at base. */
struct window {
	uint64_t lo, hi;
	const unsigned char *base;
};

/* Reads the window that ends past the node at node (len bytes): its page and up to
 * SIGCAP_WINDOW_PAGES - 1 below, into buf (SIGCAP_WINDOW_BYTES), as far
 * down as they are mapped. false where the node itself is not. */
static bool window_read(const struct sigcap *c, uint64_t node, uint32_t len, unsigned char *buf,
			struct window *w)
{
	struct iovec l[SIGCAP_WINDOW_PAGES], r[SIGCAP_WINDOW_PAGES];
	uint64_t page = node & ~(SIGCAP_PAGE - 1), top = node + len;
	unsigned char *at = buf + (SIGCAP_WINDOW_PAGES - 1) * SIGCAP_PAGE;
	size_t m = 0, first = top - page;
	ssize_t got;

	if (top < node || first > 2 * SIGCAP_PAGE)
		return false;
	/* the node's page first: a page below that is not mapped ends the window there */
	l[m] = (struct iovec) { at, first };
	r[m++] = (struct iovec) { (void *) (uintptr_t) page, first };
	for (uint64_t k = 1; k < SIGCAP_WINDOW_PAGES && page >= (k + 1) * SIGCAP_PAGE; k++) {
		l[m] = (struct iovec) { at - k * SIGCAP_PAGE, SIGCAP_PAGE };
		r[m++] = (struct iovec) { (void *) (uintptr_t) (page - k * SIGCAP_PAGE), SIGCAP_PAGE };
	}
	got = process_vm_readv(c->pid, l, m, r, m, 0);
	if (got < (ssize_t) first)
		return false;
	w->hi = top;
	w->lo = page - (((size_t) got - first) / SIGCAP_PAGE) * SIGCAP_PAGE;
	w->base = at - (page - w->lo);
	return true;
}

/* The thread's root by the interpreter's list of threads (spec.search_at), or 0. */
static uint64_t search_root(const struct sigcap *c, pid_t tid)
{
	const struct sampler_capture_spec *sp = &c->spec;
	uint64_t list, node, id;

	if (!sp->search_at || !rd64(c->pid, &list, sp->search_at) ||
	    !rd64(c->pid, &node, list + sp->search_list_off))
		return 0;
	for (int k = 0; node && k < SAMPLER_CAPTURE_SEARCH; k++) {
		if (rd64(c->pid, &id, node + sp->search_id_off1) &&
		    (sp->search_id_off2 == SAMPLER_CAPTURE_NO_OFF ||
		     (id && rd64(c->pid, &id, id + sp->search_id_off2))) &&
		    (uint32_t) id == (uint32_t) tid)
			return node;
		if (!rd64(c->pid, &node, node + sp->search_next_off))
			return 0;
	}
	return 0;
}

/* The record of one overflow at rec (struct capture_record, then the nodes): its length. */
static uint32_t copy_chain(struct sigcap *c, struct sigcap_slot *sl, pid_t tid, uint64_t ip,
			   unsigned char *rec)
{
	const struct sampler_capture_spec *sp = &c->spec;
	struct capture_record h = { .magic = CAPTURE_MAGIC, .status = SAMPLE_CAPTURE_NO_ROOT,
				    .ip = ip };
	struct sigcap_work *w = c->work ? &c->work[sl - c->slot] : NULL;
	struct window win[SIGCAP_WINDOWS];
	struct rdv v[4];
	size_t nv = 0, gil = SIZE_MAX, gc = SIZE_MAX, head = SIZE_MAX, n_win = 0;
	uint32_t len = CAPTURE_HDR;
	uint64_t node;

	h.root = LOAD(&sl->root);
	if (!h.root && sl->tries < SIGCAP_SEARCH_TRIES) {
		h.root = search_root(c, tid);
		if (h.root)
			STORE(&sl->root, h.root);
		else
			sl->tries++;
	}
	/* the lock, the collector and the thread's frame pointer: one read */
	if (sp->gil_at) {
		gil = nv;
		v[nv++] = (struct rdv) { &h.gil_holder, sp->gil_at + sp->gil_holder_off, 8, false };
		v[nv++] = (struct rdv) { &h.gil_locked, sp->gil_at + sp->gil_locked_off, 4, false };
	}
	if (sp->gc_at) {
		gc = nv;
		v[nv++] = (struct rdv) { &h.gc_collecting, sp->gc_at, 4, false };
	}
	if (h.root) {
		head = nv;
		v[nv++] = (struct rdv) { &h.head, h.root + sp->head_off1, 8, false };
	}
	rd_batch(c->pid, v, nv);
	h.gil_read = gil != SIZE_MAX && v[gil].ok && v[gil + 1].ok;
	h.gc_read = gc != SIZE_MAX && v[gc].ok;
	if (!h.gil_read)
		h.gil_holder = h.gil_locked = 0;
	if (!h.gc_read)
		h.gc_collecting = 0;
	if (h.root) {
		h.status = SAMPLE_CAPTURE_FAULT;
		if (v[head].ok && (sp->head_off2 == SAMPLER_CAPTURE_NO_OFF || !h.head ||
				   rd64(c->pid, &h.head, h.head + sp->head_off2)))
			h.status = SAMPLE_CAPTURE_OK;
		else
			h.head = 0;
	}
	/* the nodes (stacked ones from windows), then their extras */
	node = h.status == SAMPLE_CAPTURE_OK ? h.head : 0;
	while (node && h.n < SAMPLER_CAPTURE_MAX_NODES) {
		unsigned char *n = rec + CAPTURE_HDR + h.n * c->stride;
		bool got = false;

		for (size_t k = 0; k < n_win && !got; k++)
			if (node >= win[k].lo && node + sp->node_bytes <= win[k].hi) {
				memcpy(n + 8, win[k].base + (node - win[k].lo), sp->node_bytes);
				got = true;
			}
		if (!got && sp->stacked && n_win < SIGCAP_WINDOWS && w &&
		    window_read(c, node, sp->node_bytes, w->window[n_win], &win[n_win])) {
			memcpy(n + 8, win[n_win].base + (node - win[n_win].lo), sp->node_bytes);
			n_win++;
			got = true;
		}
		if (!got && !rd(c->pid, n + 8, node, sp->node_bytes)) {
			h.status = SAMPLE_CAPTURE_FAULT;
			break;
		}
		memcpy(n, &node, 8);
		h.n++;
		len = (uint32_t) (CAPTURE_HDR + h.n * c->stride);
		memcpy(&node, n + 8 + sp->next_off, 8);
	}
	copy_extras(c, w, rec + CAPTURE_HDR, h.n);
	if (node && h.status == SAMPLE_CAPTURE_OK)
		h.status = SAMPLE_CAPTURE_CUT;
	memcpy(rec, &h, sizeof(h));
	return len;
}

/* Thread tid's slot: the one it has, else a free one taken (freed slots leave holes: its own
 * may come after a free one), else NULL. */
static struct sigcap_slot *slot_of(struct sigcap *c, pid_t tid)
{
	for (int i = 0; i < SIGCAP_THREADS; i++)
		if (LOAD(&c->slot[i].tid) == tid)
			return &c->slot[i];
	for (int i = 0; i < SIGCAP_THREADS; i++) {
		pid_t t = 0;

		if (CAS(&c->slot[i].tid, &t, tid) || t == tid)
			return &c->slot[i];
	}
	return NULL;
}

/* The handler's: tid's slot as slot_of(), entered (users counted; the reader frees no slot a
 * handler is in), or NULL; its users taken back by the handler at its end. */
static struct sigcap_slot *slot_enter(struct sigcap *c, pid_t tid)
{
	for (int tries = 0; tries < 4; tries++) {
		struct sigcap_slot *sl = slot_of(c, tid);

		if (!sl)
			return NULL;
		ADD(&sl->users, 1);
		if (LOAD(&sl->tid) == tid)
			return sl;
		ADD(&sl->users, -1);    /* being freed meanwhile (its thread's tid reused) */
	}
	return NULL;
}

/* Not ours: what the disposition found would have done (SIG_DFL: the default action, once
 * this handler returns; SIG_IGN: nothing). A TRAP_PERF signal without our cookie (an event of
 * a sampler gone) is dropped. */
static void not_ours(const siginfo_t *si)
{
	struct sigaction dfl;

	if (si->si_code == TRAP_PERF || sigcap_old.sa_handler == SIG_IGN)
		return;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	(void) sigaction(SIGTRAP, &dfl, NULL);
	(void) syscall(SYS_tgkill, getpid(), (pid_t) syscall(SYS_gettid), SIGTRAP);
}

static void sigcap_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	struct sigcap *c;
	uint64_t data, t0, dt;

	(void) sig;
	ADD(&sigcap_running, 1);
	c = LOAD(&sigcap_active);
	memcpy(&data, (const unsigned char *) si + SI_PERF_DATA_AT, 8);
	if (!c || si->si_code != TRAP_PERF || data != c->cookie) {
		if (c)
			ADD(&c->foreign, 1);
		not_ours(si);
	} else {
		const ucontext_t *uc = ucv;
		unsigned char *area = LOAD(&c->area);
		pid_t tid = (pid_t) syscall(SYS_gettid);
		struct sigcap_slot *sl = NULL;
		bool skip = false;

		t0 = now_ns();
		ADD(&c->seen, 1);
		for (int i = 0; i < SIGCAP_EXCLUDED && !skip; i++)
			skip = LOAD(&c->excluded[i]) == tid;
		if (skip)
			ADD(&c->excluded_n, 1);
		else if (area && !(sl = slot_enter(c, tid)))
			ADD(&c->no_slot, 1);
		if (sl) {
			uint32_t head = sl->head, tail = LOAD(&sl->tail);

			if (head - tail >= c->records) {
				ADD(&c->full, 1);
			} else {
				size_t k = (size_t) (sl - c->slot) * c->records +
					   (head & (c->records - 1));
				unsigned char *at = area + k * c->rec_size;
				struct sigcap_meta m = { .time_ns = t0, .tid = tid };

				STORE(&sl->busy, 1);
				m.len = copy_chain(c, sl, tid,
						   (uint64_t) uc->uc_mcontext.gregs[REG_RIP],
						   at + sizeof(m));
				memcpy(at, &m, sizeof(m));
				STORE(&sl->head, head + 1);
				STORE(&sl->busy, 0);
				ADD(&c->taken, 1);
				dt = now_ns() - t0;
				ADD(&c->ns_total, dt);
				if (dt > LOAD(&c->ns_max))
					STORE(&c->ns_max, dt);  /* one writer at a time is enough */
			}
			ADD(&sl->users, -1);
		}
	}
	ADD(&sigcap_running, -1);
	errno = saved;
}

/* ---- the sampler's side ---- */

static bool ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == sigcap_handler;
}

/* a handler of the host's (ours left installed by a sigcap_close() is not) */
static bool foreign_handler(const struct sigaction *sa)
{
	return !ours(sa) && sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

int sigcap_probe(void)
{
	struct sigaction now;

#if !defined(__x86_64__)
	return -ENOTSUP;
#endif
	if (LOAD(&sigcap_active))
		return -EBUSY;
	if (sigaction(SIGTRAP, NULL, &now) < 0)
		return -errno;
	return foreign_handler(&now) ? -EBUSY : 0;
}

int sigcap_open(struct sigcap **ret, uint64_t *ret_cookie)
{
	struct sigaction sa, prev;
	struct sigcap *c;
	int r = sigcap_probe();

	*ret = NULL;
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = getpid();
	c->cookie = now_ns() ^ ((uint64_t) (uintptr_t) c << 16) ^ (uint64_t) c->pid << 48;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigcap_handler;
	/* SA_RESTART: a host's system call a signal of ours could interrupt is restarted (ours
	 * come only in user mode: none is); no SA_ONSTACK: the handler needs little stack */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	STORE(&sigcap_active, c);
	if (sigaction(SIGTRAP, &sa, &prev) < 0) {
		r = -errno;
		STORE(&sigcap_active, NULL);
		free(c);
		return r;
	}
	if (foreign_handler(&prev)) {
		/* installed meanwhile by another thread of the host: put back, refuse */
		(void) sigaction(SIGTRAP, &prev, NULL);
		STORE(&sigcap_active, NULL);
		free(c);
		return -EBUSY;
	}
	if (!ours(&prev))
		sigcap_old = prev;      /* else left by a close: the one found before it */
	*ret = c;
	*ret_cookie = c->cookie;
	return 0;
}

bool sigcap_excluded(const struct sigcap *c, pid_t tid)
{
	for (int i = 0; c && i < SIGCAP_EXCLUDED; i++)
		if (LOAD(&c->excluded[i]) == tid)
			return true;
	return false;
}

void sigcap_exclude(struct sigcap *c, pid_t tid)
{
	for (int i = 0; c && i < SIGCAP_EXCLUDED; i++) {
		pid_t t = LOAD(&c->excluded[i]);

		if (t == tid)
			return;
		if (!t) {
			STORE(&c->excluded[i], tid);
			return;
		}
	}
}

/* Records per slot for rate_hz samples a second per thread (0: by period). */
static uint32_t sigcap_records(uint64_t rate_hz)
{
	uint64_t want = rate_hz * SIGCAP_COVER_MS / 1000;
	uint32_t n = SIGCAP_RECORDS_MIN;

	if (!rate_hz)
		return SIGCAP_RECORDS_PERIOD;
	while (n < want && n < SIGCAP_RECORDS_MAX)
		n *= 2;
	return n;
}

/* Whether the identity extras can be read as one span of the code object: all from the
 * node's code pointer, within SIGCAP_SPAN_MAX bytes of each other. */
static void span_choose(struct sigcap *c)
{
	const struct sampler_capture_spec *sp = &c->spec;
	uint32_t n_id = sp->n_identity && sp->n_identity < sp->n_extras ? sp->n_identity
									   : sp->n_extras;
	uint32_t lo = UINT32_MAX, hi = 0;

	c->span_lo = c->span_hi = 0;
	for (uint32_t i = 0; i < n_id; i++) {
		const struct sampler_capture_extra *e = &sp->extra[i];

		if (e->from != sp->extra[0].from || e->mask != sp->extra[0].mask)
			return;
		lo = e->off < lo ? e->off : lo;
		hi = e->off + e->len > hi ? e->off + e->len : hi;
	}
	if (n_id && hi - lo <= SIGCAP_SPAN_MAX) {
		c->span_lo = lo;
		c->span_hi = hi;
	}
}

int sigcap_start(struct sigcap *c, const struct sampler_capture_spec *spec, uint64_t rate_hz)
{
	void *area, *work;

	if (!capture_spec_ok(spec))
		return -EINVAL;
	if (LOAD(&c->area))
		return memcmp(&c->spec, spec, sizeof(*spec)) ? -EBUSY : 0;
	c->spec = *spec;
	c->stride = capture_stride(spec);
	c->rec_size = (sizeof(struct sigcap_meta) + CAPTURE_HDR +
		       SAMPLER_CAPTURE_MAX_NODES * c->stride + 63) & ~(size_t) 63;
	c->records = sigcap_records(rate_hz);
	c->area_size = c->rec_size * SIGCAP_THREADS * c->records;
	area = mmap(NULL, c->area_size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED)
		return -ENOMEM;
	/* the handlers' room: where it cannot be had, nodes and extras are read one by one */
	work = mmap(NULL, SIGCAP_THREADS * sizeof(*c->work), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	c->work = work == MAP_FAILED ? NULL : work;
	span_choose(c);
	STORE(&c->area, (unsigned char *) area);        /* the spec before it (release) */
	return 0;
}

int sigcap_set_root(struct sigcap *c, pid_t tid, uint64_t root)
{
	struct sigcap_slot *sl = slot_of(c, tid);

	if (!sl)
		return -E2BIG;
	STORE(&sl->root, root);
	sl->tries = 0;
	return 0;
}

/* The record of smp in slot sl, as sigcap_take(). */
static size_t take_from(struct sigcap *c, unsigned char *area, struct sigcap_slot *sl,
			const struct sample *smp, unsigned char *buf, size_t size)
{
	/* a sample from before the slot's last freeing: an earlier thread's of that id */
	if (smp->time_ns < sl->since_ns)
		return 0;
	for (;;) {
		uint32_t tail = sl->tail, head = LOAD(&sl->head);
		size_t k = (size_t) (sl - c->slot) * c->records + (tail & (c->records - 1));
		const unsigned char *at = area + k * c->rec_size;
		struct sigcap_meta m;
		struct capture_record h;

		if (tail == head) {
			/* its signal's handler at work (a few us; more if it was preempted): the
			 * record is the sample's, worth a bounded wait */
			uint64_t end = now_ns() + SIGCAP_BUSY_WAIT_NS;

			while (LOAD(&sl->busy) && LOAD(&sl->head) == tail && now_ns() < end)
				sched_yield();
			if (LOAD(&sl->head) == tail)
				return 0;
			continue;
		}
		memcpy(&m, at, sizeof(m));
		memcpy(&h, at + sizeof(m), sizeof(h));
		if (m.tid != smp->tid || m.time_ns < smp->time_ns) {
			/* an earlier overflow's (its sample was lost), or, never expected (a slot is
			 * emptied before it is free), another thread's */
			STORE(&sl->tail, tail + 1);
			c->unpaired++;
			continue;
		}
		if (h.ip != smp->ip || m.len > size)
			return 0;       /* a later overflow's (this one's not handled yet) */
		/* the handler knows no period: the sample's is its */
		h.period = smp->values[0];
		memcpy(buf, at + sizeof(m), m.len);
		memcpy(buf, &h, sizeof(h));
		STORE(&sl->tail, tail + 1);
		return m.len;
	}
}

size_t sigcap_take(struct sigcap *c, const struct sample *smp, unsigned char *buf, size_t size)
{
	unsigned char *area = LOAD(&c->area);
	size_t len = 0;

	if (!area || smp->tid <= 0)
		return 0;
	/* only this thread frees slots: one found stays its thread's while we read it. A thread
	 * has one slot, rarely two (its handler searching while a slot before the one it took
	 * was freed and given it by sigcap_set_root()) */
	for (int i = 0; i < SIGCAP_THREADS && !len; i++)
		if (LOAD(&c->slot[i].tid) == smp->tid)
			len = take_from(c, area, &c->slot[i], smp, buf, size);
	return len;
}

void sigcap_thread_exit(struct sigcap *c, pid_t tid)
{
	uint64_t now = now_ns();

	for (int i = 0; c && tid > 0 && i < SIGCAP_THREADS; i++)
		if (LOAD(&c->slot[i].tid) == tid && !c->slot[i].exit_ns)
			c->slot[i].exit_ns = now;
}

/* Empties slot sl (SLOT_FREEING) and makes it free, unless a handler is inside: whether freed. */
static bool slot_free(struct sigcap *c, struct sigcap_slot *sl, uint64_t now)
{
	if (LOAD(&sl->users))
		return false;   /* a handler of a thread that reused the id: a later sweep */
	STORE(&sl->tail, LOAD(&sl->head));
	STORE(&sl->root, 0);
	sl->tries = 0;
	STORE(&sl->busy, 0);
	if (c->work)                    /* another thread's records next */
		memset(c->work[sl - c->slot].known, 0, sizeof(c->work->known));
	sl->exit_ns = 0;
	sl->since_ns = now;
	c->freed++;
	STORE(&sl->tid, 0);     /* last: a handler's CAS from 0 sees the slot empty */
	return true;
}

/* When slots have run out: the slots of threads gone whose exit was not read (a lost record),
 * by tgkill(tid, 0), at most every SIGCAP_LIVE_CHECK_NS. */
static void find_exited(struct sigcap *c, uint64_t now)
{
	uint64_t no_slot = LOAD(&c->no_slot);

	if (no_slot == c->no_slot_checked || now - c->live_check_ns < SIGCAP_LIVE_CHECK_NS)
		return;
	c->no_slot_checked = no_slot;
	c->live_check_ns = now;
	for (int i = 0; i < SIGCAP_THREADS; i++) {
		struct sigcap_slot *sl = &c->slot[i];
		pid_t t = LOAD(&sl->tid);

		if (t > 0 && !sl->exit_ns && syscall(SYS_tgkill, c->pid, t, 0) < 0 &&
		    errno == ESRCH)
			sl->exit_ns = now;
	}
}

void sigcap_sweep(struct sigcap *c, uint64_t drain_ns)
{
	uint64_t now = now_ns();

	if (!c || !LOAD(&c->area))
		return;
	for (int i = 0; i < SIGCAP_THREADS; i++) {
		struct sigcap_slot *sl = &c->slot[i];
		pid_t t = LOAD(&sl->tid);

		if (t == SLOT_FREEING) {
			(void) slot_free(c, sl, now);
		} else if (t > 0 && sl->exit_ns && sl->exit_ns < drain_ns) {
			/* no handler enters it from now on; any inside is waited for */
			if (CAS(&sl->tid, &t, SLOT_FREEING))
				(void) slot_free(c, sl, now);
		}
	}
	find_exited(c, now);
}

void sigcap_stats(const struct sigcap *c, struct sampler_stats *st)
{
	st->signal_seen = LOAD(&c->seen);
	st->signal_taken = LOAD(&c->taken);
	st->signal_excluded = LOAD(&c->excluded_n);
	st->signal_dropped = LOAD(&c->no_slot) + LOAD(&c->full);
	st->signal_foreign = LOAD(&c->foreign);
	st->signal_unpaired = c->unpaired;
	st->signal_ns_total = LOAD(&c->ns_total);
	st->signal_ns_max = LOAD(&c->ns_max);
}

void sigcap_close(struct sigcap *c)
{
	if (!c)
		return;
	/* The events are closed, but the handler stays installed for the process's life: a
	 * signal of ours can still arrive after the close (under load, one came past a 200 ms
	 * wait for /proc's pending masks to clear, and with the default disposition back it
	 * killed the process: 5 of 15 runs of sampler_sigcapture beside 3 CPU burners). The handler
	 * drops every TRAP_PERF signal it has no session for and does as the disposition found
	 * would have for any other SIGTRAP (not_ours()), so the host sees SIGTRAP as before. */
	STORE(&sigcap_active, NULL);
	/* a handler that took c before: let it end */
	for (int i = 0; i < 1000000 && LOAD(&sigcap_running); i++)
		sched_yield();
	if (c->area)
		(void) munmap(c->area, c->area_size);
	if (c->work)
		(void) munmap(c->work, SIGCAP_THREADS * sizeof(*c->work));
	free(c);
}
