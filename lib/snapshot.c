/* snapshot.c: the snapshot section of hwspy.h over record/snapshot.h (the data translated into
 * the public structs; their strings point into the internal snapshot), and its two writers: the
 * text of `hwspy dump` and the JSON of `hwspy dump --json`. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/internal.h"
#include "output/label.h"
#include "output/output.h"
#include "record/snapshot.h"

struct hwspy_snapshot {
	struct snapshot *in;
	bool subprocesses, native, nonblocking, full_paths;
	struct hwspy_snapshot_process *p;
	size_t n;
	struct hwspy_snapshot_thread **threads;         /* per process */
};

static const char *walk_words(int r)
{
	switch (r) {
	case -ENOENT: return "no Python thread state";
	case -EAGAIN: return "Python stack unreadable: it changed under every read";
	case -EFAULT: return "Python stack unreadable";
	case -ESRCH: return "thread gone";
	default: return "Python stack unreadable";
	}
}

static const char *process_words(const struct snapshot_process *p)
{
	int r = p->error;

	if (p->failed != SNAPSHOT_FAILED_TARGET)
		return "";
	return r == -ESRCH ? "gone" : r == -ENOENT ? "not a Python process" :
	       r == -ENOTSUP ? "unsupported Python" :
	       r == -EPERM || r == -EACCES ? "not allowed" : strerror(-r);
}

static enum hwspy_frame_kind frame_kind(enum frame_kind k)
{
	return k == FRAME_PYTHON ? HWSPY_FRAME_PYTHON : k == FRAME_NATIVE ? HWSPY_FRAME_NATIVE
	       : HWSPY_FRAME_SPECIAL;
}

/* Thread t's public view into ret (its arrays allocated here). */
static int translate_thread(const struct snapshot_thread *t, struct hwspy_snapshot_thread *ret)
{
	struct hwspy_py_frame *py = calloc(t->n_frames + 1, sizeof(*py));
	struct hwspy_native_frame *nat = calloc(t->n_native + 1, sizeof(*nat));
	struct hwspy_frame *mer = calloc(t->n_merged + 1, sizeof(*mer));

	if (!py || !nat || !mer) {
		free(py);
		free(nat);
		free(mer);
		return -ENOMEM;
	}
	for (size_t k = 0; k < t->n_frames; k++)
		py[k] = (struct hwspy_py_frame) { t->frames[k].name, t->frames[k].file,
						  t->frames[k].line };
	for (size_t k = 0; k < t->n_native; k++) {
		const struct snapshot_native *n = &t->native[k];

		nat[k] = (struct hwspy_native_frame) {
			.address = n->addr, .symbolized = n->symbolized,
			.function = n->symbolized ? n->nf.name : NULL,
			.module = n->symbolized ? n->nf.module : NULL,
			.file = n->symbolized ? n->nf.file : NULL,
			.line = n->symbolized ? n->nf.line : 0,
			.module_offset = n->symbolized ? n->nf.module_offset : 0,
		};
	}
	for (size_t k = 0; k < t->n_merged; k++)
		mer[k] = (struct hwspy_frame) { frame_kind(t->merged[k].kind), t->merged[k].name,
						t->merged[k].file, t->merged[k].line,
						t->merged[k].module };
	*ret = (struct hwspy_snapshot_thread) {
		.tid = t->tid, .name = t->name,
		.read = t->how == SNAPSHOT_READ_BLOCKED ? HWSPY_SNAPSHOT_READ_WAITING
			: t->how == SNAPSHOT_READ_STOPPED ? HWSPY_SNAPSHOT_READ_STOPPED
			: HWSPY_SNAPSHOT_READ_RUNNING,
		.waiting = t->waiting, .wait = t->waiting ? t->wait : "", .gil = t->gil,
		.error = t->walk < 0 ? t->walk : 0,
		.error_words = t->walk < 0 ? walk_words(t->walk) : NULL,
		.frames = py, .n_frames = t->n_frames,
		.frames_cut = t->cut.n, .frames_cut_more = t->cut.more,
		.native_ok = t->native_ok, .native = nat, .n_native = t->n_native,
		.merged = mer, .n_merged = t->n_merged,
	};
	return 0;
}

static int translate(struct hwspy_snapshot *s)
{
	const struct snapshot *in = s->in;

	s->p = calloc(in->n ? in->n : 1, sizeof(*s->p));
	s->threads = calloc(in->n ? in->n : 1, sizeof(*s->threads));
	if (!s->p || !s->threads)
		return -ENOMEM;
	s->n = in->n;
	for (size_t i = 0; i < in->n; i++) {
		const struct snapshot_process *p = &in->p[i];
		struct hwspy_snapshot_thread *t = calloc(p->n ? p->n : 1, sizeof(*t));

		if (!t)
			return -ENOMEM;
		s->threads[i] = t;
		for (size_t k = 0; k < p->n; k++)
			if (translate_thread(&p->t[k], &t[k]) < 0)
				return -ENOMEM;
		s->p[i] = (struct hwspy_snapshot_process) {
			.pid = p->pid, .command = p->command,
			.failed = (enum hwspy_snapshot_step) p->failed, .error = p->error,
			.reason = process_words(p), .tracer = p->tracer,
			.python_version = p->info.version, .python_path = p->info.binary,
			.python_error = p->info.error, .native_error = p->native_error,
			.threads = p->error ? NULL : t, .n_threads = p->error ? 0 : p->n,
			.n_waiting = p->n_blocked, .n_stopped = p->n_stopped,
			.n_running = p->n_running, .stopped_ns = p->stopped_ns,
		};
	}
	return 0;
}

int hwspy_snapshot_new(pid_t pid, const struct hwspy_snapshot_opts *opts,
		       struct hwspy_snapshot **ret)
{
	struct hwspy_snapshot_opts none = { 0 };
	struct snapshot_opts o;
	struct hwspy_snapshot *s;
	int r;

	lib_reason_clear();
	*ret = NULL;
	if (!opts)
		opts = &none;
	if (pid <= 0)
		return lib_fail(-EINVAL, "no process given");
	if (opts->native && opts->nonblocking)
		return lib_fail(-EINVAL, "native frames need the threads stopped: not with "
				"nonblocking");
	o = (struct snapshot_opts) { .native = opts->native, .nonblocking = opts->nonblocking,
				     .subprocesses = opts->subprocesses,
				     .hold_signals = opts->hold_signals };
	s = calloc(1, sizeof(*s));
	if (!s)
		return lib_fail(-ENOMEM, "cannot take a snapshot of pid %d: out of memory",
				(int) pid);
	s->subprocesses = opts->subprocesses;
	s->native = opts->native;
	s->nonblocking = opts->nonblocking;
	s->full_paths = opts->full_paths;
	r = snapshot_take(pid, &o, &s->in);
	if (r == 0)
		r = translate(s);
	if (r < 0) {
		hwspy_snapshot_free(s);
		return lib_fail_errno(r, "cannot take a snapshot of pid %d", (int) pid);
	}
	*ret = s;
	return 0;
}

size_t hwspy_snapshot_processes(const struct hwspy_snapshot *s,
				const struct hwspy_snapshot_process **ret)
{
	*ret = s->p;
	return s->n;
}

void hwspy_snapshot_free(struct hwspy_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->threads && s->in && i < s->in->n; i++) {
		struct hwspy_snapshot_thread *t = s->threads[i];

		for (size_t k = 0; t && k < s->in->p[i].n; k++) {
			free((void *) t[k].frames);
			free((void *) t[k].native);
			free((void *) t[k].merged);
		}
		free(t);
	}
	free(s->threads);
	free(s->p);
	snapshot_free(s->in);
	free(s);
}

/* ---- the JSON of `hwspy dump --json` ---- */

static const char *read_words(enum hwspy_snapshot_read how)
{
	switch (how) {
	case HWSPY_SNAPSHOT_READ_WAITING: return "waiting";
	case HWSPY_SNAPSHOT_READ_STOPPED: return "stopped";
	default: return "running";
	}
}

static void json_native(FILE *f, const struct hwspy_snapshot_thread *t)
{
	fprintf(f, ",\"native\":[");
	for (size_t k = 0; k < t->n_native; k++) {
		const struct hwspy_native_frame *n = &t->native[k];

		fprintf(f, "%s{\"address\":\"0x%" PRIx64 "\",\"function\":", k ? "," : "",
			n->address);
		json_write_string(f, n->function ? n->function : "");
		fprintf(f, ",\"module\":");
		json_write_string(f, n->module ? n->module : "");
		fprintf(f, ",\"file\":");
		json_write_string(f, n->file ? n->file : "");
		fprintf(f, ",\"line\":%d}", n->line);
	}
	fprintf(f, "]");
}

static void json_thread(FILE *f, bool native, const struct hwspy_snapshot_thread *t)
{
	fprintf(f, "{\"tid\":%d,\"name\":", (int) t->tid);
	json_write_string(f, t->name);
	fprintf(f, ",\"gil\":%s,\"state\":\"%s\",\"wait\":",
		t->gil < 0 ? "null" : t->gil ? "true" : "false",
		t->waiting ? "waiting" : "running");
	if (t->waiting)
		json_write_string(f, t->wait);
	else
		fprintf(f, "null");
	fprintf(f, ",\"error\":");
	if (t->error_words)
		json_write_string(f, t->error_words);
	else
		fprintf(f, "null");
	fprintf(f, ",\"frames\":[");
	for (size_t k = 0; k < t->n_frames; k++) {
		fprintf(f, "%s{\"function\":", k ? "," : "");
		json_write_string(f, t->frames[k].function);
		fprintf(f, ",\"file\":");
		json_write_string(f, t->frames[k].file);
		fprintf(f, ",\"line\":%d}", t->frames[k].line);
	}
	fprintf(f, "],\"frames_cut\":%" PRIu64 ",\"read\":\"%s\"", t->frames_cut,
		read_words(t->read));
	if (native)
		json_native(f, t);
	fprintf(f, "}");
}

static void json_process(FILE *f, const struct hwspy_snapshot *s,
			 const struct hwspy_snapshot_process *p)
{
	if (p->error) {
		fprintf(f, "{\"pid\":%d,\"command\":", (int) p->pid);
		json_write_string(f, p->command);
		fprintf(f, ",\"error\":");
		json_write_string(f, p->reason);
		fprintf(f, "}");
		return;
	}
	fprintf(f, "{\"pid\":%d,\"command\":", (int) p->pid);
	json_write_string(f, p->command);
	fprintf(f, ",\"python\":{\"version\":");
	json_write_string(f, p->python_version);
	fprintf(f, ",\"path\":");
	json_write_string(f, p->python_path);
	fprintf(f, "},\"stopped\":%s,\"stopped_us\":%.1f,\"read\":{\"waiting\":%zu,"
		"\"stopped\":%zu,\"running\":%zu},\"threads\":[", p->n_stopped ? "true" : "false",
		(double) p->stopped_ns / 1e3, p->n_waiting, p->n_stopped, p->n_running);
	for (size_t i = 0; i < p->n_threads; i++) {
		if (i)
			fputc(',', f);
		json_thread(f, s->native, &p->threads[i]);
	}
	fprintf(f, "]}");
}

int hwspy_snapshot_write_json(const struct hwspy_snapshot *s, FILE *f)
{
	lib_reason_clear();
	if (s->subprocesses)
		fputs("{\"processes\":[", f);
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			fputc(',', f);
		json_process(f, s, &s->p[i]);
	}
	fputs(s->subprocesses ? "]}\n" : "\n", f);
	if (ferror(f))
		return lib_fail(-EIO, "cannot write the snapshot");
	return 0;
}

/* ---- the text of `hwspy dump` ---- */

/* lp: Python files by their module-relative paths (output/label.h); NULL: full paths. */
static void text_thread(FILE *f, bool native, const struct label_paths *lp,
			const struct hwspy_snapshot_thread *t)
{
	fprintf(f, "Thread %d (%s)%s ", (int) t->tid, t->name,
		t->gil == 1 ? " holds the GIL," : "");
	if (t->waiting)
		fprintf(f, "waiting: %s:\n", t->wait);
	else
		fprintf(f, "running:\n");
	if (t->error_words)
		fprintf(f, "    (%s)\n", t->error_words);
	else if (t->n_frames == 0)
		fprintf(f, "    (no Python frames)\n");
	for (size_t k = 0; k < t->n_frames; k++)
		fprintf(f, "    %s (%s:%d)\n", t->frames[k].function,
			lp ? label_path(lp, t->frames[k].file) : t->frames[k].file,
			t->frames[k].line);
	if (t->frames_cut || t->frames_cut_more)
		fprintf(f, "    ... %s%" PRIu64 " more frames\n", t->frames_cut_more ? "over " : "",
			t->frames_cut);
	if (!native)
		return;
	fprintf(f, "  native:\n");
	if (!t->native_ok)
		fprintf(f, "    (not unwound: %s)\n", t->read == HWSPY_SNAPSHOT_READ_RUNNING
			? "read as it ran, not stopped" : "its stack could not be copied");
	for (size_t k = 0; k < t->n_native; k++) {
		const struct hwspy_native_frame *n = &t->native[k];

		if (!n->symbolized)
			fprintf(f, "    0x%" PRIx64 "\n", n->address);
		else if (n->function)
			fprintf(f, "    %s (%s)\n", n->function, n->module ? n->module : "?");
		else
			fprintf(f, "    %s+0x%" PRIx64 "\n", n->module ? n->module : "?",
				n->module_offset);
	}
}

static void text_process(FILE *f, const struct hwspy_snapshot *s, const struct label_paths *lp,
			 const struct hwspy_snapshot_process *p)
{
	if (p->error) {
		fprintf(f, "Process %d: %s\n(cannot dump it: %s)\n", (int) p->pid, p->command,
			p->reason);
		return;
	}
	fprintf(f, "Process %d: %s\n", (int) p->pid, p->command);
	fprintf(f, "Python v%s (%s)\n", p->python_version, p->python_path);
	if (s->nonblocking) {
		fprintf(f, "%zu threads read without a stop (--nonblocking)\n", p->n_threads);
	} else {
		fprintf(f, "%zu thread%s: %zu read as %s waited, %zu stopped for %.3f ms",
			p->n_threads, p->n_threads == 1 ? "" : "s", p->n_waiting,
			p->n_waiting == 1 ? "it" : "they", p->n_stopped, (double) p->stopped_ns / 1e6);
		if (p->n_running)
			fprintf(f, ", %zu read as %s ran", p->n_running,
				p->n_running == 1 ? "it" : "they");
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->n_threads; i++) {
		fputc('\n', f);
		text_thread(f, s->native, lp, &p->threads[i]);
	}
}

int hwspy_snapshot_write_text(const struct hwspy_snapshot *s, FILE *f)
{
	struct label_paths lp = { 0 };

	lib_reason_clear();
	/* the scripts' directory: the one every process's Python files outside sys.path share,
	 * as in a profile of them (record --subprocesses) */
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < s->p[i].n_threads; k++)
			for (size_t j = 0; j < s->p[i].threads[k].n_frames; j++)
				label_paths_add(&lp, s->p[i].threads[k].frames[j].file);
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			fputc('\n', f);
		text_process(f, s, s->full_paths ? NULL : &lp, &s->p[i]);
	}
	if (ferror(f))
		return lib_fail(-EIO, "cannot write the snapshot");
	return 0;
}
