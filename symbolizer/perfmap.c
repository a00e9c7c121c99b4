/*
 * perfmap.c: JIT symbols from /tmp/perf-PID.map, one "START SIZE name" per line (hex START and
 * SIZE, with or without 0x; the name is the rest of the line and may hold spaces). CPython
 * 3.12+ `-X perf` writes `py::func:file` trampolines there. A later line wins over an earlier
 * one that overlaps it (JITs reuse memory). Malformed lines are skipped and counted.
 * The target (or anyone who can write its /tmp) can put anything at that path: it is read as
 * perf reads it, a regular file of the target's user or root, not through a link, never
 * waiting on a FIFO (sym_open_planted), its first PERFMAP_MAX_BYTES at most.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
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
	if (pm->n == pm->cap && pm->n >= SYM_MAX_JIT_SYMS)
		return -E2BIG;
	if (array_grow((void **) &pm->syms, &pm->cap, pm->n + 1, sizeof(*pm->syms), 256) < 0)
		return -ENOMEM;
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

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

int perfmap_load(struct perfmap *pm, struct strpool *pool, int dir_fd, const char *path,
		 uid_t owner)
{
	struct stat st;
	char *buf;
	size_t len = 0, want;
	int fd, r;

	fd = sym_open_planted(dir_fd, path, 0, owner, UINT64_MAX, &st);
	if (fd < 0)
		return fd;
	if (st.st_size == pm->loaded_size && mtime_ns(&st) == pm->loaded_mtime_ns) {
		(void) close(fd);
		return 0;
	}
	want = (uint64_t)st.st_size > PERFMAP_MAX_BYTES ? PERFMAP_MAX_BYTES : (size_t)st.st_size;
	buf = malloc(want + 1);
	if (!buf) {
		(void) close(fd);
		return -ENOMEM;
	}
	while (len < want) {
		ssize_t n = read(fd, buf + len, want - len);

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
	pm->loaded_mtime_ns = mtime_ns(&st);
	return r;
}

const struct jit_sym *perfmap_find(const struct perfmap *pm, uint64_t addr)
{
	/* past the last entry with start <= addr */
	size_t lo = array_upper(pm->syms, pm->n, sizeof(*pm->syms), offsetof(struct jit_sym, start),
				addr);
	const struct jit_sym *best = NULL;

	for (size_t i = lo, k = 0; i-- > 0 && k < JIT_OVERLAP_SCAN; k++) {
		const struct jit_sym *j = &pm->syms[i];

		if (addr - j->start < j->size && (!best || j->seq > best->seq))
			best = j;
	}
	return best;
}

/* perfmap_load() of the map at path under the directory root. */
static int load_under(struct symbolizer *sym, const char *root, const char *path)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = perfmap_load(&sym->perfmap, &sym->pool, fd, path, sym->uid);
	(void) close(fd);
	return r;
}

const struct jit_sym *perfmap_lookup(struct symbolizer *sym, uint64_t addr)
{
	const struct jit_sym *j = perfmap_find(&sym->perfmap, addr);
	uint64_t now;

	if (j)
		return j;
	now = clock_now_ns();
	if (sym->perfmap.last_check_ns && now - sym->perfmap.last_check_ns < SYM_REFRESH_NS)
		return NULL;
	sym->perfmap.last_check_ns = now;
	(void) sym_proc_uid(sym->pid, &sym->uid);
	/* the target's /tmp, its map named by its pid in its namespace; else ours */
	if (load_under(sym, sym->root, sym->perfmap_path) < 0 &&
	    load_under(sym, "/", sym->perfmap_path2) < 0)
		return NULL;
	return perfmap_find(&sym->perfmap, addr);
}
