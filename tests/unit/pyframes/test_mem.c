/*
 * mem.c: pf_readv over readers with and without readv (a range that fails, a readv that fails
 * as a whole, more ranges than one call takes), the pid reader's readv on this process and on a
 * process whose main thread has exited (pthread_exit) while another runs on, and the
 * overlay of a capture's frames under every kind of read (overlaps, memory no longer mapped,
 * page-cache fills, readv ranges, its bounds).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pyframes/pyframes_internal.h"

#define BASE 0x100000ull
#define SIZE 0x10000ull
#define HOLE 0x108000ull   /* [HOLE, HOLE + 0x1000) reads fail */

struct fake {
	unsigned char mem[SIZE];
	int readv_result;       /* 0: behave; < 0: every readv call fails with it */
	unsigned reads, readv_calls;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	f->reads++;
	if (addr < BASE || addr + len > BASE + SIZE || addr + len < addr)
		return -EFAULT;
	if (addr < HOLE + 0x1000 && addr + len > HOLE)
		return -EFAULT;
	memcpy(buf, f->mem + (addr - BASE), len);
	return 0;
}

static int fake_readv(void *ctx, const struct remote_range *r, size_t n)
{
	struct fake *f = ctx;
	unsigned reads = f->reads;
	size_t i;

	assert_true(n >= 1 && n <= REMOTE_MEM_READV_MAX);
	f->readv_calls++;
	if (f->readv_result < 0)
		return f->readv_result;
	for (i = 0; i < n; i++)
		if (fake_read(ctx, r[i].addr, r[i].buf, r[i].len) < 0)
			break;
	f->reads = reads;
	return (int) i;
}

/* ranges 0..n-1 of 16 bytes at BASE + 64 i, those in bad[] in the hole */
static void ranges(struct remote_range *r, unsigned char (*buf)[16], size_t n, const size_t *bad,
		   size_t nbad)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		r[i] = (struct remote_range) { .addr = BASE + 64 * i, .buf = buf[i], .len = 16 };
		for (j = 0; j < nbad; j++)
			if (bad[j] == i)
				r[i].addr = HOLE + 64 * i % 0x1000;
	}
}

/* ok[] true except for bad[]; the ranges read hold their bytes (mem[i] = i) */
static void check_ok(unsigned char (*buf)[16], const bool *ok, size_t n, const size_t *bad,
		     size_t nbad)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		bool want = true;

		for (j = 0; j < nbad; j++)
			if (bad[j] == i)
				want = false;
		assert_int_equal(ok[i], want);
		if (want)
			assert_int_equal(buf[i][15], (unsigned char) (64 * i + 15));
	}
}

static void test_readv(void **state)
{
	static const size_t bad[] = { 1, 5 };
	struct fake *f = calloc(1, sizeof(*f));
	struct remote_mem rm = { .read = fake_read, .ctx = f };
	struct remote_range r[8];
	unsigned char buf[8][16];
	bool ok[8];
	uint64_t reads = 0;
	struct pf_mem m;
	size_t i;

	(void) state;
	assert_non_null(f);
	for (i = 0; i < SIZE; i++)
		f->mem[i] = (unsigned char) i;
	assert_int_equal(pf_mem_init(&m, &rm, &reads), 0);
	/* no readv: one read per range */
	ranges(r, buf, 8, bad, 2);
	assert_int_equal(pf_readv(&m, r, 8, ok), 0);
	check_ok(buf, ok, 8, bad, 2);
	assert_int_equal(reads, 8);
	/* readv: one call, and one more after each failed range */
	rm.readv = fake_readv;
	reads = 0;
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(pf_readv(&m, r, 8, ok), 0);
	check_ok(buf, ok, 8, bad, 2);
	assert_int_equal(f->readv_calls, 3);
	assert_int_equal(reads, 3);
	ranges(r, buf, 8, NULL, 0);
	f->readv_calls = 0;
	assert_int_equal(pf_readv(&m, r, 8, ok), 0);
	check_ok(buf, ok, 8, NULL, 0);
	assert_int_equal(f->readv_calls, 1);
	/* the last range failing ends it too */
	r[7].addr = HOLE;
	f->readv_calls = 0;
	assert_int_equal(pf_readv(&m, r, 8, ok), 0);
	assert_true(ok[6] && !ok[7]);
	assert_int_equal(f->readv_calls, 1);
	/* readv failing as a whole: one read per range instead */
	f->readv_result = -ENOMEM;
	f->reads = 0;
	ranges(r, buf, 8, bad, 2);
	assert_int_equal(pf_readv(&m, r, 8, ok), 0);
	check_ok(buf, ok, 8, bad, 2);
	assert_int_equal(f->reads, 8);
	/* the process gone */
	f->readv_result = -ESRCH;
	assert_int_equal(pf_readv(&m, r, 8, ok), -ESRCH);
	pf_mem_release(&m);
	free(f);
}

static void test_readv_many(void **state)
{
	size_t n = REMOTE_MEM_READV_MAX + 300, i;
	struct fake *f = calloc(1, sizeof(*f));
	struct remote_mem rm = { .read = fake_read, .readv = fake_readv, .ctx = f };
	struct remote_range *r = calloc(n, sizeof(*r));
	unsigned char *buf = calloc(n, 8);
	bool *ok = calloc(n, sizeof(*ok));
	struct pf_mem m;

	(void) state;
	assert_true(f && r && buf && ok);
	assert_int_equal(pf_mem_init(&m, &rm, NULL), 0);
	for (i = 0; i < n; i++)
		r[i] = (struct remote_range) { .addr = BASE + 8 * (i % 1024), .buf = buf + 8 * i, .len = 8 };
	assert_int_equal(pf_readv(&m, r, n, ok), 0);
	assert_int_equal(f->readv_calls, 2);
	for (i = 0; i < n; i++)
		assert_true(ok[i]);
	pf_mem_release(&m);
	free(ok);
	free(buf);
	free(r);
	free(f);
}

/* One node of a capture of frame_bytes 16: addr, then 16 bytes of val. */
static void node(unsigned char *nodes, size_t stride, size_t i, uint64_t addr, unsigned char val)
{
	memcpy(nodes + i * stride, &addr, 8);
	memset(nodes + i * stride + 8, val, 16);
}

static void test_overlay(void **state)
{
	enum { STRIDE = 8 + 16 + 8 };   /* room to spare after each frame's bytes */
	struct fake *f = calloc(1, sizeof(*f));
	struct remote_mem rm = { .read = fake_read, .readv = fake_readv, .ctx = f };
	unsigned char nodes[6 * STRIDE], buf[64], want[64];
	struct remote_range r[2];
	uint64_t reads = 0;
	struct pf_mem m;
	bool ok[2];
	size_t i;

	(void) state;
	assert_non_null(f);
	for (i = 0; i < SIZE; i++)
		f->mem[i] = (unsigned char) i;
	assert_int_equal(pf_mem_init(&m, &rm, &reads), 0);
	node(nodes, STRIDE, 0, BASE + 0x108, 0xbb);   /* overlaps the next one: the lower wins */
	node(nodes, STRIDE, 1, BASE + 0x100, 0xaa);
	node(nodes, STRIDE, 2, BASE + 0x100, 0xcc);   /* the same address again: the earlier wins */
	node(nodes, STRIDE, 3, HOLE + 0x40, 0xdd);     /* a frame no longer mapped */
	node(nodes, STRIDE, 4, 0, 0xee);               /* left out */
	node(nodes, STRIDE, 5, UINT64_MAX - 8, 0xee);  /* runs past the address space: left out */
	assert_int_equal(pf_mem_overlay_set(&m, nodes, 6, STRIDE, 16, NULL, 0, NULL), 0);
	/* through the page cache: live, 0xaa, the rest of 0xbb, live */
	for (i = 0; i < 40; i++)
		want[i] = (unsigned char) (0xf8 + i);
	memset(want + 8, 0xaa, 16);
	memset(want + 24, 0xbb, 8);
	assert_int_equal(pf_read(&m, BASE + 0xf8, buf, 40), 0);
	assert_memory_equal(buf, want, 40);
	/* the page it filled is patched too */
	reads = 0;
	assert_int_equal(pf_read(&m, BASE + 0x110, buf, 16), 0);
	assert_memory_equal(buf, want + 24, 16);
	assert_int_equal(reads, 0);
	/* uncached */
	assert_int_equal(pf_read_raw(&m, BASE + 0xf8, buf, 40), 0);
	assert_memory_equal(buf, want, 40);
	/* in full from the capture, though unmapped, and without a remote read */
	reads = 0;
	memset(want, 0xdd, 16);
	assert_int_equal(pf_read(&m, HOLE + 0x40, buf, 16), 0);
	assert_memory_equal(buf, want, 16);
	assert_int_equal(pf_read_raw(&m, HOLE + 0x48, buf, 8), 0);
	assert_memory_equal(buf, want, 8);
	assert_int_equal(pf_read(&m, BASE + 0x100, buf, 24), 0);   /* 0xaa then 0xbb: two spans */
	assert_int_equal(buf[0], 0xaa);
	assert_int_equal(buf[23], 0xbb);
	assert_int_equal(reads, 0);
	/* in part: the rest must still be readable */
	assert_int_equal(pf_read(&m, HOLE + 0x40, buf, 24), -EFAULT);
	/* readv: patched, and a range the capture holds in full is read */
	r[0] = (struct remote_range) { .addr = BASE + 0x100, .buf = buf, .len = 8 };
	r[1] = (struct remote_range) { .addr = HOLE + 0x40, .buf = buf + 8, .len = 16 };
	assert_int_equal(pf_readv(&m, r, 2, ok), 0);
	assert_true(ok[0] && ok[1]);
	assert_int_equal(buf[0], 0xaa);
	assert_int_equal(buf[8 + 15], 0xdd);
	/* cleared: live bytes again, the cache dropped */
	pf_mem_overlay_clear(&m);
	assert_int_equal(pf_read(&m, BASE + 0x100, buf, 1), 0);
	assert_int_equal(buf[0], 0x00);
	assert_int_equal(pf_read(&m, HOLE + 0x40, buf, 16), -EFAULT);
	/* bounds */
	assert_int_equal(pf_mem_overlay_set(&m, nodes, 6, 8 + 16 - 1, 16, NULL, 0, NULL), -EINVAL);
	assert_int_equal(pf_mem_overlay_set(&m, nodes, PYFRAMES_CAPTURE_MAX_NODES + 1, STRIDE, 16,
					    NULL, 0, NULL), -EINVAL);
	assert_int_equal(pf_mem_overlay_set(&m, NULL, 1, STRIDE, 16, NULL, 0, NULL), -EINVAL);
	assert_int_equal(pf_mem_overlay_set(&m, nodes, 1, STRIDE, 0, NULL, 0, NULL), -EINVAL);
	assert_int_equal(pf_mem_overlay_set(&m, nodes, 1, SIZE_MAX, 16, NULL, 0, NULL), -EINVAL);
	assert_int_equal(pf_mem_overlay_set(&m, nodes, 1, 8 + PYFRAMES_CAPTURE_FRAME_MAX + 8,
					    PYFRAMES_CAPTURE_FRAME_MAX + 8, NULL, 0, NULL), -EINVAL);
	assert_int_equal(m.n_spans, 0);
	pf_mem_release(&m);
	free(f);
}

/* process_vm_readv on ourselves: many ranges, one that is unmapped, ranges past it untried */
static void test_pid_readv(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct remote_mem rm;
	struct remote_range r[200];
	unsigned char buf[200][32];
	size_t i;

	(void) state;
	assert_true(p != MAP_FAILED);
	for (i = 0; i < (size_t) page; i++)
		p[i] = (unsigned char) (i * 7);
	assert_int_equal(munmap(p + page, page), 0);
	assert_int_equal(remote_mem_open_pid(getpid(), &rm), 0);
	assert_non_null(rm.readv);
	for (i = 0; i < 200; i++)
		r[i] = (struct remote_range) { .addr = (uintptr_t) p + 20 * i, .buf = buf[i], .len = 20 };
	assert_int_equal(rm.readv(rm.ctx, r, 200), 200);   /* over one syscall's iovecs */
	for (i = 0; i < 200; i++)
		assert_memory_equal(buf[i], p + 20 * i, 20);
	r[3].addr = (uintptr_t) p + page + 8;             /* unmapped */
	assert_int_equal(rm.readv(rm.ctx, r, 10), 3);
	r[0].addr = (uintptr_t) p + page;                 /* the first one */
	assert_int_equal(rm.readv(rm.ctx, r, 10), 0);
	r[0].addr = (uintptr_t) p + page - 8;             /* runs off the end of the mapping */
	assert_int_equal(rm.readv(rm.ctx, r, 10), 0);
	remote_mem_close(&rm);
	assert_null(rm.readv);
	assert_int_equal(munmap(p, page), 0);
	assert_int_equal(munmap(p + 2 * page, page), 0);
}

/* what the child below holds, at the same address as here (a fork's copy) */
static unsigned char marker[3 * 4096] = "zombie leader";

static void *sleep_forever(void *arg)
{
	(void) arg;
	for (;;)
		pause();
	return NULL;
}

static bool leader_zombie(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

/* A process whose main thread has called pthread_exit while another thread runs on: its memory
 * is read all the same (process_vm_readv answers ESRCH for the zombie leader), by read() and
 * readv(), a hole still a hole; once it is gone, -ESRCH. */
static void test_pid_zombie_leader(void **state)
{
	struct remote_mem rm;
	struct remote_range r[3];
	unsigned char buf[3][16], one[4096];
	pid_t pid;
	int status;

	(void) state;
	for (size_t i = 4096; i < sizeof(marker); i++)
		marker[i] = (unsigned char) (i * 13);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		/* gone with the test, even one that fails midway; holding no pipe of it */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || dup2(open("/dev/null", O_WRONLY), 1) < 0 ||
		    pthread_create(&t, NULL, sleep_forever, NULL) != 0)
			_exit(1);
		pthread_exit(NULL);
	}
	for (int i = 0; i < 2000 && !leader_zombie(pid); i++) {
		struct timespec ms = { 0, 1000000 };

		(void) nanosleep(&ms, NULL);
	}
	assert_true(leader_zombie(pid));
	assert_int_equal(remote_mem_open_pid(pid, &rm), 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(rm.read(rm.ctx, (uintptr_t) marker, buf[0], 14), 0);
	assert_string_equal((char *) buf[0], "zombie leader");
	assert_int_equal(rm.read(rm.ctx, (uintptr_t) marker + 4096, one, sizeof(one)), 0);
	assert_memory_equal(one, marker + 4096, sizeof(one));
	assert_int_equal(rm.read(rm.ctx, 8, buf[0], 8), -EFAULT);     /* page 0: unmapped */
	for (size_t i = 0; i < 3; i++)
		r[i] = (struct remote_range) { .addr = (uintptr_t) marker + 5000 + 100 * i,
					       .buf = buf[i], .len = 16 };
	assert_int_equal(rm.readv(rm.ctx, r, 3), 3);
	for (size_t i = 0; i < 3; i++)
		assert_memory_equal(buf[i], marker + 5000 + 100 * i, 16);
	r[1].addr = 8;
	assert_int_equal(rm.readv(rm.ctx, r, 3), 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(rm.read(rm.ctx, (uintptr_t) marker, buf[0], 14), -ESRCH);
	assert_int_equal(rm.readv(rm.ctx, r, 3), -ESRCH);
	remote_mem_close(&rm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readv),
		cmocka_unit_test(test_readv_many),
		cmocka_unit_test(test_pid_readv),
		cmocka_unit_test(test_pid_zombie_leader),
		cmocka_unit_test(test_overlay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
