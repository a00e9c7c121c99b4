/* svg: an interactive flame graph in one self-contained SVG file, in the spirit of Brendan
 * Gregg's flamegraph.pl: the stacks merged into a tree, frames laid out by weight, tooltips with
 * every event and the derived ratios, click to zoom, regex search, the view kept in the URL
 * query. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/buf.h"
#include "base/hash.h"
#include "output/label.h"
#include "output/output.h"
#include "output/ratios.h"
#include "output/svg_internal.h"
#include "output/utf8.h"

#define XPAD            SVG_XPAD
#define FRAME_H         16      /* a frame's rect is FRAME_H - 1 high */
#define GLYPH_W         SVG_GLYPH_W
#define TOP_PAD         72      /* title, subtitle, note */
#define BOTTOM_PAD      34      /* details and "Matched" */
#define TIP_CAP         4096    /* bytes of a frame text kept in its tooltip */
#define NONE            UINT32_MAX
#define SEARCH_FILL     "rgb(230,0,230)"

/* The drawn frames only: a stack's frames are merged into the tree with the stacks sorted by
 * frame text, so each node's stacks are one run of the sorted order and its children the runs
 * within it, found in name order; frames too narrow to draw are counted, not built. */
struct node {
	uint32_t frame;         /* NONE for the root, "all" */
	uint32_t parent;
	uint32_t depth;
	uint32_t first_kid, n_kids;     /* its children are nodes first_kid.. in name order */
	uint32_t lo, hi;        /* its stacks: tree.order[lo..hi) */
	bool drawn;
	double x;               /* left edge in px */
};

struct stack_ref {
	uint64_t key;           /* its first frames' ranks, for sorting (stack_key()) */
	const struct profile_stack *st;
	const uint64_t *vals;
};

struct sort_by {
	const uint32_t *rank;   /* of each frame's text */
	unsigned bits, levels;  /* bits per rank in a key, ranks in a key */
};

struct tree {
	struct node *v;
	uint64_t *vals;         /* n_vals per node: inclusive values, columns as in profile.h */
	size_t n, cap, n_vals;
	struct stack_ref *order;        /* the stacks sorted by their frames' texts, root first */
	uint64_t pruned;        /* frames with a value not drawn: too narrow, or above one */
	uint32_t max_depth;     /* of the drawn frames */
};

/* Frame texts as folded_frame_text() writes them (the tooltips, the order), their rank in byte
 * order, and the labels drawn in the boxes (label.h). */
struct texts {
	struct buf b;
	size_t *off;            /* n + 1 offsets into b */
	uint32_t *rank;
	size_t n;
	struct buf lb;          /* the labels: frame f's at lb.data + loff[f], NUL-terminated */
	size_t *loff;
};

struct text_ref {
	const char *s;
	uint32_t id;
};

static void tree_release(struct tree *t)
{
	free(t->v);
	free(t->vals);
	free(t->order);
}

static void texts_release(struct texts *tx)
{
	buf_release(&tx->b);
	buf_release(&tx->lb);
	free(tx->off);
	free(tx->loff);
	free(tx->rank);
}

/* A new node, its values 0: its id, or NONE when memory is short. */
static uint32_t tree_node(struct tree *t, uint32_t parent, uint32_t frame)
{
	if (t->n >= NONE)
		return NONE;
	if (t->n == t->cap) {
		/* v and vals share cap: it moves once both have grown (n_vals >= 1: the count) */
		size_t cap_v = t->cap, cap_vals = t->cap;

		if (array_grow((void **) &t->v, &cap_v, t->n + 1, sizeof(*t->v), 1024) < 0 ||
		    array_grow((void **) &t->vals, &cap_vals, t->n + 1,
			       t->n_vals * sizeof(*t->vals), 1024) < 0)
			return NONE;
		t->cap = cap_v;
	}
	t->v[t->n] = (struct node) { .frame = frame, .parent = parent,
				     .depth = parent == NONE ? 0 : t->v[parent].depth + 1 };
	memset(t->vals + t->n * t->n_vals, 0, t->n_vals * sizeof(*t->vals));
	return (uint32_t) t->n++;
}

static void add_vals(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t c = 0; c < n; c++)
		dst[c] = src[c] > UINT64_MAX - dst[c] ? UINT64_MAX : dst[c] + src[c];
}

/* The ranks of the first by->levels frames, each plus 1 (0: past the leaf), root first in the
 * high bits: keys compare as their stacks do as far as they go. */
static uint64_t stack_key(const struct profile_stack *st, const struct sort_by *by)
{
	uint64_t key = 0;

	for (uint32_t d = 0; d < by->levels; d++)
		key = key << by->bits | (d < st->depth ? by->rank[st->frames[d]] + 1 : 0);
	return key;
}

/* Orders stacks by the ranks of their frames' texts, root first; a stack before its extensions. */
static int cmp_stack(const void *a, const void *b, void *by)
{
	const struct stack_ref *ra = a, *rb = b;
	const struct profile_stack *x = ra->st, *y = rb->st;
	const uint32_t *r = ((const struct sort_by *) by)->rank;
	uint32_t n = x->depth < y->depth ? x->depth : y->depth;

	if (ra->key != rb->key)
		return ra->key < rb->key ? -1 : 1;
	for (uint32_t d = ((const struct sort_by *) by)->levels; d < n; d++) {
		uint32_t rx = r[x->frames[d]], ry = r[y->frames[d]];
		if (rx != ry)
			return rx < ry ? -1 : 1;
	}
	return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Frames with a value in column col at depths below the stacks' order[lo..hi) (which share
 * their first depth frames): each distinct path counted once, as the tree would hold them. */
static uint64_t count_subtree(const struct stack_ref *order, uint32_t lo, uint32_t hi,
			      uint32_t depth, size_t col)
{
	const struct profile_stack *prev = NULL;
	uint64_t n = 0;

	for (uint32_t i = lo; i < hi; i++) {
		const struct profile_stack *st = order[i].st;
		uint32_t same = depth;

		if (order[i].vals[col] == 0)
			continue;
		if (prev)
			while (same < prev->depth && same < st->depth &&
			       prev->frames[same] == st->frames[same])
				same++;
		n += st->depth - same;
		prev = st;
	}
	return n;
}

/* Merges the stacks of p into a tree of the frames drawn in column col: x in px (the graph
 * tw px wide), frames under min_width px pruned, counted in t->pruned. */
static int tree_build(struct tree *t, const struct profile *p, const struct texts *tx,
		      size_t col, double tw, double min_width)
{
	size_t n_stacks = profile_n_stacks(p);
	struct sort_by by = { tx->rank, 1, 0 };
	struct stack_ref *o;
	uint64_t total;

	t->n_vals = profile_n_values(p);
	if (n_stacks >= NONE)
		return -ENOMEM;
	o = t->order = malloc((n_stacks ? n_stacks : 1) * sizeof(*t->order));
	if (!o || tree_node(t, NONE, NONE) == NONE)
		return -ENOMEM;
	while (by.bits < 32 && tx->n >> by.bits)
		by.bits++;      /* ranks + 1 go up to tx->n */
	by.levels = 64 / by.bits;
	for (size_t i = 0; i < n_stacks; i++) {
		o[i] = (struct stack_ref) { 0, profile_stack(p, i), profile_values(p, i) };
		o[i].key = stack_key(o[i].st, &by);
		add_vals(t->vals, o[i].vals, t->n_vals);
	}
	qsort_r(o, n_stacks, sizeof(*o), cmp_stack, &by);
	total = t->vals[col];
	t->v[0].hi = (uint32_t) n_stacks;
	t->v[0].x = XPAD;
	t->v[0].drawn = total > 0;

	/* parents come before their children in t->v */
	for (size_t k = 0; k < t->n && t->v[0].drawn; k++) {
		uint32_t depth = t->v[k].depth, i = t->v[k].lo, hi = t->v[k].hi;
		uint64_t cum = 0;

		if (depth > t->max_depth)
			t->max_depth = depth;
		t->v[k].first_kid = (uint32_t) t->n;
		while (i < hi && o[i].st->depth == depth)
			i++;    /* the stacks ending here */
		while (i < hi) {
			uint32_t frame = o[i].st->frames[depth], j, kid;
			uint64_t v = 0;
			double x = t->v[k].x + (double) cum / (double) total * tw;

			for (j = i; j < hi && o[j].st->frames[depth] == frame; j++) {
				uint64_t add = o[j].vals[col];
				v = add > UINT64_MAX - v ? UINT64_MAX : v + add;
			}
			cum += v;
			if ((double) v / (double) total * tw < min_width) {
				t->pruned += v > 0 ? 1 + count_subtree(o, i, j, depth + 1, col) : 0;
				i = j;
				continue;
			}
			kid = tree_node(t, (uint32_t) k, frame);
			if (kid == NONE)
				return -ENOMEM;
			t->v[kid].lo = i;
			t->v[kid].hi = j;
			t->v[kid].x = x;
			t->v[kid].drawn = true;
			for (; i < j; i++)
				add_vals(t->vals + (size_t) kid * t->n_vals, o[i].vals, t->n_vals);
			t->v[k].n_kids++;
		}
	}
	return 0;
}

static int cmp_text_ref(const void *a, const void *b)
{
	const struct text_ref *x = a, *y = b;
	int c = strcmp(x->s, y->s);

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int texts_build(struct texts *tx, const struct profile *p, bool full_paths)
{
	struct text_ref *refs;
	struct label_paths lp;
	int r = 0;

	tx->n = profile_n_frames(p);
	buf_init(&tx->b);
	buf_init(&tx->lb);
	label_paths_init(&lp, p);
	tx->off = malloc((tx->n + 1) * sizeof(*tx->off));
	tx->loff = malloc((tx->n + 1) * sizeof(*tx->loff));
	tx->rank = malloc((tx->n ? tx->n : 1) * sizeof(*tx->rank));
	refs = malloc((tx->n ? tx->n : 1) * sizeof(*refs));
	if (!tx->off || !tx->loff || !tx->rank || !refs) {
		free(refs);
		return -ENOMEM;
	}
	for (uint32_t id = 0; id < tx->n && r >= 0; id++) {
		const struct profile_frame *f = profile_frame(p, id);

		tx->off[id] = tx->b.len;
		tx->loff[id] = tx->lb.len;
		r = folded_frame_text(f, &tx->b);
		if (r >= 0)
			r = buf_putc(&tx->b, '\0');
		if (r >= 0)
			r = full_paths ? label_frame_full(f, &tx->lb) : label_frame(f, &lp, &tx->lb);
		if (r >= 0)
			r = buf_putc(&tx->lb, '\0');
	}
	tx->off[tx->n] = tx->b.len;
	if (r >= 0) {
		for (uint32_t id = 0; id < tx->n; id++)
			refs[id] = (struct text_ref) { tx->b.data + tx->off[id], id };
		qsort(refs, tx->n, sizeof(*refs), cmp_text_ref);
		for (uint32_t k = 0; k < tx->n; k++)
			tx->rank[refs[k].id] = k;
	}
	free(refs);
	return r;
}

/* Writes s[0..n) as XML character data: markup characters escaped, characters XML 1.0 forbids
 * (controls but tab, newline and CR; U+FFFE, U+FFFF) and each invalid UTF-8 sequence as one
 * U+FFFD; at most max_chars characters. Errors show in ferror(out). */
static void xml_put(FILE *out, const char *s, size_t n, size_t max_chars)
{
	const unsigned char *u = (const unsigned char *) s;

	for (size_t i = 0, c = 0; i < n && c < max_chars; c++) {
		size_t skip, len = utf8_len(u + i, n - i, &skip);

		if (len == 0) {
			fputs("\xef\xbf\xbd", out);
			i += skip;
			continue;
		}
		if (u[i] == '&')
			fputs("&amp;", out);
		else if (u[i] == '<')
			fputs("&lt;", out);
		else if (u[i] == '>')
			fputs("&gt;", out);
		else if (u[i] == '"')
			fputs("&quot;", out);
		else if (u[i] == '\'')
			fputs("&#39;", out);
		else if ((u[i] < 0x20 && u[i] != '\t' && u[i] != '\n' && u[i] != '\r') ||
			 (len == 3 && u[i] == 0xef && u[i + 1] == 0xbf && u[i + 2] >= 0xbe))
			fputs("\xef\xbf\xbd", out);
		else
			fwrite(u + i, 1, len, out);
		i += len;
	}
}

void svg_xml_puts(FILE *out, const char *s)
{
	xml_put(out, s, strlen(s), SIZE_MAX);
}

/* Characters in s[0..n), counting each invalid sequence as one, stopping at limit. */
static size_t utf8_chars(const char *s, size_t n, size_t limit)
{
	const unsigned char *u = (const unsigned char *) s;
	size_t c = 0;

	for (size_t i = 0; i < n && c < limit; c++) {
		size_t skip, len = utf8_len(u + i, n - i, &skip);
		i += len ? len : skip;
	}
	return c;
}

/* sRGB channel c (0..255) in linear light, as WCAG 2 defines relative luminance. */
static double linear(unsigned c)
{
	double x = c / 255.0;

	return x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4);
}

bool svg_fill_dark(const unsigned rgb[3])
{
	double l = 0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2]);

	/* white's contrast (1.05 / (l + 0.05)) beats black's ((l + 0.05) / 0.05) */
	return l < SVG_DARK_LUMINANCE;
}

/* "1,234,567" */
static void put_count(FILE *out, uint64_t v)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long) v);

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			putc(',', out);
		putc(d[i], out);
	}
}

/* A fill stable by name: the kind picks the family, the name's hash the shade. */
static void kind_fill(enum frame_kind kind, const char *name, unsigned rgb[3])
{
	uint64_t h = hash_bytes(name, strlen(name), 0);
	unsigned a = h & 0xff, b = (h >> 8) & 0xff, c = (h >> 16) & 0xff;

	switch (kind) {
	case FRAME_PYTHON:      /* green to yellow */
		rgb[0] = 90 + a * 140 / 255;
		rgb[1] = 190 + b * 40 / 255;
		rgb[2] = 40 + c * 60 / 255;
		break;
	case FRAME_NATIVE:      /* orange to red */
		rgb[0] = 205 + a * 50 / 255;
		rgb[1] = 50 + b * 130 / 255;
		rgb[2] = c * 50 / 255;
		break;
	case FRAME_KERNEL:      /* blue */
		rgb[0] = 80 + a * 60 / 255;
		rgb[1] = 130 + b * 60 / 255;
		rgb[2] = 200 + c * 55 / 255;
		break;
	case FRAME_WAIT:        /* purple: time off the CPU, seen at a glance */
		rgb[0] = 150 + a * 50 / 255;
		rgb[1] = 90 + b * 40 / 255;
		rgb[2] = 200 + c * 55 / 255;
		break;
	default:                /* grey */
		rgb[0] = rgb[1] = rgb[2] = 160 + a * 50 / 255;
		break;
	}
}

static void put_fill(FILE *out, enum frame_kind kind, const char *name)
{
	unsigned rgb[3];

	kind_fill(kind, name, rgb);
	fprintf(out, "rgb(%u,%u,%u)", rgb[0], rgb[1], rgb[2]);
}

/* A differential graph (diff_merge() profile): col is BEFORE's column, col + 1 AFTER's; the
 * change of a node's inclusive share, after% - before% as diff_opts defines them, in 0..1. */
static double node_delta(const struct tree *t, uint32_t k, size_t col, bool raw)
{
	const uint64_t *v = t->vals + (size_t) k * t->n_vals;
	double tb = (double) t->vals[col], base = (double) t->vals[raw ? col : col + 1];

	return (base > 0 ? (double) v[col + 1] / base : 0) - (tb > 0 ? (double) v[col] / tb : 0);
}

/* White for no change, red for growth, blue for shrinking, by |delta| / max. */
static void diff_fill(double delta, double max, unsigned rgb[3])
{
	double i = max > 0 ? fmin(fabs(delta) / max, 1) : 0;
	unsigned fade = (unsigned) (255 - 255 * i + 0.5);

	rgb[0] = delta < 0 ? fade : 255;
	rgb[1] = delta != 0 ? fade : 255;
	rgb[2] = delta > 0 ? fade : 255;
}

static void put_diff_tip(FILE *out, const struct tree *t, uint32_t k, size_t col, bool raw)
{
	const uint64_t *v = t->vals + (size_t) k * t->n_vals;
	double tb = (double) t->vals[col], ta = (double) t->vals[col + 1];
	double base = raw ? tb : ta;
	double d = (double) v[col + 1] - (raw || tb <= 0 ? (double) v[col] : (double) v[col] * ta / tb);

	fputs("\nbefore: ", out);
	put_count(out, v[col]);
	if (tb > 0)
		fprintf(out, " (%.2f%%)", 100.0 * (double) v[col] / tb);
	fputs("\nafter: ", out);
	put_count(out, v[col + 1]);
	if (base > 0)
		fprintf(out, " (%.2f%%)", 100.0 * (double) v[col + 1] / base);
	fputs(d < 0 ? "\ndelta: -" : "\ndelta: +", out);
	put_count(out, fabs(d) >= 1.8e19 ? UINT64_MAX : (uint64_t) (fabs(d) + 0.5));
	fprintf(out, " (%+.2f pts)", 100.0 * node_delta(t, k, col, raw));
}

/* The headline of the event (the total change, in its unit), then what is compared and how. */
static int build_diff_subtitle(const struct profile *p, size_t col, const struct svg_opts *o,
			       struct buf *b)
{
	const struct profile_meta *m = profile_meta_const(p);
	const struct diff_side *s = o->diff_sides;
	int r = diff_headline(p, (col - 1) / 2, s ? &s[0] : NULL, s ? &s[1] : NULL, b);

	if (r >= 0 && m->target)
		r = buf_printf(b, "; %s", m->target);
	if (r >= 0)
		r = buf_printf(b, "; widths from %s, red grew, blue shrank; %s",
			       o->negate ? "BEFORE" : "AFTER",
			       o->diff_raw ? "raw counts" : "shares of each total");
	return r;
}

static int build_subtitle(const struct profile *p, size_t col, struct buf *b)
{
	const struct profile_event *ev = profile_event(p, col - 1);
	const struct profile_meta *m = profile_meta_const(p);
	int r = buf_puts(b, ev->name);

	if (r >= 0 && ev->freq)
		r = buf_printf(b, ", %llu Hz", (unsigned long long) ev->freq);
	else if (r >= 0 && ev->period)
		r = buf_printf(b, ", every %llu events", (unsigned long long) ev->period);
	if (r >= 0 && m->duration_ns)
		r = buf_printf(b, ", %.2f s", (double) m->duration_ns / 1e9);
	if (r >= 0 && m->target)
		r = buf_printf(b, ", %s", m->target);
	if (r >= 0 && m->python)
		r = buf_printf(b, ", Python %s", m->python);
	return r;
}

/* The ratios of a frame with values v, a line each, but ratio skip (the colour metric, written
 * first); those whose denominator is 0 left out. */
static void put_ratios(FILE *out, const struct ratios *ra, const uint64_t *v, size_t skip)
{
	char val[64];
	double x;

	for (size_t i = 0; i < ra->n; i++) {
		if (i == skip || !ratio_value(&ra->r[i], v, &x))
			continue;
		putc('\n', out);
		svg_xml_puts(out, ratio_label(ra, i));
		ratio_format(&ra->r[i], x, val, sizeof(val));
		fprintf(out, ": %s", val);
	}
}

/* Whether p has a frame of kind k. */
static bool has_kind(const struct profile *p, enum frame_kind k)
{
	for (uint32_t id = 0; id < profile_n_frames(p); id++)
		if (profile_frame(p, id)->kind == k)
			return true;
	return false;
}

/* Everything before the frames; a legend under the subtitle when cs is not NULL; the colour of
 * time off the CPU, at the left under the subtitle, when waits. */
static void write_header(FILE *out, const struct svg_opts *opts,
			 unsigned width, unsigned height, const char *subtitle, uint64_t pruned,
			 double min_width, const struct color_scale *cs, bool waits,
			 double hot_x, unsigned hot_y)
{
	const char *title = opts && opts->title ? opts->title : "Flame Graph";
	bool icicle = opts && opts->icicle;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"onload=\"init()\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<!-- hwspy " HWSPY_VERSION " flame graph -->\n"
		"<defs><linearGradient id=\"background\" x1=\"0\" x2=\"0\" y1=\"0\" y2=\"1\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%%\"/>"
		"</linearGradient></defs>\n"
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
		"#title { text-anchor: middle; font-size: 17px; }\n"
		"#subtitle, #note { text-anchor: middle; fill: #555; }\n"
		"#search, #matched { text-anchor: end; }\n"
		"#search, #unzoom { cursor: pointer; }\n"
		"#search:hover, #unzoom:hover, #search.active { fill: " SEARCH_FILL "; }\n"
		"#frames > g { cursor: pointer; }\n"
		"#frames > g:hover > rect { stroke: #000; stroke-width: 0.5; }\n"
		"#frames text { pointer-events: none; }\n"
		"#frames text.on-dark { fill: #fff; }\n"
		".hide { display: none; }\n"
		".parent { opacity: 0.5; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n"
		"var WIDTH = %u, XPAD = %g, GLYPH_W = %g, ICICLE = %s, SEARCH_FILL = \"" SEARCH_FILL "\";\n"
		"var HOT_X = \"%.2f\", HOT_Y = \"%u\";\n",
		width, height, width, height,
		width, XPAD, GLYPH_W, icicle ? "true" : "false", hot_x, hot_y);
	fputs(svg_script, out);
	fputs("]]></script>\n", out);
	if (cs)
		color_put_defs(out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#background)\"/>\n"
		"<text id=\"title\" x=\"%g\" y=\"24\">", width, height, width / 2.0);
	svg_xml_puts(out, title);
	fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%g\" y=\"44\">", width / 2.0);
	svg_xml_puts(out, subtitle);
	fputs("</text>\n", out);
	if (pruned)
		fprintf(out, "<text id=\"note\" x=\"%g\" y=\"62\">%llu frames narrower than %g px "
			"not drawn</text>\n", width / 2.0, (unsigned long long) pruned, min_width);
	if (cs)
		color_put_legend(out, cs, TOP_PAD - 4);
	if (waits) {
		fprintf(out, "<g id=\"legend-waits\"><rect x=\"%g\" y=\"52\" width=\"12\" "
			"height=\"12\" fill=\"", XPAD);
		put_fill(out, FRAME_WAIT, "[wait]");
		fprintf(out, "\"/><text x=\"%g\" y=\"62\">off the CPU: [wait: ...], "
			"[preempted]</text></g>\n", XPAD + 16);
	}
	fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%g\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%g\" y=\"24\">Search</text>\n"
		"<text id=\"details\" x=\"%g\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" x=\"%g\" y=\"%u\"> </text>\n",
		XPAD, width - XPAD, XPAD, height - 17, width - XPAD, height - 17);
}

/* How frames are drawn: the width column; for a differential graph, its columns. */
struct look {
	size_t wcol;            /* widths */
	const struct svg_opts *diff;    /* NULL: a plain flame graph */
	size_t dcol;            /* a differential graph's BEFORE column */
	double max_delta;       /* the largest |delta| of a drawn frame */
	bool samples_line;      /* "samples: N" (not when an event is the samples, as folded's) */
	const struct color_scale *color;        /* NULL: fills by kind */
};

static void write_frame(FILE *out, const struct profile *p, const struct tree *t,
			const struct texts *tx, const struct ratios *ra, uint32_t k, double tw,
			const struct look *lk, unsigned y)
{
	const struct node *nd = &t->v[k];
	const uint64_t *v = t->vals + (size_t) k * t->n_vals;
	const char *text = nd->frame == NONE ? "all" : tx->b.data + tx->off[nd->frame];
	const char *label = nd->frame == NONE ? "all" : tx->lb.data + tx->loff[nd->frame];
	size_t len = strlen(text), tip = len, col = lk->wcol, llen = strlen(label);
	double w = (double) v[col] / (double) t->vals[col] * tw;
	size_t fit = w > 3 ? (size_t) ((w - 3) / GLYPH_W) : 0;
	unsigned rgb[3];

	/* the tooltip: the text (cut at a character boundary), every event, the ratios */
	if (tip > TIP_CAP) {
		tip = TIP_CAP;
		while (tip > 0 && ((unsigned char) text[tip] & 0xc0) == 0x80)
			tip--;
	}
	fputs("<g><title>", out);
	xml_put(out, text, tip, SIZE_MAX);
	if (tip < len)
		fputs("...", out);
	for (size_t c = 1; c < t->n_vals && !lk->diff; c++) {
		putc('\n', out);
		svg_xml_puts(out, profile_event(p, c - 1)->name);
		fputs(": ", out);
		put_count(out, v[c]);
		if (t->vals[c])
			fprintf(out, " (%.1f%%)", 100.0 * (double) v[c] / (double) t->vals[c]);
	}
	if (lk->diff) {
		put_diff_tip(out, t, k, lk->dcol, lk->diff->diff_raw);
	} else {
		if (lk->samples_line) {
			fputs("\nsamples: ", out);
			put_count(out, v[0]);
		}
		if (lk->color)
			color_put_tip(out, lk->color, v);
		put_ratios(out, ra, v, lk->color ? lk->color->metric : SIZE_MAX);
	}
	if (lk->diff)
		diff_fill(node_delta(t, k, lk->dcol, lk->diff->diff_raw), lk->max_delta, rgb);
	else if (lk->color)
		color_fill(lk->color, v, rgb);
	else if (nd->frame == NONE)
		kind_fill(FRAME_SPECIAL, "all", rgb);
	else
		kind_fill(profile_frame(p, nd->frame)->kind, profile_frame(p, nd->frame)->name, rgb);
	fprintf(out, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" "
		"fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/><text%s x=\"%.2f\" y=\"%.1f\"", nd->x, y,
		w, FRAME_H - 1, rgb[0], rgb[1], rgb[2], svg_fill_dark(rgb) ? " class=\"on-dark\"" : "",
		nd->x + 3, y + 10.5);
	if (strcmp(label, text) != 0) {
		/* the whole label, for the script to cut again when a zoom widens the box */
		fputs(" data-label=\"", out);
		xml_put(out, label, llen, TIP_CAP);
		putc('"', out);
	}
	putc('>', out);
	if (fit >= 3) {
		if (utf8_chars(label, llen, fit + 1) > fit) {
			xml_put(out, label, llen, fit - 2);
			fputs("..", out);
		} else {
			xml_put(out, label, llen, SIZE_MAX);
		}
	}
	fputs("</text></g>\n", out);
}

/* The drawn frame with the most self weight in column col (its own value less its drawn
 * children's; the first in tree order among equals), or the root when no other is drawn. */
static uint32_t hot_node(const struct tree *t, size_t col)
{
	uint64_t best = 0;
	uint32_t hot = 0;

	for (uint32_t k = 1; k < t->n; k++) {
		const struct node *nd = &t->v[k];
		uint64_t self = t->vals[(size_t) k * t->n_vals + col];

		if (!nd->drawn)
			continue;
		for (uint32_t j = 0; j < nd->n_kids; j++) {
			uint64_t kid = t->vals[(size_t) (nd->first_kid + j) * t->n_vals + col];
			self = kid < self ? self - kid : 0;
		}
		if (hot == 0 || self > best) {
			hot = k;
			best = self;
		}
	}
	return hot;
}

/* The y of node nd's rect: the root at the bottom (flame) or at the top (icicle). */
static unsigned node_y(const struct node *nd, bool icicle, unsigned top, unsigned height)
{
	return icicle ? top + nd->depth * FRAME_H : height - BOTTOM_PAD - (nd->depth + 1) * FRAME_H;
}

/* The colour scale's ends from the drawn frames of t (widths from column col) that have a
 * value: 0 or -ENOMEM. */
static int fit_colors(const struct tree *t, struct color_scale *cs, size_t col)
{
	struct color_point *pts = malloc((t->n ? t->n : 1) * sizeof(*pts));
	size_t n = 0;
	double x;

	if (!pts)
		return -ENOMEM;
	for (size_t k = 0; k < t->n; k++) {
		const uint64_t *v = t->vals + k * t->n_vals;

		if (t->v[k].drawn && color_value(cs, v, &x))
			pts[n++] = (struct color_point) { x, v[col] };
	}
	color_scale_fit(cs, pts, n);
	free(pts);
	return 0;
}

int svg_write(const struct profile *p, const struct svg_opts *opts, FILE *out)
{
	size_t col = opts && opts->column ? opts->column : 1;
	double min_width = opts && opts->min_width_px > 0 ? opts->min_width_px : 0.1;
	unsigned width = opts && opts->width_px ? opts->width_px : 1200;
	bool icicle = opts && opts->icicle;
	struct tree t = { 0 };
	struct texts tx = { 0 };
	struct ratios ra;
	struct color_scale cs;
	struct buf subtitle;
	uint32_t *todo = NULL, hot;
	unsigned height, top;
	double tw;
	int r;

	bool diff = opts && opts->diff, color = opts && opts->color_by;
	struct look lk = { .wcol = col, .diff = diff ? opts : NULL, .dcol = col,
			   .samples_line = profile_find_event(p, "samples") < 0,
			   .color = color ? &cs : NULL };

	if (col + diff >= profile_n_values(p) || width <= 2 * XPAD || (diff && color))
		return -EINVAL;
	if (diff && !opts->negate)
		col = lk.wcol = col + 1;        /* widths from AFTER */
	tw = width - 2 * XPAD;
	buf_init(&subtitle);
	r = ratios_init(&ra, p);
	if (r >= 0 && color)
		r = color_scale_init(&cs, &ra, p, opts->color_by);
	if (r >= 0)
		r = texts_build(&tx, p, opts && opts->full_paths);
	if (r >= 0)
		r = tree_build(&t, p, &tx, col, tw, min_width);
	if (r >= 0 && color)
		r = fit_colors(&t, &cs, col);
	if (r >= 0)
		r = opts && opts->subtitle ? buf_puts(&subtitle, opts->subtitle) :
		    diff ? build_diff_subtitle(p, lk.dcol, opts, &subtitle) :
		    build_subtitle(p, col, &subtitle);
	if (r >= 0 && !(todo = malloc(t.n * sizeof(*todo))))
		r = -ENOMEM;
	if (r < 0)
		goto out;

	for (uint32_t k = 0; k < t.n && diff; k++)
		if (t.v[k].drawn)
			lk.max_delta = fmax(lk.max_delta, fabs(node_delta(&t, k, lk.dcol, opts->diff_raw)));
	top = TOP_PAD + (color ? COLOR_LEGEND_H : 0);
	height = (t.max_depth + 1) * FRAME_H + top + BOTTOM_PAD;
	hot = hot_node(&t, col);
	write_header(out, opts, width, height, subtitle.data, t.pruned, min_width, lk.color,
		     !diff && !color && has_kind(p, FRAME_WAIT), t.v[hot].x,
		     node_y(&t.v[hot], icicle, top, height));

	/* frames depth first, children in name order */
	fputs("<g id=\"frames\">\n", out);
	if (t.v[0].drawn) {
		size_t n = 0;

		todo[n++] = 0;
		while (n > 0) {
			uint32_t k = todo[--n];
			const struct node *nd = &t.v[k];
			unsigned y = node_y(nd, icicle, top, height);

			write_frame(out, p, &t, &tx, &ra, k, tw, &lk, y);
			for (uint32_t j = nd->n_kids; j-- > 0;)
				todo[n++] = nd->first_kid + j;
		}
	}
	fputs("</g>\n</svg>\n", out);
	if (fflush(out) != 0)
		r = errno ? -errno : -EIO;
	else if (ferror(out))
		r = -EIO;
out:
	free(todo);
	buf_release(&subtitle);
	ratios_release(&ra);
	texts_release(&tx);
	tree_release(&t);
	return r;
}
