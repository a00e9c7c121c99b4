/* pprof_read: a perftools.profiles.Profile protobuf (gzip-compressed or not), as pprof_write()
 * and other producers write it, back into a profile (see output.h). This file reads the input
 * into memory (inflating it), then scans the protobuf into the tables of pprof_read.h; the
 * whole message is scanned first because its fields may come in any order (hwspy writes the
 * samples before the locations and the string table). pprof_build.c makes the profile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/array.h"
#include "output/pprof_read.h"

#define READ_CHUNK 65536

int pprof_fail(struct pprof_reader *r, const char *reason)
{
	if (!r->reason)
		r->reason = reason;
	return -EINVAL;
}

/* A new zeroed item at the end of a, in *ret; -EINVAL (too_many) past PPROF_READ_MAX_ITEMS, or
 * past PPROF_READ_MAX_TYPES for the sample types. */
static int vec_push(struct pprof_reader *r, struct pprof_vec *a, size_t elem, const char *too_many,
		    void **ret)
{
	if (a->n == (a == &r->types ? PPROF_READ_MAX_TYPES : PPROF_READ_MAX_ITEMS))
		return pprof_fail(r, too_many);
	if (array_grow(&a->v, &a->cap, a->n + 1, elem, 64) < 0)
		return -ENOMEM;
	*ret = (char *) a->v + a->n++ * elem;
	memset(*ret, 0, elem);
	return 0;
}

/* ---- input ----------------------------------------------------------------------------------- */

bool pprof_sniff(const void *head, size_t len)
{
	const unsigned char *h = head;
	size_t i;

	if (len >= 2 && h[0] == 0x1f && h[1] == 0x8b)
		return true;
	/* a length-delimited Profile field (1-6, 13) first, as every writer orders them */
	if (len < 2 || (h[0] & 7) != WIRE_LEN || (h[0] >> 3) < 1 ||
	    ((h[0] >> 3) > 6 && (h[0] >> 3) != 13))
		return false;
	/* then its length, then bytes text does not hold: a control character other than
	 * tab, newline and CR (a nested message's tag, a small length, a NUL) */
	for (i = 1; i < len && i < 11 && (h[i] & 0x80); i++)
		;
	for (i++; i < len && i < 64; i++)
		if (h[i] < 0x20 && h[i] != '\t' && h[i] != '\n' && h[i] != '\r')
			return true;
	/* the empty profile: only the string table's "" (0x32 0x00) */
	return len == 2 && h[0] == 0x32 && h[1] == 0;
}

/* The most a gzip stream of n bytes may inflate to (see PPROF_READ_MAX_RATIO). */
static size_t inflate_limit(size_t n)
{
	size_t limit = n > PPROF_READ_MAX_SIZE / PPROF_READ_MAX_RATIO ? PPROF_READ_MAX_SIZE
								       : n * PPROF_READ_MAX_RATIO;

	return limit < PPROF_READ_MIN_INFLATE ? PPROF_READ_MIN_INFLATE : limit;
}

/* The top level of a Profile message as it inflates: *pos is where the next top-level field
 * starts in out[0, len). Moves *pos past every field that out holds whole (a length-delimited
 * field's payload is skipped, not read). 0; -1 where the bytes cannot be a Profile (a field
 * number 0, a group or unknown wire type); -2 for a field whose length runs past limit, the
 * most the stream may inflate to. So a gzip bomb of zeros (or of any other bytes that are no
 * protobuf) is refused after its first chunk, not at the ratio cap. */
static int scan_top(const unsigned char *out, size_t len, size_t *pos, size_t limit)
{
	while (*pos < len) {
		size_t p = *pos;
		uint64_t tag = 0, v = 0;
		unsigned i;

		for (i = 0; i < 10 && p < len; i++, p++) {
			tag |= (uint64_t) (out[p] & 0x7f) << (7 * i);
			if (!(out[p] & 0x80))
				break;
		}
		if (i == 10)
			return -1;
		if (p == len)
			return 0;                   /* the tag runs on in the next chunk */
		p++;
		if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
			return -1;
		switch (tag & 7) {
		case WIRE_VARINT:
		case WIRE_LEN:
			for (i = 0; i < 10 && p < len; i++, p++) {
				v |= (uint64_t) (out[p] & 0x7f) << (7 * i);
				if (!(out[p] & 0x80))
					break;
			}
			if (i == 10)
				return -1;
			if (p == len)
				return 0;
			p++;
			if ((tag & 7) == WIRE_LEN) {
				if (v > limit - p)
					return -2;
				p += (size_t) v;
			}
			break;
		case WIRE_I64:
			p += 8;
			break;
		case WIRE_I32:
			p += 4;
			break;
		default:
			return -1;
		}
		*pos = p;
	}
	return 0;
}

/* Inflates a gzip stream (one or more members) into *ret (malloc'ed), at most inflate_limit(n)
 * bytes, refusing at once bytes that cannot be a Profile (scan_top()). */
static int gunzip(struct pprof_reader *r, const unsigned char *in, size_t n, unsigned char **ret,
		  size_t *ret_len)
{
	z_stream zs = { 0 };
	unsigned char *out = NULL;
	size_t cap = 0, len = 0, top = 0, limit = inflate_limit(n);
	int z = Z_OK, z_top, e = 0;

	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *) in;
	for (;;) {
		size_t in_piece = n - (size_t) (zs.next_in - in);

		if (z == Z_STREAM_END) {
			if (in_piece == 0)
				break;
			if (in_piece < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) {
				e = pprof_fail(r, "bytes after the gzip stream");
				break;
			}
			(void) inflateReset(&zs);   /* another member */
		}
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 1u << 20;
			unsigned char *o;

			if (cap == limit) {
				e = pprof_fail(r, limit == PPROF_READ_MAX_SIZE ? "over 1 GiB uncompressed"
						: "inflates past its ratio cap: a gzip bomb?");
				r->inflate_limit = limit;
				break;
			}
			if (ncap > limit)
				ncap = limit;
			o = realloc(out, ncap);
			if (!o) {
				e = -ENOMEM;
				break;
			}
			out = o;
			cap = ncap;
		}
		zs.avail_in = (uInt) (in_piece < (1u << 30) ? in_piece : (1u << 30));
		zs.next_out = out + len;
		zs.avail_out = (uInt) (cap - len < (1u << 30) ? cap - len : (1u << 30));
		z = inflate(&zs, Z_NO_FLUSH);
		len = (size_t) (zs.next_out - out);
		z_top = scan_top(out, len, &top, limit);
		if (z_top == -1) {
			e = pprof_fail(r, "the inflated bytes are no protobuf message");
			break;
		}
		if (z_top == -2) {
			e = pprof_fail(r, limit == PPROF_READ_MAX_SIZE ? "over 1 GiB uncompressed"
					: "inflates past its ratio cap: a gzip bomb?");
			r->inflate_limit = limit;
			break;
		}
		if (z == Z_MEM_ERROR) {
			e = -ENOMEM;
			break;
		}
		if (z == Z_DATA_ERROR || z == Z_NEED_DICT || z == Z_STREAM_ERROR) {
			e = pprof_fail(r, "corrupt gzip stream");
			break;
		}
		if (z == Z_BUF_ERROR && zs.avail_in == 0 && zs.next_in == in + n) {
			e = pprof_fail(r, "truncated gzip stream");
			break;
		}
	}
	(void) inflateEnd(&zs);
	if (e < 0) {
		free(out);
		return e;
	}
	*ret = out;
	*ret_len = len;
	return 0;
}

/* ---- protobuf -------------------------------------------------------------------------------- */

static int pb_varint(struct pprof_reader *r, struct pb_msg *m, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 10; i++) {
		unsigned char b;

		if (m->p == m->end)
			return pprof_fail(r, "truncated varint");
		b = *m->p++;
		if (i == 9 && b > 1)
			return pprof_fail(r, "varint over 64 bits");
		v |= (uint64_t) (b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return pprof_fail(r, "varint over 64 bits");
}

/* The next field of m: 1, 0 at its end, or -EINVAL. */
int pb_next(struct pprof_reader *r, struct pb_msg *m, struct pb_field *f)
{
	uint64_t key, len;
	int e;

	if (m->p == m->end)
		return 0;
	if ((e = pb_varint(r, m, &key)) < 0)
		return e;
	if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
		return pprof_fail(r, "field number out of range");
	f->num = (uint32_t) (key >> 3);
	f->wire = key & 7;
	switch (f->wire) {
	case WIRE_VARINT:
		return pb_varint(r, m, &f->v) < 0 ? -EINVAL : 1;
	case WIRE_I64:
	case WIRE_I32: {
		size_t n = f->wire == WIRE_I64 ? 8 : 4;

		if ((size_t) (m->end - m->p) < n)
			return pprof_fail(r, "truncated fixed-size field");
		f->v = 0;
		for (size_t i = n; i-- > 0;)
			f->v = f->v << 8 | m->p[i];
		m->p += n;
		return 1;
	}
	case WIRE_LEN:
		if ((e = pb_varint(r, m, &len)) < 0)
			return e;
		if (len > (uint64_t) (m->end - m->p))
			return pprof_fail(r, "length past the end of the message");
		f->data = (struct pb_msg) { m->p, m->p + len };
		m->p += len;
		return 1;
	default:
		return pprof_fail(r, "unsupported wire type (group)");
	}
}

int pb_want_varint(struct pprof_reader *r, const struct pb_field *f, uint64_t *ret)
{
	if (f->wire != WIRE_VARINT)
		return pprof_fail(r, "wrong wire type for an integer field");
	*ret = f->v;
	return 0;
}

int pb_want_msg(struct pprof_reader *r, const struct pb_field *f)
{
	return f->wire == WIRE_LEN ? 0 : pprof_fail(r, "wrong wire type for a message field");
}

/* One item of a repeated integer field, packed or not: calls fn(ctx, value) for each. */
int pb_repeated(struct pprof_reader *r, const struct pb_field *f, int (*fn)(void *, uint64_t),
		       void *ctx)
{
	struct pb_msg d = f->data;
	uint64_t v;
	int e;

	if (f->wire == WIRE_VARINT)
		return fn(ctx, f->v);
	if (f->wire != WIRE_LEN)
		return pprof_fail(r, "wrong wire type for a repeated integer field");
	while (d.p < d.end) {
		if ((e = pb_varint(r, &d, &v)) < 0 || (e = fn(ctx, v)) < 0)
			return e;
	}
	return 0;
}

static int rd_value_type(struct pprof_reader *r, struct pb_msg m, struct vtype *ret)
{
	struct pb_field f;
	int e;

	*ret = (struct vtype) { 0, 0 };
	while ((e = pb_next(r, &m, &f)) > 0) {
		if (f.num == VALUE_TYPE_TYPE)
			e = pb_want_varint(r, &f, &ret->type);
		else if (f.num == VALUE_TYPE_UNIT)
			e = pb_want_varint(r, &f, &ret->unit);
		if (e < 0)
			return e;
	}
	return e;
}

static int rd_mapping(struct pprof_reader *r, struct pb_msg m)
{
	struct pmapping *mp = NULL;
	struct pb_field f;
	int e = vec_push(r, &r->mappings, sizeof(*mp), "too many mappings", (void **) &mp);

	while (e >= 0 && (e = pb_next(r, &m, &f)) > 0) {
		uint64_t *dst = f.num == MAPPING_ID ? &mp->id : f.num == MAPPING_START ? &mp->start :
				f.num == MAPPING_OFFSET ? &mp->offset :
				f.num == MAPPING_FILENAME ? &mp->file :
				f.num == MAPPING_BUILD_ID ? &mp->build_id : NULL;
		if (dst)
			e = pb_want_varint(r, &f, dst);
	}
	return e;
}

static int rd_location(struct pprof_reader *r, struct pb_msg m)
{
	struct plocation *l = NULL;
	struct pb_field f, g;
	size_t li;
	int e = vec_push(r, &r->locations, sizeof(*l), "too many locations", (void **) &l);

	if (e < 0)
		return e;
	li = r->locations.n - 1;
	l->first_line = r->lines.n;
	while ((e = pb_next(r, &m, &f)) > 0) {
		l = (struct plocation *) r->locations.v + li;
		if (f.num == LOCATION_ID)
			e = pb_want_varint(r, &f, &l->id);
		else if (f.num == LOCATION_MAPPING_ID)
			e = pb_want_varint(r, &f, &l->mapping);
		else if (f.num == LOCATION_ADDRESS)
			e = pb_want_varint(r, &f, &l->address);
		else if (f.num == LOCATION_LINE && (e = pb_want_msg(r, &f)) >= 0) {
			struct pline *ln = NULL;
			uint64_t v;

			if ((e = vec_push(r, &r->lines, sizeof(*ln), "too many lines",
					  (void **) &ln)) < 0)
				return e;
			l->n_lines++;
			while ((e = pb_next(r, &f.data, &g)) > 0) {
				if (g.num == LINE_FUNCTION_ID)
					e = pb_want_varint(r, &g, &ln->fn);
				else if (g.num == LINE_LINE && (e = pb_want_varint(r, &g, &v)) >= 0)
					ln->line = (int64_t) v;
				if (e < 0)
					return e;
			}
		}
		if (e < 0)
			return e;
	}
	return e;
}

static int rd_function(struct pprof_reader *r, struct pb_msg m)
{
	struct pfunction *fn = NULL;
	struct pb_field f;
	int e = vec_push(r, &r->functions, sizeof(*fn), "too many functions", (void **) &fn);

	while (e >= 0 && (e = pb_next(r, &m, &f)) > 0) {
		uint64_t *dst = f.num == FUNCTION_ID ? &fn->id : f.num == FUNCTION_NAME ? &fn->name :
				f.num == FUNCTION_FILENAME ? &fn->file : NULL;
		if (dst)
			e = pb_want_varint(r, &f, dst);
	}
	return e;
}

static int push_comment(void *ctx, uint64_t v)
{
	struct pprof_reader *r = ctx;
	uint64_t *c = NULL;
	int e = vec_push(r, &r->comments, sizeof(*c), "too many comments", (void **) &c);

	if (e >= 0)
		*c = v;
	return e;
}

/* The top-level fields, kept for resolve(). */
static int rd_profile(struct pprof_reader *r)
{
	struct pb_msg m = { r->data, r->data + r->size };
	struct pb_field f;
	void *item = NULL;
	int e;

	while ((e = pb_next(r, &m, &f)) > 0) {
		switch (f.num) {
		case PROFILE_SAMPLE_TYPE:
			if ((e = pb_want_msg(r, &f)) >= 0 &&
			    (e = vec_push(r, &r->types, sizeof(struct vtype), "too many sample types",
					  &item)) >= 0)
				e = rd_value_type(r, f.data, item);
			break;
		case PROFILE_SAMPLE:
			if ((e = pb_want_msg(r, &f)) >= 0 &&
			    (e = vec_push(r, &r->samples, sizeof(struct pb_msg), "too many samples",
					  &item)) >= 0)
				*(struct pb_msg *) item = f.data;
			break;
		case PROFILE_MAPPING:
			if ((e = pb_want_msg(r, &f)) >= 0)
				e = rd_mapping(r, f.data);
			break;
		case PROFILE_LOCATION:
			if ((e = pb_want_msg(r, &f)) >= 0)
				e = rd_location(r, f.data);
			break;
		case PROFILE_FUNCTION:
			if ((e = pb_want_msg(r, &f)) >= 0)
				e = rd_function(r, f.data);
			break;
		case PROFILE_STRING_TABLE:
			if ((e = pb_want_msg(r, &f)) >= 0 &&
			    (e = vec_push(r, &r->strs, sizeof(struct pb_msg), "too many strings",
					  &item)) >= 0)
				*(struct pb_msg *) item = f.data;
			break;
		case PROFILE_TIME_NANOS:
			e = pb_want_varint(r, &f, &r->time_nanos);
			break;
		case PROFILE_DURATION_NANOS:
			e = pb_want_varint(r, &f, &r->duration_nanos);
			break;
		case PROFILE_PERIOD_TYPE:
			if ((e = pb_want_msg(r, &f)) >= 0)
				e = rd_value_type(r, f.data, &r->period_type);
			break;
		case PROFILE_PERIOD:
			e = pb_want_varint(r, &f, &r->period);
			break;
		case PROFILE_COMMENT:
			e = pb_repeated(r, &f, push_comment, r);
			break;
		case PROFILE_DEFAULT_SAMPLE_TYPE:
			e = pb_want_varint(r, &f, &r->default_type);
			break;
		default:        /* drop_frames, keep_frames, fields of later versions */
			break;
		}
		if (e < 0)
			return e;
	}
	return e;
}

static void reader_release(struct pprof_reader *r)
{
	free(r->types.v);
	free(r->samples.v);
	free(r->mappings.v);
	free(r->locations.v);
	free(r->lines.v);
	free(r->functions.v);
	free(r->strs.v);
	free(r->comments.v);
	free(r->str);
	free(r->str_arena);
	free(r->map_ids.v);
	free(r->loc_ids.v);
	free(r->fn_ids.v);
	free(r->loc_frames);
}

static int read_plain(struct pprof_reader *r, struct profile **ret)
{
	int e = rd_profile(r);

	return e < 0 ? e : pprof_build(r, ret);
}

int pprof_read_mem(const void *data, size_t len, struct profile **ret,
		   struct pprof_read_error *ret_err)
{
	struct pprof_reader r = { .data = data, .size = len };
	unsigned char *plain = NULL;
	int e = 0;

	*ret = NULL;
	if (len > PPROF_READ_MAX_SIZE)
		e = pprof_fail(&r, "file over 1 GiB");
	else if (len >= 2 && r.data[0] == 0x1f && r.data[1] == 0x8b &&
		 (e = gunzip(&r, data, len, &plain, &r.size)) >= 0)
		r.data = plain;
	if (e >= 0)
		e = read_plain(&r, ret);
	if (ret_err) {
		ret_err->reason = e < 0 ? r.reason : NULL;
		ret_err->inflate_limit = e < 0 ? r.inflate_limit : 0;
	}
	reader_release(&r);
	free(plain);
	return e;
}

int pprof_read(FILE *in, struct profile **ret, struct pprof_read_error *ret_err)
{
	unsigned char *data = NULL;
	size_t len = 0, cap = 0;
	int e = 0;

	*ret = NULL;
	if (ret_err)
		*ret_err = (struct pprof_read_error) { NULL, 0 };
	for (;;) {
		size_t got;

		if (cap - len < READ_CHUNK) {
			size_t ncap = cap ? cap * 2 : 4 * READ_CHUNK;
			unsigned char *d;

			if (ncap > PPROF_READ_MAX_SIZE + (size_t) READ_CHUNK)
				ncap = PPROF_READ_MAX_SIZE + (size_t) READ_CHUNK;
			d = realloc(data, ncap);
			if (!d) {
				e = -ENOMEM;
				break;
			}
			data = d;
			cap = ncap;
		}
		errno = 0;
		got = fread(data + len, 1, READ_CHUNK, in);
		len += got;
		if (len > PPROF_READ_MAX_SIZE) {
			e = -EINVAL;
			if (ret_err)
				ret_err->reason = "file over 1 GiB";
			break;
		}
		if (got < READ_CHUNK) {
			if (ferror(in))
				e = errno ? -errno : -EIO;
			break;
		}
	}
	if (e >= 0)
		e = pprof_read_mem(data, len, ret, ret_err);
	free(data);
	return e;
}
