/*
 * Unit tests of sampler/events.c: event names -> perf_event_attr, compared with perf itself.
 *
 * The expectations come from perf, generated once by gen_perf_attrs.sh (next to this file),
 * which runs `perf stat -vv -e SPEC true` for every spec and records the first perf_event_attr
 * perf prints (perf prints it even for events this machine cannot open):
 *   perf_attrs.txt          perf 6.1.187, as root, Linux 6.18 Firecracker VM without a hardware
 *                           PMU, against the real /sys (software/, msr/, uprobe/ PMUs);
 *   perf_attrs_fixture.txt  the same perf with SYSFS_PATH pointing at a root holding the fixture
 *                           PMU sysfs/bus/event_source/devices/cpu (Intel-like formats, one split
 *                           "config:0-7,32-35" like AMD's event field, named events).
 * A row is "spec type config config1 config2 exclude_user exclude_kernel exclude_hv
 * exclude_host exclude_guest exclude_idle precise_ip", or "spec error" where perf refused it.
 * Every row becomes one test here; every name and alias of events_table() must have a row.
 *
 * Where hwspy deliberately differs from perf (perf accepts, hwspy refuses) see
 * test_stricter_than_perf. Rows for PMUs with dynamic type numbers (msr/, uprobe/) expect the
 * type this machine's sysfs gives that PMU, and are skipped, saying why, where it is absent.
 *
 * argv[1]: the directory holding the tables and the sysfs/ fixture (meson passes it).
 */
#include "sampler/sampler.h"
#include "sampler/events_internal.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

struct row {
	char spec[128];
	bool error;
	bool fixture;                   /* from perf_attrs_fixture.txt */
	uint32_t type;
	uint64_t config, config1, config2;
	unsigned exclude_user, exclude_kernel, exclude_hv, exclude_host, exclude_guest;
	unsigned exclude_idle, precise_ip;
};

static const char *data_dir = ".";
static char fixture_root[PATH_MAX];
static struct row *rows;
static size_t n_rows;

static int load_table(const char *file, bool fixture)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", data_dir, file);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct row *r;
		char word[32];
		unsigned long long type, c, c1, c2;
		int n;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		rows = realloc(rows, (n_rows + 1) * sizeof(*rows));
		if (!rows)
			abort();
		r = &rows[n_rows++];
		memset(r, 0, sizeof(*r));
		r->fixture = fixture;
		if (sscanf(line, "%127s %31s", r->spec, word) != 2)
			abort();
		if (!strcmp(word, "error")) {
			r->error = true;
			continue;
		}
		n = sscanf(line, "%*s %llu %llx %llx %llx %u %u %u %u %u %u %u", &type, &c, &c1, &c2,
			   &r->exclude_user, &r->exclude_kernel, &r->exclude_hv, &r->exclude_host,
			   &r->exclude_guest, &r->exclude_idle, &r->precise_ip);
		if (n != 11) {
			fprintf(stderr, "bad row in %s: %s", path, line);
			abort();
		}
		r->type = type;
		r->config = c;
		r->config1 = c1;
		r->config2 = c2;
	}
	(void) fclose(f);
	return 0;
}

static const struct row *find_row(const char *spec)
{
	for (size_t i = 0; i < n_rows; i++)
		if (!rows[i].fixture && !strcmp(rows[i].spec, spec))
			return &rows[i];
	return NULL;
}

static int use_fixture(void **state)
{
	(void) state;
	events_set_sysfs_root(fixture_root);
	return 0;
}

static int use_real_sysfs(void **state)
{
	(void) state;
	events_set_sysfs_root(NULL);
	return 0;
}

/* The type a row's event must get here. A pmu/.../ row for a PMU other than software/ and the
 * fixture's (msr/, uprobe/) holds the type perf saw, but such a PMU's type number is given out at
 * boot and differs between machines: the row expects the number this machine's sysfs gives that
 * PMU (perf reads the same file). False (skip, saying why) where this machine has no such PMU. */
static bool row_type_here(const struct row *r, unsigned *ret_type)
{
	char pmu[64], path[PATH_MAX];
	const char *slash = strchr(r->spec, '/');
	unsigned type;
	FILE *f;
	int n;

	*ret_type = r->type;
	if (r->fixture || !slash || r->error || !strncmp(r->spec, "software/", 9))
		return true;
	snprintf(pmu, sizeof(pmu), "%.*s", (int) (slash - r->spec), r->spec);
	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", pmu);
	f = fopen(path, "re");
	if (!f) {
		print_message("# skip %s: no '%s' pmu on this machine\n", r->spec, pmu);
		return false;
	}
	n = fscanf(f, "%u", &type);
	(void) fclose(f);
	assert_int_equal(n, 1);
	if (type != r->type)
		print_message("# %s: pmu '%s' is type %u here, %u where the table was made\n",
			      r->spec, pmu, type, r->type);
	*ret_type = type;
	return true;
}

static void test_row(void **state)
{
	const struct row *r = *state;
	struct event_spec spec;
	unsigned type;
	int ret;

	if (!row_type_here(r, &type)) {
		skip();
		return;
	}
	ret = events_parse(r->spec, &spec);
	if (r->error) {
		if (ret >= 0)
			print_message("# perf refuses '%s', hwspy accepted it\n", r->spec);
		assert_true(ret == -EINVAL || ret == -ENOENT);
		return;
	}
	if (ret < 0)
		print_message("# '%s': %s\n", r->spec, strerror(-ret));
	assert_int_equal(ret, 0);
	assert_string_equal(spec.name, r->spec);
	assert_int_equal(spec.attr.size, sizeof(spec.attr));
	assert_int_equal(spec.attr.type, type);
	assert_int_equal(spec.attr.config, r->config);
	assert_int_equal(spec.attr.config1, r->config1);
	assert_int_equal(spec.attr.config2, r->config2);
	assert_int_equal(spec.attr.exclude_user, r->exclude_user);
	assert_int_equal(spec.attr.exclude_kernel, r->exclude_kernel);
	assert_int_equal(spec.attr.exclude_hv, r->exclude_hv);
	assert_int_equal(spec.attr.exclude_host, r->exclude_host);
	assert_int_equal(spec.attr.exclude_guest, r->exclude_guest);
	assert_int_equal(spec.attr.exclude_idle, r->exclude_idle);
	assert_int_equal(spec.attr.precise_ip, r->precise_ip);
	/* nothing else is set: the sampler owns the sampling fields */
	assert_int_equal(spec.attr.sample_period, 0);
	assert_int_equal(spec.attr.sample_type, 0);
	assert_int_equal(spec.attr.read_format, 0);
	assert_int_equal(spec.attr.disabled, 0);
}

/* every name and alias hwspy knows has a perf row, and the table's kinds agree with perf */
static void test_table_covered(void **state)
{
	size_t n;
	const struct event_info *t = events_table(&n);
	static const uint32_t kind_type[] = {
		[EVENT_HARDWARE] = PERF_TYPE_HARDWARE, [EVENT_HW_CACHE] = PERF_TYPE_HW_CACHE,
		[EVENT_SOFTWARE] = PERF_TYPE_SOFTWARE,
	};

	(void) state;
	assert_true(n >= 10 + 23 + 9);
	for (size_t i = 0; i < n; i++) {
		const char *names[2] = { t[i].name, t[i].alias };

		assert_non_null(t[i].desc);
		assert_true(t[i].kind == EVENT_HARDWARE || t[i].kind == EVENT_HW_CACHE ||
			    t[i].kind == EVENT_SOFTWARE);
		for (size_t j = 0; j < 2 && names[j]; j++) {
			const struct row *r = find_row(names[j]);
			struct event_spec spec;

			if (!r)
				print_message("# '%s' has no row: run gen_perf_attrs.sh\n", names[j]);
			assert_non_null(r);
			assert_false(r->error);
			assert_int_equal(r->type, kind_type[t[i].kind]);
			assert_int_equal(events_parse(names[j], &spec), 0);
			assert_int_equal(spec.kind, t[i].kind);
		}
	}
}

static void test_brief_names(void **state)
{
	/* the names the design promises, each with perf's encoding (checked by its row) */
	static const char *const names[] = {
		"cycles", "cpu-cycles", "instructions", "cache-references", "cache-misses",
		"branch-instructions", "branches", "branch-misses", "bus-cycles",
		"stalled-cycles-frontend", "idle-cycles-frontend", "stalled-cycles-backend",
		"idle-cycles-backend", "ref-cycles", "L1-dcache-loads", "L1-dcache-load-misses",
		"L1-dcache-stores", "L1-dcache-store-misses", "L1-dcache-prefetches",
		"L1-icache-loads", "L1-icache-load-misses", "LLC-loads", "LLC-load-misses",
		"LLC-stores", "LLC-store-misses", "dTLB-loads", "dTLB-load-misses", "dTLB-stores",
		"dTLB-store-misses", "iTLB-loads", "iTLB-load-misses", "branch-loads",
		"branch-load-misses", "node-loads", "node-load-misses", "node-stores",
		"node-store-misses", "cpu-clock", "task-clock", "page-faults", "faults",
		"minor-faults", "major-faults", "context-switches", "cs", "cpu-migrations",
		"migrations", "alignment-faults", "emulation-faults", "dummy",
	};

	(void) state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct event_spec spec;

		assert_non_null(find_row(names[i]));
		assert_int_equal(events_parse(names[i], &spec), 0);
	}
}

static void test_unknown(void **state)
{
	static const char *const names[] = {
		"nosuchevent", "CYCLES", "cache-mises", "cpu-clk", "iTLB-stores", "LLC-loads-foo",
		"r", "rxyz", "L1-dcache-loads-misses-x", "branches-miss", "nosuchpmu/config=1/",
		"nosuch:tracepoint", "cycles-", "LLC--loads",
	};
	struct event_spec spec;

	(void) state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int r = events_parse(names[i], &spec);

		if (r != -ENOENT)
			print_message("# '%s': %d\n", names[i], r);
		assert_int_equal(r, -ENOENT);
	}
}

static void expect_first(const char *text, const char *want)
{
	const char *got[5];
	size_t n = events_suggest(text, got, 5);

	if (!n || strcmp(got[0], want))
		print_message("# suggest('%s'): %zu, first '%s', want '%s'\n", text, n,
			      n ? got[0] : "", want);
	assert_true(n >= 1);
	assert_string_equal(got[0], want);
}

static void test_suggest(void **state)
{
	const char *got[8];

	(void) state;
	expect_first("cache-mises", "cache-misses");
	expect_first("cpu-clk", "cpu-clock");
	expect_first("cache-mises:u", "cache-misses");
	expect_first("instrutions", "instructions");
	expect_first("CYCLES", "cycles");
	expect_first("cycle", "cycles");
	expect_first("page-fault", "page-faults");
	expect_first("tsak-clock", "task-clock");
	expect_first("L1-dcache-load-mises", "L1-dcache-load-misses");
	expect_first("llc-load-misses", "LLC-load-misses");
	expect_first("brnch-misses", "branch-misses");
	expect_first("cx", "cs");

	/* best first, at most max, nothing far away */
	assert_int_equal(events_suggest("cache-mises", got, 1), 1);
	assert_true(events_suggest("dTLB-load-mises", got, 8) >= 1);
	assert_string_equal(got[0], "dTLB-load-misses");
	assert_int_equal(events_suggest("completely-unrelated-words", got, 8), 0);
	assert_int_equal(events_suggest("cpu/event=1/", got, 8), 0);
	assert_int_equal(events_suggest("", got, 8), 0);
	assert_int_equal(events_suggest("cycles", got, 0), 0);
	assert_int_equal(events_suggest(NULL, got, 8), 0);
}

static void expect_einval(const char *const *specs, size_t n)
{
	struct event_spec spec;

	for (size_t i = 0; i < n; i++) {
		int r = events_parse(specs[i], &spec);

		if (r != -EINVAL)
			print_message("# '%s': %d, want -EINVAL\n", specs[i], r);
		assert_int_equal(r, -EINVAL);
	}
}

static void test_bad_modifiers(void **state)
{
	static const char *const specs[] = {
		"cycles:uu", "cycles:pppp", "cycles:z", "cycles:u:k", "cycles:upx", "cycles:U",
		"cpu-clock:kk", "page-faults:GG", "cycles::u", "cycles:u ", "r1a2:q",
		"L1-dcache-load-misses:x", "software/config=2/x", "software/config=2/uu",
		"cycles:ppupp",
	};

	(void) state;
	expect_einval(specs, sizeof(specs) / sizeof(specs[0]));
}

static void test_bad_raw(void **state)
{
	static const char *const specs[] = {
		"r12345678901234567", "r0x1a2", "r1g", "r12zz", "r1a2:", "r1 ",
	};
	struct event_spec spec;

	(void) state;
	expect_einval(specs, sizeof(specs) / sizeof(specs[0]));
	assert_int_equal(events_parse("r1a2", &spec), 0);
	assert_int_equal(spec.kind, EVENT_RAW);
	assert_int_equal(spec.attr.type, PERF_TYPE_RAW);
	assert_int_equal(spec.attr.config, 0x1a2);
}

static void test_bad_pmu(void **state)
{
	static const char *const specs[] = {
		"software/config=0x/", "software/config=2", "software/config=2,/",
		"software/,config=2/", "software/config=2,,config1=1/", "software/event=1/",
		"software/config=2/:u", "/config=1/", "software/config=99999999999999999999999/",
		"software/config=-1/", "software/config=0xg/", "software/=1/", "software/config==1/",
		"../x/config=1/", "software/../config=1/", "soft ware/config=1/",
		"software/config1=0x10000000000000000/", "software/name/",
	};

	(void) state;
	expect_einval(specs, sizeof(specs) / sizeof(specs[0]));
}

static void test_bad_text(void **state)
{
	char long_name[200];
	struct event_spec spec;

	(void) state;
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(events_parse(long_name, &spec), -EINVAL);
	assert_int_equal(events_parse("", &spec), -EINVAL);
	assert_int_equal(events_parse(NULL, &spec), -EINVAL);
	assert_int_equal(events_parse("cycles", NULL), -EINVAL);
	assert_int_equal(events_parse(" cycles", &spec), -EINVAL);
	assert_int_equal(events_parse("cycles\n", &spec), -EINVAL);
}

/* perf 6.1 accepts these (the table says what it builds); hwspy refuses them on purpose:
 * an empty modifier list, modifiers hwspy cannot honour (P max precision probing, S D e W b
 * group and scheduling controls), a cache op or result word given twice (perf silently
 * ignores the second), blanks inside a pmu spec. */
static void test_stricter_than_perf(void **state)
{
	static const char *const inval[] = {
		"cycles:", "cycles:P", "cycles:S", "cycles:D", "cycles:e", "cycles:W", "cycles:b",
		"software/config=2 /",
	};
	struct event_spec spec;

	(void) state;
	expect_einval(inval, sizeof(inval) / sizeof(inval[0]));
	assert_int_equal(events_parse("LLC-misses-misses", &spec), -ENOENT);
	assert_int_equal(events_parse("L1-dcache-load-store", &spec), -ENOENT);
}

static void test_fixture_formats(void **state)
{
	struct event_spec spec;

	(void) state;
	/* split range: the event's low 8 bits at 0-7, the next 4 at 32-35 */
	assert_int_equal(events_parse("cpu/event=0xabc/", &spec), 0);
	assert_int_equal(spec.kind, EVENT_PMU);
	assert_int_equal(spec.attr.type, 4);
	assert_int_equal(spec.attr.config, 0xa000000bcULL);
	/* too wide for a 12-bit field, for an 8-bit field, for a 1-bit flag */
	assert_int_equal(events_parse("cpu/event=0x1000/", &spec), -EINVAL);
	assert_int_equal(events_parse("cpu/umask=256/", &spec), -EINVAL);
	assert_int_equal(events_parse("cpu/edge=2/", &spec), -EINVAL);
	/* a 48-bit config1 field from bit 16: all ones fit, one more bit does not */
	assert_int_equal(events_parse("cpu/offcore=0xffffffffffff/", &spec), 0);
	assert_int_equal(spec.attr.config1, 0xffffffffffff0000ULL);
	assert_int_equal(events_parse("cpu/offcore=0x1000000000000/", &spec), -EINVAL);
	/* config2, split */
	assert_int_equal(events_parse("cpu/extra2=0xffff/", &spec), 0);
	assert_int_equal(spec.attr.config2, 0xff000000ff00ULL);
	/* named events: case-insensitive, ".scale" files are not events, NAME=1 is NAME */
	assert_int_equal(events_parse("cpu/mem-loads/", &spec), 0);
	assert_int_equal(spec.attr.config, 0x1cd);
	assert_int_equal(spec.attr.config1, 3);
	assert_int_equal(events_parse("cpu/MEM-LOADS/", &spec), 0);
	assert_int_equal(events_parse("cpu/mem-loads.scale/", &spec), -EINVAL);
	assert_int_equal(events_parse("cpu/mem-loads=2/", &spec), -EINVAL);
	assert_int_equal(events_parse("cpu/nosuchevent/", &spec), -EINVAL);
	/* malformed format files and event definitions */
	assert_int_equal(events_parse("badpmu/ok=15/", &spec), 0);
	assert_int_equal(spec.attr.type, 42);
	assert_int_equal(spec.attr.config, 15);
	assert_int_equal(events_parse("badpmu/good/", &spec), 0);
	assert_int_equal(spec.attr.config, 3);
	assert_int_equal(events_parse("badpmu/reversed=1/", &spec), -EINVAL);
	assert_int_equal(events_parse("badpmu/toowide=1/", &spec), -EINVAL);
	assert_int_equal(events_parse("badpmu/nofield=1/", &spec), -EINVAL);
	assert_int_equal(events_parse("badpmu/empty=1/", &spec), -EINVAL);
	assert_int_equal(events_parse("badpmu/trailing=1/", &spec), -EINVAL);
	assert_int_equal(events_parse("badpmu/needs-param/", &spec), -EINVAL);
	assert_int_equal(events_parse("badpmu/bad-term/", &spec), -EINVAL);
	/* the real software PMU is not in the fixture root */
	assert_int_equal(events_parse("software/config=2/", &spec), -ENOENT);
	/* named events keep working whatever the sysfs root */
	assert_int_equal(events_parse("cpu-clock", &spec), 0);
}

static void test_fixture_pmus(void **state)
{
	char pmus[8][64];

	(void) state;
	assert_int_equal(events_list_pmus(pmus, 8), 2);
	assert_string_equal(pmus[0], "badpmu");
	assert_string_equal(pmus[1], "cpu");
	assert_int_equal(events_list_pmus(pmus, 1), 1);
	assert_true(events_have_hw_pmu());
}

static void test_fixture_tracepoints(void **state)
{
	struct event_spec spec;

	(void) state;
	assert_int_equal(events_parse("sched:sched_switch", &spec), 0);
	assert_int_equal(spec.kind, EVENT_TRACEPOINT);
	assert_int_equal(spec.attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(spec.attr.config, 316);
	assert_int_equal(spec.attr.exclude_guest, 1);
	assert_int_equal(events_parse("syscalls:sys_enter_read:u", &spec), 0);
	assert_int_equal(spec.attr.config, 700);
	assert_int_equal(spec.attr.exclude_kernel, 1);
	assert_int_equal(events_parse("sched:sched_switch:z", &spec), -EINVAL);
	assert_int_equal(events_parse("sched:nosuch", &spec), -ENOENT);
	assert_int_equal(events_parse("sched:..", &spec), -ENOENT);
}

/* A tracepoint name on the real /sys. A fresh machine has no tracefs mounted: hwspy mounts it as
 * perf does. Checked in this process's own mount namespace (main()), with tracefs unmounted there
 * first, so that it runs the same on every machine and the machine's mounts stay as they were. */
static void test_real_tracepoint(void **state)
{
	struct event_spec spec;
	unsigned long long id;
	FILE *f;
	int n;

	(void) state;
	if (geteuid() != 0) {
		print_message("# skip: mounting tracefs needs root\n");
		skip();
		return;
	}
	/* main() made this process's mount namespace private */
	while (umount2("/sys/kernel/tracing", MNT_DETACH) == 0)
		;
	f = fopen("/sys/kernel/tracing/events/sched/sched_switch/id", "re");
	assert_null(f);

	assert_int_equal(events_parse("sched:sched_switch", &spec), 0);
	f = fopen("/sys/kernel/tracing/events/sched/sched_switch/id", "re");
	assert_non_null(f);
	n = fscanf(f, "%llu", &id);
	(void) fclose(f);
	assert_int_equal(n, 1);
	assert_int_equal(spec.attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(spec.attr.config, id);
	/* mounted once: a second name reads the same tree */
	assert_int_equal(events_parse("sched:sched_wakeup", &spec), 0);
	assert_int_equal(events_parse("sched:nosuchtracepoint", &spec), -ENOENT);
	/* events_tracefs() mounts it too, where it is gone */
	while (umount2("/sys/kernel/tracing", MNT_DETACH) == 0)
		;
	assert_int_equal(events_tracefs(), 0);
	f = fopen("/sys/kernel/tracing/events/header_page", "re");
	assert_non_null(f);
	(void) fclose(f);
}


static void write_file(const char *dir, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *dir, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

/* events_tracefs() on a test tree: readable where events/header_page is, never a mount */
static void test_tracefs_tree(void **state)
{
	char root[] = "/tmp/hwspy-test-tracefs-XXXXXX";
	char cmd[PATH_MAX + 16];

	(void) state;
	assert_non_null(mkdtemp(root));
	events_set_sysfs_root(root);
	assert_int_equal(events_tracefs(), -ENOENT);
	make_dir(root, "kernel");
	make_dir(root, "kernel/tracing");
	make_dir(root, "kernel/tracing/events");
	write_file(root, "kernel/tracing/events/header_page", "field: u64 timestamp;\n");
	assert_int_equal(events_tracefs(), 0);
	events_set_sysfs_root(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_hw_pmu_detection(void **state)
{
	char root[] = "/tmp/hwspy-test-events-XXXXXX";
	char cmd[PATH_MAX + 16];

	(void) state;
	assert_non_null(mkdtemp(root));
	make_dir(root, "bus");
	make_dir(root, "bus/event_source");
	make_dir(root, "bus/event_source/devices");
	make_dir(root, "bus/event_source/devices/software");
	write_file(root, "bus/event_source/devices/software/type", "1\n");
	make_dir(root, "bus/event_source/devices/arm_cmn_0");
	write_file(root, "bus/event_source/devices/arm_cmn_0/cpumask", "0\n");
	events_set_sysfs_root(root);
	assert_false(events_have_hw_pmu());
	/* an Arm core PMU: found by its "cpus" file whatever its name */
	make_dir(root, "bus/event_source/devices/kunpeng_core");
	write_file(root, "bus/event_source/devices/kunpeng_core/cpus", "0-3\n");
	assert_true(events_have_hw_pmu());
	events_set_sysfs_root("/nonexistent-hwspy-root");
	assert_false(events_have_hw_pmu());
	events_set_sysfs_root(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_real_pmus(void **state)
{
	char pmus[64][64];
	size_t n = events_list_pmus(pmus, 64);
	bool software = false, core = false;

	(void) state;
	for (size_t i = 0; i < n; i++) {
		software |= !strcmp(pmus[i], "software");
		core |= !strcmp(pmus[i], "cpu") || !strcmp(pmus[i], "cpu_core");
		if (i)
			assert_true(strcmp(pmus[i - 1], pmus[i]) < 0);
	}
	assert_true(software);
	if (core)
		assert_true(events_have_hw_pmu());
	print_message("# %zu pmus here, hardware pmu: %s\n", n, events_have_hw_pmu() ? "yes" : "no");
}

static bool not_allowed(int r, const char *what)
{
	if (r == -EACCES || r == -EPERM) {
		print_message("# skip: %s not allowed here (perf_event_paranoid, not root): %s\n",
			      what, strerror(-r));
		return true;
	}
	return false;
}

static void test_probe(void **state)
{
	struct event_spec spec;
	int r;

	(void) state;
	assert_int_equal(events_probe(NULL, 0), -EINVAL);

	assert_int_equal(events_parse("cycles", &spec), 0);
	r = events_probe(&spec, 0);
	print_message("# cycles: %s\n", r ? strerror(-r) : "opens");
	assert_true(r == 0 || r == -ENOENT || r == -EACCES || r == -EPERM);
	if (!events_have_hw_pmu() && r != -EACCES && r != -EPERM)
		assert_int_equal(r, -ENOENT);

	assert_int_equal(events_parse("page-faults:u", &spec), 0);
	r = events_probe(&spec, 0);
	assert_int_equal(r, 0);

	assert_int_equal(events_parse("cpu-clock", &spec), 0);
	r = events_probe(&spec, 0);
	if (not_allowed(r, "cpu-clock with kernel counting")) {
		skip();
		return;
	}
	assert_int_equal(r, 0);
	assert_int_equal(events_parse("software/config=0x1/", &spec), 0);
	assert_int_equal(events_probe(&spec, 0), 0);
}

static void test_probe_other_process(void **state)
{
	struct event_spec spec;
	pid_t child;
	int status;

	(void) state;
	assert_int_equal(events_parse("task-clock:u", &spec), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(events_probe(&spec, child), 0);
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	/* gone now */
	assert_int_equal(events_probe(&spec, child), -ESRCH);
}

static void test_split(void **state)
{
	char items[4][96];
	char long_list[300];

	(void) state;
	assert_int_equal(events_split("cycles,cpu/event=0x3c,umask=0/u,page-faults:u", items, 4), 3);
	assert_string_equal(items[0], "cycles");
	assert_string_equal(items[1], "cpu/event=0x3c,umask=0/u");
	assert_string_equal(items[2], "page-faults:u");
	assert_int_equal(events_split("cpu-clock", items, 4), 1);
	assert_string_equal(items[0], "cpu-clock");
	assert_int_equal(events_split("a,b,c,d,e", items, 4), -E2BIG);
	assert_int_equal(events_split("", items, 4), -EINVAL);
	assert_int_equal(events_split(NULL, items, 4), -EINVAL);
	assert_int_equal(events_split("a,,b", items, 4), -EINVAL);
	assert_int_equal(events_split("a,", items, 4), -EINVAL);
	assert_int_equal(events_split(",a", items, 4), -EINVAL);
	assert_int_equal(events_split("cpu/event=1,umask=2", items, 4), -EINVAL);
	memset(long_list, 'x', sizeof(long_list) - 1);
	long_list[sizeof(long_list) - 1] = '\0';
	assert_int_equal(events_split(long_list, items, 4), -ENAMETOOLONG);
}

static void test_kind_names(void **state)
{
	(void) state;
	assert_string_equal(event_kind_name(EVENT_HARDWARE), "hardware");
	assert_string_equal(event_kind_name(EVENT_HW_CACHE), "hardware-cache");
	assert_string_equal(event_kind_name(EVENT_SOFTWARE), "software");
	assert_string_equal(event_kind_name(EVENT_RAW), "raw");
	assert_string_equal(event_kind_name(EVENT_PMU), "pmu");
	assert_string_equal(event_kind_name(EVENT_TRACEPOINT), "tracepoint");
	assert_string_equal(event_kind_name((enum event_kind) 99), "unknown");
}

/* Count events sample at a fixed period of their own (the kernel's frequency mode stalls on
 * their bursts); time and hardware events have none and sample at a rate. */
static void test_default_periods(void **state)
{
	static const struct { const char *name; bool counts; uint64_t period; } cases[] = {
		{ "page-faults", true, 100 }, { "faults:u", true, 100 }, { "minor-faults", true, 100 },
		{ "major-faults", true, 1 }, { "context-switches", true, 10 }, { "cs", true, 10 },
		{ "cpu-migrations", true, 1 }, { "alignment-faults", true, 1 },
		{ "cpu-clock", false, 0 }, { "task-clock", false, 0 }, { "dummy", false, 0 },
		{ "bpf-output", false, 0 }, { "cycles", false, 0 }, { "cache-misses", false, 0 },
		{ "L1-dcache-load-misses", false, 0 }, { "r01c2", false, 0 },
	};
	struct event_spec e;

	(void) state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(events_parse(cases[i].name, &e), 0);
		assert_int_equal(events_counts_occurrences(&e.attr), cases[i].counts);
		assert_int_equal(events_default_period(&e.attr), cases[i].period);
	}
}

int main(int argc, char **argv)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_table_covered),
		cmocka_unit_test(test_brief_names),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_bad_modifiers),
		cmocka_unit_test(test_bad_raw),
		cmocka_unit_test(test_bad_pmu),
		cmocka_unit_test(test_bad_text),
		cmocka_unit_test(test_stricter_than_perf),
		cmocka_unit_test_setup_teardown(test_fixture_formats, use_fixture, use_real_sysfs),
		cmocka_unit_test_setup_teardown(test_fixture_pmus, use_fixture, use_real_sysfs),
		cmocka_unit_test_setup_teardown(test_fixture_tracepoints, use_fixture,
						use_real_sysfs),
		cmocka_unit_test(test_real_tracepoint),
		cmocka_unit_test(test_hw_pmu_detection),
		cmocka_unit_test(test_tracefs_tree),
		cmocka_unit_test(test_real_pmus),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_probe_other_process),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_default_periods),
	};
	size_t n_fixed = sizeof(fixed) / sizeof(fixed[0]);
	struct CMUnitTest *tests;
	int r;

	if (argc > 1)
		data_dir = argv[1];
	/* a tracepoint name mounts tracefs where none is (test_real_tracepoint): in a mount
	 * namespace of this process's own, so the machine's mounts stay as they were */
	if (geteuid() == 0 && (unshare(CLONE_NEWNS) < 0 ||
			       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)) {
		perror("test_events: private mount namespace");
		return 1;
	}
	snprintf(fixture_root, sizeof(fixture_root), "%s/sysfs", data_dir);
	if (load_table("perf_attrs.txt", false) < 0 || load_table("perf_attrs_fixture.txt", true) < 0) {
		fprintf(stderr, "cannot read the perf_attrs tables in '%s': %s\n", data_dir,
			strerror(errno));
		return 1;
	}

	/* one group (one TAP plan): the fixed tests, then one test per table row */
	tests = calloc(n_fixed + n_rows, sizeof(*tests));
	if (!tests)
		return 1;
	memcpy(tests, fixed, sizeof(fixed));
	for (size_t i = 0; i < n_rows; i++) {
		struct CMUnitTest *t = &tests[n_fixed + i];

		t->name = rows[i].spec;
		t->test_func = test_row;
		t->initial_state = &rows[i];
		if (rows[i].fixture) {
			t->setup_func = use_fixture;
			t->teardown_func = use_real_sysfs;
		}
	}
	r = _cmocka_run_group_tests("events", tests, n_fixed + n_rows, NULL, NULL);
	free(tests);
	free(rows);
	return r;
}
