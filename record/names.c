/*
 * names: the threads' names (record/internal.h): Python's threading registry where it has the
 * thread, else its /proc comm, looked for again while the thread goes by its comm; with
 * --threads, each thread's root frame [thread TID NAME].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/clock.h"
#include "record/internal.h"

static const char *pyname_of(const struct recorder *rec, pid_t tid)
{
	for (size_t i = 0; i < rec->n_pynames; i++)
		if (rec->pynames[i].tid == tid && rec->pynames[i].name[0])
			return rec->pynames[i].name;
	return NULL;
}

/* Makes the registry's read of n names (pynames_read) the known names, followed by those of
 * earlier reads whose threads it lacks: a thread that has left the registry (exited) keeps its
 * name for its samples still to come (those of its last moments, drained after it is gone). */
static void pynames_merge(struct recorder *rec, size_t n)
{
	struct pyframes_thread_name *old = rec->pynames;
	size_t n_old = rec->n_pynames;

	for (size_t i = 0; i < n_old && n < RECORD_PYNAMES_MAX; i++) {
		size_t k = 0;

		while (k < n && rec->pynames_read[k].tid != old[i].tid)
			k++;
		if (k == n)
			rec->pynames_read[n++] = old[i];
	}
	rec->pynames = rec->pynames_read;
	rec->pynames_read = old;
	rec->n_pynames = n;
}

/* Names thread t name: the profile's thread name, and its root frame with --threads (renamed
 * if it had one: the stacks recorded so far read the new name). */
static void thread_rename(struct recorder *rec, struct thread_name *t, const char *name)
{
	char text[256];

	(void) profile_set_thread_name(rec->prof, (uint32_t) t->tid, name);
	if (!rec->opts.threads)
		return;
	snprintf(text, sizeof(text), "[thread %d%s%s]", t->tid, name[0] ? " " : "", name);
	(void) profile_frame_rename(rec->prof, t->frame, text);
}

/* Reads Python's thread names, unless they were read less than min_ms ago, and names each
 * thread that still goes by its comm and is in the read (a thread seen before it joined the
 * registry, then seldom: one that sleeps): true if read. */
static bool pynames_refresh(struct recorder *rec, unsigned min_ms)
{
	uint64_t now = clock_now_ns();
	size_t n;

	if (!rec->pf || (rec->pynames_ns && now - rec->pynames_ns < min_ms * 1000000ull))
		return false;
	if (!rec->pynames) {
		rec->pynames = calloc(RECORD_PYNAMES_MAX, sizeof(*rec->pynames));
		if (!rec->pynames)
			return false;
	}
	if (!rec->pynames_read) {
		rec->pynames_read = calloc(RECORD_PYNAMES_MAX, sizeof(*rec->pynames_read));
		if (!rec->pynames_read)
			return false;
	}
	rec->pynames_ns = now;
	if (pyframes_thread_names(rec->pf, rec->pynames_read, RECORD_PYNAMES_MAX, &n) == 0)
		pynames_merge(rec, n);
	for (size_t i = 0; i < rec->n_names; i++) {
		struct thread_name *t = &rec->names[i];
		const char *py;

		if (!t->from_comm || t->tries >= RECORD_PYNAMES_TRIES)
			continue;
		t->tries++;
		py = pyname_of(rec, t->tid);
		if (py) {
			thread_rename(rec, t, py);
			t->from_comm = false;
		}
	}
	return true;
}

/* The thread's record: its name (profile_set_thread_name) and, with --threads, its root frame
 * `[thread TID NAME]`, made at its first sample: NAME is the thread's name in Python's
 * threading registry, else its /proc comm (then looked for again, see RECORD_PYNAMES_MS).
 * NULL: out of memory. */
static struct thread_name *thread_known(struct recorder *rec, pid_t tid)
{
	char path[64], comm[64] = "", name[256];
	struct profile_frame f = { .kind = FRAME_THREAD, .name = name };
	const char *py;
	struct thread_name *t;
	FILE *fp;

	if (rec->last_name < rec->n_names && rec->names[rec->last_name].tid == tid)
		t = &rec->names[rec->last_name];
	else
		t = NULL;
	for (size_t i = 0; !t && i < rec->n_names; i++) {
		if (rec->names[i].tid == tid) {
			rec->last_name = i;
			t = &rec->names[i];
		}
	}
	if (t) {
		if (t->from_comm && t->tries < RECORD_PYNAMES_TRIES)
			(void) pynames_refresh(rec, RECORD_PYNAMES_MS);
		return t;
	}
	if (array_grow((void **) &rec->names, &rec->cap_names, rec->n_names + 1, sizeof(*rec->names),
		       16) < 0)
		return NULL;
	/* a new thread: the last read may be from before it started (a thread that lives 200 ms
	 * would be gone at the next) */
	(void) pynames_refresh(rec, RECORD_PYNAMES_MS);
	py = pyname_of(rec, tid);
	if (!py && pynames_refresh(rec, RECORD_PYNAMES_NEW_MS))
		py = pyname_of(rec, tid);
	if (!py) {
		/* any thread's, the target's or a child process's (--subprocesses) */
		snprintf(path, sizeof(path), "/proc/%d/comm", tid);
		fp = fopen(path, "re");
		if (fp) {
			if (fgets(comm, sizeof(comm), fp))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(fp);
		}
	}
	t = &rec->names[rec->n_names];
	*t = (struct thread_name) { .tid = tid, .frame = rec->unknown_frame, .from_comm = !py };
	if (py || comm[0])
		(void) profile_set_thread_name(rec->prof, (uint32_t) tid, py ? py : comm);
	if (rec->opts.threads) {
		snprintf(name, sizeof(name), "[thread %d%s%s]", tid, py || comm[0] ? " " : "",
			 py ? py : comm);
		if (profile_frame_id(rec->prof, &f, &t->frame) < 0)
			return NULL;
	}
	rec->last_name = rec->n_names++;
	return t;
}

bool record_thread_names_pending(const struct recorder *rec)
{
	for (size_t i = 0; i < rec->n_names; i++)
		if (rec->names[i].from_comm && rec->names[i].tries < RECORD_PYNAMES_TRIES)
			return true;
	return false;
}

/* Between slices: a thread that still goes by its comm may have joined the registry since,
 * though it has not been sampled since (it sleeps). */
void record_thread_names_poll(struct recorder *rec)
{
	if (record_thread_names_pending(rec))
		(void) pynames_refresh(rec, RECORD_PYNAMES_MS);
}

void record_thread_names_final(struct recorder *rec)
{
	bool any = false;

	for (size_t i = 0; i < rec->n_names; i++) {
		if (rec->names[i].from_comm) {
			rec->names[i].tries = 0;        /* the last look, for every one */
			any = true;
		}
	}
	if (any)
		(void) pynames_refresh(rec, 0);
}

uint32_t record_thread_frame(struct recorder *rec, pid_t tid)
{
	struct thread_name *t = thread_known(rec, tid);

	return t ? t->frame : rec->unknown_frame;
}

