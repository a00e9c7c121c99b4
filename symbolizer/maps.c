/*
 * maps.c: /proc/PID/maps -> regions and modules, the Dwfl they are reported to, refresh.
 *
 * A module is an ELF file with at least one executable mapping (module.c opens and parses it).
 * The same module is reported to libdwfl with dwfl_report_module(); libdwfl opens it through our
 * find_elf callback, so re-reporting an unchanged module on refresh keeps its parsed
 * symbols/DWARF/CFI.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/clock.h"
#include "symbolizer/symbolizer_internal.h"

#define MAPS_MAX_BYTES (64u << 20)


static int parse_hex(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (n < 17) {
		int d = sym_hex_digit(*s);

		if (d < 0)
			break;
		if (n == 16)
			return -EINVAL;
		v = (v << 4) | (uint64_t)d;
		s++;
		n++;
	}
	if (n == 0)
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

/* "START-END PERMS PGOFF MAJ:MIN INODE   PATH" */
int maps_parse_line(char *line, struct maps_line *ret)
{
	const char *p = line;
	uint64_t maj, min;

	memset(ret, 0, sizeof(*ret));
	if (parse_hex(&p, &ret->start) < 0 || expect(&p, '-') < 0 ||
	    parse_hex(&p, &ret->end) < 0 || expect(&p, ' ') < 0)
		return -EINVAL;
	if (ret->end <= ret->start)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		if (*p == '\0' || *p == ' ')
			return -EINVAL;
		ret->perms[i] = *p++;
	}
	ret->perms[4] = '\0';
	if (expect(&p, ' ') < 0 || parse_hex(&p, &ret->pgoff) < 0 || expect(&p, ' ') < 0 ||
	    parse_hex(&p, &maj) < 0 || expect(&p, ':') < 0 || parse_hex(&p, &min) < 0 ||
	    expect(&p, ' ') < 0)
		return -EINVAL;
	ret->dev_major = (unsigned int)maj;
	ret->dev_minor = (unsigned int)min;
	{
		uint64_t ino = 0;
		int n = 0;

		while (*p >= '0' && *p <= '9' && n < 20) {
			ino = ino * 10 + (uint64_t)(*p - '0');
			p++;
			n++;
		}
		if (n == 0)
			return -EINVAL;
		ret->ino = ino;
	}
	while (*p == ' ')
		p++;
	ret->path = p;
	return 0;
}

/* ---- libdwfl ------------------------------------------------------------------------------- */

static int find_elf_cb(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	struct sym_module *m = *userdata;
	int fd;

	(void) mod;
	(void) modname;
	(void) base;
	if (!m)
		return -1;
	if (m->fd < 0) {
		/* in-memory image ([vdso]): libdwfl owns the Elf, the bytes stay ours */
		*elfp = elf_memory((char *)m->image, m->image_size);
		return -1;
	}
	fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	*file_name = strdup(m->open_path);
	return fd;
}

static int report_modules(struct symbolizer *sym)
{
	dwfl_report_begin(sym->dwfl);
	for (size_t i = 0; i < sym->n_modules; i++) {
		struct sym_module *m = sym->modules[i];
		void **userdata = NULL;

		m->dwmod = dwfl_report_module(sym->dwfl, m->path, m->start, m->end);
		if (!m->dwmod)
			continue;
		(void) dwfl_module_info(m->dwmod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
		if (userdata)
			*userdata = m;
	}
	if (dwfl_report_end(sym->dwfl, NULL, NULL) != 0)
		return -ENOMEM;
	return 0;
}

void maps_dwfl_setup(struct symbolizer *sym)
{
	sym->dwfl_cb.find_elf = find_elf_cb;
	sym->dwfl_cb.find_debuginfo = dwfl_standard_find_debuginfo;
	sym->dwfl_cb.section_address = dwfl_offline_section_address;
	sym->dwfl_cb.debuginfo_path = &sym->debuginfo_path;
}

/* ---- refresh ------------------------------------------------------------------------------- */

static int cmp_region(const void *a, const void *b)
{
	const struct sym_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static struct sym_module *find_old_module(struct sym_module **mods, size_t n,
					  const struct maps_line *l, dev_t dev)
{
	for (size_t i = 0; i < n; i++) {
		struct sym_module *m = mods[i];

		if (m && m->ino == l->ino && m->dev == dev && l->start >= m->start &&
		    l->start < m->end && strcmp(m->path, l->path) == 0)
			return m;
	}
	return NULL;
}

int symbolizer_refresh(struct symbolizer *sym)
{
	char path[64], *text = NULL, *line, *save = NULL;
	size_t len, n_lines = 0, n_regions = 0, n_new = 0, cap_new = 0;
	struct sym_region *regions = NULL;
	struct sym_module **mods = NULL;
	struct maps_line *lines = NULL;
	bool changed = false;
	int r;

	sym->last_refresh_ns = clock_now_ns();
	sym->stats.refreshes++;
	(void) snprintf(path, sizeof(path), "/proc/%d/maps", (int)sym->pid);
	r = sym_read_file(path, &text, &len, MAPS_MAX_BYTES);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	if (len == 0) {
		free(text);
		return -ESRCH;   /* a zombie has no mappings */
	}
	for (size_t i = 0; i < len; i++)
		n_lines += text[i] == '\n';
	n_lines++;
	if (n_lines > SYM_MAX_REGIONS)
		n_lines = SYM_MAX_REGIONS;
	lines = calloc(n_lines, sizeof(*lines));
	regions = calloc(n_lines, sizeof(*regions));
	if (!lines || !regions) {
		r = -ENOMEM;
		goto out;
	}
	for (line = strtok_r(text, "\n", &save); line && n_regions < n_lines;
	     line = strtok_r(NULL, "\n", &save)) {
		struct maps_line *l = &lines[n_regions];
		struct sym_region *g = &regions[n_regions];

		if (strlen(line) > SYM_MAX_LINE + PATH_MAX || maps_parse_line(line, l) < 0)
			continue;
		g->start = l->start;
		g->end = l->end;
		g->pgoff = l->pgoff;
		g->exec = l->perms[2] == 'x';
		if (l->path[0] != '\0') {
			const char *base = sym_basename(l->path);

			g->name = strpool_intern(&sym->pool, base, strlen(base));
		}
		if (l->path[0] == '\0')
			g->kind = REGION_ANON;
		else if (l->path[0] == '[' || l->ino == 0)
			g->kind = strncmp(l->path, "[anon", 5) == 0 ? REGION_ANON : REGION_SPECIAL;
		else
			g->kind = REGION_FILE;
		n_regions++;
	}

	for (size_t i = 0; i < sym->n_modules; i++)
		sym->modules[i]->seen = false;

	/* modules: every executable file mapping (and [vdso]) */
	for (size_t i = 0; i < n_regions; i++) {
		struct maps_line *l = &lines[i];
		struct sym_module *m = NULL;
		bool is_vdso = regions[i].kind == REGION_SPECIAL && strcmp(l->path, "[vdso]") == 0;
		dev_t dev = makedev(l->dev_major, l->dev_minor);

		if (!regions[i].exec || (regions[i].kind != REGION_FILE && !is_vdso))
			continue;
		for (size_t j = 0; j < n_new && !m; j++)
			if (mods[j]->ino == l->ino && mods[j]->dev == dev && l->start >= mods[j]->start &&
			    l->start < mods[j]->end)
				m = mods[j];
		if (m)
			continue;
		if (is_vdso) {
			for (size_t j = 0; j < sym->n_modules && !m; j++)
				if (sym->modules[j]->fd < 0 && sym->modules[j]->start == l->start)
					m = sym->modules[j];
		} else {
			m = find_old_module(sym->modules, sym->n_modules, l, dev);
		}
		if (m) {
			m->seen = true;
		} else {
			/* Open from the file's first mapping when it is the one at pgoff 0. */
			const struct maps_line *first = l;

			for (size_t j = i; j-- > 0 && i - j < 8;)
				if (lines[j].ino == l->ino && strcmp(lines[j].path, l->path) == 0 &&
				    regions[j].kind == REGION_FILE)
					first = &lines[j];
				else
					break;
			r = is_vdso ? module_open_vdso(sym, l, &m) : module_open(sym, first, &m);
			if (r == -ENOMEM)
				goto out;
			if (r < 0 && first != l)
				r = module_open(sym, l, &m);
			if (r == -ENOMEM)
				goto out;
			if (r < 0)
				continue;   /* not ELF, unreadable: regions keep the name only */
			changed = true;
		}
		if (n_new == cap_new) {
			size_t nc = cap_new ? cap_new * 2 : 64;
			struct sym_module **nm;

			if (nc > SYM_MAX_MODULES) {
				if (!m->seen)
					module_free(m);
				break;
			}
			nm = realloc(mods, nc * sizeof(*mods));
			if (!nm) {
				if (!m->seen)
					module_free(m);
				r = -ENOMEM;
				goto out;
			}
			mods = nm;
			cap_new = nc;
		}
		m->seen = true;
		mods[n_new++] = m;
	}

	/* attach regions to modules */
	for (size_t i = 0; i < n_regions; i++) {
		struct sym_region *g = &regions[i];
		dev_t dev = makedev(lines[i].dev_major, lines[i].dev_minor);

		for (size_t j = 0; j < n_new; j++) {
			struct sym_module *m = mods[j];
			bool same = m->fd < 0 ? (g->kind == REGION_SPECIAL &&
						 strcmp(lines[i].path, "[vdso]") == 0)
					      : (g->kind == REGION_FILE && m->ino == lines[i].ino &&
						 m->dev == dev);

			/* the last mapping may run to a page end past p_memsz */
			if (same && g->start >= m->start && g->start < m->end) {
				g->mod = m;
				break;
			}
		}
	}
	qsort(regions, n_regions, sizeof(*regions), cmp_region);

	for (size_t i = 0; i < sym->n_modules; i++)
		if (!sym->modules[i]->seen)
			changed = true;

	/* swap in, report, then free what went away (after libdwfl dropped it) */
	{
		struct sym_module **old = sym->modules;
		size_t n_old = sym->n_modules;

		sym->modules = mods;
		sym->n_modules = n_new;
		sym->cap_modules = cap_new;
		mods = NULL;
		free(sym->regions);
		sym->regions = regions;
		sym->n_regions = n_regions;
		regions = NULL;
		r = changed ? report_modules(sym) : 0;
		for (size_t i = 0; i < n_old; i++)
			if (!old[i]->seen)
				module_free(old[i]);
		free(old);
	}
	sym->stats.modules = sym->n_modules;
	if (changed) {
		cache_flush(&sym->cache);
		unwind_modules_changed(sym);
	}
out:
	if (mods) {
		/* error: free what this refresh opened (the reused ones are still in sym) */
		for (size_t i = 0; i < n_new; i++) {
			bool reused = false;

			for (size_t j = 0; j < sym->n_modules && !reused; j++)
				reused = sym->modules[j] == mods[i];
			if (!reused)
				module_free(mods[i]);
		}
		free(mods);
	}
	free(regions);
	free(lines);
	free(text);
	return r;
}

const struct sym_region *maps_find(const struct symbolizer *sym, uint64_t addr)
{
	size_t lo = 0, hi = sym->n_regions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sym_region *g = &sym->regions[mid];

		if (addr < g->start)
			hi = mid;
		else if (addr >= g->end)
			lo = mid + 1;
		else
			return g;
	}
	return NULL;
}

struct sym_module *maps_find_module(const struct symbolizer *sym, uint64_t addr)
{
	const struct sym_region *g = maps_find(sym, addr);

	return g ? g->mod : NULL;
}

int maps_maybe_refresh(struct symbolizer *sym)
{
	if (clock_now_ns() - sym->last_refresh_ns < SYM_REFRESH_NS)
		return -EAGAIN;
	return symbolizer_refresh(sym);
}

const char *symbolizer_module_name(struct symbolizer *sym, uint64_t addr)
{
	const struct sym_region *g = maps_find(sym, addr);

	if (!g && maps_maybe_refresh(sym) == 0)
		g = maps_find(sym, addr);
	return g ? g->name : NULL;
}
