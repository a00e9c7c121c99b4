/*
 * count: counting mode (sampler.h, "counting"): every event a counter in its group on every
 * thread, no ring. The groups' layout (who leads, who is alone, who did not open) is chosen on
 * the first thread that opens and kept for the others; reading, scaling, totals and the API's
 * lifecycle. The attach (and its race with threads being started), the launch and the wait
 * are in count_target.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "sampler/count_internal.h"

#define READ_ALONE_FORMAT (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)
#define READ_GROUP_FORMAT (READ_ALONE_FORMAT | PERF_FORMAT_ID | PERF_FORMAT_GROUP)
#define MAX_THREADS 65536
#define RUN_TICK_MS 100                 /* counter_run() looks at the target and the groups */
#define WATCH_PAGES 2                   /* a watch's user page and its one-page ring */

/* ---- the system calls (or the tests' seam) ---- */

static int sys_open(void *ctx, struct perf_event_attr *attr, pid_t tid, int group_fd)
{
	long fd;

	(void) ctx;
	fd = syscall(SYS_perf_event_open, attr, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int) fd;
}

static ssize_t sys_read(void *ctx, int fd, void *buf, size_t n)
{
	ssize_t r;

	(void) ctx;
	r = read(fd, buf, n);
	return r < 0 ? -errno : r;
}

const struct counter_sys count_kernel_sys = { .open = sys_open, .read = sys_read };

void counter_attr(const struct event_spec *e, bool leader, bool at_exec,
		  struct perf_event_attr *ret)
{
	*ret = e->attr;
	ret->size = sizeof(*ret);
	ret->sample_period = 0;
	ret->sample_type = PERF_SAMPLE_IDENTIFIER;      /* as perf stat: no sample is taken */
	ret->read_format = leader ? READ_ALONE_FORMAT : READ_GROUP_FORMAT;
	ret->inherit = 1;
	ret->disabled = leader;                         /* the leader enables its group */
	ret->enable_on_exec = leader && at_exec;
}

/* ---- opening ---- */

bool count_thread_error(int err)
{
	return err == -ESRCH || err == -EMFILE || err == -ENFILE || err == -ENOMEM;
}

/* Opens event i on tid in role (group_fd its leader's fd for a member). An event that perf
 * would retry without exclude_guest/exclude_host (a PMU that refuses them: EINVAL) is retried
 * so, and keeps that attr. An fd or -errno. */
static int open_event(struct counter *c, size_t i, enum count_role role, pid_t tid, int group_fd)
{
	struct perf_event_attr a;
	int fd;

	counter_attr(&c->events[i], role != COUNT_MEMBER, c->at_exec, &a);
	if (role == COUNT_LEAD)
		a.read_format = READ_GROUP_FORMAT;
	if (!c->stats.group_read)
		a.read_format = READ_ALONE_FORMAT;
	if (c->started) {               /* opened after the start: counting at once */
		a.disabled = 0;
		a.enable_on_exec = 0;
	}
	fd = c->sys.open(c->sys.ctx, &a, tid, group_fd);
	if (fd == -EINVAL && (a.exclude_guest || a.exclude_host)) {
		a.exclude_guest = a.exclude_host = 0;
		fd = c->sys.open(c->sys.ctx, &a, tid, group_fd);
		if (fd >= 0)
			c->events[i].attr.exclude_guest = c->events[i].attr.exclude_host = 0;
	}
	if (fd == -EINVAL && role == COUNT_LEAD && c->stats.group_read) {
		/* a kernel that refuses PERF_FORMAT_GROUP with inherit: every fd read alone */
		a.read_format = READ_ALONE_FORMAT;
		fd = c->sys.open(c->sys.ctx, &a, tid, group_fd);
		if (fd >= 0)
			c->stats.group_read = false;
	}
	return fd >= 0 ? perf_fd_keep_under(c->fd_limit, fd) : fd;
}

static void close_fd(struct count_thread *t, size_t i)
{
	if (t->fds[i] >= 0)
		(void) close(t->fds[i]);
	t->fds[i] = -1;
}

/* The events of the group event first begins: their indexes into ret, first first. */
static size_t group_members(const struct counter *c, size_t first, size_t *ret)
{
	size_t n = 0;

	for (size_t j = first; j < c->n_events; j++)
		if (c->group_of[j] == first)
			ret[n++] = j;
	return n;
}

/* Whether member j, refused in its group with err, opens alone (then the group splits). */
static bool opens_alone(struct counter *c, size_t j, pid_t tid, int err)
{
	int fd;

	if (err != -EINVAL && err != -ENOSPC)
		return false;
	fd = open_event(c, j, COUNT_ALONE, tid, -1);
	if (fd < 0)
		return false;
	(void) close(fd);
	return true;
}

/* Chooses the roles of one group's events on thread t, opening them: the first that opens
 * leads; a member refused as such that opens alone splits the group (every event alone); a
 * member that does not open at all keeps its error. 0, or a thread error (the group's fds on
 * t closed). */
static int choose_group(struct counter *c, struct count_thread *t, size_t first)
{
	size_t m[COUNTER_MAX_EVENTS], n = group_members(c, first, m);
	int lead = -1, fd;

	for (size_t k = 0; k < n; k++) {
		size_t j = m[k];
		enum count_role role = c->split[j] || n == 1 ? COUNT_ALONE :
				       lead < 0 ? COUNT_LEAD : COUNT_MEMBER;

		fd = open_event(c, j, role, t->tid, role == COUNT_MEMBER ? t->fds[lead] : -1);
		if (fd < 0 && count_thread_error(fd)) {
			for (size_t q = 0; q < n; q++)
				close_fd(t, m[q]);
			return fd;
		}
		if (fd < 0 && role == COUNT_MEMBER && opens_alone(c, j, t->tid, fd)) {
			for (size_t q = 0; q < n; q++) {
				close_fd(t, m[q]);
				c->split[m[q]] = true;
				c->error[m[q]] = 0;
			}
			return choose_group(c, t, first);
		}
		c->error[j] = fd < 0 ? fd : 0;
		c->role[j] = fd < 0 ? COUNT_NONE : role;
		c->lead[j] = role == COUNT_MEMBER ? (size_t) lead : j;
		if (fd < 0)
			continue;
		t->fds[j] = fd;
		if (role == COUNT_LEAD)
			lead = (int) j;
	}
	return 0;
}

/* Opens t's events in the chosen roles: 0, or -errno (t's fds closed). */
static int open_chosen(struct counter *c, struct count_thread *t)
{
	for (size_t i = 0; i < c->n_events; i++) {
		int fd;

		if (c->role[i] == COUNT_NONE)
			continue;
		fd = open_event(c, i, c->role[i], t->tid,
				c->role[i] == COUNT_MEMBER ? t->fds[c->lead[i]] : -1);
		if (fd < 0) {
			for (size_t k = 0; k < c->n_events; k++)
				close_fd(t, k);
			return fd;
		}
		t->fds[i] = fd;
	}
	return 0;
}

struct count_thread *count_thread_new(struct counter *c, pid_t tid)
{
	struct count_thread *t;

	if (c->n_threads == c->cap_threads &&
	    (c->cap_threads * 2 > MAX_THREADS ||
	     array_grow((void **) &c->threads, &c->cap_threads, c->n_threads + 1,
			sizeof(*c->threads), 16) < 0))
		return NULL;
	t = &c->threads[c->n_threads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->watch_fd = -1;
	for (size_t i = 0; i < COUNTER_MAX_EVENTS; i++)
		t->fds[i] = -1;
	return t;
}

/* ---- the watch (opts.skip_idle) ----
 *
 * A process that reads its own counters often (a block's start and end) need not read the
 * threads that cannot have counted anything since their last reading: each read() of a
 * thread's group costs about a microsecond, two per block per thread. Each thread gets a
 * watch: a task-clock event of its own (not inherited), its user page and a one-page ring
 * mapped read-only. The kernel rewrites that page (its lock moves by 2) each time the thread
 * is switched onto a CPU, and writes a FORK record into the ring when the thread starts a
 * thread or process, whose counts its inherited counters then add in without the page
 * telling when they run.
 *
 * A thread was idle at a reading if it was not switched in since its lock was looked at
 * before the reading before, and no value of it moved between the two readings: its time
 * enabled moves whenever it runs (multiplexed or not), so it was off its CPU all along, and
 * at the second reading. It stays off, its values as read, until its lock moves: a reading
 * skips it while the lock is the one seen before that reading and its ring is empty. A thread
 * whose ring holds only its own EXIT record (written once its counters stopped for good) is
 * read once more, then never. Every other thread is read: the one reading (it runs), a thread
 * that started another (a FORK record in its ring: for good), one whose watch did not open or
 * map (perf_event_mlock_kb ...).
 */

/* Opens t's watch before its counters (a thread it starts in between is seen in the ring);
 * where it does not open, t is read at every reading. */
static void watch_open(struct counter *c, struct count_thread *t)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK,
		.task = 1,
	};
	long page = sysconf(_SC_PAGESIZE);
	void *m;
	int fd;

	if (!c->opts.skip_idle || c->opts.sys || page <= 0)
		return;
	fd = sys_open(NULL, &a, t->tid, -1);
	if (fd == -EACCES || fd == -EPERM) {     /* perf_event_paranoid 2: user space only */
		a.exclude_kernel = a.exclude_hv = 1;
		fd = sys_open(NULL, &a, t->tid, -1);
	}
	fd = perf_fd_keep_under(c->fd_limit, fd);
	if (fd < 0)
		return;
	m = mmap(NULL, WATCH_PAGES * (size_t) page, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		(void) close(fd);
		return;
	}
	t->watch_fd = fd;
	t->watch = m;
	c->stats.watched++;
}

static void watch_close(struct count_thread *t)
{
	if (t->watch)
		(void) munmap(t->watch, WATCH_PAGES * (size_t) sysconf(_SC_PAGESIZE));
	if (t->watch_fd >= 0)
		(void) close(t->watch_fd);
	t->watch = NULL;
	t->watch_fd = -1;
}

int count_thread_open(struct counter *c, struct count_thread *t)
{
	bool any = false;
	int r = 0;

	watch_open(c, t);
	if (c->chosen) {
		r = open_chosen(c, t);
	} else {
		for (size_t i = 0; i < c->n_events && r >= 0; i++)
			if (c->group_of[i] == i)
				r = choose_group(c, t, i);
		for (size_t i = 0; i < c->n_events; i++)
			any |= t->fds[i] >= 0;
		if (r >= 0 && !any)
			r = c->error[0];        /* no event opens here (a thread error is retried) */
		for (size_t i = 0; r < 0 && i < c->n_events; i++)
			close_fd(t, i);
		c->chosen = r >= 0;
	}
	if (r < 0) {
		c->stats.watched -= t->watch != NULL;
		watch_close(t);
		c->n_threads--;         /* t is the last entry */
		return r;
	}
	c->stats.threads++;
	return 0;
}

/* ---- reading ---- */

static void set_value(struct counter_value *v, uint64_t raw, uint64_t enabled, uint64_t running)
{
	v->raw = raw;
	v->enabled_ns = enabled;
	v->running_ns = running;
}

/* Reads the group event lead leads on t (PERF_FORMAT_GROUP: nr, enabled, running, then
 * value and id for each member, in the order they were opened: by index): whether it was. */
static bool read_group(struct counter *c, struct count_thread *t, size_t lead)
{
	uint64_t buf[3 + 2 * COUNTER_MAX_EVENTS];
	size_t k = 0;
	ssize_t n = c->sys.read(c->sys.ctx, t->fds[lead], buf, sizeof(buf));

	if (n < 24 || buf[0] > COUNTER_MAX_EVENTS || (size_t) n < (3 + 2 * buf[0]) * 8)
		return false;           /* keeps the last values read */
	for (size_t i = lead; i < c->n_events && k < buf[0]; i++) {
		if (i != lead && (c->role[i] != COUNT_MEMBER || c->lead[i] != lead || t->fds[i] < 0))
			continue;
		set_value(&t->v[i], buf[3 + 2 * k], buf[1], buf[2]);
		k++;
	}
	return true;
}

static bool read_alone(struct counter *c, struct count_thread *t, size_t i)
{
	uint64_t buf[3];

	if (c->sys.read(c->sys.ctx, t->fds[i], buf, sizeof(buf)) != (ssize_t) sizeof(buf))
		return false;
	set_value(&t->v[i], buf[0], buf[1], buf[2]);
	return true;
}

/* Reads each of t's groups: whether every read did. */
static bool read_thread(struct counter *c, struct count_thread *t)
{
	bool ok = true;

	for (size_t i = 0; i < c->n_events; i++) {
		if (t->fds[i] < 0)
			continue;
		if (c->role[i] == COUNT_LEAD && c->stats.group_read)
			ok &= read_group(c, t, i);
		else if (c->role[i] == COUNT_ALONE || !c->stats.group_read)
			ok &= read_alone(c, t, i);
	}
	return ok;
}

static bool values_same(const struct counter *c, const struct counter_value *a,
			const struct counter_value *b)
{
	for (size_t i = 0; i < c->n_events; i++)
		if (a[i].raw != b[i].raw || a[i].enabled_ns != b[i].enabled_ns ||
		    a[i].running_ns != b[i].running_ns)
			return false;
	return true;
}

/* Whether the only record in t's ring (head bytes written) is t's own EXIT: the thread has
 * exited, and had no thread or process of its own started since its watch opened. */
static bool watch_exited(const struct count_thread *t, uint64_t head)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
	} r;

	if (head < sizeof(r) || head > (uint64_t) sysconf(_SC_PAGESIZE))
		return false;
	memcpy(&r, (const char *) t->watch + sysconf(_SC_PAGESIZE), sizeof(r));
	return r.h.type == PERF_RECORD_EXIT && r.h.size == head && r.tid == (uint32_t) t->tid;
}

/* Reads t unless its watch says it was idle at its last reading and not switched in since,
 * or has exited and was read since (see "the watch" above). */
static void read_watched(struct counter *c, struct count_thread *t)
{
	struct counter_value before[COUNTER_MAX_EVENTS];
	uint32_t lock = __atomic_load_n(&t->watch->lock, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&t->watch->data_head, __ATOMIC_ACQUIRE);
	bool quiet = t->read_once && lock == t->watch_lock && !(lock & 1) && head == 0;
	bool ok;

	if (head && !t->gone && watch_exited(t, head)) {
		t->gone = read_thread(c, t);    /* its final values */
		return;
	}
	if ((quiet && t->idle) || t->gone) {
		c->stats.reads_skipped++;
		return;
	}
	memcpy(before, t->v, c->n_events * sizeof(*before));
	ok = read_thread(c, t);
	t->idle = quiet && ok && __atomic_load_n(&t->watch->lock, __ATOMIC_ACQUIRE) == lock &&
		  values_same(c, before, t->v);
	t->watch_lock = lock;
	t->read_once = true;
}

void count_read_all(struct counter *c)
{
	for (size_t k = 0; k < c->n_threads; k++) {
		struct count_thread *t = &c->threads[k];

		c->stats.reads++;
		if (t->watch && !c->stopped)
			read_watched(c, t);
		else
			(void) read_thread(c, t);
	}
}

void count_enable_all(struct counter *c, bool on)
{
	for (size_t k = 0; k < c->n_threads; k++)
		for (size_t i = 0; i < c->n_events; i++)
			if (c->threads[k].fds[i] >= 0 && c->role[i] != COUNT_MEMBER)
				(void) ioctl(c->threads[k].fds[i],
					     on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* Whether the group lead leads was enabled on some thread, and ran on none. */
static bool group_idle(const struct counter *c, size_t lead)
{
	bool enabled = false;

	for (size_t k = 0; k < c->n_threads; k++) {
		const struct counter_value *v = &c->threads[k].v[lead];
		if (v->running_ns)
			return false;
		enabled |= v->enabled_ns > 0;
	}
	return enabled;
}

/* Reopens the group lead leads alone on every thread, counting from now (the values the
 * group had are dropped: it never ran). */
static void split_group(struct counter *c, size_t lead)
{
	size_t m[COUNTER_MAX_EVENTS], n = group_members(c, lead, m);

	for (size_t q = 0; q < n; q++) {
		if (c->role[m[q]] == COUNT_NONE)
			continue;
		c->role[m[q]] = COUNT_ALONE;
		c->lead[m[q]] = m[q];
		c->split[m[q]] = true;
	}
	for (size_t k = 0; k < c->n_threads; k++) {
		struct count_thread *t = &c->threads[k];
		for (size_t q = 0; q < n; q++) {
			size_t i = m[q];
			int fd;

			if (t->fds[i] < 0)
				continue;
			(void) close(t->fds[i]);
			fd = open_event(c, i, COUNT_ALONE, t->tid, -1);
			t->fds[i] = fd >= 0 ? fd : -1;
			memset(&t->v[i], 0, sizeof(t->v[i]));
		}
	}
}

int count_split_idle(struct counter *c)
{
	int n = 0;

	for (size_t i = 0; i < c->n_events; i++) {
		if (c->role[i] != COUNT_LEAD || c->ran[i])
			continue;
		/* only the groups not yet seen running are read (a tick costs a read per thread
		 * of each): once a group ran, the PMU can schedule it */
		for (size_t k = 0; k < c->n_threads; k++)
			if (c->threads[k].fds[i] >= 0) {
				if (c->stats.group_read)
					(void) read_group(c, &c->threads[k], i);
				else
					(void) read_alone(c, &c->threads[k], i);
				c->ran[i] |= c->threads[k].v[i].running_ns > 0;
			}
		if (!c->ran[i] && group_idle(c, i)) {
			c->started = true;      /* it was enabled: its exec (at_exec) is past */
			split_group(c, i);
			for (size_t k = 0; k < c->n_threads; k++)
				c->threads[k].read_once = c->threads[k].idle =
					c->threads[k].gone = false;
			n++;
		}
	}
	return n;
}

/* ---- the API ---- */

static int counter_check(const struct counter_opts *o)
{
	if (!o->events || o->n_events == 0 || o->n_events > COUNTER_MAX_EVENTS)
		return -EINVAL;
	if ((o->pid > 0) == (o->argv != NULL) || o->pid < 0 || (o->argv && !o->argv[0]))
		return -EINVAL;
	return 0;
}

/* The groups as first members: events with one group number share the first's index. */
static void counter_groups(struct counter *c, const unsigned *groups)
{
	for (size_t i = 0; i < c->n_events; i++) {
		c->group_of[i] = i;
		for (size_t j = 0; groups && j < i; j++)
			if (groups[j] == groups[i]) {
				c->group_of[i] = j;
				break;
			}
	}
}

int counter_new(const struct counter_opts *o, struct counter **ret)
{
	struct counter *c;
	int r;

	*ret = NULL;
	if ((r = counter_check(o)) < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = *o;
	c->opts.events = c->events;
	c->opts.groups = NULL;
	c->sys = o->sys ? *o->sys : count_kernel_sys;
	c->n_events = o->n_events;
	memcpy(c->events, o->events, o->n_events * sizeof(*c->events));
	counter_groups(c, o->groups);
	c->stats.group_read = true;
	c->exec_pipe = c->pidfd = -1;
	c->at_exec = o->at_exec || o->argv;
	r = o->argv ? count_launch(c) : count_attach(c);
	if (r < 0) {
		counter_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

pid_t counter_pid(const struct counter *c)
{
	return c->pid;
}

int counter_run(struct counter *c, volatile sig_atomic_t *stop, uint64_t duration_ns)
{
	uint64_t start;
	int r;

	if (c->stopped)
		return 0;
	if (c->launched && !c->released && (r = count_release(c)) < 0)
		return r;
	start = clock_now_ns();
	while (!(stop && *stop) && !c->stats.target_exited) {
		int ms = sampler_wait_ms(start, duration_ns, 0);

		if (ms < 0)
			break;
		if (count_wait_exit(c, ms < RUN_TICK_MS ? ms : RUN_TICK_MS))
			break;
		(void) count_split_idle(c);
	}
	return 0;
}

void counter_read(struct counter *c)
{
	if (c->stopped)
		return;
	count_read_all(c);
	c->stats.wall_ns = c->start_ns && c->started ? clock_now_ns() - c->start_ns : 0;
}

void counter_stop(struct counter *c)
{
	if (c->stopped)
		return;
	c->stopped = true;
	count_enable_all(c, false);
	count_read_all(c);              /* every thread: stopped, none is skipped */
	for (size_t k = 0; k < c->n_threads; k++) {
		for (size_t i = 0; i < c->n_events; i++)
			close_fd(&c->threads[k], i);
		watch_close(&c->threads[k]);
	}
	if (!c->end_ns)
		c->end_ns = clock_now_ns();
	if (!c->start_ns)
		c->start_ns = c->end_ns;
	c->stats.wall_ns = c->end_ns - c->start_ns;
}

static double scale(const struct counter_value *v)
{
	if (!v->running_ns)
		return 0;
	if (v->running_ns >= v->enabled_ns)
		return (double) v->raw;
	return (double) v->raw * ((double) v->enabled_ns / (double) v->running_ns);
}

/* Event i's value on t as the API gives it (scaled, its flags). */
static void value_of(const struct counter *c, const struct counter_value *in, size_t i,
		     struct counter_value *ret)
{
	*ret = *in;
	ret->scaled = scale(in);
	ret->error = c->role[i] == COUNT_NONE ? (c->error[i] ? c->error[i] : -ENOENT) : 0;
	ret->split = c->split[i];
	ret->never_ran = in->enabled_ns > 0 && in->running_ns == 0;
}

void counter_totals(const struct counter *c, struct counter_value *ret)
{
	for (size_t i = 0; i < c->n_events; i++) {
		struct counter_value sum = { 0 };
		double scaled = 0;

		for (size_t k = 0; k < c->n_threads; k++) {
			const struct counter_value *v = &c->threads[k].v[i];
			sum.raw += v->raw;
			sum.enabled_ns += v->enabled_ns;
			sum.running_ns += v->running_ns;
			scaled += scale(v);
		}
		value_of(c, &sum, i, &ret[i]);
		ret[i].scaled = scaled;
	}
}

size_t counter_n_threads(const struct counter *c)
{
	return c->n_threads;
}

pid_t counter_thread(const struct counter *c, size_t k, struct counter_value *ret)
{
	if (k >= c->n_threads)
		return 0;
	for (size_t i = 0; i < c->n_events; i++)
		value_of(c, &c->threads[k].v[i], i, &ret[i]);
	return c->threads[k].tid;
}

const struct counter_stats *counter_stats(const struct counter *c)
{
	return &c->stats;
}

void counter_free(struct counter *c)
{
	if (!c)
		return;
	counter_stop(c);
	count_drop_child(c);
	if (c->exec_pipe >= 0)
		(void) close(c->exec_pipe);
	if (c->pidfd >= 0)
		(void) close(c->pidfd);
	free(c->threads);
	free(c);
}
