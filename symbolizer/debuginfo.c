/*
 * debuginfo.c: libdwfl's find_debuginfo callback (maps_dwfl_setup() sets it), in place of
 * dwfl_standard_find_debuginfo, which opens whatever a path names: a FIFO the target put where a
 * debug file is looked for (next to its own module, in a directory of its own) blocked hwspy
 * for good, and a link there led anywhere (under /proc/PID/root an absolute one leads out of the
 * container, to hwspy's root). The same search, each candidate opened by sym_open_planted()
 * (regular, root's or the target's user's, never waited on, at most DEBUG_MAX_BYTES), looked up
 * inside the root it belongs to, and kept only if it is the file wanted:
 *  - a module's separate debug file: by build-id, usr/lib/debug/.build-id/xx/rest.debug in each
 *    debug root (links followed there, as distributions make them, inside that root); then by
 *    its .gnu_debuglink name (a bare file name; MODULE.debug for a module with a build-id and
 *    none) next to the module, in its .debug/ (no link anywhere on those paths: the module's
 *    directory is the one the kernel printed) and in usr/lib/debug/DIR/ of each debug root.
 *    Kept when its build-id is the module's; for a module without one, when its CRC is the
 *    debuglink's (a file neither can vouch for is not taken).
 *  - a debug file's dwz alternate file (.gnu_debugaltlink): by its build-id the same way, then by
 *    its name, as given (absolute) and in each debug root's usr/lib/debug/.dwz/. Kept when its
 *    build-id is the one the link names.
 * The debug roots: the target's own root when it is not ours (a container), then ours.
 * debuginfod is not asked (the standard callback asks it when DEBUGINFOD_URLS is set).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>

#include "symbolizer/symbolizer_internal.h"

#define DEBUG_MAX_BYTES (4ull << 30)

struct debug_root {
	int fd;
	const char *name;        /* how libdw is told the file's path: NAME/REL */
};

/* The debug roots into r (their fds open): the target's, when it has another, then ours. */
static size_t roots_open(const struct symbolizer *sym, struct debug_root r[2])
{
	size_t n = 0;

	if (sym->other_root) {
		r[n].fd = open(sym->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r[n].name = sym->root;
		n += r[n].fd >= 0;
	}
	r[n].fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	r[n].name = "";
	n += r[n].fd >= 0;
	return n;
}

static void roots_close(struct debug_root *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void) close(r[i].fd);
}

/* Whether the ELF file fd has the GNU build-id id[0..len). */
static bool build_id_is(int fd, const void *id, size_t len)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got;
	ssize_t n;
	bool same;

	if (!e)
		return false;
	n = dwelf_elf_gnu_build_id(e, &got);
	same = n > 0 && (size_t)n == len && memcmp(got, id, len) == 0;
	(void) elf_end(e);
	return same;
}

/* Whether the CRC-32 of the whole file fd (size bytes) is crc, .gnu_debuglink's checksum. */
static bool crc_is(int fd, uint64_t size, uint32_t crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, NULL, 0);
	uint64_t off = 0;

	while (off < size) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		c = crc32(c, buf, (uInt)n);
		off += (uint64_t)n;
	}
	return (uint32_t)c == crc;
}

/* What a candidate must be. */
struct wanted {
	const unsigned char *id;         /* build-id (NULL: none, the CRC says) */
	size_t id_len;
	uint32_t crc;                    /* without a build-id: the debuglink's (0: none) */
	uid_t owner;
};

/* rel under root r, opened as a planted file and checked: fd, its name for libdw in
 * *ret_name; or -1. */
static int candidate(const struct debug_root *r, const char *rel, unsigned flags,
		     const struct wanted *w, char **ret_name)
{
	struct stat st;
	bool ok;
	int fd;

	fd = sym_open_planted(r->fd, rel, flags, w->owner, DEBUG_MAX_BYTES, &st);
	if (fd < 0)
		return -1;
	ok = w->id ? build_id_is(fd, w->id, w->id_len) :
	     w->crc && crc_is(fd, (uint64_t)st.st_size, w->crc);
	if (ok && asprintf(ret_name, "%s/%s", r->name, rel) < 0)
		ok = false;
	if (!ok) {
		(void) close(fd);
		return -1;
	}
	return fd;
}

/* By build-id in each debug root. */
static int by_build_id(const struct debug_root *r, size_t n_roots, const struct wanted *w,
		       char **ret_name)
{
	char rel[64 + 2 * 64];
	size_t k;
	int fd;

	if (!w->id || w->id_len < 2 || w->id_len > 64)
		return -1;
	k = (size_t)snprintf(rel, sizeof(rel), "usr/lib/debug/.build-id/%02x/", w->id[0]);
	for (size_t i = 1; i < w->id_len; i++)
		k += (size_t)snprintf(rel + k, sizeof(rel) - k, "%02x", w->id[i]);
	(void) snprintf(rel + k, sizeof(rel) - k, ".debug");
	for (size_t i = 0; i < n_roots; i++) {
		fd = candidate(&r[i], rel, SYM_PLANT_FOLLOW, w, ret_name);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* A name fit to be looked for in a directory: a bare file name. */
static bool bare_name(const char *s)
{
	return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
	       strlen(s) < NAME_MAX;
}

/* Module m's debug file, by its debuglink name (or MODULE.debug) next to it and under each
 * debug root. */
static int by_name(const struct symbolizer *sym, const struct debug_root *r, size_t n_roots,
		   const struct sym_module *m, const char *link, const struct wanted *w,
		   char **ret_name)
{
	char invented[NAME_MAX + 8], dir[PATH_MAX], rel[PATH_MAX + NAME_MAX + 32];
	const char *base = sym_basename(m->path);
	size_t dir_len = (size_t)(base - m->path);
	struct debug_root own = { .name = sym->root };
	int fd = -1;

	if (!link && w->id) {
		size_t n = strlen(base);

		if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
			n -= 10;
		if (n >= NAME_MAX)
			return -1;
		(void) snprintf(invented, sizeof(invented), "%.*s.debug", (int)n, base);
		link = invented;
	}
	if (!bare_name(link) || m->path[0] != '/' || dir_len >= sizeof(dir))
		return -1;
	memcpy(dir, m->path + 1, dir_len - 1);      /* "usr/lib/" of "/usr/lib/x.so" */
	dir[dir_len - 1] = '\0';
	own.fd = open(sym->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (own.fd >= 0) {
		(void) snprintf(rel, sizeof(rel), "%s%s", dir, link);
		fd = candidate(&own, rel, SYM_PLANT_NO_LINKS, w, ret_name);
		if (fd < 0) {
			(void) snprintf(rel, sizeof(rel), "%s.debug/%s", dir, link);
			fd = candidate(&own, rel, SYM_PLANT_NO_LINKS, w, ret_name);
		}
		(void) close(own.fd);
	}
	for (size_t i = 0; fd < 0 && i < n_roots; i++) {
		(void) snprintf(rel, sizeof(rel), "usr/lib/debug/%s%s", dir, link);
		fd = candidate(&r[i], rel, 0, w, ret_name);
	}
	return fd;
}

/* The dwz alternate file named alt with build-id w->id. */
static int alt_file(const struct debug_root *r, size_t n_roots, const char *alt,
		    const struct wanted *w, char **ret_name)
{
	char rel[PATH_MAX + 32];
	const char *base = sym_basename(alt);
	int fd = by_build_id(r, n_roots, w, ret_name);

	for (size_t i = 0; fd < 0 && alt[0] == '/' && i < n_roots; i++)
		fd = candidate(&r[i], alt + 1, 0, w, ret_name);
	for (size_t i = 0; fd < 0 && bare_name(base) && i < n_roots; i++) {
		(void) snprintf(rel, sizeof(rel), "usr/lib/debug/.dwz/%s", base);
		fd = candidate(&r[i], rel, 0, w, ret_name);
	}
	return fd;
}

int debuginfo_find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		   const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
		   char **debuginfo_file_name)
{
	const struct sym_module *m = userdata ? *userdata : NULL;
	struct debug_root r[2];
	struct wanted w = { 0 };
	const char *own_link = NULL;
	GElf_Word own_crc;
	GElf_Addr bias;
	size_t n_roots;
	Elf *main_elf;
	int fd = -1, len;

	(void) modname;
	(void) base;
	(void) file_name;
	errno = 0;
	if (!m || !m->sym || m->fd < 0)
		return -1;
	w.owner = m->sym->uid;
	main_elf = dwfl_module_getelf(mod, &bias);
	if (main_elf)
		own_link = dwelf_elf_gnu_debuglink(main_elf, &own_crc);
	n_roots = roots_open(m->sym, r);
	if (debuglink_file && debuglink_file != own_link) {
		/* libdwfl asks for the alternate file of the DWARF it has set up */
		Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
		const char *alt;
		const void *id;
		ssize_t n = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &alt, &id) : -1;

		if (n > 0) {
			w.id = id;
			w.id_len = (size_t)n;
			fd = alt_file(r, n_roots, debuglink_file, &w, debuginfo_file_name);
		}
	} else {
		len = dwfl_module_build_id(mod, &w.id, &bias);
		if (len <= 0)
			w.id = NULL;
		w.id_len = len > 0 ? (size_t)len : 0;
		w.crc = debuglink_crc;
		fd = by_build_id(r, n_roots, &w, debuginfo_file_name);
		if (fd < 0)
			fd = by_name(m->sym, r, n_roots, m, debuglink_file, &w,
				     debuginfo_file_name);
	}
	roots_close(r, n_roots);
	errno = 0;
	return fd;
}
