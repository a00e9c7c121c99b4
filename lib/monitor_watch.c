/*
 * monitor_watch.c: one process hwspy monitor watches (lib/monitor.h). Its counters (a
 * hwspy_count, threads started later inherited), its recorder on a thread of its own whose
 * sink puts each sample into the interval's profile (frames interned there, so that an
 * interval's profile holds its own frames alone and is written and dropped whole), its waits
 * sampled from /proc at each tick, and the rotation: the interval's profile written, its
 * hottest functions, its ratios and findings (from two marks of the counters) kept for the
 * series.
 */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/internal.h"
#include "lib/lib.h"
#include "lib/monitor.h"
#include "output/output.h"
#include "output/profdir.h"
#include "output/profile.h"
#include "record/waitsample.h"

#define STATS_EVERY_NS 1000000000ULL
#define RETRY_EVERY_NS 2000000000ULL    /* a process whose Python is not found (yet) */
#define RETRY_YOUNG_NS 30000000000ULL   /* ... for this long after it was picked up */

/* The interval's profile, of the recorder's events. */
static struct profile *interval_new(struct watch *w)
{
	const struct hwspy_profile *rp = hwspy_recorder_profile(w->rec);
	const char *names[PROFILE_MAX_EVENTS];
	size_t n = hwspy_profile_n_events(rp);
	struct profile *p;

	if (n > PROFILE_MAX_EVENTS)
		n = PROFILE_MAX_EVENTS;
	for (size_t i = 0; i < n; i++)
		names[i] = hwspy_profile_event(rp, i);
	p = profile_new(names, n);
	if (p)
		(void) profile_set_event_rate(p, 0, w->m->o.freq, 0, true);
	return p;
}

/* Interns the recorder's frame id into the interval's profile: its id there, or -errno. Under
 * w->lock, on the recorder's thread. */
static int frame_in(struct watch *w, const struct profile *rp, uint32_t id, uint32_t *ret)
{
	const struct profile_frame *f = profile_frame(rp, id);
	int r;

	if (!f)
		return -EINVAL;
	if (id >= w->n_map) {
		size_t n = (size_t) id + 1 > 2 * w->n_map ? (size_t) id + 1 : 2 * w->n_map;
		uint32_t *map = realloc(w->map, n * sizeof(*map));

		if (!map)
			return -ENOMEM;
		memset(map + w->n_map, 0, (n - w->n_map) * sizeof(*map));
		w->map = map;
		w->n_map = n;
	}
	if (!w->map[id]) {
		r = profile_frame_id(w->interval, f, ret);
		if (r < 0)
			return r;
		w->map[id] = *ret + 1;
	}
	*ret = w->map[id] - 1;
	return 0;
}

/* The recorder's sink, on its thread. */
static int sink(void *ctx, const struct hwspy_sample *s)
{
	struct watch *w = ctx;
	const struct profile *rp = hwspy_recorder_profile(w->rec)->p;
	uint32_t frames[HWSPY_MAX_PY_FRAMES + 64];
	size_t depth = s->depth < sizeof(frames) / sizeof(frames[0]) ? s->depth
		       : sizeof(frames) / sizeof(frames[0]);
	uint64_t now = mon_now_ns();
	int r = 0;

	pthread_mutex_lock(&w->lock);
	/* of a stack deeper than fits, the leaf's end is kept: the leaf decides the hottest */
	for (size_t i = 0; i < depth && r == 0; i++)
		r = frame_in(w, rp, s->frames[s->depth - depth + i], &frames[i]);
	if (r == 0 && w->interval && s->n_values == profile_n_values(w->interval))
		r = profile_add(w->interval, (uint32_t) s->tid, frames, depth, s->values);
	w->samples++;
	if (mon_since(now, w->stats_at_ns) >= STATS_EVERY_NS) {
		struct hwspy_record_stats st;

		hwspy_recorder_stats(w->rec, &st);
		w->lost = st.lost;
		w->stats_at_ns = now;
		atomic_store(&w->gil_addr, lib_recorder_gil_addr(w->rec));
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

static void *run_thread(void *arg)
{
	struct watch *w = arg;
	struct hwspy_run run = { .stop = &w->stop };
	struct hwspy_python py;
	int r = hwspy_recorder_start(w->rec);

	hwspy_recorder_python(w->rec, &py);
	if (r < 0) {
		w->sample_error = r;
		if (r == -ENOTSUP && py.version && py.version[0])
			snprintf(w->sample_why, sizeof(w->sample_why), "it runs Python %s, which "
				 "hwspy does not read (3.8 to 3.14)", py.version);
		else
			snprintf(w->sample_why, sizeof(w->sample_why), "%s", hwspy_reason());
		atomic_store(&w->state, WATCH_NOT_SAMPLED);
		return NULL;
	}
	snprintf(w->python, sizeof(w->python), "%s", py.version ? py.version : "");
	snprintf(w->mode, sizeof(w->mode), "%s",
		 hwspy_recorder_mode(w->rec) == HWSPY_RECORD_CAPTURE ? "capture" : "nonblocking");
	atomic_store(&w->gil_addr, lib_recorder_gil_addr(w->rec));
	atomic_store(&w->state, WATCH_SAMPLING);
	(void) hwspy_recorder_run(w->rec, &run);
	atomic_store(&w->state, WATCH_ENDED);
	return NULL;
}

/* Ends the recorder's thread and frees the recorder (the interval's profile stays). */
static void recorder_end(struct watch *w)
{
	struct hwspy_record_stats st;

	if (w->thread_on) {
		w->stop = 1;
		hwspy_recorder_wake(w->rec);
		pthread_join(w->thread, NULL);
		w->thread_on = false;
	}
	if (!w->rec)
		return;
	hwspy_recorder_stats(w->rec, &st);
	pthread_mutex_lock(&w->lock);
	w->lost_base += st.lost;
	w->lost = 0;
	free(w->map);
	w->map = NULL;
	w->n_map = 0;
	pthread_mutex_unlock(&w->lock);
	hwspy_recorder_free(w->rec);
	w->rec = NULL;
}

/* A recorder for the target, started on a thread of its own: 0 or -errno. */
static int recorder_begin(struct watch *w)
{
	const struct hwspy_monitor *m = w->m;
	struct hwspy_record_opts ro;
	int r;

	hwspy_record_opts_init(&ro);
	ro.pid = w->pid;
	ro.events = m->sample_events;
	ro.freq = m->o.freq;
	ro.function = true;
	ro.mode = HWSPY_RECORD_AUTO;    /* without sigchld: capture, else nonblocking; no stop */
	ro.raise_nofile = m->o.raise_nofile;
	/* a few samples a second per thread: small rings, read a few times a second */
	ro.ring_pages = MONITOR_RING_PAGES;
	ro.read_ms = (unsigned) (5000 / m->o.freq);
	if (ro.read_ms < 100)
		ro.read_ms = 100;
	if (ro.read_ms > 1000)
		ro.read_ms = 1000;
	r = hwspy_recorder_new(&ro, sink, w, &w->rec);
	if (r < 0)
		return r;
	pthread_mutex_lock(&w->lock);
	if (!w->interval)
		w->interval = interval_new(w);
	pthread_mutex_unlock(&w->lock);
	if (!w->interval)
		return -ENOMEM;
	w->stop = 0;
	w->started_ns = mon_now_ns();
	atomic_store(&w->state, WATCH_STARTING);
	r = -pthread_create(&w->thread, NULL, run_thread, w);
	if (r < 0)
		return r;
	w->thread_on = true;
	return 0;
}

static int counters_begin(struct watch *w)
{
	struct hwspy_count_opts co = {
		.events = w->m->o.events, .user_only_fallback = true,
		.raise_nofile = w->m->o.raise_nofile,
	};
	int r = hwspy_count_new(&co, &w->count);

	if (r == 0)
		r = hwspy_count_start(w->count, w->pid, NULL);
	if (r == 0)
		r = hwspy_count_mark_new(w->count, &w->mark_from);
	if (r == 0)
		r = hwspy_count_mark_new(w->count, &w->mark_to);
	if (r == 0)
		r = hwspy_count_mark_read(w->count, w->mark_from);
	if (r < 0) {
		snprintf(w->why, sizeof(w->why), "%s", hwspy_reason());
		hwspy_count_mark_free(w->mark_from);
		hwspy_count_mark_free(w->mark_to);
		hwspy_count_free(w->count);
		w->mark_from = w->mark_to = NULL;
		w->count = NULL;
	}
	return r;
}

int watch_new(struct hwspy_monitor *m, pid_t pid, uint64_t start_time, const char *comm,
	      struct watch **ret)
{
	struct watch *w = calloc(1, sizeof(*w));
	int r;

	*ret = NULL;
	if (!w)
		return -ENOMEM;
	w->m = m;
	w->pid = pid;
	w->start_time = start_time;
	snprintf(w->process, sizeof(w->process), "%s", comm);
	pthread_mutex_init(&w->lock, NULL);
	w->interval_wall_ns = mon_wall_ns();
	w->interval_mono_ns = w->born_ns = mon_now_ns();
	r = counters_begin(w);
	if (r < 0) {
		w->unreadable = true;
		w->error = r;
	}
	if (waitsample_new(pid, &w->waits) < 0)
		w->waits = NULL;
	if (!w->unreadable) {
		r = recorder_begin(w);
		if (r < 0) {
			w->sample_error = r;
			snprintf(w->sample_why, sizeof(w->sample_why), "%s", hwspy_reason());
			atomic_store(&w->state, WATCH_NOT_SAMPLED);
		}
	}
	*ret = w;
	return 0;
}

/* The hottest leaf functions of p, top_functions per event, into w->top. */
static void top_functions(struct watch *w, const struct profile *p)
{
	size_t n_frames = profile_n_frames(p), per = w->m->o.top_functions;
	uint64_t *self = n_frames ? calloc(n_frames, sizeof(*self)) : NULL;

	w->n_top = 0;
	if (!self)
		return;
	for (size_t e = 0; e < profile_n_events(p) && w->n_top < MONITOR_MAX_TOP; e++) {
		uint64_t total = profile_total(p, 1 + e);

		memset(self, 0, n_frames * sizeof(*self));
		for (size_t i = 0; i < profile_n_stacks(p); i++) {
			const struct profile_stack *st = profile_stack(p, i);

			self[st->frames[st->depth - 1]] += profile_values(p, i)[1 + e];
		}
		for (size_t k = 0; k < per && total && w->n_top < MONITOR_MAX_TOP; k++) {
			size_t best = 0;

			for (size_t i = 1; i < n_frames; i++)
				if (self[i] > self[best])
					best = i;
			if (!self[best])
				break;
			{
				const struct profile_frame *f = profile_frame(p, (uint32_t) best);
				struct mon_top *t = &w->top[w->n_top++];

				t->event = e;
				snprintf(t->function, sizeof(t->function), "%s", f->name);
				snprintf(t->file, sizeof(t->file), "%s",
					 f->file ? f->file : f->module ? f->module : "");
				t->share = (double) self[best] / (double) total;
			}
			self[best] = 0;
		}
	}
	free(self);
}

/* The interval's counts (two marks): its ratios and findings. */
static void interval_counts(struct watch *w)
{
	struct hwspy_count_mark *sum = NULL, *t;
	const struct hwspy_count_event *ev;
	struct mon_ratios *q = &w->ratios;
	size_t n;

	if (!w->count || hwspy_count_mark_read(w->count, w->mark_to) < 0 ||
	    hwspy_count_mark_new(w->count, &sum) < 0)
		return;
	hwspy_count_mark_add(sum, w->mark_from, w->mark_to);
	t = w->mark_from;
	w->mark_from = w->mark_to;
	w->mark_to = t;
	if (hwspy_count_use(w->count, sum) < 0) {
		hwspy_count_mark_free(sum);
		return;
	}
	hwspy_count_mark_free(sum);
	*q = (struct mon_ratios) { .ipc = NAN, .cpus = NAN };
	ev = hwspy_count_events(w->count, &n);
	for (size_t i = 0; i < n; i++) {
		if (!ev[i].counted)
			continue;
		if (!isnan(ev[i].ipc))
			q->ipc = ev[i].ipc;
		if (!isnan(ev[i].cpus))
			q->cpus = ev[i].cpus;
		if (!isnan(ev[i].mpki) && q->n_miss < HWSPY_COUNT_MAX_EVENTS) {
			snprintf(q->miss[q->n_miss].event, sizeof(q->miss[0].event), "%s", ev[i].name);
			q->miss[q->n_miss].mpki = ev[i].mpki;
			q->miss[q->n_miss++].miss_ratio = isnan(ev[i].miss_rate) ? NAN
							  : ev[i].miss_rate / 100.0;
		}
	}
	if (hwspy_count_findings(w->count, &w->findings) < 0)
		w->findings.n = 0;
	w->have_interval = true;
}

/* Writes the interval's profile p into the profile directory. */
static void profile_out(struct watch *w, struct profile *p, uint64_t wall_ns)
{
	struct hwspy_monitor *m = w->m;
	struct hwspy_profile hp = { .p = p };
	const char *labels[2 * MONITOR_MAX_LABELS + 16], *comments[4];
	char name[512], path[4096], pid[16], target[128], host[300];
	const char *service = m->service ? m->service : w->process;
	size_t n = 0, c = 0;
	int r;

	if (!m->dir || profile_n_stacks(p) == 0)
		return;
	snprintf(pid, sizeof(pid), "%d", (int) w->pid);
	for (size_t i = 0; m->labels[i]; i++)
		labels[n++] = m->labels[i];
	labels[n++] = "pid";
	labels[n++] = pid;
	labels[n++] = "process";
	labels[n++] = w->process;
	labels[n++] = "hostname";
	labels[n++] = m->hostname;
	labels[n++] = "hwspy_version";
	labels[n++] = hwspy_version();
	labels[n] = NULL;
	snprintf(host, sizeof(host), "hostname: %s", m->hostname);
	comments[c++] = host;
	comments[c] = NULL;
	snprintf(target, sizeof(target), "pid %d (%s)", (int) w->pid, w->process);
	(void) profile_set_target(p, target);
	if (w->python[0])
		(void) profile_set_python(p, w->python);
	if (profdir_name(wall_ns, service, w->pid, name, sizeof(name)) < 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", m->dir_path, name);
	{
		struct hwspy_write_opts wo = { .labels = labels, .comments = comments };

		r = hwspy_profile_write_file(&hp, HWSPY_FORMAT_PPROF, &wo, path);
	}
	if (r < 0) {
		m->profiles_failed++;
		mon_note(m, HWSPY_MONITOR_PROFILE_FAILED, w->pid, r, path);
		return;
	}
	w->profiles_written++;
	m->profiles_written++;
	mon_note(m, HWSPY_MONITOR_PROFILE, w->pid, 0, path);
	(void) profdir_prune(m->dir, m->o.keep, m->o.max_disk);
}

/* A recorder to start again: its tables past their bound, or it ended while its process
 * lives (its Python not found yet, a failure). */
static bool recorder_stale(struct watch *w, uint64_t now_ns)
{
	int st = atomic_load(&w->state);

	if (w->unreadable || !w->rec)
		return false;
	if (st == WATCH_SAMPLING)
		return profile_n_frames(hwspy_recorder_profile(w->rec)->p) > MONITOR_MAX_FRAMES;
	return (st == WATCH_ENDED || st == WATCH_NOT_SAMPLED) && kill(w->pid, 0) == 0 &&
	       mon_since(now_ns, w->started_ns) >= RETRY_EVERY_NS;
}

void watch_rotate(struct watch *w, uint64_t now_ns, bool force)
{
	uint64_t every = (uint64_t) (w->m->o.every * 1e9), wall = mon_wall_ns();
	struct profile *done = NULL, *fresh = NULL;

	if (!force && mon_since(now_ns, w->interval_mono_ns) < every)
		return;
	if (w->rec)
		fresh = interval_new(w);
	pthread_mutex_lock(&w->lock);
	if (fresh || force) {
		done = w->interval;
		w->interval = fresh;
		if (w->map)
			memset(w->map, 0, w->n_map * sizeof(*w->map));
	}
	pthread_mutex_unlock(&w->lock);
	if (done) {
		struct profile_meta *meta = profile_meta(done);

		meta->start_time_ns = w->interval_wall_ns;
		meta->duration_ns = mon_since(now_ns, w->interval_mono_ns);
		top_functions(w, done);
		profile_out(w, done, w->interval_wall_ns);
		profile_free(done);
	}
	interval_counts(w);
	w->interval_wall_ns = wall;
	w->interval_mono_ns = now_ns;
	if (!force && recorder_stale(w, now_ns)) {
		recorder_end(w);
		if (recorder_begin(w) < 0)
			atomic_store(&w->state, WATCH_NOT_SAMPLED);
	}
}

void watch_tick(struct watch *w, uint64_t now_ns, uint64_t dt_ns)
{
	int st = atomic_load(&w->state);

	if (w->waits) {
		waitsample_set_gil(w->waits, atomic_load(&w->gil_addr));
		(void) waitsample_tick(w->waits, dt_ns);
	}
	bool young = mon_since(now_ns, w->born_ns) < RETRY_YOUNG_NS;

	if (!w->said && (st == WATCH_SAMPLING ||
			 (st == WATCH_NOT_SAMPLED && (w->sample_error != -ENOENT || !young)))) {
		w->said = true;
		if (st == WATCH_NOT_SAMPLED)
			mon_note(w->m, HWSPY_MONITOR_NO_SAMPLING, w->pid, w->sample_error,
				 w->sample_why);
	}
	/* a Python not found yet (picked up as it started): tried again soon, for a while */
	if (st == WATCH_NOT_SAMPLED && w->sample_error == -ENOENT && w->rec &&
	    mon_since(now_ns, w->started_ns) >= RETRY_EVERY_NS && young) {
		recorder_end(w);
		if (recorder_begin(w) < 0)
			atomic_store(&w->state, WATCH_NOT_SAMPLED);
	}
}

void watch_free(struct watch *w, bool write)
{
	if (!w)
		return;
	recorder_end(w);
	if (write && !w->unreadable)
		watch_rotate(w, mon_now_ns(), true);
	pthread_mutex_lock(&w->lock);
	profile_free(w->interval);
	w->interval = NULL;
	pthread_mutex_unlock(&w->lock);
	hwspy_count_mark_free(w->mark_from);
	hwspy_count_mark_free(w->mark_to);
	hwspy_count_free(w->count);
	waitsample_free(w->waits);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
