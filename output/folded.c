/* folded: `frame;frame;...;leaf COUNT` lines, the format of FlameGraph's stackcollapse tools. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/buf.h"
#include "base/hash.h"
#include "output/output.h"

/* Appends s with the characters folded cannot carry replaced: ';' separates frames, a newline
 * ends the line, other control characters would corrupt the text for every reader. */
static int append_clean(struct buf *out, const char *s)
{
	size_t start = out->len;
	int r = buf_puts(out, s);

	if (r < 0)
		return r;
	for (size_t i = start; i < out->len; i++) {
		unsigned char c = (unsigned char) out->data[i];
		if (c == ';' || c < 0x20 || c == 0x7f)
			out->data[i] = '_';
	}
	return 0;
}

int folded_frame_text(const struct profile_frame *f, struct buf *out)
{
	size_t start = out->len, end;
	int r;

	r = append_clean(out, f->name);
	if (r >= 0 && f->kind == FRAME_PYTHON && f->file) {
		r = buf_puts(out, " (");
		if (r >= 0)
			r = append_clean(out, f->file);
		if (r >= 0 && f->line > 0)
			r = buf_printf(out, ":%d", f->line);
		if (r >= 0)
			r = buf_putc(out, ')');
	} else if (r >= 0 && f->kind == FRAME_NATIVE && f->module) {
		r = buf_puts(out, " [");
		if (r >= 0)
			r = append_clean(out, f->module);
		if (r >= 0)
			r = buf_putc(out, ']');
	} else if (r >= 0 && f->kind == FRAME_KERNEL) {
		r = buf_puts(out, "_[k]");
	}
	if (r < 0)
		return r;
	if (out->len == start)
		return buf_puts(out, "[unnamed]");
	/* "name 12" would read back as a count: join the digits to the name */
	end = out->len;
	while (end > start && isdigit((unsigned char) out->data[end - 1]))
		end--;
	if (end < out->len && end > start && out->data[end - 1] == ' ')
		out->data[end - 1] = '_';
	return 0;
}

/* Lines are merged when their texts are equal. Frame texts hold no ';' and are never empty,
 * so two stacks give the same line exactly when their frames give the same texts one by one:
 * frames are numbered by text (text_id, the first frame with that text) and stacks compared as
 * sequences of text ids, without rendering a line before it is written. */
struct line {
	uint32_t stack;     /* the first stack giving this line */
	uint64_t hash;
	uint64_t count;
};

struct lines {
	struct line *v;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

#define OUT_SIZE (1u << 20)

/* The writer's own output buffer: frame texts go out by memcpy, not stdio call by call. */
struct out_buf {
	FILE *f;
	char *data;
	size_t len;
	int err;
};

static void out_flush(struct out_buf *o)
{
	errno = 0;
	if (!o->err && o->len && fwrite(o->data, 1, o->len, o->f) != o->len)
		o->err = errno ? -errno : -EIO;         /* -ENOSPC on a full disk, say */
	o->len = 0;
}

static void out_put(struct out_buf *o, const char *s, size_t n)
{
	while (n > OUT_SIZE - o->len) {
		size_t k = OUT_SIZE - o->len;

		memcpy(o->data + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		out_flush(o);
	}
	memcpy(o->data + o->len, s, n);
	o->len += n;
}

/* " COUNT\n" */
static void out_count(struct out_buf *o, uint64_t v)
{
	char d[24];
	size_t i = sizeof(d);

	d[--i] = '\n';
	do {
		d[--i] = (char) ('0' + v % 10);
		v /= 10;
	} while (v);
	d[--i] = ' ';
	out_put(o, d + i, sizeof(d) - i);
}

static uint64_t stack_hash(const struct profile_stack *st, const uint32_t *text_id)
{
	uint64_t h = st->depth;

	for (uint32_t d = 0; d < st->depth; d++)
		h = hash_u64(h ^ text_id[st->frames[d]]);
	return h;
}

static bool same_texts(const struct profile_stack *a, const struct profile_stack *b,
		       const uint32_t *text_id)
{
	if (a->depth != b->depth)
		return false;
	for (uint32_t d = 0; d < a->depth; d++)
		if (text_id[a->frames[d]] != text_id[b->frames[d]])
			return false;
	return true;
}

/* Adds stack i's count to its line, a new line if no stack before gave the same text. */
static int lines_add(struct lines *ls, const struct profile *p, uint32_t i,
		     const uint32_t *text_id, uint64_t count)
{
	const struct profile_stack *st = profile_stack(p, i);
	uint64_t h = stack_hash(st, text_id);
	size_t mask, k;

	if ((ls->n + 1) * 2 > ls->nslots) {
		size_t n = ls->nslots ? ls->nslots * 2 : 1024;
		uint32_t *s = malloc(n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memset(s, 0xff, n * sizeof(*s));
		for (size_t j = 0; j < ls->n; j++) {
			size_t at = ls->v[j].hash & (n - 1);
			while (s[at] != UINT32_MAX)
				at = (at + 1) & (n - 1);
			s[at] = (uint32_t) j;
		}
		free(ls->slots);
		ls->slots = s;
		ls->nslots = n;
	}
	mask = ls->nslots - 1;
	for (k = h & mask; ls->slots[k] != UINT32_MAX; k = (k + 1) & mask) {
		struct line *l = &ls->v[ls->slots[k]];
		if (l->hash == h && same_texts(profile_stack(p, l->stack), st, text_id)) {
			l->count += count;
			return 0;
		}
	}
	if (array_grow((void **) &ls->v, &ls->cap, ls->n + 1, sizeof(*ls->v), 1024) < 0)
		return -ENOMEM;
	ls->v[ls->n] = (struct line) { i, h, count };
	ls->slots[k] = (uint32_t) ls->n++;
	return 0;
}

/* text_id[f] = the first frame whose text equals frame f's (texts ft[off[f]..off[f + 1])). */
static int number_texts(const struct buf *ft, const size_t *off, size_t nf, uint32_t *text_id)
{
	size_t nslots = 64, mask;
	uint32_t *slots;

	while (nslots < nf * 2)
		nslots *= 2;
	mask = nslots - 1;
	slots = malloc(nslots * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, nslots * sizeof(*slots));
	for (size_t f = 0; f < nf; f++) {
		const char *t = ft->data + off[f];
		size_t len = off[f + 1] - off[f], k;

		for (k = hash_mem(t, len, 0) & mask; slots[k] != UINT32_MAX; k = (k + 1) & mask) {
			uint32_t g = slots[k];
			if (off[g + 1] - off[g] == len && memcmp(ft->data + off[g], t, len) == 0)
				break;
		}
		if (slots[k] == UINT32_MAX)
			slots[k] = (uint32_t) f;
		text_id[f] = slots[k];
	}
	free(slots);
	return 0;
}

/* The header line: the event of column col (unless it is a folded file's nameless "samples")
 * and the length of the recording, where known. */
static void put_header(struct out_buf *o, const struct profile *p, size_t col)
{
	const char *ev = profile_event(p, col - 1)->name;
	uint64_t ns = profile_meta_const(p)->duration_ns;
	char line[FOLDED_EVENT_MAX + 64];
	bool named = strcmp(ev, "samples") != 0 && strlen(ev) <= FOLDED_EVENT_MAX &&
		     !strpbrk(ev, " \t\n=");
	int n;

	if (!named && !ns)
		return;
	n = snprintf(line, sizeof(line), "# hwspy%s%s", named ? " event=" : "", named ? ev : "");
	if (ns)
		n += snprintf(line + n, sizeof(line) - (size_t) n, " duration_ns=%" PRIu64, ns);
	out_put(o, line, (size_t) n);
	out_put(o, "\n", 1);
}

int folded_write(const struct profile *p, const struct folded_opts *opts, FILE *out)
{
	size_t col = opts && opts->column ? opts->column : 1, nf = profile_n_frames(p);
	struct lines ls = { 0 };
	struct out_buf o = { .f = out };
	struct buf ft;          /* every frame's text, rendered once: frame f at ft_off[f] */
	size_t *ft_off;
	uint32_t *text_id;
	int r = 0;

	if (col >= profile_n_values(p))
		return -EINVAL;
	if (profile_n_stacks(p) >= UINT32_MAX)
		return -ENOMEM;
	ft_off = malloc((nf + 1) * sizeof(*ft_off));
	text_id = malloc((nf ? nf : 1) * sizeof(*text_id));
	o.data = malloc(OUT_SIZE);
	if (!ft_off || !text_id || !o.data) {
		free(ft_off);
		free(text_id);
		free(o.data);
		return -ENOMEM;
	}
	buf_init(&ft);
	for (size_t f = 0; f < nf && r >= 0; f++) {
		ft_off[f] = ft.len;
		r = folded_frame_text(profile_frame(p, (uint32_t) f), &ft);
	}
	ft_off[nf] = ft.len;
	if (r >= 0)
		r = number_texts(&ft, ft_off, nf, text_id);
	for (size_t i = 0; i < profile_n_stacks(p) && r >= 0; i++) {
		uint64_t count = profile_values(p, i)[col];

		if (count)
			r = lines_add(&ls, p, (uint32_t) i, text_id, count);
	}
	if (r >= 0 && opts && opts->header)
		put_header(&o, p, col);
	for (size_t i = 0; i < ls.n && r >= 0; i++) {
		const struct profile_stack *st = profile_stack(p, ls.v[i].stack);

		for (uint32_t d = 0; d < st->depth; d++) {
			uint32_t f = st->frames[d];

			if (d)
				out_put(&o, ";", 1);
			out_put(&o, ft.data + ft_off[f], ft_off[f + 1] - ft_off[f]);
		}
		out_count(&o, ls.v[i].count);
	}
	out_flush(&o);
	if (r >= 0 && o.err < 0)
		r = o.err;
	if (r >= 0 && fflush(out) != 0)
		r = -errno;
	buf_release(&ft);
	free(ft_off);
	free(text_id);
	free(o.data);
	free(ls.v);
	free(ls.slots);
	return r;
}
