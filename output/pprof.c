/* pprof: a gzip-compressed perftools.profiles.Profile protobuf (the format of `go tool pprof`,
 * github.com/google/pprof/proto/profile.proto), encoded field by field straight into deflate. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/array.h"
#include "base/buf.h"
#include "base/hash.h"
#include "output/output.h"
#include "output/pprof_proto.h"
#include "output/utf8.h"

#define BATCH_SIZE 65536

/* A protobuf message being built; the first failure sticks in err and later writes do nothing. */
struct pb {
	struct buf b;
	int err;
};

static void pb_raw(struct pb *m, const void *data, size_t len)
{
	if (!m->err && len && buf_append(&m->b, data, len) < 0)
		m->err = -ENOMEM;
}

static size_t varint_encode(unsigned char *t, uint64_t v)
{
	size_t n = 0;

	do {
		t[n++] = (unsigned char) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

static void pb_varint(struct pb *m, uint64_t v)
{
	unsigned char t[10];

	pb_raw(m, t, varint_encode(t, v));
}

/* A varint field, left out when 0 (proto3's default). Negative int64s are passed cast. */
static void pb_uint(struct pb *m, unsigned field, uint64_t v)
{
	if (v == 0)
		return;
	pb_varint(m, (uint64_t) field << 3 | WIRE_VARINT);
	pb_varint(m, v);
}

static void pb_bytes(struct pb *m, unsigned field, const void *data, size_t len)
{
	pb_varint(m, (uint64_t) field << 3 | WIRE_LEN);
	pb_varint(m, len);
	pb_raw(m, data, len);
}

static void pb_reset(struct pb *m)
{
	buf_reset(&m->b);
}

/* The string table: each string once, valid UTF-8 (invalid sequences replaced by U+FFFD). */
struct pstr {
	const char *s;          /* the profile's, a literal, or owned when repaired */
	size_t len;
	uint64_t hash;
	bool owned;
};

struct strtab {
	struct pstr *v;
	size_t n, cap;
	uint32_t *slots;        /* ids, UINT32_MAX = empty */
	size_t n_slots;         /* power of two, over twice n */
};

static void strtab_release(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].owned)
			free((char *) t->v[i].s);
	free(t->v);
	free(t->slots);
}

static size_t strtab_probe(const struct strtab *t, const char *s, size_t len, uint64_t h)
{
	size_t mask = t->n_slots - 1, i = h & mask;

	for (;;) {
		uint32_t id = t->slots[i];
		if (id == UINT32_MAX || (t->v[id].hash == h && t->v[id].len == len &&
					 memcmp(t->v[id].s, s, len) == 0))
			return i;
		i = (i + 1) & mask;
	}
}

static int strtab_grow(struct strtab *t)
{
	if (array_grow((void **) &t->v, &t->cap, t->n + 1, sizeof(*t->v), 256) < 0)
		return -ENOMEM;
	if ((t->n + 1) * 2 > t->n_slots) {
		size_t n_slots = t->n_slots ? t->n_slots * 2 : 512;
		uint32_t *old = t->slots;

		t->slots = malloc(n_slots * sizeof(*t->slots));
		if (!t->slots) {
			t->slots = old;
			return -ENOMEM;
		}
		memset(t->slots, 0xff, n_slots * sizeof(*t->slots));
		free(old);
		t->n_slots = n_slots;
		for (uint32_t id = 0; id < t->n; id++)
			t->slots[strtab_probe(t, t->v[id].s, t->v[id].len, t->v[id].hash)] = id;
	}
	return 0;
}

/* s with each invalid UTF-8 sequence replaced by one U+FFFD, or NULL (*ret_len unset) when s
 * is valid already; *ret_err is -ENOMEM if the copy failed. */
static char *utf8_repair(const char *s, size_t n, size_t *ret_len, int *ret_err)
{
	const unsigned char *u = (const unsigned char *) s;
	struct buf b;
	size_t i = 0, skip, len;

	*ret_err = 0;
	while (i < n && (len = utf8_len(u + i, n - i, &skip)) > 0)
		i += len;
	if (i == n)
		return NULL;
	buf_init(&b);
	if (buf_append(&b, s, i) < 0) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	while (i < n) {
		len = utf8_len(u + i, n - i, &skip);
		if ((len ? buf_append(&b, u + i, len) : buf_puts(&b, "\xef\xbf\xbd")) < 0) {
			buf_release(&b);
			*ret_err = -ENOMEM;
			return NULL;
		}
		i += len ? len : skip;
	}
	*ret_len = b.len;
	return buf_detach(&b);
}

/* Interns s (valid until the table is released): its index in *ret_id. */
static int strtab_add(struct strtab *t, const char *s, uint32_t *ret_id)
{
	size_t len = strlen(s), slot;
	int r;
	char *fixed = utf8_repair(s, len, &len, &r);
	uint64_t h;

	if (r < 0)
		return r;
	if (fixed)
		s = fixed;
	r = strtab_grow(t);
	if (r < 0) {
		free(fixed);
		return r;
	}
	h = hash_bytes(s, len, 0);
	slot = strtab_probe(t, s, len, h);
	if (t->slots[slot] != UINT32_MAX) {
		free(fixed);
		*ret_id = t->slots[slot];
		return 0;
	}
	t->v[t->n] = (struct pstr) { s, len, h, fixed != NULL };
	t->slots[slot] = (uint32_t) t->n;
	*ret_id = (uint32_t) t->n++;
	return 0;
}

/* As strtab_add(), for a string from malloc() that the table then owns (or frees). */
static int strtab_add_owned(struct strtab *t, char *s, uint32_t *ret_id)
{
	int r = strtab_add(t, s, ret_id);

	if (r >= 0 && t->v[*ret_id].s == s)
		t->v[*ret_id].owned = true;
	else
		free(s);
	return r;
}

struct fn_key {
	uint32_t name, file;    /* string ids */
	uint32_t frame;
};

static int cmp_fn_key(const void *a, const void *b)
{
	const struct fn_key *x = a, *y = b;

	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

struct pprof {
	const struct profile *p;
	struct strtab st;
	uint32_t s_samples, s_count, s_thread_id;
	uint32_t s_event[PROFILE_MAX_EVENTS], s_unit[PROFILE_MAX_EVENTS];
	uint32_t *s_comment;    /* the comments' string ids */
	size_t n_comments, cap_comments;
	uint32_t *s_label;      /* opts->labels' string ids: key, value, key, value ... */
	size_t n_labels;        /* pairs */
	struct fn_key *fns;     /* sorted; function id i + 1 for the first of each (name, file) */
	uint32_t *frame_fn;     /* function id of each frame */
	uint32_t *frame_map;    /* mapping id of each frame, 0 for none */
	uint32_t *map_file;     /* string id of mapping i + 1 */
	uint32_t *map_bid;      /* string id of its build-id, 0 for none */
	uint32_t *map_of_str;   /* mapping id of each module's string id (0: none yet) */
	size_t cap_map_of_str;
	size_t n_maps;

	z_stream zs;
	FILE *out;
	struct pb msg, sub;
	struct buf batch;       /* messages not given to deflate yet */
	unsigned char chunk[16384];
};

static int add_comment(struct pprof *pp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int add_comment(struct pprof *pp, const char *fmt, ...)
{
	struct buf b;
	va_list ap;
	int r;

	buf_init(&b);
	va_start(ap, fmt);
	r = buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (r < 0) {
		buf_release(&b);
		return r;
	}
	if (array_grow((void **) &pp->s_comment, &pp->cap_comments, pp->n_comments + 1,
		       sizeof(*pp->s_comment), 16) < 0) {
		buf_release(&b);
		return -ENOMEM;
	}
	return strtab_add_owned(&pp->st, buf_detach(&b), &pp->s_comment[pp->n_comments++]);
}

/* The comments (see output.h): the version, the command line, then what pprof has no field
 * for, in the "key: value" lines that pprof_read() reads back. */
static int add_comments(struct pprof *pp, const struct pprof_opts *opts)
{
	const struct profile *p = pp->p;
	const struct profile_meta *meta = profile_meta_const(p);
	int r = add_comment(pp, "hwspy %s", HWSPY_VERSION);

	if (r >= 0 && opts && opts->command_line)
		r = add_comment(pp, "%s", opts->command_line);
	if (r >= 0 && meta->target)
		r = add_comment(pp, "target: %s", meta->target);
	if (r >= 0 && meta->python)
		r = add_comment(pp, "python: %s", meta->python);
	if (r >= 0 && meta->lost)
		r = add_comment(pp, "lost: %" PRIu64, meta->lost);
	if (r >= 0 && meta->dropped)
		r = add_comment(pp, "dropped: %" PRIu64, meta->dropped);
	if (r >= 0 && meta->threads)
		r = add_comment(pp, "threads: %" PRIu64, meta->threads);
	if (r >= 0 && meta->threads_missed)
		r = add_comment(pp, "threads not profiled: %" PRIu64, meta->threads_missed);
	if (r >= 0 && meta->threads_missed_why)
		r = add_comment(pp, "threads not profiled, why: %s", meta->threads_missed_why);
	for (size_t i = 0; r >= 0 && i < profile_n_events(p); i++) {
		const struct profile_event *ev = profile_event(p, i);
		char freq[48] = "", period[48] = "";

		/* profile_new()'s defaults need no line */
		if (!ev->freq && !ev->period && ev->sampling == (i == 0))
			continue;
		if (ev->freq)
			snprintf(freq, sizeof(freq), ", frequency %" PRIu64 " Hz", ev->freq);
		if (ev->period)
			snprintf(period, sizeof(period), ", period %" PRIu64, ev->period);
		r = add_comment(pp, "event %zu: %s%s%s", i, ev->sampling ? "sampling" : "counted",
				freq, period);
	}
	for (size_t i = 0; r >= 0 && opts && opts->comments && opts->comments[i]; i++)
		r = add_comment(pp, "%s", opts->comments[i]);
	return r;
}

/* opts->labels interned, as pairs of string ids: -EINVAL for a key without a value, an empty
 * key or "thread_id" (the numeric label of the thread). */
static int add_labels(struct pprof *pp, const struct pprof_opts *opts)
{
	const char *const *l = opts ? opts->labels : NULL;
	size_t n = 0;
	int r = 0;

	if (!l)
		return 0;
	for (; l[n]; n += 2)
		if (!l[n + 1] || !*l[n] || !strcmp(l[n], "thread_id"))
			return -EINVAL;
	if (!n)
		return 0;
	pp->s_label = malloc(n * sizeof(*pp->s_label));
	if (!pp->s_label)
		return -ENOMEM;
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = strtab_add(&pp->st, l[i], &pp->s_label[i]);
	pp->n_labels = n / 2;
	return r;
}

/* Interns every string, numbers functions and mappings. */
static int pprof_index(struct pprof *pp, const struct pprof_opts *opts)
{
	const struct profile *p = pp->p;
	size_t n_frames = profile_n_frames(p);
	uint32_t empty, kernel;
	int r;

	if ((r = strtab_add(&pp->st, "", &empty)) < 0 ||
	    (r = strtab_add(&pp->st, "samples", &pp->s_samples)) < 0 ||
	    (r = strtab_add(&pp->st, "count", &pp->s_count)) < 0 ||
	    (r = strtab_add(&pp->st, "thread_id", &pp->s_thread_id)) < 0 ||
	    (r = strtab_add(&pp->st, KERNEL_FILE, &kernel)) < 0 ||
	    (r = add_comments(pp, opts)) < 0 || (r = add_labels(pp, opts)) < 0)
		return r;
	for (size_t i = 0; i < profile_n_events(p); i++) {
		const char *name = profile_event(p, i)->name;

		if ((r = strtab_add(&pp->st, name, &pp->s_event[i])) < 0 ||
		    (r = strtab_add(&pp->st, profile_event_is_time(name) ? "nanoseconds" : "events",
				    &pp->s_unit[i])) < 0)
			return r;
	}

	pp->fns = malloc((n_frames ? n_frames : 1) * sizeof(*pp->fns));
	pp->frame_fn = malloc((n_frames ? n_frames : 1) * sizeof(*pp->frame_fn));
	pp->frame_map = calloc(n_frames ? n_frames : 1, sizeof(*pp->frame_map));
	if (!pp->fns || !pp->frame_fn || !pp->frame_map)
		return -ENOMEM;
	for (uint32_t id = 0; id < n_frames; id++) {
		const struct profile_frame *f = profile_frame(p, id);
		uint32_t file = empty;

		if ((r = strtab_add(&pp->st, f->name, &pp->fns[id].name)) < 0)
			return r;
		if (f->kind == FRAME_KERNEL)
			file = kernel;
		else if ((f->kind == FRAME_PYTHON || f->kind == FRAME_NATIVE) && f->file)
			r = strtab_add(&pp->st, f->file, &file);
		else if (f->kind == FRAME_NATIVE && f->module)
			r = strtab_add(&pp->st, f->module, &file);
		if (r < 0)
			return r;
		pp->fns[id].file = file;
		pp->fns[id].frame = id;
	}

	/* mappings: one per native module, numbered in frame order */
	pp->map_file = malloc((n_frames ? n_frames : 1) * sizeof(*pp->map_file));
	pp->map_bid = calloc(n_frames ? n_frames : 1, sizeof(*pp->map_bid));
	if (!pp->map_file || !pp->map_bid)
		return -ENOMEM;
	for (uint32_t id = 0; id < n_frames; id++) {
		const struct profile_frame *f = profile_frame(p, id);
		uint32_t file;

		if (f->kind != FRAME_NATIVE || !f->module)
			continue;
		if ((r = strtab_add(&pp->st, f->module, &file)) < 0)
			return r;
		if (array_grow((void **) &pp->map_of_str, &pp->cap_map_of_str, (size_t) file + 1,
			       sizeof(*pp->map_of_str), 64) < 0)
			return -ENOMEM;
		if (!pp->map_of_str[file]) {
			const char *bid = profile_build_id(p, f->module);

			if (bid && (r = strtab_add(&pp->st, bid, &pp->map_bid[pp->n_maps])) < 0)
				return r;
			pp->map_file[pp->n_maps++] = file;
			pp->map_of_str[file] = (uint32_t) pp->n_maps;
		}
		pp->frame_map[id] = pp->map_of_str[file];
	}

	/* functions: one per (name, file), numbered in sorted order */
	qsort(pp->fns, n_frames, sizeof(*pp->fns), cmp_fn_key);
	for (size_t i = 0, fn = 0; i < n_frames; i++) {
		if (i == 0 || pp->fns[i].name != pp->fns[i - 1].name ||
		    pp->fns[i].file != pp->fns[i - 1].file)
			fn++;
		pp->frame_fn[pp->fns[i].frame] = (uint32_t) fn;
	}
	return 0;
}

int pprof_over_limit(const struct profile *p, size_t *ret_col, uint64_t *ret_value,
		     bool *ret_sum)
{
	for (size_t col = 0; col < profile_n_values(p); col++) {
		uint64_t total = 0;

		for (size_t i = 0; i < profile_n_stacks(p); i++) {
			uint64_t v = profile_values(p, i)[col];

			if (v > (uint64_t) INT64_MAX - total) {
				*ret_col = col;
				*ret_value = v;
				*ret_sum = v <= (uint64_t) INT64_MAX;
				return -EOVERFLOW;
			}
			total += v;
		}
	}
	return 0;
}

/* Compresses len bytes (flush Z_NO_FLUSH, or Z_FINISH to end the stream) into the file. */
static int gz_put(struct pprof *pp, const void *data, size_t len, int flush)
{
	const unsigned char *d = data;

	do {
		size_t piece = len < (1u << 30) ? len : (1u << 30);
		int f = piece == len ? flush : Z_NO_FLUSH, r;

		pp->zs.next_in = (Bytef *) d;
		pp->zs.avail_in = (uInt) piece;
		do {
			size_t have;

			pp->zs.next_out = pp->chunk;
			pp->zs.avail_out = sizeof(pp->chunk);
			r = deflate(&pp->zs, f);
			if (r == Z_STREAM_ERROR)
				return -EINVAL;
			have = sizeof(pp->chunk) - pp->zs.avail_out;
			errno = 0;
			if (have && fwrite(pp->chunk, 1, have, pp->out) != have)
				return errno ? -errno : -EIO;
		} while (f == Z_FINISH ? r != Z_STREAM_END : pp->zs.avail_out == 0);
		d += piece;
		len -= piece;
	} while (len);
	return 0;
}

/* Writes m as top-level field `field` of the Profile (or, with field 0, m's bytes as they are,
 * for scalar fields) and empties it. */
static int emit(struct pprof *pp, unsigned field, struct pb *m)
{
	unsigned char head[20];
	size_t n = 0;
	int r;

	if (m->err)
		return m->err;
	if (field) {
		n = varint_encode(head, (uint64_t) field << 3 | WIRE_LEN);
		n += varint_encode(head + n, m->b.len);
	}
	/* deflate takes the messages in batches: one call per message costs more than its work
	 * (the compressed bytes do not depend on how the input is cut up) */
	r = buf_append(&pp->batch, head, n) < 0 || buf_append(&pp->batch, m->b.data, m->b.len) < 0 ?
	    -ENOMEM : 0;
	if (r >= 0 && pp->batch.len >= BATCH_SIZE) {
		r = gz_put(pp, pp->batch.data, pp->batch.len, Z_NO_FLUSH);
		buf_reset(&pp->batch);
	}
	pb_reset(m);
	return r;
}

static int emit_value_type(struct pprof *pp, unsigned field, uint32_t type, uint32_t unit)
{
	pb_uint(&pp->msg, VALUE_TYPE_TYPE, type);
	pb_uint(&pp->msg, VALUE_TYPE_UNIT, unit);
	return emit(pp, field, &pp->msg);
}

static int emit_sample(struct pprof *pp, size_t i)
{
	const struct profile_stack *st = profile_stack(pp->p, i);
	const uint64_t *v = profile_values(pp->p, i);
	size_t n_values = profile_n_values(pp->p), k;

	for (k = 0; k < n_values && v[k] == 0; k++)
		;
	if (k == n_values)
		return 0;       /* nothing to show */
	for (uint32_t d = st->depth; d-- > 0;)   /* leaf first */
		pb_varint(&pp->sub, (uint64_t) st->frames[d] + 1);
	pb_bytes(&pp->msg, SAMPLE_LOCATION_ID, pp->sub.b.data, pp->sub.b.len);
	pb_reset(&pp->sub);
	for (k = 0; k < n_values; k++)
		pb_varint(&pp->sub, v[k]);
	pb_bytes(&pp->msg, SAMPLE_VALUE, pp->sub.b.data, pp->sub.b.len);
	pb_reset(&pp->sub);
	if (st->tid) {
		pb_uint(&pp->sub, LABEL_KEY, pp->s_thread_id);
		pb_uint(&pp->sub, LABEL_NUM, st->tid);
		pb_bytes(&pp->msg, SAMPLE_LABEL, pp->sub.b.data, pp->sub.b.len);
		pb_reset(&pp->sub);
	}
	for (size_t l = 0; l < pp->n_labels; l++) {
		pb_uint(&pp->sub, LABEL_KEY, pp->s_label[2 * l]);
		pb_uint(&pp->sub, LABEL_STR, pp->s_label[2 * l + 1]);
		pb_bytes(&pp->msg, SAMPLE_LABEL, pp->sub.b.data, pp->sub.b.len);
		pb_reset(&pp->sub);
	}
	if (pp->sub.err)
		return pp->sub.err;
	return emit(pp, PROFILE_SAMPLE, &pp->msg);
}

static int emit_location(struct pprof *pp, uint32_t id)
{
	const struct profile_frame *f = profile_frame(pp->p, id);

	pb_uint(&pp->msg, LOCATION_ID, (uint64_t) id + 1);
	pb_uint(&pp->msg, LOCATION_MAPPING_ID, pp->frame_map[id]);
	pb_uint(&pp->sub, LINE_FUNCTION_ID, pp->frame_fn[id]);
	if (f->kind == FRAME_PYTHON || f->kind == FRAME_NATIVE)
		pb_uint(&pp->sub, LINE_LINE, (uint64_t) (int64_t) f->line);
	pb_bytes(&pp->msg, LOCATION_LINE, pp->sub.b.data, pp->sub.b.len);
	pb_reset(&pp->sub);
	if (pp->sub.err)
		return pp->sub.err;
	return emit(pp, PROFILE_LOCATION, &pp->msg);
}

static int emit_all(struct pprof *pp)
{
	const struct profile *p = pp->p;
	const struct profile_event *ev = profile_event(p, 0);
	const struct profile_meta *meta = profile_meta_const(p);
	uint64_t period = ev->period;
	size_t n_frames = profile_n_frames(p);
	int r;

	if ((r = emit_value_type(pp, PROFILE_SAMPLE_TYPE, pp->s_samples, pp->s_count)) < 0)
		return r;
	for (size_t i = 0; i < profile_n_events(p); i++)
		if ((r = emit_value_type(pp, PROFILE_SAMPLE_TYPE, pp->s_event[i], pp->s_unit[i])) < 0)
			return r;
	for (size_t i = 0; i < profile_n_stacks(p); i++)
		if ((r = emit_sample(pp, i)) < 0)
			return r;
	for (size_t m = 0; m < pp->n_maps; m++) {
		pb_uint(&pp->msg, MAPPING_ID, m + 1);
		pb_uint(&pp->msg, MAPPING_FILENAME, pp->map_file[m]);
		pb_uint(&pp->msg, MAPPING_BUILD_ID, pp->map_bid[m]);
		pb_uint(&pp->msg, MAPPING_HAS_FUNCTIONS, 1);
		if ((r = emit(pp, PROFILE_MAPPING, &pp->msg)) < 0)
			return r;
	}
	for (uint32_t id = 0; id < n_frames; id++)
		if ((r = emit_location(pp, id)) < 0)
			return r;
	for (size_t i = 0; i < n_frames; i++) {
		const struct fn_key *k = &pp->fns[i];

		if (i > 0 && k->name == k[-1].name && k->file == k[-1].file)
			continue;
		pb_uint(&pp->msg, FUNCTION_ID, pp->frame_fn[k->frame]);
		pb_uint(&pp->msg, FUNCTION_NAME, k->name);
		pb_uint(&pp->msg, FUNCTION_FILENAME, k->file);
		if ((r = emit(pp, PROFILE_FUNCTION, &pp->msg)) < 0)
			return r;
	}
	for (size_t i = 0; i < pp->st.n; i++) {
		pb_bytes(&pp->msg, PROFILE_STRING_TABLE, pp->st.v[i].s, pp->st.v[i].len);
		if ((r = emit(pp, 0, &pp->msg)) < 0)
			return r;
	}
	if (meta->start_time_ns <= INT64_MAX)
		pb_uint(&pp->msg, PROFILE_TIME_NANOS, meta->start_time_ns);
	if (meta->duration_ns <= INT64_MAX)
		pb_uint(&pp->msg, PROFILE_DURATION_NANOS, meta->duration_ns);
	if ((r = emit(pp, 0, &pp->msg)) < 0 ||
	    (r = emit_value_type(pp, PROFILE_PERIOD_TYPE, pp->s_event[0], pp->s_unit[0])) < 0)
		return r;
	if (!period && ev->freq && profile_event_is_time(ev->name))
		period = 1000000000 / ev->freq;
	if (period <= INT64_MAX)
		pb_uint(&pp->msg, PROFILE_PERIOD, period);
	for (size_t i = 0; i < pp->n_comments; i++)
		pb_varint(&pp->sub, pp->s_comment[i]);
	pb_bytes(&pp->msg, PROFILE_COMMENT, pp->sub.b.data, pp->sub.b.len);
	pb_reset(&pp->sub);
	pb_uint(&pp->msg, PROFILE_DEFAULT_SAMPLE_TYPE, pp->s_event[0]);
	if (pp->sub.err)
		return pp->sub.err;
	if ((r = emit(pp, 0, &pp->msg)) < 0)
		return r;
	return gz_put(pp, pp->batch.data, pp->batch.len, Z_FINISH);
}

int pprof_write(const struct profile *p, const struct pprof_opts *opts, FILE *out)
{
	struct pprof *pp = calloc(1, sizeof(*pp));
	int r;

	if (!pp)
		return -ENOMEM;
	pp->p = p;
	pp->out = out;
	buf_init(&pp->msg.b);
	buf_init(&pp->sub.b);
	buf_init(&pp->batch);
	r = pprof_over_limit(p, &(size_t) { 0 }, &(uint64_t) { 0 }, &(bool) { false });
	if (r >= 0)
		r = pprof_index(pp, opts);
	if (r >= 0) {
		if (deflateInit2(&pp->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			r = -ENOMEM;
		else {
			r = emit_all(pp);
			(void) deflateEnd(&pp->zs);
		}
	}
	buf_release(&pp->msg.b);
	buf_release(&pp->sub.b);
	buf_release(&pp->batch);
	strtab_release(&pp->st);
	free(pp->fns);
	free(pp->frame_fn);
	free(pp->frame_map);
	free(pp->map_file);
	free(pp->map_bid);
	free(pp->map_of_str);
	free(pp->s_comment);
	free(pp->s_label);
	free(pp);
	if (r < 0)
		return r;
	if (fflush(out) != 0)
		return -errno;
	return ferror(out) ? -EIO : 0;
}
