/*
 * count_session: a counting session (analysis/stat.h): the events chosen, the counters started
 * on a pid, a launched command or the calling process, /proc's switches followed in slices,
 * read live, stopped, the totals.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stat.h"

#define SLICE_NS 250000000ULL

int stat_count_init(struct stat_count *c, const struct stat_count_opts *o, char *bad,
		    size_t size)
{
	char items[COUNTER_MAX_EVENTS][96];
	struct stat_setup *s = &c->s;
	int n;

	memset(c, 0, sizeof(*c));
	c->o = *o;
	c->o.events = NULL;             /* the caller's: not kept */
	if (size)
		bad[0] = '\0';
	if (!o->events) {
		if (stat_default_events(s) < 0)
			return -EINVAL;
	} else {
		n = events_split(o->events, items, COUNTER_MAX_EVENTS);
		if (n == -E2BIG)
			return -E2BIG;
		if (n < 0)
			return -EINVAL;
		s->n_events = (size_t) n;
		for (int i = 0; i < n; i++) {
			if (events_parse(items[i], &s->events[i]) < 0) {
				if (size)
					snprintf(bad, size, "%s", items[i]);
				return -ENOENT;
			}
			s->listed[i] = true;
		}
	}
	stat_groups(s);
	if (o->user_only_fallback)
		(void) stat_user_only(s, !o->events);
	return 0;
}

int stat_count_start(struct stat_count *c, pid_t pid, char *const *argv)
{
	struct counter_opts co = {
		.pid = argv && !pid ? 0 : pid ? pid : getpid(), .argv = pid ? NULL : argv,
		.events = c->s.events, .groups = c->s.groups, .n_events = c->s.n_events,
		.raise_nofile = c->o.raise_nofile,
	};
	int r;

	if (c->ctr)
		return -EBUSY;
	if (!pid && !argv) {            /* the calling process: marks read it often */
		stat_groups_self(&c->s);
		co.skip_idle = true;
	}
	r = counter_new(&co, &c->ctr);
	if (r < 0)
		return r;
	c->pid = counter_pid(c->ctr);
	stat_count_tick(c);
	return 0;
}

void stat_count_tick(struct stat_count *c)
{
	if (c->pid && !c->stopped)
		stat_switches_read(&c->sw, c->pid);
}

int stat_count_run(struct stat_count *c, volatile sig_atomic_t *stop, uint64_t duration_ns)
{
	uint64_t done = 0;

	if (!c->ctr)
		return -EINVAL;
	/* in slices, to follow the threads' switches */
	while (!(stop && *stop) && (!duration_ns || done < duration_ns) &&
	       !counter_stats(c->ctr)->target_exited) {
		uint64_t slice = duration_ns && duration_ns - done < SLICE_NS ?
				 duration_ns - done : SLICE_NS;
		int r = counter_run(c->ctr, stop, slice);

		if (r < 0)
			return r;
		done += slice;
		stat_count_tick(c);
	}
	return 0;
}

void stat_count_read(struct stat_count *c)
{
	if (!c->ctr || c->stopped)
		return;
	stat_count_tick(c);
	counter_read(c->ctr);
}

void stat_count_read_counters(struct stat_count *c)
{
	if (c->ctr && !c->stopped)
		counter_read(c->ctr);
}

void stat_count_stop(struct stat_count *c)
{
	if (!c->ctr || c->stopped)
		return;
	stat_count_tick(c);
	counter_stop(c->ctr);
	c->stopped = true;
	/* what the threads are called in Python, while the target is there to ask */
	if (c->o.python_names && !counter_stats(c->ctr)->target_exited)
		stat_python_names(c->pid, &c->pynames, &c->n_pynames);
}

int stat_count_totals(struct stat_count *c, struct stat_totals *t, struct stat_names *names)
{
	int r;

	if (!c->ctr)
		return -EINVAL;
	names->py = c->pynames;
	names->n_py = c->n_pynames;
	t->user_only = c->s.user_only;
	t->have_pmu = events_have_hw_pmu();
	r = stat_totals_fill(t, &c->s, c->ctr, names);
	if (r < 0)
		return r;
	stat_switches_sum(&c->sw, &t->voluntary, &t->involuntary);
	return 0;
}

void stat_count_release(struct stat_count *c)
{
	counter_free(c->ctr);
	c->ctr = NULL;
	stat_switches_release(&c->sw);
	free(c->pynames);
	c->pynames = NULL;
	c->n_pynames = 0;
}
