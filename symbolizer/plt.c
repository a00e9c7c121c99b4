/*
 * plt.c: names the PLT stubs of a module, "name@plt", as perf does: a stub has no symbol, so a
 * sample in one (a call through it, the lazy binding of a first call) was "module+0xOFF".
 *
 * A stub jumps through a GOT slot, and the relocation of that slot names the function: a
 * JUMP_SLOT of .rela.plt, or a GLOB_DAT of .rela.dyn for .plt.got's stubs (a function whose
 * address is taken too); those relocations are sorted by slot once. Each entry of .plt,
 * .plt.sec (IBT's) and .plt.got is decoded for its `jmp *slot(%rip)` (ff 25 rel32, maybe after
 * endbr64 and a bnd prefix); a .plt entry without one (IBT's lazy entries: push index, jmp to
 * PLT0) is named by the `push imm32` of its .rela.plt index. .plt's first entry, PLT0 (the lazy
 * resolver's), stays nameless.
 *
 * The module's file is the target's to plant: every header, offset, count and index is
 * bounded by the image, stubs by PLT_MAX per module. Read once, on the first nameless address.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "symbolizer/symbolizer_internal.h"

#define PLT_MAX 65536                   /* stubs named per module at most */
#define PLT_NAME_MAX 512

struct plt_slot {
	uint64_t slot;                  /* a GOT slot's address */
	uint64_t sym;                   /* the dynamic symbol its relocation names */
};

struct plt_elf {
	const unsigned char *img;
	size_t size;
	Elf64_Shdr rela_plt, dynsym, dynstr;
	bool have_plt_rela, have_syms;
	struct plt_slot *slots;         /* JUMP_SLOT and GLOB_DAT relocations, by slot */
	size_t n_slots, cap_slots;
};

static bool in_image(const struct plt_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

static bool shdr(const struct plt_elf *e, const Elf64_Ehdr *eh, size_t i, Elf64_Shdr *ret)
{
	if (i >= eh->e_shnum)
		return false;
	memcpy(ret, e->img + eh->e_shoff + i * sizeof(*ret), sizeof(*ret));
	return ret->sh_type == SHT_NOBITS || in_image(e, ret->sh_offset, ret->sh_size);
}

/* The NUL-terminated string at off of string table t, or NULL. */
static const char *str_at(const struct plt_elf *e, const Elf64_Shdr *t, uint64_t off)
{
	const char *p;

	if (t->sh_type == SHT_NOBITS || off >= t->sh_size)
		return NULL;
	p = (const char *) e->img + t->sh_offset + off;
	return memchr(p, '\0', t->sh_size - off) ? p : NULL;
}

/* The name of dynamic symbol k, or NULL. */
static const char *dyn_name(const struct plt_elf *e, uint64_t k)
{
	Elf64_Sym s;

	if (!e->have_syms || k >= e->dynsym.sh_size / sizeof(s))
		return NULL;
	memcpy(&s, e->img + e->dynsym.sh_offset + k * sizeof(s), sizeof(s));
	return s.st_name ? str_at(e, &e->dynstr, s.st_name) : NULL;
}

/* Keeps the JUMP_SLOT and GLOB_DAT relocations of section sec by their slot. */
static void slots_add(struct plt_elf *e, const Elf64_Shdr *sec)
{
	uint64_t n = sec->sh_size / sizeof(Elf64_Rela);

	for (uint64_t i = 0; i < n && e->n_slots < 4 * PLT_MAX; i++) {
		Elf64_Rela r;
		uint32_t type;

		memcpy(&r, e->img + sec->sh_offset + i * sizeof(r), sizeof(r));
		type = (uint32_t) ELF64_R_TYPE(r.r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    array_grow((void **) &e->slots, &e->cap_slots, e->n_slots + 1,
			       sizeof(*e->slots), 256) < 0)
			continue;
		e->slots[e->n_slots++] = (struct plt_slot) { r.r_offset, ELF64_R_SYM(r.r_info) };
	}
}

static int by_slot(const void *a, const void *b)
{
	const struct plt_slot *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The function whose GOT slot is at slot, or NULL. */
static const char *slot_name(const struct plt_elf *e, uint64_t slot)
{
	size_t i = array_upper(e->slots, e->n_slots, sizeof(*e->slots),
			       offsetof(struct plt_slot, slot), slot);

	return i > 0 && e->slots[i - 1].slot == slot ? dyn_name(e, e->slots[i - 1].sym) : NULL;
}

/* The function of .rela.plt's index-th relocation (a lazy entry's push), or NULL. */
static const char *index_name(const struct plt_elf *e, uint64_t index)
{
	Elf64_Rela r;

	if (!e->have_plt_rela || index >= e->rela_plt.sh_size / sizeof(r))
		return NULL;
	memcpy(&r, e->img + e->rela_plt.sh_offset + index * sizeof(r), sizeof(r));
	if (ELF64_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT)
		return NULL;
	return dyn_name(e, ELF64_R_SYM(r.r_info));
}

/* The name of the stub at vaddr, its code (len bytes) in c: through its jmp's slot, else (lazy:
 * a .plt entry) its push's index. */
static const char *stub_name(const struct plt_elf *e, const unsigned char *c, size_t len,
			     uint64_t vaddr, bool lazy)
{
	for (size_t k = 0; k + 6 <= len; k++) {
		int32_t rel;

		if (c[k] != 0xff || c[k + 1] != 0x25)
			continue;
		memcpy(&rel, c + k + 2, 4);
		/* a jmp through a slot no relocation names (PLT0's): nameless */
		return slot_name(e, vaddr + k + 6 + (uint64_t) (int64_t) rel);
	}
	for (size_t k = 0; lazy && k + 5 <= len; k++) {
		uint32_t index;

		if (c[k] != 0x68)
			continue;
		memcpy(&index, c + k + 1, 4);
		return index_name(e, index);
	}
	return NULL;
}

static void add_stub(struct symbolizer *sym, struct sym_module *m, uint64_t start, uint64_t len,
		     const char *name)
{
	char buf[PLT_NAME_MAX];
	size_t n = strnlen(name, sizeof(buf) - 5);

	if (m->n_plt >= PLT_MAX || n == sizeof(buf) - 5 ||
	    array_grow((void **) &m->plt, &m->cap_plt, m->n_plt + 1, sizeof(*m->plt), 64) < 0)
		return;
	memcpy(buf, name, n);
	memcpy(buf + n, "@plt", 5);
	m->plt[m->n_plt++] = (struct sym_range) { start, start + len,
						  strpool_intern(&sym->pool, buf, n + 4) };
}

/* The stubs of section s (plt: .plt, its first entry, PLT0, left out). */
static void scan_section(struct symbolizer *sym, struct sym_module *m, const struct plt_elf *e,
			 const Elf64_Shdr *s, bool plt)
{
	uint64_t entry = s->sh_entsize == 8 || s->sh_entsize == 16 ? s->sh_entsize : 16;

	if (s->sh_type == SHT_NOBITS)
		return;
	for (uint64_t at = plt ? entry : 0; at + entry <= s->sh_size; at += entry) {
		const char *name = stub_name(e, e->img + s->sh_offset + at, entry, s->sh_addr + at,
					     plt);

		if (name)
			add_stub(sym, m, s->sh_addr + at, entry, name);
	}
}

static int by_start(const void *a, const void *b)
{
	const struct sym_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void plt_read(struct symbolizer *sym, struct sym_module *m)
{
	struct plt_elf e = { .img = m->image, .size = m->image_size };
	Elf64_Shdr s, names, link;
	Elf64_Ehdr eh;

	if (!m->image || m->image_size < sizeof(eh))
		return;
	memcpy(&eh, m->image, sizeof(eh));
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096 ||
	    !in_image(&e, eh.e_shoff, (uint64_t) eh.e_shnum * sizeof(Elf64_Shdr)) ||
	    !shdr(&e, &eh, eh.e_shstrndx, &names))
		return;
	/* the relocations of GOT slots, and the symbols they name */
	for (size_t i = 0; i < eh.e_shnum; i++) {
		const char *name;

		if (!shdr(&e, &eh, i, &s) || s.sh_type != SHT_RELA ||
		    !(name = str_at(&e, &names, s.sh_name)) ||
		    (strcmp(name, ".rela.plt") && strcmp(name, ".rela.dyn")) ||
		    !shdr(&e, &eh, s.sh_link, &link) || link.sh_type != SHT_DYNSYM)
			continue;
		if (!e.have_syms) {
			if (!shdr(&e, &eh, link.sh_link, &e.dynstr) || e.dynstr.sh_type != SHT_STRTAB)
				continue;
			e.dynsym = link;
			e.have_syms = true;
		} else if (link.sh_offset != e.dynsym.sh_offset) {
			continue;       /* another symbol table than the first's */
		}
		if (!strcmp(name, ".rela.plt")) {
			e.rela_plt = s;
			e.have_plt_rela = true;
		}
		slots_add(&e, &s);
	}
	if (e.have_syms) {
		if (e.n_slots > 1)
			qsort(e.slots, e.n_slots, sizeof(*e.slots), by_slot);
		for (size_t i = 0; i < eh.e_shnum; i++) {
			const char *name;

			if (!shdr(&e, &eh, i, &s) || s.sh_type != SHT_PROGBITS ||
			    !(s.sh_flags & SHF_EXECINSTR) || !(name = str_at(&e, &names, s.sh_name)))
				continue;
			if (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
			    !strcmp(name, ".plt.got"))
				scan_section(sym, m, &e, &s, !strcmp(name, ".plt"));
		}
	}
	free(e.slots);
	if (m->n_plt > 1)
		qsort(m->plt, m->n_plt, sizeof(*m->plt), by_start);
}

const char *plt_lookup(struct symbolizer *sym, struct sym_module *m, uint64_t v)
{
	size_t i;

	if (!m->plt_read) {
		m->plt_read = true;
		plt_read(sym, m);
	}
	i = array_upper(m->plt, m->n_plt, sizeof(*m->plt), offsetof(struct sym_range, start), v);
	return i > 0 && v < m->plt[i - 1].end ? m->plt[i - 1].name : NULL;
}
