/*
 * pprof_read internals, shared by pprof_read.c (input, gunzip, the protobuf scan into the tables
 * below) and pprof_build.c (ids and strings resolved, the profile built from the tables). Not
 * part of the public contract: see pprof_read() in output.h.
 *
 * Failures: functions return 0 / 1 or a negative errno; -EINVAL comes with a static reason,
 * set once (the first failure's) by pprof_fail().
 */
#ifndef HWSPY_OUTPUT_PPROF_READ_H
#define HWSPY_OUTPUT_PPROF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/output.h"
#include "output/pprof_proto.h"

/* A message being read: [p, end) of the uncompressed input. */
struct pb_msg {
	const unsigned char *p, *end;
};

struct pb_field {
	uint32_t num;
	unsigned wire;
	uint64_t v;             /* WIRE_VARINT, WIRE_I64, WIRE_I32 */
	struct pb_msg data;        /* WIRE_LEN */
};

struct vtype {
	uint64_t type, unit;    /* string indexes */
};

struct pmapping {
	uint64_t id, start, offset, file, build_id;
};

struct pline {
	uint64_t fn;
	int64_t line;
};

struct plocation {
	uint64_t id, mapping, address;
	size_t first_line, n_lines;     /* in lines[] */
	size_t first_frame, n_frames;   /* in loc_frames[], innermost first */
};

struct pfunction {
	uint64_t id, name, file;
};

/* id -> index, sorted by id for lookups */
struct id_index {
	uint64_t id;
	size_t i;
};

struct id_table {
	struct id_index *v;
	size_t n;
	bool dense;             /* v[i].id == i + 1: index directly */
};

/* A growable array (of one type), at most PPROF_READ_MAX_ITEMS items. */
struct pprof_vec {
	void *v;
	size_t n, cap;
};

struct pprof_reader {
	const unsigned char *data;
	size_t size;
	const char *reason;     /* the first failure's */
	size_t inflate_limit;   /* set when inflating went past it */

	struct pprof_vec types;       /* struct vtype */
	struct pprof_vec samples;     /* struct pb_msg */
	struct pprof_vec mappings;    /* struct pmapping */
	struct pprof_vec locations;   /* struct plocation */
	struct pprof_vec lines;       /* struct pline */
	struct pprof_vec functions;   /* struct pfunction */
	struct pprof_vec strs;        /* struct pb_msg: the string table as read */
	struct pprof_vec comments;    /* uint64_t string indexes */
	uint64_t time_nanos, duration_nanos, period, default_type;
	struct vtype period_type;

	char **str;             /* NUL-terminated copies of strs */
	char *str_arena;
	struct id_table map_ids, loc_ids, fn_ids;
	uint32_t *loc_frames;   /* frame ids of each location's lines */
	size_t n_loc_frames;
	size_t src[PROFILE_MAX_EVENTS + 1];     /* sample type feeding each value column */
};

int pprof_fail(struct pprof_reader *r, const char *reason);

/* Reads the next field of m into f: 1, 0 at m's end, or -EINVAL. */
int pb_next(struct pprof_reader *r, struct pb_msg *m, struct pb_field *f);
/* f's value, when f is an integer (varint) field, else -EINVAL. */
int pb_want_varint(struct pprof_reader *r, const struct pb_field *f, uint64_t *ret);
/* 0 when f is a length-delimited (message) field, else -EINVAL. */
int pb_want_msg(struct pprof_reader *r, const struct pb_field *f);
/* Calls fn(ctx, value) for each value of a repeated integer field, packed or not. */
int pb_repeated(struct pprof_reader *r, const struct pb_field *f, int (*fn)(void *, uint64_t),
		void *ctx);

/* pprof_build.c: checks the tables read (string indexes, ids) and builds the profile. */
int pprof_build(struct pprof_reader *r, struct profile **ret);

#endif
