/*
 * split_capture.h: a capture with its extras inline (struct pyframes_capture, the layout the
 * signal mode's records keep) as the BPF program's split records are handed on: a node holds
 * its address, its frame bytes and a check of its identity (equal identities, equal checks:
 * here FNV-1a over the identity's bytes); its identity lies at ident[k] (the inline node's
 * bytes), its names in a slot of their own (the inline node's, past the identity). For the
 * tests of walk.c and the fuzzer (tests/fuzz/).
 */
#ifndef HWSPY_TESTS_SPLIT_CAPTURE_H
#define HWSPY_TESTS_SPLIT_CAPTURE_H

#include <stdint.h>
#include <string.h>

#include "pyframes/pyframes.h"

/* compact: room for cap->n nodes of 8 + frame_bytes + 8 bytes; ident: for cap->n pointers. */
static inline struct pyframes_capture split_capture(const struct pyframes_capture *cap,
						    const struct pyframes_capture_spec *sp,
						    unsigned char *compact,
						    const unsigned char **ident)
{
	struct pyframes_capture out = *cap;
	size_t body = 8 + sp->frame_bytes, id = 0;

	for (uint32_t j = 0; j < sp->n_identity; j++)
		id += 8 + sp->extra[j].len;
	for (size_t k = 0; k < cap->n; k++) {
		const unsigned char *node = cap->nodes + k * cap->stride;
		uint64_t check = 0xcbf29ce484222325ULL;

		for (size_t i = 0; i < id; i++)
			check = (check ^ node[body + i]) * 0x100000001b3ULL;
		check |= 1;
		memcpy(compact + k * (body + 8), node, body);
		memcpy(compact + k * (body + 8) + body, &check, 8);
		ident[k] = node + body;
	}
	out.nodes = compact;
	out.stride = body + 8;
	out.ident = ident;
	out.names = cap->nodes + body + id;
	out.n_names = cap->n;
	out.names_stride = cap->stride;
	return out;
}

#endif
