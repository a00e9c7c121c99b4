/*
 * test_sigcapture: the signal mode's copies are made at the overflow. The main thread switches
 * a fake interpreter's chain (root -> head -> nodes, each node pointing to a "code" object the
 * spec's extra copies) between two chains, A (3 nodes) and B (5), every ~0.1 ms, spinning in
 * spin_a() while A is the chain and in spin_b() while B is; a sampler with opts.signal, on
 * another thread, samples it at 2 kHz. Every sample whose IP is in spin_a() must carry A's
 * chain whole (status OK, 3 nodes, their code objects' tags), in spin_b() B's: a copy made
 * after the sample (nonblocking) would mismatch often. The sampler's threads are left out.
 * HWSPY_SIGCAP_HZ and HWSPY_SIGCAP_MS set that test's rate and length (2000, 600) to measure.
 *
 * The rings: the sampler's thread stalls 12 ms (its callback sleeps) 5 times while the main
 * thread spins at 2 kHz; the handler must find room for the ~24 records each stall leaves
 * unread (a ring of 8 dropped most). The slots: 200 threads, 2 at a time, each spinning ~5 ms
 * of CPU at 2 kHz; the threads after the 150th must be captured as the first ones (slots of
 * threads gone freed: 128 slots once held the first 128 for good, the others got none).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/sampler.h"
#include "tests/unit/sigtrap_test.h"

struct fcode { uint64_t tag, pad; };
struct fnode { uint64_t next, code, tag, pad; };
struct froot { uint64_t head; };

static struct fcode codes_a[3], codes_b[5];
static struct fnode chain_a[3], chain_b[5];
static struct froot root;
static volatile int spinning = 1;
static volatile double sink;

/* spin_a / spin_b in sections of their own: the linker's __start_/__stop_ bound their code */
__attribute__((noinline, section("hwspy_spin_a"))) static void spin_a(void)
{
	double x = 1.0;

	for (int i = 0; i < 20000; i++)
		x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline, section("hwspy_spin_b"))) static void spin_b(void)
{
	double x = 1.0;

	for (int i = 0; i < 20000; i++)
		x = x * 1.0000001 + 0.5;
	sink = x;
}

extern const char __start_hwspy_spin_a[], __stop_hwspy_spin_a[];
extern const char __start_hwspy_spin_b[], __stop_hwspy_spin_b[];

#define CHURN_THREADS 200
#define CHURN_AT_ONCE 2
#define CHURN_LATE 150                  /* the threads checked: from this one on */
#define CHURN_CPU_NS 5000000ULL

struct churn {
	pid_t tid;                      /* atomic: set by the thread before it spins */
	unsigned long samples, captured;
};

struct result {
	pid_t main_tid, sampler_tid;
	int r;
	unsigned long in_a, in_b, exact, wrong, uncaptured, sampler_own;
	struct sampler_stats st;
	uint64_t freq, duration_ms;
	/* the sampler's thread sleeps stall_ms every stall_every samples of the main thread, stalls
	 * times */
	unsigned stall_ms, stall_every, stalls;
	unsigned long since_stall;
	/* the churn test: the sampler runs until stop; ready once its events are open */
	struct churn *churn;
	volatile sig_atomic_t stop;
	int ready;                      /* atomic */
};

/* The faults test: chain B's third node points to no code (an address nothing is mapped at)
 * and its last node to no next node: a copy with that code zeroed, then a fault. */
static bool faulty;
#define NOWHERE 0x10                    /* below mmap_min_addr: never mapped */

/* The stacked test: chain B laid out downwards (each node's next just below it, as CPython's
 * frames mostly are), read a window at a time, and each code's second extra, its "name", left
 * out of a thread's later records once one carried it (n_identity 1): every node's code copied,
 * its name either copied right or left out (address 0, zeroes), never wrong, and copied at
 * least once per code. */
static bool stacked;
struct fname { uint64_t tag, pad; };
static struct fname names_b[5];
static unsigned long names_copied[5], names_left;

/* chain B's node k (from its head) */
static const struct fnode *b_node(size_t k)
{
	return stacked ? &chain_b[4 - k] : &chain_b[k];
}

static bool chain_is(const struct sample_capture *c, const struct fnode *chain, size_t n,
		     const struct fcode *codes)
{
	bool faults = faulty && chain == chain_b;

	if (c->status != (faults ? SAMPLE_CAPTURE_FAULT : SAMPLE_CAPTURE_OK) || c->n != n ||
	    c->head != (uintptr_t) (chain == chain_b ? b_node(0) : chain))
		return false;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *node = c->nodes + i * c->stride;
		const struct fnode *want = chain == chain_b ? b_node(i) : &chain[i];
		size_t at = stacked && chain == chain_b ? 4 - i : i;
		uint64_t addr, tag, code, code_tag, name, name_tag;
		bool none = faults && i == 2;

		memcpy(&addr, node, 8);
		memcpy(&tag, node + 8 + offsetof(struct fnode, tag), 8);
		memcpy(&code, node + 8 + sizeof(struct fnode), 8);
		memcpy(&code_tag, node + 8 + sizeof(struct fnode) + 8, 8);
		if (addr != (uintptr_t) want || tag != want->tag ||
		    code != (none ? 0 : (uintptr_t) &codes[at]) ||
		    code_tag != (none ? 0 : codes[at].tag))
			return false;
		if (!stacked)
			continue;
		memcpy(&name, node + 8 + sizeof(struct fnode) + 8 + sizeof(struct fcode), 8);
		memcpy(&name_tag, node + 8 + sizeof(struct fnode) + 8 + sizeof(struct fcode) + 8, 8);
		if (chain != chain_b)
			continue;
		if (name == (uintptr_t) &names_b[at] && name_tag == names_b[at].tag)
			names_copied[at]++;
		else if (name == 0 && name_tag == 0)
			names_left++;
		else
			return false;
	}
	return true;
}

static void on_sample(void *ctx, const struct sample *s)
{
	struct result *res = ctx;
	const char *ip = (const char *) (uintptr_t) s->ip;
	bool a = ip >= __start_hwspy_spin_a && ip < __stop_hwspy_spin_a;
	bool b = ip >= __start_hwspy_spin_b && ip < __stop_hwspy_spin_b;

	if (s->tid == res->sampler_tid)
		res->sampler_own++;
	for (size_t i = CHURN_THREADS; res->churn && i-- > 0;) {
		if (__atomic_load_n(&res->churn[i].tid, __ATOMIC_ACQUIRE) == s->tid) {
			res->churn[i].samples++;
			res->churn[i].captured += s->capture != NULL;
			break;
		}
	}
	if (s->tid != res->main_tid || (!a && !b))
		return;
	if (res->stalls && ++res->since_stall >= res->stall_every) {
		struct timespec ts = { 0, (long) res->stall_ms * 1000000L };

		res->since_stall = 0;
		res->stalls--;
		(void) nanosleep(&ts, NULL);
	}
	res->in_a += a;
	res->in_b += b;
	if (!s->capture) {
		res->uncaptured++;
		return;
	}
	if (a ? chain_is(s->capture, chain_a, 3, codes_a) : chain_is(s->capture, chain_b, 5, codes_b))
		res->exact++;
	else if (++res->wrong <= 5)
		/* what it was (seen rarely under ASan in full runs, never by hand): for the log */
		printf("# wrong: a sample in spin_%c at %llu ns has status %d, %zu nodes, head %s\n",
		       a ? 'a' : 'b', (unsigned long long) s->time_ns, (int) s->capture->status,
		       (size_t) s->capture->n, s->capture->head == (uintptr_t) chain_a ? "A's" :
		       s->capture->head == (uintptr_t) b_node(0) ? "B's" : "neither chain's");
}

static void *sampler_thread(void *arg)
{
	struct result *res = arg;
	struct event_spec ev;
	struct sampler_capture_spec spec = {
		.head_off1 = offsetof(struct froot, head), .head_off2 = SAMPLER_CAPTURE_NO_OFF,
		.node_bytes = sizeof(struct fnode), .next_off = offsetof(struct fnode, next),
		.n_extras = 1,
		.extra = { { .from = offsetof(struct fnode, code), .off = 0,
			     .len = sizeof(struct fcode), .mask = UINT64_MAX },
			   { .from = sizeof(struct fnode) + 8 + offsetof(struct fcode, pad),
			     .off = 0, .len = sizeof(struct fname), .mask = UINT64_MAX } },
	};
	struct sampler_opts o = { .pid = getpid(), .n_events = 1, .freq = res->freq, .signal = true,
				  .capture_spec = &spec, .events = &ev };
	struct sampler *s = NULL;
	int r;

	if (stacked) {
		spec.n_extras = 2;
		spec.n_identity = 1;
		spec.stacked = true;
	}
	res->sampler_tid = gettid();
	r = events_parse("cpu-clock", &ev);
	if (r == 0)
		r = sampler_new(&o, &s);
	if (r == 0)
		r = sampler_capture_set_root(s, res->main_tid, (uintptr_t) &root);
	__atomic_store_n(&res->ready, r == 0 ? 1 : -1, __ATOMIC_RELEASE);
	if (r == 0)
		r = sampler_run(s, on_sample, res, &res->stop, res->duration_ms * 1000000ULL);
	if (s) {
		sampler_stop(s);
		res->st = *sampler_stats(s);
	}
	sampler_free(s);
	res->r = r;
	spinning = 0;
	return NULL;
}

static void print_result(const struct result *res)
{
	printf("# samples %llu: in spin_a %lu, spin_b %lu; exact %lu, wrong %lu, uncaptured %lu; "
	       "signals %llu (records %llu, excluded %llu, dropped %llu, unpaired %llu), "
	       "held %llu (then paired %llu), "
	       "handler %.1f us a record on average, %.1f us at most\n",
	       (unsigned long long) res->st.samples, res->in_a, res->in_b, res->exact, res->wrong,
	       res->uncaptured, (unsigned long long) res->st.signal_seen,
	       (unsigned long long) res->st.signal_taken,
	       (unsigned long long) res->st.signal_excluded,
	       (unsigned long long) res->st.signal_dropped,
	       (unsigned long long) res->st.signal_unpaired,
	       (unsigned long long) res->st.signal_held,
	       (unsigned long long) res->st.signal_held_paired,
	       res->st.signal_taken ? res->st.signal_ns_total / 1e3 / (double) res->st.signal_taken : 0,
	       res->st.signal_ns_max / 1e3);
}

static void chains_init(void)
{
	for (size_t i = 0; i < 3; i++) {
		codes_a[i].tag = 0xa0 + i;
		chain_a[i] = (struct fnode) { i + 1 < 3 ? (uintptr_t) &chain_a[i + 1] : 0,
					      (uintptr_t) &codes_a[i], 0xa + i, 0 };
	}
	for (size_t i = 0; i < 5; i++) {
		codes_b[i].tag = 0xb0 + i;
		chain_b[i] = (struct fnode) { i + 1 < 5 ? (uintptr_t) &chain_b[i + 1] : 0,
					      (uintptr_t) &codes_b[i], 0xb + i, 0 };
	}
	if (faulty) {
		chain_b[2].code = NOWHERE;
		chain_b[4].next = NOWHERE;
	}
	for (size_t i = 0; stacked && i < 5; i++) {
		names_b[i].tag = 0xbb0 + i;
		codes_b[i].pad = (uintptr_t) &names_b[i];
		chain_b[i].next = i ? (uintptr_t) &chain_b[i - 1] : 0;
	}
}

/* res's sampler run while the main thread spins in spin_a()/spin_b() */
static void run_spinning(struct result *res)
{
	pthread_t t;

	chains_init();
	spinning = 1;
	assert_int_equal(pthread_create(&t, NULL, sampler_thread, res), 0);
	while (spinning) {
		__atomic_store_n(&root.head, (uintptr_t) chain_a, __ATOMIC_SEQ_CST);
		spin_a();
		__atomic_store_n(&root.head, (uintptr_t) b_node(0), __ATOMIC_SEQ_CST);
		spin_b();
	}
	pthread_join(t, NULL);
}

static void test_sigcapture_exact(void **state)
{
	const char *hz = getenv("HWSPY_SIGCAP_HZ"), *ms = getenv("HWSPY_SIGCAP_MS");
	struct result res = { .main_tid = gettid(), .freq = hz ? strtoull(hz, NULL, 10) : 2000,
			      .duration_ms = ms ? strtoull(ms, NULL, 10) : 600 };

	(void) state;
	run_spinning(&res);
	if (res.r == -EACCES || res.r == -EPERM)
		skip();
	assert_int_equal(res.r, 0);
	print_result(&res);
	assert_true(res.in_a + res.in_b > 100);
	assert_int_equal(res.wrong, 0);
	/* a record missing now and then: its thread was preempted between the overflow and its
	 * return to user space (the signal is delivered there), and its sample read meanwhile
	 * (measured 86-96% exact on a loaded 2-vCPU VM): that sample is read late, as in
	 * nonblocking mode, never given another overflow's copy (wrong) */
	assert_true(res.exact * 100 >= (res.in_a + res.in_b) * 88);
	/* a SIGTRAP not of its events: the default action, as before */
	assert_true(trap_acts_as_default());
}

/* 300 ms at 2 kHz with *variant set (the chains and the spec as it says): every sample of
 * chain A or B copied as the chain is, most of them exact. */
static void run_variant(bool *variant)
{
	struct result res = { .main_tid = gettid(), .freq = 2000, .duration_ms = 300 };

	*variant = true;
	run_spinning(&res);
	*variant = false;
	if (res.r == -EACCES || res.r == -EPERM)
		skip();
	assert_int_equal(res.r, 0);
	print_result(&res);
	assert_true(res.in_b > 20);
	assert_int_equal(res.wrong, 0);
	assert_true(res.exact * 100 >= (res.in_a + res.in_b) * 88);
}

/* A code pointer and a next pointer to nowhere (the handler reads in batches, which stop at
 * the first read that faults): the reads after it still made, the copy as the chain is. */
static void test_sigcapture_faults(void **state)
{
	(void) state;
	run_variant(&faulty);
}

static void test_sigcapture_stacked(void **state)
{
	(void) state;
	run_variant(&stacked);
	printf("# names copied %lu %lu %lu %lu %lu, left out %lu\n", names_copied[0],
	       names_copied[1], names_copied[2], names_copied[3], names_copied[4], names_left);
	for (size_t i = 0; i < 5; i++)
		assert_true(names_copied[i] >= 1);
	assert_true(names_left > 0);
}

/* The reader 12 ms late, 5 times, at 2 kHz: each thread's ring holds 16 ms of its samples. */
static void test_sigcapture_reader_late(void **state)
{
	struct result res = { .main_tid = gettid(), .freq = 2000, .duration_ms = 1500,
			      .stall_ms = 12, .stall_every = 200, .stalls = 5 };

	(void) state;
	run_spinning(&res);
	if (res.r == -EACCES || res.r == -EPERM)
		skip();
	assert_int_equal(res.r, 0);
	print_result(&res);
	assert_int_equal(res.stalls, 0);
	assert_int_equal(res.wrong, 0);
	/* one thread: what is dropped is a full ring's. With 8 records (4 ms at 2 kHz) a stall
	 * dropped ~16 (~80 in all with the CPU to spin; fewer where the spinner got less of it) */
	assert_true(res.st.signal_dropped <= 20);
}

static void *churn_thread(void *arg)
{
	struct churn *ch = arg;
	struct timespec ts;
	uint64_t t0;

	__atomic_store_n(&ch->tid, gettid(), __ATOMIC_RELEASE);
	(void) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	t0 = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
	do {
		spin_a();
		(void) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while ((uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec - t0 < CHURN_CPU_NS);
	return NULL;
}

/* More threads than the 128 slots, one after another: the late ones captured too. */
static void test_sigcapture_thread_churn(void **state)
{
	static struct churn churn[CHURN_THREADS];
	struct result res = { .main_tid = gettid(), .freq = 2000, .duration_ms = 30000,
			      .churn = churn };
	unsigned long early = 0, early_cap = 0, late = 0, late_cap = 0;
	pthread_t t, w[CHURN_AT_ONCE];
	int ready;

	(void) state;
	chains_init();
	assert_int_equal(pthread_create(&t, NULL, sampler_thread, &res), 0);
	while (!(ready = __atomic_load_n(&res.ready, __ATOMIC_ACQUIRE)))
		sched_yield();
	for (size_t i = 0; ready > 0 && i < CHURN_THREADS; i += CHURN_AT_ONCE) {
		for (size_t k = 0; k < CHURN_AT_ONCE; k++)
			assert_int_equal(pthread_create(&w[k], NULL, churn_thread, &churn[i + k]), 0);
		for (size_t k = 0; k < CHURN_AT_ONCE; k++)
			pthread_join(w[k], NULL);
	}
	res.stop = 1;
	pthread_join(t, NULL);
	if (res.r == -EACCES || res.r == -EPERM)
		skip();
	assert_int_equal(res.r, 0);
	for (size_t i = 0; i < CHURN_THREADS; i++) {
		if (i < CHURN_LATE) {
			early += churn[i].samples;
			early_cap += churn[i].captured;
		} else {
			late += churn[i].samples;
			late_cap += churn[i].captured;
		}
	}
	printf("# %d threads: the first %d's samples %lu, captured %lu (%.1f%%); the last %d's "
	       "%lu, captured %lu (%.1f%%); signals %llu (records %llu, dropped %llu, unpaired "
	       "%llu)\n", CHURN_THREADS, CHURN_LATE, early, early_cap,
	       early ? 100.0 * early_cap / early : 0, CHURN_THREADS - CHURN_LATE, late, late_cap,
	       late ? 100.0 * late_cap / late : 0, (unsigned long long) res.st.signal_seen,
	       (unsigned long long) res.st.signal_taken,
	       (unsigned long long) res.st.signal_dropped,
	       (unsigned long long) res.st.signal_unpaired);
	assert_true(late >= 100);
	/* as exact as the first threads (86-100% measured on a loaded VM); 0% once the 128 slots
	 * were held by threads gone */
	assert_true(late_cap * 100 >= late * 80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigcapture_exact),
		cmocka_unit_test(test_sigcapture_faults),
		cmocka_unit_test(test_sigcapture_stacked),
		cmocka_unit_test(test_sigcapture_reader_late),
		cmocka_unit_test(test_sigcapture_thread_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
