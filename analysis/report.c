/*
 * report: hwspy stat's report (analysis/stat.h): the metrics derived from the counts
 * (stat_derive()), and perf stat's table (value, unit, the derived metric and, where the
 * counter was multiplexed, the share of the time it ran), the threads' CPU use, then the
 * findings in plain words (report_json.c writes the same as one JSON object).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/stat.h"
#include "base/text.h"
#include "output/ratios.h"
#include "sampler/events.h"

#define THREADS_SHOWN 10

/* v rounded, with thousands separators ("12,345,678"), into buf. */
static const char *grouped(double v, char *buf, size_t size)
{
	return text_grouped(buf, size, v < 0 ? 0 : (uint64_t) nearbyint(v));   /* as "%.0f" */
}

/* A threshold: grouped when whole and large ("5,000"), else as %g ("0.5"). */
static const char *grouped_g(double v, char *buf, size_t size)
{
	if (v >= 1000 && v == floor(v))
		return grouped(v, buf, size);
	snprintf(buf, size, "%g", v);
	return buf;
}

static bool is_clock(const char *name)
{
	return stat_same_event(name, "task-clock") || stat_same_event(name, "cpu-clock");
}

static double ratio(const struct stat_totals *t, const char *num, const char *den)
{
	const struct stat_event *a = stat_event(t, num), *b = stat_event(t, den);

	return a && b && a->counted && b->counted && b->value > 0 ? a->value / b->value : NAN;
}

/* The reference event of a miss event of t: the first of output/ratios.h's one map that t
 * has (NULL: none). */
static const char *reference_of(const struct stat_totals *t, const char *name, char *buf,
				size_t size)
{
	const char *r;

	for (size_t i = 0; (r = ratio_miss_reference(name, i, buf, size)); i++)
		if (stat_event(t, r))
			return r;
	if (size)
		buf[0] = '\0';
	return NULL;
}

void stat_derive(const struct stat_totals *t, const struct stat_event *e, struct stat_derived *ret)
{
	double wall_s = (double) t->wall_ns / 1e9, r;

	*ret = (struct stat_derived) { NAN, NAN, NAN, NAN, "", NAN, NAN };
	if (!e->counted)
		return;
	if (is_clock(e->name) && t->wall_ns)
		ret->cpus = e->value / (double) t->wall_ns;
	if (stat_same_event(e->name, "instructions"))
		ret->ipc = ratio(t, "instructions", "cycles");
	if (stat_same_event(e->name, "cycles"))
		ret->ghz = ratio(t, "cycles", "task-clock");
	if (strstr(e->name, "-misses")) {
		if (!isnan(r = ratio(t, e->name, "instructions")))
			ret->mpki = 1000 * r;
		if (reference_of(t, e->name, ret->reference, sizeof(ret->reference)) &&
		    !isnan(r = ratio(t, e->name, ret->reference)))
			ret->miss_rate = 100 * r;
	}
	if (wall_s > 0)
		ret->per_second = e->value / wall_s;
}

/* The comment after '#': the derived metric of e, or "" */
static void derived(const struct stat_totals *t, const struct stat_event *e, char *buf,
		    size_t size)
{
	struct stat_derived d;

	stat_derive(t, e, &d);
	buf[0] = '\0';
	if (!isnan(d.cpus)) {
		snprintf(buf, size, "%.3f CPUs utilised", d.cpus);
	} else if (!isnan(d.ipc)) {
		snprintf(buf, size, "%.2f insn per cycle", d.ipc);
	} else if (!isnan(d.ghz)) {
		snprintf(buf, size, "%.3f GHz", d.ghz);
	} else if (strstr(e->name, "-misses")) {
		int at = 0;

		if (!isnan(d.mpki))
			at = snprintf(buf, size, "%.2f per 1k instructions", d.mpki);
		if (!isnan(d.miss_rate) && at >= 0 && (size_t) at < size)
			snprintf(buf + at, size - (size_t) at, "%s%.2f%% of %s", at ? ", " : "",
				 d.miss_rate, d.reference);
	} else if (!isnan(d.per_second)) {
		char num[48];

		if (d.per_second >= 1000)
			snprintf(buf, size, "%s /s", grouped(d.per_second, num, sizeof(num)));
		else
			snprintf(buf, size, "%.1f /s", d.per_second);
	}
	if (stat_same_event(e->name, "context-switches") && t->voluntary >= 0 && t->involuntary >= 0) {
		size_t at = strlen(buf);
		char v[48], iv[48];

		snprintf(buf + at, size - at, " (voluntary %s, involuntary %s)",
			 grouped((double) t->voluntary, v, sizeof(v)),
			 grouped((double) t->involuntary, iv, sizeof(iv)));
	}
}

static const char *not_counted(const struct stat_event *e)
{
	if (e->error == -ENOENT || e->error == -EOPNOTSUPP)
		return "<not supported>";
	return "<not counted>";
}

static void table(const struct stat_totals *t, FILE *out)
{
	bool any_split = false;

	fprintf(out, "\n hwspy stat of %s, %.2f s:\n\n", t->target, (double) t->wall_ns / 1e9);
	for (size_t i = 0; i < t->n_ev; i++) {
		const struct stat_event *e = &t->ev[i];
		char num[48], why[256];

		if (!e->listed)
			continue;
		if (!e->counted) {
			fprintf(out, "  %22s      %-24s\n", not_counted(e), e->name);
			continue;
		}
		derived(t, e, why, sizeof(why));
		if (is_clock(e->name))
			fprintf(out, "  %19s.%02u msec %-24s", grouped(floor(e->value / 1e6), num,
				sizeof(num)), (unsigned) fmod(e->value / 1e4, 100), e->name);
		else
			fprintf(out, "  %22s      %-24s", grouped(e->value, num, sizeof(num)), e->name);
		fprintf(out, "%s%s", why[0] ? " #  " : "", why);
		if (e->running_ns < e->enabled_ns && e->enabled_ns)
			fprintf(out, "  (%.1f%%)", 100.0 * (double) e->running_ns / (double) e->enabled_ns);
		if (e->split)
			fputs("  [split]", out);
		any_split |= e->split;
		fputc('\n', out);
	}
	if (any_split)
		fputs("\n [split]: its group could not be scheduled on the PMU whole, so its events "
		      "were counted apart (ratios between them are less exact)\n", out);
	for (size_t i = 0; i < t->n_ev; i++)
		if (t->ev[i].counted && t->ev[i].running_ns < t->ev[i].enabled_ns) {
			fputs(" (N%): the counter was multiplexed and ran N% of the time; its value is "
			      "scaled up as perf stat does\n", out);
			break;
		}
}

static void threads(const struct stat_totals *t, FILE *out)
{
	if (t->n_threads < 2)
		return;
	fprintf(out, "\n per thread (%zu):\n", t->n_threads);
	for (size_t i = 0; i < t->n_threads && i < THREADS_SHOWN; i++) {
		const struct stat_thread *th = &t->threads[i];
		char num[48];

		fprintf(out, "  tid %-8d %-20.20s", (int) th->tid, th->name[0] ? th->name : "-");
		if (th->task_clock_ns >= 0 && t->wall_ns)
			fprintf(out, " %6.3f CPUs", th->task_clock_ns / (double) t->wall_ns);
		if (th->switches >= 0)
			fprintf(out, "  %s context switches", grouped(th->switches, num, sizeof(num)));
		fputc('\n', out);
	}
	if (t->n_threads > THREADS_SHOWN)
		fprintf(out, "  ... %zu more ('--json' lists every thread)\n",
			t->n_threads - THREADS_SHOWN);
}

/* The threads that waited for the GIL, and the share of the run each spent waiting. */
static void gil_waits(const struct stat_totals *t, FILE *out)
{
	if (!t->n_gil || !t->wall_ns)
		return;
	fprintf(out, "\n waiting for the GIL (of the %.2f s):\n", t->wall_ns / 1e9);
	for (size_t i = 0; i < t->n_gil && i < THREADS_SHOWN; i++)
		fprintf(out, "  tid %-8d %-20.20s %7.3f s  %5.1f%%\n", (int) t->gil[i].tid,
			t->gil[i].name[0] ? t->gil[i].name : "-", t->gil[i].wait_ns / 1e9,
			100.0 * t->gil[i].wait_ns / (double) t->wall_ns);
	if (t->n_gil > THREADS_SHOWN)
		fprintf(out, "  ... %zu more ('--json' lists every thread)\n",
			t->n_gil - THREADS_SHOWN);
}

/* How the report names fn: its label (module-relative), or with full_paths its text. */
static const char *func_name(const struct stat_func *fn, bool full_paths)
{
	return full_paths || !fn->label[0] ? fn->text : fn->label;
}

static void finding_line(const struct stat_finding *f, bool full_paths, FILE *out)
{
	char num[48];

	if (fabs(f->value) >= 1000)
		fprintf(out, "  - %s: %s%s", f->metric, grouped(f->value, num, sizeof(num)), f->unit);
	else
		fprintf(out, "  - %s: %.*f%s", f->metric, fabs(f->value) < 10 ? 2 : 0, f->value,
			f->unit);
	fprintf(out, " (%s, %s %s%s): %s", f->cmp == STAT_ABOVE ? "high" : "low",
		f->cmp == STAT_ABOVE ? ">" : "<", grouped_g(f->threshold, num, sizeof(num)), f->unit,
		f->meaning);
	if (f->threads) {
		for (size_t k = 0; k < f->n_funcs; k++)
			fprintf(out, "%s%s%s(tid %d) %.0f%%", k ? ", " : "; waiting: ",
				f->funcs[k].text, f->funcs[k].text[0] ? " " : "", (int) f->funcs[k].tid,
				100 * f->funcs[k].share);
	} else if (f->n_funcs) {
		/* the share of the event's own samples, and how many there were */
		fprintf(out, "; %.0f%% of %s %s samples in %s", 100 * f->funcs[0].share,
			grouped((double) f->samples, num, sizeof(num)), f->event,
			func_name(&f->funcs[0], full_paths));
		for (size_t k = 1; k < f->n_funcs; k++)
			fprintf(out, ", %.0f%% in %s", 100 * f->funcs[k].share,
				func_name(&f->funcs[k], full_paths));
	} else if (f->event && f->samples) {
		fprintf(out, "; too few %s samples in Python code (%s, under %d) to name where", f->event,
			grouped((double) f->samples, num, sizeof(num)), STAT_MIN_SAMPLES);
	}
	fprintf(out, "; next: %s\n", f->advice);
}

/* Why event name (a rule's missing one) was not measured: 0 the hardware PMU this machine has
 * not, 1 kernel mode refused (a switch or a migration counted in user space alone), 2 else. */
static int missing_why(const struct stat_totals *t, const struct stat_unmeasured *u)
{
	const struct stat_event *e = stat_event(t, u->missing);

	if (!t->have_pmu && (!e || e->hardware))
		return 0;
	return (u->error == -EACCES || u->error == -EPERM) &&
	       (stat_same_event(u->missing, "context-switches") ||
		stat_same_event(u->missing, "cpu-migrations")) ? 1 : 2;
}

/* A hardware event's family ("cache", "TLB" ...; sampler/events.c's table), or "hardware". */
static const char *family_of(const char *event)
{
	struct event_spec spec;
	const char *family = NULL;

	if (events_parse(event, &spec) == 0)
		(void) events_no_pmu(&spec, &family);
	return family ? family : "hardware";
}

/* The findings that could not be looked for, a short line per reason: without a hardware PMU,
 * the families of the events they need ("instructions, cache and branch events"); kernel mode
 * refused, or an event that did not open: the metrics, the events and why. */
static void unmeasured(const struct stat_totals *t, const struct stat_findings *f, FILE *out)
{
	static const char *const why[] = {
		NULL,
		"happen in the kernel: not counted in user space alone (kernel mode refused, "
		"kernel.perf_event_paranoid); run hwspy as root",
		"did not open or run here",
	};
	const char *fam[STAT_MAX_FINDINGS];
	size_t n_fam = 0;

	if (!f->n_unmeasured)
		return;
	fputc('\n', out);
	for (size_t i = 0; i < f->n_unmeasured; i++) {
		const char *name;
		size_t k = 0;

		if (missing_why(t, &f->u[i]) != 0)
			continue;
		name = family_of(f->u[i].missing);
		while (k < n_fam && strcmp(fam[k], name))
			k++;
		if (k == n_fam)
			fam[n_fam++] = name;
	}
	if (n_fam) {
		fputs(" not measured (no hardware PMU here): ", out);
		for (size_t k = 0; k < n_fam; k++)
			fprintf(out, "%s%s", k == 0 ? "" : k + 1 < n_fam ? ", " : " and ", fam[k]);
		fputs(" events; see 'hwspy list'\n", out);
	}
	for (int w = 1; w < 3; w++) {
		bool any = false;

		for (size_t i = 0; i < f->n_unmeasured; i++) {
			if (missing_why(t, &f->u[i]) != w)
				continue;
			fprintf(out, "%s %s", any ? "," : " not measured:", f->u[i].metric);
			any = true;
		}
		if (!any)
			continue;
		fputs(": they need", out);
		any = false;
		for (size_t i = 0; i < f->n_unmeasured; i++) {
			bool again = false;

			for (size_t k = 0; k < i; k++)
				again |= !strcmp(f->u[k].missing, f->u[i].missing);
			if (again || missing_why(t, &f->u[i]) != w)
				continue;
			fprintf(out, "%s '%s'", any ? "," : "", f->u[i].missing);
			any = true;
		}
		fprintf(out, ", which %s\n", why[w]);
	}
}

void stat_report_text(const struct stat_totals *t, const struct stat_findings *f, bool full_paths,
		      FILE *out)
{
	table(t, out);
	threads(t, out);
	gil_waits(t, out);
	fputs("\n findings:\n", out);
	for (size_t i = 0; i < f->n; i++)
		finding_line(&f->f[i], full_paths, out);
	if (!f->n)
		fputs("  none: every metric measured is within its threshold ('hwspy stat --explain' "
		      "lists them)\n", out);
	if (f->n && !t->sampled)
		fputs("  (without the sampling run, --no-profile, no function is named)\n", out);
	unmeasured(t, f, out);
}

