/*
 * capture_prog: the capture's BPF program (capture.c), generated for one spec: its nodes copied
 * by bpf_loop's callback (5.17+), or before that by a bounded loop whose offsets the verifier
 * follows as constants (5.3's bounded loops), so the verifier of any kernel since 5.5
 * (bpf_probe_read_user) takes it and it cannot read out of its buffer. It sends a record (struct capture_record,
 * internal.h: the generator writes it and capture_match() reads it, both by its offsetof), then
 * n nodes of capture_stride() bytes: the node's address and its copied bytes, then per extra
 * (what the node points to: a frame's code object and its names, which may be freed soon after
 * the sample) the address read (0: none) and its bytes. A failed extra read leaves its address
 * 0 and the node whole. With spec.n_identity, a node holds its code's check in place of its
 * extras, which go into a names area (internal.h's capture_split()): the identity ones and
 * the names only into the ring's first record that holds that code (copy_names()); with
 * bpf_loop, such a record goes on past SAMPLER_CAPTURE_MAX_NODES to capture_chain_max() nodes,
 * those a tail of their address and bytes alone, check 0 (~35 ns a node, not ~180: no read of
 * its code, which the reader reads from memory: a deep stack's outer frames, alive as long as
 * the frames inside them run). With
 * spec.gil_at, the header holds the GIL's two words too, with
 * spec.gc_at the GC's collecting word, both read before the chain. The roots map's value,
 * which the program reads and writes too, is struct root_value (internal.h).
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sampler/internal.h"

#define CTX_SAVE (-56)          /* the stack slot holding ctx (r6 walks the nodes; the search
				 * uses -48..-4) */
#define KNOWN_AT (-72)          /* a node's check and its inputs (struct capture_known_key) */
#define KNOWN_VALUE_AT (-80)    /* the known map's index; first the epoch map's key (u32 0) */
#define NODES_AT (-88)          /* the loop's nodes copied so far (u64) */
#define SLOT_AT (-96)           /* the loop's node's names slot: its offset in the record */
#define SLOT_PTR_AT (-104)      /* ... and a pointer to it */
#define REC_SAVE (-112)         /* the record (bpf_loop's context starts here) */
#define REUSE_ENTRY_AT (-120)   /* bpf_loop's callback: a reuse extra's entry (copy_reused()) */
#define CODE_ENTRY_AT (-128)    /* ... and the node's entry of the code cache (code_lookup()) */
#define CAPTURE_SEARCH_TRIES 64         /* searches for a thread that has an entry, no root */

/* struct bpf_perf_event_data on x86-64: struct pt_regs (21 registers), then sample_period */
#define CTX_IP (16 * 8)
#define CTX_PERIOD (21 * 8)
/* struct pt_regs's fields (the ctx's, and those read_switch_regs() reads) */
#define PT_R11 (6 * 8)
#define PT_AX (10 * 8)
#define PT_CX (11 * 8)
#define PT_DI (14 * 8)
#define PT_ORIG_AX (15 * 8)
#define PT_IP (16 * 8)
#define PT_CS (17 * 8)
#define PT_FLAGS (18 * 8)
#define PT_SP (19 * 8)
#define PT_SS (20 * 8)
#define PT_REGS_SIZE (21 * 8)
/* read_switch_regs()'s copy, below the slots above: the word under the frame, then the frame */
#define ENTRY_AT (-128 - PT_REGS_SIZE - 8)
#define USER_REGS_AT (ENTRY_AT + 8)
#define USER_CS 0x33                    /* x86-64's __USER_CS and __USER_DS */
#define USER_DS 0x2b

/* Offsets of a record's and a root value's fields, as the instructions' immediates */
#define REC_AT(field) ((int16_t) offsetof(struct capture_record, field))
#define ROOT_AT(field) ((int16_t) offsetof(struct root_value, field))

enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };

struct prog {
	struct bpf_insn *insn;
	size_t n, max;
	bool overflow;
	size_t callback_at;             /* where bpf_loop's callback starts (0: none) */
	size_t max_nodes;               /* the most nodes it copies: past the first
	                                 * SAMPLER_CAPTURE_MAX_NODES, a tail (node_body()) */
};

struct fixup {
	size_t at;
};

static void emit(struct prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (p->n >= p->max) {
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

/* Where extra i's address lies in a node's body (past the node's own address). */
static uint32_t extra_at(const struct sampler_capture_spec *spec, uint32_t i)
{
	uint32_t at = spec->node_bytes;

	for (uint32_t k = 0; k < i; k++)
		at += 8 + spec->extra[k].len;
	return at;
}

bool capture_split(const struct sampler_capture_spec *spec)
{
	return spec->n_identity > 0 && spec->n_identity < spec->n_extras &&
	       spec->n_extras <= SAMPLER_CAPTURE_MAX_EXTRAS;
}

/* A split record's node: its address, its bytes, its code's check (internal.h). */
size_t capture_node_stride(const struct sampler_capture_spec *spec)
{
	return capture_split(spec) ? 8 + spec->node_bytes + 8 : capture_stride(spec);
}

size_t capture_names_stride(const struct sampler_capture_spec *spec)
{
	return capture_split(spec) ? capture_stride(spec) - 8 - spec->node_bytes : 0;
}

size_t capture_ident_bytes(const struct sampler_capture_spec *spec)
{
	return capture_split(spec) ? extra_at(spec, spec->n_identity) - spec->node_bytes : 0;
}

size_t capture_chain_max(const struct sampler_capture_spec *spec)
{
	/* a perf record's size is a u16: the nodes record and its headers within it */
	return capture_split(spec) && CAPTURE_HDR + SAMPLER_CAPTURE_MAX_CHAIN *
	       capture_node_stride(spec) <= 65536 - 64 ? SAMPLER_CAPTURE_MAX_CHAIN
						      : SAMPLER_CAPTURE_MAX_NODES;
}

size_t capture_prog_nodes(const struct sampler_capture_spec *spec, bool helper)
{
	return helper ? capture_chain_max(spec) : SAMPLER_CAPTURE_MAX_NODES;
}

size_t capture_names_at(const struct sampler_capture_spec *spec)
{
	return CAPTURE_HDR + capture_chain_max(spec) * capture_node_stride(spec);
}

size_t capture_value_size(const struct sampler_capture_spec *spec)
{
	return capture_names_at(spec) + (capture_split(spec) ? CAPTURE_NAMES_HDR +
					  SAMPLER_CAPTURE_MAX_NODES * capture_names_stride(spec) : 0);
}

size_t capture_loop_at(const struct sampler_capture_spec *spec)
{
	return capture_value_size(spec);
}

size_t capture_window_at(const struct sampler_capture_spec *spec)
{
	return capture_loop_at(spec) + CAPTURE_LOOP_STATE;
}

/* Past the window: per reuse extra, a table of the reads made in this sample (REUSE_WAYS
 * entries by the address read, REUSE_ENTRY bytes each): the address (1: none yet in this
 * sample), whether the read succeeded (~0, else 0), the names slot it went into (its offset in
 * the record). */
#define REUSE_BITS 4
#define REUSE_WAYS (1 << REUSE_BITS)
#define REUSE_ENTRY 24
size_t capture_reuse_at(const struct sampler_capture_spec *spec, uint32_t i)
{
	size_t at = capture_window_at(spec) + (spec->stacked ? CAPTURE_WINDOW_HDR +
					       CAPTURE_WINDOW + SAMPLER_CAPTURE_MAX_NODE_BYTES : 0);

	for (uint32_t k = 0; k < i && k < SAMPLER_CAPTURE_MAX_EXTRAS; k++)
		if (spec->extra[k].reuse && k < spec->n_identity)
			at += REUSE_WAYS * REUSE_ENTRY;
	return at;
}

/* Past the reuse tables, where spec.version_at: the code cache, CODE_WAYS entries by the
 * code's address (per CPU: a slot of the scratch map), CODE_ENTRY bytes each: the code's
 * address (never 0), the ring and epoch (KNOWN_AT + 8), the version word's value at the read,
 * the check that read made (code_lookup()). */
#define CODE_BITS 9
#define CODE_WAYS (1 << CODE_BITS)
#define CODE_ENTRY 32
bool capture_code_cache(const struct sampler_capture_spec *spec)
{
	if (!spec->version_at || !spec->unique_at || !capture_split(spec) ||
	    spec->extra[0].from + 8 > spec->node_bytes)
		return false;
	/* every identity piece read from the node's one code pointer */
	for (uint32_t i = 1; i < spec->n_identity; i++)
		if (spec->extra[i].from != spec->extra[0].from ||
		    spec->extra[i].mask != spec->extra[0].mask)
			return false;
	return true;
}

bool capture_caches_codes(const struct capture *c, const struct sampler_capture_spec *spec,
			  bool helper)
{
	return helper && c->known_fd >= 0 && c->epoch_fd >= 0 && capture_code_cache(spec);
}

size_t capture_codes_at(const struct sampler_capture_spec *spec)
{
	return capture_reuse_at(spec, spec->n_extras);
}

size_t capture_scratch_size(const struct sampler_capture_spec *spec)
{
	return capture_codes_at(spec) + (capture_code_cache(spec) ? CODE_WAYS * CODE_ENTRY : 0);
}

size_t capture_stride(const struct sampler_capture_spec *spec)
{
	size_t n = 8 + spec->node_bytes;

	for (uint32_t i = 0; i < spec->n_extras && i < SAMPLER_CAPTURE_MAX_EXTRAS; i++)
		n += 8 + spec->extra[i].len;
	return n;
}

/* The loop's state in the scratch map, past the record (capture_loop_at()): what the verifier
 * knows of a map's words is nothing, so the callback's states meet after one pass; on the
 * stack, each node's differed (the constants of each offset). */
#define LOOP_NEXT 0
#define LOOP_BYTES 8
#define LOOP_NODES 16
#define LOOP_SLOT 24
#define LOOP_VERSION 32         /* spec.version_at's word, read at the sample */

/* r4 = the loop's state (r7 = the record). */
static void loop_state(struct prog *p, const struct sampler_capture_spec *spec)
{
	mov_reg(p, R4, R7);
	add_imm(p, R4, (int32_t) capture_loop_at(spec));
}

/* r4 = the destination of an extra at at bytes into the names slot whose pointer the stack
 * holds at SLOT_PTR_AT (see copy_extra()). */
static void extra_dst(struct prog *p, int32_t at)
{
	ldx(p, BPF_DW, R4, R10, SLOT_PTR_AT);
	add_imm(p, R4, at);
}

/* r3 = the address extra e of node r6 reads: its pointer (from the node's bytes, or past them
 * from its names slot, whose pointer the stack holds at SLOT_PTR_AT, where base is r10),
 * masked, plus its off. */
static void extra_addr(struct prog *p, const struct sampler_capture_spec *spec,
		       const struct sampler_capture_extra *e, uint8_t base)
{
	if (base == R10 && e->from >= spec->node_bytes) {
		ldx(p, BPF_DW, R3, R10, SLOT_PTR_AT);
		ldx(p, BPF_DW, R3, R3, (int16_t) (e->from - spec->node_bytes));
	} else {
		ldx(p, BPF_DW, R3, R6, (int16_t) (8 + e->from));
	}
	if (e->mask != UINT64_MAX)
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, R3, 0, 0, (int32_t) e->mask);
	if (e->off)
		add_imm(p, R3, (int32_t) e->off);
}

/* Extra e of the node r6, without a branch (the verifier would follow each way of each): its
 * address, then its bytes, at base + at (r6: in the node; r10: in the node's names slot,
 * whose pointer the stack holds at SLOT_PTR_AT, laid out as the node's body past its bytes,
 * where the pointer is read from too unless it lies in the node's bytes). A null pointer's
 * read fails like any other, and the address kept is the one read, masked to 0 where the read
 * failed (r0 < 0). */
static void copy_extra(struct prog *p, const struct sampler_capture_spec *spec,
		       const struct sampler_capture_extra *e, uint8_t base, int32_t at)
{
	uint8_t d = base == R6 ? R6 : R4;
	int16_t o = base == R6 ? (int16_t) at : 0;

	extra_addr(p, spec, e, base);
	if (d == R4)
		extra_dst(p, at);
	stx(p, BPF_DW, d, R3, o);
	mov_reg(p, R1, d);
	add_imm(p, R1, o + 8);
	mov_imm(p, R2, (int32_t) e->len);
	call(p, BPF_FUNC_probe_read_user);
	mov_reg(p, R1, R0);                       /* r1 = r0 < 0 ? 0 : ~0 */
	emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R1, 0, 0, 63);
	add_imm(p, R1, -1);
	if (d == R4)                              /* the call left r4 undefined */
		extra_dst(p, at);
	ldx(p, BPF_DW, R2, d, o);
	emit(p, BPF_ALU64 | BPF_AND | BPF_X, R2, R1, 0, 0);
	stx(p, BPF_DW, d, R2, o);
}

/* Copies n words from r2 + from_off to r4 + to_off (r3 the go-between). */
static void copy_words(struct prog *p, int32_t from_off, int32_t to_off, uint32_t n)
{
	for (uint32_t w = 0; w < n; w++) {
		ldx(p, BPF_DW, R3, R2, (int16_t) (from_off + 8 * w));
		stx(p, BPF_DW, R4, R3, (int16_t) (to_off + 8 * w));
	}
}

/* Reuse extra i of node r6 into its names slot (r7 the record, in the scratch map): where this
 * sample read its address before (the entry of its table that the address hashes to holds it),
 * the bytes of the slot that read went into, its address word the address, masked as that
 * read's was; else read (copy_extra()), and the entry made this read's. A code (or a string)
 * met again further down the stack is the same object in one sample: a recursion, a
 * framework's frames between each of its callbacks (nn.Module's _call_impl). A read costs
 * ~100 ns in the target; a miss costs a hash and five stores more. */
static void copy_reused(struct prog *p, const struct sampler_capture_spec *spec, uint32_t i)
{
	const struct sampler_capture_extra *e = &spec->extra[i];
	int32_t at = (int32_t) (extra_at(spec, i) - spec->node_bytes);
	int32_t table = (int32_t) capture_reuse_at(spec, i);
	int32_t lo = (int32_t) (capture_names_at(spec) + CAPTURE_NAMES_HDR);
	int32_t hi = lo + (int32_t) ((SAMPLER_CAPTURE_MAX_NODES - 1) * capture_names_stride(spec));
	struct fixup read[3], done;

	extra_addr(p, spec, e, R10);
	/* r2 = its entry: the top bits of a multiplicative hash of the address (by a 64-bit
	 * factor: a 32-bit one moves the top bits only with the address's own top bits) */
	ld_imm64(p, R2, 0x9e3779b97f4a7c15ull);
	emit(p, BPF_ALU64 | BPF_MUL | BPF_X, R2, R3, 0, 0);
	emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R2, 0, 0, 64 - REUSE_BITS);
	emit(p, BPF_ALU64 | BPF_MUL | BPF_K, R2, 0, 0, REUSE_ENTRY);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R2, R7, 0, 0);
	add_imm(p, R2, table);
	stx(p, BPF_DW, R10, R2, REUSE_ENTRY_AT);
	ldx(p, BPF_DW, R1, R2, 0);
	read[0] = jump_reg(p, BPF_JNE, R1, R3);
	/* the slot it went into; never out of the names area at run time (for the verifier) */
	ldx(p, BPF_DW, R5, R2, 16);
	read[1] = jump_imm(p, BPF_JLT, R5, lo);
	read[2] = jump_imm(p, BPF_JGT, R5, hi);
	ldx(p, BPF_DW, R1, R2, 8);
	emit(p, BPF_ALU64 | BPF_AND | BPF_X, R3, R1, 0, 0);
	extra_dst(p, at);
	stx(p, BPF_DW, R4, R3, 0);
	mov_reg(p, R2, R7);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R2, R5, 0, 0);
	add_imm(p, R2, at);
	copy_words(p, 8, 8, e->len / 8);
	done = (struct fixup) { p->n };
	emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
	for (size_t k = 0; k < 3; k++)
		land(p, read[k]);
	stx(p, BPF_DW, R2, R3, 0);
	copy_extra(p, spec, e, R10, at);
	ldx(p, BPF_DW, R2, R10, REUSE_ENTRY_AT);  /* copy_extra() left r1 the read's mask */
	stx(p, BPF_DW, R2, R1, 8);
	ldx(p, BPF_DW, R1, R10, SLOT_AT);
	stx(p, BPF_DW, R2, R1, 16);
	land(p, done);
}

/* r6 = the node: its extras [from, to), into base (copy_extra()); with reuse (bpf_loop's
 * callback, base r10), its reuse extras as copy_reused() says. */
static void copy_extras(struct prog *p, const struct sampler_capture_spec *spec, uint32_t from,
			uint32_t to, uint8_t base, bool reuse)
{
	for (uint32_t i = from; i < to; i++) {
		if (reuse && base == R10 && spec->extra[i].reuse && i < spec->n_identity)
			copy_reused(p, spec, i);
		else
			copy_extra(p, spec, &spec->extra[i], base, (int32_t) (base == R6 ?
				   8 + extra_at(spec, i) : extra_at(spec, i) - spec->node_bytes));
	}
}

/* The check of node r6's code: a digest of its identity extras (addresses and bytes, in its
 * names slot), the ring and the epoch, never 0, at KNOWN_AT (the ring and epoch after it:
 * known_key()). FNV-1a a word at a time in CHECK_LANES lanes (word k into lane k mod
 * CHECK_LANES, each from its own basis), the lanes folded into the first each by an FNV step,
 * the ring and epoch last, then the high half folded into the low (a product's low bits see
 * only the factors' low bits; xor alone did not do: a name's and a qualified name's pointers
 * moved by the same bits). One lane was a chain of 17 dependent products at 3.12 (~20 ns a
 * node); three run side by side. */
#define CHECK_LANES 3
static void node_check(struct prog *p, const struct sampler_capture_spec *spec)
{
	static const uint8_t lane[CHECK_LANES] = { R1, R4, R0 };
	uint32_t bytes = (uint32_t) capture_ident_bytes(spec);

	ldx(p, BPF_DW, R5, R10, SLOT_PTR_AT);
	ld_imm64(p, R3, 0x100000001b3ULL);
	for (uint32_t k = 0; k < CHECK_LANES; k++)
		ld_imm64(p, lane[k], 0xcbf29ce484222325ULL + k);
	for (uint32_t at = 0; at < bytes; at += 8) {
		uint8_t h = lane[(at / 8) % CHECK_LANES];

		ldx(p, BPF_DW, R2, R5, (int16_t) at);
		emit(p, BPF_ALU64 | BPF_XOR | BPF_X, h, R2, 0, 0);
		emit(p, BPF_ALU64 | BPF_MUL | BPF_X, h, R3, 0, 0);
	}
	for (uint32_t k = 1; k < CHECK_LANES; k++) {
		emit(p, BPF_ALU64 | BPF_XOR | BPF_X, R1, lane[k], 0, 0);
		emit(p, BPF_ALU64 | BPF_MUL | BPF_X, R1, R3, 0, 0);
	}
	ldx(p, BPF_DW, R2, R10, KNOWN_AT + 8);
	emit(p, BPF_ALU64 | BPF_XOR | BPF_X, R1, R2, 0, 0);
	emit(p, BPF_ALU64 | BPF_MUL | BPF_X, R1, R3, 0, 0);
	mov_reg(p, R2, R1);
	emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R2, 0, 0, 32);
	emit(p, BPF_ALU64 | BPF_XOR | BPF_X, R1, R2, 0, 0);
	emit(p, BPF_ALU64 | BPF_OR | BPF_K, R1, 0, 0, 1);
	stx(p, BPF_DW, R10, R1, KNOWN_AT);
}

/* Whether this ring's records carried node r6's code (its check at KNOWN_AT: node_check()): a
 * jump to *is_known if so; else falls through, the code marked known (unless !mark). The known
 * map is an array of 2^CAPTURE_KNOWN_BITS sets of CAPTURE_KNOWN_WAYS words and a count (a
 * lookup the verifier inlines: the LRU hash map's cost 30 ns a node more). A word holds the
 * check of a code marked known, its set the check's top bits; a code marked known takes the
 * ways of its set in turn, by its count (with one way a set, two codes of one set took turns,
 * each sent every sample). A code whose way another took is sent again; a known check is one
 * that was stored, its 64 bits equal (a code freed and another at its address with equal
 * identity words is the same code to the reader too: pyframes puts the code's version, or
 * before 3.12 a print of its names' text, in the identity for that). No branch but known or
 * not: the verifier follows each way of each node. Stack: KNOWN_VALUE_AT the set's index. */
static void known_check(struct prog *p, int known, struct fixup *is_known, bool mark)
{
	struct fixup no_set, miss;

	ldx(p, BPF_DW, R1, R10, KNOWN_AT);
	emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R1, 0, 0, 64 - CAPTURE_KNOWN_BITS);
	stx(p, BPF_W, R10, R1, KNOWN_VALUE_AT);
	ld_map(p, R1, known);
	mov_reg(p, R2, R10);
	add_imm(p, R2, KNOWN_VALUE_AT);
	call(p, BPF_FUNC_map_lookup_elem);
	no_set = jump_imm(p, BPF_JEQ, R0, 0);
	/* r4 = how many ways hold the check: per way, (w ^ check) == 0 as 1 - ((x | -x) >> 63) */
	ldx(p, BPF_DW, R2, R10, KNOWN_AT);
	mov_imm(p, R4, 0);
	for (size_t w = 0; w < CAPTURE_KNOWN_WAYS; w++) {
		ldx(p, BPF_DW, R1, R0, (int16_t) (8 * w));
		emit(p, BPF_ALU64 | BPF_XOR | BPF_X, R1, R2, 0, 0);
		mov_reg(p, R3, R1);
		emit(p, BPF_ALU64 | BPF_NEG, R3, 0, 0, 0);
		emit(p, BPF_ALU64 | BPF_OR | BPF_X, R1, R3, 0, 0);
		emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R1, 0, 0, 63);
		emit(p, BPF_ALU64 | BPF_XOR | BPF_K, R1, 0, 0, 1);
		emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R4, R1, 0, 0);
	}
	miss = jump_imm(p, BPF_JEQ, R4, 0);
	*is_known = jump_imm(p, BPF_JA, 0, 0);
	land(p, miss);
	if (!mark) {
		land(p, no_set);
		return;
	}
	/* the way the set's count says, and the count on */
	ldx(p, BPF_DW, R1, R0, (int16_t) (8 * CAPTURE_KNOWN_WAYS));
	mov_reg(p, R3, R1);
	add_imm(p, R3, 1);
	stx(p, BPF_DW, R0, R3, (int16_t) (8 * CAPTURE_KNOWN_WAYS));
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, CAPTURE_KNOWN_WAYS - 1);
	emit(p, BPF_ALU64 | BPF_LSH | BPF_K, R1, 0, 0, 3);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R0, R1, 0, 0);
	stx(p, BPF_DW, R0, R2, 0);
	land(p, no_set);
}

/* r3 = node r6's code address: the identity extras' one pointer, masked (extra_addr() less
 * the extra's off). */
static void code_addr(struct prog *p, const struct sampler_capture_spec *spec)
{
	const struct sampler_capture_extra *e = &spec->extra[0];

	ldx(p, BPF_DW, R3, R6, (int16_t) (8 + e->from));
	if (e->mask != UINT64_MAX)
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, R3, 0, 0, (int32_t) e->mask);
}

/* r6 = a node (its bytes read): r2 = its code's entry in the code cache (capture_codes_at();
 * at CODE_ENTRY_AT too), the top bits of a multiplicative hash of its code's address. Falls
 * through, KNOWN_AT its check, where the entry holds this address (not 0: the map's zeroed
 * entries), ring and epoch and the version word's value at this sample; else jumps to a fixup
 * in miss. */
#define CODE_MISSES 4
static void code_lookup(struct prog *p, const struct sampler_capture_spec *spec,
			struct fixup miss[CODE_MISSES])
{
	code_addr(p, spec);
	ld_imm64(p, R2, 0x9e3779b97f4a7c15ull);
	emit(p, BPF_ALU64 | BPF_MUL | BPF_X, R2, R3, 0, 0);
	emit(p, BPF_ALU64 | BPF_RSH | BPF_K, R2, 0, 0, 64 - CODE_BITS);
	emit(p, BPF_ALU64 | BPF_MUL | BPF_K, R2, 0, 0, CODE_ENTRY);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R2, R7, 0, 0);
	add_imm(p, R2, (int32_t) capture_codes_at(spec));
	stx(p, BPF_DW, R10, R2, CODE_ENTRY_AT);
	miss[3] = jump_imm(p, BPF_JEQ, R3, 0);
	ldx(p, BPF_DW, R1, R2, 0);
	miss[0] = jump_reg(p, BPF_JNE, R1, R3);
	ldx(p, BPF_DW, R1, R2, 8);
	ldx(p, BPF_DW, R4, R10, KNOWN_AT + 8);
	miss[1] = jump_reg(p, BPF_JNE, R1, R4);
	loop_state(p, spec);
	ldx(p, BPF_DW, R4, R4, LOOP_VERSION);
	ldx(p, BPF_DW, R1, R2, 16);
	miss[2] = jump_reg(p, BPF_JNE, R1, R4);
	ldx(p, BPF_DW, R1, R2, 24);
	stx(p, BPF_DW, R10, R1, KNOWN_AT);
}

/* The version word's value that says nothing: a failed read's, and for
 * SAMPLER_VERSION_NEXT32 a word no longer moving (0). No entry holds it. */
static uint64_t version_none(const struct sampler_capture_spec *spec)
{
	return spec->version_kind == SAMPLER_VERSION_NEXT32 ? 0 : UINT64_MAX;
}

/* After node_check() of a code whose unique word is not 0: its entry (CODE_ENTRY_AT) made
 * this read's (code_lookup()), where every identity read succeeded (its address word not 0:
 * a failed read is not kept) and the version word said something (version_none()). */
static void code_store(struct prog *p, const struct sampler_capture_spec *spec)
{
	struct fixup skip[SAMPLER_CAPTURE_MAX_EXTRAS + 1];
	size_t ns = 0;

	loop_state(p, spec);
	ldx(p, BPF_DW, R1, R4, LOOP_VERSION);
	ld_imm64(p, R2, version_none(spec));
	skip[ns++] = jump_reg(p, BPF_JEQ, R1, R2);
	ldx(p, BPF_DW, R5, R10, SLOT_PTR_AT);
	for (uint32_t i = 0; i < spec->n_identity && i < SAMPLER_CAPTURE_MAX_EXTRAS; i++) {
		ldx(p, BPF_DW, R3, R5, (int16_t) (extra_at(spec, i) - spec->node_bytes));
		skip[ns++] = jump_imm(p, BPF_JEQ, R3, 0);
	}
	ldx(p, BPF_DW, R2, R10, CODE_ENTRY_AT);
	code_addr(p, spec);
	stx(p, BPF_DW, R2, R3, 0);
	ldx(p, BPF_DW, R3, R10, KNOWN_AT + 8);
	stx(p, BPF_DW, R2, R3, 8);
	stx(p, BPF_DW, R2, R1, 16);
	ldx(p, BPF_DW, R3, R10, KNOWN_AT);
	stx(p, BPF_DW, R2, R3, 24);
	for (size_t k = 0; k < ns; k++)
		land(p, skip[k]);
}

/* r6 = a node: its identity extras copied into its names slot (capture_names_at(): sent as a
 * record of its own; the stack holds the slot's offset at SLOT_AT, a pointer to it at
 * SLOT_PTR_AT; reuse: copy_extras()'s), its check into the node (node_check()), and its
 * names (extras [n_id, n_extras)) into the slot, the record's names_end moved past it, unless
 * this ring's records carried this identity already (known >= 0: the known map, see
 * known_check()), in which case the check goes in with bit 0 clear and the slot's addresses
 * are 0. One branch a node (the verifier's time grows with them): a failed identity read makes
 * a check too, and its names, read through its zeroed bytes, fail anyway; a check is known
 * once it was sent, names whole or not (the reader reads what a capture lacks). With the code
 * cache (cache: capture_caches_codes(), known >= 0 then), a node whose code's check the cache
 * holds and the ring knows reads nothing; one it holds that the ring does not is read as any
 * other (its names to send). */
static void copy_names(struct prog *p, const struct sampler_capture_spec *spec, uint32_t n_id,
		       int known, bool reuse, bool cache)
{
	struct fixup is_known = { 0 }, done, fresh = { SIZE_MAX }, hit_known = { SIZE_MAX };
	struct fixup miss[CODE_MISSES] = { { SIZE_MAX }, { SIZE_MAX }, { SIZE_MAX }, { SIZE_MAX } };
	int16_t word = (int16_t) (8 + spec->node_bytes);

	if (cache) {
		code_lookup(p, spec, miss);
		known_check(p, known, &hit_known, false);
		for (size_t k = 0; k < CODE_MISSES; k++)
			land(p, miss[k]);
	}
	copy_extras(p, spec, 0, n_id, R10, reuse);
	node_check(p, spec);
	if (known >= 0 && spec->unique_at) {
		/* a code whose unique word is 0 (CPython's versions ran out) is one no check
		 * tells from another made at its address since: never known */
		ldx(p, BPF_DW, R1, R10, SLOT_PTR_AT);
		ldx(p, BPF_W, R1, R1, (int16_t) (spec->unique_at - spec->node_bytes));
		fresh = jump_imm(p, BPF_JEQ, R1, 0);
	}
	if (cache)
		code_store(p, spec);
	if (known >= 0)
		known_check(p, known, &is_known, true);
	land(p, fresh);
	ldx(p, BPF_DW, R1, R10, KNOWN_AT);
	stx(p, BPF_DW, R6, R1, word);
	copy_extras(p, spec, n_id, spec->n_extras, R10, false);
	ldx(p, BPF_DW, R1, R10, SLOT_AT);
	add_imm(p, R1, (int32_t) capture_names_stride(spec));
	stx(p, BPF_W, R7, R1, REC_AT(names_end));
	if (known < 0)
		return;
	done = (struct fixup) { p->n };
	emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
	land(p, is_known);
	land(p, hit_known);
	ldx(p, BPF_DW, R1, R10, KNOWN_AT);
	emit(p, BPF_ALU64 | BPF_XOR | BPF_K, R1, 0, 0, 1);
	stx(p, BPF_DW, R6, R1, word);
	/* a later node's names may move names_end past this slot: its addresses say none */
	ldx(p, BPF_DW, R4, R10, SLOT_PTR_AT);
	for (uint32_t i = 0; i < spec->n_extras; i++)
		st(p, BPF_DW, R4, (int16_t) (extra_at(spec, i) - spec->node_bytes), 0);
	land(p, done);
}

/* r3 = the output's flags (see generate()'s emit). */
static void emit_flags(struct prog *p, bool percpu)
{
	if (percpu)
		emit(p, BPF_ALU | BPF_MOV | BPF_K, R3, 0, 0, -1);
	else
		ldx(p, BPF_W, R3, R7, REC_AT(slot));
}

/* After an output (r0 its result; epoch >= 0: names once): where it failed (no room in the
 * ring, no output event on this CPU yet), the checks the record marked known went nowhere: the
 * epoch on by one, so that later records carry those codes again (the reader keeps no check of
 * an epoch it never saw). The reader, forgetting, moves it on past this (CAPTURE_EPOCH_STEP). */
static void epoch_on_failure(struct prog *p, int epoch)
{
	struct fixup sent, none;

	if (epoch < 0)
		return;
	sent = jump_imm(p, BPF_JEQ, R0, 0);
	st(p, BPF_W, R10, KNOWN_VALUE_AT, 0);
	mov_reg(p, R2, R10);
	add_imm(p, R2, KNOWN_VALUE_AT);
	ld_map(p, R1, epoch);
	call(p, BPF_FUNC_map_lookup_elem);
	none = jump_imm(p, BPF_JEQ, R0, 0);
	mov_imm(p, R1, 1);
	emit(p, BPF_STX | BPF_XADD | BPF_W, R0, R1, 0, 0);
	land(p, none);
	land(p, sent);
}

/* The names area, where the record's names_end says some were written: its header (the
 * magic), then its slots up to names_end, output before the record itself (epoch: as
 * epoch_on_failure()'s). */
static void emit_names(struct prog *p, const struct sampler_capture_spec *spec, int out,
		       bool percpu, int epoch)
{
	int32_t at = (int32_t) capture_names_at(spec);
	struct fixup skip[3];

	ldx(p, BPF_W, R1, R7, REC_AT(names_end));
	skip[0] = jump_imm(p, BPF_JEQ, R1, 0);
	skip[1] = jump_imm(p, BPF_JLT, R1,
			   at + (int32_t) (CAPTURE_NAMES_HDR + capture_names_stride(spec)));
	skip[2] = jump_imm(p, BPF_JGT, R1, (int32_t) capture_value_size(spec));
	mov_reg(p, R5, R1);
	add_imm(p, R5, -at);
	mov_reg(p, R4, R7);
	add_imm(p, R4, at);
	st(p, BPF_W, R4, 0, (int32_t) CAPTURE_NAMES_MAGIC);
	st(p, BPF_W, R4, 4, 0);
	emit_flags(p, percpu);
	ldx(p, BPF_DW, R1, R10, CTX_SAVE);
	ld_map(p, R2, out);
	call(p, BPF_FUNC_perf_event_output);
	epoch_on_failure(p, epoch);
	for (size_t i = 0; i < 3; i++)
		land(p, skip[i]);
}

/* The checks' ring and epoch (the epoch map's one value; 0 where there is none, epoch < 0) for
 * this sample (struct capture_known_key): the CPU (percpu; fp-8 holds it), else the thread
 * (fp-4 holds its id). A check known to the program is one whose identity went into an
 * earlier record of the same ring: the reader has read it before (capture_ids.c), where a
 * thread's records on two CPUs' rings may be read out of their order. */
static void known_key(struct prog *p, int epoch, bool percpu)
{
	struct fixup none;

	mov_imm(p, R1, 0);
	if (epoch >= 0) {
		st(p, BPF_W, R10, KNOWN_VALUE_AT, 0);
		mov_reg(p, R2, R10);
		add_imm(p, R2, KNOWN_VALUE_AT);
		ld_map(p, R1, epoch);
		call(p, BPF_FUNC_map_lookup_elem);
		mov_imm(p, R1, 0);
		none = jump_imm(p, BPF_JEQ, R0, 0);
		ldx(p, BPF_W, R1, R0, 0);
		land(p, none);
	}
	stx(p, BPF_W, R10, R1, KNOWN_AT + 12);
	ldx(p, BPF_W, R1, R10, percpu ? -8 : -4);
	stx(p, BPF_W, R10, R1, KNOWN_AT + 8);
	st(p, BPF_DW, R10, KNOWN_AT, 0);
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

/* The GIL's two words into the record (r7): gil_read stays 0 unless both reads succeed (a
 * failed read zeroes its bytes: no 0 could be told from a failure otherwise). Where the
 * target's words lie as the record's do (the locked word 8 bytes past the holder, as in every
 * CPython's _gil_runtime_state), one read of both: a read costs ~100 ns, its bytes little. */
static void read_gil(struct prog *p, const struct sampler_capture_spec *spec)
{
	struct fixup skip[2];

	st(p, BPF_W, R7, REC_AT(gil_read), 0);
	if ((uint64_t) spec->gil_locked_off == (uint64_t) spec->gil_holder_off +
	    (uint64_t) (REC_AT(gil_locked) - REC_AT(gil_holder))) {
		mov_reg(p, R1, R7);
		add_imm(p, R1, REC_AT(gil_holder));
		mov_imm(p, R2, REC_AT(gil_locked) + 4 - REC_AT(gil_holder));
		ld_imm64(p, R3, spec->gil_at + spec->gil_holder_off);
		call(p, BPF_FUNC_probe_read_user);
		skip[0] = jump_imm(p, BPF_JNE, R0, 0);
		st(p, BPF_W, R7, REC_AT(gil_read), 1);
		land(p, skip[0]);
		return;
	}
	mov_reg(p, R1, R7);
	add_imm(p, R1, REC_AT(gil_holder));
	mov_imm(p, R2, 8);
	ld_imm64(p, R3, spec->gil_at + spec->gil_holder_off);
	call(p, BPF_FUNC_probe_read_user);
	skip[0] = jump_imm(p, BPF_JNE, R0, 0);
	mov_reg(p, R1, R7);
	add_imm(p, R1, REC_AT(gil_locked));
	mov_imm(p, R2, 4);
	ld_imm64(p, R3, spec->gil_at + spec->gil_locked_off);
	call(p, BPF_FUNC_probe_read_user);
	skip[1] = jump_imm(p, BPF_JNE, R0, 0);
	st(p, BPF_W, R7, REC_AT(gil_read), 1);
	land(p, skip[0]);
	land(p, skip[1]);
}

/* The GC's collecting word into the record (r7): gc_read stays 0 unless the read succeeds. */
static void read_gc(struct prog *p, const struct sampler_capture_spec *spec)
{
	struct fixup skip;

	st(p, BPF_W, R7, REC_AT(gc_read), 0);
	mov_reg(p, R1, R7);
	add_imm(p, R1, REC_AT(gc_collecting));
	mov_imm(p, R2, 4);
	ld_imm64(p, R3, spec->gc_at);
	call(p, BPF_FUNC_probe_read_user);
	skip = jump_imm(p, BPF_JNE, R0, 0);
	st(p, BPF_W, R7, REC_AT(gc_read), 1);
	land(p, skip);
}

/* At a switch off the CPU (record_start()), the user registers the thread entered the kernel
 * with into the record (r7; r6 = ctx; regs_found and regs_syscall 0): the pt_regs at the top
 * of its kernel stack, for each x86-64 layout in turn until one holds a 64-bit user frame (cs
 * and ss, in their low 16 bits, the user's): 16 KiB stacks (32 KiB with KASAN, tried after: a
 * 32 KiB guess on 16 KiB stacks could find the next stack's frame), no padding above the frame
 * (FRED's 16 bytes, tried after). A syscall instruction's entry leaves the user's ip in cx and
 * its flags in r11: whether these do is regs_syscall. The word under the frame is the return
 * address of the entry code's call of its C handler (entry_64.S's `call \cfunc`, the frame
 * its rsp then): which entry it was (a page fault's, an interrupt's). ~0.1 us a read here. */
static void read_switch_regs(struct prog *p)
{
	static const struct { int32_t size, pad; } layouts[] = {
		{ 16384, 0 }, { 16384, 16 }, { 32768, 0 }, { 32768, 16 },
	};
	static const int16_t kept[][2] = {
		{ USER_REGS_AT + PT_ORIG_AX, REC_AT(orig_ax) }, { USER_REGS_AT + PT_AX, REC_AT(ax) },
		{ USER_REGS_AT + PT_DI, REC_AT(di) }, { USER_REGS_AT + PT_SS, REC_AT(ss) },
		{ ENTRY_AT, REC_AT(entry) },
	};
	struct fixup next[3], found[4], none, differ[2];
	size_t n = sizeof(layouts) / sizeof(layouts[0]);

	for (size_t k = 0; k < n; k++) {
		ldx(p, BPF_DW, R3, R6, PT_SP);
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, R3, 0, 0, -layouts[k].size);
		add_imm(p, R3, layouts[k].size - layouts[k].pad - PT_REGS_SIZE - 8);
		mov_reg(p, R1, R10);
		add_imm(p, R1, ENTRY_AT);
		mov_imm(p, R2, PT_REGS_SIZE + 8);
		call(p, BPF_FUNC_probe_read_kernel);
		next[0] = jump_imm(p, BPF_JNE, R0, 0);
		ldx(p, BPF_DW, R1, R10, USER_REGS_AT + PT_CS);
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, 0xffff);
		next[1] = jump_imm(p, BPF_JNE, R1, USER_CS);
		ldx(p, BPF_DW, R1, R10, USER_REGS_AT + PT_SS);
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, 0xffff);
		next[2] = jump_imm(p, BPF_JNE, R1, USER_DS);
		found[k] = (struct fixup) { p->n };
		emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		for (size_t i = 0; i < 3; i++)
			land(p, next[i]);
	}
	st(p, BPF_W, R7, REC_AT(regs_found), 2);
	none = (struct fixup) { p->n };
	emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
	for (size_t k = 0; k < n; k++)
		land(p, found[k]);
	st(p, BPF_W, R7, REC_AT(regs_found), 1);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		ldx(p, BPF_DW, R1, R10, kept[i][0]);
		stx(p, BPF_DW, R7, R1, kept[i][1]);
	}
	ldx(p, BPF_DW, R1, R10, USER_REGS_AT + PT_CX);
	ldx(p, BPF_DW, R2, R10, USER_REGS_AT + PT_IP);
	differ[0] = jump_reg(p, BPF_JNE, R1, R2);
	ldx(p, BPF_DW, R1, R10, USER_REGS_AT + PT_R11);
	ldx(p, BPF_DW, R2, R10, USER_REGS_AT + PT_FLAGS);
	differ[1] = jump_reg(p, BPF_JNE, R1, R2);
	st(p, BPF_W, R7, REC_AT(regs_syscall), 1);
	land(p, differ[0]);
	land(p, differ[1]);
	land(p, none);
}

/* The GIL's and the GC's words into the record (r7), where the spec has them. */
static void words_read(struct prog *p, const struct sampler_capture_spec *spec)
{
	if (spec->gil_at)
		read_gil(p, spec);
	else
		st(p, BPF_W, R7, REC_AT(gil_read), 0);
	if (spec->gc_at)
		read_gc(p, spec);
	else
		st(p, BPF_W, R7, REC_AT(gc_read), 0);
}

/* The record's header (r7; r6 = ctx, r8 = the thread's root value) up to its root: status
 * NO_ROOT, no nodes, no names; the overflow's ip and period; the GIL and the GC read, or
 * with switch_regs at a switch off the CPU (the switch event's period 1, the ctx's sp a
 * kernel address: on the thread's kernel stack, perf_fetch_caller_regs()'s) the user
 * registers it entered the kernel with (read_switch_regs()). */
static void record_start(struct prog *p, const struct sampler_capture_spec *spec,
			 bool switch_regs)
{
	st(p, BPF_W, R7, REC_AT(magic), (int32_t) CAPTURE_MAGIC);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_NO_ROOT);
	st(p, BPF_W, R7, REC_AT(n), 0);
	st(p, BPF_W, R7, REC_AT(names_at),
	   capture_split(spec) ? (int32_t) capture_names_at(spec) : 0);
	st(p, BPF_W, R7, REC_AT(names_end), 0);
	ldx(p, BPF_W, R1, R8, ROOT_AT(slot));
	stx(p, BPF_W, R7, R1, REC_AT(slot));
	ldx(p, BPF_DW, R1, R6, CTX_IP);
	stx(p, BPF_DW, R7, R1, REC_AT(ip));
	ldx(p, BPF_DW, R1, R6, CTX_PERIOD);
	stx(p, BPF_DW, R7, R1, REC_AT(period));
	st(p, BPF_DW, R7, REC_AT(head), 0);
	if (switch_regs) {
		/* a switch off the CPU: where the thread waits; no GIL nor GC word, which no
		 * switch's sample uses (record/sample.c) */
		struct fixup not_switch[2], done;

		st(p, BPF_W, R7, REC_AT(regs_found), 0);
		st(p, BPF_W, R7, REC_AT(regs_syscall), 0);
		ldx(p, BPF_DW, R1, R6, CTX_PERIOD);
		not_switch[0] = jump_imm(p, BPF_JNE, R1, 1);
		ldx(p, BPF_DW, R1, R6, PT_SP);
		not_switch[1] = jump_imm(p, BPF_JSGE, R1, 0);
		st(p, BPF_W, R7, REC_AT(gil_read), 0);
		st(p, BPF_W, R7, REC_AT(gc_read), 0);
		read_switch_regs(p);
		done = (struct fixup) { p->n };
		emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		land(p, not_switch[0]);
		land(p, not_switch[1]);
		words_read(p, spec);
		land(p, done);
		return;
	}
	words_read(p, spec);
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

/* node_bytes at r8 (the node's address) into r6 + 8 (its place in the record); a failed read
 * jumps to *fail. Where spec.stacked (a caller's node most often lies just below its callee's),
 * from the window: the bytes from the start of the node's page to the node's end, read at once
 * when the node is not in the window read before in this sample; one read for the nodes of a
 * page, not one each (a read costs ~100 ns here, its bytes little). The window's first page
 * is the node's, so where the window cannot be read, neither can the node. Its address (1:
 * none, set per sample) and length lie before it in the scratch map. Two ways, both to the
 * copy: the verifier follows the ways of every node (a direct read where a node crossed a page
 * or the window failed took it from 83,000 instructions processed to 113,000). */
static void read_node(struct prog *p, const struct sampler_capture_spec *spec, struct fixup *fail)
{
	int32_t nb = (int32_t) spec->node_bytes, win = (int32_t) capture_window_at(spec);
	struct fixup miss, hit;

	if (!spec->stacked) {
		mov_reg(p, R1, R6);
		add_imm(p, R1, 8);
		mov_imm(p, R2, nb);
		mov_reg(p, R3, R8);
		call(p, BPF_FUNC_probe_read_user);
		*fail = jump_imm(p, BPF_JNE, R0, 0);
		return;
	}
	mov_reg(p, R4, R7);                               /* r4 = the window's header */
	add_imm(p, R4, win);
	mov_reg(p, R2, R8);
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R2, 0, 0, -CAPTURE_WINDOW);
	ldx(p, BPF_DW, R3, R4, 0);
	miss = jump_reg(p, BPF_JNE, R2, R3);
	mov_reg(p, R1, R8);
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, CAPTURE_WINDOW - 1);
	add_imm(p, R1, nb);
	ldx(p, BPF_DW, R3, R4, 8);
	hit = jump_reg(p, BPF_JLE, R1, R3);
	land(p, miss);
	st(p, BPF_DW, R4, 0, 1);
	mov_reg(p, R2, R8);                               /* the length: to the node's end */
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R2, 0, 0, CAPTURE_WINDOW - 1);
	add_imm(p, R2, nb);
	stx(p, BPF_DW, R4, R2, 8);
	mov_reg(p, R3, R8);
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R3, 0, 0, -CAPTURE_WINDOW);
	mov_reg(p, R1, R4);
	add_imm(p, R1, CAPTURE_WINDOW_HDR);
	call(p, BPF_FUNC_probe_read_user);
	*fail = jump_imm(p, BPF_JNE, R0, 0);
	mov_reg(p, R4, R7);
	add_imm(p, R4, win);
	mov_reg(p, R3, R8);
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R3, 0, 0, -CAPTURE_WINDOW);
	stx(p, BPF_DW, R4, R3, 0);
	land(p, hit);
	mov_reg(p, R1, R8);                               /* the copy */
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, CAPTURE_WINDOW - 1);
	mov_reg(p, R2, R7);
	add_imm(p, R2, win + CAPTURE_WINDOW_HDR);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R2, R1, 0, 0);
	for (int32_t at = 0; at < nb; at += 8) {
		ldx(p, BPF_DW, R3, R2, (int16_t) at);
		stx(p, BPF_DW, R6, R3, (int16_t) (8 + at));
	}
}

/* Node r8 (not 0) at r9 bytes into the record (r7; r9 within its room for nodes): its bytes
 * and extras copied, r9 past it, r8 its next; the stack's NODES_AT counted on, SLOT_AT the
 * next node's names slot. A failed read jumps to *fail (the record's status FAULT). */
static void node_body(struct prog *p, const struct sampler_capture_spec *spec,
		      const struct capture *c, struct fixup *fail, bool tail, bool reuse)
{
	size_t stride = capture_node_stride(spec);
	uint32_t n_id = spec->n_identity;
	bool split = capture_split(spec);
	bool names_once = split && c->known_fd >= 0 && c->epoch_fd >= 0;
	struct fixup code, shim = { SIZE_MAX };

	mov_reg(p, R6, R7);                               /* r6 = the node in the record */
	emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R6, R9, 0, 0);
	stx(p, BPF_DW, R6, R8, 0);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_FAULT);
	read_node(p, spec, fail);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_OK);
	ldx(p, BPF_DW, R1, R10, NODES_AT);
	add_imm(p, R1, 1);
	stx(p, BPF_DW, R10, R1, NODES_AT);
	stx(p, BPF_W, R7, R1, REC_AT(n));
	add_imm(p, R9, (int32_t) stride);
	ldx(p, BPF_DW, R8, R6, (int16_t) (8 + spec->next_off));
	if (!split) {
		copy_extras(p, spec, 0, spec->n_extras, R6, false);
		return;
	}
	if (tail) {
		/* past SAMPLER_CAPTURE_MAX_NODES: its check 0, no identity read, no names (the
		 * reader reads its code from memory) */
		st(p, BPF_DW, R6, (int16_t) (8 + spec->node_bytes), 0);
		return;
	}
	ldx(p, BPF_DW, R1, R10, SLOT_AT);
	mov_reg(p, R4, R7);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_X, R4, R1, 0, 0);
	stx(p, BPF_DW, R10, R4, SLOT_PTR_AT);
	if (spec->shim_min) {
		/* a shim: its check 0, its slot's addresses 0 (names_end stays), nothing read */
		ldx(p, BPF_B, R1, R6, (int16_t) (8 + spec->shim_at));
		code = jump_imm(p, BPF_JLT, R1, (int32_t) spec->shim_min);
		st(p, BPF_DW, R6, (int16_t) (8 + spec->node_bytes), 0);
		for (uint32_t i = 0; i < spec->n_extras; i++)
			st(p, BPF_DW, R4, (int16_t) (extra_at(spec, i) - spec->node_bytes), 0);
		shim = jump_imm(p, BPF_JA, 0, 0);
		land(p, code);
	}
	copy_names(p, spec, n_id, names_once ? c->known_fd : -1, reuse,
		   reuse && capture_caches_codes(c, spec, true));
	land(p, shim);
	ldx(p, BPF_DW, R1, R10, SLOT_AT);
	add_imm(p, R1, (int32_t) capture_names_stride(spec));
	stx(p, BPF_DW, R10, R1, SLOT_AT);
}

/* Before the chain: the checks' ring and epoch, no window yet, r8 = the head. */
static void nodes_start(struct prog *p, const struct sampler_capture_spec *spec,
			const struct capture *c)
{
	if (capture_split(spec))
		known_key(p, c->known_fd >= 0 ? c->epoch_fd : -1, c->percpu);
	if (spec->stacked) {
		mov_reg(p, R4, R7);
		add_imm(p, R4, (int32_t) capture_window_at(spec));
		st(p, BPF_DW, R4, 0, 1);
	}
	/* no reuse extra read yet in this sample */
	for (uint32_t i = 0; capture_split(spec) && i < spec->n_identity; i++) {
		if (!spec->extra[i].reuse)
			continue;
		mov_reg(p, R4, R7);
		add_imm(p, R4, (int32_t) capture_reuse_at(spec, i));
		for (int16_t w = 0; w < REUSE_WAYS; w++)
			st(p, BPF_DW, R4, (int16_t) (w * REUSE_ENTRY), 1);
	}
	ldx(p, BPF_DW, R8, R7, REC_AT(head));             /* r8 = the node to copy */
}

/* The chain from the record's head (r7 = the record, r9 = its bytes so far: the header),
 * node by node, up to SAMPLER_CAPTURE_MAX_NODES, where the kernel has no bpf_loop: a bounded
 * loop, not unrolled (the image of an unrolled one, ~1 KB a node, is larger than the
 * instruction cache), whose offsets the verifier follows as constants, one iteration at a time
 * (38 ms at 128 nodes). r9 is both the loop's variable and the bytes to send: a node's read that
 * fails ends the record before it. A failed read, the chain's end and the cut jump to the emit
 * label (fixups in to_emit). */
static void copy_nodes(struct prog *p, const struct sampler_capture_spec *spec,
		       const struct capture *c, struct fixup *to_emit, size_t *ne)
{
	size_t stride = capture_node_stride(spec), top;
	struct fixup full;

	nodes_start(p, spec, c);
	st(p, BPF_DW, R10, NODES_AT, 0);
	st(p, BPF_DW, R10, SLOT_AT, (int32_t) (capture_names_at(spec) + CAPTURE_NAMES_HDR));
	top = p->n;
	to_emit[(*ne)++] = jump_imm(p, BPF_JEQ, R8, 0);
	full = jump_imm(p, BPF_JGE, R9,
			(int32_t) (CAPTURE_HDR + SAMPLER_CAPTURE_MAX_NODES * stride));
	node_body(p, spec, c, &to_emit[(*ne)++], false, false);
	emit(p, BPF_JMP | BPF_JA, 0, 0, (int16_t) ((ptrdiff_t) top - (ptrdiff_t) p->n - 1), 0);
	land(p, full);
	to_emit[(*ne)++] = jump_imm(p, BPF_JEQ, R8, 0);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_CUT);
}

/* The same with bpf_loop (5.17+, the program's functions described in BTF: capture.c): the
 * callback (node_callback()) is verified once, not once per node (3 ms, not 38). The record,
 * the checks' ring and epoch on this frame's stack, its address the callback's context.
 * *callback: the instruction whose immediate is the callback's offset (set once it is
 * emitted). */
static void call_nodes(struct prog *p, const struct sampler_capture_spec *spec,
		       const struct capture *c, struct fixup *to_emit, size_t *ne,
		       struct fixup *callback)
{
	size_t stride = capture_node_stride(spec);
	struct fixup in_room;

	nodes_start(p, spec, c);
	to_emit[(*ne)++] = jump_imm(p, BPF_JEQ, R8, 0);
	stx(p, BPF_DW, R10, R7, REC_SAVE);
	loop_state(p, spec);
	stx(p, BPF_DW, R4, R8, LOOP_NEXT);
	stx(p, BPF_DW, R4, R9, LOOP_BYTES);
	st(p, BPF_DW, R4, LOOP_NODES, 0);
	st(p, BPF_DW, R4, LOOP_SLOT, (int32_t) (capture_names_at(spec) + CAPTURE_NAMES_HDR));
	if (capture_caches_codes(c, spec, true)) {
		/* the version word, once a sample; where the read fails, version_none() */
		struct fixup read;

		st(p, BPF_DW, R4, LOOP_VERSION, 0);
		mov_reg(p, R1, R4);
		add_imm(p, R1, LOOP_VERSION);
		mov_imm(p, R2, spec->version_kind == SAMPLER_VERSION_NEXT32 ? 4 : 8);
		ld_imm64(p, R3, spec->version_at);
		call(p, BPF_FUNC_probe_read_user);
		read = jump_imm(p, BPF_JEQ, R0, 0);
		loop_state(p, spec);
		ld_imm64(p, R1, version_none(spec));
		stx(p, BPF_DW, R4, R1, LOOP_VERSION);
		land(p, read);
	}
	mov_imm(p, R1, (int32_t) p->max_nodes);
	*callback = (struct fixup) { p->n };
	emit(p, BPF_LD | BPF_DW | BPF_IMM, R2, BPF_PSEUDO_FUNC, 0, 0);
	emit(p, 0, 0, 0, 0, 0);
	mov_reg(p, R3, R10);
	add_imm(p, R3, REC_SAVE);
	mov_imm(p, R4, 0);
	call(p, BPF_FUNC_loop);
	ldx(p, BPF_DW, R7, R10, REC_SAVE);
	loop_state(p, spec);
	ldx(p, BPF_DW, R9, R4, LOOP_BYTES);
	ldx(p, BPF_DW, R8, R4, LOOP_NEXT);
	/* bounded for the verifier (the output's size); never out at run time */
	in_room = jump_imm(p, BPF_JLE, R9, (int32_t) (CAPTURE_HDR + p->max_nodes * stride));
	mov_imm(p, R9, (int32_t) CAPTURE_HDR);
	land(p, in_room);
	/* the count ran out before the chain: cut */
	ldx(p, BPF_W, R1, R7, REC_AT(status));
	to_emit[(*ne)++] = jump_imm(p, BPF_JNE, R1, SAMPLE_CAPTURE_OK);
	to_emit[(*ne)++] = jump_imm(p, BPF_JEQ, R8, 0);
	st(p, BPF_W, R7, REC_AT(status), SAMPLE_CAPTURE_CUT);
}

/* bpf_loop's callback (r1 the index, r2 the context: the caller's REC_SAVE): one node, from
 * the loop's state; 1 (stop) at the chain's end, a failed read, or a full record. */
static void node_callback(struct prog *p, const struct sampler_capture_spec *spec,
			  const struct capture *c)
{
	size_t stride = capture_node_stride(spec);
	bool tail = p->max_nodes > SAMPLER_CAPTURE_MAX_NODES;
	struct fixup stop[5] = { [4] = { SIZE_MAX } }, is_tail = { 0 }, saved = { 0 };

	ldx(p, BPF_DW, R7, R2, 0);                        /* the record */
	ldx(p, BPF_DW, R1, R2, KNOWN_AT + 8 - REC_SAVE);  /* the checks' ring, epoch */
	stx(p, BPF_DW, R10, R1, KNOWN_AT + 8);
	loop_state(p, spec);
	ldx(p, BPF_DW, R8, R4, LOOP_NEXT);
	ldx(p, BPF_DW, R9, R4, LOOP_BYTES);
	ldx(p, BPF_DW, R1, R4, LOOP_NODES);
	stx(p, BPF_DW, R10, R1, NODES_AT);
	ldx(p, BPF_DW, R1, R4, LOOP_SLOT);
	stx(p, BPF_DW, R10, R1, SLOT_AT);
	stop[0] = jump_imm(p, BPF_JEQ, R8, 0);
	stop[1] = jump_imm(p, BPF_JGT, R9,
			   (int32_t) (CAPTURE_HDR + (p->max_nodes - 1) * stride));
	if (tail) {
		ldx(p, BPF_DW, R2, R10, NODES_AT);
		is_tail = jump_imm(p, BPF_JGE, R2, SAMPLER_CAPTURE_MAX_NODES);
	}
	stop[2] = jump_imm(p, BPF_JGT, R1, (int32_t) (capture_names_at(spec) + CAPTURE_NAMES_HDR +
						   (SAMPLER_CAPTURE_MAX_NODES - 1) *
						   capture_names_stride(spec)));
	node_body(p, spec, c, &stop[3], false, true);
	if (tail) {
		/* the tail's nodes: no names slot (its bound above would stop them) */
		saved = (struct fixup) { p->n };
		emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		land(p, is_tail);
		node_body(p, spec, c, &stop[4], true, true);
		land(p, saved);
	}
	loop_state(p, spec);
	stx(p, BPF_DW, R4, R8, LOOP_NEXT);
	stx(p, BPF_DW, R4, R9, LOOP_BYTES);
	ldx(p, BPF_DW, R1, R10, NODES_AT);
	stx(p, BPF_DW, R4, R1, LOOP_NODES);
	ldx(p, BPF_DW, R1, R10, SLOT_AT);
	stx(p, BPF_DW, R4, R1, LOOP_SLOT);
	mov_imm(p, R0, 0);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	for (size_t i = 0; i < 5; i++)
		land(p, stop[i]);
	mov_imm(p, R0, 1);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

/* The program for spec (see the top of this file); p->overflow if it did not fit. */
static void generate(struct prog *p, const struct sampler_capture_spec *spec,
		     const struct capture *c, bool helper)
{
	struct fixup to_emit[16], no_emit[3] = { { SIZE_MAX }, { SIZE_MAX }, { SIZE_MAX } };
	struct fixup callback = { SIZE_MAX }, none;
	size_t ne = 0;
	int roots = c->roots_fd, scratch = c->scratch_fd, out = c->out_fd;
	bool percpu = c->percpu;
	bool split = capture_split(spec);
	int epoch = split && c->known_fd >= 0 && c->epoch_fd >= 0 ? c->epoch_fd : -1;

	p->n = 0;
	p->overflow = false;
	p->max_nodes = capture_prog_nodes(spec, helper);
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
		generate_search(p, spec, roots, c->pid, &none);
	else
		none = jump_imm(p, BPF_JEQ, R8, 0);       /* not one of our threads */
	if (c->switch_regs && percpu) {
		/* its switches' reasons are in its record: one with no root */
		struct fixup has = { p->n };

		emit(p, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		land(p, none);
		st(p, BPF_DW, R10, VALUE_AT, 0);
		st(p, BPF_DW, R10, VALUE_AT + 8, 0);
		mov_reg(p, R8, R10);
		add_imm(p, R8, VALUE_AT);
		land(p, has);
	} else {
		no_emit[0] = none;
	}
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
	record_start(p, spec, c->switch_regs);
	ldx(p, BPF_DW, R3, R8, ROOT_AT(root));
	if (c->regs_only)                                 /* no frames: the header alone */
		mov_imm(p, R3, 0);
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
	if (helper)
		call_nodes(p, spec, c, to_emit, &ne, &callback);
	else
		copy_nodes(p, spec, c, to_emit, &ne);
	for (size_t i = 0; i < ne; i++)
		land(p, to_emit[i]);
	/* emit: bpf_perf_event_output(ctx, out, slot, record, r9); per CPU, the flags are
	 * BPF_F_CURRENT_CPU (a 32-bit move of -1: zero-extended). Names read: their area
	 * first, up to the end of the last slot written, as a record of its own */
	if (split)
		emit_names(p, spec, out, percpu, epoch);
	emit_flags(p, percpu);
	ldx(p, BPF_DW, R1, R10, CTX_SAVE);
	ld_map(p, R2, out);
	mov_reg(p, R4, R7);
	mov_reg(p, R5, R9);
	call(p, BPF_FUNC_perf_event_output);
	epoch_on_failure(p, epoch);
	land(p, no_emit[0]);
	land(p, no_emit[1]);
	land(p, no_emit[2]);
	mov_imm(p, R0, 1);                                /* and the sample itself, as usual */
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	if (helper && callback.at < p->n && !p->overflow) {
		p->callback_at = p->n;
		p->insn[callback.at].imm = (int32_t) (p->n - callback.at - 1);
		node_callback(p, spec, c);
	}
}


bool capture_spec_ok(const struct sampler_capture_spec *spec)
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
		if (e->len < 8 || e->len > SAMPLER_CAPTURE_MAX_EXTRA_BYTES || e->len % 8 ||
		    e->off >= 65536 || e->from % 8 || e->from + 8 > extra_at(spec, i) ||
		    (e->mask != UINT64_MAX && (uint64_t) (int64_t) (int32_t) e->mask != e->mask))
			return false;
	}
	if (spec->gil_at && !(spec->gil_locked_off < 65536 && spec->gil_holder_off < 65536))
		return false;
	if (spec->version_at && spec->version_kind != SAMPLER_VERSION_NEXT32 &&
	    spec->version_kind != SAMPLER_VERSION_FREED64)
		return false;
	/* the unique word: 4 aligned bytes of the identity extras' (their addresses' excluded) */
	if (spec->unique_at) {
		uint32_t k;

		for (k = 0; k < spec->n_identity && k < spec->n_extras; k++)
			if (spec->unique_at >= extra_at(spec, k) + 8 &&
			    spec->unique_at + 4 <= extra_at(spec, k) + 8 + spec->extra[k].len)
				break;
		if (spec->unique_at % 4 || k == spec->n_identity || k == spec->n_extras)
			return false;
	}
	if (spec->shim_min && (spec->shim_min > 255 || spec->shim_at >= spec->node_bytes))
		return false;
	if (spec->search_at &&
	    !(spec->search_list_off < 65536 && spec->search_next_off < 65536 &&
	      spec->search_id_off1 < 65536 &&
	      (spec->search_id_off2 == SAMPLER_CAPTURE_NO_OFF || spec->search_id_off2 < 65536)))
		return false;
	return capture_stride(spec) <= SAMPLER_CAPTURE_MAX_STRIDE;
}

int capture_generate_entry(int progs_fd, struct bpf_insn *insn, size_t max, size_t *ret_n)
{
	struct prog p = { .insn = insn, .max = max };

	/* bpf_tail_call(ctx, progs, 0) does not return where slot 0 holds a program; where it is
	 * empty, the sample goes on as usual */
	ld_map(&p, R2, progs_fd);
	mov_imm(&p, R3, 0);
	call(&p, BPF_FUNC_tail_call);
	mov_imm(&p, R0, 1);
	emit(&p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	*ret_n = p.n;
	return p.overflow ? -E2BIG : 0;
}

int capture_generate(const struct sampler_capture_spec *spec, const struct capture *c,
		     bool helper, struct bpf_insn *insn, size_t max, size_t *ret_n,
		     size_t *ret_callback)
{
	struct prog p = { .insn = insn, .max = max };

	generate(&p, spec, c, helper);
	*ret_n = p.n;
	*ret_callback = p.callback_at;
	return p.overflow ? -E2BIG : 0;
}
