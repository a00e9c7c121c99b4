/*
 * procs: --subprocesses. The processes the target starts, and theirs, inherit its events (per
 * CPU: inherit without inherit_thread), and attached, those it started before have events of
 * their own (the sampler's tree.c): their samples come here, each process with an
 * interpreter of its own, found as the target's is (pyframes_open on its memory, at most every
 * DETECT_INTERVAL_NS until found), or none ([native]). Its Python stacks come from their
 * captures where its interpreter is laid out as the one the capture program was made for (a
 * fork of the target: the same image), else from its memory just after the sample (a process
 * that exec'd another Python: read late, and counted so). Every sample gets a root frame
 * [process PID COMMAND] (the target's too); a process that exits keeps its samples, one that
 * execs is looked at afresh. Native frames are the target's only (a child's mappings are not
 * read).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/procfs.h"
#include "record/internal.h"

#define MAX_PROCS 4096

struct record_proc {
	pid_t pid;
	struct remote_mem mem;
	bool mem_open;
	struct pyframes *pf;
	struct pyframes_info info;
	bool same_layout;               /* its captures follow the program's spec ... */
	uint64_t layout_gen;            /* ... made for rec->capture_gen layout_gen - 1 (0: not
	                                 * known yet) */
	bool gone;                      /* exited, or unreadable */
	uint64_t last_detect_ns;
	uint32_t frame;                 /* [process PID COMMAND] */
	uint32_t old_frame;             /* the one before its last exec (UINT32_MAX: none) */
	uint64_t gil_addr, gil_tried_ns;        /* its GIL state (0: none, not known yet) */
	bool sampled;                   /* one of its samples reached the sink (stats.processes) */
};

/* The command of pid, as ps shows it: its cmdline's first two words, else its comm. */
static void command_of(pid_t pid, char *buf, size_t len)
{
	char path[64], raw[512];
	size_t n = 0;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
	f = fopen(path, "re");
	if (f) {
		n = fread(raw, 1, sizeof(raw) - 1, f);
		fclose(f);
	}
	raw[n] = '\0';
	for (size_t i = 0, words = 0; i < n; i++) {
		if (raw[i] == '\0' && ++words == 2)
			break;
		if (raw[i] == '\0')
			raw[i] = ' ';
	}
	if (!raw[0]) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
		f = fopen(path, "re");
		if (f) {
			if (!fgets(raw, sizeof(raw), f))
				raw[0] = '\0';
			fclose(f);
		}
		raw[strcspn(raw, "\n")] = '\0';
	}
	/* a root frame: no ';' (folded), no brackets, no control characters */
	for (n = 0; raw[n] && n + 1 < len; n++) {
		unsigned char c = (unsigned char) raw[n];

		buf[n] = c == ';' || c == '[' || c == ']' || c < 0x20 ? '_' : (char) c;
	}
	buf[n] = '\0';
}

/* p's root frame, [process PID COMMAND], as its command reads now. */
static int proc_frame(struct recorder *rec, struct record_proc *p)
{
	char comm[160], name[192];
	struct profile_frame f = { .kind = FRAME_THREAD, .name = name };

	command_of(p->pid, comm, sizeof(comm));
	snprintf(name, sizeof(name), "[process %d%s%s]", (int) p->pid, comm[0] ? " " : "", comm);
	return profile_frame_id(rec->prof, &f, &p->frame);
}

static struct record_proc *proc_find(struct recorder *rec, pid_t pid)
{
	for (size_t i = 0; i < rec->n_procs; i++)
		if (rec->procs[i]->pid == pid)
			return rec->procs[i];
	return NULL;
}

static struct record_proc *proc_of(struct recorder *rec, pid_t pid)
{
	struct record_proc *p = proc_find(rec, pid);

	if (p)
		return p;
	if (rec->n_procs == MAX_PROCS)
		return NULL;
	if (array_grow((void **) &rec->procs, &rec->cap_procs, rec->n_procs + 1, sizeof(*rec->procs),
		       8) < 0)
		return NULL;
	/* each one where it was made: its pyframes keeps a pointer to its mem */
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->old_frame = UINT32_MAX;
	if (proc_frame(rec, p) < 0) {
		free(p);
		return NULL;
	}
	rec->procs[rec->n_procs++] = p;
	return p;
}

uint32_t record_proc_frame(struct recorder *rec, pid_t pid)
{
	struct record_proc *p = proc_of(rec, pid);

	return p ? p->frame : rec->unknown_frame;
}

static void proc_forget(struct record_proc *p)
{
	pyframes_free(p->pf);
	p->pf = NULL;
	p->layout_gen = 0;
	p->gil_addr = p->gil_tried_ns = 0;
	if (p->mem_open)
		remote_mem_close(&p->mem);
	p->mem_open = false;
}

/* Whether two capture specs are the same, field by field (their padding is not set). */
static bool same_spec(const struct pyframes_capture_spec *a, const struct pyframes_capture_spec *b)
{
	if (a->head_off1 != b->head_off1 || a->head_off2 != b->head_off2 ||
	    a->frame_bytes != b->frame_bytes || a->next_off != b->next_off ||
	    a->n_extras != b->n_extras || a->n_extras > PYFRAMES_CAPTURE_MAX_EXTRAS ||
	    a->shim_at != b->shim_at || a->shim_min != b->shim_min)
		return false;
	for (uint32_t i = 0; i < a->n_extras; i++)
		if (a->extra[i].from != b->extra[i].from || a->extra[i].off != b->extra[i].off ||
		    a->extra[i].len != b->extra[i].len || a->extra[i].mask != b->extra[i].mask)
			return false;
	return true;
}

/* Whether p's captures follow the spec of the capture program running now: its interpreter is
 * laid out as the target's, which the program was made for (a fork of the target). Known once
 * per program (attached, the children's threads get theirs from sampler_new(), before the
 * recorder knows the capture started). */
static bool proc_fits(const struct recorder *rec, struct record_proc *p)
{
	struct pyframes_capture_spec mine, theirs;

	if (!p->pf)
		return false;
	if (p->layout_gen == rec->capture_gen + 1)
		return p->same_layout;
	/* the target's interpreter is the one of the program (not yet made for one found since
	 * an exec: not known then) */
	if (!rec->pf || rec->capture_gen != rec->pf_gen)
		return false;
	p->layout_gen = rec->capture_gen + 1;
	p->same_layout = pyframes_capture_spec(rec->pf, &mine) == 0 &&
			 pyframes_capture_spec(p->pf, &theirs) == 0 && same_spec(&mine, &theirs);
	return p->same_layout;
}

/* Looks for p's interpreter (at most every DETECT_INTERVAL_NS). */
static void proc_detect(struct record_proc *p)
{
	uint64_t now = clock_now_ns();

	if (p->pf || p->gone || now - p->last_detect_ns < DETECT_INTERVAL_NS)
		return;
	p->last_detect_ns = now;
	if (!p->mem_open) {
		if (remote_mem_open_pid(p->pid, &p->mem) < 0) {
			p->gone = true;
			return;
		}
		p->mem_open = true;
	}
	if (pyframes_open(p->pid, &p->mem, &p->pf, &p->info) < 0) {
		p->pf = NULL;
		return;
	}
	pyframes_set_verify(p->pf, true);
	p->layout_gen = 0;
}

struct pyframes *record_proc_python(struct recorder *rec, pid_t pid)
{
	struct record_proc *p = proc_of(rec, pid);

	if (!p)
		return NULL;
	proc_detect(p);
	return p->pf;
}

int record_proc_walk(struct recorder *rec, const struct sample *s, size_t *ret_n,
		     struct pyframes_cut *ret_cut)
{
	struct record_proc *p = proc_of(rec, s->pid);

	*ret_n = 0;
	if (!p)
		return -ENOMEM;
	proc_detect(p);
	if (!p->pf)
		return -ENOENT;
	return record_walk(rec, p->pf, proc_fits(rec, p), s, ret_n, ret_cut);
}

/* The process thread tid belongs to (its Tgid), 0 if unknown. */
static pid_t tgid_of(pid_t tid)
{
	long pid = 0;

	return procfs_status_long(tid, 0, "Tgid", &pid) == 0 ? (pid_t) pid : 0;
}

bool record_proc_root(struct recorder *rec, pid_t tid, uint64_t *ret_root)
{
	pid_t pid = tgid_of(tid);
	struct record_proc *p;

	if (!pid || pid == rec->pid)
		return false;
	p = proc_of(rec, pid);
	if (!p)
		return false;
	proc_detect(p);
	return proc_fits(rec, p) && pyframes_thread_state(p->pf, tid, ret_root) == 0;
}

/* 3.12+ makes its GIL state, and points the interpreter to it, after hwspy may have found the
 * interpreter (a launched command): looked for again, at most every DETECT_INTERVAL_NS, until
 * found. */
static uint64_t gil_of(struct pyframes *pf, uint64_t *addr, uint64_t *tried_ns)
{
	uint32_t locked_off, holder_off;
	uint64_t now;

	if (*addr || !pf)
		return *addr;
	now = clock_now_ns();
	if (*tried_ns && now - *tried_ns < DETECT_INTERVAL_NS)
		return 0;
	*tried_ns = now;
	if (pyframes_gil_spec(pf, addr, &locked_off, &holder_off) < 0)
		*addr = 0;
	return *addr;
}

uint64_t record_gil_addr(struct recorder *rec, pid_t pid)
{
	struct record_proc *p;

	if (!rec->opts.subprocesses || pid == rec->pid)
		return gil_of(rec->pf, &rec->gil_addr, &rec->gil_tried_ns);
	p = proc_find(rec, pid);
	return p ? gil_of(p->pf, &p->gil_addr, &p->gil_tried_ns) : 0;
}

uint64_t recorder_gil_addr(struct recorder *rec)
{
	return record_gil_addr(rec, rec->pid);
}

void record_proc_event(struct recorder *rec, const struct sampler_event *e)
{
	struct record_proc *p = proc_find(rec, e->tid);

	if (!p)
		return;
	/* an exec: a new image, a new command; an exit: nothing more to read */
	proc_forget(p);
	p->last_detect_ns = 0;
	p->gone = e->kind == SAMPLER_EVENT_CHILD_EXIT;
	if (e->kind == SAMPLER_EVENT_CHILD_EXEC) {
		p->old_frame = p->frame;
		(void) proc_frame(rec, p);
	}
}

int record_procs_sink(void *ctx, const struct record_sample *s)
{
	struct recorder *rec = ctx;
	int r = rec->procs_sink.sample(rec->procs_sink.ctx, s);

	if (r < 0 || s->depth == 0 || s->frames[0] == rec->procs_last_frame ||
	    s->frames[0] == rec->unknown_frame)
		return r;
	/* its root frame says whose it is; a process that exec'd has had two */
	for (size_t i = 0; i < rec->n_procs; i++) {
		struct record_proc *p = rec->procs[i];

		if (p->frame == s->frames[0] || p->old_frame == s->frames[0]) {
			if (!p->sampled)
				rec->stats.processes++;
			p->sampled = true;
			rec->stats.target_sampled |= p->pid == rec->pid;
			rec->procs_last_frame = s->frames[0];
			break;
		}
	}
	return r;
}

void record_procs_free(struct recorder *rec)
{
	for (size_t i = 0; i < rec->n_procs; i++) {
		proc_forget(rec->procs[i]);
		free(rec->procs[i]);
	}
	free(rec->procs);
	rec->procs = NULL;
	rec->n_procs = rec->cap_procs = 0;
}
