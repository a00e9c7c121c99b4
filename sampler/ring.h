/*
 * ring: reading one perf mmap ring and decoding its records (internal to sampler/).
 *
 * ring_read_init() snapshots the head (acquire); ring_read_event() returns the next record,
 * copied into the ring's scratch buffer when it wraps the end of the data area, or NULL when
 * none is left; ring_read_done() publishes the new tail (release). Sizes in records are checked
 * against the data written: a record claiming more bytes than available ends the read.
 *
 * ring_parse_sample() decodes a PERF_RECORD_SAMPLE laid out by the given attr (sample_type,
 * read_format, sample_regs_user). Pointers in the result point into rec. -EINVAL if the record
 * is shorter than its layout says.
 */
#ifndef HWSPY_SAMPLER_RING_H
#define HWSPY_SAMPLER_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/sampler.h"

struct ring {
	struct perf_event_mmap_page *meta;
	const unsigned char *data;
	uint64_t size;          /* bytes in the data area, a power of two */
	uint64_t head, tail;    /* snapshot of the head; our read position */
	unsigned char *scratch; /* at least 64 KiB: the largest record */
};

#define RING_SCRATCH_SIZE 65536

void ring_init(struct ring *r, void *base, uint64_t data_size, unsigned char *scratch);
void ring_read_init(struct ring *r);
const struct perf_event_header *ring_read_event(struct ring *r);
void ring_read_done(struct ring *r);

/* Group values read from a sample: ids and running totals, in the group's order. */
struct ring_group {
	uint64_t nr;
	uint64_t value[SAMPLER_MAX_EVENTS];
	uint64_t id[SAMPLER_MAX_EVENTS];
};

/* Fills s (ip, pid/tid, time, values[0] = period, callchain, regs, stack) and, when the
 * attr reads a group, g. */
int ring_parse_sample(const struct perf_event_attr *attr, const void *rec, size_t size,
		      struct sample *s, struct ring_group *g);

#endif
