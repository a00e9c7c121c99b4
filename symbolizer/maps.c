/*
 * maps.c: /proc/PID/maps -> regions and the module set, the Dwfl the modules are reported to,
 * and the re-read of the mappings that a refresh does (maps_refresh(); symbolizer_refresh() in
 * symbolizer.c tells the other parts when the module set changed).
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

#include "base/array.h"
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
	sym->dwfl_cb.find_debuginfo = debuginfo_find;
	sym->dwfl_cb.section_address = dwfl_offline_section_address;
}

/* ---- refresh ------------------------------------------------------------------------------- */

static int cmp_region(const void *a, const void *b)
{
	const struct sym_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* One re-read of /proc/PID/maps: the lines parsed and the module set built from them, until
 * maps_refresh() swaps them in (or frees them, on an error). */
struct maps_scan {
	char *text;                  /* the file; lines[].path point into it */
	struct maps_line *lines;     /* lines[i] made regions[i] (until the regions are sorted) */
	struct sym_region *regions;
	size_t n_regions;
	struct sym_module **mods;    /* the new module set: modules kept and modules opened */
	size_t n_new, cap_new;
	bool changed;                /* a module opened, or one gone */
};

/* The region of one parsed line (its module comes later). */
static void region_init(struct symbolizer *sym, const struct maps_line *l, struct sym_region *g)
{
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
}

/* Reads and parses /proc/PID/maps (malformed lines are skipped). 0, -ESRCH (gone, or a zombie),
 * -ENOMEM, or the read's -errno. */
static int scan_read(struct symbolizer *sym, struct maps_scan *s)
{
	char path[64], *line, *save = NULL;
	size_t len, n_lines = 0;
	int r;

	for (int tries = 0;; tries++) {
		(void) snprintf(path, sizeof(path), "%s/maps", sym->proc);
		r = sym_read_file(path, &s->text, &len, MAPS_MAX_BYTES);
		if (r < 0 && r != -ENOENT)
			return r;
		if (r == 0 && len > 0)
			break;
		/* a zombie has no mappings: the whole process, or its main thread alone, which
		 * exited while others run on (their directory then stands in) */
		if (tries || sym_proc_moved(sym) < 0)
			return -ESRCH;
		if (r == 0) {
			free(s->text);
			s->text = NULL;
		}
	}
	for (size_t i = 0; i < len; i++)
		n_lines += s->text[i] == '\n';
	n_lines++;
	if (n_lines > SYM_MAX_REGIONS)
		n_lines = SYM_MAX_REGIONS;
	s->lines = calloc(n_lines, sizeof(*s->lines));
	s->regions = calloc(n_lines, sizeof(*s->regions));
	if (!s->lines || !s->regions)
		return -ENOMEM;
	for (line = strtok_r(s->text, "\n", &save); line && s->n_regions < n_lines;
	     line = strtok_r(NULL, "\n", &save)) {
		struct maps_line *l = &s->lines[s->n_regions];

		if (strlen(line) > SYM_MAX_LINE + PATH_MAX || maps_parse_line(line, l) < 0)
			continue;
		region_init(sym, l, &s->regions[s->n_regions]);
		s->n_regions++;
	}
	return 0;
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

/* Opens the module of the mapping lines[i]. 0, or module_open()'s -errno. */
static int scan_open(struct symbolizer *sym, const struct maps_scan *s, size_t i, bool is_vdso,
		     struct sym_module **ret)
{
	const struct maps_line *l = &s->lines[i], *first = l;
	int r;

	/* Open from the image's first mapping (pgoff 0), found back over the mappings of the
	 * file just before, each ending where the next starts, at a lower offset; else from this
	 * one. Not further: a copy of the file mapped right below the image (a read of it by
	 * mmap, as libelf's in a process that profiles itself) is another mapping at offset 0,
	 * and opened from it the module lay where the copy is, every lookup in it nameless. */
	for (size_t j = i; j-- > 0 && i - j < 8;) {
		const struct maps_line *p = &s->lines[j], *next = &s->lines[j + 1];

		if (p->ino != l->ino || strcmp(p->path, l->path) != 0 ||
		    s->regions[j].kind != REGION_FILE || p->end != next->start ||
		    p->pgoff >= next->pgoff)
			break;
		if (p->pgoff == 0) {
			first = p;
			break;
		}
	}
	r = is_vdso ? module_open_vdso(sym, l, ret) : module_open(sym, first, ret);
	if (r == -ENOMEM)
		return r;
	if (r < 0 && first != l)
		r = module_open(sym, l, ret);
	return r;
}

/* Appends m to the new set. 0, or -ENOMEM, or 1: the set is full (SYM_MAX_MODULES). On either
 * failure m is freed if this refresh opened it. */
static int scan_add(struct maps_scan *s, struct sym_module *m)
{
	if (s->n_new == s->cap_new && s->cap_new * 2 > SYM_MAX_MODULES) {
		if (!m->seen)
			module_free(m);
		return 1;
	}
	if (array_grow((void **) &s->mods, &s->cap_new, s->n_new + 1, sizeof(*s->mods), 64) < 0) {
		if (!m->seen)
			module_free(m);
		return -ENOMEM;
	}
	m->seen = true;
	s->mods[s->n_new++] = m;
	return 0;
}

/* The module of the executable mapping lines[i] into the new set: none when the set has it
 * already, else the last set's module of the same file at the same place, else the module
 * opened now. 0, or -ENOMEM, or 1: the set is full. */
static int scan_module(struct symbolizer *sym, struct maps_scan *s, size_t i, bool is_vdso)
{
	const struct maps_line *l = &s->lines[i];
	dev_t dev = makedev(l->dev_major, l->dev_minor);
	struct sym_module *m = NULL;
	int r;

	for (size_t j = 0; j < s->n_new; j++)
		if (s->mods[j]->ino == l->ino && s->mods[j]->dev == dev &&
		    l->start >= s->mods[j]->start && l->start < s->mods[j]->end)
			return 0;
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
		r = scan_open(sym, s, i, is_vdso, &m);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return 0;   /* not ELF, unreadable: regions keep the name only */
		s->changed = true;
	}
	return scan_add(s, m);
}

/* The new module set: every executable file mapping (and [vdso]). The last set's modules that
 * stay are marked seen. 0 or -ENOMEM. */
static int scan_modules(struct symbolizer *sym, struct maps_scan *s)
{
	for (size_t i = 0; i < sym->n_modules; i++)
		sym->modules[i]->seen = false;
	for (size_t i = 0; i < s->n_regions; i++) {
		const struct sym_region *g = &s->regions[i];
		bool is_vdso = g->kind == REGION_SPECIAL && strcmp(s->lines[i].path, "[vdso]") == 0;
		int r;

		if (!g->exec || (g->kind != REGION_FILE && !is_vdso))
			continue;
		r = scan_module(sym, s, i, is_vdso);
		if (r < 0)
			return r;
		if (r > 0)
			break;
	}
	return 0;
}

/* Attaches each region to its module, then sorts the regions. */
static void scan_attach(struct maps_scan *s)
{
	for (size_t i = 0; i < s->n_regions; i++) {
		struct sym_region *g = &s->regions[i];
		const struct maps_line *l = &s->lines[i];
		dev_t dev = makedev(l->dev_major, l->dev_minor);

		for (size_t j = 0; j < s->n_new; j++) {
			struct sym_module *m = s->mods[j];
			bool same = m->fd < 0 ? (g->kind == REGION_SPECIAL &&
						 strcmp(l->path, "[vdso]") == 0)
					      : (g->kind == REGION_FILE && m->ino == l->ino &&
						 m->dev == dev);

			/* the last mapping may run to a page end past p_memsz */
			if (same && g->start >= m->start && g->start < m->end) {
				g->mod = m;
				break;
			}
		}
	}
	qsort(s->regions, s->n_regions, sizeof(*s->regions), cmp_region);
}

/* Swaps the new regions and module set in, reports the modules to libdwfl when the set changed,
 * then frees the modules gone (after libdwfl dropped them). 0 or -ENOMEM (the report; the new
 * set is in place all the same). */
static int scan_swap(struct symbolizer *sym, struct maps_scan *s)
{
	struct sym_module **old = sym->modules;
	size_t n_old = sym->n_modules;
	int r;

	for (size_t i = 0; i < n_old; i++)
		if (!old[i]->seen)
			s->changed = true;
	sym->modules = s->mods;
	sym->n_modules = s->n_new;
	sym->cap_modules = s->cap_new;
	s->mods = NULL;
	free(sym->regions);
	sym->regions = s->regions;
	sym->n_regions = s->n_regions;
	sym->region_hint = SIZE_MAX;
	s->regions = NULL;
	r = s->changed ? report_modules(sym) : 0;
	for (size_t i = 0; i < n_old; i++)
		if (!old[i]->seen)
			module_free(old[i]);
	free(old);
	sym->stats.modules = sym->n_modules;
	return r;
}

/* Frees what the scan still holds; after an error, the modules it opened (the ones it kept
 * from the last set are still in sym). */
static void scan_release(const struct symbolizer *sym, struct maps_scan *s)
{
	if (s->mods) {
		for (size_t i = 0; i < s->n_new; i++) {
			bool reused = false;

			for (size_t j = 0; j < sym->n_modules && !reused; j++)
				reused = sym->modules[j] == s->mods[i];
			if (!reused)
				module_free(s->mods[i]);
		}
		free(s->mods);
	}
	free(s->regions);
	free(s->lines);
	free(s->text);
}

int maps_refresh(struct symbolizer *sym, bool *ret_changed)
{
	struct maps_scan s = { 0 };
	int r;

	*ret_changed = false;
	r = scan_read(sym, &s);
	if (r == 0)
		r = scan_modules(sym, &s);
	if (r == 0) {
		scan_attach(&s);
		r = scan_swap(sym, &s);
		*ret_changed = s.changed;
	}
	scan_release(sym, &s);
	return r;
}

void maps_release(struct symbolizer *sym)
{
	for (size_t i = 0; i < sym->n_modules; i++)
		module_free(sym->modules[i]);
	free(sym->modules);
	free(sym->regions);
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
