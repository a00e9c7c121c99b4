/*
 * capture.c: the generated BPF program passes this kernel's verifier for the specs pyframes
 * produces (and bad specs are refused before it), and, live on a forked child that holds a
 * known chain of nodes in memory and spins, every sample arrives with that chain copied at
 * its overflow: whole, cut at SAMPLER_CAPTURE_MAX_NODES, up to an unreadable node, or nothing
 * before the thread has a root. Needs CAP_BPF + CAP_PERFMON (root): skipped, saying so,
 * without them.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/internal.h"

/* The child's chain, at the same addresses in parent and child (fork, no exec). */
struct node {
	uint64_t marker;
	struct node *next;      /* next_off 8 */
	uint64_t a, b;
};

/* volatile: the child writes them for the kernel's eyes only */
#define NODES 300
static volatile struct node nodes[NODES];
static volatile struct { char pad[24]; volatile void *cframe; } root;       /* head_off1 = 24 */
static volatile struct { char pad[8]; volatile struct node *head; } cframe; /* head_off2 = 8 */

static const struct sampler_capture_spec spec = { 24, 8, sizeof(struct node), 8 };

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
	};
	static const struct sampler_capture_spec bad[] = {
		{ 24, SAMPLER_CAPTURE_NO_OFF, 0, 0 },          /* no bytes */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 100, 24 },       /* not a multiple of 8 */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 136, 24 },       /* too big */
		{ 24, SAMPLER_CAPTURE_NO_OFF, 32, 32 },        /* link outside the node */
		{ 1u << 20, SAMPLER_CAPTURE_NO_OFF, 32, 8 },   /* offset out of range */
	};

	(void) state;
	if (!capture_allowed()) {
		skip();
		return;
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct capture c = { .prog_fd = -1, .roots_fd = -1, .scratch_fd = -1, .out_fd = -1 };

		assert_int_equal(capture_load(&c, &good[i]), 0);
		assert_true(c.prog_fd >= 0);
		/* loading again replaces the program */
		assert_int_equal(capture_load(&c, &good[(i + 1) % 6]), 0);
		capture_close(&c);
	}
	/* hwspy in a PID namespace of its own keys threads by that namespace's ids (the
	 * namespace-aware helper): forced here, in whichever namespace this runs */
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct capture c = { .prog_fd = -1, .roots_fd = -1, .scratch_fd = -1, .out_fd = -1 };

		assert_int_equal(capture_pidns(&c), 0);
		assert_true(c.pidns_chosen);
		assert_true(c.pidns_ino != 0);
		c.pidns = true;
		assert_int_equal(capture_load(&c, &good[i]), 0);
		assert_true(c.prog_fd >= 0);
		capture_close(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct capture c = { .prog_fd = -1, .roots_fd = -1, .scratch_fd = -1, .out_fd = -1 };

		assert_int_equal(capture_load(&c, &bad[i]), -EINVAL);
		capture_close(&c);
	}
}

/* Builds a chain of len nodes (node i -> i + 1), node bad_at's link pointing nowhere if
 * bad_at < len, and spins. */
static void child(size_t len, size_t bad_at)
{
	for (size_t i = 0; i < len; i++) {
		nodes[i].marker = 0xc0de0000u + i;
		nodes[i].a = i * 3;
		nodes[i].b = ~(uint64_t) i;
		nodes[i].next = i + 1 < len ? (struct node *) &nodes[i + 1] : NULL;
	}
	if (bad_at < len)
		nodes[bad_at].next = (struct node *) (uintptr_t) 0x10;
	cframe.head = len ? &nodes[0] : NULL;
	root.cframe = &cframe;
	for (volatile uint64_t x = 0;; x++)
		;
}

struct seen {
	size_t samples, captured, by_status[4];
	size_t n_min, n_max;
	bool bytes_ok, fields_ok;       /* every capture's bytes, and its other fields */
	int set_root_ret;
	size_t late_uncaptured;         /* samples without a capture after one with */
	size_t late_no_root;            /* captures without a root after one with */
	uint64_t want_root;
	bool late_root;                 /* the root is set after the first 150 ms */
	struct sampler *s;
	pid_t pid;
};

static int root_fn(void *ctx, pid_t tid, uint64_t *ret_root)
{
	struct seen *v = ctx;

	(void) tid;
	if (v->late_root)
		return -ENOENT;
	*ret_root = (uintptr_t) &root;
	return 0;
}

static void on_sample(void *ctx, const struct sample *smp)
{
	struct seen *v = ctx;
	const struct sample_capture *c = smp->capture;

	/* no assertions here: a failure must not leave the child spinning */
	v->samples++;
	if (!c) {
		v->late_uncaptured += v->captured > 0;
		return;
	}
	v->captured++;
	if (c->status < 0 || c->status >= 4) {
		v->fields_ok = false;
		return;
	}
	v->by_status[c->status]++;
	if (c->status == SAMPLE_CAPTURE_NO_ROOT) {
		v->fields_ok &= c->n == 0;
		v->late_no_root += v->by_status[SAMPLE_CAPTURE_OK] > 0;
		return;
	}
	if (c->root != (uintptr_t) &root || c->head != (uintptr_t) &nodes[0] ||
	    c->stride != 8 + sizeof(struct node)) {
		fprintf(stderr, "# status %d n %zu root %#lx head %#lx stride %zu\n", c->status, c->n,
			(unsigned long) c->root, (unsigned long) c->head, c->stride);
		v->fields_ok = false;
	}
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
		if (addr != (uintptr_t) &nodes[i] || got.marker != 0xc0de0000u + i ||
		    got.a != i * 3 || got.b != ~(uint64_t) i)
			v->bytes_ok = false;
	}
}

/* Samples a child holding a chain of len nodes for 300 ms; the capture starts with the sampler
 * (opts.capture_spec), or with sampler_capture_start() once it runs (late_start). */
static void run_child(size_t len, size_t bad_at, bool late_root, bool late_start, struct seen *v)
{
	struct event_spec ev;
	struct sampler_opts o = { .n_events = 1, .freq = 1000, .capture = true };
	volatile sig_atomic_t stop = 0;
	int status, r_new, r_start = -1, r_run = -1;
	uint64_t mismatched = 0;
	pid_t pid;

	assert_int_equal(events_parse("cpu-clock", &ev), 0);
	memset(v, 0, sizeof(*v));
	v->n_min = SIZE_MAX;
	v->bytes_ok = v->fields_ok = true;
	v->late_root = late_root;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(len, bad_at);
	v->pid = pid;
	o.events = &ev;
	o.pid = pid;
	if (!late_start) {
		o.capture_spec = &spec;
		o.capture_root_fn = root_fn;
		o.capture_root_ctx = v;
	}
	usleep(20000);                  /* let the child build its chain */
	r_new = sampler_new(&o, &v->s);
	if (r_new == 0) {
		r_start = late_start ? sampler_capture_start(v->s, &spec, root_fn, v)
				     : sampler_capture_error(v->s);
		if (r_start == 0 && sampler_capturing(v->s) && late_root) {
			r_run = sampler_run(v->s, on_sample, v, &stop, 150000000ULL);
			v->set_root_ret = sampler_capture_set_root(v->s, pid, (uintptr_t) &root);
			if (r_run == 0)
				r_run = sampler_run(v->s, on_sample, v, &stop, 150000000ULL);
		} else if (r_start == 0 && sampler_capturing(v->s)) {
			r_run = sampler_run(v->s, on_sample, v, &stop, 300000000ULL);
		}
		sampler_stop(v->s);
		mismatched = sampler_stats(v->s)->capture_mismatched;
		sampler_free(v->s);
	}
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, &status, 0);
	assert_int_equal(r_new, 0);
	assert_int_equal(r_start, 0);
	assert_int_equal(r_run, 0);
	assert_int_equal(mismatched, 0);
	assert_int_equal(v->set_root_ret, 0);
	assert_true(v->fields_ok);
	/* every sample came with its capture (started late: but those taken before) */
	assert_true(v->samples >= 50);
	if (late_start)
		assert_true(v->captured >= v->samples / 2);
	else
		assert_int_equal(v->captured, v->samples);
	assert_int_equal(v->late_uncaptured, 0);
	assert_true(v->bytes_ok);
}

static void test_capture_live(void **state)
{
	struct seen v;

	(void) state;
	if (!capture_allowed()) {
		skip();
		return;
	}
	/* a whole chain */
	run_child(5, SIZE_MAX, false, false, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
	assert_int_equal(v.n_min, 5);
	assert_int_equal(v.n_max, 5);
	/* longer than the program copies */
	run_child(NODES, SIZE_MAX, false, false, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_CUT], v.captured);
	assert_int_equal(v.n_min, SAMPLER_CAPTURE_MAX_NODES);
	/* node 3 links to an unmapped address: nodes 0-3 copied, then a fault */
	run_child(10, 3, false, false, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_FAULT], v.captured);
	assert_int_equal(v.n_min, 4);
	assert_int_equal(v.n_max, 4);
	/* no root for 150 ms: nothing copied, then the chain */
	run_child(5, SIZE_MAX, true, false, &v);
	assert_true(v.by_status[SAMPLE_CAPTURE_NO_ROOT] >= 50);
	assert_true(v.by_status[SAMPLE_CAPTURE_OK] >= 50);
	assert_int_equal(v.late_no_root, 0);
	assert_int_equal(v.n_min, 5);
	/* the program put on the running sampler's events */
	run_child(5, SIZE_MAX, false, true, &v);
	assert_int_equal(v.by_status[SAMPLE_CAPTURE_OK], v.captured);
	assert_int_equal(v.n_min, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_specs),
		cmocka_unit_test(test_capture_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
