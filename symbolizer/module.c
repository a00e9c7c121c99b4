/*
 * module.c: one mapped ELF file of the target (a struct sym_module): opened through
 * /proc/PID/root/PATH when that is the same inode (debuglink search then sees the real
 * directory), else /proc/PID/map_files/START-END (deleted files, other namespaces), or the vdso
 * copied from /proc/PID/mem; mmapped read-only once, and its headers (program headers,
 * build-id, .eh_frame_hdr) parsed by hand with every offset checked against the file size. The
 * unwinders read .eh_frame_hdr, .eh_frame and code through module_read(); module_fde_range()
 * finds the .eh_frame FDE covering an address through .eh_frame_hdr's table (the start of a
 * nameless function for elf.c, the .cold parts for cold.c). maps.c decides which mappings make
 * modules.
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
#include "base/hash.h"
#include "symbolizer/symbolizer_internal.h"

#define MODULE_MAX_BYTES (4ull << 30)
#define PAGE_MASK_4K (~(uint64_t)0xfff)

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
			m->bid_key = hash_bytes(m->build_id, m->build_id_len, 0x6275696c64) | 1;
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

/* The table of .eh_frame_hdr is sorted by initial location: the last entry at or below v, its
 * pc_range read from the FDE itself (pc_begin as pcrel|sdata4, GCC's and clang's encoding, or as
 * an 8-byte absolute, checked against the table's initial location). */
bool module_fde_range(const struct sym_module *m, uint64_t v, uint64_t *ret_start,
		      uint64_t *ret_end)
{
	uint64_t lo = 0, hi = m->eh_fde_count, tab = m->bias + m->eh_table_vaddr;
	uint64_t hdr = m->eh_hdr_vaddr, start, fde, pos, len;
	int32_t e[2];
	uint32_t len32;

	if (hdr == 0 || m->eh_fde_count == 0)
		return false;
	while (hi - lo > 1) {   /* invariant: entry lo's start <= v (checked below) */
		uint64_t mid = lo + (hi - lo) / 2;

		if (!module_read(m, tab + mid * 8, e, 8))
			return false;
		if (hdr + (uint64_t)(int64_t)e[0] <= v)
			lo = mid;
		else
			hi = mid;
	}
	if (!module_read(m, tab + lo * 8, e, 8))
		return false;
	start = hdr + (uint64_t)(int64_t)e[0];
	fde = hdr + (uint64_t)(int64_t)e[1];
	if (start > v || !module_read(m, m->bias + fde, &len32, 4) || len32 == 0)
		return false;
	pos = fde + 4;
	len = len32;
	if (len32 == 0xffffffffu) {
		if (!module_read(m, m->bias + pos, &len, 8))
			return false;
		pos += 8;
	}
	pos += 4;   /* CIE pointer (4 bytes in both formats) */
	if (len < 4 + 8)
		return false;
	{
		int32_t rel;
		uint32_t range32;
		uint64_t abs, range64;

		if (module_read(m, m->bias + pos, &rel, 4) && pos + (uint64_t)(int64_t)rel == start &&
		    module_read(m, m->bias + pos + 4, &range32, 4)) {
			*ret_start = start;
			*ret_end = start + range32;
		} else if (len >= 4 + 16 && module_read(m, m->bias + pos, &abs, 8) && abs == start &&
			   module_read(m, m->bias + pos + 8, &range64, 8) && range64 < (1ull << 32)) {
			*ret_start = start;
			*ret_end = start + range64;
		} else {
			return false;
		}
	}
	return v < *ret_end;
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
	free(m->ranges);
	free(m->plt);
	cu_index_free(m);
	free(m);
}

/* The file of mapping l: its path under the target's root when that is the same file (its
 * path is the target's to change: a FIFO or a link put there in the file's place is not opened),
 * else /proc/PID/map_files/START-END. 0, or -errno. */
static int open_module_file(struct symbolizer *sym, const struct maps_line *l, dev_t dev,
			    char **ret_path, int *ret_fd)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd = -1, root;

	if (l->path[0] == '/' && strlen(l->path) < PATH_MAX) {
		(void) snprintf(path, sizeof(path), "%s%s", sym->root, l->path);
		root = open(sym->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root >= 0) {
			fd = sym_open_planted(root, l->path, SYM_PLANT_NO_LINKS, (uid_t) -1,
					      UINT64_MAX, &st);
			(void) close(root);
		}
		if (fd >= 0) {
			if (st.st_dev == dev && st.st_ino == l->ino)
				goto found;
			(void) close(fd);
		}
	}
	(void) snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			(int)sym->pid, l->start, l->end);
	fd = sym_open_planted(AT_FDCWD, path, SYM_PLANT_MAGIC, (uid_t) -1, UINT64_MAX, &st);
	if (fd < 0)
		return fd == -EINVAL ? -ENOEXEC : fd;
found:
	*ret_path = strdup(path);
	if (!*ret_path) {
		(void) close(fd);
		return -ENOMEM;
	}
	*ret_fd = fd;
	return 0;
}

/* Remembers m's name and build-id (symbolizer_build_id()). A name that another file with another
 * build-id had before (the target exec'd: a wrapper script's system loader, then its own
 * ld-linux-x86-64.so.2) keeps none: the frames under that name come from both files. 0 or
 * -ENOMEM. */
static int module_note_build_id(struct symbolizer *sym, const struct sym_module *m)
{
	static const char digits[] = "0123456789abcdef";
	char hex[2 * sizeof(m->build_id) + 1];
	const char *pooled;

	if (!m->build_id_len || !m->name || sym->n_build_ids == SYM_MAX_BUILD_IDS)
		return 0;
	for (size_t i = 0; i < m->build_id_len; i++) {
		hex[2 * i] = digits[m->build_id[i] >> 4];
		hex[2 * i + 1] = digits[m->build_id[i] & 0xf];
	}
	pooled = strpool_intern(&sym->pool, hex, 2 * m->build_id_len);
	if (!pooled)
		return -ENOMEM;
	for (size_t i = 0; i < sym->n_build_ids; i++) {
		if (sym->build_ids[i].name != m->name)     /* pooled: one pointer per string */
			continue;
		if (sym->build_ids[i].hex != pooled)
			sym->build_ids[i].hex = NULL;
		return 0;
	}
	if (array_grow((void **) &sym->build_ids, &sym->cap_build_ids, sym->n_build_ids + 1,
		       sizeof(*sym->build_ids), 32) < 0)
		return -ENOMEM;
	sym->build_ids[sym->n_build_ids++] = (struct sym_build_id) { m->name, pooled };
	return 0;
}

const char *symbolizer_build_id(const struct symbolizer *sym, const char *module)
{
	for (size_t i = 0; module && i < sym->n_build_ids; i++)
		if (strcmp(sym->build_ids[i].name, module) == 0)
			return sym->build_ids[i].hex;
	return NULL;
}

int module_open(struct symbolizer *sym, const struct maps_line *l, struct sym_module **ret)
{
	struct sym_module *m;
	struct stat st;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->sym = sym;
	m->has_dwarf = -1;
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
		const char *base = sym_basename(l->path);
		size_t n = strlen(base);

		if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
			n -= 10;
		m->name = strpool_intern(&sym->pool, base, n);
		if (!m->name) {
			r = -ENOMEM;
			goto fail;
		}
	}
	r = module_note_build_id(sym, m);
	if (r < 0)
		goto fail;
	*ret = m;
	return 0;
fail:
	module_free(m);
	return r;
}

/* [vdso] is an ELF image in the target's memory: copy it from /proc/PID/mem. */
int module_open_vdso(struct symbolizer *sym, const struct maps_line *l,
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
	(void) snprintf(path, sizeof(path), "%s/mem", sym->proc);
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
	m->has_dwarf = -1;
	m->sym = sym;
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
	if (r == 0)
		r = module_note_build_id(sym, m);
	if (r < 0) {
		module_free(m);
		return r;
	}
	*ret = m;
	return 0;
}
