/*
 * capture: exact stacks without stopping the target. A BPF program attached to each thread's
 * sampling event runs at every overflow, in the kernel, in the sampled thread's context: from
 * the thread's root pointer (its PyThreadState, set by the caller per thread) it follows a
 * chain of nodes (Python frames) and copies the first node_bytes of each into a record that
 * goes, through a BPF_OUTPUT event redirected into the ring the sample goes to, just before the
 * sample itself: per thread (a thread's own event and ring, its slot in the out map) or, in the
 * per-CPU layout (percpu.c), the current CPU's (a CPU-wide event per CPU, BPF_F_CURRENT_CPU;
 * the roots map, keyed by tid, gets each thread as hwspy learns of it, or as the program finds
 * a new thread's root itself at its first sample: capture_prog.c). perf.c / percpu.c pair
 * the two; the sample then carries the capture.
 *
 * The program, generated for one spec, and the record it sends: capture_prog.c. Here: its maps,
 * the threads' entries and slots, and the records' pairing with their samples.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "sampler/internal.h"

#define CAPTURE_MAX_THREADS 4096
#define PROC_PID_INIT_INO 0xEFFFFFFCu   /* the initial PID namespace's inode (fixed) */


static int sys_bpf(int cmd, union bpf_attr *attr)
{
	long r = syscall(SYS_bpf, cmd, attr, sizeof(*attr));

	return r < 0 ? -errno : (int) r;
}

static int map_create(uint32_t type, uint32_t key, uint32_t value, uint32_t entries)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = type;
	a.key_size = key;
	a.value_size = value;
	a.max_entries = entries;
	return sys_bpf(BPF_MAP_CREATE, &a);
}

static int map_update_flags(int fd, const void *key, const void *value, uint64_t flags)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t) fd;
	a.key = (uintptr_t) key;
	a.value = (uintptr_t) value;
	a.flags = flags;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
}

static int map_update(int fd, const void *key, const void *value)
{
	return map_update_flags(fd, key, value, BPF_ANY);
}

static int map_lookup(int fd, const void *key, void *value)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t) fd;
	a.key = (uintptr_t) key;
	a.value = (uintptr_t) value;
	return sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
}

static int map_delete(int fd, const void *key)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t) fd;
	a.key = (uintptr_t) key;
	return sys_bpf(BPF_MAP_DELETE_ELEM, &a);
}

/* The BTF of a program with bpf_loop's callback (the verifier takes the callback's address
 * only from a program whose functions BTF describes): int capture(void *ctx), static; int
 * node(int i, void *ctx), static. Types 1 int, 2 void *, 3 and 4 their prototypes, 5 and 6
 * the functions. */
static const char btf_strings[] = "\0int\0ctx\0i\0capture\0node";
enum { BTF_S_INT = 1, BTF_S_CTX = 5, BTF_S_I = 9, BTF_S_CAPTURE = 11, BTF_S_NODE = 19 };
enum { BTF_T_MAIN = 5, BTF_T_NODE = 6 };
static const uint32_t btf_types[] = {
	BTF_S_INT, BTF_KIND_INT << 24, 4, (BTF_INT_SIGNED << 24) | 32,
	0, BTF_KIND_PTR << 24, 0,
	0, (BTF_KIND_FUNC_PROTO << 24) | 1, 1, BTF_S_CTX, 2,
	0, (BTF_KIND_FUNC_PROTO << 24) | 2, 1, BTF_S_I, 1, BTF_S_CTX, 2,
	BTF_S_CAPTURE, (BTF_KIND_FUNC << 24) | BTF_FUNC_STATIC, 3,
	BTF_S_NODE, (BTF_KIND_FUNC << 24) | BTF_FUNC_STATIC, 4,
};

static int btf_load(void)
{
	struct btf_header h = { .magic = BTF_MAGIC, .version = 1, .hdr_len = sizeof(h),
				.type_off = 0, .type_len = sizeof(btf_types),
				.str_off = sizeof(btf_types), .str_len = sizeof(btf_strings) };
	unsigned char blob[sizeof(h) + sizeof(btf_types) + sizeof(btf_strings)];
	union bpf_attr a;

	memcpy(blob, &h, sizeof(h));
	memcpy(blob + sizeof(h), btf_types, sizeof(btf_types));
	memcpy(blob + sizeof(h) + sizeof(btf_types), btf_strings, sizeof(btf_strings));
	memset(&a, 0, sizeof(a));
	a.btf = (uintptr_t) blob;
	a.btf_size = sizeof(blob);
	return sys_bpf(BPF_BTF_LOAD, &a);
}

/* callback: where bpf_loop's callback starts (0: none), its BTF btf_fd */
static int prog_load(const struct bpf_insn *insn, size_t n, size_t callback, int btf_fd)
{
	struct bpf_func_info info[2] = { { 0, BTF_T_MAIN }, { (uint32_t) callback, BTF_T_NODE } };
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	a.insns = (uintptr_t) insn;
	a.insn_cnt = (uint32_t) n;
	/* probe_read_user and perf_event_output are GPL-only helpers; hwspy is MIT */
	a.license = (uintptr_t) "Dual MIT/GPL";
	if (callback) {
		a.prog_btf_fd = (uint32_t) btf_fd;
		a.func_info_rec_size = sizeof(info[0]);
		a.func_info = (uintptr_t) info;
		a.func_info_cnt = 2;
	}
	return sys_bpf(BPF_PROG_LOAD, &a);
}

/* The capture program for spec into insn (CAPTURE_MAX_INSNS): with bpf_loop where this kernel
 * takes it (5.17+; c->loop_helper says which), else with a bounded loop: its fd, or -errno. */
static int capture_prog_load(struct capture *c, const struct sampler_capture_spec *spec,
			     struct bpf_insn *insn)
{
	size_t n, callback;
	int r = -EINVAL;

	if (!c->no_loop_helper) {
		if (c->btf_fd < 0)
			c->btf_fd = btf_load();
		r = c->btf_fd < 0 ? c->btf_fd :
		    capture_generate(spec, c, true, insn, CAPTURE_MAX_INSNS, &n, &callback);
		if (r == 0)
			r = prog_load(insn, n, callback, c->btf_fd);
		c->loop_helper = r >= 0;
		if (r >= 0 || r == -EPERM)
			return r;
	}
	c->loop_helper = false;         /* (a program before may have had it) */
	r = capture_generate(spec, c, false, insn, CAPTURE_MAX_INSNS, &n, &callback);
	return r == 0 ? prog_load(insn, n, 0, -1) : r;
}

int sampler_capture_probe(void)
{
	struct sampler_capture_spec spec = { 0, SAMPLER_CAPTURE_NO_OFF, 16, 0 };
	struct capture c = CAPTURE_INIT;
	int r = capture_load(&c, &spec);

	capture_close(&c);
	return r;
}

int capture_pidns(struct capture *c)
{
	struct stat st;

	c->pidns_chosen = true;
	c->pidns = false;
	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;          /* no procfs: taken for the initial namespace */
	c->pidns = st.st_ino != PROC_PID_INIT_INO;
	/* the kernel compares its own dev_t encoding (MKDEV: major << 20 | minor) */
	c->pidns_dev = ((uint64_t) major(st.st_dev) << 20) | minor(st.st_dev);
	c->pidns_ino = st.st_ino;
	return 0;
}

int capture_entry_load(struct capture *c)
{
	struct bpf_insn insn[8];
	size_t n;
	int r;

	if (c->entry_fd >= 0)
		return 0;
	if (c->progs_fd < 0) {
		r = map_create(BPF_MAP_TYPE_PROG_ARRAY, 4, 4, 1);
		if (r < 0)
			return r;
		c->progs_fd = r;
	}
	r = capture_generate_entry(c->progs_fd, insn, sizeof(insn) / sizeof(insn[0]), &n);
	if (r == 0)
		r = prog_load(insn, n, 0, -1);
	if (r < 0)
		return r;
	c->entry_fd = r;
	return 0;
}

/* Whether a and b lay out a node and its extras alike (a record of one reads as the other's). */
static bool capture_same_nodes(const struct sampler_capture_spec *a,
			       const struct sampler_capture_spec *b)
{
	if (a->node_bytes != b->node_bytes || a->next_off != b->next_off ||
	    a->n_extras != b->n_extras || a->n_identity != b->n_identity ||
	    a->n_extras > SAMPLER_CAPTURE_MAX_EXTRAS)
		return false;
	for (uint32_t i = 0; i < a->n_extras; i++)
		if (a->extra[i].from != b->extra[i].from || a->extra[i].off != b->extra[i].off ||
		    a->extra[i].len != b->extra[i].len || a->extra[i].mask != b->extra[i].mask)
			return false;
	return true;
}

int capture_load(struct capture *c, const struct sampler_capture_spec *spec)
{
	struct bpf_insn *insn;
	int r;

	if (!capture_spec_ok(spec))
		return -EINVAL;
	if (!c->pidns_chosen)
		(void) capture_pidns(c);
	if (c->roots_fd < 0) {
		r = map_create(BPF_MAP_TYPE_HASH, 4, sizeof(struct root_value), CAPTURE_MAX_THREADS);
		if (r < 0)
			return r;
		c->roots_fd = r;
		r = map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, CAPTURE_MAX_THREADS);
		if (r < 0)
			return r;
		c->out_fd = r;
	}
	if (c->known_fd < 0 && spec->n_identity) {
		/* where it cannot be made, every record carries every name */
		r = map_create(BPF_MAP_TYPE_ARRAY, 4, 8 * (CAPTURE_KNOWN_WAYS + 1),
			       1U << CAPTURE_KNOWN_BITS);
		if (r >= 0) {
			c->known_fd = r;
			r = map_create(BPF_MAP_TYPE_ARRAY, 4, 4, 1);
			if (r < 0) {
				(void) close(c->known_fd);
				c->known_fd = -1;
			}
			c->epoch_fd = r;
		}
	}
	/* a new image (an exec): its reader knows none of the names */
	if (c->prog_fd >= 0)
		(void) capture_forget(c);
	if (c->scratch_fd >= 0)
		(void) close(c->scratch_fd);
	c->scratch_fd = -1;
	r = map_create(BPF_MAP_TYPE_ARRAY, 4, (uint32_t) capture_scratch_size(spec),
		       (uint32_t) (get_nprocs_conf() > 0 ? get_nprocs_conf() : 1));
	if (r < 0)
		return r;
	c->scratch_fd = r;
	insn = malloc(CAPTURE_MAX_INSNS * sizeof(*insn));
	if (!insn)
		return -ENOMEM;
	r = capture_prog_load(c, spec, insn);
	free(insn);
	if (r < 0)
		return r;
	if (c->prog_fd >= 0)
		(void) close(c->prog_fd);
	c->prog_fd = r;
	/* another spec's identities are laid out otherwise: none of them serves; the same
	 * layout's (a program made again for the GIL or the GC found late) serve the old
	 * program's records still on their way (forgotten above: kept for them) */
	if (!capture_same_nodes(&c->spec, spec))
		capture_ids_free(c);
	c->spec = *spec;
	c->max_nodes = capture_prog_nodes(spec, c->loop_helper);
	return 0;
}

int capture_publish(struct capture *c)
{
	uint32_t slot0 = 0;
	int r;

	if (c->progs_fd < 0 || c->prog_fd < 0)
		return 0;
	r = map_update(c->progs_fd, &slot0, &c->prog_fd);
	if (r < 0) {
		(void) close(c->prog_fd);
		c->prog_fd = -1;
	}
	return r;
}

int capture_forget(struct capture *c)
{
	uint32_t key = 0, epoch = c->epoch;
	int r;

	capture_ids_forget(c);
	if (c->epoch_fd < 0)
		return 0;
	/* past the epochs the program moved on to itself (an output that failed): the next
	 * multiple of CAPTURE_EPOCH_STEP, an epoch no check was made in yet */
	(void) map_lookup(c->epoch_fd, &key, &epoch);
	epoch = (epoch | (CAPTURE_EPOCH_STEP - 1)) + 1;
	r = map_update(c->epoch_fd, &key, &epoch);
	if (r == 0)
		c->epoch = epoch;
	return r;
}

void capture_close(struct capture *c)
{
	int *fds[] = { &c->entry_fd, &c->progs_fd, &c->prog_fd, &c->roots_fd, &c->scratch_fd,
		       &c->out_fd, &c->known_fd, &c->epoch_fd, &c->btf_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			(void) close(*fds[i]);
		*fds[i] = -1;
	}
	free(c->slots);
	c->slots = NULL;
	free(c->held);
	c->held = NULL;
	free(c->names);
	c->names = NULL;
	capture_ids_free(c);
}

/* ---- threads ---- */

static int slot_take(struct capture *c)
{
	if (!c->slots) {
		c->slots = calloc(CAPTURE_MAX_THREADS / 8, 1);
		if (!c->slots)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < CAPTURE_MAX_THREADS; i++) {
		if (!(c->slots[i / 8] & (1u << (i % 8)))) {
			c->slots[i / 8] |= (unsigned char) (1u << (i % 8));
			return (int) i;
		}
	}
	return -E2BIG;
}

static void slot_put(struct capture *c, int slot)
{
	if (c->slots && slot >= 0 && slot < CAPTURE_MAX_THREADS)
		c->slots[slot / 8] &= (unsigned char) ~(1u << (slot % 8));
}

/* A BPF_OUTPUT event's attr: its records are told apart from samples by their id. */
static const struct perf_event_attr out_attr = {
	.size = sizeof(out_attr), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_BPF_OUTPUT,
	.sample_period = 1, .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_RAW,
	.use_clockid = 1, .clockid = CLOCK_MONOTONIC,
};

int capture_cpu_open(struct sampler *s, int c)
{
	struct cpu_ring *cr = &s->cpus[c];
	struct perf_event_attr a = out_attr;
	uint32_t key = (uint32_t) c;
	int r;

	if (s->capture.prog_fd < 0 || cr->fd < 0 || cr->out_fd >= 0)
		return 0;
	/* bpf_perf_event_output() writes only to an event on the current CPU: a CPU-wide one */
	r = perf_open_fd(s, &a, -1, c, -1);
	if (r < 0)
		return r;
	cr->out_fd = r;
	if (ioctl(cr->out_fd, PERF_EVENT_IOC_ID, &cr->out_id) < 0 ||
	    ioctl(cr->out_fd, PERF_EVENT_IOC_SET_OUTPUT, cr->fd) < 0) {
		r = -errno;
		capture_cpu_close(s, c);
		return r;
	}
	r = map_update(s->capture.out_fd, &key, &cr->out_fd);
	if (r < 0)
		capture_cpu_close(s, c);
	return r;
}

void capture_cpu_close(struct sampler *s, int c)
{
	struct cpu_ring *cr = &s->cpus[c];
	uint32_t key = (uint32_t) c;

	if (cr->out_fd < 0)
		return;
	if (s->capture.out_fd >= 0)
		(void) map_delete(s->capture.out_fd, &key);
	(void) close(cr->out_fd);
	cr->out_fd = -1;
	cr->out_id = 0;
}

/* Asks the caller for thread tid's root (SAMPLER_EVENT_CAPTURE_THREAD): what it answered with
 * sampler_capture_set_root() from inside the event, or 0. */
static uint64_t capture_ask_root(struct sampler *s, pid_t tid)
{
	struct capture *c = &s->capture;

	c->asking = tid;
	c->answer = 0;
	sampler_tell(s, SAMPLER_EVENT_CAPTURE_THREAD, tid);
	c->asking = 0;
	return c->answer;
}

void capture_thread_root(struct sampler *s, struct thread *t)
{
	struct root_value v = { 0 };
	uint32_t key = (uint32_t) t->tid;
	int r;

	if (s->capture.prog_fd < 0)
		return;
	v.root = capture_ask_root(s, t->tid);
	/* a root not found yet leaves the one the program may have found in place */
	r = map_update_flags(s->capture.roots_fd, &key, &v, v.root ? BPF_ANY : BPF_NOEXIST);
	if (r == 0 || r == -EEXIST)
		t->slot = 0;            /* per CPU: it has an entry in the roots map */
}

/* Per CPU: the entry program on each of t's groups from their open, so that every thread they
 * are inherited by has it, whenever the capture starts (a thread started before has its
 * parent's events without it, and the kernel swaps the events of a task and its clone at a
 * context switch between them: the parent would then run uncaptured); its root once the
 * program is there. */
static int capture_thread_open_percpu(struct sampler *s, struct thread *t)
{
	size_t n = s->opts.n_events;

	if (s->capture.entry_fd < 0)
		return 0;
	for (int c = 0; !t->prog && t->cpu_fds && c < s->ncpu; c++) {
		int fd = t->cpu_fds[(size_t) c * n];
		int sw = t->switch_fds ? t->switch_fds[c] : -1;

		if ((fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, s->capture.entry_fd) < 0) ||
		    (sw >= 0 && ioctl(sw, PERF_EVENT_IOC_SET_BPF, s->capture.entry_fd) < 0))
			return -errno;
		/* the events that sample on their own: their overflows are captured too */
		for (size_t i = 1; fd >= 0 && i < n; i++) {
			int lead = t->cpu_fds[(size_t) c * n + i];

			if (perf_is_leader(s, i) && lead >= 0 &&
			    ioctl(lead, PERF_EVENT_IOC_SET_BPF, s->capture.entry_fd) < 0)
				return -errno;
		}
	}
	t->prog = t->cpu_fds != NULL;
	if (s->capture.prog_fd < 0)
		return 0;               /* the program comes later, into the entry's slot */
	capture_thread_root(s, t);
	return t->slot == 0 ? 0 : -E2BIG;
}

int capture_thread_open(struct sampler *s, struct thread *t)
{
	struct capture *c = &s->capture;
	struct perf_event_attr a = out_attr;
	struct root_value v = { 0 };
	uint32_t key = (uint32_t) t->tid, slot;
	int r;

	if (s->capture.percpu)
		return capture_thread_open_percpu(s, t);
	if (c->prog_fd < 0 || t->fds[0] < 0 || t->out_fd >= 0)
		return 0;
	r = slot_take(c);
	if (r < 0)
		return r;
	t->slot = r;
	slot = (uint32_t) r;
	r = perf_open_fd(s, &a, t->tid, -1, -1);
	if (r < 0)
		goto fail;
	t->out_fd = r;
	if (ioctl(t->out_fd, PERF_EVENT_IOC_ID, &t->out_id) < 0 ||
	    ioctl(t->out_fd, PERF_EVENT_IOC_SET_OUTPUT, t->fds[0]) < 0) {
		r = -errno;
		goto fail;
	}
	r = map_update(c->out_fd, &slot, &t->out_fd);
	if (r < 0)
		goto fail;
	v.slot = slot;
	v.root = capture_ask_root(s, t->tid);
	r = map_update(c->roots_fd, &key, &v);
	if (r < 0)
		goto fail;
	if (ioctl(t->fds[0], PERF_EVENT_IOC_SET_BPF, c->prog_fd) < 0 ||
	    (t->switch_fds && t->switch_fds[0] >= 0 &&
	     ioctl(t->switch_fds[0], PERF_EVENT_IOC_SET_BPF, c->prog_fd) < 0)) {
		r = -errno;
		goto fail;
	}
	for (size_t i = 1; i < s->opts.n_events; i++) {
		if (perf_is_leader(s, i) && t->fds[i] >= 0 &&
		    ioctl(t->fds[i], PERF_EVENT_IOC_SET_BPF, c->prog_fd) < 0) {
			r = -errno;
			goto fail;
		}
	}
	t->prog = true;
	return 0;
fail:
	capture_thread_close(s, t);
	return r;
}

void capture_thread_close(struct sampler *s, struct thread *t)
{
	struct capture *c = &s->capture;
	uint32_t key = (uint32_t) t->tid;

	if (s->sig)
		sigcap_thread_exit(s->sig, t->tid);     /* its slot freed after this drain */
	if (t->slot >= 0) {
		uint32_t slot = (uint32_t) t->slot;

		if (c->out_fd >= 0 && !s->capture.percpu)     /* per CPU: the out map is the CPUs' */
			(void) map_delete(c->out_fd, &slot);
		slot_put(c, t->slot);
	}
	/* per CPU, the program may have made the entry of a thread learned late */
	if (c->roots_fd >= 0 && (t->slot >= 0 || s->capture.percpu))
		(void) map_delete(c->roots_fd, &key);
	t->slot = -1;
	if (t->out_fd >= 0)
		(void) close(t->out_fd);
	t->out_fd = -1;
	t->out_id = 0;
	if (c->held_tid == t->tid)
		c->held_len = 0;
	if (c->names_tid == t->tid)
		c->names_len = 0;
}

int sampler_capture_set_root(struct sampler *s, pid_t tid, uint64_t root)
{
	struct capture *c = &s->capture;
	struct root_value v = { .root = root };
	uint32_t key = (uint32_t) tid;

	if (s->sig)
		return sigcap_set_root(s->sig, tid, root);
	if (c->asking && c->asking == tid) {
		/* the thread's entry is made with it when the event returns */
		c->answer = root;
		return 0;
	}
	for (size_t i = 0; i < s->n_threads; i++) {
		struct thread *t = &s->threads[i];

		if (t->tid != tid || !t->alive || t->slot < 0)
			continue;
		v.slot = (uint32_t) t->slot;
		return map_update(c->roots_fd, &key, &v);
	}
	return -ENOENT;
}

/* sampler_capture_start(), or with regs_only a program of the switches' registers alone. */
static int capture_start(struct sampler *s, const struct sampler_capture_spec *spec,
			 bool regs_only)
{
	bool again = s->capture.prog_fd >= 0;
	int r;

	if (s->sig) {
		/* the signal's handler copies what the program would (sigcapture.h) */
		if (!s->capture.held && !(s->capture.held = malloc(RING_SCRATCH_SIZE)))
			return -ENOMEM;
		r = sigcap_start(s->sig, spec, s->opts.freq);
		if (r == 0) {
			s->capture.spec = *spec;
			s->stats.capture_max_nodes = SAMPLER_CAPTURE_MAX_NODES;
		}
		return r;
	}
	if (!s->opts.capture)
		return -EINVAL;
	if (!s->capture.held) {
		s->capture.held = malloc(RING_SCRATCH_SIZE);
		if (!s->capture.held)
			return -ENOMEM;
	}
	if (!s->capture.names && capture_split(spec)) {
		s->capture.names = malloc(RING_SCRATCH_SIZE);
		if (!s->capture.names)
			return -ENOMEM;
	}
	s->capture.pid = s->pid ? s->pid : s->opts.pid;
	if (s->capture.percpu && (r = capture_entry_load(&s->capture)) < 0)
		return r;
	s->capture.regs_only = regs_only;
	r = capture_load(&s->capture, spec);
	if (r < 0)
		return r;
	s->stats.capture_max_nodes = (unsigned) s->capture.max_nodes;
	s->stats.capture_versions = capture_caches_codes(&s->capture, spec, s->capture.loop_helper) ?
				    1 + (int) spec->version_kind : 0;
	/* per CPU, the program runs once it is in the entry's slot (capture_publish(), below):
	 * each CPU's output first, so that no record of its goes nowhere */
	/* the roots of the image before an exec, the program's included, are no roots now */
	for (size_t i = 0; again && i < s->n_threads; i++) {
		uint32_t key = (uint32_t) s->threads[i].tid;

		(void) map_delete(s->capture.roots_fd, &key);
	}
	for (int c = 0; s->capture.percpu && c < s->ncpu; c++)
		if (capture_cpu_open(s, c) < 0)
			s->stats.capture_threads_failed++;
	for (size_t i = 0; i < s->n_threads; i++) {
		struct thread *t = &s->threads[i];

		if (!t->alive)
			continue;
		if (s->capture.percpu && !t->cpu_fds) {         /* inherited: it has the program */
			capture_thread_root(s, t);
			continue;
		}
		if (again && t->prog && !s->capture.percpu) {
			/* a program stays on its event until the event is closed: open them anew
			 * (per CPU, the entry on the events runs the new one: closing a thread's
			 * events would take them from the threads that inherited them) */
			perf_thread_drain(s, t, false);
			perf_thread_close(s, t);
			r = perf_thread_open(s, t);
			if (r < 0) {
				/* no events any more: the thread is left out, and says why */
				t->alive = false;
				if (r != -ESRCH)
					perf_thread_failed(s, t->tid, perf_fail_reason(r), r);
				continue;
			}
		} else {
			r = capture_thread_open(s, t);
		}
		if (r < 0)
			s->stats.capture_threads_failed++;
	}
	return capture_publish(&s->capture);
}

int sampler_capture_start(struct sampler *s, const struct sampler_capture_spec *spec)
{
	return capture_start(s, spec, false);
}

int capture_start_regs(struct sampler *s)
{
	static const struct sampler_capture_spec none = {
		.head_off2 = SAMPLER_CAPTURE_NO_OFF, .node_bytes = 8,
	};

	return capture_start(s, &none, true);
}

bool sampler_capturing(const struct sampler *s)
{
	return s->capture.prog_fd >= 0 || (s->sig && s->capture.held);
}

int sampler_capture_forget(struct sampler *s)
{
	return s->capture.prog_fd >= 0 ? capture_forget(&s->capture) : 0;
}

int sampler_capture_error(const struct sampler *s)
{
	return s->capture_error;
}

/* ---- records ---- */

void capture_hold(struct sampler *s, pid_t tid, const struct perf_event_header *h)
{
	struct capture *c = &s->capture;
	const unsigned char *p = (const unsigned char *) (h + 1) + 8;   /* past the identifier */
	size_t avail = h->size - sizeof(*h) - 8;
	uint32_t len = 0, magic = 0;

	if (h->size >= sizeof(*h) + 12)
		memcpy(&len, p, 4);
	if (len >= 4 && len <= avail - 4)
		memcpy(&magic, p + 4, 4);
	if (magic == CAPTURE_NAMES_MAGIC) {
		/* a names area, for the nodes record right after it */
		if (c->names_len)
			(void) capture_forget(c);
		c->names_len = 0;
		if (len > RING_SCRATCH_SIZE || !c->names)
			return;
		c->names_at = p + 4;
		c->names_len = len;
		c->names_tid = tid;
		return;
	}
	/* the one held before never met its sample: its names did not reach the reader */
	if (c->held_len)
		(void) capture_forget(c);
	c->held_len = 0;
	if (!c->held || len < CAPTURE_HDR || len > avail - 4 || len > RING_SCRATCH_SIZE)
		return;
	c->held_at = p + 4;
	c->held_len = len;
	c->held_tid = tid;
}

void capture_settle(struct capture *c)
{
	if (c->held_len && c->held_at != c->held) {
		memmove(c->held, c->held_at, c->held_len);
		c->held_at = c->held;
	}
	if (c->names_len && c->names_at != c->names) {
		memmove(c->names, c->names_at, c->names_len);
		c->names_at = c->names;
	}
}

/* The names area held for a split record with h's names_end: where its slots start, and how
 * many (0: none; NULL where the record says some were sent but they did not come whole). */
static const unsigned char *capture_names_take(struct capture *c, const struct capture_record *h,
					       pid_t tid, size_t *ret_n)
{
	size_t want = h->names_end ? h->names_end - h->names_at : 0, len = c->names_len;
	size_t slot = capture_names_stride(&c->spec);

	*ret_n = 0;
	c->names_len = 0;
	if (!want || !slot)
		return NULL;
	/* a raw record's size counts the padding to 8 bytes that follows its data */
	if (len < want || len >= want + 8 || (c->names_tid && c->names_tid != tid) || want < CAPTURE_NAMES_HDR ||
	    (want - CAPTURE_NAMES_HDR) % slot) {
		/* lost on the way (a full ring): the program thinks the reader has them */
		(void) capture_forget(c);
		return NULL;
	}
	*ret_n = (want - CAPTURE_NAMES_HDR) / slot;
	return c->names_at + CAPTURE_NAMES_HDR;
}

/* Where a thread that left the CPU was (SAMPLE_WAIT_*), from the user registers the program
 * found (read_switch_regs()): a system call not yet returned (its entry's registers, whose ax
 * the kernel sets to -ENOSYS until the call returns: by the syscall instruction's cx and r11,
 * or FRED's event type 7, vector 1 in ss's upper bits); a page fault where FRED says so (type
 * 3, vector 14); else the kernel, with the entry code's address where the frame is not FRED's
 * (the kernel sets orig_ax -1 at every entry but a syscall's: the entry tells them apart). */
static void switch_wait(const struct capture_record *h, struct sample_capture *out)
{
	uint64_t type = h->ss >> 48 & 0xf, vector = h->ss >> 32 & 0xff;
	bool fred = h->ss >> 16 != 0;
	bool syscall = h->regs_syscall == 1 || (fred && type == 7 && vector == 1);

	out->wait = h->regs_found == 2 ? SAMPLE_WAIT_UNKNOWN : SAMPLE_WAIT_NONE;
	if (h->regs_found != 1)
		return;
	if (syscall && (int64_t) h->ax == -ENOSYS) {
		out->wait = SAMPLE_WAIT_SYSCALL;
		out->wait_nr = (long) h->orig_ax;
		out->wait_arg = h->di;
	} else if (fred && type == 3 && vector == 14) {
		out->wait = SAMPLE_WAIT_FAULT;
	} else {
		out->wait = SAMPLE_WAIT_KERNEL;
		out->wait_entry = fred || syscall ? 0 : h->entry;
	}
}

/* The capture made at this sample's overflow, if the record before it was one. */
const struct sample_capture *capture_match(struct sampler *s, const struct thread *t,
					   const struct sample *smp)
{
	struct capture *c = &s->capture;
	struct capture_record h;
	size_t stride = capture_stride(&c->spec), names_stride = 0, n_names = 0;
	const unsigned char *names = NULL;

	/* a CPU's ring: the record right before the sample is its capture (checked below) */
	if (!c->held_len || (c->held_tid && c->held_tid != t->tid))
		return NULL;
	memcpy(&h, c->held_at, sizeof(h));      /* held_len >= CAPTURE_HDR (capture_hold()) */
	c->held_len_used = c->held_len;
	c->held_len = 0;
	if (h.names_at) {
		/* the BPF program's split record: its names area where the spec puts it, come
		 * just before it (capture_names_take()) */
		stride = capture_node_stride(&c->spec);
		names_stride = capture_names_stride(&c->spec);
		if (!capture_split(&c->spec) || h.names_at != capture_names_at(&c->spec) ||
		    (h.names_end && h.names_end < h.names_at)) {
			s->stats.capture_mismatched++;
			c->names_len = 0;
			(void) capture_forget(c);
			return NULL;
		}
		names = capture_names_take(c, &h, c->held_tid, &n_names);
	} else if (c->names_len) {
		c->names_len = 0;               /* not this record's */
		(void) capture_forget(c);
	}
	/* a count event's sample carries no period (perf.c): its ip and place must do */
	if (h.magic != CAPTURE_MAGIC || h.ip != smp->ip ||
	    (!smp->off_cpu && (s->attrs[smp->event].sample_type & PERF_SAMPLE_PERIOD) &&
	     h.period != smp->values[0]) ||
	    h.n > capture_chain_max(&c->spec) || CAPTURE_HDR + h.n * stride > c->held_len_used ||
	    h.status > SAMPLE_CAPTURE_CUT) {
		s->stats.capture_mismatched++;
		(void) capture_forget(c);
		return NULL;
	}
	if (h.status == SAMPLE_CAPTURE_CUT)
		s->capture_cut_ns = smp->time_ns ? smp->time_ns : 1;
	c->out = (struct sample_capture) {
		.status = (int) h.status,
		.root = h.root,
		.head = h.head,
		.n = h.n,
		.stride = stride,
		.nodes = c->held_at + CAPTURE_HDR,
		.names = n_names ? names : NULL,
		.n_names = n_names < h.n ? n_names : h.n,
		.names_stride = names_stride,
	};
	if (h.names_at)
		capture_idents(s, c->out.nodes, h.n, c->out.names, c->out.n_names, &c->out);
	if (smp->off_cpu && c->switch_regs)
		switch_wait(&h, &c->out);
	/* locked is 0 or 1 (anything else: no GIL state there); the holder is the thread's only
	 * where it has a root to compare with */
	if (c->spec.gil_at && h.gil_read == 1 && h.gil_locked <= 1 && (!h.gil_locked || h.root)) {
		c->out.gil_known = true;
		c->out.gil_held = h.gil_locked == 1 && h.gil_holder == h.root;
	}
	/* collecting is 0 or 1 (anything else: no GC state there) */
	if (c->spec.gc_at && h.gc_read == 1 && h.gc_collecting <= 1) {
		c->out.gc_known = true;
		c->out.gc_collecting = h.gc_collecting == 1;
	}
	return &c->out;
}
