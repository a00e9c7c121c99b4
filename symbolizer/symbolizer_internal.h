/*
 * symbolizer internals, shared by the files of symbolizer/ and by its unit tests (which link the
 * static library and call the parsers directly). Not part of the public contract.
 *
 * The files, leaves first; each calls only files listed before it (and base/: strpool, clock,
 * hash, procfs), never one after it:
 *
 * file.c        leaves: a whole (proc) file read (sym_read_file), a file the target can plant
 *               opened safely (sym_open_planted), its owner (sym_proc_uid), a path's basename.
 * cache.c       the lookup caches (struct addr_cache): two 64-bit keys -> a copy of the frames.
 * module.c      one mapped ELF file (struct sym_module): opened through /proc/PID/root/PATH or
 *               /proc/PID/map_files/ (the vdso copied from /proc/PID/mem), mmapped read-only, its
 *               PT_LOADs, load bias, build-id and .eh_frame_hdr parsed by hand; reads of its
 *               image (module_read), the .eh_frame FDE covering an address (module_fde_range);
 *               the build-ids of the modules opened (symbolizer_build_id()).
 * debuginfo.c   libdwfl's find_debuginfo callback: a module's debug file and its dwz alternate
 *               file, by build-id and by name, each opened as a file the target can plant.
 * cold.c        "<function>.cold" for the nameless .cold part of an exported split function in a
 *               stripped module (cold_lookup).
 * plt.c         "name@plt" for a PLT stub, by its GOT slot's relocation (plt_lookup).
 * elf.c         an address in a module -> frames through libdw: symtab/dynsym, source line,
 *               inline chain, demangling; function ranges of modules without DWARF (elf_resolve).
 * perfmap.c     /tmp/perf-PID.map: JIT symbols, reloaded when the file changed (perfmap_lookup).
 * kernel.c      /proc/kallsyms (symbolizer_kernel()).
 * maps.c        /proc/PID/maps -> regions (struct sym_region) and the module set: which mappings
 *               make modules, which modules a refresh keeps, opens or frees (maps_refresh); the
 *               Dwfl the modules are reported to; address -> region or module (maps_find).
 * unwind.c      symbolizer_unwind(): the libdw unwinder (dwfl_attach_state) and the libunwind
 *               one (remote address space with our own accessors), both reading the stack copy
 *               and the module images.
 * symbolizer.c  new/free/warm/settings; symbolizer_refresh(): maps_refresh(), then, when the
 *               module set changed, the address cache and the unwinders' rules are flushed;
 *               symbolizer_lookup() and symbolizer_module_name(): the address cache, the region
 *               (refreshing once, rate-limited, for an address in none), then the build-id
 *               cache or elf_resolve(), perfmap_lookup(), or the mapped file's name.
 *
 * The struct symbolizer owns everything: the regions and modules (built and freed by maps.c),
 * the caches' copies of frames, the perf map and kallsyms tables, and the string pool that holds
 * every name handed out. It is not thread-safe: one thread uses it at a time.
 * Two caches of lookups: by address (SYM_CACHE_MAX, then it starts over), flushed when the set
 * of modules changes; and by build-id and address in the file, which outlives refreshes, so a
 * module mapped again (another address, another path, the same library after a dlclose) or the
 * modules that stay when others come and go are not resolved through libdw again.
 */
#ifndef HWSPY_SYMBOLIZER_INTERNAL_H
#define HWSPY_SYMBOLIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "base/strpool.h"
#include "symbolizer/symbolizer.h"

/* Bounds on what is read from the target (all of it untrusted). */
#define SYM_MAX_REGIONS      65536   /* lines of /proc/PID/maps kept */
#define SYM_MAX_MODULES      4096
#define SYM_MAX_LOADS        16      /* PT_LOAD segments per module */
#define SYM_MAX_LINE         4096    /* longest line read from maps / kallsyms / perf map */
#define SYM_MAX_INLINE       16      /* inline frames per address */
#define SYM_MAX_KSYMS        (1u << 23)
#define SYM_MAX_JIT_SYMS     (1u << 22)
#define SYM_CACHE_MIN        4096    /* address cache slots at first (power of two) */
#define SYM_CACHE_MAX        (1u << 20)  /* slots at most; then the cache starts over */
#define SYM_REFRESH_NS       20000000ull  /* automatic refreshes at most every 20 ms */
#define SYM_MAX_COLD         8       /* nameless .cold ranges named per module */
#define SYM_MAX_BUILD_IDS    65536   /* module name -> build-id pairs remembered */
#define SYM_MAX_RANGES       65536   /* function ranges per module without DWARF */

/* ---- leaves (file.c) ------------------------------------------------------------------------ */

/* Reads a whole (proc) file, at most max bytes, NUL-terminated; the caller frees *ret. */
int sym_read_file(const char *path, char **ret, size_t *ret_len, size_t max);
/* Opens a file the target can plant (its perf map, a debug file, the path of a mapped file)
 * without letting it choose what is opened, as perf does for perf maps: path is looked up from
 * dir_fd (openat2) inside it (RESOLVE_IN_ROOT: a target's /proc/PID/root, where an absolute link
 * would otherwise lead out to hwspy's own root), no magic link followed, the last component not
 * followed, and nothing opened by the look-up (O_PATH: a FIFO does not block, a device is not
 * opened). The file must then be regular, owned by root or owner ((uid_t) -1: anyone), at most
 * max bytes; only then is it opened to read (through /proc/self/fd). Flags:
 *   SYM_PLANT_FOLLOW    the last component may be a link (a build-id link farm), kept inside
 *   SYM_PLANT_NO_LINKS  no link anywhere on the path (a path the kernel printed: canonical)
 *   SYM_PLANT_MAGIC     a /proc magic link (/proc/PID/map_files/...) followed: path absolute
 * Without openat2 no link is followed at all. The fd (O_RDONLY|O_CLOEXEC) with its fstat in
 * *ret_st (may be NULL), or -errno: the look-up's (-ENOENT, -ELOOP, -EXDEV a link or ".."
 * leaving dir_fd, ...), -EINVAL not a regular file, -EPERM another user's, -EFBIG too big. */
#define SYM_PLANT_FOLLOW   1u
#define SYM_PLANT_NO_LINKS 2u
#define SYM_PLANT_MAGIC    4u
struct stat;
int sym_open_planted(int dir_fd, const char *path, unsigned flags, uid_t owner, uint64_t max,
		     struct stat *ret_st);
/* The owner of /proc/PID (the process's effective user; root if it is not dumpable) into
 * *ret: 0, or stat's -errno (*ret untouched). */
int sym_proc_uid(pid_t pid, uid_t *ret);
/* The part of path after its last '/'. */
const char *sym_basename(const char *path);

/* Value of one hex digit, or -1. */
static inline int sym_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- lookup caches (cache.c) ---------------------------------------------------------------- */

struct cache_entry {
	uint64_t k1, k2;         /* k1 0: empty. By address: address + 1, 0. By build-id: the
	                          * module's bid_key, the address less the module's load bias */
	uint32_t n;
	struct native_frame *frames;
};

struct addr_cache {
	struct cache_entry *slots;   /* open addressing, size slots (power of two) */
	size_t size, used;
};

/* 0 or -ENOMEM. */
int cache_init(struct addr_cache *c);
/* Forgets every entry (keeps the slots). */
void cache_flush(struct addr_cache *c);
void cache_release(struct addr_cache *c);
/* The entry of (k1, k2), or NULL. Valid until the next cache_store() or cache_flush(). */
const struct cache_entry *cache_find(const struct addr_cache *c, uint64_t k1, uint64_t k2);
/* Stores a copy of f[0..n) under (k1 != 0, k2), a key not stored yet. Half full, the cache
 * doubles first, or at SYM_CACHE_MAX slots (or out of memory) starts over empty. Out of memory
 * for the copy: stores nothing. */
void cache_store(struct addr_cache *c, uint64_t k1, uint64_t k2, const struct native_frame *f,
		 size_t n);

/* ---- modules (module.c) --------------------------------------------------------------------- */

struct sym_load {
	uint64_t vaddr, offset, filesz, memsz;
};

/* A nameless FDE found to be the .cold part of an exported function (cold.c). */
struct sym_cold {
	uint64_t start, end;     /* ELF vaddrs */
	const char *name;        /* pooled "<function>.cold" */
};

/* A function of a module without DWARF: every address in it resolves to the same name. */
struct sym_range {
	uint64_t start, end;     /* runtime addresses */
	const char *name;        /* pooled */
};

/* cuindex.c: one CU's functions by address */
struct cu_index {
	Dwarf_Off cu;
	struct cu_fn *fn;
	size_t n;
};

struct sym_module {
	struct symbolizer *sym;  /* whose (libdwfl's callbacks have the module alone) */
	char *path;              /* as /proc/PID/maps names it */
	const char *name;        /* pooled basename */
	char *open_path;         /* the path we opened (/proc/PID/map_files/.. or /proc/PID/root/..) */
	dev_t dev;
	uint64_t ino;
	uint64_t start, end;     /* runtime range reported to libdwfl */
	uint64_t bias;           /* runtime address - ELF vaddr */
	int fd;
	const unsigned char *image;  /* the whole file, mmapped read-only */
	size_t image_size;
	struct sym_load loads[SYM_MAX_LOADS];
	size_t n_loads;
	uint64_t eh_hdr_vaddr;   /* .eh_frame_hdr (0: none) */
	uint64_t eh_table_vaddr; /* its binary search table */
	uint64_t eh_fde_count;
	unsigned char build_id[64];
	size_t build_id_len;
	uint64_t bid_key;        /* hash of the build-id, never 0; 0 without a build-id */
	Dwfl_Module *dwmod;
	bool seen;               /* maps.c: kept by the refresh under way */
	bool cold_scanned;       /* cold.c looked for .cold parts (on the first nameless lookup) */
	int has_dwarf;           /* -1 not known yet, 0 no DWARF (symbols only), 1 DWARF */
	/* elf.c, DWARF: the subprogram the last lookup's scopes began at, in the CU at last_cu
	 * (the eval loop's leaf addresses fall in one function: no scan of its CU's DIEs) */
	Dwarf_Die last_sub;
	Dwarf_Off last_cu;
	bool has_last_sub;
	struct cu_index *cus;    /* cuindex.c: the CUs looked up in, by offset */
	size_t n_cus, cap_cus;
	struct sym_range *ranges;/* elf.c: functions resolved so far by their symbols, by start */
	size_t n_ranges, cap_ranges;
	struct sym_cold cold[SYM_MAX_COLD];
	size_t n_cold;
	struct sym_range *plt;   /* plt.c: its PLT stubs, by start (file addresses) */
	size_t n_plt, cap_plt;
	bool plt_read;           /* plt.c read them (on the first nameless lookup) */
};

struct maps_line;

/* Opens the file of a mapping as a module (l: its first mapping line), or the vdso from the
 * target's memory. 0, or -errno (-ENOMEM stops a refresh; others skip the module). */
int module_open(struct symbolizer *sym, const struct maps_line *l, struct sym_module **ret);
int module_open_vdso(struct symbolizer *sym, const struct maps_line *l, struct sym_module **ret);
/* Reads len bytes at runtime address addr from a module's file image. true if all read. */
bool module_read(const struct sym_module *m, uint64_t addr, void *dst, size_t len);
/* The FDE of .eh_frame covering the ELF vaddr v of module m, found through .eh_frame_hdr's
 * table: true and [*ret_start, *ret_end) (ELF vaddrs), or false (no .eh_frame_hdr, no FDE
 * covers v, or an encoding we do not read). Reads only the module's file image. */
bool module_fde_range(const struct sym_module *m, uint64_t v, uint64_t *ret_start,
		      uint64_t *ret_end);
void module_free(struct sym_module *m);

/* ---- a CU's functions by address (cuindex.c) ------------------------------------------------ */

/* The subprogram of module m's CU cu (its DIE) whose ranges hold pc (the CU's addresses): 1
 * and *ret, 0 where none does, -1 where its index could not be made (no memory). The CU's
 * subprograms are listed at its first lookup. */
int cu_index_find(struct sym_module *m, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *ret);
void cu_index_free(struct sym_module *m);

/* ---- debug files (debuginfo.c) -------------------------------------------------------------- */

/* libdwfl's find_debuginfo callback (the module's userdata: its struct sym_module): an fd of
 * the debug file, or of the dwz alternate file libdwfl asks for, its name in
 * *debuginfo_file_name; -1 (errno 0) when there is none that fits. */
int debuginfo_find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		   const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
		   char **debuginfo_file_name);

/* ---- .cold parts (cold.c) ------------------------------------------------------------------- */

/* Name for the runtime address a of module m that has no symbol: "<function>.cold" when a lies
 * in the FDE of a nameless .cold part of an exported split function (_PyEval_EvalFrameDefault),
 * else NULL. The first call for a module scans for those parts (bounded) and caches them. */
const char *cold_lookup(struct symbolizer *sym, struct sym_module *m, Dwfl_Module *dm,
			uint64_t a);

/* ---- PLT stubs (plt.c) ---------------------------------------------------------------------- */

/* "name@plt" when the file address v of module m lies in one of its PLT stubs (.plt less PLT0,
 * .plt.sec, .plt.got) whose jump goes through a GOT slot a relocation names, else NULL. The
 * first call for a module reads its section headers and relocations (bounded). */
const char *plt_lookup(struct symbolizer *sym, struct sym_module *m, uint64_t v);

/* ---- libdw lookups (elf.c) ------------------------------------------------------------------ */

/* Frames of the runtime address a in module m, innermost first (at most SYM_MAX_INLINE inline
 * frames, then the containing function) into f[0..*ret_n). dwarf false: the containing function
 * alone, named from the symbol table, without file and line (no DWARF loaded). 0. */
int elf_resolve(struct symbolizer *sym, struct sym_module *m, uint64_t a, bool dwarf,
		struct native_frame *f, size_t *ret_n);

/* ---- JIT maps (perfmap.c) ------------------------------------------------------------------- */

struct jit_sym {
	uint64_t start, size;
	uint32_t seq;            /* line order: a later line wins over an earlier overlapping one */
	const char *name;        /* pooled */
};

struct perfmap {
	struct jit_sym *syms;
	size_t n, cap;
	size_t malformed;        /* lines skipped */
	off_t loaded_size;       /* file size when last loaded */
	int64_t loaded_mtime_ns;
	uint64_t last_check_ns;
};

void perfmap_init(struct perfmap *pm);
void perfmap_release(struct perfmap *pm);
/* Parses the perf map at path under dir_fd, opened as sym_open_planted() does (a regular file of
 * owner's or root's, no link, no wait), its first PERFMAP_MAX_BYTES at most, replacing what was
 * loaded, unless its size and mtime are those loaded last. 0, -ENOMEM, or the open's -errno. */
int perfmap_load(struct perfmap *pm, struct strpool *pool, int dir_fd, const char *path,
		 uid_t owner);
/* Parses a buffer of perf map lines. */
int perfmap_parse(struct perfmap *pm, struct strpool *pool, const char *data, size_t len);
const struct jit_sym *perfmap_find(const struct perfmap *pm, uint64_t addr);
/* JIT symbol for an address in an anonymous mapping; reloads the perf map when it changed
 * (checked at most every SYM_REFRESH_NS). */
const struct jit_sym *perfmap_lookup(struct symbolizer *sym, uint64_t addr);

/* ---- kernel symbols (kernel.c) -------------------------------------------------------------- */

struct ksym {
	uint64_t addr;
	const char *name;        /* pooled */
	const char *module;      /* pooled "[kernel.kallsyms]" or the module name */
};

struct kallsyms {
	struct ksym *syms;
	size_t n;
	bool loaded;
	int load_error;
};

void kallsyms_init(struct kallsyms *k);
void kallsyms_release(struct kallsyms *k);
/* Parses a kallsyms-format file: text symbols, sorted. 0, -ENOENT, -ENOMEM, -EACCES (all
 * addresses zero: kptr_restrict). */
int kallsyms_load(struct kallsyms *k, struct strpool *pool, const char *path);
const struct ksym *kallsyms_find(const struct kallsyms *k, uint64_t addr);

/* ---- regions and the module set (maps.c) ---------------------------------------------------- */

enum sym_region_kind { REGION_FILE, REGION_ANON, REGION_SPECIAL };

struct sym_region {
	uint64_t start, end;
	uint64_t pgoff;
	bool exec;
	enum sym_region_kind kind;
	struct sym_module *mod;  /* REGION_FILE with an ELF module, else NULL */
	const char *name;        /* pooled basename of the mapped file, or NULL */
};

/* One parsed line of /proc/PID/maps. path points into the line. */
struct maps_line {
	uint64_t start, end, pgoff;
	char perms[5];
	unsigned int dev_major, dev_minor;
	uint64_t ino;
	const char *path;        /* "" for anonymous */
};

/* Parses one maps line (without its newline, NUL-terminated, modified in place).
 * 0 or -EINVAL. */
int maps_parse_line(char *line, struct maps_line *ret);

/* Region containing addr, or NULL. */
const struct sym_region *maps_find(const struct symbolizer *sym, uint64_t addr);
/* Module containing the runtime address addr (any of its PT_LOAD ranges), or NULL. */
struct sym_module *maps_find_module(const struct symbolizer *sym, uint64_t addr);
/* Sets up the Dwfl callbacks (find_elf serves our module files). */
void maps_dwfl_setup(struct symbolizer *sym);
/* Re-reads /proc/PID/maps: new regions, the modules of its executable mappings (those of the
 * last set kept when the same file is at the same place, the others opened), reported to the
 * Dwfl; the modules gone are freed. *ret_changed: a module came or went (false when nothing was
 * swapped in). 0, -ESRCH (target gone), -ENOMEM, or the read's -errno. */
int maps_refresh(struct symbolizer *sym, bool *ret_changed);
/* Frees the regions and modules. */
void maps_release(struct symbolizer *sym);

/* ---- unwinders (unwind.c) ------------------------------------------------------------------- */

/* The sample being unwound; set for the duration of symbolizer_unwind. */
struct unwind_ctx {
	const uint64_t *regs;
	const unsigned char *stack;
	uint64_t sp;             /* address of stack[0] */
	size_t stack_size;
};

struct unwind_state;     /* libunwind address space (opaque: libunwind.h stays in unwind.c) */

int unwind_init(struct symbolizer *sym);
void unwind_release(struct symbolizer *sym);
/* The module set changed: drop cached unwind info. */
void unwind_modules_changed(struct symbolizer *sym);
/* Whether the libunwind unwinder was compiled in. */
bool unwind_have_libunwind(void);

/* ---- the symbolizer (symbolizer.c) ---------------------------------------------------------- */

struct symbolizer;
/* The target's maps read empty or gone: where its main thread has exited since (pthread_exit)
 * while others run on, sym->proc (and the paths under it) now name a live thread's directory:
 * 0; -ESRCH where nothing changed (the target is gone). */
int sym_proc_moved(struct symbolizer *sym);

struct symbolizer {
	pid_t pid;
	pid_t nspid;             /* the pid inside the target's namespace (perf map name) */
	char proc[48];           /* "/proc/PID", or "/proc/PID/task/TID" of a live thread where
	                          * the main thread has exited (procfs_mem_dir()) */
	char root[64];           /* proc + "/root" */

	Dwfl *dwfl;
	Dwfl_Callbacks dwfl_cb;
	bool cu_scan;            /* no CU index: each lookup scans its CU, as before cuindex.c
	                          * (a test compares the two) */
	bool other_root;         /* its root is not ours (a container): its debug files first */
	bool dwfl_attached;
	size_t region_hint;      /* regions' index symbolizer_module_name() found last */

	struct sym_region *regions;   /* sorted by start */
	size_t n_regions;
	struct sym_module **modules;
	size_t n_modules, cap_modules;
	uint64_t last_refresh_ns;

	enum symbolizer_unwinder unwinder;
	struct unwind_ctx cur;
	struct unwind_state *lu;

	struct strpool pool;
	struct addr_cache cache;     /* by address */
	struct addr_cache bid_cache; /* by build-id and file address */
	struct perfmap perfmap;
	char perfmap_path[64];       /* its map under root: "tmp/perf-NSPID.map" */
	char perfmap_path2[64];      /* else under ours: "tmp/perf-PID.map" */
	uid_t uid;                   /* the target's (effective) user: its /proc/PID's owner */
	struct kallsyms kallsyms;
	const char *kallsyms_path;
	struct sym_build_id {
		const char *name;        /* pooled module basename */
		const char *hex;         /* pooled lower-case hex; NULL: files of that name had
		                          * other build-ids */
	} *build_ids;                /* every module with a build-id opened so far */
	size_t n_build_ids, cap_build_ids;

	void *cxx_lib;           /* dlopen'ed libstdc++ (for __cxa_demangle), or NULL */
	char *(*cxa_demangle)(const char *, char *, size_t *, int *);
	bool demangle_tried;

	struct symbolizer_stats stats;
};

#endif
