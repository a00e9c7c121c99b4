/*
 * symbolizer.c: the lifecycle of a struct symbolizer (one per target), its settings, the refresh
 * (maps.c re-reads the mappings; when the module set changed, this file tells the parts that
 * cache what they learned about the old set) and the lookup of an address: the address cache,
 * else the region mapped there: a module's frames from the build-id cache or elf.c, a JIT symbol
 * from perfmap.c, or the name of the file mapped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/procfs.h"
#include "symbolizer/symbolizer_internal.h"

/* The target's /proc directory and its root. Where its main thread has exited (pthread_exit)
 * while others run on, /proc/PID's maps, mem and root are gone: a live thread's directory
 * stands in (procfs_mem_dir()). */
static void set_proc_dir(struct symbolizer *sym)
{
	struct stat st_root, st_self;

	if (procfs_mem_dir(sym->pid, sym->proc, sizeof(sym->proc)) < 0)
		(void) snprintf(sym->proc, sizeof(sym->proc), "/proc/%d", (int)sym->pid);
	(void) snprintf(sym->root, sizeof(sym->root), "%s/root", sym->proc);
	/* a container: debug files from its own /usr/lib/debug first */
	sym->other_root = stat(sym->root, &st_root) == 0 && stat("/", &st_self) == 0 &&
			  (st_root.st_dev != st_self.st_dev || st_root.st_ino != st_self.st_ino);
}

int sym_proc_moved(struct symbolizer *sym)
{
	char was[sizeof(sym->proc)];

	memcpy(was, sym->proc, sizeof(was));
	set_proc_dir(sym);
	return strcmp(was, sym->proc) ? 0 : -ESRCH;
}

int symbolizer_new(pid_t pid, struct symbolizer **ret)
{
	struct symbolizer *sym;
	int r;

	if (pid <= 0)
		return -EINVAL;
	sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	sym->pid = pid;
	/* the target's pid in its own PID namespace: the name of its perf map there */
	if (procfs_ns_tid("/proc", pid, pid, &sym->nspid, NULL) < 0)
		sym->nspid = pid;
	set_proc_dir(sym);
	(void) snprintf(sym->perfmap_path, sizeof(sym->perfmap_path), "tmp/perf-%d.map",
			(int)sym->nspid);
	(void) snprintf(sym->perfmap_path2, sizeof(sym->perfmap_path2), "tmp/perf-%d.map", (int)pid);
	/* whose files the target's perf map and debug files may be (besides root's) */
	sym->uid = 0;
	(void) sym_proc_uid(pid, &sym->uid);
	sym->kallsyms_path = "/proc/kallsyms";
	strpool_init(&sym->pool);
	perfmap_init(&sym->perfmap);
	kallsyms_init(&sym->kallsyms);
	r = cache_init(&sym->cache);
	if (r == 0)
		r = cache_init(&sym->bid_cache);
	maps_dwfl_setup(sym);
	sym->dwfl = dwfl_begin(&sym->dwfl_cb);
	if (r < 0 || !sym->dwfl) {
		symbolizer_free(sym);
		return -ENOMEM;
	}
	r = symbolizer_refresh(sym);
	if (r < 0) {
		symbolizer_free(sym);
		return r;
	}
	r = unwind_init(sym);
	if (r < 0) {
		symbolizer_free(sym);
		return r;
	}
	/* measured (tests/unit/symbolizer/test_unwind.c, test_live.c): libdw is ~5x faster than
	 * libunwind 1.6's remote unwinder, which blocks signals (two syscalls) per step */
	sym->unwinder = UNWIND_LIBDW;
	*ret = sym;
	return 0;
}

void symbolizer_free(struct symbolizer *sym)
{
	if (!sym)
		return;
	unwind_release(sym);
	if (sym->dwfl)
		dwfl_end(sym->dwfl);
	maps_release(sym);
	cache_release(&sym->cache);
	cache_release(&sym->bid_cache);
	perfmap_release(&sym->perfmap);
	kallsyms_release(&sym->kallsyms);
	strpool_release(&sym->pool);
	free(sym->build_ids);
	free(sym);
}

int symbolizer_refresh(struct symbolizer *sym)
{
	bool changed;
	int r;

	sym->last_refresh_ns = clock_now_ns();
	sym->stats.refreshes++;
	(void) sym_proc_uid(sym->pid, &sym->uid);     /* it may have changed its user */
	r = maps_refresh(sym, &changed);
	/* Lookups by address and the unwinders' rules are about the old set. The build-id cache
	 * holds file addresses, true wherever a module is mapped; a module's .cold parts and
	 * function ranges go with it; the perf map and kallsyms are not about mappings. */
	if (changed) {
		cache_flush(&sym->cache);
		unwind_modules_changed(sym);
	}
	return r;
}

/* symbolizer_refresh() if the last refresh is older than SYM_REFRESH_NS (for an address in no
 * known region), else -EAGAIN. */
static int symbolizer_maybe_refresh(struct symbolizer *sym)
{
	if (clock_now_ns() - sym->last_refresh_ns < SYM_REFRESH_NS)
		return -EAGAIN;
	return symbolizer_refresh(sym);
}

const char *symbolizer_module_name(struct symbolizer *sym, uint64_t addr)
{
	const struct sym_region *g = NULL;

	/* most often the region the last one was in (a sample's leaf in the interpreter) */
	if (sym->region_hint < sym->n_regions) {
		g = &sym->regions[sym->region_hint];
		if (addr < g->start || addr >= g->end)
			g = NULL;
	}
	if (!g)
		g = maps_find(sym, addr);
	if (!g && symbolizer_maybe_refresh(sym) == 0)
		g = maps_find(sym, addr);
	if (g)
		sym->region_hint = (size_t) (g - sym->regions);
	return g ? g->name : NULL;
}

/* symbolizer_lookup(), or with dwarf false symbolizer_lookup_name(): the address cache keeps
 * the two apart (its second key), the build-id cache holds full lookups alone. */
static int lookup(struct symbolizer *sym, uint64_t addr, bool is_return_addr, bool dwarf,
		  struct native_frame *ret, size_t max, size_t *ret_n)
{
	struct native_frame f[SYM_MAX_INLINE + 1];
	uint64_t a = is_return_addr && addr > 0 ? addr - 1 : addr;
	const struct cache_entry *e;
	const struct sym_region *g;
	size_t n = 0;

	if (!ret_n || (max > 0 && !ret))
		return -EINVAL;
	*ret_n = 0;
	sym->stats.lookups++;
	e = cache_find(&sym->cache, a + 1, !dwarf);
	if (e) {
		size_t skip = e->n > max ? e->n - max : 0;

		sym->stats.cache_hits++;
		n = e->n - skip;
		for (size_t i = 0; i < n; i++) {
			ret[i] = e->frames[skip + i];
			ret[i].addr = addr;
		}
		*ret_n = n;
		return 0;
	}
	g = maps_find(sym, a);
	if (!g && symbolizer_maybe_refresh(sym) == 0)
		g = maps_find(sym, a);
	if (!g)
		return -ENOENT;
	if (g->mod && g->mod->bid_key && dwarf &&
	    (e = cache_find(&sym->bid_cache, g->mod->bid_key, a - g->mod->bias)) != NULL &&
	    e->n <= SYM_MAX_INLINE + 1) {
		/* the same build-id resolved before, at this file address (maybe mapped elsewhere) */
		sym->stats.bid_cache_hits++;
		n = e->n;
		for (size_t i = 0; i < n; i++) {
			f[i] = e->frames[i];
			f[i].module = g->mod->name;
		}
	} else if (g->mod) {
		int r = elf_resolve(sym, g->mod, a, dwarf, f, &n);

		if (r < 0)
			return r;
		if (g->mod->bid_key && dwarf)
			cache_store(&sym->bid_cache, g->mod->bid_key, a - g->mod->bias, f, n);
	} else if (g->kind == REGION_ANON) {
		const struct jit_sym *j = perfmap_lookup(sym, a);

		if (!j)
			return -ENOENT;
		f[0] = (struct native_frame){ .addr = a, .name = j->name, .jit = true,
					      .module_offset = a - j->start };
		n = 1;
		/* JIT code is replaced: not cached */
		goto copy;
	} else if (g->kind == REGION_FILE && g->name) {
		f[0] = (struct native_frame){ .addr = a, .module = g->name,
					      .module_offset = a - g->start + g->pgoff };
		n = 1;
	} else {
		return -ENOENT;
	}
	cache_store(&sym->cache, a + 1, !dwarf, f, n);
copy:
	{
		/* too many frames: keep the outer ones (the containing function last) */
		size_t skip = n > max ? n - max : 0;

		n -= skip;
		for (size_t i = 0; i < n; i++) {
			ret[i] = f[skip + i];
			ret[i].addr = addr;
		}
	}
	*ret_n = n;
	return 0;
}

int symbolizer_lookup(struct symbolizer *sym, uint64_t addr, bool is_return_addr,
		      struct native_frame *ret, size_t max, size_t *ret_n)
{
	return lookup(sym, addr, is_return_addr, true, ret, max, ret_n);
}

int symbolizer_lookup_name(struct symbolizer *sym, uint64_t addr, struct native_frame *ret)
{
	size_t n = 0;
	int r = lookup(sym, addr, false, false, ret, 1, &n);

	return r < 0 ? r : n == 1 ? 0 : -ENOENT;
}

int symbolizer_warm(struct symbolizer *sym)
{
	for (size_t i = 0; i < sym->n_modules; i++) {
		Dwfl_Module *dm = sym->modules[i]->dwmod;
		Dwarf_Addr bias;
		Dwarf_Aranges *ar;
		size_t n;
		Dwarf *dw;

		if (!dm)
			continue;
		(void) dwfl_module_getsymtab(dm);
		(void) dwfl_module_eh_cfi(dm, &bias);
		dw = dwfl_module_getdwarf(dm, &bias);
		if (dw)
			(void) dwarf_getaranges(dw, &ar, &n);
	}
	return 0;
}

void symbolizer_set_unwinder(struct symbolizer *sym, enum symbolizer_unwinder which)
{
	if (which == UNWIND_LIBUNWIND && !unwind_have_libunwind())
		which = UNWIND_LIBDW;
	sym->unwinder = which;
}

const struct symbolizer_stats *symbolizer_stats(const struct symbolizer *sym)
{
	return &sym->stats;
}
