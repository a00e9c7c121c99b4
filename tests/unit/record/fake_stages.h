/*
 * fake_stages: the sampler, pyframes and symbolizer as record/ calls them, played from a script
 * (struct fake_world), so that a unit test links record/'s objects alone with these in place of
 * the real stages and drives the recorder through its public lifecycle (recorder_new ...
 * recorder_run ... recorder_free). Nothing here opens a perf event, a process or a file.
 *
 * The script. The target runs one program at a time (struct fake_image: the interpreter
 * pyframes_open() finds, and each thread's Python stack as a live read sees it now); an exec
 * moves on to the next image. The sampler's stream is a list of items (struct fake_item):
 * samples, execs and the end of a slice; sampler_run() plays them in order up to the end of a
 * slice and reports the target exited once all are played.
 *
 * Stacks are texts, root first: "main;work;leaf" is three Python frames of "t.py" at lines 1,
 * 2 and 3, the outermost marked as its eval-loop entry. Native stacks are lists of addresses
 * of the symbol table fake_syms (fake_stages.c), innermost first, as an unwinder gives them.
 *
 * What the recorder did is counted in the world (calls, what it asked, what it gave), for the
 * tests to check; fake_world_reset() clears it and frees what the fakes made.
 */
#ifndef HWSPY_TEST_FAKE_STAGES_H
#define HWSPY_TEST_FAKE_STAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyframes/pyframes.h"
#include "sampler/sampler.h"
#include "symbolizer/symbolizer.h"

#define FAKE_MAX_IMAGES 4
#define FAKE_MAX_THREADS 8
#define FAKE_MAX_ITEMS 256
#define FAKE_MAX_STARTS 4
#define FAKE_MAX_IPS 16

/* addresses of fake_syms: the interpreter's module is FAKE_INTERP_MODULE */
#define FAKE_INTERP_MODULE "python3.12"
#define FAKE_IP_START 0x1000            /* _start        (python3.12) */
#define FAKE_IP_MAIN 0x1100             /* main          (python3.12) */
#define FAKE_IP_RUNMAIN 0x1200          /* Py_RunMain    (python3.12) */
#define FAKE_IP_EVAL 0x1300             /* _PyEval_EvalFrameDefault (python3.12) */
#define FAKE_IP_CALL 0x1400             /* PyObject_Call (python3.12) */
#define FAKE_IP_DEFLATE 0x2000          /* deflate       (libz.so.1) */
#define FAKE_IP_NONAME 0x2100           /* no name       (libz.so.1) */
#define FAKE_IP_K_READ 0xffffffff81000000ull    /* ksys_read (kernel) */
#define FAKE_IP_K_SYSCALL 0xffffffff81000100ull /* entry_SYSCALL_64 (kernel) */
#define FAKE_GIL_AT 0x6000
#define FAKE_GIL_FREE 1
#define FAKE_GC_AT 0x7000
#define FAKE_BUILD_ID_LIBZ "00112233445566778899aabbccddeeff00112233"

struct fake_thread {
	pid_t tid;
	const char *stack;              /* what a live read gives now; "" no Python code running */
	int error;                      /* a live read's result instead (-EAGAIN, -EFAULT, -ENOENT:
	                                 * no thread state), 0: the stack */
	unsigned torn_reads;            /* -EAGAIN for this many live reads first, then the stack */
	struct pyframes_cut cut;        /* a live read cut this (and a captured one, see items) */
	uint64_t tstate;                /* pyframes_thread_state(), 0: -ENOENT (none yet) */
	const char *name;               /* in Python's threading registry, NULL: not there */
};

struct fake_image {
	int open_error;                 /* pyframes_open(): this, 0: found */
	unsigned open_misses;           /* ... -ENOENT this many times first (the loader) */
	unsigned corrupt_opens;         /* ... then -EBADMSG this many times (read while the
	                                 * loader maps it) */
	const char *version;            /* "3.12.1" */
	const char *binary;             /* "/usr/bin/python3.12" */
	bool searchable;                /* pyframes_search_spec() gives a search */
	bool gil;                       /* it has a GIL (pyframes_gil_spec() at FAKE_GIL_AT) */
	uint64_t gil_holder;            /* a live read of it: locked by this state, 0: free */
	bool gc;                        /* it places its GC's flag (pyframes_gc_spec() at
	                                 * FAKE_GC_AT) */
	bool gc_collecting;             /* a live read of it */
	struct fake_thread threads[FAKE_MAX_THREADS];
	size_t n_threads;
};

enum fake_item_kind {
	FAKE_SAMPLE,
	FAKE_EXEC,                      /* the target execs the next image */
	FAKE_SLICE,                     /* sampler_run() returns here */
};

struct fake_item {
	enum fake_item_kind kind;
	pid_t tid;
	uint64_t values[SAMPLER_MAX_EVENTS];    /* [0] the period; 0: 1000 */
	uint64_t age_ns;                /* the sample was taken this long before it is handed over */
	uint64_t pause_ns;              /* FAKE_SLICE: sampler_run() returns this long after */
	const char *name_now;           /* FAKE_SLICE: thread tid has this name in the registry
	                                 * from now on ("-": none) */
	bool stopped;                   /* exact mode by stops: the thread is stopped meanwhile */
	const char *after;              /* the thread's stack once the sample is handed over (the
	                                 * thread ran on), NULL: unchanged */
	/* capture mode: what the program copied; NULL: the stack it has now. A thread without a
	 * root (none set, no search) gets SAMPLE_CAPTURE_NO_ROOT whatever is asked */
	const char *captured;
	int capture_status;             /* SAMPLE_CAPTURE_OK ... */
	struct pyframes_cut captured_cut;       /* what a walk of the capture cut */
	uint64_t tstate;                /* nonzero: the thread has this state from now on (it was
	                                 * made since the recorder last asked) */
	int gil;                        /* its capture's GIL: enum record_gil (a thread with no
	                                 * root gets none) */
	uint64_t gil_holder_now;        /* a live read of the GIL from this sample on gives this
	                                 * holder (FAKE_GIL_FREE: free; 0: as before) */
	int gc;                         /* its capture's GC flag: 0 not read, 1 not collecting,
	                                 * 2 collecting */
	int gc_now;                     /* a live read of the GC from this sample on: 0 as before,
	                                 * 1 not collecting, 2 collecting */
	bool gc_placed;                 /* from this sample on, the image places its GC's flag */
	bool codes_forgotten;           /* a walk of its capture starts its code cache over */
	uint64_t ip;                    /* the sample's IP (user unless a kernel one) */
	uint64_t native[FAKE_MAX_IPS];  /* --native: the unwound addresses, innermost first */
	uint64_t kernel[FAKE_MAX_IPS];  /* --kernel: the kernel callchain, innermost first */
};

struct fake_world {
	/* the script */
	struct fake_image images[FAKE_MAX_IMAGES];
	size_t n_images;
	struct fake_item items[FAKE_MAX_ITEMS];
	size_t n_items;
	int start_errors[FAKE_MAX_STARTS];      /* sampler_new()'s results, call by call (0 past) */
	int capture_errors[FAKE_MAX_STARTS];    /* sampler_capture_start()'s, call by call */
	pid_t launch_pid;               /* a launched command's pid */
	int capture_probe;              /* sampler_capture_probe()'s result */
	int signal_probe;               /* sampler_signal_probe()'s, less 1 (0: -EBUSY) */

	/* the play */
	size_t image;                   /* the program the target runs now */
	size_t next_item;
	pid_t roots_tid[FAKE_MAX_THREADS * FAKE_MAX_IMAGES];
	uint64_t roots[FAKE_MAX_THREADS * FAKE_MAX_IMAGES];
	size_t n_roots;

	/* what the recorder did */
	unsigned sampler_news, sampler_frees, sampler_stops, sampler_runs;
	struct sampler_opts last_opts;  /* the last sampler_new()'s (pointers not to be followed) */
	bool last_capture_spec;         /* ... it asked for a capture at once */
	unsigned capture_starts;        /* sampler_capture_start() calls, sampler_new()'s included */
	unsigned capture_forgets;       /* sampler_capture_forget() calls */
	uint32_t capture_extras[FAKE_MAX_STARTS * 2];   /* n_extras of each */
	uint64_t capture_search_at[FAKE_MAX_STARTS * 2];
	uint64_t capture_gil_at[FAKE_MAX_STARTS * 2];
	uint64_t capture_gc_at[FAKE_MAX_STARTS * 2];
	unsigned gc_reads;              /* pyframes_gc() calls */
	unsigned pf_opens, pf_live, pf_frees;
	unsigned mem_opens, mem_closes;
	unsigned live_reads, captured_reads;
	size_t captured_walk_extras;    /* n_extras of the last captured walk */
	bool verify;                    /* pyframes_set_verify's last */
	unsigned verified_reads;        /* live_reads made with verify on */
	unsigned sym_news, sym_live, sym_warms;
	unsigned sym_failures;           /* symbolizer_new() fails this many times first */
	bool in_stop;                   /* a stopped sample's callback runs */
	unsigned unwinds_in_stop;       /* symbolizer_unwind() calls meanwhile */
	unsigned names_reads;
};

extern struct fake_world fake;

/* Clears the world (frees what the fakes allocated: they must all be freed by then). */
void fake_world_reset(void);

#endif
