/*
 * hwspy list: every event hwspy knows, grouped by kind, each probed on this machine (opened as
 * a counting event on hwspy itself and closed again), then the PMUs in sysfs.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "include/hwspy.h"

#define NAME_WIDTH 27
#define KIND_WIDTH 18
#define MAX_PMUS 128

/* What probing event name found (*ret) in words (unparsed: where it does not parse). */
static const char *probe_words(const char *name, const char *unparsed,
			       enum hwspy_probe_result *ret, char *buf)
{
	static const char *const words[] = {
		[HWSPY_PROBE_OK] = "ok",
		[HWSPY_PROBE_USER_ONLY] = "user only (:u, perf_event_paranoid)",
		[HWSPY_PROBE_NO_PMU] = "not supported here (no hardware PMU)",
		[HWSPY_PROBE_UNSUPPORTED] = "not supported here",
		[HWSPY_PROBE_NOT_ALLOWED] = "not allowed (perf_event_paranoid)",
		[HWSPY_PROBE_INVALID] = "refused by the kernel (invalid here)",
	};
	int err;
	enum hwspy_probe_result r = *ret = hwspy_event_probe_name(name, &err);

	if (r != HWSPY_PROBE_ERROR)
		return r == HWSPY_PROBE_UNPARSED ? unparsed : words[r];
	snprintf(buf, 128, "does not open: %s", strerror(-err));
	return buf;
}

static void print_row(const char *name, const char *kind, const char *status, const char *desc,
		      const char *alias)
{
	char tag[32];

	snprintf(tag, sizeof(tag), "[%s]", kind);
	printf("  %-*s %-*s %-38s %s%s%s%s\n", NAME_WIDTH - 1, name, KIND_WIDTH - 1, tag, status,
	       desc, alias ? " (also '" : "", alias ? alias : "", alias ? "')" : "");
}

static void print_named(enum hwspy_event_kind kind, const char *title, size_t *n_ok)
{
	size_t n;
	const struct hwspy_event_info *t = hwspy_event_table(&n);
	char buf[128];
	enum hwspy_probe_result r;

	printf("%s:\n", title);
	for (size_t i = 0; i < n; i++) {
		if (t[i].kind != kind)
			continue;
		print_row(t[i].name, hwspy_event_kind_name(kind),
			  probe_words(t[i].name, "cannot parse (hwspy bug)", &r, buf), t[i].desc,
			  t[i].alias);
		*n_ok += r == HWSPY_PROBE_OK || r == HWSPY_PROBE_USER_ONLY;
	}
	printf("\n");
}

static void print_syntax(void)
{
	char buf[128];
	enum hwspy_probe_result p;
	const char *status = probe_words("r0", "cannot parse (hwspy bug)", &p, buf);
	int r;

	if (p == HWSPY_PROBE_OK || p == HWSPY_PROBE_USER_ONLY || p == HWSPY_PROBE_INVALID)
		status = "depends on the code";
	printf("other forms:\n");
	print_row("rNNNN", "raw", status, "raw hardware event code in hex, e.g. r01c2", NULL);
	print_row("PMU/term=value,.../", "pmu", "see the PMUs below",
		  "terms from PMU/format in sysfs, e.g. cpu/event=0x3c,umask=0x0/", NULL);
	r = hwspy_tracefs_state();
	status = r < 0 ? hwspy_tracefs_words(r, true) :
		 probe_words("sched:sched_switch", "no sched:sched_switch in tracefs", &p, buf);
	print_row("subsys:name", "tracepoint", status, "kernel tracepoint, e.g. sched:sched_switch",
		  NULL);
	printf("  modifiers: NAME:u user, :k kernel, :h hypervisor, :H host, :G guest, "
	       ":I not idle, :p/:pp/:ppp precise (pmu form: PMU/.../u)\n\n");
}

static void print_pmus(void)
{
	char pmus[MAX_PMUS][64];
	size_t n = hwspy_pmus(pmus, MAX_PMUS);
	unsigned type;

	printf("PMUs (/sys/bus/event_source/devices):\n%s", n ? "" : "  none found\n");
	for (size_t i = 0; i < n; i++)
		if (hwspy_pmu_type(pmus[i], &type) == 0)
			printf("  %-*s type %u\n", NAME_WIDTH - 1, pmus[i], type);
		else
			printf("  %s\n", pmus[i]);
}

int cmd_list(int argc, char **argv)
{
	size_t n_ok = 0, n_hw_ok;
	int c;

	optind = 0;
	while ((c = cli_getopt(&cli_opts_list, argc, argv)) != -1) {
		if (c != OPT_HELP)
			return 2;       /* said */
		cli_help(&cli_opts_list, stdout);
		return 0;
	}
	if (optind < argc) {
		log_error("unexpected argument '%s' (see 'hwspy list --help')", argv[optind]);
		return 2;
	}
	print_named(HWSPY_EVENT_HARDWARE, "hardware events", &n_ok);
	print_named(HWSPY_EVENT_HW_CACHE, "hardware-cache events", &n_ok);
	n_hw_ok = n_ok;
	print_named(HWSPY_EVENT_SOFTWARE, "software events", &n_ok);
	print_syntax();
	print_pmus();
	if (!hwspy_have_hw_pmu() && n_ok > n_hw_ok)
		printf("\nnote: no hardware PMU on this machine (a VM without PMU passthrough?): "
		       "hardware, cache and raw events do not open here; software events work "
		       "(cpu-clock, task-clock, page-faults, ...)\n");
	else if (!hwspy_have_hw_pmu())
		printf("\nnote: no hardware PMU on this machine: hardware, cache and raw events "
		       "do not open here\n");
	if (!n_ok)
		printf("\nnote: no event opens here: check perf_event_paranoid and capabilities\n");
	if (fflush(stdout) != 0) {
		log_errno(-errno, "cannot write the list");
		return 1;
	}
	return 0;
}
