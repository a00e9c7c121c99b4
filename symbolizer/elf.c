/*
 * elf.c: an address in a module -> frames through libdw (elf_resolve(), which symbolizer.c's
 * lookup calls when neither cache has the address).
 *
 * Name: the ELF symbol (libdwfl searches .symtab, else .dynsym, including a separate debug file
 * found by build-id or .gnu_debuglink), so `.cold` clones keep their suffix. Source file:line
 * and inline frames come from DWARF where the module (or its debug file) has it: the scopes of
 * the address innermost first, each DW_TAG_inlined_subroutine one inline frame, its
 * DW_AT_call_file/DW_AT_call_line the position in the next one out. C++ names are demangled with
 * libstdc++'s __cxa_demangle, looked up at run time (dlsym, else dlopen of libstdc++.so.6 on the
 * first mangled name), so hwspy itself links no C++ runtime; without it names stay mangled.
 * A function's range (from its symbol's size) is remembered in the module and names its other
 * addresses without libdw; in a module without DWARF it is their whole frame. With DWARF, the
 * subprogram the last lookup found is tried first (an eval loop's leaf addresses fall in one
 * function), before a scan of its CU's DIEs.
 * An address with neither a symbol nor DWARF may be in a PLT stub, which plt.c names
 * "<function>@plt", or in the nameless .cold part of a stripped module's exported function:
 * cold.c names it "<function>.cold". One that stays nameless gets
 * as module_offset the start of its function, from the .eh_frame FDE covering it
 * (module_fde_range()), so that the samples of one stripped function make one frame, not one
 * per instruction.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base/array.h"
#include "symbolizer/symbolizer_internal.h"

/* ---- demangling ------------------------------------------------------------------------------ */

static const char *intern_name(struct symbolizer *sym, const char *name)
{
	char plain[1024];
	const char *at = strchr(name, '@');

	/* symbol versions: "__libc_start_main@@GLIBC_2.34" -> "__libc_start_main" */
	if (at && at > name && (size_t)(at - name) < sizeof(plain)) {
		memcpy(plain, name, (size_t)(at - name));
		plain[at - name] = '\0';
		name = plain;
	}
	if (name[0] == '_' && name[1] == 'Z') {
		if (!sym->demangle_tried) {
			sym->demangle_tried = true;
			*(void **)&sym->cxa_demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
			if (!sym->cxa_demangle) {
				sym->cxx_lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
				if (sym->cxx_lib)
					*(void **)&sym->cxa_demangle = dlsym(sym->cxx_lib, "__cxa_demangle");
			}
		}
		if (sym->cxa_demangle) {
			int status = -1;
			char *d = sym->cxa_demangle(name, NULL, NULL, &status);

			if (d && status == 0) {
				const char *r = strpool_intern(&sym->pool, d, strnlen(d, 1 << 16));

				free(d);
				return r;
			}
			free(d);
		}
	}
	return strpool_intern(&sym->pool, name, strnlen(name, 1 << 16));
}

/* ---- DWARF ----------------------------------------------------------------------------------- */

static const char *die_name(struct symbolizer *sym, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!name)
		name = dwarf_diename(die);
	return name ? intern_name(sym, name) : NULL;
}

static const char *pool_or_null(struct symbolizer *sym, const char *s)
{
	return s ? strpool_intern(&sym->pool, s, strnlen(s, 1 << 16)) : NULL;
}

/* Walks from parent down the scopes containing pc: subprograms, lexical blocks, inlined
 * subroutines (and through namespaces/classes, which have no pc). path[depth..] gets the chain,
 * outermost first; returns the new depth. *budget bounds the DIEs visited. */
static int descend(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *path, int depth, int max,
		   long *budget)
{
	Dwarf_Die child;

	if (depth >= max || dwarf_child(parent, &child) != 0)
		return depth;
	do {
		if (--*budget < 0)
			return depth;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
			if (dwarf_haspc(&child, pc) == 1) {
				path[depth] = child;
				return descend(&child, pc, path, depth + 1, max, budget);
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (depth == 0) {
				int d = descend(&child, pc, path, depth, max, budget);

				if (d > depth)
					return d;
			}
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return depth;
}

/* Inline frames (innermost first) into f[0..), returning how many; file and line become the
 * position in the containing function. *ret_fn is the subprogram's name if found. One walk
 * down the CU along the scopes that contain the address (dwarf_getscopes +
 * dwarf_getscopes_die walk the whole CU twice: ~1 ms for ceval.c). */
static size_t dwarf_inlines(struct symbolizer *sym, Dwfl_Module *dm, uint64_t a,
			    struct sym_module *m, struct native_frame *f, size_t max,
			    const char **file, int *line, const char **ret_fn)
{
	Dwarf_Die path[64], *cu;
	Dwarf_Addr bias = 0;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0, n = 0;
	long budget = 1L << 20;
	int depth;

	cu = dwfl_module_addrdie(dm, a, &bias);
	if (!cu)
		return 0;
	/* the subprogram of the last lookup, if it holds a too: descend() from there on, as its
	 * scan of the CU would have */
	if (m->has_last_sub && m->last_cu == dwarf_dieoffset(cu) &&
	    dwarf_haspc(&m->last_sub, a - bias) == 1) {
		path[0] = m->last_sub;
		depth = descend(&path[0], a - bias, path, 1, 64, &budget);
	} else {
		/* the CU's function that holds a, by its index (cuindex.c), else a scan of the CU */
		if (!sym->cu_scan && cu_index_find(m, cu, a - bias, &path[0]) == 1)
			depth = descend(&path[0], a - bias, path, 1, 64, &budget);
		else
			depth = descend(cu, a - bias, path, 0, 64, &budget);
		m->has_last_sub = depth > 0 && dwarf_tag(&path[0]) == DW_TAG_subprogram;
		if (m->has_last_sub) {
			m->last_sub = path[0];
			m->last_cu = dwarf_dieoffset(cu);
		}
	}
	if (depth == 0)
		return 0;
	if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		files = NULL;
	for (int i = depth - 1; i >= 0; i--) {
		int tag = dwarf_tag(&path[i]);

		if (tag == DW_TAG_inlined_subroutine && n < max) {
			Dwarf_Attribute at;
			Dwarf_Word v;

			f[n] = (struct native_frame){
				.addr = a, .name = die_name(sym, &path[i]), .module = m->name,
				.file = *file, .line = *line, .inlined = true,
			};
			n++;
			*file = NULL;
			*line = 0;
			if (files && dwarf_formudata(dwarf_attr(&path[i], DW_AT_call_file, &at), &v) == 0 &&
			    v < nfiles)
				*file = pool_or_null(sym, dwarf_filesrc(files, v, NULL, NULL));
			if (dwarf_formudata(dwarf_attr(&path[i], DW_AT_call_line, &at), &v) == 0 &&
			    v < (1u << 30))
				*line = (int)v;
		} else if (tag == DW_TAG_subprogram) {
			*ret_fn = die_name(sym, &path[i]);
			break;
		}
	}
	return n;
}

static uint64_t file_offset(const struct sym_module *m, uint64_t a)
{
	uint64_t v = a - m->bias;

	for (size_t i = 0; i < m->n_loads; i++)
		if (v >= m->loads[i].vaddr && v - m->loads[i].vaddr < m->loads[i].memsz)
			return m->loads[i].offset + (v - m->loads[i].vaddr);
	return v;
}

/* ---- function ranges, by their symbols ------------------------------------------------------- */

/* The index of the first range whose start is above a. */
static size_t range_upper(const struct sym_module *m, uint64_t a)
{
	return array_upper(m->ranges, m->n_ranges, sizeof(*m->ranges),
			   offsetof(struct sym_range, start), a);
}

static const char *range_find(const struct sym_module *m, uint64_t a)
{
	size_t i = range_upper(m, a);

	return i > 0 && a < m->ranges[i - 1].end ? m->ranges[i - 1].name : NULL;
}

static void range_add(struct sym_module *m, uint64_t start, uint64_t end, const char *name)
{
	size_t i = range_upper(m, start);

	if (!name || end <= start || m->n_ranges >= SYM_MAX_RANGES ||
	    (i > 0 && m->ranges[i - 1].end > start) || (i < m->n_ranges && m->ranges[i].start < end))
		return;   /* overlapping symbols (aliases of another size): leave it to libdw */
	if (array_grow((void **) &m->ranges, &m->cap_ranges, m->n_ranges + 1, sizeof(*m->ranges),
		       64) < 0)
		return;
	memmove(&m->ranges[i + 1], &m->ranges[i], (m->n_ranges - i) * sizeof(*m->ranges));
	m->ranges[i] = (struct sym_range) { start, end, name };
	m->n_ranges++;
}

int elf_resolve(struct symbolizer *sym, struct sym_module *m, uint64_t a, bool dwarf,
		struct native_frame *f, size_t *ret_n)
{
	Dwfl_Module *dm = m->dwmod ? m->dwmod : dwfl_addrmodule(sym->dwfl, a);
	const char *name = NULL, *file = NULL, *fn = NULL;
	uint64_t mod_off = file_offset(m, a), fde_start, fde_end;
	int line = 0;
	size_t n = 0;

	if (dm && dwarf && m->has_dwarf < 0) {
		Dwarf_Addr bias;

		m->has_dwarf = dwfl_module_getdwarf(dm, &bias) != NULL;
	}
	/* a function's symbol, looked up once for all its addresses; without DWARF they all give
	 * the same frame: skip libdw */
	name = dm ? range_find(m, a) : NULL;
	if (name && (!dwarf || m->has_dwarf == 0)) {
		f[0] = (struct native_frame){ .addr = a, .name = name, .module = m->name,
					      .module_offset = mod_off };
		*ret_n = 1;
		return 0;
	}
	if (dm) {
		GElf_Off off;
		GElf_Sym s;
		Dwfl_Line *ln;

		if (!name) {
			name = dwfl_module_addrinfo(dm, a, &off, &s, NULL, NULL, NULL);
			if (name && s.st_size > 0 && off < s.st_size) {
				name = intern_name(sym, name);
				range_add(m, a - off, a - off + s.st_size, name);
			}
		}
		ln = dwarf ? dwfl_module_getsrc(dm, a) : NULL;
		if (ln) {
			const char *src = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);

			file = pool_or_null(sym, src);
			if (line < 0)
				line = 0;
		}
		if (dwarf)
			n = dwarf_inlines(sym, dm, a, m, f, SYM_MAX_INLINE, &file, &line, &fn);
		if (!name && !fn)
			fn = plt_lookup(sym, m, a - m->bias);
		if (!name && !fn)
			fn = cold_lookup(sym, m, dm, a);
	}
	/* nameless: the start of the containing function, where .eh_frame knows it */
	if (!name && !fn && module_fde_range(m, a - m->bias, &fde_start, &fde_end))
		mod_off = file_offset(m, m->bias + fde_start);
	f[n] = (struct native_frame){
		.addr = a,
		.name = name ? intern_name(sym, name) : fn,
		.module = m->name,
		.file = file,
		.line = line,
		.module_offset = mod_off,
	};
	*ret_n = n + 1;
	return 0;
}
