/* perf: one event group per thread: open, mmap (shrinking the ring to fit the locked-memory
 * limit), signal routing, drain; the accounting of threads left out. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "sampler/internal.h"

#define DEFAULT_RING_PAGES 64
#define MIN_RING_PAGES 4
#define MAX_LEFT_OUT 65536
#define FD_RESERVE 32           /* fds left to hwspy itself when events run out of them */
/* The largest records, for the ring's floor: a sample's fixed fields and group read, a kernel
 * callchain (perf's default max depth), and a capture record of every node at its largest */
#define SAMPLE_FIXED_BYTES 1024
#define CALLCHAIN_BYTES (128 * 8)
#define CAPTURE_RECORD_BYTES (CAPTURE_HDR + SAMPLER_CAPTURE_MAX_NODES * SAMPLER_CAPTURE_MAX_STRIDE)


int sampler_wait_ms(uint64_t start_ns, uint64_t duration_ns, unsigned cap_ms)
{
	uint64_t spent = clock_now_ns() - start_ns, cap = cap_ms ? cap_ms : 100;

	if (!duration_ns)
		return (int) cap;
	if (spent >= duration_ns)
		return -1;
	return duration_ns - spent < cap * 1000000ULL ? (int) ((duration_ns - spent) / 1000000) + 1
						      : (int) cap;
}

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long flags)
{
	long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);

	return fd < 0 ? -errno : (int) fd;
}

/* The fewest data pages (a power of two, at most pages) that hold two of the largest records
 * this sampler's rings receive. */
static unsigned ring_floor(const struct sampler_opts *o, unsigned pages)
{
	size_t rec = SAMPLE_FIXED_BYTES +
		     (o->kernel_callchain || o->off_cpu || o->wall ? CALLCHAIN_BYTES : 0);
	size_t need;
	size_t psz = (size_t) sysconf(_SC_PAGESIZE);
	unsigned floor = MIN_RING_PAGES;

	if (o->stack_user_size || (o->wall && o->switch_stack_size))
		rec += 64 * 8 + (o->stack_user_size > o->switch_stack_size ? o->stack_user_size
					: o->switch_stack_size) + 16;   /* regs, size, data, dyn_size */
	if (o->capture)
		rec += CAPTURE_RECORD_BYTES + 64;       /* the names area's record's header too */
	need = 2 * rec;
	while ((size_t) floor * psz < need && floor < pages)
		floor *= 2;
	return floor < pages ? floor : pages;
}

/* opts.wall: the switch event of every thread, sampling each switch-out as opts.off_cpu's
 * events[0] does; the group's samples carry their id first to be told apart. */
static void build_switch_attr(struct sampler *s)
{
	const struct sampler_opts *o = &s->opts;
	struct perf_event_attr *a = &s->switch_attr;

	*a = (struct perf_event_attr) {
		.size = sizeof(*a), .type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CONTEXT_SWITCHES, .sample_period = 1, .disabled = 1,
		.use_clockid = 1, .clockid = CLOCK_MONOTONIC, .inherit = s->layout->inherit,
		.inherit_thread = s->layout->inherit, .context_switch = 1, .sample_id_all = 1,
		.exclude_hv = 1, .exclude_callchain_user = 1,
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_TIME,
		.watermark = 1, .wakeup_watermark = s->attrs[0].wakeup_watermark,
		/* what the ring lost of this event's records (Linux 6.0+; else dropped at the
		 * first open): --wall's losses told apart from those on the CPU */
		.read_format = PERF_FORMAT_LOST,
	};
	/* why it waits: the callchain and the user registers, or the capture's record (see
	 * sampling_fields()); the registers for the stack's unwinding too */
	if (!s->capture.switch_regs)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (!s->capture.switch_regs || o->switch_stack_size) {
		a->sample_type |= PERF_SAMPLE_REGS_USER;
		a->sample_regs_user = o->regs_user_mask | 1ull << SAMPLER_OFF_CPU_ARG_REG;
	}
	if (o->switch_stack_size) {
		a->sample_type |= PERF_SAMPLE_STACK_USER;
		a->sample_stack_user = o->switch_stack_size;
	}
	s->attrs[0].sample_type |= PERF_SAMPLE_IDENTIFIER;
}

bool perf_is_leader(const struct sampler *s, size_t i)
{
	return i > 0 && i < s->opts.n_events && (s->opts.leaders >> i & 1);
}

void sampler_leader_rate(const struct sampler_opts *o, size_t i, uint64_t *ret_freq,
			 uint64_t *ret_period)
{
	const struct perf_event_attr *a = &o->events[i].attr;

	*ret_freq = 0;
	*ret_period = a->sample_period && !a->freq ? a->sample_period : events_default_period(a);
	if (!*ret_period)
		*ret_freq = o->freq ? o->freq : SAMPLER_LEADER_FREQ;
}

/* An event that can overflow while its thread goes to sleep (a switch out, a migration, a
 * tracepoint): a stop there would interrupt the system call it sleeps in. */
static bool overflows_asleep(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_TRACEPOINT ||
	       (a->type == PERF_TYPE_SOFTWARE && (a->config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
						  a->config == PERF_COUNT_SW_CGROUP_SWITCHES ||
						  a->config == PERF_COUNT_SW_CPU_MIGRATIONS));
}

/* The sampling fields of a (events[0], or leader i): what its samples carry, its rate (freq,
 * else period), how its ring wakes us. by_count: it weighs its count's delta (read_group: and
 * carries its group's values). */
static void sampling_fields(struct sampler *s, struct perf_event_attr *a, bool by_count,
			    bool read_group, uint64_t freq, uint64_t period)
{
	const struct sampler_opts *o = &s->opts;

	/* no PERF_SAMPLE_PERIOD for a count event: its weight is its count's delta, and
	 * with a fixed period the kernel samples a software event that has it at every
	 * single occurrence (period 1), whatever the period asked */
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 (by_count ? 0 : PERF_SAMPLE_PERIOD);
	if (read_group || by_count)
		a->sample_type |= PERF_SAMPLE_READ;
	if (o->kernel_callchain) {
		/* the user part comes from our own unwinding of the stack copy */
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 1;
	}
	if (o->stack_user_size) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = o->regs_user_mask;
		a->sample_stack_user = o->stack_user_size;
	}
	if (o->off_cpu) {
		/* the switch happens in the kernel: why (the syscall, the wait) is in its
		 * callchain, or in its capture record (capture.switch_regs: ~1.8 us a switch
		 * less, and the user registers' ~0.6, on bench/offcpu.py's ping-pong); switch
		 * records time the thread's way back in */
		a->exclude_kernel = 0;
		a->context_switch = 1;
		a->sample_id_all = 1;
		if (!s->capture.switch_regs) {
			a->sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER;
			a->exclude_callchain_user = 1;
			a->sample_regs_user |= o->regs_user_mask | 1ull << SAMPLER_OFF_CPU_ARG_REG;
		}
	}
	if (freq) {
		a->freq = 1;
		a->sample_freq = freq;
	} else {
		a->freq = 0;
		a->sample_period = period;
	}
	if (o->exact) {
		a->wakeup_events = 1;
	} else {
		/* capture mode: the stack is captured at the overflow, so reading late
		 * costs nothing. Nonblocking mode: the rings are read on a short tick
		 * (target.c), because waking us for each sample costs the sampled thread
		 * ~30 us more per sample on a VM (the wakeup's IPIs), the most of this
		 * mode's cost. Either way the kernel wakes us only at perf_ring_watermark(),
		 * early enough that a burst cannot overflow the ring */
		if (o->capture)         /* capture records share the ring: told apart by id */
			a->sample_type |= PERF_SAMPLE_IDENTIFIER;
		a->watermark = 1;
		a->wakeup_watermark = perf_ring_watermark(s, s->ring_pages);
	}
}

uint32_t perf_ring_watermark(const struct sampler *s, size_t pages)
{
	return (uint32_t) (pages * (size_t) sysconf(_SC_PAGESIZE) / (s->opts.capture ? 4 : 8));
}

void perf_build_attrs(struct sampler *s)
{
	const struct sampler_opts *o = &s->opts;
	bool read_group = false;
	size_t pos = 1;

	s->ring_pages = o->ring_pages ? o->ring_pages : DEFAULT_RING_PAGES;
	s->ring_floor = ring_floor(o, s->ring_pages);
	s->stats.ring_pages = s->ring_pages;
	/* its samples weigh its count's delta, read with each sample (events_counts_occurrences()) */
	s->weigh_by_count = events_counts_occurrences(&s->events[0].attr);
	s->lead_by_count = s->lead_signal = 0;
	/* the members of events[0]'s group, in its order: per-CPU groups read by position */
	for (size_t i = 1; i < o->n_events; i++) {
		if (perf_is_leader(s, i))
			continue;
		s->group_pos[i] = pos++;
		read_group = true;
	}
	read_group |= s->weigh_by_count;

	for (size_t i = 0; i < o->n_events; i++) {
		struct perf_event_attr *a = &s->attrs[i];
		bool leader = perf_is_leader(s, i);
		uint64_t freq = o->freq, period = o->period;

		*a = s->events[i].attr;
		a->size = sizeof(*a);
		a->disabled = i == 0 || leader; /* a leader enables its group */
		a->use_clockid = 1;
		a->clockid = CLOCK_MONOTONIC;
		a->read_format = read_group && !leader ? PERF_FORMAT_GROUP | PERF_FORMAT_ID : 0;
		/* per-CPU layout: threads created later carry the events; the leader tells us of
		 * them (PERF_RECORD_FORK / EXIT) */
		a->inherit = s->layout->inherit;
		/* not into child processes (5.13+, else dropped), unless they are followed */
		a->inherit_thread = s->layout->inherit && !o->subprocesses;
		a->task = s->layout->inherit && i == 0;
		/* a followed child's exec: PERF_RECORD_COMM with PERF_RECORD_MISC_COMM_EXEC */
		a->comm = a->comm_exec = o->subprocesses && i == 0;
		if (i > 0 && !leader)
			continue;
		if (leader) {
			sampler_leader_rate(o, i, &freq, &period);
			if (events_counts_occurrences(&s->events[i].attr))
				s->lead_by_count |= 1u << i;
			if (o->exact && !overflows_asleep(a))
				s->lead_signal |= 1u << i;
		}
		sampling_fields(s, a, i ? (s->lead_by_count >> i & 1) : s->weigh_by_count,
				i == 0 && read_group, freq, period);
		if (o->signal) {
			/* SIGTRAP to the thread that overflowed (sigcapture.h), never into a
			 * system call: user space only; inherited by its later threads, not by
			 * child processes nor across an exec (which the kernel requires) */
			a->sigtrap = 1;
			a->remove_on_exec = 1;
			a->sig_data = s->sig_cookie;
			a->exclude_kernel = 1;
			a->exclude_hv = 1;
			a->inherit_thread = a->inherit;
		}
		/* the samples of several events share a ring: told apart by id */
		if (o->leaders)
			a->sample_type |= PERF_SAMPLE_IDENTIFIER;
	}
	if (o->wall)
		build_switch_attr(s);
}

bool perf_pid_followed(const struct sampler *s, pid_t pid)
{
	return pid == s->pid || s->opts.subprocesses;
}

int perf_switch_open(struct sampler *s, struct thread *t, int cpu, int out_fd, int k)
{
	uint64_t id;
	size_t i;
	int fd;

	s->switch_attr.inherit_thread = s->attrs[0].inherit_thread;   /* as the kernel took it */
	fd = perf_open_fd(s, &s->switch_attr, t->tid, cpu, -1);
	if (fd == -EINVAL && s->switch_attr.read_format) {
		/* a kernel before 6.0: no PERF_FORMAT_LOST, the losses not told apart */
		s->switch_attr.read_format = 0;
		fd = perf_open_fd(s, &s->switch_attr, t->tid, cpu, -1);
	}
	if (fd < 0)
		return fd;
	s->stats.switch_lost_known = s->switch_attr.read_format != 0;
	t->switch_fds[k] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, out_fd) < 0 ||
	    ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	if (array_grow((void **) &s->switch_ids, &s->cap_switch_ids, s->n_switch_ids + 1,
		       sizeof(*s->switch_ids), 16) < 0)
		return -ENOMEM;
	for (i = s->n_switch_ids; i > 0 && s->switch_ids[i - 1] > id; i--)
		s->switch_ids[i] = s->switch_ids[i - 1];
	s->switch_ids[i] = id;
	s->n_switch_ids++;
	return 0;
}

void perf_switch_close(struct sampler *s, struct thread *t)
{
	for (int k = 0; t->switch_fds && k < t->n_switch_fds; k++) {
		uint64_t v[2];          /* { value, lost } (PERF_FORMAT_LOST) */

		if (t->switch_fds[k] < 0)
			continue;
		/* an inherited event's losses are its parent's (the kernel counts them there) */
		if (s->switch_attr.read_format == PERF_FORMAT_LOST &&
		    read(t->switch_fds[k], v, sizeof(v)) == (ssize_t) sizeof(v))
			s->stats.lost_switches += v[1];
		(void) close(t->switch_fds[k]);
	}
	free(t->switch_fds);
	t->switch_fds = NULL;
	t->n_switch_fds = 0;
}

const struct perf_event_attr *perf_sample_attr(const struct sampler *s,
					       const struct perf_event_header *h, size_t *ret_event)
{
	size_t lo = 0, hi = s->n_switch_ids;
	uint64_t id;

	if (ret_event)
		*ret_event = 0;
	if ((!s->opts.wall && !s->n_lead_ids) || h->size < sizeof(*h) + 8)
		return &s->attrs[0];
	memcpy(&id, h + 1, 8);          /* PERF_SAMPLE_IDENTIFIER: first in every one */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->switch_ids[mid] == id)
			return &s->switch_attr;
		if (s->switch_ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	lo = 0;
	hi = s->n_lead_ids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->lead_ids[mid].id == id) {
			if (ret_event)
				*ret_event = s->lead_ids[mid].event;
			return &s->attrs[s->lead_ids[mid].event];
		}
		if (s->lead_ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &s->attrs[0];
}

/* Notes id as a sample id of leader i (sorted in). 0 or -ENOMEM. */
static int lead_id_add(struct sampler *s, uint64_t id, size_t i)
{
	size_t k;

	if (array_grow((void **) &s->lead_ids, &s->cap_lead_ids, s->n_lead_ids + 1,
		       sizeof(*s->lead_ids), 16) < 0)
		return -ENOMEM;
	for (k = s->n_lead_ids; k > 0 && s->lead_ids[k - 1].id > id; k--)
		s->lead_ids[k] = s->lead_ids[k - 1];
	s->lead_ids[k] = (struct lead_id) { .id = id, .event = i };
	s->n_lead_ids++;
	return 0;
}

int perf_leaders_open(struct sampler *s, struct thread *t, int cpu, int out_fd, int *fds)
{
	for (size_t i = 1; i < s->opts.n_events; i++) {
		uint64_t id;
		int r;

		if (!perf_is_leader(s, i))
			continue;
		r = perf_open_fd(s, &s->attrs[i], t->tid, cpu, -1);
		if (r < 0)
			return r;
		fds[i] = r;
		if (ioctl(r, PERF_EVENT_IOC_SET_OUTPUT, out_fd) < 0 ||
		    ioctl(r, PERF_EVENT_IOC_ID, &id) < 0)
			return -errno;
		if (cpu < 0)
			t->ids[i] = id;
		r = lead_id_add(s, id, i);
		if (r < 0)
			return r;
	}
	return 0;
}

int perf_leaders_enable(const struct sampler *s, const int *fds)
{
	for (size_t i = 1; i < s->opts.n_events; i++)
		if (perf_is_leader(s, i) && fds[i] >= 0 && ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0)
			return -errno;
	return 0;
}

int perf_thread_enable(const struct sampler *s, struct thread *t)
{
	if (t->fds[0] >= 0 && ioctl(t->fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) < 0)
		return -errno;
	return perf_leaders_enable(s, t->fds);
}

bool perf_thread_signals_by(const struct sampler *s, const struct thread *t, int fd)
{
	if (fd < 0)
		return false;
	if (fd == t->fds[0])
		return true;
	for (size_t i = 1; i < s->opts.n_events; i++)
		if ((s->lead_signal >> i & 1) && t->fds[i] == fd)
			return true;
	return false;
}

enum sampler_fail perf_fail_reason(int err)
{
	switch (err) {
	case -EMFILE:
	case -ENFILE:
		return SAMPLER_FAIL_FILES;
	case -ENOBUFS:
		return SAMPLER_FAIL_MEMLOCK;
	case -ENOMEM:
		return SAMPLER_FAIL_MEMORY;
	case -E2BIG:
		return SAMPLER_FAIL_TABLE;
	default:
		return SAMPLER_FAIL_OTHER;
	}
}

/* The index of the first left-out tid >= tid. */
static size_t left_out_at(const struct sampler *s, pid_t tid)
{
	size_t lo = 0, hi = s->n_left_out;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->left_out[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool perf_thread_left_out(const struct sampler *s, pid_t tid)
{
	size_t i = left_out_at(s, tid);

	return i < s->n_left_out && s->left_out[i] == tid;
}

int perf_cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

	return x < y ? -1 : x > y;
}

void perf_left_out_prune(struct sampler *s, const pid_t *live, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n_left_out; i++)
		if (bsearch(&s->left_out[i], live, n, sizeof(*live), perf_cmp_tid))
			s->left_out[k++] = s->left_out[i];
	s->n_left_out = k;
}

void perf_thread_failed(struct sampler *s, pid_t tid, enum sampler_fail why, int err)
{
	size_t i = left_out_at(s, tid);

	if (i < s->n_left_out && s->left_out[i] == tid)
		return;                 /* counted already */
	if (s->cap_left_out < MAX_LEFT_OUT)
		(void) array_grow((void **) &s->left_out, &s->cap_left_out, s->n_left_out + 1,
				  sizeof(*s->left_out), 64);
	/* past the bound (or out of memory) it is counted each time it is tried */
	if (s->n_left_out < s->cap_left_out) {
		memmove(s->left_out + i + 1, s->left_out + i, (s->n_left_out - i) * sizeof(*s->left_out));
		s->left_out[i] = tid;
		s->n_left_out++;
	}
	s->stats.threads_failed++;
	s->stats.threads_failed_by[why]++;
	if (why == SAMPLER_FAIL_OTHER)
		s->stats.threads_failed_errno = err;
}

int perf_nofile_raise(bool raise)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (raise && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			(void) getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur > INT_MAX ? INT_MAX : (int) rl.rlim_cur;
}

void perf_raise_nofile(struct sampler *s)
{
	s->fd_limit = perf_nofile_raise(s->opts.raise_nofile);
}

int perf_fd_keep_under(int fd_limit, int fd)
{
	/* fds are given lowest first: fd N means N are in use below it */
	if (fd >= 0 && fd_limit && fd >= fd_limit - FD_RESERVE) {
		(void) close(fd);
		return -EMFILE;
	}
	return fd;
}

int perf_fd_keep(const struct sampler *s, int fd)
{
	return perf_fd_keep_under(s->fd_limit, fd);
}

int perf_open_fd(const struct sampler *s, struct perf_event_attr *a, pid_t tid, int cpu, int group)
{
	return perf_fd_keep(s, perf_event_open(a, tid, cpu, group, PERF_FLAG_FD_CLOEXEC));
}

/* Opens t's event group; the leader wakes us at perf_ring_watermark() of a ring of pages (not
 * in exact mode, which wakes at each sample). */
static int open_group(struct sampler *s, struct thread *t, size_t pages)
{
	struct perf_event_attr lead = s->attrs[0];
	int r;

	if (!s->opts.exact)
		lead.wakeup_watermark = perf_ring_watermark(s, pages);
	for (size_t i = 0; i < s->opts.n_events; i++) {
		if (perf_is_leader(s, i))
			continue;       /* opened once the ring is mapped, into it */
		r = perf_open_fd(s, i ? &s->attrs[i] : &lead, t->tid, -1, i ? t->fds[0] : -1);
		if (r < 0)
			return r;
		t->fds[i] = r;
		if (ioctl(t->fds[i], PERF_EVENT_IOC_ID, &t->ids[i]) < 0)
			return -errno;
	}
	return 0;
}

/* Opens the group and maps its ring, halving the ring while the mmap is over the locked-memory
 * limit (EPERM; ENOMEM alike), down to the floor. */
int perf_open_mapped(struct sampler *s, struct thread *t, long psz)
{
	size_t pages = s->ring_pages;
	int r;

	for (;;) {
		r = open_group(s, t, pages);
		if (r < 0)
			return r;
		t->map_size = (pages + 1) * (size_t) psz;
		t->map = mmap(NULL, t->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, t->fds[0], 0);
		if (t->map != MAP_FAILED)
			break;
		r = -errno;
		t->map = NULL;
		if (r != -EPERM && r != -ENOMEM)
			return r;
		if (pages / 2 < s->ring_floor)
			return r == -EPERM ? -ENOBUFS : r;
		perf_thread_close(s, t);
		pages /= 2;
		s->ring_pages = (unsigned) pages;       /* the next threads start here */
	}
	if (pages < s->stats.ring_pages)
		s->stats.threads_shrunk++;
	if (!s->stats.ring_pages_min || pages < s->stats.ring_pages_min)
		s->stats.ring_pages_min = (unsigned) pages;
	ring_init(&t->ring, t->map, pages * (uint64_t) psz, s->scratch);
	return 0;
}

int perf_thread_open(struct sampler *s, struct thread *t)
{
	for (size_t i = 0; i < SAMPLER_MAX_EVENTS; i++)
		t->fds[i] = -1;
	t->map = NULL;
	t->out_fd = -1;
	t->slot = -1;
	t->prog = false;
	memset(t->last, 0, sizeof(t->last));
	memset(&t->budget, 0, sizeof(t->budget));
	t->budget.since_ns = clock_now_ns();
	return s->layout->thread_open(s, t);
}

int perf_thread_signal(struct sampler *s, struct thread *t, bool on)
{
	for (size_t i = 0; i < s->opts.n_events; i++) {
		int fd = t->fds[i], fl;

		if (!perf_thread_signals_by(s, t, fd))
			continue;
		fl = fcntl(fd, F_GETFL);
		if (fl < 0)
			return -errno;
		if (on && fcntl(fd, F_SETSIG, s->signo) < 0)
			return -errno;
		/* clearing O_ASYNC takes the fd off the fasync list: no signal is sent after this */
		if (fcntl(fd, F_SETFL, on ? fl | O_ASYNC : fl & ~O_ASYNC) < 0)
			return -errno;
	}
	return 0;
}

void perf_thread_disable(struct thread *t)
{
	for (int k = 0; t->switch_fds && k < t->n_switch_fds; k++)
		if (t->switch_fds[k] >= 0)
			(void) ioctl(t->switch_fds[k], PERF_EVENT_IOC_DISABLE, 0);
	percpu_thread_disable(t);
	if (t->fds[0] >= 0)
		(void) ioctl(t->fds[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
	/* the events that sample on their own (a member disabled too is enabled again with its
	 * group) */
	for (int i = 1; i < SAMPLER_MAX_EVENTS; i++)
		if (t->fds[i] >= 0)
			(void) ioctl(t->fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

void perf_thread_close(struct sampler *s, struct thread *t)
{
	perf_thread_disable(t);
	percpu_thread_close(s, t);
	perf_switch_close(s, t);
	capture_thread_close(s, t);
	if (t->map)
		(void) munmap(t->map, t->map_size);
	t->map = NULL;
	for (int i = SAMPLER_MAX_EVENTS - 1; i >= 0; i--) {
		if (t->fds[i] >= 0)
			(void) close(t->fds[i]);
		t->fds[i] = -1;
	}
}

void perf_hand(struct sampler *s, struct sample *smp)
{
	if (!s->opts.capture)           /* the capture program's: counted at its match */
		s->stats.captured += smp->capture != NULL;
	s->stats.samples++;
	/* an exec seen since the last sample is told just before the next (sampler.h) */
	if (s->stats.execs != s->execs_told) {
		s->execs_told = s->stats.execs;
		sampler_tell(s, SAMPLER_EVENT_EXEC, s->pid);
	}
	s->fn(s->ctx, smp);
}

/* Hands the sample h of thread t to the callback; last: the running totals of t's group at its
 * previous sample (where the group read goes: group members in the group's order). In signal
 * mode a sample read before its signal's record may be held (latehold.c). */
void perf_deliver(struct sampler *s, struct thread *t, const struct perf_event_header *h,
		  bool stopped, uint64_t *last)
{
	size_t ev;
	const struct perf_event_attr *attr = perf_sample_attr(s, h, &ev);
	struct ring_group g = { 0 };
	struct sample smp;
	uint64_t period;
	bool sig;

	if (ring_parse_sample(attr, h, h->size, &smp, &g) < 0)
		return;
	if (s->sig && sigcap_excluded(s->sig, smp.tid)) {
		s->stats.signal_self++;         /* the caller's own thread: no part of the profile */
		return;
	}
	smp.off_cpu = s->opts.off_cpu || attr == &s->switch_attr;
	smp.event = ev;
	if (s->layout->inherit && !perf_pid_followed(s, smp.pid))
		return;                 /* a child process, which inherited the events */
	/* a leader that does not stop its thread is read after its sample */
	smp.stopped = stopped && smp.tid == t->tid && (ev == 0 || (s->lead_signal >> ev & 1));
	sig = !s->opts.capture && s->sig && s->capture.held && !smp.off_cpu;
	if (s->opts.capture) {
		smp.capture = capture_match(s, t, &smp);
		s->stats.captured += smp.capture != NULL;
	}
	period = smp.values[0];
	if (smp.off_cpu) {
		smp.values[0] = 1;              /* the switch: its weight is the recorder's */
		smp.n_values = s->opts.n_events;
	} else if (ev > 0) {
		/* an event that samples on its own: its period, or what it counted since its last
		 * sample on this thread (its own value, read with it) */
		uint64_t w = smp.values[0];

		if ((s->lead_by_count >> ev & 1) && g.nr == 1) {
			w = g.value[0] >= last[ev] ? g.value[0] - last[ev] : 0;
			last[ev] = g.value[0];
		}
		memset(smp.values, 0, sizeof(smp.values));
		smp.values[ev] = w;
		smp.n_values = s->opts.n_events;
	} else if (s->opts.n_events > 1 || s->weigh_by_count) {
		/* group totals -> what each member (and the leader, if it weighs by its count)
		 * counted since this thread's last sample */
		for (size_t i = s->weigh_by_count ? 0 : 1; i < s->opts.n_events; i++) {
			if (perf_is_leader(s, i))
				continue;       /* not in the group: 0 at this sample */
			for (uint64_t k = 0; k < g.nr; k++) {
				/* inherited events read their parent's ids: per-CPU groups go by
				 * position, the group's order */
				if (s->layout->inherit ? k != (i ? s->group_pos[i] : 0) : g.id[k] != t->ids[i])
					continue;
				smp.values[i] = g.value[k] >= last[i] ? g.value[k] - last[i] : 0;
				last[i] = g.value[k];
			}
		}
		smp.n_values = s->opts.n_events;
	}
	if (!t->budget.first_sample_ns)
		t->budget.first_sample_ns = smp.time_ns;
	if (sig) {
		/* the thread's samples held before this one first (their records come first) */
		late_retry(s, smp.tid, false);
		if (!late_pair(s, &smp, period) && late_hold(s, h, &smp, period))
			return;
	}
	perf_hand(s, &smp);
}

/* A PERF_RECORD_SWITCH of a target thread (off-CPU): its sample_id (sample_id_all) starts with
 * { u32 pid, tid } and { u64 time } (PERF_SAMPLE_TID | PERF_SAMPLE_TIME, always set). */
static void switch_record(struct sampler *s, const struct perf_event_header *h)
{
	struct sampler_event e = { .sampler = s };
	uint32_t ids[2];

	if ((!s->opts.off_cpu && !s->opts.wall) || h->size < sizeof(*h) + 16)
		return;
	memcpy(ids, h + 1, sizeof(ids));
	memcpy(&e.time_ns, (const unsigned char *) (h + 1) + 8, 8);
	if (!perf_pid_followed(s, (pid_t) ids[0]))
		return;                 /* a child process, which inherited the events */
	e.tid = (pid_t) ids[1];
	e.kind = h->misc & PERF_RECORD_MISC_SWITCH_OUT ? SAMPLER_EVENT_SWITCH_OUT
						       : SAMPLER_EVENT_SWITCH_IN;
	e.preempted = e.kind == SAMPLER_EVENT_SWITCH_OUT &&
		      (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	if (s->opts.event_fn)
		s->opts.event_fn(s->opts.event_ctx, &e);
}

/* A PERF_RECORD_COMM { u32 pid, tid; char comm[] } of an exec in a followed child process. */
static void comm_record(struct sampler *s, const struct perf_event_header *h)
{
	uint32_t ids[2];

	if (!s->opts.subprocesses || !(h->misc & PERF_RECORD_MISC_COMM_EXEC) ||
	    h->size < sizeof(*h) + sizeof(ids))
		return;
	memcpy(ids, h + 1, sizeof(ids));
	if ((pid_t) ids[0] != s->pid)
		sampler_tell(s, SAMPLER_EVENT_CHILD_EXEC, (pid_t) ids[0]);
}

void perf_note_record(struct sampler *s, const struct perf_event_header *h)
{
	if (h->type == PERF_RECORD_SWITCH)
		switch_record(s, h);
	else if (h->type == PERF_RECORD_COMM)
		comm_record(s, h);
	else if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16) {
		s->stats.lost += ((const uint64_t *) (h + 1))[1];
		/* capture records among them: their names never reach the reader */
		(void) sampler_capture_forget(s);
	}
	else if (h->type == PERF_RECORD_THROTTLE)
		s->stats.throttled++;
}

void perf_thread_drain(struct sampler *s, struct thread *t, bool stopped)
{
	(void) perf_thread_drain_some(s, t, stopped, 1u << 16);
}

bool perf_thread_drain_some(struct sampler *s, struct thread *t, bool stopped, unsigned max)
{
	const struct perf_event_header *h = NULL;
	unsigned budget = max;

	if (!t->map)
		return false;
	ring_read_init(&t->ring);
	while (budget && (h = ring_read_event(&t->ring))) {
		budget--;
		switch (h->type) {
		case PERF_RECORD_SAMPLE:
			if (t->out_fd >= 0 && h->size >= sizeof(*h) + 8 &&
			    !memcmp(h + 1, &t->out_id, 8))
				capture_hold(s, t->tid, h);
			else
				perf_deliver(s, t, h, stopped, t->last);
			break;
		default:
			perf_note_record(s, h);
			break;
		}
	}
	capture_settle(&s->capture);
	ring_read_done(&t->ring);
	return !budget && t->ring.tail != t->ring.head;
}
