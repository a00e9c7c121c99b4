/*
 * pmu: the parts of event parsing that read sysfs (and tracefs under it): pmu/term=val,.../
 * events (the PMU's type, its format/ bit layouts, its named events/), subsys:name tracepoint
 * ids, and the PMU listing. Every path is under sysfs_root, "/sys" unless
 * events_set_sysfs_root() points it at a test tree; names put into paths are checked first.
 * Where the real /sys has no tracefs mounted, a tracepoint name mounts it at
 * /sys/kernel/tracing (as root), as perf does.
 */
#include "sampler/events_internal.h"
#include "sampler/sampler.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <unistd.h>

static char sysfs_root[PATH_MAX] = "/sys";

void events_set_sysfs_root(const char *dir)
{
	const char *d = dir ? dir : "/sys";

	if (strlen(d) < sizeof(sysfs_root))
		memcpy(sysfs_root, d, strlen(d) + 1);
}

/* Reads sysfs_root/REL (formatted) into buf, without the trailing newline. 0 or -errno. */
static int read_sysfs(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int read_sysfs(char *buf, size_t size, const char *fmt, ...)
{
	char rel[PATH_MAX], path[PATH_MAX];
	va_list ap;
	ssize_t n;
	int fd, r;

	va_start(ap, fmt);
	r = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t) r >= sizeof(rel))
		return -ENAMETOOLONG;
	r = snprintf(path, sizeof(path), "%s/%s", sysfs_root, rel);
	if (r < 0 || (size_t) r >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	r = n < 0 ? -errno : 0;
	(void) close(fd);
	if (r < 0)
		return r;
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char) buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

/* A decimal or 0x-hex number filling all of s[0..len) (perf: "010" is ten). */
static int parse_number(const char *s, size_t len, uint64_t *ret)
{
	char tmp[32], *end;
	int base = 10;

	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		len -= 2;
	}
	if (!len || len >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (!(base == 16 ? isxdigit((unsigned char) tmp[i]) : isdigit((unsigned char) tmp[i])))
			return -EINVAL;
	errno = 0;
	*ret = strtoull(tmp, &end, base);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

/* A name we may put into a sysfs path: [A-Za-z0-9_.-]+, not starting with '.'. */
static bool safe_name(const char *s, size_t len)
{
	if (!len || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char) s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

/* "config:0-7,32-35" -> which field (0 config, 1 config1, 2 config2) and a bit mask. */
static int parse_format(const char *text, int *ret_field, uint64_t *ret_mask)
{
	uint64_t mask = 0;
	const char *p;

	if (!strncmp(text, "config:", 7))
		*ret_field = 0;
	else if (!strncmp(text, "config1:", 8) || !strncmp(text, "config2:", 8))
		*ret_field = text[6] - '0';
	else
		return -EINVAL;
	p = strchr(text, ':') + 1;
	for (;;) {
		char *end;
		unsigned long lo, hi;

		if (!isdigit((unsigned char) *p))
			return -EINVAL;
		lo = hi = strtoul(p, &end, 10);
		p = end;
		if (*p == '-') {
			if (!isdigit((unsigned char) p[1]))
				return -EINVAL;
			hi = strtoul(p + 1, &end, 10);
			p = end;
		}
		if (lo > hi || hi > 63)
			return -EINVAL;
		for (unsigned long b = lo; b <= hi; b++)
			mask |= UINT64_C(1) << b;
		if (!*p)
			break;
		if (*p++ != ',')
			return -EINVAL;
	}
	*ret_mask = mask;
	return 0;
}

static __u64 *config_field(struct perf_event_attr *attr, int field)
{
	return field == 0 ? &attr->config : field == 1 ? &attr->config1 : &attr->config2;
}

/* The terms of PMU's named event NAME (PMU/events/NAME; perf ignores case there). */
static int pmu_event_terms(const char *pmu, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	struct dirent *de;
	int r = -EINVAL;
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/events", sysfs_root,
		     pmu) >= (int) sizeof(path))
		return -EINVAL;
	d = opendir(path);
	if (!d)
		return -EINVAL;
	while ((de = readdir(d)))
		if (!strchr(de->d_name, '.') && !strcasecmp(de->d_name, name)) {
			if (read_sysfs(buf, size, "bus/event_source/devices/%s/events/%s", pmu,
				       de->d_name) >= 0)
				r = 0;
			break;
		}
	(void) closedir(d);
	return r;
}

/* Applies one pmu term (key[=value]); depth > 0 inside a named event's definition. */
static int pmu_term(const char *pmu, const char *term, size_t len, struct perf_event_attr *attr,
		    int depth)
{
	const char *eq = memchr(term, '=', len);
	size_t klen = eq ? (size_t) (eq - term) : len;
	char key[64], buf[4096];
	uint64_t value = 1, mask;
	int field, r;

	if (!klen || klen >= sizeof(key))
		return -EINVAL;
	memcpy(key, term, klen);
	key[klen] = '\0';
	if (!strcmp(key, "name") && eq && eq + 1 < term + len)
		return 0;       /* perf's display name: the spec keeps the text as written */
	if (eq) {
		r = parse_number(eq + 1, len - klen - 1, &value);
		if (r < 0)
			return r;
	}
	if (!strcmp(key, "config") || !strcmp(key, "config1") || !strcmp(key, "config2")) {
		*config_field(attr, key[6] ? key[6] - '0' : 0) = value;
		return 0;
	}
	if (!safe_name(key, klen))
		return -EINVAL;
	r = read_sysfs(buf, sizeof(buf), "bus/event_source/devices/%s/format/%s", pmu, key);
	if (r >= 0) {
		uint64_t spread = 0, vbit = 0;
		__u64 *v;

		r = parse_format(buf, &field, &mask);
		if (r < 0)
			return r;
		/* perf's pmu_format_value(): value bits go to the format's bits, lowest first,
		 * OR-ed in; a value wider than the format is an error */
		for (int b = 0; b < 64; b++)
			if (mask & (UINT64_C(1) << b)) {
				if (value & (UINT64_C(1) << vbit))
					spread |= UINT64_C(1) << b;
				vbit++;
			}
		if (vbit < 64 && value >> vbit)
			return -EINVAL;
		v = config_field(attr, field);
		*v |= spread;
		return 0;
	}
	if ((eq && value != 1) || depth > 0)
		return -EINVAL;
	/* a named event (NAME or NAME=1) */
	r = pmu_event_terms(pmu, key, buf, sizeof(buf));
	if (r < 0)
		return r;
	for (const char *p = buf; *p;) {
		size_t l = strcspn(p, ",");

		while (l > 0 && isspace((unsigned char) p[l - 1]))
			l--;
		if (l) {
			r = pmu_term(pmu, p, l, attr, depth + 1);
			if (r < 0)
				return r;
		}
		p += strcspn(p, ",");
		if (*p)
			p++;
		while (isspace((unsigned char) *p))
			p++;
	}
	return 0;
}

static bool is_config_term(const char *t, size_t len)
{
	size_t k = strcspn(t, "=");

	if (k > len)
		k = len;
	return (k == 6 && !strncmp(t, "config", 6)) ||
	       (k == 7 && (!strncmp(t, "config1", 7) || !strncmp(t, "config2", 7)));
}

/* pmu/terms/[modifiers] */
int pmu_parse(const char *text, struct event_spec *ret)
{
	const char *slash = strchr(text, '/');
	const char *terms = slash + 1;
	const char *close = strchr(terms, '/');
	char pmu[64], buf[32];
	unsigned long type;
	char *end;
	int r;

	if (!close || slash == text || (size_t) (slash - text) >= sizeof(pmu) ||
	    !safe_name(text, slash - text))
		return -EINVAL;
	memcpy(pmu, text, slash - text);
	pmu[slash - text] = '\0';
	r = read_sysfs(buf, sizeof(buf), "bus/event_source/devices/%s/type", pmu);
	if (r < 0)
		return -ENOENT;
	errno = 0;
	type = strtoul(buf, &end, 10);
	if (errno || *end || end == buf || type > UINT32_MAX)
		return -EINVAL;
	ret->kind = EVENT_PMU;
	ret->attr.type = type;

	/* perf applies config/config1/config2 first (they set), then format terms (they OR) */
	for (int pass = 0; pass < 2; pass++)
		for (const char *p = terms; p < close;) {
			size_t l = strcspn(p, ",/");

			if (!l)
				return -EINVAL;
			if (is_config_term(p, l) == (pass == 0)) {
				r = pmu_term(pmu, p, l, &ret->attr, 0);
				if (r < 0)
					return r;
			}
			p += l;
			if (*p == ',' && p + 1 == close)
				return -EINVAL;
			if (*p == ',')
				p++;
		}
	return events_apply_modifiers(close[1] ? close + 1 : NULL, &ret->attr);
}

/* As perf does: where the real /sys has no tracefs mounted (a fresh machine mounts none), mount
 * it at /sys/kernel/tracing. 0 if it was mounted now, else -errno (-EPERM: not root). */
static int mount_tracefs(void)
{
	char probe[32];

	if (strcmp(sysfs_root, "/sys") != 0)
		return -ENOENT;     /* a test tree: never mount anything for it */
	if (read_sysfs(probe, sizeof(probe), "kernel/tracing/events/header_page") >= 0 ||
	    read_sysfs(probe, sizeof(probe), "kernel/tracing/available_events") >= 0)
		return -EEXIST;     /* mounted already */
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0)
		return -errno;
	return 0;
}

/* subsys:name -> tracefs id. 0, -ENOENT (no such tracepoint, or no tracefs that hwspy could
 * mount) */
int pmu_tracepoint_id(const char *sys, size_t sys_len, const char *name, size_t name_len,
		      uint64_t *ret_id)
{
	static const char *const roots[] = { "kernel/tracing", "kernel/debug/tracing" };
	char buf[32];

	if (!safe_name(sys, sys_len) || !safe_name(name, name_len))
		return -ENOENT;
	for (int attempt = 0; attempt < 2; attempt++) {
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
			if (read_sysfs(buf, sizeof(buf), "%s/events/%.*s/%.*s/id", roots[i],
				       (int) sys_len, sys, (int) name_len, name) >= 0)
				return parse_number(buf, strlen(buf), ret_id) < 0 ? -ENOENT : 0;
		if (attempt == 0 && mount_tracefs() < 0)
			break;
	}
	return -ENOENT;
}

int events_tracefs(void)
{
	static const char *const roots[] = { "kernel/tracing", "kernel/debug/tracing" };
	char buf[32];
	int r = -ENOENT, m;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		int e = read_sysfs(buf, sizeof(buf), "%s/events/header_page", roots[i]);

		if (e >= 0)
			return 0;
		if (e == -EACCES || e == -EPERM)
			r = -EACCES;    /* there, but not ours to read */
	}
	if (r == -EACCES)
		return r;
	m = mount_tracefs();
	if (m == 0 || m == -EEXIST)
		return read_sysfs(buf, sizeof(buf), "kernel/tracing/events/header_page") >= 0 ? 0 : -EACCES;
	return m == -EPERM || m == -EACCES ? -EPERM : m == -ENOENT ? -ENOENT : -ENODEV;
}

static int cmp_pmu(const void *a, const void *b)
{
	return strcmp(a, b);
}

size_t events_list_pmus(char (*ret)[64], size_t max)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int r;

	r = snprintf(path, sizeof(path), "%s/bus/event_source/devices", sysfs_root);
	if (r < 0 || (size_t) r >= sizeof(path) || !ret)
		return 0;
	d = opendir(path);
	if (!d)
		return 0;
	while (n < max && (de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (de->d_name[0] == '.' || l >= sizeof(ret[0]))
			continue;
		memcpy(ret[n++], de->d_name, l + 1);
	}
	(void) closedir(d);
	qsort(ret, n, sizeof(ret[0]), cmp_pmu);
	return n;
}

bool events_have_hw_pmu(void)
{
	static const char *const core[] = { "cpu", "cpu_core", "cpu_atom", "cpum_cf" };
	char pmus[128][64], buf[64];
	size_t n = events_list_pmus(pmus, sizeof(pmus) / sizeof(pmus[0]));

	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < sizeof(core) / sizeof(core[0]); j++)
			if (!strcmp(pmus[i], core[j]))
				return true;
		/* Arm core PMUs (armv8_pmuv3_0, armv8_cortex_a72, ...) list their CPUs in "cpus" */
		if (!strncmp(pmus[i], "armv", 4) ||
		    read_sysfs(buf, sizeof(buf), "bus/event_source/devices/%s/cpus", pmus[i]) >= 0)
			return true;
	}
	return false;
}
