/*
 * detect: finds the CPython interpreter in a process -- the file holding _PyRuntime (the
 * executable or a libpython, as mapped), its load bias, and the version.
 *
 * Files are opened through /proc/PID/map_files/START-END (works for deleted files and other
 * mount namespaces), else /proc/PID/root/PATH, else PATH.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/procfs.h"

#include "pyframes/pyframes_internal.h"

#define MAX_MAPS 65536
#define MAX_CANDIDATES 16

struct mapped_file {
	char path[256];
	uint64_t start, end;            /* first mapping of the file */
	uint64_t base;                  /* start of the mapping with file offset 0 */
	bool has_base;
	/* the loader's offset-0 mapping: the last one before an executable mapping of the file.
	 * Another mapping of the whole file at offset 0 (libelf's read of its symbols, by a
	 * profiler inside the process: hwspy's own recorder recording its process) must not be
	 * taken for it, wherever it lies */
	uint64_t last_zero, loaded_base;
	bool has_last_zero, has_loaded_base;
	int rank;                       /* lower is tried first */
};

struct elf_facts {
	uint64_t runtime, py_version, code_type;
	uint64_t next_func_version;     /* 3.12's _Py_next_func_version (a local symbol) */
	bool python;                    /* any CPython API symbol at all */
	uint64_t pyruntime_sec, pyruntime_sec_size;
	uint64_t data_lo, data_hi;      /* .data .. end of .bss */
	uint64_t bss_lo, bss_hi;
	char version[32];               /* from .rodata */
	uint64_t bias;
};

int pf_parse_version(const char *s, int *major, int *minor, int *micro)
{
	char *end;
	long a, b, c;

	if (!isdigit((unsigned char) s[0]))
		return -EINVAL;
	a = strtol(s, &end, 10);
	if (*end != '.' || !isdigit((unsigned char) end[1]))
		return -EINVAL;
	b = strtol(end + 1, &end, 10);
	if (*end != '.' || !isdigit((unsigned char) end[1]))
		return -EINVAL;
	c = strtol(end + 1, &end, 10);
	if (a < 2 || a > 9 || b < 0 || b > 99 || c < 0 || c > 99)
		return -EINVAL;
	*major = (int) a;
	*minor = (int) b;
	*micro = (int) c;
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* "libpython3.9.so.1.0", "libpython3.7m.so", "python3.13" -> 3, 9 */
static bool name_version(const char *path, int *major, int *minor)
{
	const char *b = base_name(path), *p;

	if (strncmp(b, "libpython", 9) == 0)
		p = b + 9;
	else if (strncmp(b, "python", 6) == 0)
		p = b + 6;
	else
		return false;
	if (!isdigit((unsigned char) p[0]) || p[1] != '.' || !isdigit((unsigned char) p[2]))
		return false;
	*major = p[0] - '0';
	*minor = (int) strtol(p + 2, NULL, 10);
	return true;
}

static int read_maps(const char *dir, struct mapped_file *files, size_t max, size_t *ret_n,
		     const char *exe)
{
	char path[96], line[4352];
	size_t n = 0, lines = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/maps", dir);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f) && lines++ < MAX_MAPS) {
		unsigned long long start, end, off;
		char perms[8], *p;
		int pos = 0;
		size_t i;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &pos) < 4 ||
		    pos == 0)
			continue;
		p = line + pos;
		p[strcspn(p, "\n")] = '\0';
		if (p[0] != '/')
			continue;
		if (strlen(p) >= sizeof(files[0].path))
			continue;
		for (i = 0; i < n; i++)
			if (strcmp(files[i].path, p) == 0)
				break;
		if (i == n) {
			const char *b = base_name(p);
			int rank;

			if (strncmp(b, "libpython", 9) == 0)
				rank = 0;
			else if (strncmp(b, "python", 6) == 0)
				rank = 1;
			else if (exe && strcmp(p, exe) == 0)
				rank = 2;
			else
				continue;
			if (n == max)
				continue;
			memset(&files[n], 0, sizeof(files[n]));
			snprintf(files[n].path, sizeof(files[n].path), "%s", p);
			files[n].start = start;
			files[n].end = end;
			files[n].rank = rank;
			n++;
		}
		if (off == 0 && (!files[i].has_base || start < files[i].base)) {
			files[i].base = start;
			files[i].has_base = true;
		}
		if (off == 0) {
			files[i].last_zero = start;
			files[i].has_last_zero = true;
		}
		if (strchr(perms, 'x') && files[i].has_last_zero && !files[i].has_loaded_base) {
			files[i].loaded_base = files[i].last_zero;
			files[i].has_loaded_base = true;
		}
	}
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (files[i].has_loaded_base)
			files[i].base = files[i].loaded_base;
	*ret_n = n;
	return 0;
}

/* dir: procfs_mem_dir()'s (map_files are only in /proc/PID) */
static int open_mapped(pid_t pid, const char *dir, const struct mapped_file *mf)
{
	char path[320];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int) pid,
		 mf->start, mf->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/root%s", dir, mf->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	fd = open(mf->path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static bool version_string_at(const char *s, size_t room, int want_major, int want_minor,
			      char *ret, size_t size)
{
	int a, b, c;
	size_t len = strnlen(s, room < 24 ? room : 24);

	if (len < 5 || len >= 24 || len == room)
		return false;
	if (pf_parse_version(s, &a, &b, &c) < 0)
		return false;
	if (want_major && (a != want_major || b != want_minor))
		return false;
	if (a != 2 && a != 3)
		return false;
	/* "3.9.18", "3.9.18+", "3.12.0rc1": nothing but the version */
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char) s[i]) && s[i] != '.' && s[i] != '+')
			return false;
	snprintf(ret, size, "%d.%d.%d", a, b, c);
	return true;
}

/* The version string in .rodata: one of its own (after a NUL), or with tails, also the tail of
 * another string the linker merged it into ("/root/.pyenv/versions/3.8.18": PY_VERSION is
 * "3.8.18", stored once), after a character no version holds. */
static void scan_rodata(Elf *elf, int want_major, int want_minor, bool tails, char *ret,
			size_t size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;
		const char *p;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".rodata") != 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return;
		p = d->d_buf;
		for (i = 1; i + 5 < d->d_size; i++) {
			if (!isdigit((unsigned char) p[i]) || p[i + 1] != '.')
				continue;
			if (p[i - 1] != '\0' && (!tails || isalnum((unsigned char) p[i - 1]) ||
						  p[i - 1] == '.' || p[i - 1] == '-' || p[i - 1] == '_'))
				continue;
			if (version_string_at(p + i, d->d_size - i, want_major, want_minor, ret, size))
				return;
		}
		return;
	}
}

static void elf_scan(Elf *elf, struct elf_facts *ef)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sname && strcmp(sname, ".PyRuntime") == 0) {
			ef->pyruntime_sec = sh.sh_addr;
			ef->pyruntime_sec_size = sh.sh_size;
		}
		if (sname && strcmp(sname, ".bss") == 0) {
			ef->bss_lo = sh.sh_addr;
			ef->bss_hi = sh.sh_addr + sh.sh_size;
		}
		if (sname && (strcmp(sname, ".data") == 0 || strcmp(sname, ".bss") == 0)) {
			if (!ef->data_lo || sh.sh_addr < ef->data_lo)
				ef->data_lo = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > ef->data_hi)
				ef->data_hi = sh.sh_addr + sh.sh_size;
		}
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			Elf_Data *d = elf_getdata(scn, NULL);
			size_t i, n;

			if (!d || sh.sh_entsize == 0)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (i = 0; i < n; i++) {
				GElf_Sym sym;
				const char *name;

				if (!gelf_getsym(d, (int) i, &sym) || sym.st_shndx == SHN_UNDEF ||
				    sym.st_value == 0)
					continue;
				name = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (!name || (name[0] != '_' && name[0] != 'P'))
					continue;
				if (strcmp(name, "_PyRuntime") == 0)
					ef->runtime = sym.st_value;
				else if (strcmp(name, "Py_Version") == 0)
					ef->py_version = sym.st_value;
				else if (strcmp(name, "PyCode_Type") == 0)
					ef->code_type = sym.st_value;
				else if (strcmp(name, "_Py_next_func_version") == 0 &&
					 sym.st_size == 4 && GELF_ST_TYPE(sym.st_info) == STT_OBJECT)
					ef->next_func_version = sym.st_value;
				else if (strcmp(name, "Py_Initialize") == 0 ||
					 strcmp(name, "Py_GetVersion") == 0 ||
					 strcmp(name, "PyEval_EvalFrameEx") == 0)
					ef->python = true;
			}
		}
	}
	if (ef->runtime || ef->py_version)
		ef->python = true;
}

static int elf_bias(Elf *elf, const struct mapped_file *mf, uint64_t *ret)
{
	GElf_Ehdr eh;
	size_t i, n;

	if (!gelf_getehdr(elf, &eh))
		return -EINVAL;
	if (eh.e_type == ET_EXEC) {
		*ret = 0;
		return 0;
	}
	if (!mf->has_base || elf_getphdrnum(elf, &n) < 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* the first PT_LOAD is the one mapped at file offset 0 */
		*ret = mf->base - (ph.p_vaddr & ~(uint64_t) (PF_PAGE - 1)) +
		       (ph.p_offset & ~(uint64_t) (PF_PAGE - 1));
		return 0;
	}
	return -EINVAL;
}

/*
 * Py_GetVersion() formats "3.9.18 (main, ...)" into a static buffer in .bss when sys starts:
 * where the compiler folded the PY_VERSION literal away, that buffer is the only place left.
 */
static void scan_bss(const struct remote_mem *mem, uint64_t lo, uint64_t hi, int want_major,
		     int want_minor, char *ret, size_t size)
{
	size_t chunk = 64 * 1024;
	unsigned char *buf;
	uint64_t a;

	lo &= ~(uint64_t) 15;
	if (hi <= lo || hi - lo > (8u << 20))
		return;
	buf = malloc(chunk + 32);
	if (!buf)
		return;
	for (a = lo; a < hi; a += chunk) {
		size_t len = hi - a < chunk ? hi - a : chunk, o;

		/* overlap 32 bytes so a string across chunks is still seen whole */
		if (mem->read(mem->ctx, a, buf, len + 32) < 0 && mem->read(mem->ctx, a, buf, len) < 0)
			continue;
		for (o = 0; o + 24 <= len; o += 16) {
			char s[24], *sp;
			int x, y, z;

			if (!isdigit(buf[o]) || buf[o + 1] != '.')
				continue;
			memcpy(s, buf + o, sizeof(s) - 1);
			s[sizeof(s) - 1] = '\0';
			sp = strchr(s, ' ');
			if (!sp || sp[1] != '(')
				continue;
			*sp = '\0';
			if (pf_parse_version(s, &x, &y, &z) < 0 || (x != 2 && x != 3))
				continue;
			if (want_major && (x != want_major || y != want_minor))
				continue;
			snprintf(ret, size, "%d.%d.%d", x, y, z);
			free(buf);
			return;
		}
	}
	free(buf);
}

static void set_version(struct pf_detect *d, int major, int minor, int micro)
{
	d->info.major = major;
	d->info.minor = minor;
	d->info.micro = micro;
	snprintf(d->info.version, sizeof(d->info.version), "%d.%d.%d", major, minor, micro);
}

static int inspect(pid_t pid, const char *dir, const struct remote_mem *mem,
		   const struct mapped_file *mf, struct pf_detect *d)
{
	struct elf_facts ef;
	int want_major = 0, want_minor = 0, fd, r;
	Elf *elf;

	memset(&ef, 0, sizeof(ef));
	fd = open_mapped(pid, dir, mf);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOENT;
	}
	elf_scan(elf, &ef);
	r = -ENOENT;
	if (!ef.python)
		goto out;
	r = elf_bias(elf, mf, &ef.bias);
	if (r < 0)
		goto out;
	if (!name_version(mf->path, &want_major, &want_minor))
		want_major = want_minor = 0;

	snprintf(d->info.binary, sizeof(d->info.binary), "%s", mf->path);
	d->code_type = ef.code_type ? ef.code_type + ef.bias : 0;
	/* in the file's data, or not taken */
	if (ef.next_func_version && ef.next_func_version >= ef.data_lo &&
	    ef.next_func_version + 4 <= ef.data_hi)
		d->versions_at = ef.next_func_version + ef.bias;
	if (ef.runtime)
		d->runtime_addr = ef.runtime + ef.bias;
	else if (ef.pyruntime_sec)
		d->runtime_addr = ef.pyruntime_sec + ef.bias;
	if (!d->runtime_addr && ef.data_hi > ef.data_lo) {
		d->scan_start = ef.data_lo + ef.bias;
		d->scan_end = ef.data_hi + ef.bias;
	}
	d->info.runtime_addr = d->runtime_addr;

	/* version: _Py_DebugOffsets, then Py_Version, then the string in .rodata or in
	 * Py_GetVersion()'s buffer, then one merged into another string */
	if (d->runtime_addr) {
		unsigned char head[16];

		r = mem->read(mem->ctx, d->runtime_addr, head, sizeof(head));
		if (r == -ESRCH)
			goto out;
		if (r == 0 && memcmp(head, "xdebugpy", 8) == 0) {
			uint64_t v = pf_u64(head, 8);

			if ((v >> 24) == 3) {
				d->hex_version = v;
				set_version(d, 3, (int) ((v >> 16) & 0xff), (int) ((v >> 8) & 0xff));
				r = 0;
				goto out;
			}
		}
	}
	if (ef.py_version) {
		uint32_t v;

		r = mem->read(mem->ctx, ef.py_version + ef.bias, &v, sizeof(v));
		if (r == -ESRCH)
			goto out;
		if (r == 0 && (v >> 24) == 3) {
			d->hex_version = v;
			set_version(d, 3, (int) ((v >> 16) & 0xff), (int) ((v >> 8) & 0xff));
			r = 0;
			goto out;
		}
	}
	scan_rodata(elf, want_major, want_minor, false, ef.version, sizeof(ef.version));
	if (!ef.version[0] && ef.bss_hi)
		scan_bss(mem, ef.bss_lo + ef.bias, ef.bss_hi + ef.bias, want_major, want_minor,
			 ef.version, sizeof(ef.version));
	/* a launched interpreter may not have written its version string yet (Py_GetVersion()'s
	 * buffer): the tail of another string then, rather than no micro version at all */
	if (!ef.version[0] && want_major)
		scan_rodata(elf, want_major, want_minor, true, ef.version, sizeof(ef.version));
	if (ef.version[0]) {
		int a, b, c;

		if (pf_parse_version(ef.version, &a, &b, &c) == 0) {
			set_version(d, a, b, c);
			r = 0;
			goto out;
		}
	}
	if (want_major) {
		/* no micro version anywhere: the file name still says X.Y */
		set_version(d, want_major, want_minor, 0);
		r = 0;
		goto out;
	}
	r = -ENOENT;
out:
	elf_end(elf);
	close(fd);
	return r;
}

int pf_detect(pid_t pid, const struct remote_mem *mem, struct pf_detect *ret)
{
	struct mapped_file *files;
	char dir[64], exe_link[80], exe[256];
	size_t n = 0, i;
	ssize_t el;
	int r, rank;

	memset(ret, 0, sizeof(*ret));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	/* a main thread that exited (pthread_exit) while others run on has no maps nor exe:
	 * read them through a live thread */
	r = procfs_mem_dir(pid, dir, sizeof(dir));
	if (r == -ESRCH)
		return r;
	if (r < 0)
		snprintf(dir, sizeof(dir), "/proc/%d", (int) pid);
	snprintf(exe_link, sizeof(exe_link), "%s/exe", dir);
	el = readlink(exe_link, exe, sizeof(exe) - 1);
	if (el < 0 && errno == ENOENT)
		return -ESRCH;
	if (el > 0)
		exe[el] = '\0';
	else
		exe[0] = '\0';
	files = calloc(MAX_CANDIDATES, sizeof(*files));
	if (!files)
		return -ENOMEM;
	r = read_maps(dir, files, MAX_CANDIDATES, &n, exe[0] ? exe : NULL);
	if (r < 0)
		goto out;
	r = -ENOENT;
	for (rank = 0; rank <= 2; rank++) {
		for (i = 0; i < n; i++) {
			struct pf_detect d;
			int q;

			if (files[i].rank != rank)
				continue;
			memset(&d, 0, sizeof(d));
			q = inspect(pid, dir, mem, &files[i], &d);
			if (q == -ESRCH) {
				r = q;
				goto out;
			}
			if (q < 0)
				continue;
			/* a libpython without _PyRuntime (2.7, 3.6) still names the version */
			*ret = d;
			r = 0;
			if (d.runtime_addr || d.scan_start)
				goto out;
		}
	}
out:
	free(files);
	return r;
}

int pyframes_open_settled(pid_t pid, const struct remote_mem *mem, struct pyframes **ret,
			  struct pyframes_info *ret_info)
{
	const struct timespec nap = { 0, 20000000 };
	int r;

	for (int i = 0; i < (int) (PYFRAMES_SETTLE_NS / 20000000ull) + 1; i++) {
		uint64_t age;

		r = pyframes_open(pid, mem, ret, ret_info);
		if ((r != -ENOENT && r != -EAGAIN) || procfs_age_ns(pid, &age) < 0 ||
		    age >= PYFRAMES_SETTLE_NS)
			return r;
		(void) nanosleep(&nap, NULL);
	}
	return r;
}
