/*
 * report_json: hwspy stat's report as one JSON object (analysis/stat.h; README: "hwspy stat
 * --json"): the events, the threads, the waits for the GIL, the findings.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/stat.h"
#include "output/output.h"

static void json_num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.17g", v);
	else
		fputs("null", out);
}

static void json_events(const struct stat_totals *t, FILE *out)
{
	fputs("\"events\":[", out);
	for (size_t i = 0; i < t->n_ev; i++) {
		const struct stat_event *e = &t->ev[i];

		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		json_write_string(out, e->name);
		fprintf(out, ",\"counted\":%s", e->counted ? "true" : "false");
		if (!e->counted) {
			fputs(",\"why\":", out);
			json_write_string(out, e->error == -ENOENT || e->error == -EOPNOTSUPP ?
					  "not supported on this machine" :
					  t->user_only && e->error == -EACCES ?
					  "happens in the kernel: not counted in user space only" :
					  strerror(-e->error));
			fputs("}", out);
			continue;
		}
		fputs(",\"value\":", out);
		json_num(out, e->value);
		fprintf(out, ",\"raw\":%" PRIu64 ",\"enabled_ns\":%" PRIu64 ",\"running_ns\":%" PRIu64
			",\"split\":%s,\"per_second\":", e->raw, e->enabled_ns, e->running_ns,
			e->split ? "true" : "false");
		json_num(out, t->wall_ns ? e->value * 1e9 / (double) t->wall_ns : NAN);
		fputs("}", out);
	}
	fputs("]", out);
}

static void json_threads(const struct stat_totals *t, FILE *out)
{
	fputs(",\"threads\":[", out);
	for (size_t i = 0; i < t->n_threads; i++) {
		const struct stat_thread *th = &t->threads[i];

		fprintf(out, "%s{\"tid\":%d,\"name\":", i ? "," : "", (int) th->tid);
		json_write_string(out, th->name);
		fputs(",\"task_clock_ns\":", out);
		json_num(out, th->task_clock_ns >= 0 ? th->task_clock_ns : NAN);
		fputs(",\"cpus\":", out);
		json_num(out, th->task_clock_ns >= 0 && t->wall_ns ?
			      th->task_clock_ns / (double) t->wall_ns : NAN);
		fputs(",\"context_switches\":", out);
		json_num(out, th->switches >= 0 ? th->switches : NAN);
		fputs("}", out);
	}
	fputs("]", out);
}

static void json_gil(const struct stat_totals *t, FILE *out)
{
	fputs(",\"gil_waits\":", out);
	if (!t->gil_measured) {
		fputs("null", out);
		return;
	}
	fputc('[', out);
	for (size_t i = 0; i < t->n_gil; i++) {
		fprintf(out, "%s{\"tid\":%d,\"name\":", i ? "," : "", (int) t->gil[i].tid);
		json_write_string(out, t->gil[i].name);
		fputs(",\"wait_ns\":", out);
		json_num(out, t->gil[i].wait_ns);
		fputs(",\"share\":", out);
		json_num(out, t->wall_ns ? t->gil[i].wait_ns / (double) t->wall_ns : NAN);
		fputc('}', out);
	}
	fputc(']', out);
}

static void json_findings(const struct stat_findings *f, FILE *out)
{
	fputs(",\"findings\":[", out);
	for (size_t i = 0; i < f->n; i++) {
		const struct stat_finding *x = &f->f[i];

		fputs(i ? ",{\"id\":" : "{\"id\":", out);
		json_write_string(out, x->id);
		fputs(",\"metric\":", out);
		json_write_string(out, x->metric);
		fputs(",\"value\":", out);
		json_num(out, x->value);
		fprintf(out, ",\"comparison\":\"%s\",\"threshold\":", x->cmp == STAT_ABOVE ? ">" : "<");
		json_num(out, x->threshold);
		fputs(",\"unit\":", out);
		json_write_string(out, x->unit[0] == ' ' ? x->unit + 1 : x->unit);
		fputs(",\"meaning\":", out);
		json_write_string(out, x->meaning);
		fputs(",\"advice\":", out);
		json_write_string(out, x->advice);
		/* the event's own samples the shares are of (null: no sampling run named any) */
		fputs(",\"event\":", out);
		if (x->event)
			json_write_string(out, x->event);
		else
			fputs("null", out);
		fprintf(out, ",\"samples\":%" PRIu64 ",\"functions\":[", x->samples);
		for (size_t k = 0; !x->threads && k < x->n_funcs; k++) {
			fputs(k ? ",{\"function\":" : "{\"function\":", out);
			json_write_string(out, x->funcs[k].text);
			fputs(",\"share\":", out);
			json_num(out, x->funcs[k].share);
			fprintf(out, ",\"samples\":%" PRIu64 "}", x->funcs[k].samples);
		}
		fputs("],\"threads\":[", out);
		for (size_t k = 0; x->threads && k < x->n_funcs; k++) {
			fprintf(out, "%s{\"tid\":%d,\"name\":", k ? "," : "", (int) x->funcs[k].tid);
			json_write_string(out, x->funcs[k].text);
			fputs(",\"share\":", out);
			json_num(out, x->funcs[k].share);
			fputs("}", out);
		}
		fputs("]}", out);
	}
	fputs("],\"not_measured\":[", out);
	for (size_t i = 0; i < f->n_unmeasured; i++) {
		fputs(i ? ",{\"id\":" : "{\"id\":", out);
		json_write_string(out, f->u[i].id);
		fputs(",\"metric\":", out);
		json_write_string(out, f->u[i].metric);
		fputs(",\"missing_event\":", out);
		json_write_string(out, f->u[i].missing);
		fputs("}", out);
	}
	fputs("]", out);
}

int stat_report_json(const struct stat_totals *t, const struct stat_findings *f, FILE *out)
{
	const struct stat_event *clock;

	fputs("{\"hwspy_stat\":1,\"target\":", out);
	json_write_string(out, t->target);
	fputs(",\"wall_ns\":", out);
	json_num(out, (double) t->wall_ns);
	clock = stat_event(t, "task-clock");
	fputs(",\"cpus_utilised\":", out);
	json_num(out, clock && clock->counted && t->wall_ns ? clock->value / (double) t->wall_ns :
		      NAN);
	fputs(",\"voluntary_switches\":", out);
	json_num(out, t->voluntary >= 0 ? (double) t->voluntary : NAN);
	fputs(",\"involuntary_switches\":", out);
	json_num(out, t->involuntary >= 0 ? (double) t->involuntary : NAN);
	fprintf(out, ",\"hardware_pmu\":%s,\"user_space_only\":%s,\"sampled\":%s,\"samples\":%"
		PRIu64 ",", t->have_pmu ? "true" : "false", t->user_only ? "true" : "false",
		t->sampled ? "true" : "false", t->samples);
	json_events(t, out);
	json_threads(t, out);
	json_gil(t, out);
	json_findings(f, out);
	fputs("}\n", out);
	if (fflush(out) == EOF || ferror(out))
		return -EIO;
	return 0;
}
