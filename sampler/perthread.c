/*
 * perthread: the ring layout of a ring per thread (exact mode by stops, where each thread's fd
 * signals that thread; and where per CPU would take more fds than a ring per thread): each
 * thread's group opened on that thread alone (inherit 0), its ring mapped on events[0]'s fd,
 * threads started later found by the scans. One of the two layouts behind struct ring_layout
 * (internal.h; the other is percpu.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "sampler/internal.h"

/* Opens t's group on t, maps its ring, its leaders, its signal (exact mode), its switch event
 * (opts.wall) and the capture's output into that ring, then enables them. */
static int perthread_thread_open(struct sampler *s, struct thread *t)
{
	int r;

	r = perf_open_mapped(s, t, sysconf(_SC_PAGESIZE));
	if (r < 0)
		goto fail;
	r = perf_leaders_open(s, t, -1, t->fds[0], t->fds);
	if (r < 0)
		goto fail;
	if (s->signo) {
		struct f_owner_ex owner = { F_OWNER_TID, t->tid };

		for (size_t i = 0; i < s->opts.n_events; i++) {
			if (!perf_thread_signals_by(s, t, t->fds[i]))
				continue;
			if (fcntl(t->fds[i], F_SETOWN_EX, &owner) < 0) {
				r = -errno;
				goto fail;
			}
		}
		r = perf_thread_signal(s, t, true);
		if (r < 0)
			goto fail;
	}
	if (s->opts.wall) {
		t->switch_fds = malloc(sizeof(*t->switch_fds));
		if (!t->switch_fds) {
			r = -ENOMEM;
			goto fail;
		}
		t->switch_fds[0] = -1;
		t->n_switch_fds = 1;
		r = perf_switch_open(s, t, -1, t->fds[0], 0);
		if (r < 0)
			goto fail;
	}
	/* a thread that cannot have the program (no free slot) is still sampled, uncaptured */
	if (capture_thread_open(s, t) < 0)
		s->stats.capture_threads_failed++;
	r = perf_thread_enable(s, t);
	if (r < 0)
		goto fail;
	if (t->switch_fds && ioctl(t->switch_fds[0], PERF_EVENT_IOC_ENABLE, 0) < 0) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	perf_thread_close(s, t);
	return r;
}

static void perthread_drain(struct sampler *s)
{
	for (size_t i = 0; i < s->n_threads; i++)
		if (s->threads[i].alive)
			perf_thread_drain(s, &s->threads[i], false);
}

/* Waits up to timeout_ms for a ring to fill or a SIGCHLD, and reads the rings that woke us
 * (the caller then drains them all: drain_all()). True if a SIGCHLD came (a launched command
 * changed state: look at it now). */
static bool perthread_poll(struct sampler *s, int timeout_ms)
{
	struct pollfd *pfd;
	bool chld = false;
	size_t n = SAMPLER_POLL_HEAD;

	pfd = calloc(s->n_threads + SAMPLER_POLL_HEAD + 1, sizeof(*pfd));
	if (!pfd) {
		struct pollfd w = { .fd = s->wake_fd, .events = POLLIN };

		(void) poll(&w, 1, timeout_ms);         /* the caller drains every ring */
		sampler_wake_clear(s, w.revents);
		return false;
	}
	sampler_poll_head(s, pfd);
	for (size_t i = 0; i < s->n_threads; i++)
		if (s->threads[i].alive)
			pfd[n++] = (struct pollfd) { .fd = s->threads[i].fds[0], .events = POLLIN };
	/* last: sampler_wake() */
	pfd[n] = (struct pollfd) { .fd = s->wake_fd, .events = POLLIN };
	(void) poll(pfd, n + 1, timeout_ms);
	sampler_wake_clear(s, pfd[n].revents);
	chld = sampler_poll_head_read(s, pfd);
	for (size_t i = SAMPLER_POLL_HEAD, k = 0; i < n; i++, k++) {
		struct thread *t;
		while (!s->threads[k].alive)
			k++;
		t = &s->threads[k];
		if (pfd[i].revents & (POLLIN | POLLHUP))
			perf_thread_drain(s, t, false);
		if (pfd[i].revents & POLLHUP)
			thread_gone(s, t);
	}
	free(pfd);
	return chld;
}

static int perthread_init(struct sampler *s)
{
	(void) s;
	return 0;
}

static void perthread_free(struct sampler *s)
{
	(void) s;
}

const struct ring_layout ring_per_thread = {
	.name = "per thread",
	.inherit = false,
	.init = perthread_init,
	.thread_open = perthread_thread_open,
	.drain = perthread_drain,
	.poll = perthread_poll,
	.free = perthread_free,
};
