/*
 * perfmap.c: JIT symbols from /tmp/perf-PID.map, one "START SIZE name" per line (hex START and
 * SIZE, with or without 0x; the name is the rest of the line and may hold spaces). CPython
 * 3.12+ `-X perf` writes `py::func:file` trampolines there. A later line wins over an earlier
 * one that overlaps it (JITs reuse memory). Malformed lines are skipped and counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "symbolizer/symbolizer_internal.h"

#define PERFMAP_MAX_BYTES (256u << 20)
#define JIT_OVERLAP_SCAN 64

void perfmap_init(struct perfmap *pm)
{
	memset(pm, 0, sizeof(*pm));
	pm->loaded_size = -1;
}

void perfmap_release(struct perfmap *pm)
{
	free(pm->syms);
	perfmap_init(pm);
}

static bool hex_field(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	while (s < end) {
		int d = sym_hex_digit(*s);

		if (d < 0)
			break;
		if (++n > 16)
			return false;
		v = (v << 4) | (uint64_t)d;
		s++;
	}
	if (n == 0)
		return false;
	*p = s;
	*ret = v;
	return true;
}

static int cmp_jit(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int parse_line(struct perfmap *pm, struct strpool *pool, const char *s, const char *end)
{
	uint64_t start, size;
	const char *name;
	struct jit_sym *j;

	while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end - s > SYM_MAX_LINE || !hex_field(&s, end, &start) || s == end || *s != ' ')
		return -EINVAL;
	while (s < end && *s == ' ')
		s++;
	if (!hex_field(&s, end, &size) || s == end || *s != ' ')
		return -EINVAL;
	while (s < end && *s == ' ')
		s++;
	name = s;
	if (name == end || size == 0 || start + size < start)
		return -EINVAL;
	for (const char *c = name; c < end; c++)
		if (*c == '\0')
			return -EINVAL;
	if (pm->n == pm->cap) {
		size_t nc = pm->cap ? pm->cap * 2 : 256;
		struct jit_sym *ns;

		if (pm->n >= SYM_MAX_JIT_SYMS)
			return -E2BIG;
		ns = realloc(pm->syms, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		pm->syms = ns;
		pm->cap = nc;
	}
	j = &pm->syms[pm->n];
	j->name = strpool_intern(pool, name, (size_t)(end - name));
	if (!j->name)
		return -ENOMEM;
	j->start = start;
	j->size = size;
	j->seq = (uint32_t)pm->n;
	pm->n++;
	return 0;
}

int perfmap_parse(struct perfmap *pm, struct strpool *pool, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	pm->n = 0;
	pm->malformed = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		int r;

		if (le > p) {
			r = parse_line(pm, pool, p, le);
			if (r == -ENOMEM)
				return r;
			if (r == -E2BIG)
				break;
			if (r < 0)
				pm->malformed++;
		}
		p = nl ? nl + 1 : end;
	}
	qsort(pm->syms, pm->n, sizeof(*pm->syms), cmp_jit);
	return 0;
}

int perfmap_load(struct perfmap *pm, struct strpool *pool, const char *path)
{
	struct stat st;
	char *buf;
	size_t len = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		(void) close(fd);
		return -ENOENT;
	}
	if ((uint64_t)st.st_size > PERFMAP_MAX_BYTES)
		st.st_size = PERFMAP_MAX_BYTES;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		(void) close(fd);
		return -ENOMEM;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	(void) close(fd);
	/* a line still being written has no newline yet: leave it for the next load */
	while (len > 0 && buf[len - 1] != '\n')
		len--;
	r = perfmap_parse(pm, pool, buf, len);
	free(buf);
	pm->loaded_size = st.st_size;
	pm->loaded_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return r;
}

const struct jit_sym *perfmap_find(const struct perfmap *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->n;
	const struct jit_sym *best = NULL;

	/* last entry with start <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i-- > 0 && k < JIT_OVERLAP_SCAN; k++) {
		const struct jit_sym *j = &pm->syms[i];

		if (addr - j->start < j->size && (!best || j->seq > best->seq))
			best = j;
	}
	return best;
}

const struct jit_sym *perfmap_lookup(struct symbolizer *sym, uint64_t addr)
{
	const struct jit_sym *j = perfmap_find(&sym->perfmap, addr);
	uint64_t now;
	struct stat st;
	const char *path = sym->perfmap_path;

	if (j)
		return j;
	now = clock_now_ns();
	if (sym->perfmap.last_check_ns && now - sym->perfmap.last_check_ns < SYM_REFRESH_NS)
		return NULL;
	sym->perfmap.last_check_ns = now;
	if (stat(path, &st) < 0) {
		path = sym->perfmap_path2;
		if (stat(path, &st) < 0)
			return NULL;
	}
	if (st.st_size == sym->perfmap.loaded_size &&
	    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == sym->perfmap.loaded_mtime_ns)
		return NULL;
	if (perfmap_load(&sym->perfmap, &sym->pool, path) < 0)
		return NULL;
	return perfmap_find(&sym->perfmap, addr);
}
