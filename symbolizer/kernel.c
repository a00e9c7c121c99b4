/*
 * kernel.c: kernel symbols from /proc/kallsyms ("ADDR TYPE NAME [\t[MODULE]]"), text symbols
 * only, sorted by address, looked up by binary search. With kptr_restrict every address reads
 * as zero: then nothing can be resolved (-EACCES on load, -ENOENT per lookup).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "symbolizer/symbolizer_internal.h"

void kallsyms_init(struct kallsyms *k)
{
	memset(k, 0, sizeof(*k));
}

void kallsyms_release(struct kallsyms *k)
{
	free(k->syms);
	kallsyms_init(k);
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int parse_line(struct kallsyms *k, size_t *cap, struct strpool *pool, char *line,
		      const char *kernel)
{
	char *p = line, *end, *name, *mod = NULL;
	unsigned long long addr;
	char type;
	struct ksym *s;

	addr = strtoull(p, &end, 16);
	if (end == p || *end != ' ')
		return -EINVAL;
	p = end + 1;
	type = *p;
	if (type == '\0' || p[1] != ' ')
		return -EINVAL;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = p + 2;
	end = strchr(name, '\t');
	if (end) {
		*end = '\0';
		mod = end + 1;
		while (*mod == ' ')
			mod++;
	}
	if (*name == '\0')
		return -EINVAL;
	if (k->n == *cap && k->n >= SYM_MAX_KSYMS)
		return -E2BIG;
	if (array_grow((void **) &k->syms, cap, k->n + 1, sizeof(*k->syms), 4096) < 0)
		return -ENOMEM;
	s = &k->syms[k->n];
	s->addr = addr;
	s->name = strpool_intern(pool, name, strlen(name));
	s->module = mod && *mod ? strpool_intern(pool, mod, strlen(mod)) : kernel;
	if (!s->name || !s->module)
		return -ENOMEM;
	k->n++;
	return 0;
}

int kallsyms_load(struct kallsyms *k, struct strpool *pool, const char *path)
{
	char line[SYM_MAX_LINE];
	const char *kernel;
	size_t cap = 0;
	bool nonzero = false;
	FILE *f;
	int r = 0;

	kallsyms_release(k);
	k->loaded = true;
	kernel = strpool_intern(pool, "[kernel.kallsyms]", 17);
	if (!kernel)
		return k->load_error = -ENOMEM;
	f = fopen(path, "re");
	if (!f)
		return k->load_error = -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			int c;

			/* overlong line: skip the rest of it */
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		r = parse_line(k, &cap, pool, line, kernel);
		if (r == -ENOMEM || r == -E2BIG)
			break;
		r = 0;
	}
	(void) fclose(f);
	if (r == -ENOMEM) {
		kallsyms_release(k);
		k->loaded = true;
		return k->load_error = r;
	}
	for (size_t i = 0; i < k->n && !nonzero; i++)
		nonzero = k->syms[i].addr != 0;
	if (!nonzero) {
		int err = k->n == 0 ? -ENOENT : -EACCES;

		free(k->syms);
		k->syms = NULL;
		k->n = 0;
		return k->load_error = err;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	k->load_error = 0;
	return 0;
}

const struct ksym *kallsyms_find(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = array_upper(k->syms, k->n, sizeof(*k->syms), offsetof(struct ksym, addr), addr);

	if (lo == 0 || addr - k->syms[lo - 1].addr >= (1u << 20))
		return NULL;   /* before the first symbol, or far past the last one */
	return &k->syms[lo - 1];
}

int symbolizer_kernel(struct symbolizer *sym, uint64_t addr, struct native_frame *ret)
{
	const struct ksym *s;

	if (!ret)
		return -EINVAL;
	if (!sym->kallsyms.loaded)
		(void) kallsyms_load(&sym->kallsyms, &sym->pool, sym->kallsyms_path);
	s = kallsyms_find(&sym->kallsyms, addr);
	if (!s)
		return -ENOENT;
	*ret = (struct native_frame){ .addr = addr, .name = s->name, .module = s->module,
				      .module_offset = addr - s->addr };
	return 0;
}
