/* speedscope: the JSON file format of https://www.speedscope.app, one sampled profile per
 * event x thread over shared frames; its samples in time order where the profile logged it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "output/output.h"
#include "output/utf8.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

void json_write_string(FILE *out, const char *s)
{
	const unsigned char *u = (const unsigned char *) s;
	size_t n = strlen(s);

	putc('"', out);
	for (size_t i = 0; i < n;) {
		size_t skip, len = utf8_len(u + i, n - i, &skip);

		if (len == 0) {
			fputs("\\ufffd", out);
			i += skip;
		} else if (u[i] == '"' || u[i] == '\\') {
			putc('\\', out);
			putc(u[i++], out);
		} else if (u[i] < 0x20) {
			fprintf(out, "\\u%04x", u[i++]);
		} else {
			fwrite(u + i, 1, len, out);
			i += len;
		}
	}
	putc('"', out);
}

static void write_frame(FILE *out, const struct profile_frame *f)
{
	fputs("{\"name\":", out);
	json_write_string(out, f->name);
	if (f->kind == FRAME_PYTHON && f->file) {
		fputs(",\"file\":", out);
		json_write_string(out, f->file);
		if (f->line > 0)
			fprintf(out, ",\"line\":%d", f->line);
	} else if (f->kind == FRAME_NATIVE && f->module) {
		fputs(",\"file\":", out);
		json_write_string(out, f->module);
	} else if (f->kind == FRAME_KERNEL) {
		fputs(",\"file\":\"[kernel.kallsyms]\"", out);
	}
	putc('}', out);
}

/* Appends v in decimal. */
static int put_u64(struct buf *b, uint64_t v)
{
	char d[24];
	size_t i = sizeof(d);

	do {
		d[--i] = (char) ('0' + v % 10);
		v /= 10;
	} while (v);
	return buf_append(b, d + i, sizeof(d) - i);
}

static const char *event_unit(const char *event)
{
	return profile_event_is_time(event) ? "nanoseconds" : "none";
}

/* One sample as written: a merged stack (entry SIZE_MAX), or an entry of the time-ordered log. */
struct by_tid {
	uint32_t tid;
	size_t stack;
	uint64_t time;
	size_t entry;
};

/* Thread by thread; in a thread, by time, then in the order added (or by stack) */
static int cmp_by_tid(const void *a, const void *b)
{
	const struct by_tid *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->entry != y->entry)
		return x->entry < y->entry ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The weight of item k in event column col. */
static uint64_t item_weight(const struct profile *p, const struct by_tid *it, size_t col)
{
	if (it->entry != SIZE_MAX)
		return profile_log_values(p, it->entry)[col - 1];
	return profile_values(p, it->stack)[col];
}

/* Writes the profile of event column col over the stacks idx[0..n) (one thread, n > 0) if its
 * weight is not 0: 1 written, 0 left out, -EOVERFLOW or -ENOMEM. */
static int write_profile(FILE *out, const struct profile *p, size_t col, const struct by_tid *idx,
			 size_t n, bool first)
{
	const char *event = profile_event(p, col - 1)->name, *tname;
	uint32_t tid = idx[0].tid;
	uint64_t total = 0;
	bool sep = false;
	struct buf name, line;
	int r = 0;

	for (size_t k = 0; k < n; k++) {
		uint64_t w = item_weight(p, &idx[k], col);
		if (w > UINT64_MAX - total)
			return -EOVERFLOW;
		total += w;
	}
	if (total == 0)
		return 0;
	buf_init(&name);
	tname = tid ? profile_thread_name(p, tid) : NULL;
	if ((!tid ? buf_printf(&name, "%s, all threads", event) :
	     tname ? buf_printf(&name, "%s, thread %u %s", event, tid, tname) :
		     buf_printf(&name, "%s, thread %u", event, tid)) < 0) {
		buf_release(&name);
		return -ENOMEM;
	}
	fputs(first ? "\n" : ",\n", out);
	fputs("{\"type\":\"sampled\",\"name\":", out);
	json_write_string(out, name.data);
	buf_release(&name);
	fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\n\"samples\":[",
		event_unit(event), (unsigned long long) total);
	/* numbers formatted by hand, a sample at a time: printf per number was most of the time */
	buf_init(&line);
	for (size_t k = 0; k < n && r >= 0; k++) {
		const struct profile_stack *st = profile_stack(p, idx[k].stack);

		if (item_weight(p, &idx[k], col) == 0)
			continue;
		buf_reset(&line);
		r = buf_puts(&line, sep ? ",[" : "[");
		for (uint32_t d = 0; d < st->depth && r >= 0; d++) {
			if (d)
				r = buf_putc(&line, ',');
			if (r >= 0)
				r = put_u64(&line, st->frames[d]);
		}
		if (r >= 0)
			r = buf_putc(&line, ']');
		if (r >= 0)
			fwrite(line.data, 1, line.len, out);
		sep = true;
	}
	if (r >= 0)
		fputs("],\n\"weights\":[", out);
	sep = false;
	for (size_t k = 0; k < n && r >= 0; k++) {
		uint64_t w = item_weight(p, &idx[k], col);

		if (w == 0)
			continue;
		buf_reset(&line);
		r = sep ? buf_putc(&line, ',') : 0;
		if (r >= 0)
			r = put_u64(&line, w);
		if (r >= 0)
			fwrite(line.data, 1, line.len, out);
		sep = true;
	}
	buf_release(&line);
	if (r < 0)
		return -ENOMEM;
	fputs("]}", out);
	return 1;
}

int speedscope_write(const struct profile *p, const struct speedscope_opts *opts, FILE *out)
{
	const char *name = opts && opts->name ? opts->name : profile_meta_const(p)->target;
	size_t n_log = profile_log_len(p), n = n_log ? n_log : profile_n_stacks(p);
	struct by_tid *idx;
	bool first = true;
	int r = 0;

	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t st = n_log ? profile_log_stack(p, i) : i;

		idx[i] = (struct by_tid) { profile_stack(p, st)->tid, st,
					   n_log ? profile_log_time(p, i) : 0, n_log ? i : SIZE_MAX };
	}
	qsort(idx, n, sizeof(*idx), cmp_by_tid);

	fputs("{\"$schema\":\"" SCHEMA_URL "\",\n\"exporter\":", out);
	json_write_string(out, "hwspy " HWSPY_VERSION);
	if (name) {
		fputs(",\"name\":", out);
		json_write_string(out, name);
	}
	fputs(",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[", out);
	for (uint32_t id = 0; id < profile_n_frames(p); id++) {
		fputs(id ? ",\n" : "\n", out);
		write_frame(out, profile_frame(p, id));
	}
	fputs("]},\n\"profiles\":[", out);
	for (size_t col = 1; col < profile_n_values(p) && r >= 0; col++) {
		for (size_t start = 0, end; start < n && r >= 0; start = end) {
			for (end = start + 1; end < n && idx[end].tid == idx[start].tid; end++)
				;
			r = write_profile(out, p, col, idx + start, end - start, first);
			if (r > 0)
				first = false;
		}
	}
	free(idx);
	if (r < 0)
		return r;
	fputs("]}\n", out);
	if (fflush(out) != 0)
		return -errno;
	return ferror(out) ? -EIO : 0;
}
