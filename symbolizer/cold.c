/*
 * cold.c: names the nameless .cold part of a split function in a module with only .dynsym.
 *
 * GCC splits a function into its hot part (the symbol) and a .cold part reached only by jumps
 * from it. A stripped module exports the hot part in .dynsym, but the .cold part's local symbol
 * is gone, so addresses there have no name (Debian's python3.13/3.14 run most of
 * _PyEval_EvalFrameDefault there). The .cold part still has its own FDE in .eh_frame, so:
 * once per module, on the first address of it that has no symbol, the code of each function of
 * COLD_FUNCS is scanned (from the module's file image) for rel32/rel8 jmp and jcc whose target
 * lies outside the function, in no symbol; the FDE containing the target (found through
 * .eh_frame_hdr) becomes "<function>.cold" when the jump is a real one: the frame state (CFA and
 * the callee-saved registers' rules, from libdw's CFI) at the jump equals the state at its target,
 * and it is not a tail call (a jump to the very start of an FDE whose CFA is the entry one,
 * rsp+8). The scan reads every byte offset (no instruction decoder): a byte pattern that only
 * looks like a jump would also need a nameless target with the same frame state to count.
 * Lookups of an address that has no symbol then check the (few) ranges found. Modules with
 * full symbols never get here. The FDE lookup is module.c's module_fde_range().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "symbolizer/symbolizer_internal.h"

#define COLD_SCAN_MAX   (1u << 20)   /* bytes of one function scanned at most */
#define COLD_SYMS_MAX   (1u << 22)   /* symbol table entries looked through at most */
#define COLD_TARGETS_MAX 4096        /* candidate jump targets checked per function at most */

/* Exported functions whose nameless jump-target FDE is named "<name>.cold". */
static const char *const COLD_FUNCS[] = {
	"_PyEval_EvalFrameDefault",
};

/* DWARF numbers of the registers whose rules must agree at a jump and its target: rbx, rbp,
 * r12..r15 (callee-saved), and the return address (16). */
static const int COLD_REGS[] = { 3, 6, 12, 13, 14, 15, 16 };

/* Equal DWARF expressions (a CFA or a register rule). */
static bool ops_equal(const Dwarf_Op *a, size_t na, const Dwarf_Op *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (a[i].atom != b[i].atom || a[i].number != b[i].number ||
		    a[i].number2 != b[i].number2)
			return false;
	return true;
}

/* CFA rsp+8: the state at a function's entry (and after its epilogue). */
static bool cfa_is_entry(const Dwarf_Op *ops, size_t n)
{
	return n == 1 && ((ops[0].atom == DW_OP_bregx && ops[0].number == 7 && ops[0].number2 == 8) ||
			  (ops[0].atom == DW_OP_breg7 && ops[0].number == 8));
}

/* The frame state at pc (a CFI-relative address). false when there is no CFI for it. */
static bool frame_at(Dwarf_CFI *cfi, Dwarf_Addr pc, Dwarf_Frame **ret)
{
	*ret = NULL;
	return dwarf_cfi_addrframe(cfi, pc, ret) == 0 && *ret;
}

/* Whether a jump at pc `from` to pc `to` keeps the frame state; *entry: the CFA at `to` is the
 * entry one. */
static bool same_state(Dwarf_CFI *cfi, Dwarf_Addr from, Dwarf_Addr to, bool *entry)
{
	Dwarf_Frame *a, *b;
	Dwarf_Op *oa, *ob, sa[3], sb[3];
	size_t na, nb;
	bool ok = false;

	*entry = false;
	if (!frame_at(cfi, from, &a))
		return false;
	if (!frame_at(cfi, to, &b)) {
		free(a);
		return false;
	}
	if (dwarf_frame_cfa(a, &oa, &na) != 0 || dwarf_frame_cfa(b, &ob, &nb) != 0 ||
	    !ops_equal(oa, na, ob, nb))
		goto out;
	*entry = cfa_is_entry(ob, nb);
	for (size_t i = 0; i < sizeof(COLD_REGS) / sizeof(COLD_REGS[0]); i++) {
		oa = sa;
		ob = sb;
		if (dwarf_frame_register(a, COLD_REGS[i], sa, &oa, &na) != 0 ||
		    dwarf_frame_register(b, COLD_REGS[i], sb, &ob, &nb) != 0)
			goto out;
		if ((oa == NULL) != (ob == NULL) || (oa && !ops_equal(oa, na, ob, nb)))
			goto out;
	}
	ok = true;
out:
	free(a);
	free(b);
	return ok;
}

/* The runtime address and size of the exported function `name`, or false. */
static bool find_func(Dwfl_Module *dm, const char *name, uint64_t *ret_addr, uint64_t *ret_size)
{
	int n = dwfl_module_getsymtab(dm);
	size_t len = strlen(name);

	if (n <= 0 || (unsigned int)n > COLD_SYMS_MAX)
		return false;
	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		const char *sn = dwfl_module_getsym_info(dm, i, &s, &addr, NULL, NULL, NULL);

		if (sn && GELF_ST_TYPE(s.st_info) == STT_FUNC && s.st_size > 0 &&
		    strncmp(sn, name, len) == 0 && (sn[len] == '\0' || sn[len] == '@')) {
			*ret_addr = addr;
			*ret_size = s.st_size;
			return true;
		}
	}
	return false;
}

static bool has_symbol(Dwfl_Module *dm, uint64_t a)
{
	GElf_Off off;
	GElf_Sym s;

	return dwfl_module_addrinfo(dm, a, &off, &s, NULL, NULL, NULL) != NULL;
}

/* Adds the FDE [start, end) (ELF vaddrs) as name's cold part, once. */
static void add_cold(struct symbolizer *sym, struct sym_module *m, uint64_t start, uint64_t end,
		     const char *name)
{
	char buf[512];
	size_t len = strlen(name);

	for (size_t i = 0; i < m->n_cold; i++)
		if (m->cold[i].start == start)
			return;
	if (m->n_cold >= SYM_MAX_COLD || len + sizeof(".cold") > sizeof(buf))
		return;
	memcpy(buf, name, len);
	memcpy(buf + len, ".cold", sizeof(".cold"));
	m->cold[m->n_cold].name = strpool_intern(&sym->pool, buf, len + 5);
	if (!m->cold[m->n_cold].name)
		return;
	m->cold[m->n_cold].start = start;
	m->cold[m->n_cold].end = end;
	m->n_cold++;
}

/* Scans one function's code for jumps into a nameless FDE. */
static void scan_func(struct symbolizer *sym, struct sym_module *m, Dwfl_Module *dm,
		      Dwarf_CFI *cfi, Dwarf_Addr cfi_bias, const char *name)
{
	uint64_t addr, fsize, size, last_start = 0, last_end = 0;
	unsigned char *code;
	size_t targets = 0;

	if (!find_func(dm, name, &addr, &fsize))
		return;
	size = fsize < COLD_SCAN_MAX ? fsize : COLD_SCAN_MAX;
	code = malloc(size);
	if (!code)
		return;
	if (!module_read(m, addr, code, size))
		goto out;
	for (uint64_t i = 0; i < size && targets < COLD_TARGETS_MAX; i++) {
		uint64_t insn_len, target, v, fs, fe;
		int64_t rel;
		bool entry;

		if (code[i] == 0xe9 && i + 5 <= size) {
			int32_t r;

			memcpy(&r, code + i + 1, 4);
			rel = r;
			insn_len = 5;
		} else if (code[i] == 0x0f && i + 6 <= size && (code[i + 1] & 0xf0) == 0x80) {
			int32_t r;

			memcpy(&r, code + i + 2, 4);
			rel = r;
			insn_len = 6;
		} else if ((code[i] == 0xeb || (code[i] & 0xf0) == 0x70) && i + 2 <= size) {
			rel = (int8_t)code[i + 1];
			insn_len = 2;
		} else {
			continue;
		}
		target = addr + i + insn_len + (uint64_t)rel;
		if (target >= addr && target - addr < fsize)
			continue;   /* inside the function */
		if (target < m->start || target >= m->end)
			continue;
		v = target - m->bias;
		if (v >= last_start && v < last_end)
			continue;   /* already found */
		targets++;
		if (has_symbol(dm, target) || !module_fde_range(m, v, &fs, &fe))
			continue;
		if (addr - m->bias >= fs && addr - m->bias < fe)
			continue;   /* the function's own FDE */
		if (!same_state(cfi, addr + i - cfi_bias, target - cfi_bias, &entry))
			continue;
		if (entry && v == fs)
			continue;   /* a tail call to a function */
		add_cold(sym, m, fs, fe, name);
		last_start = fs;
		last_end = fe;
	}
out:
	free(code);
}

const char *cold_lookup(struct symbolizer *sym, struct sym_module *m, Dwfl_Module *dm,
			uint64_t a)
{
	uint64_t v = a - m->bias;

	if (!m->cold_scanned) {
		Dwarf_Addr cfi_bias = 0;
		Dwarf_CFI *cfi;

		m->cold_scanned = true;
		cfi = dm ? dwfl_module_eh_cfi(dm, &cfi_bias) : NULL;
		if (cfi && m->eh_hdr_vaddr != 0)
			for (size_t i = 0; i < sizeof(COLD_FUNCS) / sizeof(COLD_FUNCS[0]); i++)
				scan_func(sym, m, dm, cfi, cfi_bias, COLD_FUNCS[i]);
	}
	for (size_t i = 0; i < m->n_cold; i++)
		if (v >= m->cold[i].start && v < m->cold[i].end)
			return m->cold[i].name;
	return NULL;
}
