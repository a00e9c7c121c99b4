/* Ring-buffer reading and sample decoding on synthetic rings: records that wrap the end of the
 * data area, LOST records, group reads, callchains, user regs and stack copies, and records
 * shorter than their layout says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sampler/ring.h"

#define DATA 4096

struct fake {
	unsigned char mem[4096 + DATA] __attribute__((aligned(8)));
	unsigned char scratch[RING_SCRATCH_SIZE] __attribute__((aligned(8)));
	uint64_t head;
	struct ring ring;
};

static struct fake *fake_new(uint64_t start)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct perf_event_mmap_page *meta = (void *) f->mem;

	meta->data_offset = 4096;
	meta->data_size = DATA;
	meta->data_head = meta->data_tail = start;
	f->head = start;
	ring_init(&f->ring, f->mem, DATA, f->scratch);
	return f;
}

/* Appends a record to the ring, wrapping at the end of the data area as the kernel does. */
static void put(struct fake *f, const void *rec, size_t len)
{
	const unsigned char *p = rec;
	struct perf_event_mmap_page *meta = (void *) f->mem;

	for (size_t i = 0; i < len; i++)
		f->mem[4096 + ((f->head + i) & (DATA - 1))] = p[i];
	f->head += len;
	meta->data_head = f->head;
}

static void set_header(void *rec, uint32_t type, uint16_t size)
{
	struct perf_event_header h = { .type = type, .misc = PERF_RECORD_MISC_USER, .size = size };

	memcpy(rec, &h, sizeof(h));
}

static size_t build_sample(uint64_t *w, const struct perf_event_attr *a, uint64_t ip, uint32_t tid,
			   uint64_t period, size_t stack_bytes)
{
	size_t n = 1;

	if (a->sample_type & PERF_SAMPLE_IP)
		w[n++] = ip;
	if (a->sample_type & PERF_SAMPLE_TID)
		w[n++] = ((uint64_t) tid << 32) | 4242;        /* pid 4242, tid */
	if (a->sample_type & PERF_SAMPLE_TIME)
		w[n++] = 123456789;
	if (a->sample_type & PERF_SAMPLE_PERIOD)
		w[n++] = period;
	if (a->sample_type & PERF_SAMPLE_READ) {
		w[n++] = 3;             /* nr */
		w[n++] = 1000; w[n++] = 11;
		w[n++] = 50; w[n++] = 12;
		w[n++] = 7; w[n++] = 13;
	}
	if (a->sample_type & PERF_SAMPLE_CALLCHAIN) {
		w[n++] = 3;
		w[n++] = PERF_CONTEXT_KERNEL;
		w[n++] = 0xffffffff81000000ULL;
		w[n++] = 0xffffffff81000010ULL;
	}
	if (a->sample_type & PERF_SAMPLE_REGS_USER) {
		w[n++] = PERF_SAMPLE_REGS_ABI_64;
		for (int i = 0; i < __builtin_popcountll(a->sample_regs_user); i++)
			w[n++] = 0x100 + (uint64_t) i;
	}
	if (a->sample_type & PERF_SAMPLE_STACK_USER) {
		w[n++] = stack_bytes;
		for (size_t i = 0; i < stack_bytes / 8; i++)
			w[n++] = 0xabc0 + i;
		if (stack_bytes)
			w[n++] = stack_bytes / 2;   /* dyn_size */
	}
	set_header(w, PERF_RECORD_SAMPLE, (uint16_t) (n * 8));
	return n * 8;
}

static void test_wrapping_records(void **state)
{
	struct perf_event_attr a = { .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				     PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD };
	/* start 24 bytes before the end: the first record wraps inside its body; on the second
	 * pass (DATA-8, after three laps) only a header fits before the end (the kernel keeps
	 * records 8-byte aligned, so a header itself never wraps) */
	uint64_t starts[] = { DATA - 24, DATA - 8 + 4096 * 3, 0 };
	(void) state;

	for (size_t k = 0; k < sizeof(starts) / sizeof(starts[0]); k++) {
		struct fake *f = fake_new(starts[k]);
		uint64_t w[64];
		const struct perf_event_header *h;
		struct sample s;
		int seen = 0;

		for (uint32_t i = 0; i < 5; i++) {
			size_t len = build_sample(w, &a, 0x400000 + i, 100 + i, 1000 * (i + 1), 0);
			put(f, w, len);
		}
		uint64_t lost[3] = { 0, 77, 9 };
		set_header(lost, PERF_RECORD_LOST, sizeof(lost));
		put(f, lost, sizeof(lost));

		ring_read_init(&f->ring);
		while ((h = ring_read_event(&f->ring))) {
			if (h->type == PERF_RECORD_LOST) {
				assert_int_equal(((const uint64_t *) (h + 1))[1], 9);
				seen++;
				continue;
			}
			assert_int_equal(h->type, PERF_RECORD_SAMPLE);
			assert_int_equal(ring_parse_sample(&a, h, h->size, &s, NULL), 0);
			assert_int_equal(s.ip, 0x400000 + (uint64_t) seen);
			assert_int_equal(s.tid, 100 + seen);
			assert_int_equal(s.pid, 4242);
			assert_int_equal(s.time_ns, 123456789);
			assert_int_equal(s.values[0], 1000 * (uint64_t) (seen + 1));
			assert_true(s.user);
			seen++;
		}
		ring_read_done(&f->ring);
		assert_int_equal(seen, 6);
		assert_int_equal(((struct perf_event_mmap_page *) f->mem)->data_tail, f->head);
		/* nothing more to read */
		ring_read_init(&f->ring);
		assert_null(ring_read_event(&f->ring));
		free(f);
	}
}

static void test_full_sample_layout(void **state)
{
	struct perf_event_attr a = {
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
			       PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
			       PERF_SAMPLE_STACK_USER,
		.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID,
		.sample_regs_user = 0xff0fffULL,
	};
	struct fake *f = fake_new(DATA - 40);
	uint64_t w[256];
	const struct perf_event_header *h;
	struct ring_group g;
	struct sample s;
	size_t len;
	(void) state;

	len = build_sample(w, &a, 0x1234, 77, 999, 64);
	put(f, w, len);
	ring_read_init(&f->ring);
	h = ring_read_event(&f->ring);
	assert_non_null(h);
	assert_int_equal(ring_parse_sample(&a, h, h->size, &s, &g), 0);
	assert_int_equal(s.ip, 0x1234);
	assert_int_equal(s.values[0], 999);
	assert_int_equal(g.nr, 3);
	assert_int_equal(g.value[1], 50);
	assert_int_equal(g.id[2], 13);
	assert_int_equal(s.n_callchain, 3);
	assert_int_equal(s.callchain[0], PERF_CONTEXT_KERNEL);
	assert_int_equal(s.n_regs, 20);
	assert_int_equal(s.regs[19], 0x100 + 19);
	assert_non_null(s.stack);
	assert_int_equal(s.stack_size, 32);        /* dyn_size, not the requested size */
	assert_int_equal(((const uint64_t *) s.stack)[1], 0xabc1);
	/* every truncation of the record is refused, never read past its end */
	for (size_t cut = sizeof(struct perf_event_header); cut < h->size; cut += 8)
		assert_int_equal(ring_parse_sample(&a, h, cut, &s, &g), -22);
	free(f);
}

static void test_corrupt_sizes(void **state)
{
	struct fake *f = fake_new(0);
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = 4 };   /* < header */
	uint64_t pad = 0;
	(void) state;

	put(f, &h, sizeof(h));
	put(f, &pad, sizeof(pad));
	ring_read_init(&f->ring);
	assert_null(ring_read_event(&f->ring));
	ring_read_done(&f->ring);
	/* the reader skipped what was written instead of looping on it */
	assert_int_equal(((struct perf_event_mmap_page *) f->mem)->data_tail, f->head);

	/* a size larger than what was written: not read */
	struct fake *g = fake_new(0);
	struct perf_event_header big = { .type = PERF_RECORD_SAMPLE, .size = 512 };
	put(g, &big, sizeof(big));
	ring_read_init(&g->ring);
	assert_null(ring_read_event(&g->ring));
	/* group count over the limit is refused */
	struct perf_event_attr a = { .sample_type = PERF_SAMPLE_READ,
				     .read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID };
	uint64_t w[4] = { 0, 1000, 0, 0 };
	set_header(w, PERF_RECORD_SAMPLE, sizeof(w));
	struct sample s;
	struct ring_group grp;
	assert_int_equal(ring_parse_sample(&a, w, sizeof(w), &s, &grp), -22);
	free(f);
	free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrapping_records),
		cmocka_unit_test(test_full_sample_layout),
		cmocka_unit_test(test_corrupt_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
