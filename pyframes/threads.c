/*
 * threads: Python's names of the threads, read from threading's registry of live threads
 * (sys.modules['threading']._active: pthread ident -> Thread) and each Thread's _name and
 * _native_id. A small reader of dicts (combined, split, 3.11+ managed dicts and 3.13+ inline
 * values), str and int objects, for the layouts of 3.8-3.14. Memory of the target is
 * untrusted: counts are bounded, every index is checked against what it indexes, every pointer
 * goes through pf_ptr_ok(); a wrong answer is a wrong name, never a wrong read. The work is
 * bounded too: PYFRAMES_NAMES_MAX_ENTRIES entries of sys.modules, a module's dict and _active,
 * ATTRS_MAX of an instance's attributes, and READS_MAX remote reads in all (then the names
 * found so far).
 */
#include <errno.h>
#include <string.h>

#include "pyframes/pyframes_internal.h"

/* Fixed in every CPython 3.8-3.14 default x86-64 build (Include/object.h, cpython/object.h,
 * moduleobject.c, cpython/dictobject.h, longintrepr.h; checked with gdb on pyenv's builds) */
#define TP_BASICSIZE   32
#define TP_FLAGS       168
#define TP_DICTOFFSET  288
#define MD_DICT        16
#define MA_KEYS        32
#define MA_VALUES      40
#define LONG_SIZE      16     /* ob_size (<= 3.11), lv_tag (3.12+) */
#define LONG_DIGITS    24
#define MANAGED_DICT   (-24)  /* 3.11+: the managed dict (3.12: a dict, or values - 1) */
#define MANAGED_VALUES (-32)  /* 3.11: the values of a managed dict */
#define TPFLAGS_INLINE_VALUES (1u << 2)   /* 3.13+ */
#define TPFLAGS_MANAGED_DICT  (1u << 4)   /* 3.11+ */
#define BASICSIZE_MAX  4096
#define KEY_MAX        64     /* bytes of a key compared */
#define CHUNK          64     /* dict entries read at once */
#define ATTRS_MAX      256    /* entries of an instance's attributes looked at */
#define READS_MAX      16384  /* remote reads of one registry read: then the names so far */

/* Reads of the target's objects: a read that fails is a torn one (-EAGAIN), unless the target
 * is gone (-ESRCH). */
static int obj_read(struct pf_mem *m, uint64_t addr, void *buf, size_t len)
{
	int r = pf_read(m, addr, buf, len);

	if (r < 0)
		return r == -ESRCH ? r : -EAGAIN;
	return 0;
}

static int word_read(struct pf_mem *m, uint64_t addr, uint64_t *ret)
{
	int r = pf_read_u64(m, addr, ret);

	if (r < 0)
		return r == -ESRCH ? r : -EAGAIN;
	return 0;
}

/* A dict keys object, parsed: its entries and where a key and a value lie in one. */
struct dkeys {
	uint64_t entries;
	uint64_t n;            /* entries in use (dk_nentries), at most the bound */
	uint32_t esize, key_off, value_off;
};

static int keys_read(struct pf_mem *m, const struct py_layout *l, uint64_t addr, uint64_t limit,
		     struct dkeys *k)
{
	unsigned char h[40];
	uint64_t size, nent, index_bytes;
	int r;

	if (!pf_ptr_ok(addr))
		return -EAGAIN;
	r = obj_read(m, addr, h, sizeof(h));
	if (r < 0)
		return r;
	if (l->objs == PY_OBJS_38) {
		/* dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, dk_indices[] */
		size = pf_u64(h, 8);
		nent = pf_u64(h, 32);
		if (size < 8 || size > (1u << 26) || (size & (size - 1)))
			return -EAGAIN;
		index_bytes = size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : 4);
		k->entries = addr + 40 + index_bytes;
		k->esize = 24;
		k->key_off = 8;
		k->value_off = 16;
	} else {
		/* dk_refcnt, dk_log2_size, dk_log2_index_bytes, dk_kind, ..., dk_usable,
		 * dk_nentries, dk_indices[] */
		unsigned log2 = h[8], log2_ix = h[9], kind = h[10];

		if (log2 < 3 || log2 > 26 || log2_ix < log2 || log2_ix > log2 + 3 || kind > 2)
			return -EAGAIN;
		size = 1ull << log2;
		nent = pf_u64(h, 24);
		k->entries = addr + 32 + (1ull << log2_ix);
		/* DICT_KEYS_GENERAL: hash, key, value; UNICODE and SPLIT: key, value */
		k->esize = kind == 0 ? 24 : 16;
		k->key_off = kind == 0 ? 8 : 0;
		k->value_off = kind == 0 ? 16 : 8;
	}
	if (nent > size)
		return -EAGAIN;
	k->n = nent < limit ? nent : limit;
	return 0;
}

/* Entry i's key and value (0 when unreadable) of k, from chunk buf holding entries
 * [first, first + CHUNK). */
static int keys_chunk(struct pf_mem *m, const struct dkeys *k, uint64_t first,
		      unsigned char *buf, size_t *ret_n)
{
	size_t n = k->n - first < CHUNK ? (size_t) (k->n - first) : CHUNK;
	int r = obj_read(m, k->entries + first * k->esize, buf, n * k->esize);

	if (r < 0)
		return r;
	*ret_n = n;
	return 0;
}

static bool key_is(struct pf_mem *m, const struct py_layout *l, uint64_t key, const char *want)
{
	char s[KEY_MAX];

	return pf_ptr_ok(key) && pf_read_str(m, l, key, s, sizeof(s)) == 0 && strcmp(s, want) == 0;
}

/* The index of want among k's keys, with its value there (0 in a split table). */
static int keys_find(struct pf_mem *m, const struct py_layout *l, const struct dkeys *k,
		     const char *want, uint64_t *ret_index, uint64_t *ret_value)
{
	unsigned char buf[CHUNK * 24];

	for (uint64_t first = 0; first < k->n; first += CHUNK) {
		size_t n;
		int r = keys_chunk(m, k, first, buf, &n);

		if (r < 0)
			return r;
		for (size_t i = 0; i < n; i++) {
			if (!key_is(m, l, pf_u64(buf, (uint32_t) (i * k->esize + k->key_off)), want))
				continue;
			*ret_index = first + i;
			*ret_value = pf_u64(buf, (uint32_t) (i * k->esize + k->value_off));
			return 0;
		}
	}
	return -ENOENT;
}

/* Where split values start: a PyObject *[] (<= 3.12) or a _PyDictValues header of 8 bytes
 * (capacity, size, embedded, valid, padding) before it (3.13+). */
static uint64_t values_base(const struct py_layout *l, uint64_t values)
{
	return l->objs == PY_OBJS_313 ? values + 8 : values;
}

/* Value index of a split table whose values start at base. */
static int split_value(struct pf_mem *m, uint64_t base, uint64_t index, uint64_t *ret)
{
	if (!pf_ptr_ok(base) || index >= PYFRAMES_NAMES_MAX_ENTRIES)
		return -EAGAIN;
	return word_read(m, base + 8 * index, ret);
}

/* dict[want] for a dict object at dict with str keys (its first limit entries). */
static int dict_get(struct pf_mem *m, const struct py_layout *l, uint64_t dict, uint64_t limit,
		    const char *want, uint64_t *ret)
{
	unsigned char h[48];
	struct dkeys k;
	uint64_t index, value, values;
	int r;

	if (!pf_ptr_ok(dict))
		return -EAGAIN;
	r = obj_read(m, dict, h, sizeof(h));
	if (r < 0)
		return r;
	r = keys_read(m, l, pf_u64(h, MA_KEYS), limit, &k);
	if (r < 0)
		return r;
	r = keys_find(m, l, &k, want, &index, &value);
	if (r < 0)
		return r;
	values = pf_u64(h, MA_VALUES);
	if (values) {
		r = split_value(m, values_base(l, values), index, &value);
		if (r < 0)
			return r;
	}
	if (!pf_ptr_ok(value))
		return -ENOENT;
	*ret = value;
	return 0;
}

/* The value of split values at base for key want of the type's shared keys. */
static int cached_get(struct pf_mem *m, const struct py_layout *l, uint64_t type, uint64_t base,
		      uint64_t capacity, const char *want, uint64_t *ret)
{
	struct dkeys k;
	uint64_t keys, index, unused;
	int r;

	r = word_read(m, type + l->ht_cached_keys, &keys);
	if (r < 0)
		return r;
	r = keys_read(m, l, keys, ATTRS_MAX, &k);
	if (r < 0)
		return r;
	r = keys_find(m, l, &k, want, &index, &unused);
	if (r < 0)
		return r;
	if (index >= capacity)
		return -ENOENT;
	r = split_value(m, base, index, ret);
	if (r < 0)
		return r;
	return pf_ptr_ok(*ret) ? 0 : -ENOENT;
}

/* The instance attribute want of obj (a plain class's instance). */
static int attr_get(struct pf_mem *m, const struct py_layout *l, uint64_t obj, const char *want,
		    uint64_t *ret)
{
	unsigned char t[TP_DICTOFFSET + 8];
	uint64_t type, basic, flags, v;
	int64_t dictoff;
	int r;

	if (!pf_ptr_ok(obj))
		return -EAGAIN;
	r = word_read(m, obj + 8, &type);
	if (r < 0)
		return r;
	if (!pf_ptr_ok(type))
		return -EAGAIN;
	r = obj_read(m, type, t, sizeof(t));
	if (r < 0)
		return r;
	basic = pf_u64(t, TP_BASICSIZE);
	flags = pf_u64(t, TP_FLAGS);
	dictoff = (int64_t) pf_u64(t, TP_DICTOFFSET);
	if (basic < 16 || basic > BASICSIZE_MAX || (basic & 7))
		return -EAGAIN;
	if (l->objs == PY_OBJS_313 && (flags & TPFLAGS_INLINE_VALUES)) {
		unsigned char vh[8];

		r = obj_read(m, obj + basic, vh, sizeof(vh));
		if (r < 0)
			return r;
		if (vh[3])    /* valid: the attributes live here, not in a dict */
			return cached_get(m, l, type, obj + basic + 8, vh[0], want, ret);
	}
	if (l->objs != PY_OBJS_38 && (flags & TPFLAGS_MANAGED_DICT)) {
		if (l->objs == PY_OBJS_311) {
			r = word_read(m, obj + MANAGED_VALUES, &v);
			if (r < 0)
				return r;
			if (v)
				return cached_get(m, l, type, v, PYFRAMES_NAMES_MAX_ENTRIES, want, ret);
		}
		r = word_read(m, obj + MANAGED_DICT, &v);
		if (r < 0)
			return r;
		/* tagged: values - 1 (odd: values are aligned), not a dict */
		if (l->objs == PY_OBJS_312 && (v & 1))
			return cached_get(m, l, type, v + 1, PYFRAMES_NAMES_MAX_ENTRIES, want, ret);
		return v ? dict_get(m, l, v, ATTRS_MAX, want, ret) : -ENOENT;
	}
	if (dictoff <= 0 || dictoff > BASICSIZE_MAX)
		return -ENOENT;
	r = word_read(m, obj + (uint64_t) dictoff, &v);
	if (r < 0)
		return r;
	return v ? dict_get(m, l, v, ATTRS_MAX, want, ret) : -ENOENT;
}

/* A small non-negative int object (at most two 30-bit digits). */
static int long_get(struct pf_mem *m, const struct py_layout *l, uint64_t addr, uint64_t *ret)
{
	unsigned char h[LONG_DIGITS + 8];
	uint64_t ndigits;
	int r;

	if (!pf_ptr_ok(addr))
		return -EAGAIN;
	r = obj_read(m, addr, h, sizeof(h));
	if (r < 0)
		return r;
	if (l->objs == PY_OBJS_312 || l->objs == PY_OBJS_313) {
		uint64_t tag = pf_u64(h, LONG_SIZE);

		if ((tag & 3) == 1) {           /* zero */
			*ret = 0;
			return 0;
		}
		if ((tag & 3) != 0)             /* negative */
			return -EINVAL;
		ndigits = tag >> 3;
	} else {
		int64_t size = (int64_t) pf_u64(h, LONG_SIZE);

		if (size < 0)
			return -EINVAL;
		ndigits = (uint64_t) size;
	}
	if (ndigits > 2)
		return -EINVAL;
	*ret = 0;
	if (ndigits > 0)
		*ret = pf_u32(h, LONG_DIGITS) & 0x3fffffff;
	if (ndigits > 1)
		*ret |= (uint64_t) (pf_u32(h, LONG_DIGITS + 4) & 0x3fffffff) << 30;
	return 0;
}

/* One Thread object: its native id and name into ret. 0, or < 0 to leave it out. */
static int thread_one(struct pf_mem *m, const struct py_layout *l, uint64_t thread,
		      struct pyframes_thread_name *ret)
{
	uint64_t name, nid = 0, id = 0;
	int r;

	r = attr_get(m, l, thread, "_native_id", &nid);
	if (r < 0)
		return r;
	r = long_get(m, l, nid, &id);
	if (r < 0)
		return r;
	if (id == 0 || id > INT32_MAX)
		return -EINVAL;
	r = attr_get(m, l, thread, "_name", &name);
	if (r < 0)
		return r;
	r = pf_read_str(m, l, name, ret->name, sizeof(ret->name));
	if (r < 0)
		return r;
	ret->tid = (pid_t) id;
	return 0;
}

int pf_thread_names(struct pf_mem *m, const struct py_layout *l, uint64_t runtime,
		    struct pyframes_thread_name *ret, size_t max, size_t *ret_n)
{
	unsigned char buf[CHUNK * 24];
	uint64_t interp, modules, mod, md, active;
	struct dkeys k;
	uint64_t reads0;
	size_t n = 0;
	int r;

	*ret_n = 0;
	if (l->is_modules == PF_NONE || !l->objs)
		return -ENOTSUP;
	r = pf_read_u64(m, runtime + l->rt_interp_head, &interp);
	if (r < 0)
		return r;
	if (!pf_ptr_ok(interp))
		return -EAGAIN;
	r = word_read(m, interp + l->is_modules, &modules);
	if (r < 0)
		return r;
	if (!modules)
		return -ENOENT;
	r = dict_get(m, l, modules, PYFRAMES_NAMES_MAX_ENTRIES, "threading", &mod);
	if (r < 0)
		return r;
	r = word_read(m, mod + MD_DICT, &md);
	if (r < 0)
		return r;
	r = dict_get(m, l, md, PYFRAMES_NAMES_MAX_ENTRIES, "_active", &active);
	if (r < 0)
		return r;
	{
		unsigned char h[48];

		r = obj_read(m, active, h, sizeof(h));
		if (r < 0)
			return r;
		if (pf_u64(h, MA_VALUES))       /* _active is never a split table */
			return -EAGAIN;
		r = keys_read(m, l, pf_u64(h, MA_KEYS), PYFRAMES_NAMES_MAX_ENTRIES, &k);
		if (r < 0)
			return r;
	}
	reads0 = m->reads ? *m->reads : 0;
	for (uint64_t first = 0; first < k.n && n < max; first += CHUNK) {
		size_t got;

		/* a registry built to be slow to read (hostile): the names found so far */
		if (m->reads && *m->reads - reads0 > READS_MAX)
			break;

		r = keys_chunk(m, &k, first, buf, &got);
		if (r < 0)
			return r;
		for (size_t i = 0; i < got && n < max; i++) {
			uint64_t key = pf_u64(buf, (uint32_t) (i * k.esize + k.key_off));
			uint64_t thread = pf_u64(buf, (uint32_t) (i * k.esize + k.value_off));

			if (!key || !pf_ptr_ok(thread))
				continue;   /* a deleted entry */
			r = thread_one(m, l, thread, &ret[n]);
			if (r == -ESRCH)
				return r;
			if (r == 0)
				n++;
		}
	}
	*ret_n = n;
	return 0;
}
