/*
 * record/internal.h: the recorder's state and the functions its files share. Not for lib/ or
 * analysis/, which use record.h (and snapshot.h).
 *
 * The folder:
 *   recorder.c   lifecycle: new, finding the interpreter, start (sampler_new with the capture),
 *                the run loop, stop, stats, free
 *   sample.c     one sample -> one stack: the Python walk (from its capture, or live memory),
 *                native and kernel frames, merge, defer while the thread is stopped, the sink;
 *                the sampler's events (an exec, a thread that needs its capture root)
 *   gil.c        whether a sample's thread held the GIL, --gil, each thread's GIL counts
 *   gc.c         whether a sample's thread ran the cyclic GC: the [gc] frame
 *   names.c      thread names: Python's threading registry, else /proc comm; [thread ...] frames
 *   merge.c      native + Python frames -> one stack (merge.h)
 *   fallback.c   the mode chosen and fallen back from, as notes (record.h)
 *   offcpu.c     --off-cpu: each switch-out a sample, weighing the time until the thread runs
 *                again (the sampler's switch events)
 *   procs.c      --subprocesses: the target's child processes, each with its own interpreter,
 *                the [process ...] root frames
 *   wait.c       why a thread waited: the wait-reason table ([wait: ...] words), the one table
 *                of dump, --off-cpu, --wall and stat
 *   syscall_names.c  x86-64's system calls by number, wait.c's and /proc's
 *   snapshot.c   every thread's stack now (hwspy dump): its own contract in snapshot.h
 */
#ifndef HWSPY_RECORD_INTERNAL_H
#define HWSPY_RECORD_INTERNAL_H

#include "record/merge.h"
#include "record/record.h"

#define MAX_PY_FRAMES RECORD_MAX_PY_FRAMES
#define MAX_NATIVE 256
#define MAX_KERNEL 128
#define MAX_FRAMES (MAX_PY_FRAMES + MAX_NATIVE + MAX_KERNEL + 2)
#define RECORD_PY_IDS 8                 /* threads whose last walk's frame ids are kept */
#define DETECT_INTERVAL_NS 20000000ULL
#define SYM_TRIES 10                    /* the target's mappings, unread when it was found */
#define BAD_LAYOUT_SETTLE_NS 200000000ULL /* a launch's corrupt layout: this long */
#define LATE_MAX 1000000
#define SLICE_NS 250000000ULL
#define SLICE_MAX_NS 1000000000ULL      /* the longest a caller may ask for */

struct thread_name {
	pid_t tid;
	uint32_t frame;                 /* its root frame (--threads), else unknown_frame */
	bool from_comm;                 /* named by /proc comm: Python's name not seen yet */
	unsigned tries;                 /* registry reads that looked for its Python name since */
};

/* Python's thread names (pyframes_thread_names): read when a thread is new (at its first
 * sample, again after RECORD_PYNAMES_NEW_MS if the last read lacks it), then at most every
 * RECORD_PYNAMES_MS while a thread still goes by its comm (at its samples and between slices;
 * RECORD_PYNAMES_TRIES reads for each thread), and at the end */
#define RECORD_PYNAMES_MAX 1024
#define RECORD_KERNEL_IPS 256   /* kernel addresses of switches kept with what they say */
#define RECORD_PYNAMES_MS 200
#define RECORD_PYNAMES_NEW_MS 10        /* at a thread's first sample, if the last read lacks it */
#define RECORD_PYNAMES_TRIES 10

/* A sample read while its thread was stopped, to be finished once it runs again: everything
 * the sample pointed into (ring, stack copy) is copied here. */
struct pending {
	struct sample s;
	int r;                          /* pyframes result */
	int gil;                        /* enum record_gil, read while it was stopped (with
	                                 * RECORD_IN_GC, gc.c) */
	size_t n_py;
	struct pyframes_cut cut;
	struct py_frame py[MAX_PY_FRAMES];
	uint64_t regs[32];
	uint64_t callchain[MAX_KERNEL + 8];
	unsigned char *stack;           /* opts.stack_size bytes, when --native */
};

#define MAX_PENDING 4

/* gil.c: each thread's GIL counts (last: the one found last, looked at first) */
struct record_gils {
	struct record_gil_thread *t;
	size_t n, cap, last;
};

struct recorder {
	struct record_opts opts;
	struct record_sink sink;        /* record_gil_sink(), which calls user_sink */
	struct record_sink user_sink;   /* recorder_new()'s, or the profile's own (with
	                                 * --subprocesses: record_procs_sink() before it) */
	struct record_gils gil;
	struct record_stats stats;
	struct profile *prof;
	struct remote_mem mem;
	bool mem_open;
	struct pyframes *pf;
	struct pyframes_info info;
	int detect_error;               /* last pyframes_open result */
	uint64_t bad_layout_ns;         /* record_detect(): since when it reads as corrupt
	                                 * (0: it does not) */
	uint64_t last_detect_ns;
	uint64_t sym_tried_ns;          /* native_frames(): when it last tried to make rec->sym */
	unsigned sym_tries;             /* ... how many times (SYM_TRIES at most) */
	struct sampler *sampler;
	pid_t pid;                      /* the target's (a launched command's once started) */
	struct py_frame pyf[MAX_PY_FRAMES];
	struct symbolizer *sym;
	const char *interp_module;      /* basename of the file holding the interpreter */
	struct native_frame nat[MAX_NATIVE];
	uint64_t ips[MAX_NATIVE];
	struct profile_frame merged[MAX_FRAMES];
	char *scratch;                  /* MAX_NATIVE * MERGE_SCRATCH_PER_FRAME */
	uint32_t ids[MAX_FRAMES + 1];
	int32_t py_at[MAX_FRAMES];      /* per merged frame: its index in the Python frames, or -1 */
	/* the profile ids of the Python frames of a few threads' last captured walks, by walk
	 * (sample.c, py_ids_take()): a walk that took its outer frames from one of them takes
	 * their ids too */
	struct py_ids {
		uint64_t walk;                  /* pyframes_cut.walk (0: empty) */
		pid_t tid;
		size_t n, cap;
		uint32_t *id;                   /* per Python frame; UINT32_MAX: not in the profile */
	} py_ids[RECORD_PY_IDS];
	unsigned py_ids_next;
	uint32_t py_ids_tail[MAX_PY_FRAMES];
	uint64_t py_ids_taken;          /* frames whose id was taken so (tests, bench) */
	uint32_t native_frame, unknown_frame;
	struct thread_name *names;
	size_t n_names, cap_names, last_name;
	/* RECORD_PYNAMES_MAX each: the last registry read, then names of earlier reads' threads
	 * not in it (names.c); the buffer of the next read */
	struct pyframes_thread_name *pynames, *pynames_read;
	size_t n_pynames;
	uint64_t pynames_ns;            /* when it was read (0: never) */
	uint32_t *late_us;              /* how late each read after its sample was */
	const char **bid_ambiguous;     /* module names two files with other build-ids had in this
	                                 * run (a wrapper script's loader, then the target's): no
	                                 * build-id is better than a wrong one (record_build_ids) */
	size_t n_bid_ambiguous, cap_bid_ambiguous;
	int fatal;                      /* set by the callback to stop: an unsupported Python, or
	                                 * a corrupt _Py_DebugOffsets (-EBADMSG) */
	volatile sig_atomic_t *stop;    /* the run's stop flag, set with fatal */
	uint64_t run_start_ns;          /* when recorder_run() began (0: not yet) */
	bool run_over;                  /* recorder_run() has ended (elapsed_ns is final) */
	struct pending *pending;        /* MAX_PENDING slots */
	size_t n_pending;
	/* exact mode by BPF capture (sampler_capture_start) */
	uint64_t pf_gen;                /* bumped by each record_python_found() */
	uint64_t capture_gen;           /* the pf_gen the program was made for (0: none yet) */
	uint32_t capture_extras;        /* the extras its nodes carry (pyframes_capture_spec) */
	bool capture_gil;               /* it reads the GIL (record_gil_capture_late()) */
	bool capture_gc;                /* ... the cyclic GC's flag (gc.c) */
	unsigned capture_gil_tries;
	struct offcpu *offcpu;          /* --off-cpu: samples waiting for their weight */
	struct record_proc **procs;     /* --subprocesses: the processes seen (procs.c), each
	                                 * allocated once (its pyframes points into it) */
	size_t n_procs, cap_procs;
	struct record_sink procs_sink;  /* --subprocesses: user_sink, behind record_procs_sink() */
	uint32_t procs_last_frame;      /* the root frame record_procs_sink() counted last */
	bool in_child;                  /* the sample at hand is a child process's */
	uint64_t gil_addr, gil_tried_ns;        /* the interpreter's GIL state (0: none, not known
	                                         * yet), when last looked for (record_gil_addr) */
	struct wait_fd_cache fd_cache;  /* --off-cpu: what fds are (wait.c) */
	struct wait_kernel_ip {         /* --off-cpu: what kernel addresses say (wait.c) */
		uint64_t ip;
		const struct symbolizer *sym;   /* whose kallsyms named it; NULL: empty */
		bool named, fault;      /* a function it lies in; a page fault's path */
		char sys[32];           /* the syscall it enters ("read"), "" none */
	} kernel_ips[RECORD_KERNEL_IPS];
};

int record_special_frame(struct recorder *rec, const char *name, uint32_t *ret);
/* The interpreter was found (rec->pf, rec->info set): note it in the profile. */
void record_python_found(struct recorder *rec);
/* Capture mode: makes and attaches the capture program for the interpreter found, if not
 * done for it yet. 0, or the failure (counted in the stats). Not from the callback. */
int record_capture_start(struct recorder *rec);
/* The Python walk of sample s in interpreter pf: from its capture where the program's spec fits
 * pf's layout (capture_fits), else from live memory (retried while the running thread tears
 * it), counted as captured or not; a capture without the thread's root gets it set. */
int record_walk(struct recorder *rec, struct pyframes *pf, bool capture_fits,
		const struct sample *s, size_t *ret_n, struct pyframes_cut *ret_cut);
/* Looks for the interpreter (at most every DETECT_INTERVAL_NS) if not found yet. */
void record_detect(struct recorder *rec);
/* The capture spec for rec->pf's interpreter: 0, -EINVAL (none fits), -ENOENT (none found). */
int record_capture_spec(const struct recorder *rec, struct sampler_capture_spec *ret);
/* The sampler's events (ctx: the recorder): an exec drops what was known of the old image
 * (interpreter, symbols), a thread getting the capture program is given its PyThreadState. */
void record_on_event(void *ctx, const struct sampler_event *e);
/* The sampler callback; ctx is the struct recorder. A stopped thread's sample keeps only its
 * Python walk inside the stop; the rest waits for record_flush(). */
void record_on_sample(void *ctx, const struct sample *s);
/* Finishes the samples waiting since their thread's stop (the sampler's resumed hook; called
 * once more after sampler_stop()). */
void record_flush(void *ctx);
/* Gives each native module of the profile that has none yet the build-id the symbolizer knows
 * for it (before the symbolizer goes: at the end, and at an exec). Soft: a failure leaves a
 * module without build-id. */
void record_build_ids(struct recorder *rec);

/* Allocates the pending slots (stack copies of stack_size bytes). 0 or -ENOMEM. */
int record_pending_init(struct recorder *rec, size_t stack_size);
void record_pending_free(struct recorder *rec);

/* names.c: the thread's root frame (--threads, else unknown_frame), its name noted in the
 * profile at its first sample; and at the end, threads still named by their comm take
 * Python's name if the target's registry has it now (a thread that exited keeps the last name
 * it had). */
uint32_t record_thread_frame(struct recorder *rec, pid_t tid);
void record_thread_names_poll(struct recorder *rec);
/* Whether record_thread_names_poll() would look again for a thread's Python name. */
bool record_thread_names_pending(const struct recorder *rec);
void record_thread_names_final(struct recorder *rec);

/* offcpu.c (--off-cpu): init (its [preempted] frame) and free; a finished switch-out sample
 * (its stack without the reason, which is added; values[1] becomes its time off the CPU) to
 * the sink once its thread's next switch-in is known; the sampler's switch events; the end
 * of the run (exited: the target ended, so waits end with its last event). */
int record_offcpu_init(struct recorder *rec);
void record_offcpu_free(struct recorder *rec);
/* A switch-out sample s of reason, waiting for its thread's next switch-in. read_end_ns: its
 * stack (past its first n_prefix root frames) was read after the sample, by that time (0: at
 * the sample, a capture): it is the stack of that wait only if the thread was not switched in
 * before it (blocked, a thread cannot change its stack); else it is kept as [unknown].
 * initial: a wait under way at the start (record_offcpu_initial()). */
void record_offcpu_sample(struct recorder *rec, const struct record_sample *s, const char *reason,
			 uint64_t read_end_ns, size_t n_prefix, bool initial);
/* Thread tid ran at time_ns (a sample on the CPU): a wait of it before then ended by then, even
 * where its switch-in record was lost. */
void record_offcpu_ran(struct recorder *rec, pid_t tid, uint64_t time_ns);
void record_offcpu_switch(struct recorder *rec, const struct sampler_event *e);
void record_offcpu_end(struct recorder *rec, bool exited);
/* Attach, --off-cpu or --wall, at the run's start: a sample of each wait under way (offcpu.c). */
void record_offcpu_initial(struct recorder *rec);
/* sample.c: a wait under way at the start, s made by the recorder (no ring record), whose
 * Python walk gave r, n frames in rec->pyf and cut, read by read_end_ns, whose wait is
 * reason ("[wait: ...]"). */
void record_finish_wait(struct recorder *rec, const struct sample *s, int r, size_t n,
			const struct pyframes_cut *cut, const char *reason, uint64_t read_end_ns);

/* procs.c (--subprocesses): the root frame [process PID COMMAND] of a sample of process pid;
 * the Python walk of a child's sample (record_walk() in its own interpreter: its captures where
 * it is laid out as the target's, else its memory); the capture root of a child's
 * thread tid (false: none known); a child's exec or exit; free. */
uint32_t record_proc_frame(struct recorder *rec, pid_t pid);
/* A child's interpreter (looked for as its samples do), NULL: none (yet). */
struct pyframes *record_proc_python(struct recorder *rec, pid_t pid);
int record_proc_walk(struct recorder *rec, const struct sample *s, size_t *ret_n,
		     struct pyframes_cut *ret_cut);
bool record_proc_root(struct recorder *rec, pid_t tid, uint64_t *ret_root);
void record_proc_event(struct recorder *rec, const struct sampler_event *e);
/* The address of process pid's GIL state (the target's, or a child's): 0 if not known. */
uint64_t record_gil_addr(struct recorder *rec, pid_t pid);
/* --subprocesses: the user sink's wrapper (ctx: the recorder), sending on to rec->procs_sink;
 * a process counts in stats.processes once the sink has taken one of its samples, known by
 * its root frame. */
int record_procs_sink(void *ctx, const struct record_sample *s);
void record_procs_free(struct recorder *rec);
/* gil.c: whether s's thread held the GIL (enum record_gil; called while a stopped thread
 * is); the sink every finished sample goes to (ctx: the recorder): it counts the thread's GIL
 * and applies --gil before rec->user_sink; free of its counts */
int record_gil_at_sample(struct recorder *rec, const struct sample *s);
/* Capture mode: a program made before the interpreter had its GIL (3.12+: it points to it once
 * made), or before its main interpreter was in its list (a launched command: where the GC's
 * flag lies, 3.9+), is made again with what it lacked, once there is some (tried between
 * slices, RECORD_GIL_TRIES times at most; made again once for each that turns up). 0, or the
 * failure (the program as it was goes on). */
#define RECORD_GIL_TRIES 40
int record_gil_capture_late(struct recorder *rec);
int record_gil_sink(void *ctx, const struct record_sample *s);
void record_gil_free(struct recorder *rec);

/* gc.c: record_gc_at_sample() gives gil (s's enum record_gil, from record_gil_at_sample()) or'ed
 * with RECORD_IN_GC where s's thread ran the interpreter's cyclic GC at the sample (called while
 * a stopped thread is; the gil finish() and struct pending carry); record_gc_frame() (finish())
 * puts the [gc] frame at the leaf end of rec->ids[0..*depth) for such a gil, before the kernel's
 * frames (while a slot is left), and gives the gil without RECORD_IN_GC. */
#define RECORD_IN_GC 0x100
#define RECORD_GC_FRAME "[gc]"
int record_gc_at_sample(struct recorder *rec, const struct sample *s, int gil);
int record_gc_frame(struct recorder *rec, int gil, size_t *depth);

/* wait.c: the reason frame's name of a switch-out sample, e.g. "[wait: read fd 5 (pipe)]". */
#define RECORD_OFF_CPU_REGS REGS_USER_MASK
void record_wait_reason(struct recorder *rec, const struct sample *s, char *buf, size_t len);
#define RECORD_GIL_WAIT_FRAME "[wait: GIL]"    /* its name for a wait for the GIL */

#endif
