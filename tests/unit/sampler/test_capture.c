/*
 * capture.c: the generated BPF program passes this kernel's verifier for the specs pyframes
 * produces (and bad specs are refused before it), and, live on a forked child that holds a
 * known chain of nodes in memory and spins, every sample arrives with that chain copied at
 * its overflow: whole, cut at SAMPLER_CAPTURE_MAX_NODES (names once with bpf_loop: whole, the
 * nodes past it a tail of their bytes alone), up to an unreadable node, or nothing
 * before the thread has a root, or the root the program found itself in a list of states by the
 * thread's id (directly, or through a pointer as in glibc's struct pthread). With a GIL to
 * read, each capture says whether the thread held it: a fake GIL state held by the thread's
 * root, by another, free, or unreadable; with the GC's flag to read, whether it was collecting:
 * set, clear, unreadable, or no flag (neither 0 nor 1). Needs CAP_BPF + CAP_PERFMON (root):
 * skipped, saying so, without them.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/internal.h"

/* The child's chain, at the same addresses in parent and child (fork, no exec). Each node
 * points to a payload (the extras: a frame's code object), which points, with tag bits, to a
 * tag (that one's name); node 2 has none, node 4's points nowhere. */
struct payload {
	uint64_t w[4];          /* w[1]: the tag's address | 3 */
};

struct node {
	uint64_t marker;
	struct node *next;      /* next_off 8 */
	uint64_t a, b;
	volatile struct payload *payload;       /* at 32 */
};

/* volatile: the child writes them for the kernel's eyes only */
#define NODES 300
static volatile struct node nodes[NODES];
/* Where node i of the chain lies: nodes[i], or (descending, as CPython's frames: a caller just
 * below its callee) nodes[NODES - 1 - i]; with stacked, the spec says so (read_node()'s
 * window) */
static bool descending, stacked;
/* The program as on a kernel without bpf_loop (capture.c's no_loop_helper): put on the
 * running sampler's events, as with late_start */
static bool bounded;
#define NODE(i) nodes[descending ? NODES - 1 - (i) : (i)]
static volatile struct payload payloads[NODES];
static volatile uint64_t tags[NODES];
static volatile struct {
	char pad[24];
	volatile void *cframe;  /* head_off1 = 24 */
	volatile void *next;    /* search: the next state, search_next_off 32 */
	uint64_t id;            /* search_id_off1 40: the tid, or a "struct pthread" */
} root, decoy;
static volatile struct { char pad[8]; volatile struct node *head; } cframe; /* head_off2 = 8 */
/* search: *(&interp) = the interpreter, whose list (search_list_off 16) is decoy, root */
static volatile struct { char pad[16]; volatile void *first; } interp_state;
static volatile void *volatile interp;
#define PTHREAD_TID_OFF 0x2d0
static volatile uint32_t pthread_fake[256];
/* A GIL state as CPython's: last_holder at 8, locked at 16 (the program reads both at once);
 * gil_apart's: locked at 4, last_holder at 24 (two reads), where gil_layout says */
static volatile struct { uint64_t interval; volatile void *holder; uint32_t locked; } gil;
#define GIL_HOLDER_OFF 8
#define GIL_LOCKED_OFF 16
static volatile struct { uint32_t pad, locked; uint64_t x[2]; volatile void *holder; } gil_apart;
#define APART_HOLDER_OFF 24
#define APART_LOCKED_OFF 4
static int gil_layout;          /* 0: gil, 1: gil_apart */

/* What the child's GIL says (run_child's gil) */
enum { GIL_NONE, GIL_HELD, GIL_OTHER, GIL_FREE, GIL_UNREADABLE, GIL_TORN };
/* The GC's collecting flag as CPython's (an int), and what it says (run_child's gc) */
static volatile uint32_t gc_flag;
enum { GC_NONE, GC_COLLECTING, GC_IDLE, GC_UNREADABLE, GC_TORN };
/* Names once (spec.n_identity 1: extra 0 the identity, extra 1 the name): each code's name in
 * the first record of its ring that holds it, the child kept on one CPU (its ring, per CPU);
 * NAMES_CHANGE also changes node 1's code (SIGUSR1 to the child), then forgets them all
 * (capture_forget()); NAMES_MOVE moves the child to another CPU (another ring, per CPU);
 * NAMES_FAIL changes node 1's code while the records have nowhere to go (the out map's entries
 * taken out: each output fails), then puts them back; NAMES_RESTART makes the program again
 * for the same spec (as for a GIL found late) while records of the old one wait unread;
 * NAMES_REUSE gives nodes 2k and 2k + 1 one payload and node 3 node 0's, its identity extra a
 * reuse one (copied from the sample's read of the same address), and changes payload 0
 * (SIGUSR1);
 * NAMES_UNIQUE makes the low half of w[2] the spec's unique word, 0 in payload 3;
 * NAMES_SHIM too, and nodes 3 and 4 shims (the spec's shim byte, a's lowest, at least 9);
 * NAMES_VERSION too, none 0, with the spec's version word (versions, of version_kind,
 * starting at version_start), changes node 1's code (SIGUSR1) without moving the word, then
 * moves it (SIGUSR2), as a new code (or a code freed) would; NAMES_VERSION_UNREADABLE the
 * same with the word's address unmapped. */
enum { NAMES_EVERY, NAMES_ONCE, NAMES_CHANGE, NAMES_MOVE, NAMES_FAIL, NAMES_RESTART,
       NAMES_REUSE, NAMES_UNIQUE, NAMES_SHIM, NAMES_VERSION, NAMES_VERSION_UNREADABLE };
static int names_mode;
static volatile uint64_t versions, version_start;
static int version_kind;
static int cpu_one = -1, cpu_two = -1;  /* two CPUs this may run on (-1: none) */
#define CHANGED_W2 0xbeef0001u
#define CHANGED_B 0xbeef0002u

/* extra 0: payload w[1..2]; extra 1: the tag, through w[1] masked (body 48: extra 0's data) */
static const struct sampler_capture_spec spec = { 24, 8, sizeof(struct node), 8, 2, {
	{ .from = 32, .off = 8, .len = 16, .mask = UINT64_MAX },
	{ .from = sizeof(struct node) + 8, .off = 0, .len = 8, .mask = ~(uint64_t) 7 } } };
#define STRIDE (8 + sizeof(struct node) + 8 + 16 + 8 + 8)
/* ... as the program sends it, names once: its address and bytes, its code's check; and its
 * slot of the names area: its identity, then its name */
#define R_NODE (8 + sizeof(struct node) + 8)
#define R_SLOT (8 + 16 + 8 + 8)

/* The child on CPU cpu alone (none: -1, left as it is). */
static void pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(sched_setaffinity(pid, sizeof(set), &set), 0);
}

static void cpus_find(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return;
	for (int i = 0; i < CPU_SETSIZE && cpu_two < 0; i++) {
		if (!CPU_ISSET(i, &set))
			continue;
		if (cpu_one < 0)
			cpu_one = i;
		else
			cpu_two = i;
	}
}

static bool capture_allowed(void)
{
	int r = sampler_capture_probe();

	if (r < 0) {
		fprintf(stderr, "# skip: cannot load BPF perf-event programs here (%s); "
			"capture needs CAP_BPF and CAP_PERFMON\n", strerror(-r));
		return false;
	}
	return true;
}

/* The out map's entries of s's capture (the CPUs' output events, or the threads'), taken out
 * (the program's outputs fail), or put back; the epoch map's value after into *epoch. 0 or -1
 * (no assertion: the child spins). */
static int outputs_set(struct sampler *s, bool on, uint32_t *epoch)
{
	struct capture *c = &s->capture;
	uint32_t key;
	union bpf_attr a;

	for (int i = 0; i < (c->percpu ? s->ncpu : (int) s->n_threads); i++) {
		int fd = c->percpu ? s->cpus[i].out_fd : s->threads[i].out_fd;

		key = (uint32_t) (c->percpu ? i : s->threads[i].slot);
		if (fd < 0)
			continue;
		memset(&a, 0, sizeof(a));
		a.map_fd = (uint32_t) c->out_fd;
		a.key = (uintptr_t) &key;
		a.value = on ? (uintptr_t) &fd : 0;
		if (syscall(SYS_bpf, on ? BPF_MAP_UPDATE_ELEM : BPF_MAP_DELETE_ELEM, &a,
			    sizeof(a)) < 0)
			return -1;
	}
	key = 0;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t) c->epoch_fd;
	a.key = (uintptr_t) &key;
	a.value = (uintptr_t) epoch;
	return syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &a, sizeof(a)) < 0 ? -1 : 0;
}

/* Whether this kernel has bpf_loop (5.17+): the program then calls it. */
static bool kernel_has_loop(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major > 5 || (major == 5 && minor >= 17);
}

static void search_spec(struct sampler_capture_spec *sp, bool indirect)
{
	sp->search_at = (uintptr_t) &interp;
	sp->search_list_off = 16;
	sp->search_next_off = 32;
	sp->search_id_off1 = 40;
	sp->search_id_off2 = indirect ? PTHREAD_TID_OFF : SAMPLER_CAPTURE_NO_OFF;
}

static void test_capture_specs(void **state)
{
	/* as pyframes gives them: 3.8-3.10 frame objects, 3.11-3.12 via the cframe, 3.13+ */
	static const struct sampler_capture_spec good[] = {
		{ 24, SAMPLER_CAPTURE_NO_OFF, 112, 24 },
		{ 24, SAMPLER_CAPTURE_NO_OFF, 104, 24 },
		{ 56, 8, 80, 48 },
		{ 56, 0, 80, 8 },
		{ 72, SAMPLER_CAPTURE_NO_OFF, 80, 8 },
		{ 0, SAMPLER_CAPTURE_NO_OFF, SAMPLER_CAPTURE_MAX_NODE_BYTES, 120 },
		/* pyframes' extras for 3.11: code fields, then the name and file name */
		{ 56, 8, 80, 48, 5, { { 32, 8, 16, UINT64_MAX }, { 32, 72, 8, UINT64_MAX },
				      { 32, 112, 32, UINT64_MAX }, { 144, 0, 96, UINT64_MAX },
				      { 128, 0, 128, UINT64_MAX } } },
		/* 3.14's tagged code pointer */
		{ 72, SAMPLER_CAPTURE_NO_OFF, 80, 8, 1, { { 0, 0, 64, ~(uint64_t) 7 } } },
		/* names once at the largest stride: 384 nodes with bpf_loop, the last 256 a tail */
		{ 56, 8, SAMPLER_CAPTURE_MAX_NODE_BYTES, 48, 3, { { 32, 0, 160, ~(uint64_t) 7 },
			{ 136, 0, 96, UINT64_MAX }, { 144, 0, 80, UINT64_MAX } }, .n_identity = 1,
		  .stacked = true },
	};
	static const struct sampler_capture_spec with_gil[] = {
		{ 24, SAMPLER_CAPTURE_NO_OFF, 112, 24, .gil_at = 0x7f0000001000,
		  .gil_locked_off = GIL_LOCKED_OFF, .gil_holder_off = GIL_HOLDER_OFF },
		{ 72, SAMPLER_CAPTURE_NO_OFF, 80, 8, 1, { { 0, 0, 64, ~(uint64_t) 7 } },
		  .gil_at = 0x55d000003f40, .gil_locked_off = 65535, .gil_holder_off = 0 },
	};
	static const struct sampler_capture_spec bad[] = {
		{ 24, SAMPLER_CAPTURE_NO_OFF, 0, 0 },          /* no bytes */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 100, 24 },       /* not a multiple of 8 */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 136, 24 },       /* too big */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 32 },        /* link outside the node */
		{ 1u << 20, SAMPLER_CAPTURE_NO_OFF, 32, 8 },   /* offset out of range */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, 1, { { 32, 0, 8, UINT64_MAX } } },  /* from past */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, 1, { { 4, 0, 8, UINT64_MAX } } },   /* unaligned */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, 1, { { 0, 0, 12, UINT64_MAX } } },  /* length */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, 1, { { 0, 0, 8, 1ull << 40 } } },   /* mask */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, 1, { { 0, 1u << 16, 8, UINT64_MAX } } },
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, SAMPLER_CAPTURE_MAX_EXTRAS + 1 },
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, .gil_at = 4096, .gil_locked_off = 1u << 16 },
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 8, .gil_at = 4096, .gil_holder_off = 1u << 20 },
		/* a node over SAMPLER_CAPTURE_MAX_STRIDE */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 128, 8, 3, { { 0, 0, 128, UINT64_MAX },
				{ 0, 0, 128, UINT64_MAX }, { 0, 0, 128, UINT64_MAX } } },
	};

	(void) state;
	if (!capture_allowed()) {
		skip();
		return;
	}
	for (size_t i = 0; i < 2 * sizeof(good) / sizeof(good[0]); i++) {
		struct capture c = CAPTURE_INIT;
		size_t k = i % (sizeof(good) / sizeof(good[0]));

		/* with bpf_loop where the kernel has it, and as before it */
		c.no_loop_helper = i >= sizeof(good) / sizeof(good[0]);
		assert_int_equal(capture_load(&c, &good[k]), 0);
		assert_true(c.prog_fd >= 0);
		assert_int_equal(c.loop_helper, !c.no_loop_helper && kernel_has_loop());
		assert_int_equal(c.max_nodes, c.loop_helper && capture_split(&good[k]) ?
				 SAMPLER_CAPTURE_MAX_CHAIN : SAMPLER_CAPTURE_MAX_NODES);
		assert_true(capture_names_at(&good[k]) <= 65536 - 64);
		/* loading again replaces the program */
		assert_int_equal(capture_load(&c, &good[(k + 1) % (sizeof(good) / sizeof(good[0]))]), 0);
		capture_close(&c);
	}
	/* hwspy in a PID namespace of its own keys threads by that namespace's ids (the
	 * namespace-aware helper): forced here, in whichever namespace this runs */
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct capture c = CAPTURE_INIT;

		assert_int_equal(capture_pidns(&c), 0);
		assert_true(c.pidns_chosen);
		assert_true(c.pidns_ino != 0);
		c.pidns = true;
		assert_int_equal(capture_load(&c, &good[i]), 0);
		assert_true(c.prog_fd >= 0);
		capture_close(&c);
	}
	/* the GIL's read, with the largest program: extras, the search, per CPU, both ways */
	for (size_t i = 0; i < 2 * sizeof(with_gil) / sizeof(with_gil[0]); i++) {
		struct capture c = CAPTURE_INIT;
		struct sampler_capture_spec sp = with_gil[i % 2];

		c.no_loop_helper = i >= 2;

		assert_int_equal(capture_load(&c, &sp), 0);
		search_spec(&sp, true);
		c.percpu = true;
		assert_int_equal(capture_load(&c, &sp), 0);
		sp = good[6];
		sp.n_identity = 3;              /* the names once: the largest program, */
		sp.extra[1].reuse = sp.extra[2].reuse = true;   /* its reuse extras too */
		sp.gil_at = with_gil[i % 2].gil_at;
		sp.stacked = true;
		search_spec(&sp, false);
		sp.unique_at = 4;               /* a unique word in the frame's bytes: refused */
		assert_int_equal(capture_load(&c, &sp), -EINVAL);
		sp.unique_at = sp.node_bytes + 8 + 4;           /* in extra 0's bytes */
		assert_int_equal(capture_load(&c, &sp), 0);
		/* and the GC's flag */
		sp.gc_at = with_gil[i % 2].gil_at + 200;
		assert_int_equal(capture_load(&c, &sp), 0);
		/* and the shims (3.12's owner byte): a byte past the node's, a minimum over a
		 * byte's, refused */
		sp.shim_at = 46;
		sp.shim_min = 3;
		assert_int_equal(capture_load(&c, &sp), 0);
		sp.shim_at = sp.node_bytes;
		assert_int_equal(capture_load(&c, &sp), -EINVAL);
		sp.shim_at = 46;
		sp.shim_min = 256;
		assert_int_equal(capture_load(&c, &sp), -EINVAL);
		sp.shim_min = 3;
		c.percpu = false;
		assert_int_equal(capture_load(&c, &sp), 0);
		capture_close(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct capture c = CAPTURE_INIT;

		assert_int_equal(capture_load(&c, &bad[i]), -EINVAL);
		capture_close(&c);
	}
	/* with the search for a thread's root, both ways, in both ring layouts */
	for (int i = 0; i < 8; i++) {
		struct capture c = CAPTURE_INIT;
		struct sampler_capture_spec sp = good[(i % 3) * 3];     /* 6: with extras */

		c.percpu = i & 1;
		c.pid = i & 2 ? 4242 : 0;
		search_spec(&sp, i & 4);
		assert_int_equal(capture_load(&c, &sp), 0);
		sp.search_next_off = 1u << 20;
		assert_int_equal(capture_load(&c, &sp), -EINVAL);
		capture_close(&c);
	}
}

/* The payload node i points to: with NAMES_REUSE, nodes 2k and 2k + 1 share one, and node 3
 * the first's (a payload met again further down). */
static size_t payload_of(size_t i)
{
	if (names_mode != NAMES_REUSE)
		return i;
	return i == 3 ? 0 : i & ~(size_t) 1;
}

/* Whether node i's payload pointer leads nowhere (0x10): node 4, and with NAMES_REUSE node 5
 * too (its read failing as node 4's, copied from it). */
static bool unreadable(size_t i)
{
	return i == 4 || (names_mode == NAMES_REUSE && i == 5);
}

static void change_code(int sig)
{
	(void) sig;
	payloads[payload_of(1)].w[2] = CHANGED_W2;
	NODE(1).b = CHANGED_B;
}

static void version_on(int sig)
{
	(void) sig;
	versions++;
}

/* Builds a chain of len nodes (node i -> i + 1), node bad_at's link pointing nowhere if
 * bad_at < len, and spins. */
static void child(size_t len, size_t bad_at, int search, int gil_mode, int gc_mode, int ready_fd)
{
	for (size_t i = 0; i < len; i++) {
		NODE(i).marker = 0xc0de0000u + i;
		NODE(i).a = i * 3;
		NODE(i).b = ~(uint64_t) i;
		NODE(i).next = i + 1 < len ? (struct node *) &NODE(i + 1) : NULL;
		tags[i] = 0x7a90000u + i;
		payloads[i].w[1] = (uintptr_t) &tags[i] | 3;
		payloads[i].w[2] = (names_mode == NAMES_UNIQUE || names_mode == NAMES_SHIM) &&
				   i == 3 ? 0 : 0xfeed0000u + i;
		NODE(i).payload = i == 2 ? NULL : unreadable(i) ? (struct payload *) (uintptr_t) 0x10 :
				   &payloads[payload_of(i)];
	}
	if (bad_at < len)
		NODE(bad_at).next = (struct node *) (uintptr_t) 0x10;
	cframe.head = len ? &NODE(0) : NULL;
	root.cframe = &cframe;
	/* the list the search walks: decoy (another thread's id) first, then root */
	pthread_fake[PTHREAD_TID_OFF / 4] = (uint32_t) getpid();
	root.id = search == 2 ? (uintptr_t) pthread_fake : (uint64_t) getpid();
	decoy.id = search == 2 ? 0 : (uint64_t) getpid() + 1;
	decoy.next = &root;
	interp_state.first = &decoy;
	interp = &interp_state;
	gil.holder = gil_mode == GIL_OTHER ? (volatile void *) &decoy : &root;
	gil.locked = gil_mode == GIL_FREE ? 0 : gil_mode == GIL_TORN ? 7 : 1;
	gil_apart.holder = gil.holder;
	gil_apart.locked = gil.locked;
	gc_flag = gc_mode == GC_COLLECTING ? 1 : gc_mode == GC_TORN ? 7 : 0;
	versions = version_start;
	(void) signal(SIGUSR1, change_code);
	(void) signal(SIGUSR2, version_on);
	/* built: the parent samples from now on (a busy machine may run this child late) */
	(void) !write(ready_fd, "r", 1);
	close(ready_fd);
	for (volatile uint64_t x = 0;; x++)
		;
}

struct seen {
	size_t samples, captured, by_status[4];
	size_t gil_known, gil_held;     /* captures that knew the GIL, that held it */
	size_t gc_known, gc_collecting; /* captures that knew the GC's flag, that it was set */
	size_t n_min, n_max;
	bool bytes_ok, fields_ok;       /* every capture's bytes, and its other fields */
	bool extras_ok;                 /* every node's extras */
	bool sent_ok;                   /* names once: every record R_NODE bytes a node */
	size_t names_carried, names_left; /* nodes with a code: its name in the record, or not */
	size_t tail;                    /* names once: nodes past SAMPLER_CAPTURE_MAX_NODES, as a
	                                 * tail's (check 0, no identity, no names) */
	size_t shims;                   /* NAMES_SHIM: shim nodes as a tail's */
	size_t n_names_max;             /* the most nodes a record's names area covered */
	bool changed_seen;              /* node 1's changed code (NAMES_CHANGE) */
	bool changed_unmoved;           /* ... seen before the version word moved (NAMES_VERSION) */
	bool node_changed_seen;         /* ... and its changed bytes */
	bool loop_helper;               /* the program called bpf_loop */
	bool percpu;                    /* NAMES_MOVE: the rings were per CPU */
	size_t samples_moved;           /* ... samples since the move and before (run_until()) */
	uint32_t epoch_failed, epoch_after; /* NAMES_FAIL: the epoch as the outputs failed, after */
	int set_root_ret;
	size_t late_uncaptured;         /* samples without a capture after one with (in time: the
	                                 * rings are per CPU, each read in turn) */
	uint64_t first_captured_ns;
	size_t late_no_root;            /* captures without a root after one with */
	uint64_t want_root;
	bool late_root;                 /* the root is set after the first samples */
	struct sampler *s;
	pid_t pid;
	size_t asked;                   /* SAMPLER_EVENT_CAPTURE_THREAD events, for pid */
	size_t asked_bad;               /* ... with another tid or kind, or no sampler */
	int asked_ret;                  /* sampler_capture_set_root() inside them: the last error */
};

/* The thread's root, when the program is put on its events (not with late_root) */
static void on_event(void *ctx, const struct sampler_event *e)
{
	struct seen *v = ctx;
	int r;

	if (e->kind != SAMPLER_EVENT_CAPTURE_THREAD || e->tid != v->pid || !e->sampler) {
		v->asked_bad++;
		return;
	}
	v->asked++;
	if (v->late_root)
		return;
	r = sampler_capture_set_root(e->sampler, e->tid, (uintptr_t) &root);
	if (r < 0)
		v->asked_ret = r;
}

static uint64_t pf64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void on_sample(void *ctx, const struct sample *smp)
{
	struct seen *v = ctx;
	const struct sample_capture *c = smp->capture;

	/* no assertions here: a failure must not leave the child spinning */
	v->samples++;
	v->samples_moved += v->samples_moved > 0;
	if (!c) {
		v->late_uncaptured += v->captured > 0 && smp->time_ns > v->first_captured_ns;
		return;
	}
	if (!v->captured++ || smp->time_ns < v->first_captured_ns)
		v->first_captured_ns = smp->time_ns;
	if (c->status < 0 || c->status >= 4) {
		v->fields_ok = false;
		return;
	}
	v->by_status[c->status]++;
	v->gil_known += c->gil_known;
	v->gil_held += c->gil_held;
	v->fields_ok &= c->gil_known || !c->gil_held;
	v->gc_known += c->gc_known;
	v->gc_collecting += c->gc_collecting;
	v->fields_ok &= c->gc_known || !c->gc_collecting;
	if (c->status == SAMPLE_CAPTURE_NO_ROOT) {
		v->fields_ok &= c->n == 0;
		v->late_no_root += v->by_status[SAMPLE_CAPTURE_OK] > 0;
		return;
	}
	if (c->root != (uintptr_t) &root || c->head != (uintptr_t) &NODE(0) ||
	    c->stride != (names_mode == NAMES_EVERY ? STRIDE : R_NODE) ||
	    c->names_stride != (names_mode == NAMES_EVERY ? 0 : R_SLOT) || c->n_names > c->n ||
	    !c->ident != (names_mode == NAMES_EVERY)) {
		fprintf(stderr, "# status %d n %zu root %#lx head %#lx stride %zu\n", c->status, c->n,
			(unsigned long) c->root, (unsigned long) c->head, c->stride);
		v->fields_ok = false;
	}
	/* the record's raw size: its padding to 8 bytes after it */
	if (names_mode != NAMES_EVERY &&
	    v->s->capture.held_len_used > CAPTURE_HDR + c->n * R_NODE + 8)
		v->sent_ok = false;
	if (c->n_names > v->n_names_max)
		v->n_names_max = c->n_names;
	if (c->n < v->n_min)
		v->n_min = c->n;
	if (c->n > v->n_max)
		v->n_max = c->n;
	for (size_t i = 0; i < c->n; i++) {
		const unsigned char *p = c->nodes + i * c->stride;
		uint64_t addr;
		struct node got;

		memcpy(&addr, p, 8);
		memcpy(&got, p + 8, sizeof(got));
		if (addr != (uintptr_t) &NODE(i) || got.marker != 0xc0de0000u + i ||
		    got.a != i * 3 || (got.b != ~(uint64_t) i && !(i == 1 && got.b == CHANGED_B)))
			v->bytes_ok = false;
		v->node_changed_seen |= i == 1 && got.b == CHANGED_B;
		/* the extras: a payload's words and its tag (names once: in its slot of the names
		 * area, if the record has one for it, else none); none where the pointer leads
		 * nowhere */
		const unsigned char *tag = p + 8 + sizeof(struct node) + 24;
		static const unsigned char none[24];

		p += 8 + sizeof(struct node);
		if (names_mode == NAMES_SHIM && i >= 3) {
			if (pf64(p) == 0 && !c->ident[i] && i >= c->n_names)
				v->shims++;
			else
				v->extras_ok = false;
			continue;
		}
		if (names_mode != NAMES_EVERY && i >= SAMPLER_CAPTURE_MAX_NODES) {
			if (pf64(p) == 0 && !c->ident[i] && i >= c->n_names)
				v->tail++;
			else
				v->extras_ok = false;
			continue;
		}
		/* names once: the identity where the reader holds it, the names in the slot */
		if (names_mode != NAMES_EVERY) {
			tag = i < c->n_names ? c->names + i * c->names_stride : none;
			p = c->ident[i] ? c->ident[i] : none;
		}
		if (i == 2 || unreadable(i)) {
			if (pf64(p) != 0 || pf64(tag) != 0)
				v->extras_ok = false;
			continue;
		}
		size_t k = payload_of(i);

		if (pf64(p) != (uintptr_t) &payloads[k].w[1] ||
		    pf64(p + 8) != ((uintptr_t) &tags[k] | 3) ||
		    (pf64(p + 16) != 0xfeed0000u + k &&
		     !(k == payload_of(1) && pf64(p + 16) == CHANGED_W2) &&
		     !(names_mode == NAMES_UNIQUE && k == 3 && pf64(p + 16) == 0)))
			v->extras_ok = false;
		v->changed_seen |= pf64(p + 16) == CHANGED_W2;
		if (names_mode != NAMES_EVERY && pf64(tag) == 0) {
			v->names_left++;
			continue;
		}
		v->names_carried++;
		if (pf64(tag) != (uintptr_t) &tags[k] || pf64(tag + 8) != 0x7a90000u + k)
			v->extras_ok = false;
	}
}

/* Samples in 50 ms slices until *count reaches RUN_MIN_SAMPLES (the spinning child gets less
 * of a CPU on a busy machine: a fixed 150 ms gave it under 50 samples there), for at most
 * RUN_MAX_NS. */
#define RUN_MIN_SAMPLES 60
#define RUN_MAX_NS 5000000000ULL

static int run_until(struct seen *v, volatile sig_atomic_t *stop, const size_t *count)
{
	int r = 0;

	for (uint64_t spent = 0; r == 0 && *count < RUN_MIN_SAMPLES && spent < RUN_MAX_NS;
	     spent += 50000000ULL)
		r = sampler_run(v->s, on_sample, v, stop, 50000000ULL);
	return r;
}

/* Samples a child holding a chain of len nodes for 300 ms; the capture starts with the sampler
 * (opts.capture_spec), or with sampler_capture_start() once it runs (late_start). */
static void run_child(size_t len, size_t bad_at, bool late_root, bool late_start, int search,
		      int gil_mode, int gc_mode, struct seen *v)
{
	struct sampler_capture_spec sp = spec;

	struct event_spec ev;
	/* 4x the default ring: 128-node captures (11 KiB each, 1000 a second) fill the default one
	 * before a late drain on a busy machine */
	struct sampler_opts o = { .n_events = 1, .freq = 1000, .capture = true, .ring_pages = 256,
				  .event_fn = on_event, .event_ctx = v };
	volatile sig_atomic_t stop = 0;
	int status, r_new, r_start = -1, r_run = -1;
	uint64_t mismatched = 0, missed = 0;
	int ready[2];
	char byte;
	pid_t pid;

	assert_int_equal(events_parse("cpu-clock", &ev), 0);
	memset(v, 0, sizeof(*v));
	v->n_min = SIZE_MAX;
	v->bytes_ok = v->fields_ok = v->extras_ok = v->sent_ok = true;
	v->late_root = late_root || search;
	if (search)
		search_spec(&sp, search == 2);
	if (gil_mode != GIL_NONE) {
		/* unreadable: the page before the first one mapped */
		sp.gil_at = gil_mode == GIL_UNREADABLE ? 4096 : gil_layout ? (uintptr_t) &gil_apart :
			    (uintptr_t) &gil;
		sp.gil_locked_off = gil_layout ? APART_LOCKED_OFF : GIL_LOCKED_OFF;
		sp.gil_holder_off = gil_layout ? APART_HOLDER_OFF : GIL_HOLDER_OFF;
	}
	if (gc_mode != GC_NONE)
		sp.gc_at = gc_mode == GC_UNREADABLE ? 4096 : (uintptr_t) &gc_flag;
	sp.n_identity = names_mode != NAMES_EVERY;
	sp.extra[0].reuse = names_mode == NAMES_REUSE;
	/* w[2]'s low half: extra 0's bytes (w[1], w[2]) past its address */
	sp.unique_at = names_mode == NAMES_UNIQUE || names_mode >= NAMES_SHIM ?
		       sizeof(struct node) + 8 + 8 : 0;
	if (names_mode == NAMES_SHIM) {
		sp.shim_at = offsetof(struct node, a);
		sp.shim_min = 9;                /* a = i x 3: nodes 3 and 4 */
	}
	sp.version_at = names_mode == NAMES_VERSION ? (uintptr_t) &versions :
			names_mode == NAMES_VERSION_UNREADABLE ? 4096 : 0;
	sp.version_kind = version_kind;
	sp.stacked = stacked;
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		child(len, bad_at, search, gil_mode, gc_mode, ready[1]);
	}
	close(ready[1]);
	v->pid = pid;
	o.events = &ev;
	o.pid = pid;
	late_start |= bounded;
	if (!late_start)
		o.capture_spec = &sp;
	/* the child's chain is built (its byte), or it died (EOF) */
	while (read(ready[0], &byte, 1) < 0 && errno == EINTR)
		;
	close(ready[0]);
	if (names_mode != NAMES_EVERY)
		pin(pid, cpu_one);
	r_new = sampler_new(&o, &v->s);
	if (r_new == 0) {
		v->s->capture.no_loop_helper = bounded;
		r_start = late_start ? sampler_capture_start(v->s, &sp) : sampler_capture_error(v->s);
		v->loop_helper = v->s->capture.loop_helper;
		if (r_start == 0 && sampler_capturing(v->s) && late_root) {
			r_run = run_until(v, &stop, &v->by_status[SAMPLE_CAPTURE_NO_ROOT]);
			v->set_root_ret = sampler_capture_set_root(v->s, pid, (uintptr_t) &root);
			if (r_run == 0)
				r_run = run_until(v, &stop, &v->by_status[SAMPLE_CAPTURE_OK]);
		} else if (r_start == 0 && sampler_capturing(v->s)) {
			/* bounded: the samples taken while its program was verified (~40 ms) come
			 * without a capture; enough with one */
			r_run = run_until(v, &stop, bounded ? &v->captured : &v->samples);
			if (r_run == 0 && (names_mode == NAMES_CHANGE || names_mode == NAMES_REUSE)) {
				(void) kill(pid, SIGUSR1);
				r_run = sampler_run(v->s, on_sample, v, &stop, 100000000ULL);
				if (r_run == 0)
					r_run = capture_forget(&v->s->capture);
				if (r_run == 0)
					r_run = sampler_run(v->s, on_sample, v, &stop, 100000000ULL);
			}
			if (r_run == 0 && names_mode >= NAMES_VERSION) {
				(void) kill(pid, SIGUSR1);
				r_run = sampler_run(v->s, on_sample, v, &stop, 100000000ULL);
				v->changed_unmoved = v->changed_seen;
				(void) kill(pid, SIGUSR2);
				if (r_run == 0)
					r_run = sampler_run(v->s, on_sample, v, &stop, 100000000ULL);
			}
			if (r_run == 0 && names_mode == NAMES_FAIL) {
				r_run = outputs_set(v->s, false, &v->epoch_failed);
				(void) kill(pid, SIGUSR1);
				if (r_run == 0)
					r_run = sampler_run(v->s, on_sample, v, &stop, 100000000ULL);
				if (r_run == 0)
					r_run = outputs_set(v->s, true, &v->epoch_failed);
				if (r_run == 0)
					r_run = sampler_run(v->s, on_sample, v, &stop, 100000000ULL);
				if (r_run == 0)
					r_run = outputs_set(v->s, true, &v->epoch_after);
			}
			if (r_run == 0 && names_mode == NAMES_RESTART) {
				/* their codes' names went in records read before the restart */
				(void) usleep(50000);
				r_run = sampler_capture_start(v->s, &sp);
				if (r_run == 0)
					r_run = sampler_run(v->s, on_sample, v, &stop, 100000000ULL);
			}
			if (r_run == 0 && names_mode == NAMES_MOVE) {
				v->percpu = v->s->capture.percpu;
				pin(pid, cpu_two);
				v->samples_moved = 1;
				r_run = run_until(v, &stop, &v->samples_moved);
			}
		}
		sampler_stop(v->s);
		mismatched = sampler_stats(v->s)->capture_mismatched;
		missed = sampler_stats(v->s)->capture_ids_missed;
		sampler_free(v->s);
	}
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, &status, 0);
	assert_int_equal(r_new, 0);
	assert_int_equal(r_start, 0);
	assert_int_equal(r_run, 0);
	assert_int_equal(mismatched, 0);
	assert_int_equal(missed, 0);
	assert_true(v->sent_ok);
	assert_int_equal(v->set_root_ret, 0);
	/* the one thread asked for its root once, as the program was put on its events (again
	 * where a program made again reopens them), and answered from inside that event */
	assert_true(v->asked == 1 || (names_mode == NAMES_RESTART && v->asked == 2));
	assert_int_equal(v->asked_bad, 0);
	assert_int_equal(v->asked_ret, 0);
	assert_true(v->fields_ok);
	/* every sample came with its capture (started late: but those taken before; outputs
	 * failing: but those taken meanwhile) */
	assert_true(v->samples >= 50);
	if (bounded)
		assert_true(v->captured >= RUN_MIN_SAMPLES);
	else if (late_start || names_mode == NAMES_FAIL)
		assert_true(v->captured >= v->samples / 2);
	else
		assert_int_equal(v->captured, v->samples);
	assert_int_equal(v->late_uncaptured > 0, names_mode == NAMES_FAIL);
	assert_true(v->bytes_ok);
	assert_true(v->extras_ok);
	assert_int_equal(v->loop_helper, !bounded && kernel_has_loop());
}

/* A chain of 5 nodes whole, one longer than the program copies cut, one whose node 3 links to
 * an unmapped address (nodes 0-3 copied, then a fault): each capture so, in the chain's layout
 * (descending, stacked). */
static void chain_shapes(void)
{
	struct seen v;

	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
	assert_int_equal(v.n_min, 5);
	assert_int_equal(v.n_max, 5);
	run_child(NODES, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_CUT], v.captured);
	assert_int_equal(v.n_min, SAMPLER_CAPTURE_MAX_NODES);
	run_child(10, 3, false, false, 0, GIL_NONE, GC_NONE, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_FAULT], v.captured);
	assert_int_equal(v.n_min, 4);
	assert_int_equal(v.n_max, 4);
}

static void test_capture_live(void **state)
{
	struct seen v;

	(void) state;
	if (!capture_allowed()) {
		skip();
		return;
	}
	chain_shapes();
	/* no root for the first samples: nothing copied, then the chain */
	run_child(5, SIZE_MAX, true, false, 0, GIL_NONE, GC_NONE, &v);
	assert_true(v.by_status[SAMPLE_CAPTURE_NO_ROOT] >= 50);
	assert_true(v.by_status[SAMPLE_CAPTURE_OK] >= 50);
	assert_int_equal(v.late_no_root, 0);
	assert_int_equal(v.n_min, 5);
	/* the program put on the running sampler's events */
	run_child(5, SIZE_MAX, false, true, 0, GIL_NONE, GC_NONE, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
	assert_int_equal(v.n_min, 5);
	/* no root from hwspy ever: the program finds it at the first sample, by the thread's id
	 * in its state, and through a "struct pthread" */
	for (int search = 1; search <= 2; search++) {
		run_child(5, SIZE_MAX, false, false, search, GIL_NONE, GC_NONE, &v);
		assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
		assert_int_equal(v.n_min, 5);
	}
	assert_int_equal(v.gil_known, 0);
	/* the GIL: held by the thread's root, by another, free, unreadable, not a GIL state; its
	 * words as CPython lays them out (one read), then apart (two) */
	for (gil_layout = 0; gil_layout < 2; gil_layout++) {
		run_child(5, SIZE_MAX, false, false, 0, GIL_HELD, GC_NONE, &v);
		assert_int_equal(v.gil_known, v.captured);
		assert_int_equal(v.gil_held, v.captured);
		assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
		run_child(5, SIZE_MAX, false, false, 0, GIL_OTHER, GC_NONE, &v);
		assert_int_equal(v.gil_known, v.captured);
		assert_int_equal(v.gil_held, 0);
		run_child(5, SIZE_MAX, false, false, 0, GIL_FREE, GC_NONE, &v);
		assert_int_equal(v.gil_known, v.captured);
		assert_int_equal(v.gil_held, 0);
		for (int mode = GIL_UNREADABLE; mode <= GIL_TORN; mode++) {
			run_child(5, SIZE_MAX, false, false, 0, mode, GC_NONE, &v);
			assert_int_equal(v.gil_known, 0);
			assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
			assert_int_equal(v.n_min, 5);
		}
	}
	gil_layout = 0;
	/* before the thread has a root: free is known, held is not */
	run_child(5, SIZE_MAX, true, false, 0, GIL_HELD, GC_NONE, &v);
	assert_true(v.gil_held >= 50);
	assert_int_equal(v.gil_known, v.by_status[SAMPLE_CAPTURE_OK]);
	run_child(5, SIZE_MAX, true, false, 0, GIL_FREE, GC_NONE, &v);
	assert_int_equal(v.gil_known, v.captured);
	assert_int_equal(v.gil_held, 0);
	assert_int_equal(v.gc_known, 0);
	/* the GC's flag: set, clear (with the GIL read too), unreadable, not a flag; known even
	 * before the thread has a root */
	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_COLLECTING, &v);
	assert_int_equal(v.gc_known, v.captured);
	assert_int_equal(v.gc_collecting, v.captured);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
	run_child(5, SIZE_MAX, false, false, 0, GIL_HELD, GC_IDLE, &v);
	assert_int_equal(v.gc_known, v.captured);
	assert_int_equal(v.gc_collecting, 0);
	assert_int_equal(v.gil_held, v.captured);
	for (int mode = GC_UNREADABLE; mode <= GC_TORN; mode++) {
		run_child(5, SIZE_MAX, false, false, 0, GIL_HELD, mode, &v);
		assert_int_equal(v.gc_known, 0);
		assert_int_equal(v.gil_held, v.captured);
		assert_int_equal(v.n_min, 5);
	}
	run_child(5, SIZE_MAX, true, false, 0, GIL_NONE, GC_COLLECTING, &v);
	assert_int_equal(v.gc_known, v.captured);
	assert_int_equal(v.gc_collecting, v.captured);
}

/* With spec.n_identity, a ring's records carry a code's name (the extras past the identity
 * ones) only the first time they hold that code: its address and identity bytes, as read at
 * the overflow (later ones its check). A changed code (other identity bytes at the same
 * address) is carried again, once; a node with no code (2, 4: no identity read) carries none;
 * after capture_forget() every name is carried once more, and on another CPU's ring (per CPU)
 * once more too. */
static void test_capture_names_once(void **state)
{
	struct seen v;

	(void) state;
	if (!capture_allowed()) {
		skip();
		return;
	}
	names_mode = NAMES_ONCE;
	run_child(NODES, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	assert_int_equal(v.names_carried, SAMPLER_CAPTURE_MAX_NODES - 2);
	assert_int_equal(v.names_left, (v.captured - 1) * (SAMPLER_CAPTURE_MAX_NODES - 2));
	/* with bpf_loop, the whole chain: its first SAMPLER_CAPTURE_MAX_NODES nodes with their
	 * codes, a tail of the others' bytes */
	assert_int_equal(v.n_min, kernel_has_loop() ? NODES : SAMPLER_CAPTURE_MAX_NODES);
	assert_int_equal(v.by_status[kernel_has_loop() ? SAMPLE_CAPTURE_OK : SAMPLE_CAPTURE_CUT],
			 v.captured);
	assert_int_equal(v.tail, kernel_has_loop() ? v.captured *
			 (NODES - SAMPLER_CAPTURE_MAX_NODES) : 0);
	names_mode = NAMES_CHANGE;
	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	assert_true(v.changed_seen);
	assert_int_equal(v.names_carried, 2 * 3 + 1);
	assert_int_equal(v.names_left + v.names_carried, v.captured * 3);
	/* a code changed while every output failed: the program moved the epoch on (by one a
	 * failed output, never to the reader's next step), so the first record after carries
	 * every name again, the changed code's too (run_child() asserts none missed) */
	/* nodes 2k and 2k + 1 on one payload, and node 3 on node 0's, its identity a reuse
	 * extra: copied from the first read of it in the sample with bpf_loop, byte for byte a
	 * read's (run_child() checks each node's extras), and changed with it; nodes 4 and 5 on
	 * one that cannot be read, 5's failed as 4's read did */
	names_mode = NAMES_REUSE;
	run_child(6, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	assert_true(v.changed_seen);
	assert_true(v.extras_ok);
	/* a unique word 0 (CPython's versions ran out): node 3's code never known, its names in
	 * every record; the others' once */
	names_mode = NAMES_UNIQUE;
	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	assert_int_equal(v.names_carried, 2 + v.captured);
	assert_int_equal(v.names_left, 2 * (v.captured - 1));
	/* ... that code a shim's (CPython's eval-loop entry frame: no code to name): nodes 3
	 * and 4 carry no check, identity or names, and no record a names area past node 2's
	 * slot; the others' once */
	names_mode = NAMES_SHIM;
	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	assert_int_equal(v.shims, 2 * v.captured);
	assert_true(v.n_names_max <= 3);
	assert_int_equal(v.names_carried, 2);
	assert_int_equal(v.names_left, 2 * (v.captured - 1));
	/* the version word: with bpf_loop, a code's identity is read once while the word stays
	 * (the changed code's is not seen, its old check sent), again once it moves (and,
	 * changed, carried once more). CPython 3.12's next version at 1000, then at 0 (versions
	 * ran out: read each time, as without the word); 3.14's count of codes freed at 0 (a
	 * count like any other); unreadable: read each time */
	static const struct { int kind; uint64_t start; bool cached; } vs[] = {
		{ SAMPLER_VERSION_NEXT32, 1000, true }, { SAMPLER_VERSION_NEXT32, 0, false },
		{ SAMPLER_VERSION_FREED64, 0, true }, { SAMPLER_VERSION_FREED64, 1ull << 40, true },
		{ -1, 1000, false },
	};
	for (size_t k = 0; k < sizeof(vs) / sizeof(vs[0]); k++) {
		version_kind = vs[k].kind < 0 ? SAMPLER_VERSION_FREED64 : vs[k].kind;
		version_start = vs[k].start;
		names_mode = vs[k].kind < 0 ? NAMES_VERSION_UNREADABLE : NAMES_VERSION;
		run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
		names_mode = NAMES_EVERY;
		assert_true(v.changed_seen);
		assert_int_equal(v.changed_unmoved, !kernel_has_loop() || !vs[k].cached);
		assert_int_equal(v.names_carried, 3 + 1);
		assert_int_equal(v.names_left + v.names_carried, v.captured * 3);
	}
	version_kind = SAMPLER_VERSION_NEXT32;
	/* made again (the same spec): the records of the old program read after it, which left
	 * out the names of codes it had sent, are named by the identities kept (run_child()
	 * asserts none missed; before, the new program's load threw them away) */
	names_mode = NAMES_RESTART;
	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	assert_true(v.names_carried >= 2 * 3);
	names_mode = NAMES_FAIL;
	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	assert_true(v.changed_seen);
	assert_true(v.epoch_failed > 0);
	assert_true(v.epoch_after < CAPTURE_EPOCH_STEP);
	assert_int_equal(v.epoch_after, v.epoch_failed);
	assert_int_equal(v.names_carried, 2 * 3);
	assert_int_equal(v.names_left + v.names_carried, v.captured * 3);
	/* moved to another CPU: per CPU, another ring, whose records carry each name once more
	 * (and none left out that its records did not carry: run_child() asserts none missed) */
	if (cpu_two < 0) {
		fprintf(stderr, "# skip: one CPU here, no other ring to move the child to\n");
		return;
	}
	names_mode = NAMES_MOVE;
	run_child(5, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	assert_int_equal(v.names_carried, (v.percpu ? 2 : 1) * 3);
	assert_int_equal(v.names_left + v.names_carried, v.captured * 3);
}

/* spec.stacked: nodes read from a window of their page (read_node()), checked byte for byte as
 * above: a chain laid upwards (each node past the window read for the one before: read again),
 * and downwards as CPython's frames (a window serves the nodes below it in its page; some nodes
 * straddle a page's end: read alone); whole, cut, and up to an unmapped node. A node changed
 * between samples is seen changed (no window outlives its sample). */
static void test_capture_stacked(void **state)
{
	struct seen v;

	(void) state;
	if (!capture_allowed()) {
		skip();
		return;
	}
	stacked = true;
	for (int down = 0; down < 2; down++) {
		descending = down;
		chain_shapes();
	}
	names_mode = NAMES_CHANGE;
	run_child(NODES, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	stacked = descending = false;
	assert_true(v.node_changed_seen);
	assert_true(v.changed_seen);
}

/* The program as on a kernel before bpf_loop (a bounded loop): chains whole, cut, up to an
 * unmapped node, stacked both ways, and the names once. */
static void test_capture_bounded(void **state)
{
	struct seen v;

	(void) state;
	if (!capture_allowed()) {
		skip();
		return;
	}
	bounded = true;
	for (int down = 0; down < 2; down++) {
		descending = stacked = down;
		chain_shapes();
	}
	names_mode = NAMES_ONCE;
	run_child(NODES, SIZE_MAX, false, false, 0, GIL_NONE, GC_NONE, &v);
	names_mode = NAMES_EVERY;
	bounded = descending = stacked = false;
	assert_int_equal(v.names_carried, SAMPLER_CAPTURE_MAX_NODES - 2);
	assert_int_equal(v.names_left, (v.captured - 1) * (SAMPLER_CAPTURE_MAX_NODES - 2));
	/* no tail: the bounded loop's verifier follows each node */
	assert_int_equal(v.n_min, SAMPLER_CAPTURE_MAX_NODES);
	assert_int_equal(v.tail, 0);
}

/* A split record's identities found (capture_idents(), no BPF needed): node k of the record as
 * the program sends it (its address, bytes and check), its slot (identity, then names) */
static void r_node(unsigned char *rec, unsigned char *slots, size_t k, uint64_t check,
		   bool sent, uint64_t tag)
{
	unsigned char *p = rec + k * R_NODE;
	uint64_t w[5] = { 0x1000 + k, tag, k, ~k, tag << 8 };

	memset(p, 0, R_NODE);
	memcpy(p, w, sizeof(w));
	check = sent ? check | 1 : check & ~(uint64_t) 1;
	memcpy(p + 8 + sizeof(struct node), &check, 8);
	if (slots) {
		uint64_t id[3] = { tag + 8, tag * 3, tag * 5 }, name[2] = { tag * 7, tag * 11 };

		memset(slots + k * R_SLOT, 0, R_SLOT);
		if (sent) {
			memcpy(slots + k * R_SLOT, id, sizeof(id));
			memcpy(slots + k * R_SLOT + sizeof(id), name, sizeof(name));
		}
	}
}

/* Whether node k's identity is r_node(k, tag)'s (tag 0: none) */
static bool r_ident(const struct sample_capture *out, size_t k, uint64_t tag)
{
	uint64_t id[3] = { tag + 8, tag * 3, tag * 5 };

	return tag ? out->ident[k] && memcmp(out->ident[k], id, sizeof(id)) == 0 : !out->ident[k];
}

static void test_capture_idents(void **state)
{
	struct sampler *s = calloc(1, sizeof(*s));
	unsigned char rec[4 * R_NODE], slots[4 * R_SLOT];
	struct sample_capture out = { 0 };
	enum { MANY = 60000 };
	size_t found = 0, wrong = 0;

	(void) state;
	assert_non_null(s);
	s->capture = (struct capture) CAPTURE_INIT;
	s->capture.spec = spec;
	s->capture.spec.n_identity = 1;
	assert_int_equal(capture_node_stride(&s->capture.spec), R_NODE);
	assert_int_equal(capture_names_stride(&s->capture.spec), R_SLOT);
	assert_int_equal(capture_ident_bytes(&s->capture.spec), 24);
	/* two codes sent, one the reader was never sent: its identity none, counted */
	r_node(rec, slots, 0, 0xa0, true, 0x50);
	r_node(rec, slots, 1, 0xb0, true, 0x60);
	r_node(rec, slots, 2, 0xc0, false, 0);
	capture_idents(s, rec, 3, slots, 3, &out);
	assert_true(r_ident(&out, 0, 0x50) && r_ident(&out, 1, 0x60) && r_ident(&out, 2, 0));
	assert_int_equal(out.names_stride, R_SLOT);
	assert_int_equal(pf64(out.names + R_SLOT), 0x60 * 7);
	assert_ptr_equal(out.ident[1], slots + R_SLOT);
	assert_int_equal(s->stats.capture_ids_missed, 1);
	/* then by their checks alone, in a record with no names area: as sent */
	r_node(rec, NULL, 0, 0xb0, false, 0);
	r_node(rec, NULL, 1, 0xa0, false, 0);
	capture_idents(s, rec, 2, NULL, 0, &out);
	assert_true(r_ident(&out, 0, 0x60) && r_ident(&out, 1, 0x50));
	assert_null(out.names);
	/* ... names and all: the slot each check was sent in */
	assert_int_equal(pf64(out.ident[0] + 24), 0x60 * 7);
	assert_int_equal(pf64(out.ident[1] + 32), 0x50 * 11);
	/* a names area lost on the way: its codes' identities none, and not kept */
	r_node(rec, NULL, 0, 0xd0, true, 0x70);
	capture_idents(s, rec, 1, NULL, 0, &out);
	assert_true(r_ident(&out, 0, 0));
	r_node(rec, NULL, 0, 0xd0, false, 0);
	capture_idents(s, rec, 1, NULL, 0, &out);
	assert_true(r_ident(&out, 0, 0));
	assert_int_equal(s->stats.capture_ids_missed, 2);
	/* forgotten: the epoch before still serves records on their way; twice, no more */
	assert_int_equal(capture_forget(&s->capture), 0);
	r_node(rec, NULL, 0, 0xa0, false, 0);
	capture_idents(s, rec, 1, NULL, 0, &out);
	assert_true(r_ident(&out, 0, 0x50));
	assert_int_equal(capture_forget(&s->capture), 0);
	capture_idents(s, rec, 1, NULL, 0, &out);
	assert_true(r_ident(&out, 0, 0));
	assert_int_equal(s->stats.capture_ids_missed, 3);
	/* a tail's node (check 0): no identity, none missed */
	r_node(rec, NULL, 0, 0, false, 0);
	capture_idents(s, rec, 1, NULL, 0, &out);
	assert_true(r_ident(&out, 0, 0));
	assert_int_equal(s->stats.capture_ids_missed, 3);
	/* many codes: the table grows and holds them, up to where it forgets them (a full table;
	 * the program then sends each again): the later ones found, the earliest not, none wrong */
	for (uint64_t i = 1; i <= MANY; i++) {
		r_node(rec, slots, 0, i << 20, true, i + 1);
		capture_idents(s, rec, 1, slots, 1, &out);
	}
	for (uint64_t i = 1; i <= MANY; i++) {
		uint64_t missed = s->stats.capture_ids_missed;

		r_node(rec, NULL, 0, i << 20, false, 0);
		capture_idents(s, rec, 1, NULL, 0, &out);
		found += s->stats.capture_ids_missed == missed;
		wrong += !r_ident(&out, 0, s->stats.capture_ids_missed == missed ? i + 1 : 0);
		if (i == MANY)
			assert_int_equal(s->stats.capture_ids_missed, missed);
	}
	assert_int_equal(wrong, 0);
	assert_true(found >= MANY / 2 && found < MANY);
	assert_true(s->capture.ids[0].n + s->capture.ids[1].n == found);
	capture_close(&s->capture);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_specs),
		cmocka_unit_test(test_capture_live),
		cmocka_unit_test(test_capture_names_once),
		cmocka_unit_test(test_capture_stacked),
		cmocka_unit_test(test_capture_bounded),
		cmocka_unit_test(test_capture_idents),
	};

	cpus_find();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
