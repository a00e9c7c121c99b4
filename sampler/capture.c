/*
 * capture: exact stacks without stopping the target. A BPF program attached to each thread's
 * sampling event runs at every overflow, in the kernel, in the sampled thread's context: from
 * the thread's root pointer (its PyThreadState, set by the caller per thread) it follows a
 * chain of nodes (Python frames) and copies the first node_bytes of each into a record that
 * goes, through a BPF_OUTPUT event redirected into the ring the sample goes to, just before the
 * sample itself: per thread (a thread's own event and ring, its slot in the out map) or, in the
 * per-CPU layout (percpu.c), the current CPU's (a CPU-wide event per CPU, BPF_F_CURRENT_CPU;
 * the roots map, keyed by tid, gets each thread as hwspy learns of it, or as the program finds
 * a new thread's root itself at its first sample: generate_search()). perf.c / percpu.c pair
 * the two; the sample then carries the capture.
 *
 * The program is generated here for one spec, its loop unrolled with every offset an
 * immediate, so the verifier of any kernel since 5.5 (bpf_probe_read_user) takes it and it
 * cannot read out of its buffer. The record (struct capture_record, native byte order, which
 * the generator writes and capture_match() reads by its offsetof), then n nodes of
 * capture_stride() bytes: the node's address and its copied bytes, then per extra (what the node
 * points to: a frame's code object and its names, which may be freed soon after the sample) the
 * address read (0: none) and its bytes. A failed extra read leaves its address 0 and the node
 * whole. The roots map's value, which the program reads and writes too, is struct root_value.
 */
#include <errno.h>
#include <linux/bpf.h>
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

#define CAPTURE_MAGIC 0x70737768u       /* "hwsp" */
#define CAPTURE_MAX_THREADS 4096
#define MAX_INSNS 16384         /* a privileged program may have 1M */
#define CTX_SAVE (-56)          /* the stack slot holding ctx (r6 walks the nodes; the search
				 * uses -48..-4) */
#define CAPTURE_SEARCH_TRIES 64         /* searches for a thread that has an entry, no root */
#define PROC_PID_INIT_INO 0xEFFFFFFCu   /* the initial PID namespace's inode (fixed) */

/* struct bpf_perf_event_data on x86-64: struct pt_regs (21 registers), then sample_period */
#define CTX_IP (16 * 8)
#define CTX_PERIOD (21 * 8)

/* The record's header, as the program writes it in its scratch slot and sends it; the nodes
 * follow (CAPTURE_HDR bytes in). */
struct capture_record {
	uint32_t magic;                 /* CAPTURE_MAGIC */
	uint32_t status;                /* SAMPLE_CAPTURE_* */
	uint32_t n;                     /* nodes copied */
	uint32_t slot;                  /* the thread's slot in the out map (root_value.slot) */
	uint64_t ip, period;            /* of the overflow: the sample's, to pair them */
	uint64_t head;                  /* the first node's address */
	uint64_t root;                  /* the thread's root, as the program found it */
};
#define CAPTURE_HDR sizeof(struct capture_record)
_Static_assert(sizeof(struct capture_record) == 48, "the capture record's header is 48 bytes");

/* The roots map's value, keyed by the thread id (u32). */
struct root_value {
	uint64_t root;
	uint32_t slot, tries;           /* tries: the program's searches for the root, failed */
};
_Static_assert(sizeof(struct root_value) == 16, "a roots map value is 16 bytes");

/* Offsets of a record's and a root value's fields, as the instructions' immediates */
#define REC_AT(field) ((int16_t) offsetof(struct capture_record, field))
#define ROOT_AT(field) ((int16_t) offsetof(struct root_value, field))

enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };

struct prog {
	struct bpf_insn insn[MAX_INSNS];
	size_t n;
	bool overflow;
};

struct fixup {
	size_t at;
};

static void emit(struct prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (p->n >= MAX_INSNS) {
		p->overflow = true;
		return;
	}
	p->insn[p->n++] = (struct bpf_insn) { .code = code, .dst_reg = dst, .src_reg = src,
					     .off = off, .imm = imm };
}

static void mov_reg(struct prog *p, uint8_t d, uint8_t s) { emit(p, BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0); }
static void mov_imm(struct prog *p, uint8_t d, int32_t i) { emit(p, BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i); }
static void add_imm(struct prog *p, uint8_t d, int32_t i) { emit(p, BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i); }
static void ldx(struct prog *p, uint8_t size, uint8_t d, uint8_t s, int16_t off) { emit(p, BPF_LDX | BPF_MEM | size, d, s, off, 0); }
static void stx(struct prog *p, uint8_t size, uint8_t d, uint8_t s, int16_t off) { emit(p, BPF_STX | BPF_MEM | size, d, s, off, 0); }
static void st(struct prog *p, uint8_t size, uint8_t d, int16_t off, int32_t i) { emit(p, BPF_ST | BPF_MEM | size, d, 0, off, i); }
static void call(struct prog *p, int32_t fn) { emit(p, BPF_JMP | BPF_CALL, 0, 0, 0, fn); }
static void ld_imm64(struct prog *p, uint8_t d, uint64_t v)
{
	emit(p, BPF_LD | BPF_DW | BPF_IMM, d, 0, 0, (int32_t) (uint32_t) v);
	emit(p, 0, 0, 0, 0, (int32_t) (uint32_t) (v >> 32));
}

static void ld_map(struct prog *p, uint8_t d, int fd)
{
	emit(p, BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd);
	emit(p, 0, 0, 0, 0, 0);
}

/* A forward jump whose target is set later by land(). */
static struct fixup jump_imm(struct prog *p, uint8_t op, uint8_t d, int32_t i)
{
	struct fixup f = { p->n };

	emit(p, BPF_JMP | op | BPF_K, d, 0, 0, i);
	return f;
}

static struct fixup jump_reg(struct prog *p, uint8_t op, uint8_t d, uint8_t s)
{
	struct fixup f = { p->n };

	emit(p, BPF_JMP | op | BPF_X, d, s, 0, 0);
	return f;
}

static void land(struct prog *p, struct fixup f)
{
	if (f.at < p->n && !p->overflow)
		p->insn[f.at].off = (int16_t) (p->n - f.at - 1);
}

size_t capture_stride(const struct sampler_capture_spec *spec)
{
	size_t n = 8 + spec->node_bytes;

	for (uint32_t i = 0; i < spec->n_extras && i < SAMPLER_CAPTURE_MAX_EXTRAS; i++)
		n += 8 + spec->extra[i].len;
	return n;
}

/* Where extra i's address lies in a node's body (past the node's own address). */
static uint32_t extra_at(const struct sampler_capture_spec *spec, uint32_t i)
{
	uint32_t at = spec->node_bytes;

	for (uint32_t k = 0; k < i; k++)
		at += 8 + spec->extra[k].len;
	return at;
}

/* r6 = the node: its extras. Without a branch (the verifier would follow each way of each):
 * a null pointer's read fails like any other, and the address kept is the one read, masked to
 * 0 where the read failed (r0 < 0). */
static void copy_extras(struct prog *p, const struct sampler_capture_spec *spec)
{
	for (uint32_t i = 0; i < spec->n_extras; i++) {
		const struct sampler_capture_extra *e = &spec->extra[i];
		int16_t at = (int16_t) (8 + extra_at(spec, i));

		ldx(p, BPF_DW, R3, R6, (int16_t) (8 + e->from));
		if (e->mask != UINT64_MAX)
			emit(p, BPF_ALU64 | BPF_AND | BPF_K, R3, 0, 0, (int32_t) e->mask);
		if (e->off)
			add_imm(p, R3, (int32_t) e->off);
		stx(p, BPF_DW, R6, R3, at);
		mov_reg(p, R1, R6);
		add_imm(p, R1, at + 8);
		mov_imm(p, R2, (int32_t) e->len);
		call(p, BPF_FUNC_probe_read_user);
		mov_reg(p, R1, R0);                       /* r1 = r0 < 0 ? 0 : ~0 */
		emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R1, 0, 0, 63);
		add_imm(p, R1, -1);
		ldx(p, BPF_DW, R2, R6, at);
		emit(p, BPF_ALU64 | BPF_AND | BPF_X, R2, R1, 0, 0);
		stx(p, BPF_DW, R6, R2, at);
	}
}

static size_t capture_value_size(const struct sampler_capture_spec *spec)
{
	return CAPTURE_HDR + SAMPLER_CAPTURE_MAX_NODES * capture_stride(spec);
}

/* r3 += off, then the u64 at r3 into the record's head field: the status says FAULT until the
 * read succeeded; a failed read jumps to the emit label (a fixup in to_emit). */
static void read_head(struct prog *p, uint32_t off, struct fixup *to_emit, size_t *ne)
{
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_FAULT);
	add_imm(p, R3, (int32_t) off);
	mov_reg(p, R1, R7);
	add_imm(p, R1, REC_AT(head));
	mov_imm(p, R2, 8);
	call(p, BPF_FUNC_probe_read_user);
	to_emit[(*ne)++] = jump_imm(p, BPF_JNE, R0, 0);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_OK);
}

/* u64 at fp+at := *(r3) (r3 set by the caller); a failed read jumps to a fixup in fail. */
static void read_stack(struct prog *p, int16_t at, struct fixup *fail, size_t *nf)
{
	mov_reg(p, R1, R10);
	add_imm(p, R1, at);
	mov_imm(p, R2, 8);
	call(p, BPF_FUNC_probe_read_user);
	fail[(*nf)++] = jump_imm(p, BPF_JNE, R0, 0);
}

/* After the roots lookup (r8 = the entry or 0): a thread with no root looks for it (see
 * sampler_capture_spec) and keeps what it finds in the roots map; r8 then points to
 * { root, slot, tries } (the entry, or the stack). An entry whose search failed counts the
 * try (CAPTURE_SEARCH_TRIES at most: a thread that runs no Python) and goes on rootless;
 * a thread with no entry and no root found is left to *ret_none (no capture). Stack: fp-4
 * the tid, fp-24 the value (VALUE_AT: a struct root_value), fp-32 the node, fp-40 its id,
 * fp-48 pid_tgid. */
#define VALUE_AT (-24)
static void generate_search(struct prog *p, const struct sampler_capture_spec *spec, int roots,
			    pid_t pid, struct fixup *ret_none)
{
	/* fail: two jumps per node, four before the first; skip: an id's read, its 0, its
	 * second read */
	struct fixup cont[3], fail[2 * SAMPLER_CAPTURE_SEARCH + 8], found[SAMPLER_CAPTURE_SEARCH];
	struct fixup f, skip[3];
	size_t nf = 0, nfound = 0;

	f = jump_imm(p, BPF_JEQ, R8, 0);
	ldx(p, BPF_DW, R1, R8, ROOT_AT(root));
	cont[0] = jump_imm(p, BPF_JNE, R1, 0);            /* it has its root */
	ldx(p, BPF_W, R1, R8, ROOT_AT(tries));
	cont[1] = jump_imm(p, BPF_JGE, R1, CAPTURE_SEARCH_TRIES);
	land(p, f);
	if (pid > 0) {                                    /* not a child process's thread */
		ldx(p, BPF_DW, R1, R10, -48);
		emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R1, 0, 0, 32);
		fail[nf++] = jump_imm(p, BPF_JNE, R1, pid);
	}
	ld_imm64(p, R3, spec->search_at);
	read_stack(p, -32, fail, &nf);
	ldx(p, BPF_DW, R3, R10, -32);
	fail[nf++] = jump_imm(p, BPF_JEQ, R3, 0);
	add_imm(p, R3, (int32_t) spec->search_list_off);
	read_stack(p, -32, fail, &nf);
	for (size_t k = 0; k < SAMPLER_CAPTURE_SEARCH; k++) {
		size_t ns = 0;

		ldx(p, BPF_DW, R7, R10, -32);             /* r7 = the node */
		fail[nf++] = jump_imm(p, BPF_JEQ, R7, 0);
		mov_reg(p, R3, R7);
		add_imm(p, R3, (int32_t) spec->search_id_off1);
		read_stack(p, -40, fail, &nf);
		nf--;                                     /* an unreadable id: the next node */
		skip[ns++] = fail[nf];
		if (spec->search_id_off2 != SAMPLER_CAPTURE_NO_OFF) {
			ldx(p, BPF_DW, R3, R10, -40);
			skip[ns++] = jump_imm(p, BPF_JEQ, R3, 0);
			add_imm(p, R3, (int32_t) spec->search_id_off2);
			read_stack(p, -40, skip, &ns);
		}
		ldx(p, BPF_W, R1, R10, -40);
		ldx(p, BPF_W, R2, R10, -4);
		found[nfound++] = jump_reg(p, BPF_JEQ, R1, R2);
		for (size_t i = 0; i < ns; i++)
			land(p, skip[i]);
		mov_reg(p, R3, R7);
		add_imm(p, R3, (int32_t) spec->search_next_off);
		read_stack(p, -32, fail, &nf);
	}
	for (size_t i = 0; i < nf; i++)
		land(p, fail[i]);
	*ret_none = jump_imm(p, BPF_JEQ, R8, 0);
	ldx(p, BPF_W, R1, R8, ROOT_AT(tries));
	add_imm(p, R1, 1);
	stx(p, BPF_W, R8, R1, ROOT_AT(tries));
	cont[2] = (struct fixup) { p->n };
	emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
	for (size_t i = 0; i < nfound; i++)
		land(p, found[i]);
	stx(p, BPF_DW, R10, R7, VALUE_AT + ROOT_AT(root)); /* { root, slot (kept), 0 tries } */
	st(p, BPF_W, R10, VALUE_AT + ROOT_AT(slot), 0);
	st(p, BPF_W, R10, VALUE_AT + ROOT_AT(tries), 0);
	f = jump_imm(p, BPF_JEQ, R8, 0);
	ldx(p, BPF_W, R1, R8, ROOT_AT(slot));
	stx(p, BPF_W, R10, R1, VALUE_AT + ROOT_AT(slot));
	land(p, f);
	ld_map(p, R1, roots);
	mov_reg(p, R2, R10);
	add_imm(p, R2, -4);
	mov_reg(p, R3, R10);
	add_imm(p, R3, VALUE_AT);
	mov_imm(p, R4, BPF_ANY);
	call(p, BPF_FUNC_map_update_elem);
	mov_reg(p, R8, R10);
	add_imm(p, R8, VALUE_AT);
	for (size_t i = 0; i < 3; i++)
		land(p, cont[i]);
}

/* The program for spec (see the top of this file); p->overflow if it did not fit. */
static void generate(struct prog *p, const struct sampler_capture_spec *spec, const struct capture *c)
{
	struct fixup to_emit[2 * SAMPLER_CAPTURE_MAX_NODES + 8], no_emit[3] = {
		{ SIZE_MAX }, { SIZE_MAX }, { SIZE_MAX } };
	size_t ne = 0, stride = capture_stride(spec);
	int roots = c->roots_fd, scratch = c->scratch_fd, out = c->out_fd;
	bool percpu = c->percpu;

	p->n = 0;
	p->overflow = false;
	mov_reg(p, R6, R1);                               /* r6 = ctx */
	stx(p, BPF_DW, R10, R1, CTX_SAVE);
	if (c->pidns) {
		/* struct bpf_pidns_info at r10 - 16: the thread's ids in our namespace, { u32 pid,
		 * u32 tgid }: as one u64, what bpf_get_current_pid_tgid gives; a thread not in it
		 * (the helper fails) is not one of ours */
		ld_imm64(p, R1, c->pidns_dev);
		ld_imm64(p, R2, c->pidns_ino);
		mov_reg(p, R3, R10);
		add_imm(p, R3, -16);
		mov_imm(p, R4, (int32_t) sizeof(struct bpf_pidns_info));
		call(p, BPF_FUNC_get_ns_current_pid_tgid);
		no_emit[2] = jump_imm(p, BPF_JNE, R0, 0);
		ldx(p, BPF_DW, R0, R10, -16);
	} else {
		call(p, BPF_FUNC_get_current_pid_tgid);
	}
	stx(p, BPF_W, R10, R0, -4);                       /* key: the thread id */
	stx(p, BPF_DW, R10, R0, -48);
	mov_reg(p, R2, R10);
	add_imm(p, R2, -4);
	ld_map(p, R1, roots);
	call(p, BPF_FUNC_map_lookup_elem);
	mov_reg(p, R8, R0);                               /* r8 = { root, slot, tries } */
	if (spec->search_at)
		generate_search(p, spec, roots, c->pid, &no_emit[0]);
	else
		no_emit[0] = jump_imm(p, BPF_JEQ, R8, 0); /* not one of our threads */
	/* the record is built in this CPU's slot of the scratch map (an array with a slot per
	 * CPU: a per-CPU map's values are at most 32 KiB); a program does not run twice at once
	 * on one CPU */
	call(p, BPF_FUNC_get_smp_processor_id);
	stx(p, BPF_W, R10, R0, -8);
	mov_reg(p, R2, R10);
	add_imm(p, R2, -8);
	ld_map(p, R1, scratch);
	call(p, BPF_FUNC_map_lookup_elem);
	no_emit[1] = jump_imm(p, BPF_JEQ, R0, 0);
	mov_reg(p, R7, R0);                               /* r7 = the record */
	st(p, BPF_W, R7, REC_AT(magic), (int32_t) CAPTURE_MAGIC);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_NO_ROOT);
	st(p, BPF_W, R7, REC_AT(n), 0);
	ldx(p, BPF_W, R1, R8, ROOT_AT(slot));
	stx(p, BPF_W, R7, R1, REC_AT(slot));
	ldx(p, BPF_DW, R1, R6, CTX_IP);
	stx(p, BPF_DW, R7, R1, REC_AT(ip));
	ldx(p, BPF_DW, R1, R6, CTX_PERIOD);
	stx(p, BPF_DW, R7, R1, REC_AT(period));
	st(p, BPF_DW, R7, REC_AT(head), 0);
	ldx(p, BPF_DW, R3, R8, ROOT_AT(root));
	stx(p, BPF_DW, R7, R3, REC_AT(root));
	mov_imm(p, R9, (int32_t) CAPTURE_HDR);            /* r9 = bytes to send */
	to_emit[ne++] = jump_imm(p, BPF_JEQ, R3, 0);
	/* head = *(root + off1), then *(head + off2) */
	read_head(p, spec->head_off1, to_emit, &ne);
	if (spec->head_off2 != SAMPLER_CAPTURE_NO_OFF) {
		ldx(p, BPF_DW, R3, R7, REC_AT(head));
		to_emit[ne++] = jump_imm(p, BPF_JEQ, R3, 0);
		read_head(p, spec->head_off2, to_emit, &ne);
	}
	ldx(p, BPF_DW, R8, R7, REC_AT(head));             /* r8 = the node to copy */
	for (size_t k = 0; k < SAMPLER_CAPTURE_MAX_NODES; k++) {
		int32_t at = (int32_t) (CAPTURE_HDR + k * stride);

		to_emit[ne++] = jump_imm(p, BPF_JEQ, R8, 0);
		mov_reg(p, R6, R7);                       /* r6 = the node in the record */
		add_imm(p, R6, at);
		stx(p, BPF_DW, R6, R8, 0);
		st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_FAULT);
		mov_reg(p, R1, R6);
		add_imm(p, R1, 8);
		mov_imm(p, R2, (int32_t) spec->node_bytes);
		mov_reg(p, R3, R8);
		call(p, BPF_FUNC_probe_read_user);
		to_emit[ne++] = jump_imm(p, BPF_JNE, R0, 0);
		st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_OK);
		st(p, BPF_W, R7, REC_AT(n), (int32_t) k + 1);
		mov_imm(p, R9, (int32_t) (at + (int32_t) stride));
		ldx(p, BPF_DW, R8, R6, (int16_t) (8 + spec->next_off));
		copy_extras(p, spec);
	}
	to_emit[ne++] = jump_imm(p, BPF_JEQ, R8, 0);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_CUT);
	for (size_t i = 0; i < ne; i++)
		land(p, to_emit[i]);
	/* emit: bpf_perf_event_output(ctx, out, slot, record, r9); per CPU, the flags are
	 * BPF_F_CURRENT_CPU (a 32-bit move of -1: zero-extended) */
	if (percpu)
		emit(p, BPF_ALU | BPF_MOV | BPF_K, R3, 0, 0, -1);
	else
		ldx(p, BPF_W, R3, R7, REC_AT(slot));
	ldx(p, BPF_DW, R1, R10, CTX_SAVE);
	ld_map(p, R2, out);
	mov_reg(p, R4, R7);
	mov_reg(p, R5, R9);
	call(p, BPF_FUNC_perf_event_output);
	land(p, no_emit[0]);
	land(p, no_emit[1]);
	land(p, no_emit[2]);
	mov_imm(p, R0, 1);                                /* and the sample itself, as usual */
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

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

static int map_delete(int fd, const void *key)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t) fd;
	a.key = (uintptr_t) key;
	return sys_bpf(BPF_MAP_DELETE_ELEM, &a);
}

static int prog_load(const struct prog *p)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	a.insns = (uintptr_t) p->insn;
	a.insn_cnt = (uint32_t) p->n;
	/* probe_read_user and perf_event_output are GPL-only helpers; hwspy is MIT */
	a.license = (uintptr_t) "Dual MIT/GPL";
	return sys_bpf(BPF_PROG_LOAD, &a);
}

static bool spec_ok(const struct sampler_capture_spec *spec)
{
	if (!(spec->node_bytes >= 8 && spec->node_bytes <= SAMPLER_CAPTURE_MAX_NODE_BYTES &&
	      spec->node_bytes % 8 == 0 && spec->next_off + 8 <= spec->node_bytes &&
	      spec->head_off1 < 65536 &&
	      (spec->head_off2 == SAMPLER_CAPTURE_NO_OFF || spec->head_off2 < 65536) &&
	      spec->n_extras <= SAMPLER_CAPTURE_MAX_EXTRAS))
		return false;
	for (uint32_t i = 0; i < spec->n_extras; i++) {
		const struct sampler_capture_extra *e = &spec->extra[i];

		/* the pointer: 8 aligned bytes of the body before it; the mask an immediate */
		if (e->len < 8 || e->len > SAMPLER_CAPTURE_MAX_NODE_BYTES || e->len % 8 ||
		    e->off >= 65536 || e->from % 8 || e->from + 8 > extra_at(spec, i) ||
		    (e->mask != UINT64_MAX && (uint64_t) (int64_t) (int32_t) e->mask != e->mask))
			return false;
	}
	if (spec->search_at &&
	    !(spec->search_list_off < 65536 && spec->search_next_off < 65536 &&
	      spec->search_id_off1 < 65536 &&
	      (spec->search_id_off2 == SAMPLER_CAPTURE_NO_OFF || spec->search_id_off2 < 65536)))
		return false;
	return capture_stride(spec) <= SAMPLER_CAPTURE_MAX_STRIDE;
}

int sampler_capture_probe(void)
{
	struct sampler_capture_spec spec = { 0, SAMPLER_CAPTURE_NO_OFF, 16, 0 };
	struct capture c = { .prog_fd = -1, .roots_fd = -1, .scratch_fd = -1, .out_fd = -1 };
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

int capture_load(struct capture *c, const struct sampler_capture_spec *spec)
{
	struct prog *p;
	int r;

	if (!spec_ok(spec))
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
	if (c->scratch_fd >= 0)
		(void) close(c->scratch_fd);
	c->scratch_fd = -1;
	r = map_create(BPF_MAP_TYPE_ARRAY, 4, (uint32_t) capture_value_size(spec),
		       (uint32_t) (get_nprocs_conf() > 0 ? get_nprocs_conf() : 1));
	if (r < 0)
		return r;
	c->scratch_fd = r;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	generate(p, spec, c);
	r = p->overflow ? -E2BIG : prog_load(p);
	free(p);
	if (r < 0)
		return r;
	if (c->prog_fd >= 0)
		(void) close(c->prog_fd);
	c->prog_fd = r;
	c->spec = *spec;
	return 0;
}

void capture_close(struct capture *c)
{
	int *fds[] = { &c->prog_fd, &c->roots_fd, &c->scratch_fd, &c->out_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			(void) close(*fds[i]);
		*fds[i] = -1;
	}
	free(c->slots);
	c->slots = NULL;
	free(c->held);
	c->held = NULL;
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

/* Per CPU: the program on each of t's groups (inherited by the threads it starts), its root. */
static int capture_thread_open_percpu(struct sampler *s, struct thread *t)
{
	size_t n = s->opts.n_events;

	if (s->capture.prog_fd < 0 || t->prog)
		return 0;
	for (int c = 0; t->cpu_fds && c < s->ncpu; c++) {
		int fd = t->cpu_fds[(size_t) c * n];

		if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, s->capture.prog_fd) < 0)
			return -errno;
	}
	t->prog = t->cpu_fds != NULL;
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

	if (s->percpu)
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
	if (ioctl(t->fds[0], PERF_EVENT_IOC_SET_BPF, c->prog_fd) < 0) {
		r = -errno;
		goto fail;
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

	if (t->slot >= 0) {
		uint32_t slot = (uint32_t) t->slot;

		if (c->out_fd >= 0 && !s->percpu)     /* per CPU: the out map is the CPUs' */
			(void) map_delete(c->out_fd, &slot);
		slot_put(c, t->slot);
	}
	/* per CPU, the program may have made the entry of a thread learned late */
	if (c->roots_fd >= 0 && (t->slot >= 0 || s->percpu))
		(void) map_delete(c->roots_fd, &key);
	t->slot = -1;
	if (t->out_fd >= 0)
		(void) close(t->out_fd);
	t->out_fd = -1;
	t->out_id = 0;
	if (c->held_tid == t->tid)
		c->held_len = 0;
}

int sampler_capture_set_root(struct sampler *s, pid_t tid, uint64_t root)
{
	struct capture *c = &s->capture;
	struct root_value v = { .root = root };
	uint32_t key = (uint32_t) tid;

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

int sampler_capture_start(struct sampler *s, const struct sampler_capture_spec *spec)
{
	bool again = s->capture.prog_fd >= 0;
	int r;

	if (!s->opts.capture)
		return -EINVAL;
	if (!s->capture.held) {
		s->capture.held = malloc(RING_SCRATCH_SIZE);
		if (!s->capture.held)
			return -ENOMEM;
	}
	s->capture.pid = s->pid ? s->pid : s->opts.pid;
	r = capture_load(&s->capture, spec);
	if (r < 0)
		return r;
	/* the roots of the image before an exec, the program's included, are no roots now */
	for (size_t i = 0; again && i < s->n_threads; i++) {
		uint32_t key = (uint32_t) s->threads[i].tid;

		(void) map_delete(s->capture.roots_fd, &key);
	}
	for (int c = 0; s->percpu && c < s->ncpu; c++)
		if (capture_cpu_open(s, c) < 0)
			s->stats.capture_threads_failed++;
	for (size_t i = 0; i < s->n_threads; i++) {
		struct thread *t = &s->threads[i];

		if (!t->alive)
			continue;
		if (s->percpu && !t->cpu_fds) {         /* inherited: it has the program */
			capture_thread_root(s, t);
			continue;
		}
		if (again && t->prog) {
			/* a program stays on its event until the event is closed: open them anew */
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
			/* per CPU, the old events' last samples may still wait in the CPUs' rings
			 * (not drained here: this may run from a sample's callback): no total to
			 * count from, so each CPU's next sample weighs nothing, rather than the old
			 * counter's whole count (a weight-by-count event read 2x the faults) */
			for (int k = 0; s->percpu && t->cpu_last && k < t->n_cpu_fds; k++)
				t->cpu_last[k] = UINT64_MAX;
		} else {
			r = capture_thread_open(s, t);
		}
		if (r < 0)
			s->stats.capture_threads_failed++;
	}
	return 0;
}

bool sampler_capturing(const struct sampler *s)
{
	return s->capture.prog_fd >= 0;
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
	uint32_t len;

	c->held_len = 0;
	if (h->size < sizeof(*h) + 12 || !c->held)
		return;
	memcpy(&len, p, 4);
	if (len < CAPTURE_HDR || len > avail - 4 || len > RING_SCRATCH_SIZE)
		return;
	memcpy(c->held, p + 4, len);
	c->held_len = len;
	c->held_tid = tid;
}

/* The capture made at this sample's overflow, if the record before it was one. */
const struct sample_capture *capture_match(struct sampler *s, const struct thread *t,
					   const struct sample *smp)
{
	struct capture *c = &s->capture;
	struct capture_record h;
	size_t stride = capture_stride(&c->spec);

	/* a CPU's ring: the record right before the sample is its capture (checked below) */
	if (!c->held_len || (c->held_tid && c->held_tid != t->tid))
		return NULL;
	memcpy(&h, c->held, sizeof(h));         /* held_len >= CAPTURE_HDR (capture_hold()) */
	c->held_len_used = c->held_len;
	c->held_len = 0;
	/* a count event's sample carries no period (perf.c): its ip and place must do */
	if (h.magic != CAPTURE_MAGIC || h.ip != smp->ip ||
	    ((s->attrs[0].sample_type & PERF_SAMPLE_PERIOD) && h.period != smp->values[0]) ||
	    h.n > SAMPLER_CAPTURE_MAX_NODES || CAPTURE_HDR + h.n * stride > c->held_len_used ||
	    h.status > SAMPLE_CAPTURE_CUT) {
		s->stats.capture_mismatched++;
		return NULL;
	}
	c->out = (struct sample_capture) {
		.status = (int) h.status,
		.root = h.root,
		.head = h.head,
		.n = h.n,
		.stride = stride,
		.nodes = c->held + CAPTURE_HDR,
	};
	return &c->out;
}
