#include "sampler/ring.h"

#include <errno.h>
#include <string.h>

void ring_init(struct ring *r, void *base, uint64_t data_size, unsigned char *scratch)
{
	r->meta = base;
	r->data = (const unsigned char *) base + r->meta->data_offset;
	if (!r->meta->data_offset)
		r->data = (const unsigned char *) base + 4096;
	r->size = data_size;
	r->head = r->tail = 0;
	r->scratch = scratch;
}

void ring_read_init(struct ring *r)
{
	r->head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	r->tail = r->meta->data_tail;
}

const struct perf_event_header *ring_read_event(struct ring *r)
{
	const struct perf_event_header *h;
	uint64_t avail = r->head - r->tail, off = r->tail & (r->size - 1);
	struct perf_event_header hdr;

	if (avail < sizeof(hdr) || avail > r->size)
		return NULL;
	if (off + sizeof(hdr) <= r->size) {
		memcpy(&hdr, r->data + off, sizeof(hdr));
	} else {
		size_t first = r->size - off;
		memcpy(&hdr, r->data + off, first);
		memcpy((unsigned char *) &hdr + first, r->data, sizeof(hdr) - first);
	}
	if (hdr.size < sizeof(hdr) || hdr.size > avail) {
		/* corrupt or partial: skip everything that was written */
		r->tail = r->head;
		return NULL;
	}
	if (off + hdr.size <= r->size) {
		h = (const void *) (r->data + off);
	} else {
		size_t first = r->size - off;
		memcpy(r->scratch, r->data + off, first);
		memcpy(r->scratch + first, r->data, hdr.size - first);
		h = (const void *) r->scratch;
	}
	r->tail += hdr.size;
	return h;
}

void ring_read_done(struct ring *r)
{
	__atomic_store_n(&r->meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

struct cursor {
	const unsigned char *p, *end;
};

static int take(struct cursor *c, void *out, size_t n)
{
	if ((size_t) (c->end - c->p) < n)
		return -EINVAL;
	if (out)
		memcpy(out, c->p, n);
	c->p += n;
	return 0;
}

static int take_u64(struct cursor *c, uint64_t *out)
{
	return take(c, out, sizeof(*out));
}

/* PERF_SAMPLE_READ's values (one, or the group's) into g (may be NULL). 0 or -EINVAL. */
static int take_read(struct cursor *c, uint64_t f, struct ring_group *g)
{
	int r = 0;

	if (!(f & PERF_FORMAT_GROUP)) {
		uint64_t val = 0;
		r |= take_u64(c, &val);
		if (f & PERF_FORMAT_TOTAL_TIME_ENABLED)
			r |= take_u64(c, NULL);
		if (f & PERF_FORMAT_TOTAL_TIME_RUNNING)
			r |= take_u64(c, NULL);
		if (f & PERF_FORMAT_ID)
			r |= take_u64(c, NULL);
		if (f & PERF_FORMAT_LOST)
			r |= take_u64(c, NULL);
		if (g) {
			g->nr = 1;
			g->value[0] = val;
			g->id[0] = 0;
		}
	} else {
		uint64_t nr = 0;
		r |= take_u64(c, &nr);
		if (f & PERF_FORMAT_TOTAL_TIME_ENABLED)
			r |= take_u64(c, NULL);
		if (f & PERF_FORMAT_TOTAL_TIME_RUNNING)
			r |= take_u64(c, NULL);
		if (r || nr > SAMPLER_MAX_EVENTS)
			return -EINVAL;
		if (g)
			g->nr = nr;
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t val = 0, id = 0;
			r |= take_u64(c, &val);
			if (f & PERF_FORMAT_ID)
				r |= take_u64(c, &id);
			if (f & PERF_FORMAT_LOST)
				r |= take_u64(c, NULL);
			if (g) {
				g->value[i] = val;
				g->id[i] = id;
			}
		}
	}
	return r ? -EINVAL : 0;
}

int ring_parse_sample(const struct perf_event_attr *attr, const void *rec, size_t size,
		      struct sample *s, struct ring_group *g)
{
	struct cursor c = { (const unsigned char *) rec + sizeof(struct perf_event_header),
			    (const unsigned char *) rec + size };
	uint64_t t = attr->sample_type, v;
	int r = 0;

	if (size < sizeof(struct perf_event_header))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->user = (((const struct perf_event_header *) rec)->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		  PERF_RECORD_MISC_USER;
	if (t & PERF_SAMPLE_IDENTIFIER)
		r |= take_u64(&c, NULL);
	if (t & PERF_SAMPLE_IP)
		r |= take_u64(&c, &s->ip);
	if (t & PERF_SAMPLE_TID) {
		uint32_t pt[2];
		r |= take(&c, pt, sizeof(pt));
		s->pid = (pid_t) pt[0];
		s->tid = (pid_t) pt[1];
	}
	if (t & PERF_SAMPLE_TIME)
		r |= take_u64(&c, &s->time_ns);
	if (t & PERF_SAMPLE_ADDR)
		r |= take_u64(&c, NULL);
	if (t & PERF_SAMPLE_ID)
		r |= take_u64(&c, NULL);
	if (t & PERF_SAMPLE_STREAM_ID)
		r |= take_u64(&c, NULL);
	if (t & PERF_SAMPLE_CPU)
		r |= take_u64(&c, NULL);
	if (t & PERF_SAMPLE_PERIOD)
		r |= take_u64(&c, &s->values[0]);
	s->n_values = 1;
	if (r)
		return -EINVAL;
	if ((t & PERF_SAMPLE_READ) && take_read(&c, attr->read_format, g) < 0)
		return -EINVAL;
	if (t & PERF_SAMPLE_CALLCHAIN) {
		r = take_u64(&c, &v);
		if (r || v > (uint64_t) (c.end - c.p) / 8)
			return -EINVAL;
		s->callchain = (const uint64_t *) c.p;
		s->n_callchain = v;
		c.p += v * 8;
	}
	if (t & PERF_SAMPLE_RAW) {
		uint32_t n;
		if (take(&c, &n, sizeof(n)) || take(&c, NULL, n))
			return -EINVAL;
	}
	if (t & PERF_SAMPLE_BRANCH_STACK) {
		if (take_u64(&c, &v) || v > (uint64_t) (c.end - c.p) / 24)
			return -EINVAL;
		c.p += v * 24;
	}
	if (t & PERF_SAMPLE_REGS_USER) {
		uint64_t abi;
		if (take_u64(&c, &abi))
			return -EINVAL;
		if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
			size_t n = (size_t) __builtin_popcountll(attr->sample_regs_user);
			if ((size_t) (c.end - c.p) / 8 < n)
				return -EINVAL;
			s->regs = (const uint64_t *) c.p;
			s->n_regs = n;
			c.p += n * 8;
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		uint64_t sz, dyn = 0;
		if (take_u64(&c, &sz) || sz > (uint64_t) (c.end - c.p))
			return -EINVAL;
		s->stack = c.p;
		c.p += sz;
		if (sz) {
			if (take_u64(&c, &dyn))
				return -EINVAL;
			s->stack_size = dyn < sz ? dyn : sz;
		}
		if (!s->stack_size)
			s->stack = NULL;
	}
	return 0;
}
