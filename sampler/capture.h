/*
 * capture: exact Python stacks without stopping anything (opts.capture of sampler.h). A BPF
 * program on each thread's sampling event copies the thread's chain of frames at the overflow,
 * in the kernel (capture.c loads it, capture_prog.c generates it from a struct
 * sampler_capture_spec); the sample then arrives with that copy (struct sample's capture, the
 * struct sample_capture below). Needs CAP_BPF + CAP_PERFMON (or root).
 *
 * Errors are negative errno values, as each function says. Library code never prints.
 */
#ifndef HWSPY_SAMPLER_CAPTURE_H
#define HWSPY_SAMPLER_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sampler;

#define SAMPLER_CAPTURE_NO_OFF UINT32_MAX
#define SAMPLER_CAPTURE_MAX_NODES 128   /* nodes a record holds with their extras */
/* ... and in all, a split record's (internal.h's capture_split()) where the kernel has bpf_loop:
 * those past SAMPLER_CAPTURE_MAX_NODES their address and bytes alone, no extras (a tail) */
#define SAMPLER_CAPTURE_MAX_CHAIN 384
#define SAMPLER_CAPTURE_MAX_NODE_BYTES 128
#define SAMPLER_CAPTURE_MAX_EXTRA_BYTES 160     /* a code's identity fields in one read */
#define SAMPLER_CAPTURE_MAX_EXTRAS 8
#define SAMPLER_CAPTURE_MAX_STRIDE 496   /* 128 nodes of it and the header: one perf record */

/* Per node, after its bytes: len bytes at *(u64 *) (body + from) & mask, plus off, where body
 * is what the node holds after its address (its node_bytes, then the extras before this one,
 * each an address and its bytes): the objects a node points to (a frame's code object, that
 * one's name), copied at the same instant. mask: ~0, or one that clears low tag bits (a
 * sign-extended 32-bit immediate, e.g. ~7). */
struct sampler_capture_extra {
	uint32_t from;                  /* from + 8 <= the body bytes before this extra */
	uint32_t off;                   /* < 65536 */
	uint32_t len;                   /* a multiple of 8, 8..SAMPLER_CAPTURE_MAX_EXTRA_BYTES */
	uint64_t mask;
	/* An identity extra whose address (pointer and off) most often is the previous node's
	 * (a module's file name): where it is, with bpf_loop, the previous node's bytes, read
	 * in this sample, are copied rather than read again */
	bool reuse;
};

/* How the program finds and copies a thread's chain at an overflow: P = *(root + head_off1);
 * head = head_off2 == NO_OFF ? P : *(P + head_off2); then for each node (until a 0 link, at most
 * SAMPLER_CAPTURE_MAX_NODES; a split spec's with bpf_loop, SAMPLER_CAPTURE_MAX_CHAIN, the nodes
 * past the first SAMPLER_CAPTURE_MAX_NODES without extras): copy node_bytes bytes at it, then
 * its extras; next = *(node + next_off). A node in the record: its address (u64), its
 * node_bytes bytes, then per extra the address read (u64; 0 where the pointer was 0 or the
 * read failed) and len bytes. */
struct sampler_capture_spec {
	uint32_t head_off1, head_off2;
	uint32_t node_bytes;            /* a multiple of 8, 8..SAMPLER_CAPTURE_MAX_NODE_BYTES */
	uint32_t next_off;              /* next_off + 8 <= node_bytes */
	uint32_t n_extras;              /* <= SAMPLER_CAPTURE_MAX_EXTRAS; the node's stride at
	                                 * most SAMPLER_CAPTURE_MAX_STRIDE */
	struct sampler_capture_extra extra[SAMPLER_CAPTURE_MAX_EXTRAS];
	/* A thread with no root yet (started since the sampler learned of its threads; its root
	 * looked up too early): the program looks for it at the sample, and keeps what it finds
	 * as the thread's root. search_at 0: no search. Else list = *(search_at); node =
	 * *(list + search_list_off); while node (at most SAMPLER_CAPTURE_SEARCH nodes): id =
	 * *(node + search_id_off1), then *(id + search_id_off2) unless that is NO_OFF; the node
	 * whose (u32) id is the thread's tid is the root; node = *(node + search_next_off). */
	uint64_t search_at;
	uint32_t search_list_off, search_next_off, search_id_off1, search_id_off2;
	/* The GIL at the overflow: gil_at 0, not read; else the u32 at gil_at + gil_locked_off
	 * and the u64 at gil_at + gil_holder_off (each offset < 65536) go into the record: the
	 * sample then says whether its thread held it (struct sample_capture) */
	uint64_t gil_at;
	uint32_t gil_locked_off, gil_holder_off;
	/* The cyclic GC at the overflow: gc_at 0, not read; else the u32 at gc_at (its collecting
	 * flag) goes into the record: the sample then says whether it was collecting */
	uint64_t gc_at;
	/* Extras [0, n_identity) identify the node's code (its address and these bytes); the
	 * others (its names) are copied once per ring and identity, and left out (address 0)
	 * of later records of that ring (by the BPF program: until sampler_capture_forget(),
	 * or a record lost; the program sends a node's check in place of its identity too, and
	 * the reader points samples to the identities: capture_ids.c). 0: every extra every time.
	 * stacked: a node's next most often lies just below it (CPython's frames): nodes are
	 * read a window at a time */
	uint32_t n_identity;
	/* 0, or the body position (as from's) of a u32 in the identity extras that no two codes
	 * share unless it is 0 (CPython 3.12+'s co_version): a node whose u32 there is 0 is
	 * never known, its names sent every time */
	uint32_t unique_at;
	/* 0, or (with unique_at) the address of a word of the target's that moves whenever a
	 * code may have come to an address another code had: where it has not moved since a
	 * node's identity was read at a code address, the code there is the one read (a frame
	 * holds its code). With bpf_loop, a node whose code address this CPU read since, for
	 * the same ring and epoch, takes that read's check unread (the identity read, ~0.1 us
	 * in the target, once a code, not once a frame). version_kind says what the word is */
	uint64_t version_at;
	enum {
		/* a u32 each new code takes its unique word from, then moves on (CPython 3.12's
		 * _Py_next_func_version); 0 once the versions ran out: read every time then */
		SAMPLER_VERSION_NEXT32,
		/* a u64 count of the codes freed (3.14's interpreter _code_object_generation) */
		SAMPLER_VERSION_FREED64,
	} version_kind;
	bool stacked;
	/* shim_min 0: none. Else a split spec's node whose byte at shim_at (< node_bytes) is at
	 * least shim_min (<= 255) has no code (CPython 3.12+'s eval-loop entry frame on the C
	 * stack, its "code" never known): its check 0 and its slot's addresses 0, as a tail
	 * node's, no identity read and no names sent */
	uint32_t shim_at, shim_min;
};
#define SAMPLER_CAPTURE_SEARCH 32

/* Whether this process may load and attach a capture program: 0, or -EPERM (no CAP_BPF /
 * CAP_PERFMON), -EINVAL / -ENOSYS (a kernel without BPF perf-event programs). */
int sampler_capture_probe(void);
/* Loads the program for spec and puts it on every thread's events, now and later (a sampler
 * made with opts.capture). Each thread's root is asked for when the program is put on its
 * events (SAMPLER_EVENT_CAPTURE_THREAD; unanswered: the thread has none until
 * sampler_capture_set_root(), or until the program finds it, see search_at). Called again (the
 * target exec'd another program), it replaces the program, reopening every thread's events.
 * 0, -EINVAL (bad spec, or not a capture sampler), -EPERM, -E2BIG, -ENOMEM. */
int sampler_capture_start(struct sampler *s, const struct sampler_capture_spec *spec);
/* Sets (or clears, root 0) thread tid's root: 0, -ENOENT (no such thread with the program).
 * From the SAMPLER_EVENT_CAPTURE_THREAD event of tid: the root its entry is made with (0:
 * none, not a clearing), 0. */
int sampler_capture_set_root(struct sampler *s, pid_t tid, uint64_t root);
bool sampler_capturing(const struct sampler *s);
/* The records carry every code's names again (spec.n_identity: the reader lost those it had
 * been sent): 0 or -errno. */
int sampler_capture_forget(struct sampler *s);
/* Why the capture asked of sampler_new() (opts.capture_spec) did not start: 0 or -errno. */
int sampler_capture_error(const struct sampler *s);

/* What a capture program copied at one overflow (see sampler_capture_start()). */
enum {
	SAMPLE_CAPTURE_OK,              /* the chain, whole (up to the program's most nodes) */
	SAMPLE_CAPTURE_NO_ROOT,         /* the thread had no root set: nothing copied */
	SAMPLE_CAPTURE_FAULT,           /* a read failed (page not present): the first n nodes */
	SAMPLE_CAPTURE_CUT,             /* more nodes than the program copies: the first n */
};

/* Where a thread that left the CPU was (a switch sample's capture, where the program looks:
 * opts.off_cpu or opts.wall with opts.capture on x86-64, a program of this alone until a spec
 * is given): from the registers it entered the kernel with, which the program reads at the
 * top of its kernel stack */
enum {
	SAMPLE_WAIT_NONE,               /* not looked at (no switch, or no such program) */
	SAMPLE_WAIT_SYSCALL,            /* in system call wait_nr, its first argument wait_arg */
	SAMPLE_WAIT_FAULT,              /* in a page fault of its own code (FRED says so) */
	SAMPLE_WAIT_KERNEL,             /* in the kernel otherwise: on its way back from a call,
	                                 * an exception (a page fault: wait_entry's function is
	                                 * its entry code's), an interrupt */
	SAMPLE_WAIT_UNKNOWN,            /* no user registers where they lie */
};

struct sample_capture {
	int status;
	uint64_t root;                  /* the thread's root pointer, as set */
	uint64_t head;                  /* the first node's address (0: an empty chain) */
	const unsigned char *nodes;     /* n nodes, stride bytes apart: the node's address (u64),
	                                 * then node_bytes bytes copied from it, then its extras
	                                 * (struct sampler_capture_spec) */
	size_t n, stride;
	/* names_stride 0: a node carries every extra. Else (the BPF program, spec.n_identity) its
	 * identity ones alone, and nodes [0, n_names) their others (names; each address 0 where
	 * left out) at names + k x names_stride, the same way; the rest none */
	const unsigned char *names;
	size_t n_names, names_stride;
	/* NULL: as above. Else (the BPF program's split records) node k's extras, all of them,
	 * lie at ident[k] (NULL: none, the record that carried them not read), laid out as they
	 * would follow its bytes, and a node holds its bytes and its code's check after them
	 * (equal checks: equal identities; capture_ids.c); names as above too (those this
	 * record carried) */
	const unsigned char *const *ident;
	/* spec.gil_at: whether the thread held the GIL at the overflow (locked, and its holder
	 * the thread's root); known false: no gil_at, a failed read, locked neither 0 nor 1, or
	 * locked with no root to compare the holder with */
	bool gil_known, gil_held;
	/* spec.gc_at: whether the interpreter's cyclic GC was collecting at the overflow; known
	 * false: no gc_at, a failed read, or a word neither 0 nor 1 */
	bool gc_known, gc_collecting;
	int wait;                       /* SAMPLE_WAIT_* */
	long wait_nr;
	uint64_t wait_arg;
	uint64_t wait_entry;            /* _KERNEL: a kernel address in the entry code it came
	                                 * in by (0: not known) */
};

#endif
