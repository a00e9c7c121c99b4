/* folded: `frame;frame;...;leaf COUNT` lines, the format of FlameGraph's stackcollapse tools. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"
#include "output/profile.h"

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

struct line {
	size_t off, len;    /* into the text buffer */
	uint64_t hash;
	uint64_t count;
};

struct lines {
	struct buf text;
	struct line *v;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

static int lines_add(struct lines *ls, size_t off, size_t len, uint64_t count)
{
	uint64_t h = hash_bytes(ls->text.data + off, len, 0);
	size_t mask, i;

	if ((ls->n + 1) * 2 > ls->nslots) {
		size_t n = ls->nslots ? ls->nslots * 2 : 1024;
		uint32_t *s = malloc(n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memset(s, 0xff, n * sizeof(*s));
		for (size_t k = 0; k < ls->n; k++) {
			size_t j = ls->v[k].hash & (n - 1);
			while (s[j] != UINT32_MAX)
				j = (j + 1) & (n - 1);
			s[j] = (uint32_t) k;
		}
		free(ls->slots);
		ls->slots = s;
		ls->nslots = n;
	}
	mask = ls->nslots - 1;
	for (i = h & mask; ls->slots[i] != UINT32_MAX; i = (i + 1) & mask) {
		struct line *l = &ls->v[ls->slots[i]];
		if (l->hash == h && l->len == len &&
		    memcmp(ls->text.data + l->off, ls->text.data + off, len) == 0) {
			l->count += count;
			ls->text.len = off;     /* drop the duplicate text */
			return 0;
		}
	}
	if (ls->n == ls->cap) {
		size_t n = ls->cap ? ls->cap * 2 : 1024;
		struct line *v = realloc(ls->v, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ls->v = v;
		ls->cap = n;
	}
	ls->v[ls->n] = (struct line) { off, len, h, count };
	ls->slots[i] = (uint32_t) ls->n++;
	return 0;
}

int folded_write(const struct profile *p, const struct folded_opts *opts, FILE *out)
{
	size_t col = opts && opts->column ? opts->column : 1, nf = profile_n_frames(p);
	struct lines ls = { 0 };
	struct buf ft;          /* every frame's text, rendered once: frame f at ft_off[f] */
	size_t *ft_off;
	int r = 0;

	if (col >= profile_n_values(p))
		return -EINVAL;
	ft_off = malloc((nf + 1) * sizeof(*ft_off));
	if (!ft_off)
		return -ENOMEM;
	buf_init(&ft);
	for (size_t f = 0; f < nf && r >= 0; f++) {
		ft_off[f] = ft.len;
		r = folded_frame_text(profile_frame(p, (uint32_t) f), &ft);
	}
	ft_off[nf] = ft.len;
	buf_init(&ls.text);
	for (size_t i = 0; i < profile_n_stacks(p) && r >= 0; i++) {
		const struct profile_stack *st = profile_stack(p, i);
		uint64_t count = profile_values(p, i)[col];
		size_t off = ls.text.len;

		if (count == 0)
			continue;
		for (uint32_t d = 0; d < st->depth && r >= 0; d++) {
			if (d)
				r = buf_putc(&ls.text, ';');
			if (r >= 0) {
				uint32_t f = st->frames[d];

				r = f < nf ? buf_append(&ls.text, ft.data + ft_off[f],
							ft_off[f + 1] - ft_off[f]) : -EINVAL;
			}
		}
		if (r >= 0)
			r = lines_add(&ls, off, ls.text.len - off, count);
	}
	for (size_t i = 0; i < ls.n && r >= 0; i++) {
		const struct line *l = &ls.v[i];
		if (fwrite(ls.text.data + l->off, 1, l->len, out) != l->len ||
		    fprintf(out, " %llu\n", (unsigned long long) l->count) < 0)
			r = -EIO;
	}
	if (r >= 0 && fflush(out) != 0)
		r = -errno;
	buf_release(&ls.text);
	buf_release(&ft);
	free(ft_off);
	free(ls.v);
	free(ls.slots);
	return r;
}
