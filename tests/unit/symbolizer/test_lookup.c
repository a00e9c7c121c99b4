/* Address -> frames against real modules: pyenv's libpython (symtab + DWARF, dlopen'ed after
 * symbolizer_new, so found by refresh), Debian's stripped python3.11 (.dynsym only, module+offset
 * in between) and libz (a nameless function is one frame: module+its FDE's start), libstdc++
 * (demangling), the vdso and a JIT perf map for this process. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "symbolizer/symbolizer.h"
#include "symbolizer/symbolizer_internal.h"

#define LIBPYTHON "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"
#define DEB_PYTHON "/usr/bin/python3.11"
#define LIBZ "libz.so.1"

struct elfsym {
	uint64_t value, size;
};

/* Calls fn with each section of the ELF file path, its header and name, until fn returns
 * non-zero: that, or 0. */
static int elf_sections(const char *path,
			int (*fn)(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
				  void *arg), void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	Elf_Scn *scn = NULL;
	size_t strndx;
	Elf *e;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (r == 0 && e && elf_getshdrstrndx(e, &strndx) == 0 &&
	       (scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(e, strndx, sh.sh_name)))
			r = fn(e, scn, &sh, n, arg);
	}
	if (e)
		elf_end(e);
	close(fd);
	return r;
}

struct syms_arg {
	unsigned int table;
	int (*fn)(const char *name, const GElf_Sym *s, void *arg);
	void *arg;
};

static int syms_cb(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *name, void *arg)
{
	struct syms_arg *a = arg;
	Elf_Data *d;
	int r = 0;

	(void) name;
	if (sh->sh_type != a->table || !(d = elf_getdata(scn, NULL)))
		return 0;
	for (size_t i = 0; sh->sh_entsize && i < sh->sh_size / sh->sh_entsize && r == 0; i++) {
		GElf_Sym s;
		const char *sname;

		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
		    s.st_value == 0)
			continue;
		sname = elf_strptr(e, sh->sh_link, s.st_name);
		if (sname)
			r = a->fn(sname, &s, a->arg);
	}
	return r;
}

/* All FUNC symbols of one table (SHT_SYMTAB or SHT_DYNSYM) of a file; calls fn for each, until
 * it returns non-zero: that, or 0. */
static int elf_syms(const char *path, unsigned int table,
		    int (*fn)(const char *name, const GElf_Sym *s, void *arg), void *arg)
{
	struct syms_arg a = { table, fn, arg };

	return elf_sections(path, syms_cb, &a);
}

struct find_arg {
	const char *name;
	struct elfsym found;
};

static int find_cb(const char *name, const GElf_Sym *s, void *arg)
{
	struct find_arg *a = arg;

	if (strcmp(name, a->name) != 0)
		return 0;
	a->found.value = s->st_value;
	a->found.size = s->st_size;
	return 1;
}

static bool elf_find(const char *path, unsigned int table, const char *name, struct elfsym *ret)
{
	struct find_arg a = { .name = name };

	if (elf_syms(path, table, find_cb, &a) != 1)
		return false;
	*ret = a.found;
	return true;
}

/* ---- .eh_frame, walked whole with libdw (the symbolizer searches .eh_frame_hdr instead) ---- */

struct fde {
	uint64_t start, end;     /* ELF vaddrs */
};

struct fde_list {
	struct fde *v;
	size_t n, cap;
};

/* The FDE pointer encoding of a CIE ('R' of a "z..." augmentation), or -1 if not found. */
static int cie_fde_encoding(const Dwarf_CIE *c)
{
	const uint8_t *d = c->augmentation_data, *e = d + c->augmentation_data_size;

	if (!d || c->augmentation[0] != 'z')
		return -1;
	for (const char *a = c->augmentation + 1; *a && d < e; a++) {
		if (*a == 'R')
			return *d;
		if (*a == 'L') {
			d++;
		} else if (*a == 'P') {   /* personality: encoding, then a 2, 4 or 8 byte pointer */
			int size = (*d & 0x07) == 2 ? 2 : (*d & 0x07) == 3 ? 4 : 8;

			d += 1 + size;
		} else if (*a != 'S' && *a != 'B') {
			return -1;
		}
	}
	return -1;
}

/* The FDEs of path's .eh_frame whose initial location is pcrel|sdata4 (GCC's and clang's). */
static void eh_fdes(const char *path, struct fde_list *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct cie_enc {
		Dwarf_Off off;
		int enc;
	} cies[512];
	size_t n_cies = 0, shstrndx;
	Elf_Scn *scn = NULL;
	Elf *e;

	memset(ret, 0, sizeof(*ret));
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && elf_getshdrstrndx(e, &shstrndx) == 0 && (scn = elf_nextscn(e, scn))) {
		Dwarf_CFI_Entry ent;
		Dwarf_Off off = 0, next;
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame") != 0 || !(d = elf_getdata(scn, NULL)))
			continue;
		for (; dwarf_next_cfi((const unsigned char *)elf_getident(e, NULL), d, true, off, &next, &ent) == 0;
		     off = next) {
			int enc = -1;
			int32_t rel;
			uint32_t range;
			uint64_t pos;

			if (dwarf_cfi_cie_p(&ent)) {
				if (n_cies < sizeof(cies) / sizeof(cies[0]))
					cies[n_cies++] = (struct cie_enc){ off, cie_fde_encoding(&ent.cie) };
				continue;
			}
			for (size_t i = 0; i < n_cies; i++)
				if (cies[i].off == ent.fde.CIE_pointer)
					enc = cies[i].enc;
			if (enc != 0x1b || ent.fde.end - ent.fde.start < 8)
				continue;
			memcpy(&rel, ent.fde.start, 4);
			memcpy(&range, ent.fde.start + 4, 4);
			pos = sh.sh_addr + (uint64_t)(ent.fde.start - (const uint8_t *)d->d_buf);
			if (ret->n == ret->cap) {
				ret->cap = ret->cap ? ret->cap * 2 : 1024;
				ret->v = realloc(ret->v, ret->cap * sizeof(*ret->v));
				assert_non_null(ret->v);
			}
			ret->v[ret->n++] = (struct fde){ pos + (uint64_t)(int64_t)rel,
							 pos + (uint64_t)(int64_t)rel + range };
		}
		break;
	}
	if (e)
		elf_end(e);
	close(fd);
}

static const struct fde *fde_covering(const struct fde_list *l, uint64_t v)
{
	for (size_t i = 0; i < l->n; i++)
		if (v >= l->v[i].start && v < l->v[i].end)
			return &l->v[i];
	return NULL;
}

/* The file offset of the ELF vaddr v (through the PT_LOADs), or v. */
static uint64_t file_offset_of(const char *path, uint64_t v)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t r = v;
	size_t n = 0;
	Elf *e;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getphdrnum(e, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && v >= ph.p_vaddr &&
		    v - ph.p_vaddr < ph.p_memsz)
			r = ph.p_offset + (v - ph.p_vaddr);
	}
	elf_end(e);
	close(fd);
	return r;
}

static size_t lookup(struct symbolizer *sym, uint64_t addr, struct native_frame *f, size_t max)
{
	size_t n = 0;

	assert_int_equal(symbolizer_lookup(sym, addr, false, f, max, &n), 0);
	assert_true(n >= 1);
	return n;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_libpython(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	struct elfsym hash = { 0 }, eval = { 0 }, cold = { 0 };
	void *h, *addr;
	uint64_t bias, refreshes;
	size_t n;
	bool inl = false;

	(void) state;
	if (access(LIBPYTHON, R_OK) != 0) {
		print_message("# skip: no %s\n", LIBPYTHON);
		skip();
	}
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	refreshes = symbolizer_stats(sym)->refreshes;
	h = dlopen(LIBPYTHON, RTLD_LAZY | RTLD_LOCAL);
	assert_non_null(h);
	addr = dlsym(h, "PyObject_Hash");
	assert_non_null(addr);
	assert_true(elf_find(LIBPYTHON, SHT_SYMTAB, "PyObject_Hash", &hash));
	bias = (uint64_t)(uintptr_t)addr - hash.value;
	usleep(30000);   /* past the automatic refresh's rate limit */

	n = lookup(sym, (uint64_t)(uintptr_t)addr + 4, f, 16);
	assert_true(symbolizer_stats(sym)->refreshes > refreshes);
	assert_string_equal(f[n - 1].name, "PyObject_Hash");
	assert_string_equal(f[n - 1].module, "libpython3.11.so.1.0");
	assert_true(ends_with(f[n - 1].file, "Objects/object.c"));
	assert_true(f[n - 1].line > 0);
	assert_false(f[n - 1].jit);
	assert_int_equal(f[0].addr, (uint64_t)(uintptr_t)addr + 4);

	/* an inline chain somewhere in the eval loop, the containing function last */
	assert_true(elf_find(LIBPYTHON, SHT_SYMTAB, "_PyEval_EvalFrameDefault", &eval));
	for (uint64_t off = 0; off < eval.size && !inl; off += 16) {
		n = lookup(sym, bias + eval.value + off, f, 16);
		if (n >= 2 && f[0].inlined) {
			inl = true;
			assert_string_equal(f[n - 1].name, "_PyEval_EvalFrameDefault");
			assert_false(f[n - 1].inlined);
			assert_non_null(f[0].name);
			assert_non_null(f[n - 1].file);
			print_message("# inline: %s (%s:%d) in %s (%s:%d), %zu frames\n", f[0].name,
				      f[0].file, f[0].line, f[n - 1].name, f[n - 1].file, f[n - 1].line, n);
		}
	}
	assert_true(inl);
	/* max 1: only the containing function */
	assert_int_equal(symbolizer_lookup(sym, f[0].addr, false, f, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].name, "_PyEval_EvalFrameDefault");

	/* .cold clones keep their name */
	if (elf_find(LIBPYTHON, SHT_SYMTAB, "_PyEval_EvalFrameDefault.cold", &cold)) {
		n = lookup(sym, bias + cold.value + 1, f, 16);
		assert_string_equal(f[n - 1].name, "_PyEval_EvalFrameDefault.cold");
	}
	/* cached: the same answer again */
	{
		uint64_t hits = symbolizer_stats(sym)->cache_hits;

		n = lookup(sym, (uint64_t)(uintptr_t)addr + 4, f, 16);
		assert_string_equal(f[n - 1].name, "PyObject_Hash");
		assert_int_equal(symbolizer_stats(sym)->cache_hits, hits + 1);
		/* a return address is looked up at addr - 1 */
		assert_int_equal(symbolizer_lookup(sym, (uint64_t)(uintptr_t)addr + 5, true, f, 16, &n), 0);
		assert_int_equal(symbolizer_stats(sym)->cache_hits, hits + 2);
		assert_int_equal(f[0].addr, (uint64_t)(uintptr_t)addr + 5);
	}
	symbolizer_free(sym);
	dlclose(h);
}

struct gap_arg {
	struct elfsym *syms;
	size_t n, cap;
};

static int gap_cb(const char *name, const GElf_Sym *s, void *arg)
{
	struct gap_arg *g = arg;

	(void) name;
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 1024;
		g->syms = realloc(g->syms, g->cap * sizeof(*g->syms));
		assert_non_null(g->syms);
	}
	g->syms[g->n].value = s->st_value;
	g->syms[g->n].size = s->st_size;
	g->n++;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	uint64_t x = ((const struct elfsym *)a)->value, y = ((const struct elfsym *)b)->value;

	return x < y ? -1 : x > y;
}

static bool overlaps_symbol(const struct gap_arg *g, const struct fde *d)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->syms[i].value < d->end && g->syms[i].value + g->syms[i].size + 1 > d->start)
			return true;
	return false;
}

/* The first nameless function of a module (an FDE of at least 32 bytes in no .dynsym symbol,
 * not named by cold.c) is one frame: two addresses inside it, and a return address just past its
 * end (looked up at addr - 1), all give module+<the FDE's start>; addr stays the one looked up.
 * false if the module has no nameless function (debug symbols found). */
static bool check_nameless_function(struct symbolizer *sym, const char *path, uint64_t bias,
				    const char *module)
{
	struct native_frame f[16];
	struct fde_list l;
	struct gap_arg g = { 0 };
	bool found = false;

	eh_fdes(path, &l);
	assert_true(l.n > 0);
	elf_syms(path, SHT_DYNSYM, gap_cb, &g);
	for (size_t i = 0; i < l.n && !found; i++) {
		const struct fde *d = &l.v[i];
		uint64_t len = d->end - d->start, a1 = d->start + len / 4, a2 = d->start + len * 3 / 4;
		uint64_t want;
		size_t n;

		if (len < 32 || overlaps_symbol(&g, d))
			continue;
		n = lookup(sym, bias + a1, f, 16);
		if (f[n - 1].name)
			continue;   /* a .cold part named by cold.c, or debug symbols */
		found = true;
		want = file_offset_of(path, d->start);
		print_message("# %s: nameless 0x%lx, 0x%lx, return 0x%lx -> %s+0x%lx (FDE 0x%lx..0x%lx)\n",
			      path, (unsigned long)a1, (unsigned long)a2, (unsigned long)d->end,
			      f[n - 1].module, (unsigned long)f[n - 1].module_offset,
			      (unsigned long)d->start, (unsigned long)d->end);
		assert_string_equal(f[n - 1].module, module);
		assert_int_equal(f[n - 1].module_offset, want);
		assert_int_equal(f[n - 1].addr, bias + a1);
		n = lookup(sym, bias + a2, f, 16);
		assert_null(f[n - 1].name);
		assert_int_equal(f[n - 1].module_offset, want);
		assert_int_equal(f[n - 1].addr, bias + a2);
		/* a return address: the FDE covering addr - 1 */
		assert_int_equal(symbolizer_lookup(sym, bias + d->end, true, f, 16, &n), 0);
		assert_null(f[n - 1].name);
		assert_int_equal(f[n - 1].module_offset, want);
		assert_int_equal(f[n - 1].addr, bias + d->end);
	}
	free(g.syms);
	free(l.v);
	return found;
}

/* LIBPYTHON loaded (the test skipped where it is not here): its handle, and *ret_bias (its
 * load address less its file's addresses, by PyObject_Hash). */
static void *libpython_load(uint64_t *ret_bias)
{
	struct elfsym hash = { 0 };
	void *h, *addr;

	if (access(LIBPYTHON, R_OK) != 0) {
		print_message("# skip: no %s\n", LIBPYTHON);
		skip();
	}
	h = dlopen(LIBPYTHON, RTLD_LAZY | RTLD_LOCAL);
	assert_non_null(h);
	addr = dlsym(h, "PyObject_Hash");
	assert_non_null(addr);
	assert_true(elf_find(LIBPYTHON, SHT_SYMTAB, "PyObject_Hash", &hash));
	*ret_bias = (uint64_t)(uintptr_t)addr - hash.value;
	return h;
}

/* A lookup in the subprogram the module's last lookup found starts at that subprogram, not
 * with a scan of its CU: the eval loop's addresses, one after another, give the frames they
 * give each looked up right after another address, never looked up before, in another CU.
 * The two passes have a symbolizer each, one after the other (two at once in an ASan build
 * found no symbols for the second's libpython: libelf's copy of the file had been mapped right
 * below it, see test_file_copy_below). */
#define SCOPES_N 240
struct scopes_seen {
	size_t n;
	char *text[16];                 /* "name|file|line|inlined" per frame */
};

static void scopes_pass(bool apart, const struct elfsym *eval, uint64_t bias,
			const uint64_t *other, size_t n_other, struct scopes_seen *seen)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	uint64_t step = eval->size / SCOPES_N ? eval->size / SCOPES_N : 1;

	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	for (uint64_t off = 0, k = 0; off < eval->size && k < SCOPES_N; off += step, k++) {
		/* SCOPES_N lookups over n_other functions, at their first addresses */
		if (apart)
			(void) lookup(sym, other[k % n_other] + k / n_other, f, 16);
		seen[k].n = lookup(sym, bias + eval->value + off, f, 16);
		for (size_t i = 0; i < seen[k].n; i++) {
			char buf[1024];

			snprintf(buf, sizeof(buf), "%s|%s|%d|%d", f[i].name ? f[i].name : "-",
				 f[i].file ? f[i].file : "-", f[i].line, f[i].inlined);
			seen[k].text[i] = strdup(buf);
			assert_non_null(seen[k].text[i]);
		}
	}
	symbolizer_free(sym);
}

static void test_scopes_remembered(void **state)
{
	static const char *const others[] = { "PyObject_Hash", "PyList_New", "PyDict_New",
					      "PyLong_FromLong", "PyTuple_New", "PyFloat_FromDouble" };
	static struct scopes_seen seq[SCOPES_N], apart[SCOPES_N];
	uint64_t other[sizeof(others) / sizeof(others[0])];
	struct elfsym eval = { 0 };
	size_t inlined = 0;
	uint64_t bias;
	void *h;

	(void) state;
	h = libpython_load(&bias);
	assert_true(elf_find(LIBPYTHON, SHT_SYMTAB, "_PyEval_EvalFrameDefault", &eval));
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		void *o = dlsym(h, others[i]);

		assert_non_null(o);
		other[i] = (uint64_t)(uintptr_t)o;
	}
	memset(seq, 0, sizeof(seq));
	memset(apart, 0, sizeof(apart));
	scopes_pass(true, &eval, bias, other, sizeof(other) / sizeof(other[0]), apart);
	scopes_pass(false, &eval, bias, other, sizeof(other) / sizeof(other[0]), seq);
	for (size_t k = 0; k < SCOPES_N; k++) {
		assert_int_equal(seq[k].n, apart[k].n);
		for (size_t i = 0; i < seq[k].n; i++) {
			assert_string_equal(seq[k].text[i], apart[k].text[i]);
			free(seq[k].text[i]);
			free(apart[k].text[i]);
		}
		inlined += seq[k].n > 1;
	}
	print_message("# %zu of the addresses in inline frames\n", inlined);
	assert_true(inlined > 0);
	dlclose(h);
}

struct section_arg {
	const char *name;
	GElf_Shdr sh;
	size_t k;                       /* rela_plt_name(): the relocation */
	char *buf;
	size_t size;
};

static int section_cb(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *name, void *arg)
{
	struct section_arg *a = arg;

	(void) e, (void) scn;
	if (strcmp(name, a->name))
		return 0;
	a->sh = *sh;
	return 1;
}

/* Section name's header in the ELF file path. */
static bool elf_section(const char *path, const char *name, GElf_Shdr *ret)
{
	struct section_arg a = { .name = name };

	if (elf_sections(path, section_cb, &a) != 1)
		return false;
	*ret = a.sh;
	return true;
}

static int rela_cb(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *name, void *arg)
{
	struct section_arg *a = arg;
	Elf_Scn *syms = elf_getscn(e, sh->sh_link);
	Elf_Data *d = elf_getdata(scn, NULL), *dd = syms ? elf_getdata(syms, NULL) : NULL;
	GElf_Shdr dsh;
	GElf_Rela r;
	GElf_Sym sy;

	if (strcmp(name, ".rela.plt") || !d || !dd || !gelf_getshdr(syms, &dsh) ||
	    !gelf_getrela(d, (int) a->k, &r) || !gelf_getsym(dd, (int) GELF_R_SYM(r.r_info), &sy) ||
	    !(name = elf_strptr(e, dsh.sh_link, sy.st_name)))
		return 0;
	snprintf(a->buf, a->size, "%s@plt", name);
	return 1;
}

/* The name of the dynamic symbol of .rela.plt's k-th relocation in path, into buf, with
 * "@plt". */
static bool rela_plt_name(const char *path, size_t k, char *buf, size_t size)
{
	struct section_arg a = { .k = k, .buf = buf, .size = size };

	return elf_sections(path, rela_cb, &a) == 1;
}

/* Whether the ELF address a of path lies in a PLT section. */
static bool in_plt(const char *path, uint64_t a)
{
	static const char *const names[] = { ".plt", ".plt.sec", ".plt.got" };
	GElf_Shdr sh;

	for (size_t i = 0; i < 3; i++)
		if (elf_section(path, names[i], &sh) && a >= sh.sh_addr && a - sh.sh_addr < sh.sh_size)
			return true;
	return false;
}

/* A PLT stub has no symbol: it is named "name@plt" by the relocation of its GOT slot, as perf
 * names it. libpython's .plt (lazy binding, 16-byte entries): entry k >= 1 is the stub of
 * .rela.plt's (k-1)-th function (read here by libelf, apart from plt.c's decoding of each
 * stub's jump); PLT0, the lazy resolver's, stays nameless; .plt.got's stubs are named too. */
static void test_plt_stubs(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	GElf_Shdr plt, got;
	uint64_t bias, count;
	char want[600];
	size_t n;
	void *h;

	(void) state;
	h = libpython_load(&bias);
	assert_true(elf_section(LIBPYTHON, ".plt", &plt));
	assert_true(plt.sh_entsize == 16 && plt.sh_size >= 64);
	count = plt.sh_size / 16;
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	for (uint64_t k = 1; k < count; k += count / 7 + 1) {
		assert_true(rela_plt_name(LIBPYTHON, k - 1, want, sizeof(want)));
		n = lookup(sym, bias + plt.sh_addr + 16 * k + 3, f, 16);
		assert_int_equal(n, 1);
		assert_non_null(f[0].name);
		assert_string_equal(f[0].name, want);
		assert_string_equal(f[0].module, "libpython3.11.so.1.0");
	}
	n = lookup(sym, bias + plt.sh_addr + 4, f, 16);
	assert_null(f[n - 1].name);
	if (elf_section(LIBPYTHON, ".plt.got", &got) && got.sh_size >= 8) {
		n = lookup(sym, bias + got.sh_addr + 1, f, 16);
		assert_non_null(f[n - 1].name);
		assert_true(ends_with(f[n - 1].name, "@plt"));
		print_message("# .plt.got's first stub: %s\n", f[n - 1].name);
	}
	symbolizer_free(sym);
	dlclose(h);
}

/* A name lookup (a leaf without --native) names the containing function from the symbol table
 * and loads no DWARF: an address in an inline chain of the eval loop is one frame, without file
 * and line, the module's DWARF still unopened; a full lookup of it after is the inline chain
 * with files (the cache keeps the two apart), and a name lookup after that is a name again. */
static void test_name_only(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16], g;
	struct elfsym eval = { 0 };
	struct sym_module *mod = NULL;
	uint64_t bias, a = 0;
	size_t n = 0;
	void *h;

	(void) state;
	h = libpython_load(&bias);
	assert_true(elf_find(LIBPYTHON, SHT_SYMTAB, "_PyEval_EvalFrameDefault", &eval));
	/* an inline chain's address, found by a symbolizer of its own */
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	for (uint64_t off = 0; off < eval.size && !a; off += 16) {
		n = lookup(sym, bias + eval.value + off, f, 16);
		if (n >= 2 && f[0].inlined)
			a = bias + eval.value + off;
	}
	assert_true(a != 0);
	symbolizer_free(sym);

	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	assert_int_equal(symbolizer_lookup_name(sym, a, &g), 0);
	assert_string_equal(g.name, "_PyEval_EvalFrameDefault");
	assert_string_equal(g.module, "libpython3.11.so.1.0");
	assert_null(g.file);
	assert_int_equal(g.line, 0);
	assert_false(g.inlined);
	for (size_t i = 0; i < sym->n_modules; i++)
		if (!strcmp(sym->modules[i]->name, "libpython3.11.so.1.0"))
			mod = sym->modules[i];
	assert_non_null(mod);
	assert_int_equal(mod->has_dwarf, -1);
	n = lookup(sym, a, f, 16);
	assert_true(n >= 2 && f[0].inlined);
	assert_non_null(f[n - 1].file);
	assert_int_equal(mod->has_dwarf, 1);
	assert_int_equal(symbolizer_lookup_name(sym, a, &g), 0);
	assert_null(g.file);
	assert_false(g.inlined);
	/* nothing mapped there */
	assert_int_equal(symbolizer_lookup_name(sym, 8, &g), -ENOENT);
	symbolizer_free(sym);
	dlclose(h);
}

/* A lookup in another CU than the module's last finds the function that holds the address in
 * the CU's index (cuindex.c), not by a scan of the CU: the frames of addresses all over
 * libpython, each looked up right after one at the other end of the library (another CU), are
 * those a scan of the CU finds (sym->cu_scan: as before the index). */
#define CU_ADDRS 600
static void test_cu_index(void **state)
{
	struct gap_arg g = { 0 };
	struct symbolizer *sym = NULL, *scan = NULL;
	struct native_frame f[16], want[16];
	size_t compared = 0, inlined = 0, step;
	uint64_t bias;
	void *h;

	(void) state;
	h = libpython_load(&bias);
	elf_syms(LIBPYTHON, SHT_SYMTAB, gap_cb, &g);
	qsort(g.syms, g.n, sizeof(*g.syms), cmp_sym);
	assert_true(g.n > CU_ADDRS);
	step = g.n / CU_ADDRS;
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	assert_int_equal(symbolizer_new(getpid(), &scan), 0);
	scan->cu_scan = true;
	for (size_t k = 0; k < CU_ADDRS; k++) {
		/* from each end in turn: the CU changes at every lookup */
		const struct elfsym *s = &g.syms[k % 2 ? g.n - 1 - (k / 2) * step : (k / 2) * step];
		uint64_t v = bias + s->value + s->size * (1 + k % 7) / 8;
		size_t n, n_want;

		if (s->size < 16)
			continue;
		n = lookup(sym, v, f, 16);
		n_want = lookup(scan, v, want, 16);
		assert_int_equal(n, n_want);
		for (size_t i = 0; i < n; i++) {
			assert_true(f[i].inlined == want[i].inlined && f[i].line == want[i].line);
			assert_true((f[i].name == NULL) == (want[i].name == NULL));
			assert_true(!f[i].name || strcmp(f[i].name, want[i].name) == 0);
			assert_true((f[i].file == NULL) == (want[i].file == NULL));
			assert_true(!f[i].file || strcmp(f[i].file, want[i].file) == 0);
		}
		compared++;
		inlined += n > 1;
	}
	print_message("# %zu addresses, %zu in inline frames\n", compared, inlined);
	assert_true(compared > CU_ADDRS / 2 && inlined > 10);
	symbolizer_free(scan);
	symbolizer_free(sym);
	free(g.syms);
	dlclose(h);
}

/* A copy of a library's file mapped right below the library (as libelf maps the files it reads,
 * in a process that profiles itself, or a program that reads a library by mmap): the module is
 * still the loaded image, its symbols named. It was not (every lookup nameless): the module
 * was opened from the copy's mapping, the one at offset 0 in the run of the file's mappings.
 * libexpat: a library this process has not loaded, with no dependency to load right below it
 * (libpython's libm is) */
#define LIBEXPAT "/usr/lib/x86_64-linux-gnu/libexpat.so.1"
static void test_file_copy_below(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	struct stat st;
	Dl_info info;
	void *h, *addr, *copy = MAP_FAILED;
	size_t n, len;
	int fd;

	(void) state;
	h = dlopen(LIBEXPAT, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		print_message("# skip: no %s (%s)\n", LIBEXPAT, dlerror());
		skip();
	}
	addr = dlsym(h, "XML_ParserCreate");
	assert_non_null(addr);
	assert_true(dladdr(addr, &info) != 0);
	fd = open(LIBEXPAT, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	/* the file's first pages, as many as fit right below (libelf maps it whole) */
	for (len = ((size_t) st.st_size + 4095) & ~(size_t) 4095; len >= 4096;
	     len = (len / 2) & ~(size_t) 4095) {
		copy = mmap((char *) info.dli_fbase - len, len, PROT_READ,
			    MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
		if (copy != MAP_FAILED)
			break;
	}
	close(fd);
	if (copy == MAP_FAILED) {
		print_message("# skip: the page below %s is taken (%s)\n", LIBEXPAT, strerror(errno));
		dlclose(h);
		skip();
	}
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	n = lookup(sym, (uint64_t) (uintptr_t) addr, f, 16);
	assert_non_null(f[n - 1].name);
	assert_string_equal(f[n - 1].name, "XML_ParserCreate");
	symbolizer_free(sym);
	munmap(copy, len);
	dlclose(h);
}

static void test_debian_python_dynsym(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	struct elfsym hash = { 0 };
	struct gap_arg g = { 0 };
	struct fde_list l;
	const struct fde *fde;
	uint64_t gap = 0;
	pid_t child;
	size_t n;
	int status;

	(void) state;
	if (access(DEB_PYTHON, X_OK) != 0) {
		print_message("# skip: no %s\n", DEB_PYTHON);
		skip();
	}
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		execl(DEB_PYTHON, "python3.11", "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	usleep(300000);
	assert_int_equal(symbolizer_new(child, &sym), 0);
	/* non-PIE: addresses are the ELF's */
	assert_true(elf_find(DEB_PYTHON, SHT_DYNSYM, "PyObject_Hash", &hash));
	n = lookup(sym, hash.value + 2, f, 16);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].name, "PyObject_Hash");
	assert_string_equal(f[0].module, "python3.11");
	assert_false(f[0].inlined);
	/* without DWARF every address of a function gives it (from the function ranges kept
	 * after the first lookup), each with its own offset; the byte after it does not */
	assert_true(hash.size > 8);
	for (uint64_t a = hash.value; a < hash.value + hash.size; a += 3) {
		n = lookup(sym, a, f, 16);
		assert_int_equal(n, 1);
		assert_string_equal(f[0].name, "PyObject_Hash");
		assert_int_equal(f[0].module_offset, a - 0x400000);   /* non-PIE */
	}
	n = lookup(sym, hash.value + hash.size, f, 16);
	assert_true(!f[n - 1].name || strcmp(f[n - 1].name, "PyObject_Hash") != 0);

	/* a static function: in no .dynsym symbol -> module+offset (not a PLT stub, which is
	 * named by its relocation: test_plt_stubs) */
	elf_syms(DEB_PYTHON, SHT_DYNSYM, gap_cb, &g);
	qsort(g.syms, g.n, sizeof(*g.syms), cmp_sym);
	for (size_t i = 0, end = 0; i + 1 < g.n && !gap; i++) {
		if (g.syms[i].value + g.syms[i].size > end)
			end = g.syms[i].value + g.syms[i].size;
		if (g.syms[i + 1].value > end + 256 && end > 0x400000 && !in_plt(DEB_PYTHON, end + 128))
			gap = end + 128;
	}
	assert_true(gap != 0);
	n = lookup(sym, gap, f, 16);
	print_message("# %s: 0x%lx -> %s %s+0x%lx\n", DEB_PYTHON, (unsigned long)gap,
		      f[n - 1].name ? f[n - 1].name : "(null)", f[n - 1].module,
		      (unsigned long)f[n - 1].module_offset);
	assert_null(f[n - 1].name);
	assert_string_equal(f[n - 1].module, "python3.11");
	/* module+<start of its function> where .eh_frame has it, else module+<the address> */
	eh_fdes(DEB_PYTHON, &l);
	fde = fde_covering(&l, gap);
	assert_int_equal(f[n - 1].module_offset, (fde ? fde->start : gap) - 0x400000);   /* non-PIE */
	assert_int_equal(f[n - 1].addr, gap);
	assert_true(check_nameless_function(sym, DEB_PYTHON, 0, "python3.11"));
	free(l.v);
	free(g.syms);
	symbolizer_free(sym);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	/* the target is gone */
	assert_int_equal(symbolizer_new(child, &sym), -ESRCH);
}

static void test_libz_nameless(void **state)
{
	struct symbolizer *sym = NULL;
	struct elfsym ver = { 0 };
	Dl_info info;
	char real[4096];
	const char *base;
	void *h, *addr;

	(void) state;
	h = dlopen(LIBZ, RTLD_LAZY | RTLD_LOCAL);
	addr = h ? dlsym(h, "zlibVersion") : NULL;
	if (!addr || !dladdr(addr, &info) || !info.dli_fname || !realpath(info.dli_fname, real)) {
		print_message("# skip: no %s\n", LIBZ);
		skip();
	}
	assert_true(elf_find(real, SHT_DYNSYM, "zlibVersion", &ver));
	base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	if (!check_nameless_function(sym, real, (uint64_t)(uintptr_t)addr - ver.value, base)) {
		symbolizer_free(sym);
		dlclose(h);
		print_message("# skip: %s has no nameless function (debug symbols installed?)\n", real);
		skip();
	}
	symbolizer_free(sym);
	dlclose(h);
}

/* The file offset of ELF vaddr v (through its PT_LOAD), or 0. */
static uint64_t vaddr_offset(const char *path, uint64_t v)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t off = 0;
	size_t n = 0;
	Elf *e;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int) i, &ph) && ph.p_type == PT_LOAD && v >= ph.p_vaddr &&
			    v < ph.p_vaddr + ph.p_filesz)
				off = v - ph.p_vaddr + ph.p_offset;
		}
	}
	elf_end(e);
	close(fd);
	return off;
}

/* libz mapped a second time, elsewhere (as after a dlclose and a dlopen): the function there is
 * resolved from the build-id cache, not through libdw again, with the same name and offset. */
static void test_build_id_cache(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16], g[16];
	Dl_info info;
	char real[4096];
	uint64_t v, off;
	size_t n, k;
	struct stat st;
	void *h, *addr, *copy;
	int fd;

	(void) state;
	h = dlopen(LIBZ, RTLD_LAZY | RTLD_LOCAL);
	addr = h ? dlsym(h, "deflate") : NULL;
	if (!addr || !dladdr(addr, &info) || !info.dli_fname || !realpath(info.dli_fname, real)) {
		print_message("# skip: no %s\n", LIBZ);
		skip();
	}
	v = (uint64_t) (uintptr_t) addr - (uint64_t) (uintptr_t) info.dli_fbase;
	off = vaddr_offset(real, v);
	assert_true(off > 0);
	fd = open(real, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	copy = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(copy != MAP_FAILED);
	close(fd);
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	assert_int_equal(symbolizer_lookup(sym, (uintptr_t) addr + 4, false, f, 16, &n), 0);
	assert_int_equal(symbolizer_stats(sym)->bid_cache_hits, 0);
	assert_int_equal(symbolizer_lookup(sym, (uintptr_t) copy + off + 4, false, g, 16, &k), 0);
	print_message("# %s at %p and at %p + %#lx: %s / %s\n", real, addr, copy, (unsigned long) off,
		      n ? (f[n - 1].name ? f[n - 1].name : "(none)") : "-",
		      k ? (g[k - 1].name ? g[k - 1].name : "(none)") : "-");
	assert_int_equal(symbolizer_stats(sym)->bid_cache_hits, 1);
	assert_int_equal(n, k);
	assert_non_null(g[k - 1].name);
	assert_string_equal(f[n - 1].name, g[k - 1].name);
	assert_string_equal(g[k - 1].module, f[n - 1].module);
	assert_int_equal(g[k - 1].module_offset, f[n - 1].module_offset);
	assert_int_equal(g[k - 1].addr, (uintptr_t) copy + off + 4);
	symbolizer_free(sym);
	munmap(copy, (size_t) st.st_size);
	dlclose(h);
}

/* The GNU build-id of an ELF file as hex (readelf -n), read with libelf; false if none. */
static bool file_build_id(const char *path, char *hex, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	bool found = false;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !found && (scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_getdata(scn, NULL)))
			continue;
		while (!found && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *) d->d_buf + name_off, "GNU", 4) != 0 ||
			    2 * nh.n_descsz + 1 > size)
				continue;
			for (size_t i = 0; i < nh.n_descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x",
					 ((unsigned char *) d->d_buf)[desc_off + i]);
			found = true;
		}
	}
	elf_end(e);
	close(fd);
	return found;
}

/* symbolizer_build_id: libz's build-id by its basename, as readelf -n prints it; a copy of it
 * under another name mapped, refreshed, unmapped and refreshed again is still known; a module
 * never mapped is not. */
static void test_build_id(void **state)
{
	struct symbolizer *sym = NULL;
	Dl_info info;
	char real[4096], want[256], copy_path[] = "/tmp/hwspy-bid-XXXXXX", cmd[8192];
	const char *base, *got;
	struct stat st;
	void *h, *addr, *map;
	int fd;

	(void) state;
	h = dlopen(LIBZ, RTLD_LAZY | RTLD_LOCAL);
	addr = h ? dlsym(h, "deflate") : NULL;
	if (!addr || !dladdr(addr, &info) || !info.dli_fname || !realpath(info.dli_fname, real)) {
		print_message("# skip: no %s\n", LIBZ);
		skip();
	}
	if (!file_build_id(real, want, sizeof(want))) {
		dlclose(h);
		print_message("# skip: %s has no build-id note\n", real);
		skip();
	}
	base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	got = symbolizer_build_id(sym, base);
	print_message("# %s: build-id %s, symbolizer says %s\n", real, want, got ? got : "(none)");
	assert_non_null(got);
	assert_string_equal(got, want);
	assert_null(symbolizer_build_id(sym, "no-such-module.so"));
	assert_null(symbolizer_build_id(sym, NULL));

	fd = mkstemp(copy_path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", real, copy_path);
	assert_int_equal(system(cmd), 0);
	fd = open(copy_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	map = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	assert_int_equal(symbolizer_refresh(sym), 0);
	munmap(map, (size_t) st.st_size);
	assert_int_equal(symbolizer_refresh(sym), 0);
	got = symbolizer_build_id(sym, strrchr(copy_path, '/') + 1);
	assert_non_null(got);
	assert_string_equal(got, want);
	unlink(copy_path);
	symbolizer_free(sym);
	dlclose(h);
}

static void test_demangle(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	void *h, *addr;
	size_t n;

	(void) state;
	h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		print_message("# skip: no libstdc++.so.6\n");
		skip();
	}
	addr = dlsym(h, "_ZNSt9exceptionD1Ev");
	assert_non_null(addr);
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	n = lookup(sym, (uint64_t)(uintptr_t)addr, f, 16);
	assert_string_equal(f[n - 1].name, "std::exception::~exception()");
	assert_string_equal(f[n - 1].module, "libstdc++.so.6.0.30");
	symbolizer_free(sym);
	dlclose(h);
}

static void test_vdso(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *addr = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	size_t n;

	(void) state;
	if (!base || !addr) {
		print_message("# skip: no vdso\n");
		skip();
	}
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	n = lookup(sym, (uint64_t)(uintptr_t)addr + 1, f, 16);
	assert_string_equal(f[n - 1].module, "[vdso]");
	assert_non_null(f[n - 1].name);
	assert_true(strstr(f[n - 1].name, "clock_gettime") != NULL);
	symbolizer_free(sym);
}

static void test_jit_perf_map(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[4];
	char path[64];
	unsigned char *code;
	FILE *pm;
	size_t n;

	(void) state;
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	pm = fopen(path, "w");
	assert_non_null(pm);
	fprintf(pm, "%lx 100 py::outer:/app/x.py\n", (unsigned long)(uintptr_t)code);
	fprintf(pm, "garbage line\n");
	fprintf(pm, "0x%lx 0x40 py::inner:/app/x.py\n", (unsigned long)(uintptr_t)code + 0x100);
	fclose(pm);
	usleep(30000);
	n = lookup(sym, (uint64_t)(uintptr_t)code + 0x10, f, 4);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].name, "py::outer:/app/x.py");
	assert_true(f[0].jit);
	n = lookup(sym, (uint64_t)(uintptr_t)code + 0x13f, f, 4);
	assert_string_equal(f[0].name, "py::inner:/app/x.py");
	assert_int_equal(f[0].module_offset, 0x3f);
	/* past every entry */
	assert_int_equal(symbolizer_lookup(sym, (uint64_t)(uintptr_t)code + 0x1000, false, f, 4, &n),
			 -ENOENT);
	unlink(path);
	munmap(code, 8192);
	symbolizer_free(sym);
}

static void test_kernel_live(void **state)
{
	struct symbolizer *sym = NULL;
	struct native_frame f;
	char line[512], name[256];
	unsigned long long addr = 0;
	FILE *k = fopen("/proc/kallsyms", "r");
	char type;

	(void) state;
	if (!k)
		skip();
	while (fgets(line, sizeof(line), k))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
		    strcmp(name, "schedule") == 0)
			break;
	fclose(k);
	if (addr == 0 || strcmp(name, "schedule") != 0) {
		print_message("# skip: kallsyms addresses hidden (kptr_restrict)\n");
		skip();
	}
	assert_int_equal(symbolizer_new(getpid(), &sym), 0);
	assert_int_equal(symbolizer_kernel(sym, addr + 3, &f), 0);
	assert_string_equal(f.name, "schedule");
	assert_string_equal(f.module, "[kernel.kallsyms]");
	symbolizer_free(sym);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: the others' symbolizers leave libelf's maps of the file about */
		cmocka_unit_test(test_file_copy_below),
		cmocka_unit_test(test_libpython),
		cmocka_unit_test(test_scopes_remembered),
		cmocka_unit_test(test_name_only),
		cmocka_unit_test(test_plt_stubs),
		cmocka_unit_test(test_cu_index),
		cmocka_unit_test(test_debian_python_dynsym),
		cmocka_unit_test(test_libz_nameless),
		cmocka_unit_test(test_build_id_cache),
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_jit_perf_map),
		cmocka_unit_test(test_kernel_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
