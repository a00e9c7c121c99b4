/*
 * capture_prog.c's read_switch_regs() and capture.c's switch_wait(), live: a sampler with
 * opts.off_cpu and the capture from its start (no kernel callchain asked) on a forked child
 * whose main thread, in turn, blocks in a read of a pipe (another child writes to it each ms),
 * in nanosleep, and in a page fault (a userfaultfd page its other thread fills after 0.5 ms):
 * each switch sample's capture says where the thread was from the registers it entered the
 * kernel with: the read with its fd, nanosleep with its timespec's address (the same in the
 * child: a fork), the fault (not a syscall's, and the entry code it came in by the page
 * fault's, as /proc/kallsyms names it), and the other thread in its own calls; none unfound.
 * Twice: the capture started with the sampler; and started late, a program of the registers
 * alone running until then (as for a launched command), then the bounded loop's program (a
 * kernel before 5.17). Needs CAP_BPF
 * + CAP_PERFMON (root), and x86-64: skipped, saying so, without them; the fault skipped,
 * saying so, where userfaultfd is not allowed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampler/internal.h"

#define NAP_NS 200000
#define FAULT_DELAY_US 500
#define RUN_NS 1500000000ULL
#define ENTRIES 16

static const struct timespec nap = { 0, NAP_NS };
static int pipe_r = -1, uffd = -1;
static char *page;
static long page_size;

/* No root for any thread (none set): each record NO_ROOT, with its registers */
static const struct sampler_capture_spec spec = {
	.head_off1 = 0, .head_off2 = SAMPLER_CAPTURE_NO_OFF, .node_bytes = 16, .next_off = 0,
};

struct seen {
	pid_t main_tid;
	size_t samples, uncaptured, unknown, kernel;
	size_t reads, naps, faults;             /* the main thread's, as made; faults: FRED's, or
	                                         * in the kernel by its most frequent entry */
	uint64_t entries[ENTRIES];              /* the main thread's in the kernel by an entry: */
	size_t by_entry[ENTRIES];               /* ... how many by each (the rest: kernel) */
	size_t other_main;                      /* the main thread's other syscalls, but
	                                         * madvise (which may be preempted) */
	long other_nr;
	size_t helper;                          /* the other thread's syscalls */
};

static void on_sample(void *ctx, const struct sample *smp)
{
	struct seen *v = ctx;
	const struct sample_capture *c = smp->capture;

	if (!smp->off_cpu)
		return;
	v->samples++;
	if (!c || c->wait == SAMPLE_WAIT_NONE) {
		v->uncaptured++;
		return;
	}
	v->unknown += c->wait == SAMPLE_WAIT_UNKNOWN;
	if (smp->tid != v->main_tid) {
		v->kernel += c->wait == SAMPLE_WAIT_KERNEL;
		v->helper += c->wait == SAMPLE_WAIT_SYSCALL;
		return;
	}
	v->faults += c->wait == SAMPLE_WAIT_FAULT;
	if (c->wait == SAMPLE_WAIT_KERNEL) {
		size_t k = 0;

		while (k < ENTRIES && v->entries[k] && v->entries[k] != c->wait_entry)
			k++;
		if (k < ENTRIES && c->wait_entry) {
			v->entries[k] = c->wait_entry;
			v->by_entry[k]++;
		} else {
			v->kernel++;
		}
	}
	if (c->wait != SAMPLE_WAIT_SYSCALL)
		return;
	if (c->wait_nr == SYS_read && c->wait_arg == (uint64_t) pipe_r) {
		v->reads++;
	} else if (c->wait_nr == SYS_nanosleep && c->wait_arg == (uintptr_t) &nap) {
		v->naps++;
	} else if (c->wait_nr != SYS_madvise) {
		v->other_main++;
		v->other_nr = c->wait_nr;
	}
}

/* The child's other thread: fills each fault on the page, FAULT_DELAY_US late. */
static void *filler(void *arg)
{
	struct uffd_msg msg;
	struct pollfd p = { .fd = uffd, .events = POLLIN };

	(void) arg;
	for (;;) {
		struct uffdio_zeropage z;

		if (poll(&p, 1, -1) < 0 || read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		usleep(FAULT_DELAY_US);
		z = (struct uffdio_zeropage) { .range = { (uintptr_t) page, (uint64_t) page_size } };
		(void) ioctl(uffd, UFFDIO_ZEROPAGE, &z);
	}
	return NULL;
}

/* A page whose faults wait for filler(): true where userfaultfd lets this process have one. */
static bool fault_page(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	page_size = sysconf(_SC_PAGESIZE);
	uffd = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
		return false;
	page = mmap(NULL, (size_t) page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (page == MAP_FAILED)
		return false;
	reg = (struct uffdio_register) { .range = { (uintptr_t) page, (uint64_t) page_size },
					 .mode = UFFDIO_REGISTER_MODE_MISSING };
	return ioctl(uffd, UFFDIO_REGISTER, &reg) == 0;
}

/* The child: says 'f' once its page faults wait (its own: a fork's copy of another's
 * registration would not), else 'n' and the errno. */
static void child(int ready)
{
	bool faults = fault_page();
	int e = errno;
	pthread_t t;
	char byte;

	if (faults && pthread_create(&t, NULL, filler, NULL) != 0)
		_exit(1);
	(void) write(ready, faults ? "f" : "n", 1);
	if (!faults)
		(void) write(ready, &e, sizeof(e));
	for (;;) {
		if (read(pipe_r, &byte, 1) < 0)
			_exit(1);
		(void) syscall(SYS_nanosleep, &nap, NULL);
		if (faults) {
			*(volatile char *) page = 1;    /* waits for filler() */
			(void) madvise(page, (size_t) page_size, MADV_DONTNEED);
		}
	}
}

/* The kernel function at addr, as /proc/kallsyms says (the nearest symbol at or below it), into
 * name; false where it hides the addresses (kptr_restrict) or cannot be read. */
static bool kernel_function(uint64_t addr, char *name, size_t len)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long a, best = 0;
	char type, sym[256];

	if (!f)
		return false;
	name[0] = '\0';
	while (fscanf(f, "%llx %c %255s%*[^\n]", &a, &type, sym) == 3) {
		if (a && a <= addr && a >= best && (type == 't' || type == 'T')) {
			best = a;
			snprintf(name, len, "%s", sym);
		}
	}
	fclose(f);
	return best != 0;
}

static void writer(int w)
{
	for (;;) {
		if (write(w, "x", 1) < 0)
			_exit(0);
		usleep(1000);
	}
}

static void run(bool late)
{
	struct event_spec ev;
	struct sampler_opts o = { .n_events = 1, .period = 1, .off_cpu = true, .capture = true,
				  .capture_spec = &spec, .ring_pages = 256 };
	struct sampler *s = NULL;
	struct seen v = { 0 };
	volatile sig_atomic_t stop = 0;
	int p[2], ready[2], r_new, r_run = -1, status, e = 0;
	bool faults, regs = false, chain = true;
	pid_t pid, wpid;
	size_t top = 0;
	char byte = 0;

#if !defined(__x86_64__)
	fprintf(stderr, "# skip: the program reads x86-64's registers only\n");
	return;
#endif
	if (sampler_capture_probe() < 0) {
		fprintf(stderr, "# skip: cannot load BPF perf-event programs here (capture needs "
			"CAP_BPF and CAP_PERFMON)\n");
		return;
	}
	assert_int_equal(events_parse("context-switches", &ev), 0);
	o.events = &ev;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(ready), 0);
	pipe_r = p[0];
	wpid = fork();
	assert_true(wpid >= 0);
	if (wpid == 0)
		writer(p[1]);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(ready[1]);
	close(ready[1]);
	while (read(ready[0], &byte, 1) < 0 && errno == EINTR)
		;
	faults = byte == 'f';
	if (!faults && read(ready[0], &e, sizeof(e)) == (ssize_t) sizeof(e))
		fprintf(stderr, "# skip: no userfaultfd here (%s): no page fault waited in\n",
			strerror(e));
	close(ready[0]);
	v.main_tid = pid;
	o.pid = pid;
	if (late)
		o.capture_spec = NULL;
	r_new = sampler_new(&o, &s);
	if (r_new == 0) {
		/* the program put on the events from their open, no callchain asked */
		regs = s->capture.switch_regs && sampler_capture_error(s) == 0 &&
		       s->capture.regs_only == late;
		chain = (s->attrs[0].sample_type & PERF_SAMPLE_CALLCHAIN) != 0;
		if (regs && !chain)
			r_run = sampler_run(s, on_sample, &v, &stop, late ? RUN_NS / 3 : RUN_NS);
		if (late && r_run == 0) {
			s->capture.no_loop_helper = true;
			r_run = sampler_capture_start(s, &spec);
			regs = regs && !s->capture.regs_only && !s->capture.loop_helper;
			if (r_run == 0)
				r_run = sampler_run(s, on_sample, &v, &stop, RUN_NS);
		}
		sampler_stop(s);
		sampler_free(s);
	}
	/* the faults' entry: the most frequent; the others' samples in the kernel otherwise */
	for (size_t k = 0; k < ENTRIES; k++)
		if (v.by_entry[k] > v.by_entry[top])
			top = k;
	v.faults += v.by_entry[top];
	for (size_t k = 0; k < ENTRIES; k++)
		v.kernel += k == top ? 0 : v.by_entry[k];
	(void) kill(pid, SIGKILL);
	(void) kill(wpid, SIGKILL);
	(void) waitpid(pid, &status, 0);
	(void) waitpid(wpid, &status, 0);
	fprintf(stderr, "# %zu switch samples: %zu read, %zu nanosleep, %zu fault, %zu other "
		"(last %ld), %zu the other thread's calls, %zu kernel, %zu unknown, %zu without\n",
		v.samples, v.reads, v.naps, v.faults, v.other_main, v.other_nr, v.helper, v.kernel,
		v.unknown, v.uncaptured);
	assert_int_equal(r_new, 0);
	assert_true(regs && !chain);
	assert_int_equal(r_run, 0);
	/* ~1000 rounds a second: each wait many times, named as made */
	assert_true(v.reads >= 100 && v.naps >= 100);
	assert_true(!faults || (v.faults >= 100 && v.helper >= 100));
	if (faults && v.by_entry[top]) {
		char name[256];

		if (kernel_function(v.entries[top], name, sizeof(name))) {
			fprintf(stderr, "# the faults' entry: %s\n", name);
			assert_true(!strcmp(name, "asm_exc_page_fault") ||
				    !strcmp(name, "page_fault") || !strcmp(name, "async_page_fault"));
		} else {
			fprintf(stderr, "# skip: /proc/kallsyms hides its addresses: the faults' "
				"entry not named\n");
		}
	}
	assert_int_equal(v.unknown, 0);
	/* the main thread makes no other call (but madvise, which may be preempted) */
	assert_int_equal(v.other_main, 0);
	assert_true(v.uncaptured + v.kernel <= v.samples / 20);
}

static void test_switch_regs_live(void **state)
{
	(void) state;
	run(false);
}

static void test_switch_regs_late(void **state)
{
	(void) state;
	run(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_regs_live),
		cmocka_unit_test(test_switch_regs_late),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
