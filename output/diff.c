/* diff: BEFORE and AFTER merged into one profile, the functions that changed most, the
 * `stack before after` lines FlameGraph's difffolded.pl writes, and the text report. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/buf.h"
#include "output/label.h"
#include "output/output.h"

#define DEFAULT_TOP 20

/* A profile read from a folded file: one column of counts with no event name. */
static bool is_unnamed(const struct profile *p)
{
	return profile_n_events(p) == 1 && strcmp(profile_event(p, 0)->name, "samples") == 0;
}

/* Frame of `from` interned into `to`, thread frames as NONE (dropped); a Python frame's file
 * as label_path(lp, ...) gives it (lp NULL: the file as it is). */
static int copy_frame(struct profile *to, const struct profile_frame *f, bool ignore_lines,
		      const struct label_paths *lp, uint32_t *ret_id)
{
	struct profile_frame g = { .kind = f->kind, .name = f->name };

	/* what the frame's folded text holds, no more: a pprof file's native frames carry a
	 * source file and line that a folded file's do not */
	if (f->kind == FRAME_PYTHON) {
		g.file = lp && f->file ? label_path(lp, f->file) : f->file;
		g.line = ignore_lines ? 0 : f->line;
	} else if (f->kind == FRAME_NATIVE) {
		g.module = f->module;
	}
	return profile_frame_id(to, &g, ret_id);
}

/* Whether f is native code without a symbol, named as hwspy names it: "MODULE+0xHEX", with its
 * module beside it ("mod.so+0x1a2b [mod.so]": module "mod.so") or not (a folded file whose
 * frames do not repeat the module: module NULL). Then *ret_module, *ret_len: MODULE. A module
 * beside it must be MODULE, or MODULE's base name: "foo+0x10 [libc.so.6]" is a symbol plus an
 * offset, not nameless code. */
static bool native_anonymous(const struct profile_frame *f, const char **ret_module,
			     size_t *ret_len)
{
	const char *plus = NULL, *hex, *base;
	size_t len;

	if (f->kind != FRAME_NATIVE)
		return false;
	for (const char *s = strstr(f->name, "+0x"); s; s = strstr(s + 1, "+0x"))
		plus = s;
	if (!plus || plus == f->name)
		return false;
	hex = plus + 3;
	if (!*hex || hex[strspn(hex, "0123456789abcdefABCDEF")] != '\0')
		return false;
	len = (size_t) (plus - f->name);
	if (f->module) {
		base = f->name + len;
		while (base > f->name && base[-1] != '/')
			base--;
		if (!(strlen(f->module) == len && !strncmp(f->module, f->name, len)) &&
		    !(strlen(f->module) == (size_t) (plus - base) &&
		      !strncmp(f->module, base, (size_t) (plus - base))))
			return false;
	}
	*ret_module = f->name;
	*ret_len = len;
	return true;
}

/* Adds every stack of `from` to `to`: event columns ev_from[i] -> 1 + 2i + side. */
static int add_side(struct profile *to, const struct profile *from, const int *ev_from,
		    size_t n_shared, int side, const struct diff_opts *opts)
{
	bool ignore_lines = opts && opts->ignore_lines;
	struct label_paths lp;
	size_t nf = profile_n_frames(from), nv = profile_n_values(to);
	uint32_t *map = malloc((nf ? nf : 1) * sizeof(*map)), *frames = NULL;
	uint64_t values[1 + 2 * PROFILE_MAX_EVENTS];
	size_t cap = 0;
	uint32_t none;
	int r = 0;

	if (!map)
		return -ENOMEM;
	/* each side's own scripts' directory: /src/v1/app.py and /src/v2/app.py are app.py */
	label_paths_init(&lp, from);
	r = profile_frame_id(to, &(struct profile_frame) { .kind = FRAME_SPECIAL,
							   .name = "[no frames]" }, &none);
	for (uint32_t f = 0; f < nf && r >= 0; f++) {
		const struct profile_frame *pf = profile_frame(from, f);

		if (pf->kind == FRAME_THREAD)
			map[f] = UINT32_MAX;
		else
			r = copy_frame(to, pf, ignore_lines, opts && opts->exact_paths ? NULL : &lp,
				       &map[f]);
	}
	for (size_t i = 0; i < profile_n_stacks(from) && r >= 0; i++) {
		const struct profile_stack *st = profile_stack(from, i);
		const uint64_t *v = profile_values(from, i);
		size_t depth = 0;
		bool any = false;

		memset(values, 0, nv * sizeof(*values));
		if (side == 1)
			values[0] = v[0];
		for (size_t e = 0; e < n_shared; e++) {
			values[1 + 2 * e + side] = v[1 + ev_from[e]];
			any |= values[1 + 2 * e + side] != 0;
		}
		if (!any)
			continue;
		if (array_grow((void **) &frames, &cap, st->depth, sizeof(*frames), 64) < 0) {
			r = -ENOMEM;
			break;
		}
		for (uint32_t d = 0; d < st->depth; d++)
			if (st->frames[d] < nf && map[st->frames[d]] != UINT32_MAX)
				frames[depth++] = map[st->frames[d]];
		r = depth ? profile_add(to, 0, frames, depth, values) :
			    profile_add(to, 0, &none, 1, values);
	}
	free(frames);
	free(map);
	return r;
}

int diff_merge(const struct profile *before, const struct profile *after,
	       const struct diff_opts *opts, struct profile **ret)
{
	const char *names[PROFILE_MAX_EVENTS];
	int ev_before[PROFILE_MAX_EVENTS / 2], ev_after[PROFILE_MAX_EVENTS / 2];
	size_t n = 0;
	struct profile *m;
	struct buf target;
	int r;

	for (size_t e = 0; e < profile_n_events(after) && n < PROFILE_MAX_EVENTS / 2; e++) {
		int b = profile_find_event(before, profile_event(after, e)->name);

		if (b >= 0) {
			ev_before[n] = b;
			ev_after[n++] = (int) e;
		}
	}
	if (n == 0 && (is_unnamed(before) || is_unnamed(after))) {
		ev_before[0] = ev_after[0] = 0;
		n = 1;
	}
	if (n == 0)
		return -ENOENT;
	for (size_t e = 0; e < n; e++) {
		/* name the pair after the side that has a real name */
		const struct profile *named = is_unnamed(after) ? before : after;
		size_t idx = named == after ? (size_t) ev_after[e] : (size_t) ev_before[e];

		names[2 * e] = names[2 * e + 1] = profile_event(named, idx)->name;
	}
	m = profile_new(names, 2 * n);
	if (!m)
		return -ENOMEM;
	r = add_side(m, before, ev_before, n, 0, opts);
	if (r >= 0)
		r = add_side(m, after, ev_after, n, 1, opts);
	buf_init(&target);
	if (r >= 0 && profile_meta_const(before)->target && profile_meta_const(after)->target) {
		r = buf_printf(&target, "%s -> %s", profile_meta_const(before)->target,
			       profile_meta_const(after)->target);
		if (r >= 0)
			r = profile_set_target(m, target.data);
	}
	buf_release(&target);
	if (r < 0) {
		profile_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

size_t diff_n_events(const struct profile *merged)
{
	return profile_n_events(merged) / 2;
}

/* Shares of b and a in percent, and the delta in counts, as output.h defines them. */
struct shares {
	double tb, ta;          /* the totals */
	bool raw;
};

static double pct_before(const struct shares *s, uint64_t b)
{
	return s->tb > 0 ? 100.0 * (double) b / s->tb : 0;
}

static double pct_after(const struct shares *s, uint64_t a)
{
	double base = s->raw ? s->tb : s->ta;
	return base > 0 ? 100.0 * (double) a / base : 0;
}

static double count_delta(const struct shares *s, uint64_t b, uint64_t a)
{
	if (s->raw || s->tb <= 0)
		return (double) a - (double) b;
	return (double) a - (double) b * s->ta / s->tb;
}

static void shares_init(struct shares *s, const struct profile *m, size_t event,
			const struct diff_opts *opts)
{
	s->tb = (double) profile_total(m, diff_before_col(event));
	s->ta = (double) profile_total(m, diff_after_col(event));
	s->raw = opts && opts->raw;
}

struct func_acc {
	struct diff_func row;
	size_t last_stack;      /* the stack that counted it last (+1): once per stack */
	size_t name_off;        /* its text in the names */
};

static int cmp_func(const void *x, const void *y)
{
	const struct diff_func *a = x, *b = y;

	if (fabs(a->self_delta) != fabs(b->self_delta))
		return fabs(a->self_delta) < fabs(b->self_delta) ? 1 : -1;
	if (fabs(a->total_delta) != fabs(b->total_delta))
		return fabs(a->total_delta) < fabs(b->total_delta) ? 1 : -1;
	return strcmp(a->name, b->name);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* The functions of a merged profile (frames without their line) and their weights. */
struct func_tab {
	struct profile *funcs;  /* interns them: function i is frame i */
	uint32_t *func_of;      /* merged frame id -> function */
	struct func_acc *acc;   /* per function */
	size_t n;
};

static void func_tab_release(struct func_tab *ft)
{
	profile_free(ft->funcs);
	free(ft->func_of);
	free(ft->acc);
}

/* Function `f` of the table: the frame without its line; with fold, native code without a
 * symbol as its module alone, "[MODULE]" (one row for all its offsets). */
static int func_of_frame(struct profile *funcs, const struct profile_frame *f, bool fold,
			 struct buf *scratch, uint32_t *ret_id, bool *ret_folded)
{
	const char *mod;
	size_t len;
	int r;

	*ret_folded = fold && native_anonymous(f, &mod, &len);
	if (!*ret_folded)
		return copy_frame(funcs, f, true, NULL, ret_id);
	scratch->len = 0;
	r = buf_printf(scratch, "[%.*s]", (int) len, mod);
	if (r < 0)
		return r;
	return profile_frame_id(funcs, &(struct profile_frame) { .kind = FRAME_NATIVE,
								 .name = scratch->data }, ret_id);
}

/* fold: native code without a symbol in one function per module (func_of_frame()). */
static int func_tab_build(struct func_tab *ft, const struct profile *merged, size_t event,
			  bool fold)
{
	size_t nf = profile_n_frames(merged), bc = diff_before_col(event), ac = diff_after_col(event);
	const char *unnamed = "samples";
	struct buf scratch;
	bool *folded = NULL;
	int r = 0;

	*ft = (struct func_tab) { 0 };
	ft->funcs = profile_new(&unnamed, 1);
	ft->func_of = malloc((nf ? nf : 1) * sizeof(*ft->func_of));
	folded = calloc(nf ? nf : 1, sizeof(*folded));
	if (!ft->funcs || !ft->func_of || !folded) {
		free(folded);
		return -ENOMEM;
	}
	buf_init(&scratch);
	for (uint32_t f = 0; f < nf && r >= 0; f++)
		r = func_of_frame(ft->funcs, profile_frame(merged, f), fold, &scratch,
				  &ft->func_of[f], &folded[f]);
	buf_release(&scratch);
	if (r >= 0) {
		ft->n = profile_n_frames(ft->funcs);
		ft->acc = calloc(ft->n ? ft->n : 1, sizeof(*ft->acc));
		if (!ft->acc)
			r = -ENOMEM;
	}
	for (uint32_t f = 0; f < nf && r >= 0; f++)
		if (folded[f])
			ft->acc[ft->func_of[f]].row.native_module = true;
	free(folded);
	if (r < 0)
		return r;
	for (size_t i = 0; i < profile_n_stacks(merged); i++) {
		const struct profile_stack *st = profile_stack(merged, i);
		const uint64_t *v = profile_values(merged, i);
		struct func_acc *leaf;

		if (st->depth == 0 || (v[bc] == 0 && v[ac] == 0))
			continue;
		leaf = &ft->acc[ft->func_of[st->frames[st->depth - 1]]];
		leaf->row.self_before = sat_add(leaf->row.self_before, v[bc]);
		leaf->row.self_after = sat_add(leaf->row.self_after, v[ac]);
		for (uint32_t d = 0; d < st->depth; d++) {
			struct func_acc *fa = &ft->acc[ft->func_of[st->frames[d]]];

			if (fa->last_stack == i + 1)
				continue;
			fa->last_stack = i + 1;
			fa->row.total_before = sat_add(fa->row.total_before, v[bc]);
			fa->row.total_after = sat_add(fa->row.total_after, v[ac]);
		}
	}
	return 0;
}

int diff_functions(const struct profile *merged, size_t event, const struct diff_opts *opts,
		   struct diff_func **ret, size_t *ret_n)
{
	struct diff_func *rows = NULL;
	struct func_tab ft;
	struct buf text;
	struct shares sh;
	size_t out = 0;
	int r;

	if (event >= diff_n_events(merged))
		return -EINVAL;
	buf_init(&text);
	r = func_tab_build(&ft, merged, event, !(opts && opts->native_offsets));
	if (r < 0)
		goto out;
	/* the names, then the rows and the names in one block, so that free(*ret) frees both */
	shares_init(&sh, merged, event, opts);
	for (uint32_t f = 0; f < ft.n && r >= 0; f++) {
		struct diff_func *row = &ft.acc[f].row;

		if (row->total_before == 0 && row->total_after == 0)
			continue;
		ft.acc[f].name_off = text.len;
		r = label_frame_full(profile_frame(ft.funcs, f), &text);
		if (r >= 0)
			r = buf_putc(&text, '\0');
		row->self_delta = pct_after(&sh, row->self_after) - pct_before(&sh, row->self_before);
		row->total_delta = pct_after(&sh, row->total_after) -
				   pct_before(&sh, row->total_before);
		out++;
	}
	if (r >= 0 && !(rows = malloc(out * sizeof(*rows) + text.len + 1)))
		r = -ENOMEM;
	if (r >= 0) {
		char *names = (char *) (rows + out);
		size_t k = 0;

		memcpy(names, text.data ? text.data : "", text.len);
		names[text.len] = '\0';
		for (uint32_t f = 0; f < ft.n; f++) {
			if (ft.acc[f].row.total_before == 0 && ft.acc[f].row.total_after == 0)
				continue;
			rows[k] = ft.acc[f].row;
			rows[k++].name = names + ft.acc[f].name_off;
		}
		qsort(rows, out, sizeof(*rows), cmp_func);
		*ret = rows;
		*ret_n = out;
	}
out:
	buf_release(&text);
	func_tab_release(&ft);
	return r;
}

int diff_common(const struct profile *merged, size_t event, double *ret_before,
		double *ret_after)
{
	size_t bc = diff_before_col(event), ac = diff_after_col(event);
	double in_b = 0, in_a = 0, tb, ta;
	struct func_tab ft;
	int r;

	if (event >= diff_n_events(merged))
		return -EINVAL;
	r = func_tab_build(&ft, merged, event, false);
	for (size_t i = 0; i < profile_n_stacks(merged) && r >= 0; i++) {
		const struct profile_stack *st = profile_stack(merged, i);
		const uint64_t *v = profile_values(merged, i);

		for (uint32_t d = 0; d < st->depth; d++) {
			uint32_t f = ft.func_of[st->frames[d]];
			const struct diff_func *row = &ft.acc[f].row;

			if (profile_frame(ft.funcs, f)->kind != FRAME_SPECIAL &&
			    row->total_before > 0 && row->total_after > 0) {
				in_b += (double) v[bc];
				in_a += (double) v[ac];
				break;
			}
		}
	}
	func_tab_release(&ft);
	if (r < 0)
		return r;
	tb = (double) profile_total(merged, bc);
	ta = (double) profile_total(merged, ac);
	*ret_before = tb > 0 ? in_b / tb : 0;
	*ret_after = ta > 0 ? in_a / ta : 0;
	return 0;
}

struct dline {
	size_t off;             /* into the text buffer, then */
	const char *s;          /* the text, once the buffer is complete */
	uint64_t before, after;
};

static int cmp_dline(const void *x, const void *y)
{
	const struct dline *a = x, *b = y;

	return strcmp(a->s, b->s);
}

int diff_folded_write(const struct profile *merged, size_t event, const struct diff_opts *opts,
		      FILE *out)
{
	size_t bc = diff_before_col(event), ac = diff_after_col(event), n = 0;
	size_t ns = profile_n_stacks(merged), nf = profile_n_frames(merged);
	struct dline *lines;
	size_t *ft_off;
	struct buf text, ft;    /* the lines; every frame's text */
	struct shares sh;
	int r = 0;

	if (event >= diff_n_events(merged))
		return -EINVAL;
	shares_init(&sh, merged, event, opts);
	lines = malloc((ns ? ns : 1) * sizeof(*lines));
	ft_off = malloc((nf + 1) * sizeof(*ft_off));
	buf_init(&text);
	buf_init(&ft);
	if (!lines || !ft_off) {
		r = -ENOMEM;
		goto out;
	}
	/* every frame's text, rendered once */
	for (uint32_t f = 0; f < nf && r >= 0; f++) {
		ft_off[f] = ft.len;
		r = folded_frame_text(profile_frame(merged, f), &ft);
	}
	ft_off[nf] = ft.len;
	for (size_t i = 0; i < ns && r >= 0; i++) {
		const struct profile_stack *st = profile_stack(merged, i);
		const uint64_t *v = profile_values(merged, i);
		double b = (double) v[bc];

		if (v[bc] == 0 && v[ac] == 0)
			continue;
		if (!sh.raw && sh.tb > 0)
			b = b * sh.ta / sh.tb;
		lines[n] = (struct dline) { .off = text.len, .after = v[ac],
					    .before = b >= 1.8e19 ? UINT64_MAX : (uint64_t) llround(b) };
		for (uint32_t d = 0; d < st->depth && r >= 0; d++) {
			if (d)
				r = buf_putc(&text, ';');
			if (r >= 0) {
				uint32_t f = st->frames[d];

				r = buf_append(&text, ft.data + ft_off[f], ft_off[f + 1] - ft_off[f]);
			}
		}
		if (r >= 0)
			r = buf_putc(&text, '\0');
		n++;
	}
	if (r >= 0) {
		for (size_t i = 0; i < n; i++)
			lines[i].s = text.data + lines[i].off;
		qsort(lines, n, sizeof(*lines), cmp_dline);
		for (size_t i = 0; i < n; i++) {
			/* two stacks can have one text (frames that differ only in what folded
			 * cannot show): one line */
			uint64_t b = lines[i].before, a = lines[i].after;

			while (i + 1 < n && strcmp(lines[i].s, lines[i + 1].s) == 0) {
				i++;
				b = sat_add(b, lines[i].before);
				a = sat_add(a, lines[i].after);
			}
			errno = 0;
			if (fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", lines[i].s, b, a) < 0) {
				r = errno ? -errno : -EIO;
				break;
			}
		}
	}
	if (r >= 0 && fflush(out) != 0)
		r = errno ? -errno : -EIO;
out:
	buf_release(&text);
	buf_release(&ft);
	free(ft_off);
	free(lines);
	return r;
}

/* "1.21e9" for big numbers, the number itself below 10^5; sign: "%+" or "%" */
static void fmt_num(char *d, size_t n, double v, bool sign)
{
	if (fabs(v) < 1e5) {
		snprintf(d, n, sign ? "%+.0f" : "%.0f", v);
	} else {
		int e = (int) floor(log10(fabs(v)));
		double m = v / pow(10, e);

		if (fabs(m) >= 9.995) {         /* 9.996e5 rounds to 10.00: one more digit */
			m /= 10;
			e++;
		}
		snprintf(d, n, sign ? "%+.2fe%d" : "%.2fe%d", m, e);
	}
}

/* A delta of the table: in seconds ("+0.249") for a time event's nanoseconds, else as
 * fmt_num() writes it. */
static void fmt_delta(char *d, size_t n, double v, bool time)
{
	if (time)
		snprintf(d, n, "%+.3g", v / 1e9);
	else
		fmt_num(d, n, v, true);
}

/* How a pair of numbers (>= 0) is written in the headline: one unit for both, picked by the
 * larger, with 3 significant digits on it ("3.14 s -> 1.18 s", "1.20 G -> 0.80 G"); the
 * smaller, at a tenth of the larger or more, keeps 2 or more. */
struct pair_fmt {
	double div;             /* the unit, in what the numbers count */
	const char *sym;        /* " s", " ms", " µs", " ns", " k", " M" ... or "" (exact, "1,234") */
	int decimals;
};

static struct pair_fmt pair_fmt(double x, double y, bool time)
{
	static const char *const si[] = { " k", " M", " G", " T", " P", " E" };
	struct pair_fmt pf = { .div = 1, .sym = "" };
	double big = fmax(x, y), v;

	if (time) {
		pf = big >= 1e9 ? (struct pair_fmt) { 1e9, " s", 0 } :
		     big >= 1e6 ? (struct pair_fmt) { 1e6, " ms", 0 } :
		     big >= 1e3 ? (struct pair_fmt) { 1e3, " \xc2\xb5s", 0 } :
				  (struct pair_fmt) { 1, " ns", 0 };
	} else if (big >= 1e5) {
		pf.div = 1e3;
		for (size_t i = 0; i < sizeof(si) / sizeof(si[0]); i++, pf.div *= 1e3) {
			pf.sym = si[i];
			if (big < pf.div * 999.5 || i + 1 == sizeof(si) / sizeof(si[0]))
				break;
		}
	} else {
		return pf;      /* exact */
	}
	v = big / pf.div;
	pf.decimals = v == 0 || v >= 99.95 ? 0 : v >= 9.995 ? 1 : v >= 0.9995 ? 2 : 3;
	return pf;
}

/* v as pf says, into b. */
static int put_pair_num(struct buf *b, const struct pair_fmt *pf, double v)
{
	char d[64];
	int n, r = 0;

	if (*pf->sym)
		return buf_printf(b, "%.*f%s", pf->decimals, v / pf->div, pf->sym);
	n = snprintf(d, sizeof(d), "%.0f", v);
	for (int i = 0; i < n && r >= 0; i++) {
		if (i && (n - i) % 3 == 0)
			r = buf_putc(b, ',');
		if (r >= 0)
			r = buf_putc(b, d[i]);
	}
	return r;
}

/* "X -> Y", and suffix after each ("/s") or after the pair (" of CPU"): in one unit, or each in
 * its own when the smaller is under a tenth of the larger (it would keep one digit or none). */
static int put_pair(struct buf *b, double x, double y, bool time, const char *each,
		    const char *after)
{
	bool apart = fmin(x, y) < fmax(x, y) / 10;
	struct pair_fmt pf = apart ? pair_fmt(x, x, time) : pair_fmt(x, y, time);
	int r = put_pair_num(b, &pf, x);

	if (apart)
		pf = pair_fmt(y, y, time);
	if (r >= 0)
		r = buf_printf(b, "%s -> ", each);
	if (r >= 0)
		r = put_pair_num(b, &pf, y);
	if (r >= 0)
		r = buf_printf(b, "%s%s%s", each, *after ? " " : "", after);
	return r;
}

/* What a time event per second of the recording is: CPUs busy, threads off the CPU, threads. */
static const char *rate_words(enum profile_unit u)
{
	return u == PROFILE_UNIT_OFF_CPU_NS ? "threads waiting" :
	       u == PROFILE_UNIT_WALL_NS ? "threads" : "CPUs";
}

int diff_headline(const struct profile *merged, size_t event, const struct diff_side *before,
		  const struct diff_side *after, struct buf *out)
{
	const char *ev;
	double tb, ta;
	enum profile_unit u;
	bool time, rates;
	int r;

	if (event >= diff_n_events(merged))
		return -EINVAL;
	ev = profile_event(merged, 2 * event)->name;
	tb = (double) profile_total(merged, diff_before_col(event));
	ta = (double) profile_total(merged, diff_after_col(event));
	u = profile_event_unit(ev);
	time = u != PROFILE_UNIT_COUNT;
	r = buf_printf(out, "%s: ", ev);
	if (r >= 0 && before && after && before->plain != after->plain) {
		/* a folded file's counts against an event in its unit: only the shares compare */
		r = put_pair(out, tb, ta, false, "", "");
		return r >= 0 ? buf_printf(out, " (%s is a folded file's counts, of no known unit: "
					   "compare the shares)", before->plain ? "BEFORE" :
					   "AFTER") : r;
	}
	if (r >= 0)
		r = put_pair(out, tb, ta, time, "", profile_unit_words(u));
	if (r >= 0 && tb > 0)
		r = buf_printf(out, ", %+.1f%%", 100.0 * (ta - tb) / tb);
	rates = before && after && before->duration_ns && after->duration_ns;
	if (r < 0 || !rates)
		return r;
	tb /= (double) before->duration_ns;     /* per ns */
	ta /= (double) after->duration_ns;
	r = buf_puts(out, " (");
	if (r >= 0 && time)
		r = buf_printf(out, "%.2f %s -> %.2f %s", tb, rate_words(u), ta, rate_words(u));
	else if (r >= 0)
		r = put_pair(out, tb * 1e9, ta * 1e9, false, "/s", "");
	if (r >= 0 && tb > 0)
		r = buf_printf(out, ", %+.1f%%", 100.0 * (ta / tb - 1));
	if (r >= 0)
		r = buf_putc(out, ')');
	return r;
}

int diff_table_write(const struct profile *merged, const struct diff_side *before,
		     const struct diff_side *after, const struct diff_opts *opts, size_t top,
		     FILE *out)
{
	bool raw = opts && opts->raw, mixed = before && after && before->plain != after->plain;
	struct buf head;
	int r = 0;

	if (!top)
		top = DEFAULT_TOP;
	buf_init(&head);
	if (before && after && before->name && after->name)
		fprintf(out, "before: %s\nafter:  %s\n", before->name, after->name);
	fprintf(out, "shares: %s\n", raw ? "of BEFORE's total (--no-normalize)" :
		"of each profile's own total (normalised)");
	for (size_t e = 0; e < diff_n_events(merged) && r >= 0; e++) {
		/* deltas of a time event in seconds, of the rest in counts */
		bool time = !mixed && profile_event_is_time(profile_event(merged, 2 * e)->name);
		const char *folded = NULL;      /* a row of native code in one row per module */
		struct diff_func *rows = NULL;
		struct shares sh;
		size_t n = 0;

		r = diff_functions(merged, e, opts, &rows, &n);
		if (r < 0)
			break;
		shares_init(&sh, merged, e, opts);
		head.len = 0;
		r = diff_headline(merged, e, before, after, &head);
		if (r < 0) {
			free(rows);
			break;
		}
		fprintf(out, "\n%s\n", head.data);
		fprintf(out, "%7s %7s %7s %10s  %7s %7s %7s %10s  %s\n",
			"self", "", "", "", "total", "", "", "", "");
		fprintf(out, "%7s %7s %7s %10s  %7s %7s %7s %10s  %s\n",
			"before", "after", "delta", "delta", "before", "after", "delta", "delta",
			"function");
		fprintf(out, "%7s %7s %7s %10s  %7s %7s %7s %10s\n",
			"%", "%", "pts", time ? "s" : "count", "%", "%", "pts", time ? "s" : "count");
		for (size_t i = 0; i < n && i < top; i++) {
			const struct diff_func *f = &rows[i];
			char d1[48], d2[48];

			if (fabs(f->self_delta) < 0.005 && fabs(f->total_delta) < 0.005) {
				/* ranked last: the rest did not change (at the 0.01 shown) */
				fprintf(out, "%s\n", i ? "(the other functions did not change)" :
				       "(no function changed)");
				n = i;
				break;
			}

			fmt_delta(d1, sizeof(d1), count_delta(&sh, f->self_before, f->self_after), time);
			fmt_delta(d2, sizeof(d2), count_delta(&sh, f->total_before, f->total_after),
				  time);
			if (f->native_module && !folded)
				folded = f->name;
			fprintf(out, "%7.2f %7.2f %+7.2f %10s  %7.2f %7.2f %+7.2f %10s  %s\n",
				pct_before(&sh, f->self_before), pct_after(&sh, f->self_after),
				f->self_delta, d1,
				pct_before(&sh, f->total_before), pct_after(&sh, f->total_after),
				f->total_delta, d2, f->name);
		}
		if (folded)
			fprintf(out, "(%s: the module's code without symbols, in one row; "
				"--native-offsets splits it by address)\n", folded);
		if (n > top) {
			size_t more = 0;        /* that changed: unchanged ones rank last */

			while (top + more < n && (fabs(rows[top + more].self_delta) >= 0.005 ||
						  fabs(rows[top + more].total_delta) >= 0.005))
				more++;
			if (more)
				fprintf(out, "(%zu more function%s changed; --top N shows more)\n", more,
					more == 1 ? "" : "s");
		}
		free(rows);
	}
	buf_release(&head);
	if (r >= 0 && fflush(out) != 0)
		r = errno ? -errno : -EIO;
	else if (r >= 0 && ferror(out))
		r = -EIO;
	return r;
}
