/*
 * symbolizer: native frames of a target process: DWARF CFI unwinding of a sampled user-stack
 * copy, and address -> (function, module, source file:line, inline chain) through libdw, plus
 * kernel symbols (/proc/kallsyms) and JIT maps (/tmp/perf-PID.map).
 *
 * One struct symbolizer per target. Modules come from /proc/PID/maps and are opened through
 * /proc/PID/map_files/ or /proc/PID/root/ (containers, deleted files); their parsed ELF/DWARF
 * is kept while they stay mapped, and lookups are also cached by build-id and file address, so
 * a library mapped again is not resolved again. Files the target can put in place (its perf map,
 * debug files found by build-id or .gnu_debuglink, a mapped file's path) are opened as perf
 * opens a perf map: regular files of the target's user or root, no link followed where the
 * target could plant one (and none out of its root), never waited on (a FIFO), bounded; any
 * other is as good as missing. symbolizer_refresh() re-reads the mappings (a
 * C extension imported after attaching); symbolizer_lookup() and symbolizer_module_name() of an
 * address in no known mapping refresh once by themselves, rate-limited. Strings handed out stay
 * valid until symbolizer_free().
 *
 * Registers are perf's x86-64 PERF_SAMPLE_REGS_USER layout sampled with base/regs.h's
 * REGS_USER_MASK (REGS_USER_N of them, enum regs_user); the stack copy starts at regs' SP.
 *
 * A struct symbolizer is used by one thread at a time. Unwinding reads only the stack copy and
 * the module files (the vdso: a copy taken when a refresh first saw it), never the live
 * target, so it also works after the target moved on.
 *
 * Errors (negative errno): -ESRCH target gone, -ENOENT no mapping / symbol for an address,
 * -EINVAL malformed input (regs missing, empty stack, pid <= 0), -ENOMEM, or the error of
 * reading /proc/PID/maps (-EACCES: not allowed to). Library code never prints.
 */
#ifndef HWSPY_SYMBOLIZER_H
#define HWSPY_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/regs.h"


struct native_frame {
	uint64_t addr;          /* the address looked up */
	const char *name;       /* demangled function name, or NULL if none (module+0xOFFSET then) */
	const char *module;     /* basename of the mapped file ("libpython3.11.so.1.0"), or NULL */
	const char *file;       /* source file where debug info says, else NULL */
	int line;               /* 0 if unknown */
	bool inlined;           /* an inlined call inside the next (outer) frame */
	bool jit;               /* from /tmp/perf-PID.map */
	uint64_t module_offset; /* offset in module's file, see below */
};
/* module_offset: addr's offset in module's file; for a frame with name NULL (shown as
 * module+0xOFFSET) the offset of the start of the function that contains the address, taken from
 * the module's .eh_frame FDE covering it (found through .eh_frame_hdr), so that all addresses of
 * one nameless function share one frame; without such an FDE, the address's own offset. For a
 * return address the FDE is the one covering addr - 1 (like the symbol). For JIT frames: addr's
 * offset in its perf map symbol; for kernel frames, in its kallsyms symbol. */

struct symbolizer_stats {
	uint64_t unwinds, unwind_frames, unwind_errors;
	uint64_t lookups, cache_hits;
	uint64_t bid_cache_hits;     /* misses by address answered by build-id (no libdw) */
	uint64_t refreshes;
	uint64_t modules;
};

enum symbolizer_unwinder { UNWIND_LIBDW, UNWIND_LIBUNWIND };

struct symbolizer;

int symbolizer_new(pid_t pid, struct symbolizer **ret);
void symbolizer_free(struct symbolizer *sym);
int symbolizer_refresh(struct symbolizer *sym);
/* Which unwinder symbolizer_unwind() uses (default: the faster one, measured: libdw). Without
 * libunwind at build time UNWIND_LIBUNWIND falls back to libdw. */
void symbolizer_set_unwinder(struct symbolizer *sym, enum symbolizer_unwinder which);

/* Unwinds a user stack copy: ret_ips[0] is regs' IP, then return addresses outwards, at most
 * max. An unwind that stops early (no CFI, end of copy) still returns what it found. */
int symbolizer_unwind(struct symbolizer *sym, const uint64_t *regs, size_t n_regs,
		      const void *stack, size_t stack_size, uint64_t *ret_ips, size_t max,
		      size_t *ret_n);

/* Frames for one address, innermost first (inline frames, then the containing function).
 * is_return_addr: the address is a return address (look up addr - 1). With more frames than
 * max, the innermost inline frames are left out (the containing function is always last).
 * Addresses in anonymous executable memory are looked up in /tmp/perf-PID.map (jit = true). */
int symbolizer_lookup(struct symbolizer *sym, uint64_t addr, bool is_return_addr,
		      struct native_frame *ret, size_t max, size_t *ret_n);

/* The function containing addr, one frame named from the symbol table alone: no file and line,
 * no inline frames, and no DWARF loaded for it (a leaf without --native: libc's DWARF is
 * ~9 MB decompressed). 0, or -ENOENT where no module or JIT map holds addr. */
int symbolizer_lookup_name(struct symbolizer *sym, uint64_t addr, struct native_frame *ret);

/* Basename of the file mapped at addr ("libpython3.11.so.1.0"), NULL if none: a cheap test of
 * which module an address is in, without symbol lookup. Valid until symbolizer_free(). */
const char *symbolizer_module_name(struct symbolizer *sym, uint64_t addr);

/* The GNU build-id (NT_GNU_BUILD_ID note) of the module named module (a basename, as
 * native_frame.module gives it) as lower-case hex, what `readelf -n` prints ("8d3f..."), or
 * NULL when no module of that name with a build-id was opened. Every module opened is
 * remembered, also after it is unmapped (dlclose) or the mappings are refreshed; two files
 * with the same basename and other build-ids (an exec) leave that name none (NULL). Valid
 * until symbolizer_free(). */
const char *symbolizer_build_id(const struct symbolizer *sym, const char *module);

/* Loads now what the first unwinds and lookups in each module mapped now would load (symbol
 * table, CFI, the DWARF unit index): called before sampling starts, so that the first samples
 * are not processed slowly while more arrive. Returns 0 (what libdw cannot load is left to
 * the first use). */
int symbolizer_warm(struct symbolizer *sym);

/* Kernel address -> symbol from /proc/kallsyms (loaded on first use). */
int symbolizer_kernel(struct symbolizer *sym, uint64_t addr, struct native_frame *ret);

const struct symbolizer_stats *symbolizer_stats(const struct symbolizer *sym);

#endif
