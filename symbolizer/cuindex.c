/*
 * cuindex.c: a CU's functions by address. A lookup in a CU other than the module's last one
 * scanned the CU's DIEs for the subprogram that holds the address (elf.c's descend(): ~100 us
 * for the eval loop's CU, and the leaf addresses of a --native profile alternate between CUs).
 * At its first lookup a CU's subprograms (its children's, and those of its namespaces and
 * classes) are listed with their address ranges, sorted; later ones are a binary search. Kept
 * with the module, per CU, sorted by the CU's offset.
 */
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base/array.h"
#include "symbolizer/symbolizer_internal.h"

#define CU_MAX_FNS (1u << 18)           /* ranges kept for one CU */
#define CU_MAX_DIES (1L << 20)          /* DIEs visited to list them */
#define CU_MAX_NEST 8                   /* namespaces and classes within each other */

struct cu_fn {
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
};

static int fn_cmp(const void *a, const void *b)
{
	const struct cu_fn *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* parent's subprograms' ranges into ix (and its namespaces' and classes'). */
static void collect(Dwarf_Die *parent, struct cu_index *ix, size_t *cap, long *budget, int nest)
{
	Dwarf_Die child;

	if (nest > CU_MAX_NEST || dwarf_child(parent, &child) != 0)
		return;
	do {
		if (--*budget < 0)
			return;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram: {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo || ix->n >= CU_MAX_FNS ||
				    array_grow((void **) &ix->fn, cap, ix->n + 1, sizeof(*ix->fn),
					       64) < 0)
					break;
				ix->fn[ix->n++] = (struct cu_fn) { lo, hi, child };
			}
			break;
		}
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			collect(&child, ix, cap, budget, nest + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* m's index of cu, made at its first use; NULL without memory. */
static struct cu_index *index_of(struct sym_module *m, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	size_t lo, cap = 0;
	struct cu_index ix = { .cu = off };
	long budget = CU_MAX_DIES;

	/* the CU's place among those indexed, by offset */
	lo = off ? array_upper(m->cus, m->n_cus, sizeof(*m->cus), offsetof(struct cu_index, cu),
			       off - 1) : 0;
	if (lo < m->n_cus && m->cus[lo].cu == off)
		return &m->cus[lo];
	if (array_grow((void **) &m->cus, &m->cap_cus, m->n_cus + 1, sizeof(*m->cus), 16) < 0)
		return NULL;
	collect(cu, &ix, &cap, &budget, 0);
	if (ix.n)
		qsort(ix.fn, ix.n, sizeof(*ix.fn), fn_cmp);
	memmove(&m->cus[lo + 1], &m->cus[lo], (m->n_cus - lo) * sizeof(*m->cus));
	m->cus[lo] = ix;
	m->n_cus++;
	return &m->cus[lo];
}

int cu_index_find(struct sym_module *m, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *ret)
{
	const struct cu_index *ix = index_of(m, cu);
	size_t lo;

	if (!ix)
		return -1;
	/* the last range that starts at or below pc; those before it, if it does not hold pc
	 * (a function's range inside another's: none in C, but DWARF allows it) */
	lo = array_upper(ix->fn, ix->n, sizeof(*ix->fn), offsetof(struct cu_fn, lo), pc);
	for (size_t i = lo; i > 0 && lo - i < 8; i--) {
		if (pc < ix->fn[i - 1].hi) {
			*ret = ix->fn[i - 1].die;
			return 1;
		}
	}
	return 0;
}

void cu_index_free(struct sym_module *m)
{
	for (size_t i = 0; i < m->n_cus; i++)
		free(m->cus[i].fn);
	free(m->cus);
	m->cus = NULL;
	m->n_cus = m->cap_cus = 0;
}
