/*
 * code: code objects -> names, file names, first lines and line numbers, through a cache keyed
 * by the code object's address. An address outlives its code object (freed, then taken by
 * another), so each walk checks every entry it uses: pf_code_validate_ident() reads a few identifying
 * header fields of all of them in one vectored read, and pf_code_resolve() fills afresh what no
 * longer matches. Names are interned for the life of the cache, so a struct py_frame handed out
 * earlier stays valid when its cache entry is reused.
 *
 * In a captured walk the identifying fields and the first bytes of the name and file name come
 * from the capture (the overlay), as they were at the sample: an entry must match those, names
 * included (a code object freed since, whose address, name and file pointers all went to
 * another one, differs in its names). A code object freed since the sample is named from the
 * capture alone (overlay_only: no read of memory that another object may hold now): a name
 * longer than the capture holds ends in "...", and its line is its first line unless the
 * capture happens to hold its line table too.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/strpool.h"
#include "pyframes/pyframes_internal.h"

/* ---- unicode ---- */

static size_t utf8_put(uint32_t c, char *out)
{
	if (c < 0x80) {
		out[0] = (char) c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char) (0xc0 | (c >> 6));
		out[1] = (char) (0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char) (0xe0 | (c >> 12));
		out[1] = (char) (0x80 | ((c >> 6) & 0x3f));
		out[2] = (char) (0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char) (0xf0 | (c >> 18));
	out[1] = (char) (0x80 | ((c >> 12) & 0x3f));
	out[2] = (char) (0x80 | ((c >> 6) & 0x3f));
	out[3] = (char) (0x80 | (c & 0x3f));
	return 4;
}

int pf_ucs_to_utf8(const void *data, size_t n, int kind, char *ret, size_t size)
{
	const unsigned char *p = data;
	size_t i, o = 0;

	if (size == 0)
		return -EINVAL;
	if (kind != 1 && kind != 2 && kind != 4) {
		ret[0] = '\0';
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		uint32_t c;
		char tmp[4];
		size_t k;

		if (kind == 1) {
			c = p[i];
		} else if (kind == 2) {
			uint16_t v;

			memcpy(&v, p + 2 * i, 2);
			c = v;
		} else {
			memcpy(&c, p + 4 * i, 4);
		}
		/* NUL would cut the C string; lone surrogates are legal in str but not in UTF-8 */
		if (c == 0 || c > 0x10ffff) {
			ret[o] = '\0';
			return -EINVAL;
		}
		if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd;
		k = utf8_put(c, tmp);
		if (o + k >= size)
			break;
		memcpy(ret + o, tmp, k);
		o += k;
	}
	ret[o] = '\0';
	return (int) o;
}

static int read_str(struct pf_mem *m, const struct py_layout *l, uint64_t addr, char *ret,
		    size_t size, bool *ret_cut);

int pf_read_str(struct pf_mem *m, const struct py_layout *l, uint64_t addr, char *ret, size_t size)
{
	bool cut;

	return read_str(m, l, addr, ret, size, &cut);
}

/* As pf_read_str(); with m->overlay_only, a compact string longer than the overlay holds is
 * cut to what it holds (*ret_cut). */
static int read_str(struct pf_mem *m, const struct py_layout *l, uint64_t addr, char *ret,
		    size_t size, bool *ret_cut)
{
	unsigned char head[PF_STR_HEAD_MAX];
	unsigned char data[PF_MAX_STR * 4];
	uint32_t state, hlen;
	uint64_t length, data_addr;
	int kind, r;
	bool compact, ascii;

	ret[0] = '\0';
	if (!pf_ptr_ok(addr))
		return -EFAULT;
	hlen = l->str_compact_size + 8;
	if (hlen > sizeof(head))
		return -EINVAL;
	/* the compact header; an ASCII string may end before it, so try the short one on failure */
	r = pf_read(m, addr, head, hlen);
	if (r == -EFAULT) {
		hlen = l->str_ascii_size;
		r = pf_read(m, addr, head, hlen);
	}
	if (r < 0)
		return r;
	state = pf_u32(head, l->str_state);
	length = pf_u64(head, l->str_length);
	kind = (int) ((state >> l->str_kind_shift) & 7);
	compact = (state >> l->str_compact_bit) & 1;
	ascii = (state >> l->str_ascii_bit) & 1;
	if (l->str_ready_bit != PF_NONE && !((state >> l->str_ready_bit) & 1))
		return -EINVAL;
	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	if (ascii && kind != 1)
		return -EINVAL;
	if (length > (1u << 30))
		return -EINVAL;
	if (compact) {
		data_addr = addr + (ascii ? l->str_ascii_size : l->str_compact_size);
	} else {
		/* legacy string: PyUnicodeObject.data.any follows the compact header */
		if (hlen < l->str_compact_size + 8)
			return -EFAULT;
		data_addr = pf_u64(head, l->str_compact_size);
		if (!pf_ptr_ok(data_addr & ~(uint64_t) 7))
			return -EFAULT;
	}
	if (length > PF_MAX_STR)
		length = PF_MAX_STR;
	*ret_cut = false;
	if (m->overlay_only && compact) {
		size_t have = pf_mem_covered(m, data_addr, length * (size_t) kind) / (size_t) kind;

		*ret_cut = have < length;
		length = have;
	}
	if (length == 0)
		return 0;
	r = pf_read(m, data_addr, data, length * (size_t) kind);
	if (r < 0)
		return r;
	r = pf_ucs_to_utf8(data, length, kind, ret, size);
	return r < 0 ? r : 0;
}

/* ---- line tables ---- */

/* A line reached by adding the table's deltas, as the caller's int: a table
 * from a hostile target can walk it anywhere, and a line outside 0..INT_MAX is
 * no line (-1). The sums are kept in 64 bits: at most 2^31 per entry, and a
 * table holds far fewer than 2^32 entries. */
static int line_out(int64_t line)
{
	return line < 0 || line > INT_MAX ? -1 : (int) line;
}

int pf_line_lnotab(const uint8_t *tab, size_t len, int first_line, int64_t byte_offset)
{
	int64_t addr = 0, line = first_line;
	size_t i;

	/* pairs (bytecode delta, signed line delta): the line holds from addr on */
	for (i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > byte_offset)
			break;
		line += (int8_t) tab[i + 1];
	}
	return line_out(line);
}

int pf_line_310(const uint8_t *tab, size_t len, int first_line, int64_t byte_offset)
{
	int64_t start = 0, end = 0, line = first_line, cur = first_line;
	size_t i;

	if (byte_offset < 0)
		return first_line;
	/* pairs (bytecode bytes covered, signed line delta; -128 = no line) */
	for (i = 0; i + 1 < len; i += 2) {
		int8_t ld = (int8_t) tab[i + 1];

		start = end;
		end = start + tab[i];
		if (ld == -128) {
			cur = -1;
		} else {
			line += ld;
			cur = line;
		}
		if (byte_offset >= start && byte_offset < end)
			return line_out(cur);
	}
	return -1;
}

struct loc_reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint32_t loc_varint(struct loc_reader *r)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (r->p >= r->end || shift > 30) {
			r->bad = true;
			return 0;
		}
		b = *r->p++;
		v |= (uint32_t) (b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int32_t loc_svarint(struct loc_reader *r)
{
	uint32_t u = loc_varint(r);

	return (u & 1) ? -(int32_t) (u >> 1) : (int32_t) (u >> 1);
}

static void loc_skip(struct loc_reader *r, size_t n)
{
	if ((size_t) (r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return;
	}
	r->p += n;
}

int pf_line_locations(const uint8_t *tab, size_t len, int first_line, int64_t unit_index)
{
	struct loc_reader r = { .p = tab, .end = tab + len };
	int64_t addr = 0, line = first_line;

	if (unit_index < 0)
		return first_line;
	/* entries: 1mcccLLL header (code c, length L+1 code units), then per code:
	 * 15 no location; 14 long (svarint line delta, varint end line, col, end col);
	 * 13 no column (svarint line delta); 10-12 one line, delta c-10, 2 column bytes;
	 * 0-9 short form, same line, 1 column byte */
	while (r.p < r.end && !r.bad) {
		uint8_t h = *r.p++;
		unsigned code = (h >> 3) & 15, n = (h & 7) + 1;
		int64_t entry_line;
		bool none = false;

		if (!(h & 0x80))
			return -1;   /* not at an entry start: corrupt */
		switch (code) {
		case 15:
			none = true;
			break;
		case 14:
			line += loc_svarint(&r);
			(void) loc_varint(&r);
			(void) loc_varint(&r);
			(void) loc_varint(&r);
			break;
		case 13:
			line += loc_svarint(&r);
			break;
		case 10:
		case 11:
		case 12:
			line += (int64_t) code - 10;
			loc_skip(&r, 2);
			break;
		default:
			loc_skip(&r, 1);
			break;
		}
		entry_line = none ? -1 : line;
		if (unit_index >= addr && unit_index < addr + n)
			return r.bad ? -1 : line_out(entry_line);
		addr += n;
	}
	return -1;
}

/* ---- code cache ---- */

#define CC_SLOTS        4096          /* power of two */
#define PF_LINE_MEMO    8             /* lines remembered per code (code_line()) */
#define CC_PROBES       16            /* slots tried before the cache starts over */
#define CC_BATCH        256           /* code objects checked per round of pf_code_validate_ident() */
#define CC_SPAN_MAX     256           /* header bytes read to check one code object */
#define CC_FIELDS       7             /* the fields that identify one (cc_fields()) */
#define CC_MERGE_MAX    (4 * PF_PAGE) /* longest range that reads several code objects' headers */
#define CC_SEEN_MAX     512           /* bytes of a code's captured names kept to compare */

struct pf_code {
	uint64_t addr;                  /* 0 = empty */
	uint64_t r_type, r_name, r_file, r_table;  /* remote values: the identity checked */
	uint64_t units;                 /* 3.11+: code units (ob_size) */
	uint64_t checked;               /* number of the last walk that found it current */
	uint64_t queued;                /* number of the last walk that asked to check it */
	uint64_t names_checked;         /* number of the last walk whose capture its names match */
	uint64_t ids_captured;          /* number of the last walk whose capture held its identity */
	unsigned char *seen;            /* the bytes of its name and file str objects in a capture
	                                 * they matched in (compact strings, each in one piece) */
	uint32_t seen_name, seen_file;  /* how many of each */
	const char *name, *file;
	uint8_t *table;
	size_t table_len;
	int first_line;
	uint32_t version;               /* 3.12+ co_version (pf_co_version()) */
	int64_t first_traceable;        /* 3.11+ _co_firsttraceable (0 where unknown or absurd) */
	/* code_line() of line_instr[k] was line_at[k], k < line_n: a caller's frame waits at one
	 * instruction sample after sample, a loop's innermost frame runs over a few (a table
	 * decoded from its start each time: in a long function, hundreds of entries) */
	uint8_t line_n, line_next;
	int line_at[PF_LINE_MEMO];
	int64_t line_instr[PF_LINE_MEMO];
};

struct pf_codecache {
	struct pf_code slot[CC_SLOTS];
	size_t n;
	struct strpool strs;
	/* one round of pf_code_validate_ident() */
	struct pf_code *ent[CC_BATCH];  /* entries to check, then sorted by address */
	uint32_t at[CC_BATCH];          /* where ent[i]'s header bytes land in buf */
	uint16_t in[CC_BATCH];          /* which range reads them */
	struct remote_range rng[CC_BATCH];
	bool ok[CC_BATCH];
	unsigned char buf[16 * PF_PAGE];
};

struct pf_codecache *pf_codecache_new(void)
{
	return calloc(1, sizeof(struct pf_codecache));
}

static void cc_clear(struct pf_codecache *cc)
{
	size_t i;

	for (i = 0; i < CC_SLOTS; i++) {
		free(cc->slot[i].table);
		free(cc->slot[i].seen);
		memset(&cc->slot[i], 0, sizeof(cc->slot[i]));
	}
	cc->n = 0;
}

void pf_codecache_free(struct pf_codecache *cc)
{
	if (!cc)
		return;
	cc_clear(cc);
	strpool_release(&cc->strs);
	free(cc);
}

int pf_code_check_type(struct pf_mem *m, const struct py_layout *l, uint64_t type_addr)
{
	uint64_t name_ptr;
	char name[8];
	int r;

	if (!pf_ptr_ok(type_addr))
		return -EFAULT;
	r = pf_read_u64(m, type_addr + l->tp_name, &name_ptr);
	if (r < 0)
		return r;
	if (!name_ptr || name_ptr >= (1ull << 47))
		return -EFAULT;
	r = pf_read(m, name_ptr, name, 5);
	if (r < 0)
		return r;
	return memcmp(name, "code", 5) == 0 ? 0 : -EINVAL;
}

static const char *cc_str(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
			  uint64_t addr)
{
	char s[PF_MAX_STR + 4];
	bool cut = false;

	if (read_str(m, l, addr, s, PF_MAX_STR, &cut) < 0)
		return strpool_intern(&cc->strs, "<unknown>", 9);
	if (cut)
		strcat(s, "...");
	return strpool_intern(&cc->strs, s, strlen(s));
}

/* Whether the string the capture holds at addr (its start, at least) is cached, a name of an
 * entry: true where the capture holds too little of it to tell. */
static bool str_captured_is(struct pf_mem *m, const struct py_layout *l, uint64_t addr,
			    const char *cached)
{
	char s[PF_MAX_STR];
	bool cut = false, cached_cut, only = m->overlay_only;
	size_t n, k;
	int r;

	m->overlay_only = true;
	r = read_str(m, l, addr, s, sizeof(s), &cut);
	m->overlay_only = only;
	if (r < 0)
		return true;
	n = strlen(s);
	k = strlen(cached);
	/* a name cut in an earlier capture ends in "...", after what that one held: the two agree
	 * as far as both go */
	cached_cut = k > 3 && !strcmp(cached + k - 3, "...");
	if (cached_cut)
		k -= 3;
	if (!cut && !cached_cut)
		return !strcmp(s, cached);
	return !strncmp(s, cached, n < k ? n : k) && (cut || n >= k) && (cached_cut || k >= n);
}

static uint32_t co_name_off(const struct py_layout *l)
{
	return l->co_qualname != PF_NONE ? l->co_qualname : l->co_name;
}

/* Reads the code header; fails with -EINVAL if it is not a code object of code_type. A
 * captured walk whose capture holds the identifying fields has them even where the memory is
 * gone (an arena freed since, the target exited): the rest reads as zeros. */
static int code_header(struct pf_mem *m, const struct py_layout *l, uint64_t code_type,
		       uint64_t addr, unsigned char *head)
{
	int r = pf_read(m, addr, head, l->co_size);

	if ((r == -EFAULT || r == -ESRCH) && m->n_spans > 0 &&
	    pf_mem_covered(m, addr + co_name_off(l), 8) == 8 &&
	    pf_mem_covered(m, addr + l->ob_type, 8) == 8) {
		pf_read_overlay(m, addr, head, l->co_size);
		r = 0;
	}
	if (r < 0)
		return r;
	if (code_type && pf_u64(head, l->ob_type) != code_type)
		return -EINVAL;
	return 0;
}

/* The fields cc_current() compares: their header offsets (ascending) and sizes; returns how
 * many (at most CC_FIELDS). */
static size_t cc_fields(const struct py_layout *l, uint32_t off[CC_FIELDS],
			uint32_t size[CC_FIELDS])
{
	uint32_t o[CC_FIELDS] = { l->ob_type, co_name_off(l), l->co_filename, l->co_linetable,
				  l->co_firstlineno, l->ob_size };
	uint32_t z[CC_FIELDS] = { 8, 8, 8, 8, 4, 8 };
	size_t i, j, n = l->co_code_adaptive != PF_NONE ? 6 : 5;

	if (pf_co_version(l) != PF_NONE) {
		o[n] = pf_co_version(l);
		z[n++] = 4;
	}

	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && off[j - 1] > o[i]; j--) {
			off[j] = off[j - 1];
			size[j] = size[j - 1];
		}
		off[j] = o[i];
		size[j] = z[i];
	}
	return n;
}

/* The header bytes [*ret_lo, *ret_hi) hold every field cc_current() compares. */
static void cc_span(const struct py_layout *l, uint32_t *ret_lo, uint32_t *ret_hi)
{
	uint32_t off[CC_FIELDS], size[CC_FIELDS];
	size_t i, n = cc_fields(l, off, size);

	*ret_lo = UINT32_MAX;
	*ret_hi = 0;
	for (i = 0; i < n; i++) {
		if (off[i] < *ret_lo)
			*ret_lo = off[i];
		if (off[i] + size[i] > *ret_hi)
			*ret_hi = off[i] + size[i];
	}
}

/* Is h (header bytes from offset base on) still the code object that c caches? A freed code
 * object whose address went to another one differs in at least one of these. */
static bool cc_current(const struct py_layout *l, const struct pf_code *c, const unsigned char *h,
		       uint32_t base)
{
	return pf_u64(h, l->ob_type - base) == c->r_type &&
	       pf_u64(h, co_name_off(l) - base) == c->r_name &&
	       pf_u64(h, l->co_filename - base) == c->r_file &&
	       pf_u64(h, l->co_linetable - base) == c->r_table &&
	       (int) pf_u32(h, l->co_firstlineno - base) == c->first_line &&
	       (l->co_code_adaptive == PF_NONE || pf_u64(h, l->ob_size - base) == c->units) &&
	       (pf_co_version(l) == PF_NONE || pf_u32(h, pf_co_version(l) - base) == c->version);
}

static int cc_fill(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
		   const unsigned char *head, uint64_t addr, struct pf_code *c)
{
	uint64_t name = pf_u64(head, co_name_off(l));
	uint64_t file = pf_u64(head, l->co_filename);
	uint64_t table = pf_u64(head, l->co_linetable);
	unsigned char bh[PF_BYTES_HEAD_MAX];
	uint64_t tlen = 0;

	free(c->table);
	free(c->seen);
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	c->r_type = pf_u64(head, l->ob_type);
	c->r_name = name;
	c->r_file = file;
	c->r_table = table;
	c->first_line = (int) pf_u32(head, l->co_firstlineno);
	c->units = l->co_code_adaptive != PF_NONE ? pf_u64(head, l->ob_size) : 0;
	c->version = pf_co_version(l) != PF_NONE ? pf_u32(head, pf_co_version(l)) : 0;
	if (l->co_firsttraceable != PF_NONE) {
		int32_t ft = (int32_t) pf_u32(head, l->co_firsttraceable);

		/* a code-unit index, only ever compared; past the end in a shim (3.13+'s
		 * _Py_InitCleanup: 4 of its 3 units), so that none of it is traceable */
		c->first_traceable = ft > 0 ? ft : 0;
	}
	c->name = cc_str(cc, m, l, name);
	c->file = cc_str(cc, m, l, file);
	if (!c->name || !c->file)
		return -ENOMEM;
	if (pf_ptr_ok(table) && l->bytes_sval + 1 <= sizeof(bh) &&
	    pf_read(m, table, bh, l->bytes_sval) == 0) {
		tlen = pf_u64(bh, l->ob_size);
		if (tlen > PF_MAX_LINETABLE)
			tlen = PF_MAX_LINETABLE;
		if (tlen > 0) {
			c->table = malloc(tlen);
			if (!c->table)
				return -ENOMEM;
			if (pf_read(m, table + l->bytes_sval, c->table, tlen) < 0) {
				free(c->table);
				c->table = NULL;
				tlen = 0;
			}
		}
	}
	c->table_len = tlen;
	return 0;
}

static int code_line(const struct py_layout *l, struct pf_code *c, int64_t instr)
{
	int line;

	if (instr < 0 || !c->table)
		return c->first_line;
	for (size_t k = 0; k < c->line_n; k++)
		if (c->line_instr[k] == instr)
			return c->line_at[k];
	/* line 0: a module's RESUME (3.12+), the line before its first; the code's first line */
	switch (l->lines) {
	case PY_LINES_LNOTAB:
		line = pf_line_lnotab(c->table, c->table_len, c->first_line, instr);
		break;
	case PY_LINES_310:
		line = pf_line_310(c->table, c->table_len, c->first_line, instr * 2);
		break;
	default:
		line = pf_line_locations(c->table, c->table_len, c->first_line, instr);
		break;
	}
	line = line <= 0 ? c->first_line : line;
	c->line_instr[c->line_next] = instr;
	c->line_at[c->line_next] = line;
	c->line_next = (uint8_t) ((c->line_next + 1) % PF_LINE_MEMO);
	if (c->line_n < PF_LINE_MEMO)
		c->line_n++;
	return line;
}

/* The slot that holds addr, else the first empty one on its probe path; NULL if all are taken. */
static struct pf_code *cc_slot(struct pf_codecache *cc, uint64_t addr)
{
	size_t j = hash_u64(addr) & (CC_SLOTS - 1), probes;

	for (probes = 0; probes < CC_PROBES; probes++, j = (j + 1) & (CC_SLOTS - 1))
		if (cc->slot[j].addr == addr || cc->slot[j].addr == 0)
			return &cc->slot[j];
	return NULL;
}

/* Marks ent[first..end) checked in this walk if the header bytes read for them (ranges
 * rng[0..nr)) still match. */
static int cc_check_ranges(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
			   uint64_t walk, uint32_t lo, size_t first, size_t end, size_t nr)
{
	size_t i;
	int r = pf_readv(m, cc->rng, nr, cc->ok);

	if (r < 0)
		return r;
	for (i = first; i < end; i++)
		if (cc->ok[cc->in[i]] && cc_current(l, cc->ent[i], cc->buf + cc->at[i], lo))
			cc->ent[i]->checked = walk;
	return 0;
}

static int cc_by_addr(const void *a, const void *b)
{
	uint64_t x = (*(struct pf_code *const *) a)->addr, y = (*(struct pf_code *const *) b)->addr;

	return x < y ? -1 : x > y;
}

/* Checks ent[0..k): each code object's header bytes [lo, hi), in as few ranges as they allow.
 * A read costs per range (and page) far more than per byte, so headers on one page or on two
 * neighbouring pages share a range, with the bytes between them (no hole can lie there: both
 * pages hold a header). */
static int cc_check_round(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
			  uint64_t walk, size_t k, uint32_t lo, uint32_t hi)
{
	size_t i, first = 0, nr = 0, used = 0, span = hi - lo;
	int r;

	qsort(cc->ent, k, sizeof(cc->ent[0]), cc_by_addr);
	for (i = 0; i < k; i++) {
		uint64_t s = cc->ent[i]->addr + lo, e = cc->ent[i]->addr + hi;
		struct remote_range *cur = nr ? &cc->rng[nr - 1] : NULL;
		uint64_t cur_end = cur ? cur->addr + cur->len : 0;

		if (cur && s >= cur_end && s / PF_PAGE <= (cur_end - 1) / PF_PAGE + 1 &&
		    e - cur->addr <= CC_MERGE_MAX && used + (e - cur_end) <= sizeof(cc->buf)) {
			used += e - cur_end;
			cur->len = e - cur->addr;
		} else {
			if (used + span > sizeof(cc->buf)) {
				r = cc_check_ranges(cc, m, l, walk, lo, first, i, nr);
				if (r < 0)
					return r;
				first = i;
				nr = 0;
				used = 0;
			}
			cc->rng[nr++] = (struct remote_range) {
				.addr = s, .buf = cc->buf + used, .len = span,
			};
			used += span;
		}
		cc->at[i] = (uint32_t) (used - span);
		cc->in[i] = (uint16_t) (nr - 1);
	}
	return cc_check_ranges(cc, m, l, walk, lo, first, k, nr);
}

/* A captured walk whose capture holds every field cc_current() compares of c (the capture's
 * identity pieces): is c the code the capture holds? Compared there, with no read of the
 * target, whose bytes of those fields the capture's would replace anyway. -ENOENT where the
 * capture does not hold them all. */
static int cc_captured_current(struct pf_mem *m, const struct py_layout *l, const struct pf_code *c,
			       const uint32_t *off, const uint32_t *size, size_t nf, uint32_t lo,
			       uint32_t hi)
{
	unsigned char head[CC_SPAN_MAX];

	if (!pf_overlay_fields(m, c->addr, off, size, nf, lo, hi, head))
		return -ENOENT;
	return cc_current(l, c, head, lo);
}

/* c's fields (off[k], size[k]) into head (at off[k] - lo) from its node's identity pieces (id
 * laid out as il), each piece checked to be c's: false where a field lies in none. */
static bool cc_ident_fields(const struct pf_code *c, const unsigned char *id,
			    const struct pf_ident *il, const uint32_t *off, const uint32_t *size,
			    size_t nf, uint32_t lo, unsigned char *head)
{
	for (size_t k = 0; k < nf; k++) {
		size_t at = 0;
		uint32_t j;

		for (j = 0; j < il->n; at += 8 + il->len[j], j++)
			if (off[k] >= il->off[j] && off[k] + size[k] <= il->off[j] + il->len[j])
				break;
		if (j == il->n || pf_u64(id, (uint32_t) at) != c->addr + il->off[j])
			return false;
		memcpy(head + off[k] - lo, id + at + 8 + off[k] - il->off[j], size[k]);
	}
	return true;
}

int pf_code_validate_ident(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
			   uint64_t walk, const struct py_frame *frames, size_t n,
			   const unsigned char *const *ident, const struct pf_ident *il)
{
	uint32_t lo, hi, off[CC_FIELDS], size[CC_FIELDS];
	size_t i, k = 0, nf = cc_fields(l, off, size);
	unsigned char head[CC_SPAN_MAX];
	int r;

	cc_span(l, &lo, &hi);
	if (hi - lo > CC_SPAN_MAX)
		return 0;   /* an odd layout: pf_code_resolve() checks each entry by itself */
	for (i = 0; i < n; i++) {
		struct pf_code *c = pf_ptr_ok(frames[i].code) ? cc_slot(cc, frames[i].code) : NULL;

		if (!c || c->addr != frames[i].code || c->checked == walk || c->queued == walk)
			continue;
		c->queued = walk;   /* a recursive stack names it many times: check it once */
		if (ident && ident[i] && il && cc_ident_fields(c, ident[i], il, off, size, nf, lo,
							       head))
			r = cc_current(l, c, head, lo);
		else
			r = cc_captured_current(m, l, c, off, size, nf, lo, hi);
		if (r >= 0) {
			c->ids_captured = walk;
			if (r)
				c->checked = walk;
			continue;
		}
		cc->ent[k++] = c;
		if (k == CC_BATCH) {
			r = cc_check_round(cc, m, l, walk, k, lo, hi);
			if (r < 0)
				return r;
			k = 0;
		}
	}
	return k ? cc_check_round(cc, m, l, walk, k, lo, hi) : 0;
}

/* The capture's bytes of the compact str object at addr, where all that str_captured_is() reads
 * of it (its header and text) lies in one piece: how many (*ret points to them); else 0. */
static size_t str_captured_bytes(const struct pf_mem *m, const struct py_layout *l, uint64_t addr,
				 const unsigned char **ret)
{
	bool more;
	size_t n = pf_overlay_piece(m, addr, ret, &more), len, whole;
	uint32_t state;
	unsigned kind;

	if (!*ret || n < l->str_ascii_size || l->str_ascii_size < l->str_state + 4 ||
	    l->str_ascii_size < l->str_length + 8)
		return 0;
	state = pf_u32(*ret, l->str_state);
	kind = (state >> l->str_kind_shift) & 7;
	if (!((state >> l->str_compact_bit) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return 0;
	len = pf_u64(*ret, l->str_length) < PF_MAX_STR ? (size_t) pf_u64(*ret, l->str_length)
						       : PF_MAX_STR;
	whole = ((state >> l->str_ascii_bit) & 1 ? l->str_ascii_size : l->str_compact_size) +
		len * kind;
	/* cut short by the piece's end, unless the next piece goes on with it */
	return n >= whole ? whole : more ? 0 : n;
}

/* Remembers the capture's bytes of c's names, which matched. */
static void cc_names_seen(struct pf_code *c, const unsigned char *name, size_t nn,
			  const unsigned char *file, size_t fn)
{
	unsigned char *b;

	if (nn + fn > CC_SEEN_MAX)
		return;
	b = realloc(c->seen, nn + fn);
	if (!b)
		return;
	memcpy(b, name, nn);
	memcpy(b + nn, file, fn);
	c->seen = b;
	c->seen_name = (uint32_t) nn;
	c->seen_file = (uint32_t) fn;
}

/* A captured walk whose capture holds addr's identifying fields: do the names the capture
 * holds match entry c's? Once per walk (a recursive stack names one code object many times);
 * where the capture holds the very bytes of a capture they matched in, no decoding. */
static bool cc_names_match(struct pf_mem *m, const struct py_layout *l, uint64_t walk,
			   uint64_t addr, struct pf_code *c)
{
	const unsigned char *nb, *fb;
	size_t nn, fn;

	if (m->n_spans == 0 || c->names_checked == walk)
		return true;
	if (c->ids_captured != walk && (pf_mem_covered(m, addr + co_name_off(l), 8) < 8 ||
					pf_mem_covered(m, addr + l->co_filename, 8) < 8))
		return true;
	nn = str_captured_bytes(m, l, c->r_name, &nb);
	fn = str_captured_bytes(m, l, c->r_file, &fb);
	if (!nb && !fb) {
		/* names the capture left out (a thread's records send them once): nothing to
		 * compare, no search of the overlay for them */
		c->names_checked = walk;
		return true;
	}
	if (c->seen && nn && fn && nn == c->seen_name && fn == c->seen_file &&
	    memcmp(c->seen, nb, nn) == 0 && memcmp(c->seen + nn, fb, fn) == 0) {
		c->names_checked = walk;
		return true;
	}
	if (!str_captured_is(m, l, c->r_name, c->name) || !str_captured_is(m, l, c->r_file, c->file))
		return false;
	c->names_checked = walk;
	if (nn && fn)
		cc_names_seen(c, nb, nn, fb, fn);
	return true;
}

/* A captured walk: is the code object at addr, as the capture holds its header (head), still
 * there now? Else it was freed since the sample, and only the capture may name it. */
static bool cc_gone(struct pf_mem *m, const struct py_layout *l, uint64_t addr,
		    const unsigned char *head)
{
	unsigned char now[PF_CODE_READ_MAX];
	struct pf_code c = { 0 };

	if (m->n_spans == 0 || pf_mem_covered(m, addr + co_name_off(l), 8) < 8)
		return false;
	if (pf_read_live(m, addr, now, l->co_size) < 0)
		return true;
	c.r_type = pf_u64(head, l->ob_type);
	c.r_name = pf_u64(head, co_name_off(l));
	c.r_file = pf_u64(head, l->co_filename);
	c.r_table = pf_u64(head, l->co_linetable);
	c.first_line = (int) pf_u32(head, l->co_firstlineno);
	c.units = l->co_code_adaptive != PF_NONE ? pf_u64(head, l->ob_size) : 0;
	c.version = pf_co_version(l) != PF_NONE ? pf_u32(head, pf_co_version(l)) : 0;
	return !cc_current(l, &c, now, 0);
}

int pf_code_resolve(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
		    uint64_t code_type, uint64_t walk, uint64_t addr, int64_t instr,
		    struct py_frame *ret, struct pyframes_stats *st)
{
	unsigned char head[PF_CODE_READ_MAX];
	struct pf_code *c;
	bool fits, gone;
	int r;

	if (!pf_ptr_ok(addr))
		return -EINVAL;
	if (l->co_size > sizeof(head))
		return -EINVAL;
	c = cc_slot(cc, addr);
	if (!c) {
		/* crowded: start over (interned strings stay) */
		cc_clear(cc);
		st->code_cache_clears++;
		c = &cc->slot[hash_u64(addr) & (CC_SLOTS - 1)];
	}
	/* free check: the instruction must lie inside this code object */
	fits = c->addr == addr &&
	       (l->co_code_adaptive == PF_NONE || instr < 0 || (uint64_t) instr < c->units);
	if (fits && c->checked == walk && cc_names_match(m, l, walk, addr, c)) {
		st->code_cache_hits++;
		goto out;
	}
	r = code_header(m, l, code_type, addr, head);
	if (r < 0)
		return r;
	if (fits && cc_current(l, c, head, 0) && cc_names_match(m, l, walk, addr, c)) {
		c->checked = walk;
		st->code_cache_hits++;
		goto out;
	}
	/* not cached, or freed and its address reused by another code object */
	st->code_cache_misses++;
	if (l->co_code_adaptive != PF_NONE && instr >= 0 && (uint64_t) instr >= pf_u64(head, l->ob_size))
		return -EINVAL;   /* the frame points outside its code: torn */
	if (c->addr == 0)
		cc->n++;
	/* freed since the sample: named from the capture alone */
	gone = cc_gone(m, l, addr, head);
	st->gone_named += gone;
	m->overlay_only = gone;
	r = cc_fill(cc, m, l, head, addr, c);
	m->overlay_only = false;
	if (r == 0)
		c->names_checked = walk;
	if (r < 0) {
		c->addr = 0;
		return r;
	}
	c->checked = walk;
out:
	ret->code = addr;
	ret->name = c->name;
	ret->file = c->file;
	ret->first_line = c->first_line;
	ret->line = code_line(l, c, instr);
	return c->first_traceable > 0 && instr < c->first_traceable ? 1 : 0;
}
