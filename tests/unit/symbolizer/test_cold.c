/* The nameless .cold part of _PyEval_EvalFrameDefault in stripped static Pythons (.dynsym only):
 * Debian's python3.14 and python3.13 (deps/debian, fetched by tests/setup-pythons.sh; argv[1] is
 * that folder) and /usr/bin/python3.11, each run as a live child. The test finds the jump targets
 * of the exported hot part that lie outside it and in no .dynsym symbol on its own (a plain byte
 * scan, no CFI) and expects the symbolizer to name them "_PyEval_EvalFrameDefault.cold", with the
 * usual module and offset; exported functions and a nameless address far from them keep their
 * usual answers. Each interpreter that is absent is skipped with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "symbolizer/symbolizer.h"

static const char *deb_dir = "deps/debian";

struct fsym {
	uint64_t value, size;
	char name[128];
};

struct elf_info {
	struct fsym *syms;       /* FUNC symbols of .dynsym, sorted by value */
	size_t n;
	unsigned char *text;     /* the bytes of the hot part */
	uint64_t text_addr, text_size;
};

static int cmp_fsym(const void *a, const void *b)
{
	uint64_t x = ((const struct fsym *)a)->value, y = ((const struct fsym *)b)->value;

	return x < y ? -1 : x > y;
}

/* .dynsym FUNC symbols of path, and the code of `func`. */
static bool elf_load(const char *path, const char *func, struct elf_info *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t cap = 0, phnum = 0;
	struct fsym *hot = NULL;

	memset(ret, 0, sizeof(*ret));
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_value == 0 || !(name = elf_strptr(e, sh.sh_link, s.st_name)))
				continue;
			if (ret->n == cap) {
				cap = cap ? cap * 2 : 1024;
				ret->syms = realloc(ret->syms, cap * sizeof(*ret->syms));
				assert_non_null(ret->syms);
			}
			ret->syms[ret->n].value = s.st_value;
			ret->syms[ret->n].size = s.st_size;
			snprintf(ret->syms[ret->n].name, sizeof(ret->syms[ret->n].name), "%s", name);
			ret->n++;
		}
	}
	qsort(ret->syms, ret->n, sizeof(*ret->syms), cmp_fsym);
	for (size_t i = 0; i < ret->n; i++)
		if (strcmp(ret->syms[i].name, func) == 0)
			hot = &ret->syms[i];
	/* the hot part's bytes, through the PT_LOAD holding them */
	if (hot && e && elf_getphdrnum(e, &phnum) == 0) {
		for (size_t i = 0; i < phnum && !ret->text; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    hot->value < ph.p_vaddr || hot->value + hot->size > ph.p_vaddr + ph.p_filesz)
				continue;
			ret->text = malloc(hot->size);
			assert_non_null(ret->text);
			assert_int_equal(pread(fd, ret->text, hot->size,
					       (off_t)(ph.p_offset + hot->value - ph.p_vaddr)),
					 (ssize_t)hot->size);
			ret->text_addr = hot->value;
			ret->text_size = hot->size;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret->text != NULL;
}

/* The .dynsym FUNC symbol covering v, or NULL. */
static const struct fsym *covering(const struct elf_info *ei, uint64_t v)
{
	for (size_t i = 0; i < ei->n; i++)
		if (v >= ei->syms[i].value && v - ei->syms[i].value < ei->syms[i].size)
			return &ei->syms[i];
	return NULL;
}

/* rel32 jmp/jcc targets of the hot part that lie outside it and in no symbol. */
static size_t nameless_targets(const struct elf_info *ei, uint64_t *ret, size_t max)
{
	size_t n = 0;

	for (uint64_t i = 0; i + 6 <= ei->text_size && n < max; i++) {
		int32_t rel;
		uint64_t len, t;

		if (ei->text[i] == 0xe9)
			len = 5;
		else if (ei->text[i] == 0x0f && (ei->text[i + 1] & 0xf0) == 0x80)
			len = 6;
		else
			continue;
		memcpy(&rel, ei->text + i + len - 4, 4);
		t = ei->text_addr + i + len + (uint64_t)(int64_t)rel;
		if (t - ei->text_addr < ei->text_size || t < 0x400000 ||
		    t >= ei->syms[ei->n - 1].value + ei->syms[ei->n - 1].size || covering(ei, t))
			continue;
		ret[n++] = t;
	}
	return n;
}

static bool maps_has(pid_t pid, const char *path)
{
	char mp[64], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)pid);
	f = fopen(mp, "r");
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, path) && strstr(line, "r-xp");
	free(line);
	fclose(f);
	return found;
}

/* Runs `launcher -c "sleep"` and checks lookups in binary's .cold part. */
static void check_python(const char *launcher, const char *binary, const char *module)
{
	struct symbolizer *sym = NULL;
	struct native_frame f[16];
	struct elf_info ei;
	uint64_t targets[512], far = 0, lo = UINT64_MAX, hi = 0;
	size_t n, nt, named = 0;
	pid_t child;
	int status;

	if (access(launcher, X_OK) != 0 || access(binary, R_OK) != 0) {
		print_message("# skip: no %s (tests/setup-pythons.sh fetches Debian's)\n", binary);
		skip();
	}
	assert_true(elf_load(binary, "_PyEval_EvalFrameDefault", &ei));
	nt = nameless_targets(&ei, targets, 512);
	print_message("# %s: _PyEval_EvalFrameDefault 0x%lx+%lu, %zu nameless jump targets\n",
		      binary, (unsigned long)ei.text_addr, (unsigned long)ei.text_size, nt);
	assert_true(nt >= 1);

	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		execl(launcher, launcher, "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300 && !maps_has(child, binary); i++)
		usleep(10000);
	assert_true(maps_has(child, binary));
	assert_int_equal(symbolizer_new(child, &sym), 0);

	/* the exported hot part keeps its name */
	assert_int_equal(symbolizer_lookup(sym, ei.text_addr + 1, false, f, 16, &n), 0);
	assert_string_equal(f[n - 1].name, "_PyEval_EvalFrameDefault");

	for (size_t i = 0; i < nt; i++) {
		assert_int_equal(symbolizer_lookup(sym, targets[i], false, f, 16, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(f[0].module, module);
		if (f[0].name && strcmp(f[0].name, "_PyEval_EvalFrameDefault.cold") == 0) {
			named++;
			assert_int_equal(f[0].module_offset, targets[i] - 0x400000);   /* non-PIE */
		} else {
			/* nameless: the start of its function */
			assert_true(f[0].module_offset <= targets[i] - 0x400000);
			print_message("# 0x%lx: %s\n", (unsigned long)targets[i],
				      f[0].name ? f[0].name : "(null)");
		}
	}
	print_message("# %zu of %zu named _PyEval_EvalFrameDefault.cold\n", named, nt);
	/* real jumps all land in the one .cold part; a byte pattern that only looks like a jump
	 * may land elsewhere (and stays nameless) */
	assert_true(named >= 1 && named * 2 >= nt);

	/* a nameless address (a static function) well away from the targets stays nameless */
	for (size_t i = 0; i < nt; i++) {
		lo = targets[i] < lo ? targets[i] : lo;
		hi = targets[i] > hi ? targets[i] : hi;
	}
	for (size_t i = 0; i + 1 < ei.n && !far; i++) {
		uint64_t end = ei.syms[i].value + ei.syms[i].size;

		if (ei.syms[i + 1].value > end + 256 && end > 0x400000 &&
		    (end + 128 + (1u << 18) < lo || end + 128 > hi + (1u << 18)))
			far = end + 128;
	}
	assert_true(far != 0);
	assert_int_equal(symbolizer_lookup(sym, far, false, f, 16, &n), 0);
	print_message("# nameless 0x%lx -> %s+0x%lx\n", (unsigned long)far,
		      f[n - 1].module ? f[n - 1].module : "(null)",
		      (unsigned long)f[n - 1].module_offset);
	assert_null(f[n - 1].name);
	free(ei.syms);
	free(ei.text);
	symbolizer_free(sym);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
}

static void test_debian_314(void **state)
{
	char launcher[PATH_MAX], binary[PATH_MAX];

	(void) state;
	snprintf(launcher, sizeof(launcher), "%s/python3.14", deb_dir);
	snprintf(binary, sizeof(binary), "%s/root/usr/bin/python3.14", deb_dir);
	check_python(launcher, binary, "python3.14");
}

static void test_debian_313(void **state)
{
	char launcher[PATH_MAX], binary[PATH_MAX];

	(void) state;
	snprintf(launcher, sizeof(launcher), "%s/python3.13", deb_dir);
	snprintf(binary, sizeof(binary), "%s/root/usr/bin/python3.13", deb_dir);
	check_python(launcher, binary, "python3.13");
}

static void test_system_311(void **state)
{
	(void) state;
	check_python("/usr/bin/python3.11", "/usr/bin/python3.11", "python3.11");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debian_314),
		cmocka_unit_test(test_debian_313),
		cmocka_unit_test(test_system_311),
	};

	if (argc > 1)
		deb_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
