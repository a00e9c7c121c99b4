/*
 * maps.c: /proc/PID/maps -> regions and modules, the Dwfl they are reported to, refresh.
 *
 * A module is an ELF file with at least one executable mapping. Its file is opened through
 * /proc/PID/root/PATH when that is the same inode (debuglink search then sees the real
 * directory), else /proc/PID/map_files/START-END (deleted files, other namespaces), mmapped
 * read-only once, and its headers parsed by hand with every offset checked against the file
 * size: the unwinders read .eh_frame_hdr, .eh_frame and code through module_read(). The same
 * module is reported to libdwfl with dwfl_report_module(); libdwfl opens it through our
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
#include <time.h>
#include <unistd.h>

#include "symbolizer/symbolizer_internal.h"

#define MAPS_MAX_BYTES (64u << 20)
#define MODULE_MAX_BYTES (4ull << 30)
#define PAGE_MASK_4K (~(uint64_t)0xfff)

uint64_t sym_now_ns(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

static const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* ---- ELF headers, by hand, bounded --------------------------------------------------------- */

static bool range_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static void parse_build_id(struct sym_module *m, uint64_t off, uint64_t len)
{
	uint64_t end;

	if (!range_ok(off, len, m->image_size))
		return;
	end = off + len;
	for (int i = 0; i < 64 && off + sizeof(Elf64_Nhdr) <= end; i++) {
		Elf64_Nhdr nh;
		uint64_t name_sz, desc_sz;

		memcpy(&nh, m->image + off, sizeof(nh));
		off += sizeof(nh);
		name_sz = ((uint64_t)nh.n_namesz + 3) & ~3ull;
		desc_sz = ((uint64_t)nh.n_descsz + 3) & ~3ull;
		if (name_sz > end - off || desc_sz > end - off - name_sz)
			return;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(m->image + off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
		    nh.n_descsz <= sizeof(m->build_id)) {
			memcpy(m->build_id, m->image + off + name_sz, nh.n_descsz);
			m->build_id_len = nh.n_descsz;
			return;
		}
		off += name_sz + desc_sz;
	}
}

static uint64_t read_u(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	memcpy(&v, p, n);
	return v;
}

/* .eh_frame_hdr: version 1, eh_frame_ptr, fde_count, then a table libunwind can search when it
 * is datarel|sdata4 (0x3b). */
static void parse_eh_frame_hdr(struct sym_module *m, uint64_t off, uint64_t len, uint64_t vaddr)
{
	const unsigned char *h;
	size_t pos = 4, sz;
	unsigned char ptr_enc, cnt_enc, tab_enc;
	uint64_t count;

	if (!range_ok(off, len, m->image_size) || len < 12)
		return;
	h = m->image + off;
	ptr_enc = h[1];
	cnt_enc = h[2];
	tab_enc = h[3];
	if (h[0] != 1 || tab_enc != 0x3b)
		return;
	switch (ptr_enc & 0x0f) {
	case 0x03: case 0x0b: sz = 4; break;   /* udata4, sdata4 */
	case 0x04: case 0x0c: sz = 8; break;   /* udata8, sdata8 */
	default: return;
	}
	pos += sz;
	switch (cnt_enc & 0x0f) {
	case 0x03: case 0x0b: sz = 4; break;
	case 0x04: case 0x0c: sz = 8; break;
	default: return;
	}
	if (pos + sz > len)
		return;
	count = read_u(h + pos, sz);
	pos += sz;
	if (count == 0 || count > (len - pos) / 8)
		return;
	m->eh_hdr_vaddr = vaddr;
	m->eh_table_vaddr = vaddr + pos;
	m->eh_fde_count = count;
}

static int module_parse(struct sym_module *m)
{
	Elf64_Ehdr eh;
	uint64_t phoff;
	bool have_load = false;

	if (m->image_size < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, m->image, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return -ENOEXEC;
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 512)
		return -ENOEXEC;
	phoff = eh.e_phoff;
	if (!range_ok(phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), m->image_size))
		return -ENOEXEC;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, m->image + phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		switch (ph.p_type) {
		case PT_LOAD:
			if (m->n_loads < SYM_MAX_LOADS && ph.p_filesz <= ph.p_memsz &&
			    ph.p_vaddr + ph.p_memsz >= ph.p_vaddr) {
				struct sym_load *l = &m->loads[m->n_loads++];

				l->vaddr = ph.p_vaddr;
				l->offset = ph.p_offset;
				l->filesz = ph.p_filesz;
				l->memsz = ph.p_memsz;
				have_load = true;
			}
			break;
		case PT_GNU_EH_FRAME:
			parse_eh_frame_hdr(m, ph.p_offset, ph.p_filesz, ph.p_vaddr);
			break;
		case PT_NOTE:
			if (m->build_id_len == 0)
				parse_build_id(m, ph.p_offset, ph.p_filesz);
			break;
		default:
			break;
		}
	}
	return have_load ? 0 : -ENOEXEC;
}

/* Bias from one mapping of the file: the PT_LOAD whose page offset is the mapping's. */
static int module_set_range(struct sym_module *m, uint64_t map_start, uint64_t pgoff)
{
	uint64_t lo_align, end = 0;
	const struct sym_load *first = &m->loads[0];
	bool found = false;

	for (size_t i = 0; i < m->n_loads; i++) {
		if ((m->loads[i].offset & PAGE_MASK_4K) == pgoff) {
			m->bias = map_start - (m->loads[i].vaddr & PAGE_MASK_4K);
			found = true;
			break;
		}
	}
	if (!found)
		return -ENOEXEC;
	for (size_t i = 0; i < m->n_loads; i++) {
		if (m->loads[i].vaddr < first->vaddr)
			first = &m->loads[i];
		if (m->loads[i].vaddr + m->loads[i].memsz > end)
			end = m->loads[i].vaddr + m->loads[i].memsz;
	}
	/* libdwfl's rule (dwfl_module_getdwarf.c): bias = low_addr - (first p_vaddr & page) */
	lo_align = first->vaddr & PAGE_MASK_4K;
	m->start = m->bias + lo_align;
	m->end = m->bias + end;
	if (m->end <= m->start)
		return -ENOEXEC;
	return 0;
}

bool module_read(const struct sym_module *m, uint64_t addr, void *dst, size_t len)
{
	uint64_t v = addr - m->bias;

	for (size_t i = 0; i < m->n_loads; i++) {
		const struct sym_load *l = &m->loads[i];
		uint64_t off;

		if (v < l->vaddr || v - l->vaddr >= l->filesz || len > l->filesz - (v - l->vaddr))
			continue;
		off = l->offset + (v - l->vaddr);
		if (!range_ok(off, len, m->image_size))
			return false;
		memcpy(dst, m->image + off, len);
		return true;
	}
	return false;
}

void module_free(struct sym_module *m)
{
	if (!m)
		return;
	if (m->image && m->fd >= 0)
		(void) munmap((void *)m->image, m->image_size);
	else
		free((void *)m->image);
	if (m->fd >= 0)
		(void) close(m->fd);
	free(m->path);
	free(m->open_path);
	free(m);
}

static int open_module_file(struct symbolizer *sym, const struct maps_line *l, dev_t dev,
			    char **ret_path, int *ret_fd)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd;

	if (l->path[0] == '/' && strlen(l->path) < PATH_MAX) {
		(void) snprintf(path, sizeof(path), "%s%s", sym->root, l->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == l->ino &&
			    S_ISREG(st.st_mode))
				goto found;
			(void) close(fd);
		}
	}
	(void) snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			(int)sym->pid, l->start, l->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		(void) close(fd);
		return -ENOEXEC;
	}
found:
	*ret_path = strdup(path);
	if (!*ret_path) {
		(void) close(fd);
		return -ENOMEM;
	}
	*ret_fd = fd;
	return 0;
}

static int module_open(struct symbolizer *sym, const struct maps_line *l, struct sym_module **ret)
{
	struct sym_module *m;
	struct stat st;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fd = -1;
	m->dev = makedev(l->dev_major, l->dev_minor);
	m->ino = l->ino;
	m->path = strdup(l->path);
	if (!m->path) {
		r = -ENOMEM;
		goto fail;
	}
	r = open_module_file(sym, l, m->dev, &m->open_path, &m->fd);
	if (r < 0)
		goto fail;
	if (fstat(m->fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (st.st_size < (off_t)sizeof(Elf64_Ehdr) || (uint64_t)st.st_size > MODULE_MAX_BYTES) {
		r = -ENOEXEC;
		goto fail;
	}
	m->image_size = (size_t)st.st_size;
	m->image = mmap(NULL, m->image_size, PROT_READ, MAP_PRIVATE, m->fd, 0);
	if (m->image == MAP_FAILED) {
		m->image = NULL;
		r = -errno;
		goto fail;
	}
	r = module_parse(m);
	if (r < 0)
		goto fail;
	r = module_set_range(m, l->start, l->pgoff);
	if (r < 0)
		goto fail;
	{
		const char *base = path_basename(l->path);
		size_t n = strlen(base);

		if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
			n -= 10;
		m->name = strpool_intern(&sym->pool, base, n);
		if (!m->name) {
			r = -ENOMEM;
			goto fail;
		}
	}
	*ret = m;
	return 0;
fail:
	module_free(m);
	return r;
}

/* [vdso] is an ELF image in the target's memory: copy it from /proc/PID/mem. */
static int module_open_vdso(struct symbolizer *sym, const struct maps_line *l,
			    struct sym_module **ret)
{
	char path[64];
	struct sym_module *m;
	unsigned char *img;
	size_t size = (size_t)(l->end - l->start);
	ssize_t n;
	int fd, r;

	if (size > (1u << 20))
		return -ENOEXEC;
	(void) snprintf(path, sizeof(path), "/proc/%d/mem", (int)sym->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	img = malloc(size);
	if (!img) {
		(void) close(fd);
		return -ENOMEM;
	}
	n = pread(fd, img, size, (off_t)l->start);
	r = n < 0 ? -errno : 0;
	(void) close(fd);
	if (r < 0 || (size_t)n != size) {
		free(img);
		return r < 0 ? r : -EIO;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		free(img);
		return -ENOMEM;
	}
	m->fd = -1;
	m->image = img;
	m->image_size = size;
	m->path = strdup("[vdso]");
	m->name = strpool_intern(&sym->pool, "[vdso]", 6);
	if (!m->path || !m->name) {
		module_free(m);
		return -ENOMEM;
	}
	r = module_parse(m);
	if (r == 0)
		r = module_set_range(m, l->start, 0);
	if (r < 0) {
		module_free(m);
		return r;
	}
	*ret = m;
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

int sym_read_file(const char *path, char **ret, size_t *ret_len, size_t max)
{
	size_t len = 0, cap = 1 << 16;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		(void) close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= max) {
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				(void) close(fd);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			int r = -errno;

			if (r == -EINTR)
				continue;
			free(buf);
			(void) close(fd);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	(void) close(fd);
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

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

	sym->last_refresh_ns = sym_now_ns();
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
			const char *base = path_basename(l->path);

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
		cache_flush(sym);
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
	if (sym_now_ns() - sym->last_refresh_ns < SYM_REFRESH_NS)
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
