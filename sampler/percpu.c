/*
 * percpu: perf's own layout, for the modes that need no per-thread signal (exact stops):
 * nonblocking and the capture (its program writes to the current CPU's BPF output, capture.c):
 * one ring per CPU, so the locked memory follows the CPUs, not the threads.
 *
 * Each attached thread gets one event group per CPU (pid = tid, cpu = c) with inherit=1, so
 * that the threads it creates later carry the same events without a scan; every group's output
 * goes (PERF_EVENT_IOC_SET_OUTPUT) to CPU c's ring, which a dummy event of hwspy's own on that
 * CPU owns (an inherited event can be mapped only when bound to one CPU). The leader has attr.task=1: the
 * ring says when a thread is created (PERF_RECORD_FORK) and when one exits (PERF_RECORD_EXIT).
 * Samples of inherited events come with the thread's own tid; their group read carries the
 * parent's ids, so the values go by position. Child processes inherit the events too: their
 * samples are dropped (perf_deliver()).
 *
 * One of the two layouts behind struct ring_layout (internal.h; the other is perthread.c), and
 * the one point that chooses between them (ring_layout_choose()).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "base/procfs.h"
#include "sampler/internal.h"

struct task_record {            /* PERF_RECORD_FORK / PERF_RECORD_EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* Per CPU, unless exact by stops (each thread's own signal) or, attaching, the threads there now
 * would need more fds per CPU (threads x CPUs x events) than the limit leaves and more than a
 * ring per thread would. */
static bool percpu_fits(struct sampler *s)
{
	uint64_t ncpu = (uint64_t) sysconf(_SC_NPROCESSORS_CONF), n, per_cpu, per_thread;
	int r;

	if (s->opts.exact)
		return false;
	if (s->opts.argv || s->opts.subprocesses)
		return true;            /* one thread: the others inherit (children too) */
	perf_raise_nofile(s);
	r = procfs_tasks(s->opts.pid, NULL, 1u << 20);
	n = r > 0 ? (uint64_t) r : 0;
	if (!n || !s->fd_limit)
		return true;
	per_cpu = n * ncpu * s->opts.n_events + 2 * ncpu;
	per_thread = n * (s->opts.n_events + s->opts.capture);
	return per_cpu + 64 <= (uint64_t) s->fd_limit || per_cpu <= per_thread;
}

static int percpu_init(struct sampler *s)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	if (n <= 0 || n > 4096)
		return -EINVAL;
	s->cpus = calloc((size_t) n, sizeof(*s->cpus));
	if (!s->cpus)
		return -ENOMEM;
	s->ncpu = (int) n;
	for (int c = 0; c < s->ncpu; c++)
		s->cpus[c].fd = s->cpus[c].out_fd = -1;
	return 0;
}

static void ring_close(struct sampler *s, int c)
{
	struct cpu_ring *cr = &s->cpus[c];

	capture_cpu_close(s, c);
	if (cr->map)
		(void) munmap(cr->map, cr->map_size);
	cr->map = NULL;
	if (cr->fd >= 0)
		(void) close(cr->fd);
	cr->fd = -1;
}

/* CPU c's ring, owned by a dummy event of hwspy itself on c (a target's thread would leave it
 * hung up, always readable, once it exits): at s->ring_pages, halved down to the floor while
 * the mmap is over the locked-memory limit. 0, -ENODEV (CPU offline), -errno. */
static int ring_open(struct sampler *s, int c)
{
	struct cpu_ring *cr = &s->cpus[c];
	long psz = sysconf(_SC_PAGESIZE);
	size_t pages = s->ring_pages;
	int r;

	for (;;) {
		struct perf_event_attr a = {
			.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
			.disabled = 1, .use_clockid = 1, .clockid = CLOCK_MONOTONIC,
			.exclude_kernel = s->attrs[0].exclude_kernel, .exclude_hv = 1,
			.watermark = 1, .wakeup_watermark = perf_ring_watermark(s, pages),
		};

		r = perf_open_fd(s, &a, 0, c, -1);
		if (r < 0)
			return r;
		cr->fd = r;
		cr->map_size = (pages + 1) * (size_t) psz;
		cr->map = mmap(NULL, cr->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, cr->fd, 0);
		if (cr->map != MAP_FAILED)
			break;
		r = -errno;
		cr->map = NULL;
		ring_close(s, c);
		if (r != -EPERM && r != -ENOMEM)
			return r;
		if (pages / 2 < s->ring_floor)
			return r == -EPERM ? -ENOBUFS : r;
		pages /= 2;
		s->ring_pages = (unsigned) pages;
	}
	if (!s->stats.ring_pages_min || pages < s->stats.ring_pages_min)
		s->stats.ring_pages_min = (unsigned) pages;
	s->stats.cpu_rings++;
	if (pages < s->stats.ring_pages)
		s->stats.cpu_rings_shrunk++;
	ring_init(&cr->ring, cr->map, pages * (uint64_t) psz, s->scratch);
	/* a CPU that cannot have the capture's output samples uncaptured */
	if (capture_cpu_open(s, c) < 0)
		s->stats.capture_threads_failed++;
	return 0;
}

static int percpu_thread_open(struct sampler *s, struct thread *t)
{
	size_t n = s->opts.n_events;
	int r = 0, used = 0;

	t->cpu_fds = malloc((size_t) s->ncpu * n * sizeof(*t->cpu_fds));
	t->cpu_last = calloc((size_t) s->ncpu * n, sizeof(*t->cpu_last));
	if (!t->cpu_fds || !t->cpu_last) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < (size_t) s->ncpu * n; i++)
		t->cpu_fds[i] = -1;
	t->n_cpu_fds = s->ncpu * (int) n;
	if (s->opts.wall) {
		t->switch_fds = malloc((size_t) s->ncpu * sizeof(*t->switch_fds));
		if (!t->switch_fds) {
			r = -ENOMEM;
			goto fail;
		}
		for (int c = 0; c < s->ncpu; c++)
			t->switch_fds[c] = -1;
		t->n_switch_fds = s->ncpu;
	}
	for (int c = 0; c < s->ncpu; c++) {
		int *fds = &t->cpu_fds[(size_t) c * n];

		if (s->cpus[c].fd < 0) {
			r = ring_open(s, c);
			if (r == -ENODEV || r == -EINVAL)
				continue;       /* an offline CPU */
			if (r < 0)
				goto fail;
		}
		for (size_t i = 0; i < n; i++) {
			if (perf_is_leader(s, i))
				continue;       /* opened once the group writes into the ring */
			r = perf_open_fd(s, &s->attrs[i], t->tid, c, i ? fds[0] : -1);
			if (r == -EINVAL && s->attrs[i].inherit_thread) {
				/* a kernel before 5.13: child processes inherit the events too (their
				 * samples are dropped) */
				for (size_t k = 0; k < n; k++)
					s->attrs[k].inherit_thread = 0;
				r = perf_open_fd(s, &s->attrs[i], t->tid, c, i ? fds[0] : -1);
			}
			if (r < 0)
				goto fail;
			fds[i] = r;
		}
		if (ioctl(fds[0], PERF_EVENT_IOC_SET_OUTPUT, s->cpus[c].fd) < 0) {
			r = -errno;
			goto fail;
		}
		if (s->opts.wall && (r = perf_switch_open(s, t, c, s->cpus[c].fd, c)) < 0)
			goto fail;
		r = perf_leaders_open(s, t, c, s->cpus[c].fd, fds);
		if (r < 0)
			goto fail;
		used++;
	}
	if (!used) {
		r = -ENODEV;
		goto fail;
	}
	if (capture_thread_open(s, t) < 0)
		s->stats.capture_threads_failed++;
	for (int c = 0; c < s->ncpu; c++) {
		int fd = t->cpu_fds[(size_t) c * n];

		if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) < 0) {
			r = -errno;
			goto fail;
		}
		if (fd >= 0 && (r = perf_leaders_enable(s, &t->cpu_fds[(size_t) c * n])) < 0)
			goto fail;
		if (t->switch_fds && t->switch_fds[c] >= 0 &&
		    ioctl(t->switch_fds[c], PERF_EVENT_IOC_ENABLE, 0) < 0) {
			r = -errno;
			goto fail;
		}
	}
	return 0;
fail:
	perf_switch_close(s, t);
	percpu_thread_close(s, t);
	return r;
}

void percpu_thread_disable(struct thread *t)
{
	for (int i = 0; t->cpu_fds && i < t->n_cpu_fds; i++)
		if (t->cpu_fds[i] >= 0)
			(void) ioctl(t->cpu_fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

void percpu_thread_close(struct sampler *s, struct thread *t)
{
	(void) s;
	for (int i = t->n_cpu_fds - 1; t->cpu_fds && i >= 0; i--)
		if (t->cpu_fds[i] >= 0)
			(void) close(t->cpu_fds[i]);
	free(t->cpu_fds);
	t->cpu_fds = NULL;
	t->n_cpu_fds = 0;
	free(t->cpu_last);
	t->cpu_last = NULL;
}

/* The totals of thread t's group on CPU c, allocated for an inherited thread at its first
 * sample; NULL if out of memory. */
static uint64_t *last_of(struct sampler *s, struct thread *t, int c)
{
	size_t n = s->opts.n_events;

	if (!t->cpu_last)
		t->cpu_last = calloc((size_t) s->ncpu * n, sizeof(*t->cpu_last));
	return t->cpu_last ? &t->cpu_last[(size_t) c * n] : NULL;
}

static void task_record(struct sampler *s, const struct perf_event_header *h)
{
	struct task_record tr;
	struct thread *t;

	if (h->size < sizeof(*h) + sizeof(tr))
		return;
	memcpy(&tr, h + 1, sizeof(tr));
	if (!perf_pid_followed(s, (pid_t) tr.pid))
		return;                 /* another process */
	if ((pid_t) tr.pid != s->pid && h->type == PERF_RECORD_EXIT && tr.pid == tr.tid)
		sampler_tell(s, SAMPLER_EVENT_CHILD_EXIT, (pid_t) tr.pid);
	if (h->type == PERF_RECORD_FORK) {
		t = sampler_thread_get(s, (pid_t) tr.tid, true);
		if (t && s->opts.capture)
			capture_thread_root(s, t);
		return;
	}
	/* an attached thread keeps its events until the end: closing them would take them
	 * from the threads that inherited them */
	t = sampler_thread_get(s, (pid_t) tr.tid, false);
	if (t) {
		capture_thread_close(s, t);
		t->alive = false;
	}
}

/* A sample record of CPU c's ring: a capture (held for the sample after it) or a sample of
 * one of the target's threads (the thread added if it is new: its FORK record was lost). */
static void ring_sample(struct sampler *s, int c, const struct perf_event_header *h)
{
	struct cpu_ring *cr = &s->cpus[c];
	struct sample peek;
	struct ring_group g;
	struct thread *t;
	uint64_t *last;

	if (cr->out_fd >= 0 && h->size >= sizeof(*h) + 8 && !memcmp(h + 1, &cr->out_id, 8)) {
		capture_hold(s, 0, h);
		return;
	}
	if (ring_parse_sample(perf_sample_attr(s, h, NULL), h, h->size, &peek, &g) < 0 ||
	    !perf_pid_followed(s, peek.pid))
		return;
	t = sampler_thread_get(s, peek.tid, true);
	last = t ? last_of(s, t, c) : NULL;
	if (last)
		perf_deliver(s, t, h, false, last);
}

static void drain_ring(struct sampler *s, int c)
{
	struct cpu_ring *cr = &s->cpus[c];
	const struct perf_event_header *h;
	unsigned budget = 1u << 16;

	if (!cr->map)
		return;
	ring_read_init(&cr->ring);
	while (budget-- && (h = ring_read_event(&cr->ring))) {
		switch (h->type) {
		case PERF_RECORD_SAMPLE:
			ring_sample(s, c, h);
			break;
		case PERF_RECORD_FORK:
		case PERF_RECORD_EXIT:
			task_record(s, h);
			break;
		default:
			perf_note_record(s, h);
			break;
		}
	}
	capture_settle(&s->capture);
	ring_read_done(&cr->ring);
}

/* Decodes every CPU ring: samples to s->fn, new threads (PERF_RECORD_FORK) into the table,
 * exited ones (PERF_RECORD_EXIT) out of it. */
static void percpu_drain(struct sampler *s)
{
	for (int c = 0; c < s->ncpu; c++)
		drain_ring(s, c);
}

static bool percpu_poll(struct sampler *s, int timeout_ms)
{
	struct pollfd *pfd = calloc((size_t) s->ncpu + SAMPLER_POLL_HEAD + 1, sizeof(*pfd));
	bool chld = false;
	size_t n = SAMPLER_POLL_HEAD;

	if (!pfd) {
		struct pollfd w = { .fd = s->wake_fd, .events = POLLIN };

		(void) poll(&w, 1, timeout_ms);
		sampler_wake_clear(s, w.revents);
	} else {
		sampler_poll_head(s, pfd);
		for (int c = 0; c < s->ncpu; c++)
			if (s->cpus[c].fd >= 0)
				pfd[n++] = (struct pollfd) { .fd = s->cpus[c].fd, .events = POLLIN };
		pfd[n] = (struct pollfd) { .fd = s->wake_fd, .events = POLLIN };
		(void) poll(pfd, n + 1, timeout_ms);
		sampler_wake_clear(s, pfd[n].revents);
		chld = sampler_poll_head_read(s, pfd);
	}
	free(pfd);
	return chld;
}

static void percpu_free(struct sampler *s)
{
	for (int c = 0; s->cpus && c < s->ncpu; c++)
		ring_close(s, c);
	free(s->cpus);
	s->cpus = NULL;
}

const struct ring_layout ring_per_cpu = {
	.name = "per CPU",
	.inherit = true,
	.init = percpu_init,
	.thread_open = percpu_thread_open,
	.drain = percpu_drain,
	.poll = percpu_poll,
	.free = percpu_free,
};

const struct ring_layout *ring_layout_choose(struct sampler *s)
{
	return percpu_fits(s) ? &ring_per_cpu : &ring_per_thread;
}
