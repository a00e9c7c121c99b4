/*
 * mem: reading another process's memory (process_vm_readv; a live thread's /proc mem file where
 * the main thread has exited), counting reads, and a small
 * per-walk cache of whole 4 KiB pages (one read costs the same from 8 bytes to 4 KiB). Many
 * small scattered ranges go in one vectored read (pf_readv). Under all of them, during a
 * captured walk, the overlay: the frames a capture copied, read in place of the target's bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/procfs.h"
#include "pyframes/pyframes_internal.h"

/* Reads go through process_vm_readv(pid). Where the main thread has exited (pthread_exit)
 * while others run on, that answers ESRCH (a zombie has no memory of its own): the reads then
 * go through /proc/PID/task/TID/mem of a live thread, which reads the process's memory as long
 * as any thread of it runs, whichever that is (the file holds the memory, not the thread). */
struct pid_mem {
	pid_t pid;
	int fd;                         /* /proc/PID/task/TID/mem, or -1: process_vm_readv */
	bool gone;                      /* no thread left: every read -ESRCH */
};

/* process_vm_readv() said ESRCH: 0 if a live thread's mem file now serves the reads, else
 * -ESRCH (the process is gone, or it was not a zombie leader: no other way in). */
static int pid_mem_fallback(struct pid_mem *pm)
{
	char path[80];
	pid_t tid;

	if (pm->gone || pm->fd >= 0 || procfs_live_tid(pm->pid, &tid) < 0 || tid == pm->pid) {
		pm->gone = true;
		return -ESRCH;
	}
	(void) snprintf(path, sizeof(path), "/proc/%d/task/%d/mem", (int) pm->pid, (int) tid);
	pm->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pm->fd < 0) {
		pm->gone = errno == ENOENT || errno == ESRCH;
		return -ESRCH;
	}
	return 0;
}

/* One range from the mem file: 0, -EFAULT (unmapped, partly too), -ESRCH (no thread left:
 * the file reads nothing once the memory is gone). */
static int fd_read(struct pid_mem *pm, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (addr > (uint64_t) INT64_MAX - len)
		return -EFAULT;
	do
		n = pread(pm->fd, buf, len, (off_t) addr);
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		pm->gone = true;
		return -ESRCH;
	}
	return n < 0 || (size_t) n != len ? -EFAULT : 0;
}

static int pid_mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pid_mem *pm = ctx;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *) (uintptr_t) addr, .iov_len = len };
	ssize_t n;

	if (len == 0)
		return 0;
	if (pm->gone)
		return -ESRCH;
	if (pm->fd >= 0)
		return fd_read(pm, addr, buf, len);
	n = process_vm_readv(pm->pid, &local, 1, &remote, 1, 0);
	if (n < 0 && errno == ESRCH)
		return pid_mem_fallback(pm) < 0 ? -ESRCH : fd_read(pm, addr, buf, len);
	if (n < 0)
		return -EFAULT;
	if ((size_t) n != len)
		return -EFAULT;
	return 0;
}

/* readv() through the mem file: one pread() per range, up to the first that fails */
static int fd_readv(struct pid_mem *pm, const struct remote_range *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int k = fd_read(pm, r[i].addr, r[i].buf, r[i].len);

		if (k == -ESRCH && i == 0)
			return -ESRCH;
		if (k < 0)
			break;
	}
	return (int) i;
}

#define PID_IOV 128   /* iovecs per process_vm_readv call (a stack array) */

static int pid_mem_readv(void *ctx, const struct remote_range *r, size_t n)
{
	struct pid_mem *pm = ctx;
	struct iovec local[PID_IOV], remote[PID_IOV];
	size_t done = 0;

	if (n == 0 || n > REMOTE_MEM_READV_MAX)
		return -EINVAL;
	if (pm->gone)
		return -ESRCH;
	if (pm->fd >= 0)
		return fd_readv(pm, r, n);
	while (done < n) {
		size_t c = n - done < PID_IOV ? n - done : PID_IOV, i, got;
		ssize_t k;

		for (i = 0; i < c; i++) {
			local[i].iov_base = r[done + i].buf;
			local[i].iov_len = r[done + i].len;
			remote[i].iov_base = (void *) (uintptr_t) r[done + i].addr;
			remote[i].iov_len = r[done + i].len;
		}
		/* stops at the first unreadable range, returning the bytes read before it (or -1
		 * EFAULT if none were) */
		k = process_vm_readv(pm->pid, local, c, remote, c, 0);
		if (k < 0 && errno == ESRCH && done == 0)
			return pid_mem_fallback(pm) < 0 ? -ESRCH : fd_readv(pm, r, n);
		if (k < 0 && errno != EFAULT)
			return errno == ESRCH ? -ESRCH : -errno;
		got = k < 0 ? 0 : (size_t) k;
		for (i = 0; i < c && r[done + i].len <= got; i++)
			got -= r[done + i].len;
		done += i;
		if (i < c)
			break;
	}
	return (int) done;
}

int remote_mem_open_pid(pid_t pid, struct remote_mem *ret)
{
	struct pid_mem *pm;

	if (pid <= 0)
		return -EINVAL;
	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->pid = pid;
	pm->fd = -1;
	ret->read = pid_mem_read;
	ret->readv = pid_mem_readv;
	ret->ctx = pm;
	return 0;
}

void remote_mem_close(struct remote_mem *mem)
{
	struct pid_mem *pm;

	if (!mem)
		return;
	pm = mem->ctx;
	if (pm && pm->fd >= 0)
		(void) close(pm->fd);
	free(mem->ctx);
	mem->ctx = NULL;
	mem->read = NULL;
	mem->readv = NULL;
}

int pf_mem_init(struct pf_mem *m, const struct remote_mem *mem, uint64_t *reads)
{
	memset(m, 0, sizeof(*m));
	m->mem = mem;
	m->reads = reads;
	m->pc.data = malloc((size_t) PF_PAGE_SLOTS * PF_PAGE);
	m->spans = calloc(PF_SPANS_MAX, sizeof(*m->spans));
	if (!m->pc.data || !m->spans) {
		pf_mem_release(m);
		return -ENOMEM;
	}
	m->cache_on = true;
	return 0;
}

void pf_mem_release(struct pf_mem *m)
{
	free(m->pc.data);
	m->pc.data = NULL;
	free(m->spans);
	m->spans = NULL;
	m->n_spans = 0;
	free(m->seen);
	m->seen = NULL;
	free(m->order);
	m->order = NULL;
}

void pf_mem_invalidate(struct pf_mem *m)
{
	memset(m->pc.page, 0, sizeof(m->pc.page));
}

/* ---- the overlay ---- */

static int span_cmp(const void *a, const void *b)
{
	const struct pf_span *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* Whether an earlier node's piece had addr and len: it hides this one whole (the earlier node
 * wins). A recursive stack's frames point to one code object, its pieces copied again with each:
 * sorting them all would cost more than the rest of the walk. */
static bool span_seen(struct pf_mem *m, uint64_t addr, size_t len)
{
	size_t h = (size_t) ((addr * 0x9E3779B97F4A7C15ull) >> 52) & (PF_SEEN_SLOTS - 1);

	for (size_t probe = 0; probe < 8; probe++, h = (h + 1) & (PF_SEEN_SLOTS - 1)) {
		struct pf_seen *e = &m->seen[h];

		if (e->gen != m->gen) {
			*e = (struct pf_seen) { .addr = addr, .len = (uint32_t) len, .gen = m->gen };
			return false;
		}
		if (e->addr == addr && e->len == len)
			return true;
	}
	return false;
}

/* The piece of a node that starts at body (an address, then len bytes), if it has one. */
static void span_add(struct pf_mem *m, size_t *k, const unsigned char *at, size_t len,
		     uint32_t order, bool dedup)
{
	uint64_t addr;

	memcpy(&addr, at, sizeof(addr));
	if (addr == 0 || addr > UINT64_MAX - len || (dedup && span_seen(m, addr, len)))
		return;
	m->spans[(*k)++] = (struct pf_span) { .addr = addr, .data = at + 8, .len = (uint32_t) len,
					      .node = order };
}

/* Whether the k spans were added as the last overlay's were (same addresses, lengths, nodes). */
static bool same_spans(const struct pf_order *o, const struct pf_span *s, size_t k)
{
	if (k != o->n)
		return false;
	for (size_t i = 0; i < k; i++)
		if (s[i].addr != o->key_addr[i] || s[i].len != o->key_len[i] ||
		    s[i].node != o->key_node[i])
			return false;
	return true;
}

/* Sorts m's k spans by address (span_cmp), as the last overlay's were where they are the same
 * spans (a thread sampled in one stack: the sort was a third of a deep sample's decoding). */
static void sort_spans(struct pf_mem *m, size_t k)
{
	struct pf_order *o = m->order;

	if (k <= 16) {
		/* a few (a spliced walk's one or two nodes): in place, no call a comparison */
		for (size_t i = 1; i < k; i++) {
			struct pf_span s = m->spans[i];
			size_t j = i;

			for (; j > 0 && span_cmp(&m->spans[j - 1], &s) > 0; j--)
				m->spans[j] = m->spans[j - 1];
			m->spans[j] = s;
		}
		return;
	}
	if (!o)
		o = m->order = calloc(1, sizeof(*m->order));
	if (!o) {
		qsort(m->spans, k, sizeof(*m->spans), span_cmp);
		return;
	}
	memcpy(o->added, m->spans, k * sizeof(*m->spans));
	if (same_spans(o, o->added, k)) {
		for (size_t i = 0; i < k; i++)
			m->spans[i] = o->added[o->sorted[i]];
		return;
	}
	for (size_t i = 0; i < k; i++) {
		o->key_addr[i] = o->added[i].addr;
		o->key_len[i] = o->added[i].len;
		o->key_node[i] = o->added[i].node;
		o->at_node[o->added[i].node] = (uint16_t) i;
	}
	qsort(m->spans, k, sizeof(*m->spans), span_cmp);
	for (size_t i = 0; i < k; i++)
		o->sorted[i] = o->at_node[m->spans[i].node];
	o->n = k;
}

int pf_mem_overlay_set(struct pf_mem *m, const unsigned char *nodes, size_t n, size_t stride,
		       size_t frame_bytes, const uint32_t *extra_len, size_t n_extras,
		       const struct pf_names *names)
{
	uint64_t end = 0;
	size_t i, j, k = 0, kept = 0, need = 8 + frame_bytes, inline_n = n_extras, names_need = 0;

	if (!m->spans || frame_bytes == 0 || frame_bytes > PYFRAMES_CAPTURE_FRAME_MAX ||
	    n > PYFRAMES_CAPTURE_MAX_NODES || n_extras > PYFRAMES_CAPTURE_MAX_EXTRAS ||
	    (n_extras && !extra_len))
		return -EINVAL;
	if (names) {
		if (names->n_inline > n_extras || names->n > n ||
		    (names->n && (!names->at || names->stride > SIZE_MAX / PYFRAMES_CAPTURE_MAX_NODES)))
			return -EINVAL;
		inline_n = names->n_inline;
	}
	for (j = 0; j < n_extras; j++) {
		if (extra_len[j] == 0 || extra_len[j] > PYFRAMES_CAPTURE_EXTRA_MAX)
			return -EINVAL;
		if (j < inline_n && !(names && names->ident))
			need += 8 + extra_len[j];
		else
			names_need += 8 + extra_len[j];
	}
	if (names && names->n && names->stride < names_need)
		return -EINVAL;
	if (n_extras && !m->seen) {
		m->seen = calloc(PF_SEEN_SLOTS, sizeof(*m->seen));
		if (!m->seen)
			return -ENOMEM;
	}
	if (++m->gen == 0) {            /* wrapped: no slot may look current */
		if (m->seen)
			memset(m->seen, 0, PF_SEEN_SLOTS * sizeof(*m->seen));
		m->gen = 1;
	}
	/* no nodes: neither where they are nor their size matter */
	if (n > 0 && (!nodes || stride < need || stride > SIZE_MAX / PYFRAMES_CAPTURE_MAX_NODES))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const unsigned char *node = nodes + i * stride, *at = node + 8 + frame_bytes;
		uint32_t order = (uint32_t) (i * (1 + PYFRAMES_CAPTURE_MAX_EXTRAS));

		span_add(m, &k, node, frame_bytes, order, false);
		if (names && names->ident) {
			/* every extra at its pointer, if any */
			for (j = 0, at = names->ident[i]; at && j < n_extras;
			     at += 8 + extra_len[j], j++)
				span_add(m, &k, at, extra_len[j], order + 1 + (uint32_t) j, true);
			continue;
		}
		for (j = 0; j < n_extras; at += 8 + extra_len[j], j++) {
			if (j == inline_n) {
				if (i >= names->n)
					break;
				at = names->at + i * names->stride;
			}
			span_add(m, &k, at, extra_len[j], order + 1 + (uint32_t) j, true);
		}
	}
	sort_spans(m, k);
	/* disjoint: each span keeps only the bytes past the end of the ones before it */
	for (i = 0; i < k; i++) {
		struct pf_span s = m->spans[i];

		if (kept > 0 && s.addr < end) {
			if (s.addr + s.len <= end)
				continue;
			s.data += end - s.addr;
			s.len -= (uint32_t) (end - s.addr);
			s.addr = end;
		}
		m->spans[kept++] = s;
		end = s.addr + s.len;
	}
	m->n_spans = kept;
	pf_mem_invalidate(m);
	return 0;
}

void pf_mem_overlay_clear(struct pf_mem *m)
{
	m->n_spans = 0;
	m->overlay_only = false;
	pf_mem_invalidate(m);
}

static bool overlay_patch(const struct pf_mem *m, uint64_t addr, void *buf, size_t len);

void pf_read_overlay(const struct pf_mem *m, uint64_t addr, void *buf, size_t len)
{
	memset(buf, 0, len);
	if (m->n_spans > 0 && addr + len >= addr)
		(void) overlay_patch(m, addr, buf, len);
}

/* The first span that ends after addr (disjoint and sorted: their ends are sorted too), or
 * n_spans. */
static size_t span_after(const struct pf_mem *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n_spans;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->spans[mid].addr + m->spans[mid].len > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* pf_mem_covered() from span i on (span_after(m, addr) or one before it). */
static size_t covered_from(const struct pf_mem *m, size_t i, uint64_t addr, size_t max)
{
	uint64_t at = addr;

	/* disjoint and sorted: contiguous spans follow each other */
	for (; i < m->n_spans && m->spans[i].addr <= at && at - addr < max; i++)
		at = m->spans[i].addr + m->spans[i].len;
	return at - addr < max ? (size_t) (at - addr) : max;
}

size_t pf_mem_covered(const struct pf_mem *m, uint64_t addr, size_t max)
{
	return covered_from(m, span_after(m, addr), addr, max);
}

/* overlay_patch() from span i on (span_after(m, addr) or one before it). */
static bool overlay_patch_from(const struct pf_mem *m, size_t i, uint64_t addr, void *buf, size_t len)
{
	uint64_t end = addr + len, at = addr;
	bool whole = true;

	for (; i < m->n_spans && m->spans[i].addr < end; i++) {
		const struct pf_span *s = &m->spans[i];
		uint64_t from = s->addr > addr ? s->addr : addr;
		uint64_t to = s->addr + s->len < end ? s->addr + s->len : end;

		if (from > at)
			whole = false;
		memcpy((unsigned char *) buf + (from - addr), s->data + (from - s->addr), to - from);
		at = to;
	}
	return whole && at == end;
}

/* Copies the overlay's bytes of [addr, addr + len) into buf; true if they are all of them. The
 * caller has checked that addr + len does not wrap. */
static bool overlay_patch(const struct pf_mem *m, uint64_t addr, void *buf, size_t len)
{
	return overlay_patch_from(m, span_after(m, addr), addr, buf, len);
}

size_t pf_overlay_piece(const struct pf_mem *m, uint64_t addr, const unsigned char **ret,
			bool *ret_more)
{
	size_t i = span_after(m, addr);
	const struct pf_span *s;

	*ret = NULL;
	*ret_more = false;
	if (i >= m->n_spans || m->spans[i].addr > addr)
		return 0;
	s = &m->spans[i];
	*ret = s->data + (addr - s->addr);
	*ret_more = i + 1 < m->n_spans && m->spans[i + 1].addr == s->addr + s->len;
	return (size_t) (s->addr + s->len - addr);
}

bool pf_overlay_fields(const struct pf_mem *m, uint64_t base, const uint32_t *off,
		       const uint32_t *size, size_t n, uint32_t lo, uint32_t hi, void *buf)
{
	size_t first, i, k;

	if (m->n_spans == 0 || hi < lo || base > UINT64_MAX - hi)
		return false;
	first = i = span_after(m, base + lo);
	for (k = 0; k < n; k++) {
		uint64_t at = base + off[k];

		if (off[k] < lo || off[k] + size[k] > hi || (k > 0 && off[k] < off[k - 1]))
			return false;
		while (i < m->n_spans && m->spans[i].addr + m->spans[i].len <= at)
			i++;
		if (covered_from(m, i, at, size[k]) < size[k])
			return false;
	}
	memset(buf, 0, hi - lo);
	(void) overlay_patch_from(m, first, base + lo, buf, hi - lo);
	return true;
}

/* ---- reads ---- */

int pf_read_raw(struct pf_mem *m, uint64_t addr, void *buf, size_t len)
{
	int r;

	if (addr + len < addr)
		return -EFAULT;
	if (m->n_spans > 0 && overlay_patch(m, addr, buf, len))
		return 0;
	if (m->overlay_only && m->n_spans > 0)
		return -EFAULT;
	if (m->reads)
		(*m->reads)++;
	r = m->mem->read(m->mem->ctx, addr, buf, len);
	if (r == 0 && m->n_spans > 0)
		(void) overlay_patch(m, addr, buf, len);
	return r;
}

int pf_read_live(struct pf_mem *m, uint64_t addr, void *buf, size_t len)
{
	if (addr + len < addr)
		return -EFAULT;
	if (m->reads)
		(*m->reads)++;
	return m->mem->read(m->mem->ctx, addr, buf, len);
}

int pf_readv(struct pf_mem *m, const struct remote_range *r, size_t n, bool *ret_ok)
{
	size_t i = 0;

	if (m->overlay_only && m->n_spans > 0) {
		for (i = 0; i < n; i++)
			ret_ok[i] = r[i].addr + r[i].len >= r[i].addr &&
				    overlay_patch(m, r[i].addr, r[i].buf, r[i].len);
		return 0;
	}

	while (i < n) {
		size_t chunk = n - i < REMOTE_MEM_READV_MAX ? n - i : REMOTE_MEM_READV_MAX;
		int k = -ENOSYS;

		if (m->mem->readv) {
			if (m->reads)
				(*m->reads)++;
			k = m->mem->readv(m->mem->ctx, r + i, chunk);
			if (k == -ESRCH)
				break;
		}
		if (k < 0 || (size_t) k > chunk) {
			/* no readv, or it failed as a whole: one read per range */
			for (; chunk > 0; chunk--, i++) {
				int e = pf_read_raw(m, r[i].addr, r[i].buf, r[i].len);

				if (e == -ESRCH) {
					k = e;
					break;
				}
				ret_ok[i] = e == 0;
			}
			if (k == -ESRCH)
				break;
			continue;
		}
		memset(ret_ok + i, true, (size_t) k * sizeof(*ret_ok));
		i += (size_t) k;
		if ((size_t) k < chunk)
			ret_ok[i++] = false;   /* range k failed; go on after it */
	}
	/* the target gone: what the overlay holds in full is all there is */
	if (i < n) {
		if (m->n_spans == 0)
			return -ESRCH;
		memset(ret_ok + i, false, (n - i) * sizeof(*ret_ok));
	}
	/* the overlay over what was read, and in place of what it holds in full */
	for (i = 0; m->n_spans > 0 && i < n; i++)
		if (r[i].addr + r[i].len >= r[i].addr && overlay_patch(m, r[i].addr, r[i].buf, r[i].len))
			ret_ok[i] = true;
	return 0;
}

static unsigned page_slot(uint64_t page)
{
	return (unsigned) ((page >> 12) * 0x9E3779B97F4A7C15ull >> 58) % PF_PAGE_SLOTS;
}

static int page_get(struct pf_mem *m, uint64_t page, const unsigned char **ret)
{
	unsigned s = page_slot(page);
	unsigned char *d = m->pc.data + (size_t) s * PF_PAGE;
	int r;

	if (m->pc.page[s] == page + 1) {
		*ret = d;
		return 0;
	}
	m->pc.page[s] = 0;
	r = pf_read_raw(m, page, d, PF_PAGE);
	if (r < 0)
		return r;
	m->pc.page[s] = page + 1;
	*ret = d;
	return 0;
}

int pf_read(struct pf_mem *m, uint64_t addr, void *buf, size_t len)
{
	unsigned char *out = buf;

	if (addr + len < addr)
		return -EFAULT;
	/* a captured frame: no page read for it */
	if (m->n_spans > 0 && overlay_patch(m, addr, buf, len))
		return 0;
	if (m->overlay_only && m->n_spans > 0)
		return -EFAULT;
	if (!m->cache_on || !m->pc.data || len > 4 * PF_PAGE)
		return pf_read_raw(m, addr, buf, len);
	while (len > 0) {
		uint64_t page = addr & ~(uint64_t) (PF_PAGE - 1);
		size_t off = addr - page, n = PF_PAGE - off;
		const unsigned char *d;
		int r;

		if (n > len)
			n = len;
		r = page_get(m, page, &d);
		if (r == -EFAULT)
			/* a reader that is not page granular (a test's buffer): read exactly */
			return pf_read_raw(m, addr, out, len);
		if (r < 0)
			return r;
		memcpy(out, d + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

int pf_read_u64(struct pf_mem *m, uint64_t addr, uint64_t *ret)
{
	return pf_read(m, addr, ret, sizeof(*ret));
}
