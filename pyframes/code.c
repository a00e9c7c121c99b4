/*
 * code: code objects -> names, file names, first lines and line numbers, through a cache keyed
 * by the code object's address. Names are interned for the life of the cache, so a struct
 * py_frame handed out earlier stays valid when its cache entry is reused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
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

int pf_read_str(struct pf_mem *m, const struct py_layout *l, uint64_t addr, char *ret, size_t size)
{
	unsigned char head[128];
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
	if (length == 0)
		return 0;
	r = pf_read(m, data_addr, data, length * (size_t) kind);
	if (r < 0)
		return r;
	r = pf_ucs_to_utf8(data, length, kind, ret, size);
	return r < 0 ? r : 0;
}

/* ---- line tables ---- */

int pf_line_lnotab(const uint8_t *tab, size_t len, int first_line, int64_t byte_offset)
{
	int64_t addr = 0;
	int line = first_line;
	size_t i;

	/* pairs (bytecode delta, signed line delta): the line holds from addr on */
	for (i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > byte_offset)
			break;
		line += (int8_t) tab[i + 1];
	}
	return line;
}

int pf_line_310(const uint8_t *tab, size_t len, int first_line, int64_t byte_offset)
{
	int64_t start = 0, end = 0;
	int line = first_line, cur = first_line;
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
			return cur;
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
	int64_t addr = 0;
	int line = first_line;

	if (unit_index < 0)
		return first_line;
	/* entries: 1mcccLLL header (code c, length L+1 code units), then per code:
	 * 15 no location; 14 long (svarint line delta, varint end line, col, end col);
	 * 13 no column (svarint line delta); 10-12 one line, delta c-10, 2 column bytes;
	 * 0-9 short form, same line, 1 column byte */
	while (r.p < r.end && !r.bad) {
		uint8_t h = *r.p++;
		unsigned code = (h >> 3) & 15, n = (h & 7) + 1;
		int entry_line;
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
			line += (int) code - 10;
			loc_skip(&r, 2);
			break;
		default:
			loc_skip(&r, 1);
			break;
		}
		entry_line = none ? -1 : line;
		if (unit_index >= addr && unit_index < addr + n)
			return r.bad ? -1 : entry_line;
		addr += n;
	}
	return -1;
}

/* ---- interned strings ---- */

struct intern {
	char **slot;
	uint64_t *hash;
	size_t cap, n;
};

static void intern_release(struct intern *in)
{
	size_t i;

	for (i = 0; i < in->cap; i++)
		free(in->slot[i]);
	free(in->slot);
	free(in->hash);
	memset(in, 0, sizeof(*in));
}

static int intern_grow(struct intern *in)
{
	size_t ncap = in->cap ? in->cap * 2 : 1024, i;
	char **ns = calloc(ncap, sizeof(*ns));
	uint64_t *nh = calloc(ncap, sizeof(*nh));

	if (!ns || !nh) {
		free(ns);
		free(nh);
		return -ENOMEM;
	}
	for (i = 0; i < in->cap; i++) {
		size_t j;

		if (!in->slot[i])
			continue;
		for (j = in->hash[i] & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1))
			;
		ns[j] = in->slot[i];
		nh[j] = in->hash[i];
	}
	free(in->slot);
	free(in->hash);
	in->slot = ns;
	in->hash = nh;
	in->cap = ncap;
	return 0;
}

static const char *intern_get(struct intern *in, const char *s)
{
	size_t len = strlen(s), j;
	uint64_t h = hash_bytes(s, len, 0);

	if ((in->n + 1) * 4 > in->cap * 3 && intern_grow(in) < 0)
		return NULL;
	for (j = h & (in->cap - 1); in->slot[j]; j = (j + 1) & (in->cap - 1))
		if (in->hash[j] == h && strcmp(in->slot[j], s) == 0)
			return in->slot[j];
	in->slot[j] = strdup(s);
	if (!in->slot[j])
		return NULL;
	in->hash[j] = h;
	in->n++;
	return in->slot[j];
}

/* ---- code cache ---- */

#define CC_SLOTS        4096          /* power of two */
#define CC_REVALIDATE   64            /* walks between re-reads of a cached code header */

struct pf_code {
	uint64_t addr;                  /* 0 = empty */
	uint64_t r_name, r_file, r_table;  /* remote pointers, the validity key */
	uint64_t units;                 /* 3.11+: code units (ob_size) */
	uint64_t checked;               /* walk number of the last validation */
	const char *name, *file;
	uint8_t *table;
	size_t table_len;
	int first_line;
};

struct pf_codecache {
	struct pf_code slot[CC_SLOTS];
	size_t n;
	struct intern strs;
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
		memset(&cc->slot[i], 0, sizeof(cc->slot[i]));
	}
	cc->n = 0;
}

void pf_codecache_free(struct pf_codecache *cc)
{
	if (!cc)
		return;
	cc_clear(cc);
	intern_release(&cc->strs);
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
	char s[PF_MAX_STR];

	if (pf_read_str(m, l, addr, s, sizeof(s)) < 0)
		return intern_get(&cc->strs, "<unknown>");
	return intern_get(&cc->strs, s);
}

/* Reads the code header; fails with -EINVAL if it is not a code object of code_type. */
static int code_header(struct pf_mem *m, const struct py_layout *l, uint64_t code_type,
		       uint64_t addr, unsigned char *head)
{
	int r = pf_read(m, addr, head, l->co_size);

	if (r < 0)
		return r;
	if (code_type && pf_u64(head, l->ob_type) != code_type)
		return -EINVAL;
	return 0;
}

static int cc_fill(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
		   const unsigned char *head, uint64_t addr, struct pf_code *c)
{
	uint64_t name = pf_u64(head, l->co_qualname != PF_NONE ? l->co_qualname : l->co_name);
	uint64_t file = pf_u64(head, l->co_filename);
	uint64_t table = pf_u64(head, l->co_linetable);
	unsigned char bh[64];
	uint64_t tlen = 0;

	free(c->table);
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	c->r_name = name;
	c->r_file = file;
	c->r_table = table;
	c->first_line = (int) pf_u32(head, l->co_firstlineno);
	c->units = l->co_code_adaptive != PF_NONE ? pf_u64(head, l->ob_size) : 0;
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

static int code_line(const struct py_layout *l, const struct pf_code *c, int64_t instr)
{
	int line;

	if (instr < 0 || !c->table)
		return c->first_line;
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
	return line < 0 ? c->first_line : line;
}

int pf_code_resolve(struct pf_codecache *cc, struct pf_mem *m, const struct py_layout *l,
		    uint64_t code_type, uint64_t walk, uint64_t addr, int64_t instr,
		    struct py_frame *ret, struct pyframes_stats *st)
{
	unsigned char head[4096];
	size_t j = hash_u64(addr) & (CC_SLOTS - 1), probes;
	struct pf_code *c = NULL;
	int r;

	if (!pf_ptr_ok(addr))
		return -EINVAL;
	if (l->co_size > sizeof(head))
		return -EINVAL;
	for (probes = 0; probes < 16; probes++, j = (j + 1) & (CC_SLOTS - 1)) {
		if (cc->slot[j].addr == addr || cc->slot[j].addr == 0)
			break;
	}
	if (probes == 16) {
		/* crowded: start over (interned strings stay) */
		cc_clear(cc);
		j = hash_u64(addr) & (CC_SLOTS - 1);
	}
	c = &cc->slot[j];
	if (c->addr == addr) {
		bool stale = false;

		/* free checks: the instruction must lie inside this code object */
		if (l->co_code_adaptive != PF_NONE && instr >= 0 && (uint64_t) instr >= c->units)
			stale = true;
		/* every so often re-read the header: a freed and reused address shows here */
		if (!stale && walk - c->checked >= CC_REVALIDATE) {
			r = code_header(m, l, code_type, addr, head);
			if (r < 0)
				return r;
			if (pf_u64(head, l->co_qualname != PF_NONE ? l->co_qualname : l->co_name) != c->r_name ||
			    pf_u64(head, l->co_filename) != c->r_file ||
			    pf_u64(head, l->co_linetable) != c->r_table ||
			    (int) pf_u32(head, l->co_firstlineno) != c->first_line) {
				r = cc_fill(cc, m, l, head, addr, c);
				if (r < 0)
					return r;
			}
			c->checked = walk;
		}
		if (!stale) {
			st->code_cache_hits++;
			goto out;
		}
	}
	st->code_cache_misses++;
	r = code_header(m, l, code_type, addr, head);
	if (r < 0)
		return r;
	if (l->co_code_adaptive != PF_NONE && instr >= 0 && (uint64_t) instr >= pf_u64(head, l->ob_size))
		return -EINVAL;   /* the frame points outside its code: torn */
	if (c->addr == 0)
		cc->n++;
	r = cc_fill(cc, m, l, head, addr, c);
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
	return 0;
}
