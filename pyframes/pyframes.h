/*
 * pyframes: reads the Python call stack of one thread of another process.
 *
 * pyframes_open() finds the CPython interpreter in a target (the _PyRuntime symbol of the
 * executable or of a libpython in /proc/PID/maps, opened through /proc/PID/map_files or
 * /proc/PID/root; else a scan of .PyRuntime / .bss), reads its version and picks the layout
 * for it: 3.13+ from the target's own _Py_DebugOffsets, 3.8-3.12 from a static table per
 * version (layouts/py3XX.h, selected in layout.c only). Either is checked once, before any walk:
 * each offset inside the struct size the target declares, and, with its width, inside the bytes
 * pyframes copies of that object into a buffer of its own; a layout that fails is refused
 * (-EBADMSG, info->error naming the field).
 *
 * pyframes_thread_stack() turns a thread (by its kernel TID) into frames, innermost first,
 * with names and line numbers resolved through a cache of code objects owned by the
 * struct pyframes, and says where it cut a stack at its root end (struct pyframes_cut: the
 * outer frames left out, counted). A live walk keeps no state for the next; a captured one is
 * kept as its thread's memo (walk.c, walk_splice()). Every walk checks the cached code objects it uses against the target (a few
 * header fields of each, all in one readv()), so a code object freed and replaced by another at
 * the same address is named afresh at once. Strings in struct py_frame stay valid until
 * pyframes_free().
 *
 * pyframes_thread_stack_captured() walks a stack whose frames a capture program copied at a
 * sample (sampler's BPF program, at each perf event overflow, following
 * pyframes_capture_spec()): those frames' bytes come from the capture, exact as they were at
 * that instant, and with them (the spec's extras) each frame's code object's identifying
 * fields and the first bytes of its name and file name, so that a code object freed or
 * replaced since the sample is still named as it was; everything else (line tables, long
 * names' tails, frames past the last captured one) from the target's memory as it is now.
 *
 * Every byte comes through a struct remote_mem, so tests feed fake memory. Remote memory is
 * untrusted: every pointer, length and count is checked and every loop is bounded.
 *
 * Errors (negative errno):
 *   -ENOENT   no CPython interpreter found in the target (or: no thread state for that TID)
 *   -EINVAL   a capture that breaks its contract (stride, count), or a layout no capture fits
 *   -ENOTSUP  a CPython whose version hwspy does not support (info->version says which)
 *   -EBADMSG  (pyframes_open) the target's _Py_DebugOffsets is corrupt: an offset outside its
 *             struct or outside what pyframes reads of it (info->error says which, one line)
 *   -ESRCH    the target is gone
 *   -EFAULT   a remote pointer could not be read
 *   -EAGAIN   the stack changed under the read (torn); drop the sample or retry
 *   -ENOMEM   out of memory
 */
#ifndef HWSPY_PYFRAMES_H
#define HWSPY_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One range of a vectored read: len bytes at remote addr into buf. */
struct remote_range {
	uint64_t addr;
	void *buf;
	size_t len;
};

#define REMOTE_MEM_READV_MAX 1024   /* most ranges one readv() call is given (IOV_MAX) */

/* A reader of another process's memory. read() fills all of len bytes or fails:
 * 0, -EFAULT (unmapped / partial), -ESRCH (process gone).
 * readv() is optional (NULL: pyframes makes one read() per range). It reads n ranges
 * (1 <= n <= REMOTE_MEM_READV_MAX) in one call, for about the cost of one read(), and returns
 * how many leading ranges it read in full: n for all of them; k < n when range k could not be
 * read (ranges after k are left untried). -ESRCH: process gone; another negative errno: the
 * call itself failed, and the caller falls back to read(). */
struct remote_mem {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	int (*readv)(void *ctx, const struct remote_range *r, size_t n);
	void *ctx;
};

/* process_vm_readv-backed reader (read and readv) for pid (mem.c); where pid's main thread
 * has exited (pthread_exit) while others run on, from then on a live thread's
 * /proc/PID/task/TID/mem. remote_mem_close() frees its context. */
int remote_mem_open_pid(pid_t pid, struct remote_mem *ret);
void remote_mem_close(struct remote_mem *mem);

struct pyframes_info {
	int major, minor, micro;
	char version[32];       /* "3.11.7"; filled whenever a version was recognised, even on -ENOTSUP */
	char binary[256];       /* path of the file that holds _PyRuntime, as mapped in the target */
	uint64_t runtime_addr;  /* remote address of _PyRuntime (0 if not found) */
	char error[256];        /* -EBADMSG: the field refused and why, one line, no newline:
	                         * "'pyobject.ob_type' offset 16777208 lies outside the 208 bytes
	                         * hwspy reads of a code object: the target's _Py_DebugOffsets is
	                         * corrupt"; else "" */
};

struct py_frame {
	uint64_t code;          /* remote address of the code object (identity, for caching) */
	const char *name;       /* co_qualname (3.11+) or co_name, UTF-8; "<unknown>" if unreadable */
	const char *file;       /* co_filename, UTF-8 */
	int line;               /* line executing in this frame; first_line if unknown */
	int first_line;         /* co_firstlineno */
	bool entry;             /* outermost Python frame of one C-level eval-loop entry (merge, issue 3) */
};

struct pyframes_stats {
	uint64_t walks;          /* pyframes_thread_stack(_captured) calls, less refused captures */
	uint64_t torn;           /* -EAGAIN results of walks */
	uint64_t unreadable;     /* -EFAULT results of walks */
	uint64_t no_thread;      /* -ENOENT of pyframes_thread_stack: TID without a PyThreadState */
	uint64_t truncated;      /* stacks deeper than max, cut at the outermost end */
	uint64_t gone_named;     /* captured walks' code objects freed or replaced since their
	                          * sample, named from the capture */
	uint64_t code_cache_hits, code_cache_misses;
	uint64_t code_cache_clears; /* the code cache crowded, started over */
	uint64_t remote_reads;   /* read() and readv() calls made (a readv() counts once) */
};

struct pyframes;

/* Finds the interpreter in pid. ret_info is filled as far as detection got (may be NULL).
 * Does not take ownership of mem, which must outlive the struct pyframes. */
int pyframes_open(pid_t pid, const struct remote_mem *mem, struct pyframes **ret,
		  struct pyframes_info *ret_info);
/* As pyframes_open(), for a process attached to, which may have been started a moment ago: one
 * younger than PYFRAMES_SETTLE_NS whose interpreter is not found (-ENOENT, -EAGAIN: the loader
 * has not mapped it yet, no thread state yet) is looked at again every 20 ms until it is that
 * old (as py-spy and austin wait for a new process). */
#define PYFRAMES_SETTLE_NS 2000000000ull
int pyframes_open_settled(pid_t pid, const struct remote_mem *mem, struct pyframes **ret,
			  struct pyframes_info *ret_info);
void pyframes_free(struct pyframes *pf);
const struct pyframes_info *pyframes_info(const struct pyframes *pf);

/* Where a walk cut a stack at its root end: n outer frames left out (0: none); more: there are
 * more than n: it stopped counting them (16384 frames walked), or a captured walk ended with
 * the capture, its outer frames no longer readable (the thread returned from them, the target
 * exited). */
struct pyframes_cut {
	uint64_t n;
	bool more;
	/* A captured walk: its id (unique in the process; 0: a live walk), and where its last
	 * `spliced` frames were taken from the thread's memo, the id of the walk that made the
	 * memo, whose last `spliced` frames they are (0: none): what a caller made of those it may
	 * take again */
	uint64_t walk, memo_walk;
	size_t spliced;
};

/* Frames of thread tid, innermost first, at most max (the innermost max are kept; a walk keeps
 * at most 4096). The outer frames past those are counted into *ret_cut (may be NULL; { 0 } on
 * failure), up to 16384 frames walked in all. 0 with *ret_n == 0 means the thread has a
 * PyThreadState but runs no Python code now. */
int pyframes_thread_stack(struct pyframes *pf, pid_t tid, struct py_frame *ret_frames,
			  size_t max, size_t *ret_n, struct pyframes_cut *ret_cut);

/* For threads that keep running during the read (--nonblocking, any read after the sample),
 * checks of each pyframes_thread_stack() walk, so that the frames it gives are a stack the
 * thread had, not pieces of several; -EAGAIN (torn) where one fails:
 *   - the chain ends where a thread's chain ends: 3.12+ at a shim frame (every eval-loop entry
 *     from C pushes one below its first frame), 3.11 at a frame flagged is_entry; an outermost
 *     frame that is a generator's was read after the generator yielded (its caller link
 *     cleared);
 *   - 3.11+: once the chain is read, each of its frames (the innermost 4096) still holds the
 *     caller link and code object it was read with, or no code (3.14 clears a frame it pops:
 *     the thread returned from it since) (read again, all in one readv): a frame whose slot
 *     was popped and reused mid-walk holds another call, and the frames read past it belong
 *     to another moment;
 *   - 3.8-3.10: every frame object was alive when read (a reference count over 0), not freed
 *     (on the free list, its f_back the list's link, or its code's zombie frame): a live frame
 *     keeps its caller alive, and its f_back and f_code do not change while it lives.
 * The thread having moved on (its current frame now another, frames popped but not reused
 * yet) is not torn: the stack read is still one it had. Off by default. */
void pyframes_set_verify(struct pyframes *pf, bool on);

/* The remote PyThreadState of thread tid (what a capture program starts from), into
 * *ret_tstate (0 on error). -ENOENT: the thread has none (yet); -ESRCH, -EAGAIN (the thread
 * list changed under the read), -EFAULT (the interpreter's runtime state unreadable). Counts
 * in no stats. */
int pyframes_thread_state(struct pyframes *pf, pid_t tid, uint64_t *ret_tstate);

/*
 * The GIL of the main interpreter, read live: locked, and holder, the PyThreadState address of
 * the thread that took it last (a thread holds it when locked && holder is its
 * pyframes_thread_state()). 3.8-3.11: _PyRuntime.ceval.gil; 3.12+: what the main
 * interpreter's ceval.gil points to (its own _gil); offsets from the static tables, from
 * _Py_DebugOffsets on 3.13+. known false (and 0 returned): a build or layout without a GIL
 * (free-threaded, or offsets that do not fit). Reads the target uncached, counted in no stats.
 * 0; -EFAULT (the state unreadable, or not created yet), -EAGAIN (the interpreter list changed
 * under the read, or what was read is no GIL state: locked neither 0 nor 1, a bad holder),
 * -ESRCH; *ret is { false } on error.
 */
struct pyframes_gil {
	bool known;
	bool locked;
	uint64_t holder;        /* PyThreadState * of the last holder (0: none yet) */
};
int pyframes_gil(const struct pyframes *pf, struct pyframes_gil *ret);

/* For a reader of its own (a BPF program at a sample): the remote address of the struct
 * _gil_runtime_state in use, and the offsets in it of locked (a 32-bit int, 0 or 1) and of
 * last_holder (a 64-bit PyThreadState *), each inside its first 64 bytes.
 * 0; -ENOTSUP (no GIL: known false above), else as pyframes_gil(); *ret_addr is 0 on error. */
/* sizeof(struct _gil_runtime_state), 3.8-3.14 on x86-64 (gdb): a futex wait inside it, on its
 * mutex or condition variables, is a wait for the GIL */
#define PYFRAMES_GIL_STATE_SIZE 208
int pyframes_gil_spec(const struct pyframes *pf, uint64_t *ret_addr, uint32_t *ret_locked_off,
		      uint32_t *ret_holder_off);

/*
 * The cyclic garbage collector of the main interpreter, read live: collecting, true from the
 * start to the end of a collection (gc.collect()'s or an automatic one, its callbacks and the
 * finalizers it runs included): the int collecting of its struct _gc_runtime_state,
 * _PyRuntime.gc in 3.8, the main interpreter's gc from 3.9 on; offsets from the static tables,
 * from _Py_DebugOffsets on 3.13+ (its gc section). The flag is the interpreter's: the thread
 * that collects is the one that holds the GIL (a finalizer that lets the GIL go lets another
 * thread run while it is still set). known false (and 0 returned): a layout that does not
 * place it. Reads the target uncached, counted in no stats. 0; -EFAULT (unreadable), -EAGAIN
 * (the interpreter list changed under the read, or the int read is neither 0 nor 1), -ESRCH;
 * *ret is { false } on error.
 */
struct pyframes_gc {
	bool known;
	bool collecting;
};
int pyframes_gc(const struct pyframes *pf, struct pyframes_gc *ret);
/* For a reader of its own (a BPF program at a sample): the remote address of that int (32
 * bits, 0 or 1). 0; -ENOTSUP (known false above), else as pyframes_gc(); *ret_addr is 0 on
 * error. */
int pyframes_gc_spec(const struct pyframes *pf, uint64_t *ret_addr);

/*
 * Python's own names of the threads: threading's registry of live threads (threading._active,
 * found through sys.modules of the main interpreter), each Thread's _name and _native_id (the
 * kernel TID, as the target's PID namespace numbers it). Reads Python objects of the target:
 * dicts (their keys objects, split values, 3.11+ managed dicts and 3.13+ inline values), str and
 * int; every count, index and pointer is bounded, at most PYFRAMES_NAMES_MAX_ENTRIES entries of
 * each dict are looked at. A registry that changes under the read can give a wrong name or
 * leave one out, never more. Fills ret[0..*ret_n) (at most max); a thread without a readable
 * name or native id is left out. 0; -ENOENT (threading not imported, no _active: a program
 * without threading, or one still starting); -ENOTSUP (a layout that does not know where
 * sys.modules is); -EAGAIN (a dict unreadable or not one: torn); -ESRCH.
 */
#define PYFRAMES_THREAD_NAME_MAX 128
#define PYFRAMES_NAMES_MAX_ENTRIES 4096
struct pyframes_thread_name {
	pid_t tid;                               /* Thread._native_id */
	char name[PYFRAMES_THREAD_NAME_MAX];     /* Thread._name, UTF-8, cut at a character */
};
int pyframes_thread_names(struct pyframes *pf, struct pyframes_thread_name *ret, size_t max,
			  size_t *ret_n);

/*
 * Exact stacks of threads that keep running: a capture program (sampler's BPF program, run at
 * each sample's overflow in the sampled thread's context) copies the thread's frames at that
 * instant, following this spec from the thread state:
 *
 *   P = *(u64 *) (tstate + head_off1);
 *   frame = head_off2 != PYFRAMES_NO_OFF ? (P ? *(u64 *) (P + head_off2) : 0) : P;
 *   head = frame;
 *   while (frame && n < cap)
 *           copy frame_bytes bytes at frame, then the extras, then
 *           frame = *(u64 *) (frame + next_off);
 *
 * frame_bytes holds every field the walker reads from a frame, so a walk never reads a captured
 * frame from the target. Each extra i copies len bytes at (*(u64 *) (body + from) & mask) + off,
 * where body is the node past its address (its frame bytes, then extras 0..i-1, each an
 * address (0: not read) and its bytes): the code object's header fields that identify it
 * (3.12+: its version among them; before, a print of its name's and file name's text too),
 * then the start of its name and file name strings (see struct pyframes_capture).
 */
#define PYFRAMES_NO_OFF             UINT32_MAX
#define PYFRAMES_CAPTURE_FRAME_MAX  128u     /* most frame_bytes a spec asks for */
#define PYFRAMES_CAPTURE_MAX_NODES  4096u    /* most frames one capture may hold */
#define PYFRAMES_CAPTURE_MAX_EXTRAS 8u
#define PYFRAMES_CAPTURE_EXTRA_MAX  160u     /* most bytes of one extra */
#define PYFRAMES_CAPTURE_FILE_MAX   128u     /* most bytes of the file name's extra */
#define PYFRAMES_CAPTURE_STRIDE_MAX 496u     /* most bytes of a node with its extras */

struct pyframes_capture_extra {
	uint32_t from, off, len;        /* len a multiple of 8; from a multiple of 8 */
	uint64_t mask;
	bool reuse;             /* its address is most often the caller's frame's too (a file
	                         * name): the program may copy that node's bytes (sampler's) */
};

struct pyframes_capture_spec {
	uint32_t head_off1, head_off2;
	uint32_t frame_bytes;   /* a multiple of 8, <= PYFRAMES_CAPTURE_FRAME_MAX */
	uint32_t next_off;      /* the caller link (f_back / previous); next_off + 8 <= frame_bytes */
	uint32_t n_extras;      /* <= PYFRAMES_CAPTURE_MAX_EXTRAS */
	struct pyframes_capture_extra extra[PYFRAMES_CAPTURE_MAX_EXTRAS];
	uint32_t n_identity;    /* extras [0, n_identity) identify the code object: its fields
	                         * (those read from the frame's code pointer, first), then a
	                         * print of its names' text (before 3.12); the rest, the starts
	                         * of its names */
	uint32_t unique_at;     /* 0, or the body position (as from's) of the code's version in
	                         * its fields (3.12+): no two codes share one, but 0 */
	/* 0, or (with unique_at) a word that moves whenever a code may have come to an address
	 * another code had: while it stays, a code address holds the code read there before */
	uint64_t versions_at;
	enum {
		/* a u32 each new code takes its version from, then moves on, 0 once they ran
		 * out: 3.12's _Py_next_func_version, where the binary's symbols name it */
		PYFRAMES_VERSIONS_NEXT32,
		/* a u64 count of the codes freed: 3.14's main interpreter's
		 * _code_object_generation (its _Py_DebugOffsets place it) */
		PYFRAMES_VERSIONS_FREED64,
	} versions_kind;
	bool stacked;           /* a caller's frame most often lies just below its callee's
	                         * (3.11+: in the thread's stack chunks; before: allocated so) */
	/* 0, or (3.12+) a frame whose owner byte, at shim_at in its bytes, is at least shim_min
	 * is a shim (an eval-loop entry's frame on the C stack): no code, never named */
	uint32_t shim_at, shim_min;
};

/* The spec for this target's CPython. 0, or -EINVAL: its frames cannot fit
 * PYFRAMES_CAPTURE_FRAME_MAX (no captured walks for it). */
int pyframes_capture_spec(const struct pyframes *pf, struct pyframes_capture_spec *ret);

/* How a capture program finds, by itself, the state of a thread it has none for (a thread
 * started since hwspy last looked), in the thread's own context at its sample:
 *
 *   interp = *(u64 *) interp_at;  tstate = *(u64 *) (interp + threads_off);
 *   while (tstate): id = *(u64 *) (tstate + tid_off1);
 *                   if tid_off2 != PYFRAMES_NO_OFF: id = *(u64 *) (id + tid_off2);
 *                   if ((u32) id == the thread's kernel tid) it is the state;
 *                   tstate = *(u64 *) (tstate + next_off);
 *
 * (3.11+: the state's native_thread_id; before: its pthread_t, then the kernel tid glibc keeps
 * in struct pthread.) Only the first interpreter's list; CPython puts a new thread first.
 * 0, or -ENOENT (the tid's place in struct pthread is not known: no thread found yet),
 * -ESRCH, -EAGAIN, -EFAULT as pyframes_thread_state(). */
struct pyframes_search_spec {
	uint64_t interp_at;
	uint32_t threads_off, next_off, tid_off1, tid_off2;
};
int pyframes_search_spec(struct pyframes *pf, struct pyframes_search_spec *ret);

/* One captured frame chain. head: the frame the thread ran at the sample (0: no Python code).
 * nodes: n nodes, each stride bytes: the frame's remote address (u64, native byte order, any
 * alignment), then the spec's frame_bytes bytes copied from there; innermost first, as the
 * chain was followed. Borrowed: pyframes keeps no pointer into it after the call. */
struct pyframes_capture {
	uint64_t head;
	const unsigned char *nodes;
	size_t n, stride;
	size_t n_extras;        /* how many of the spec's extras each node carries after its frame
	                         * bytes (0: none, or all of them; stride holds them) */
	/* names_stride 0: as n_extras says. Else each node carries the spec's identity extras
	 * (n_identity) alone, and nodes [0, n_names) their others (its names; address 0 where
	 * left out) at names + k x names_stride, the same way */
	const unsigned char *names;
	size_t n_names, names_stride;
	/* the sampled thread (0: none): its previous captured walk's frames are taken for the
	 * nodes this capture shares with it, byte for byte, at its outermost end */
	pid_t tid;
	/* NULL: as above. Else (names_stride too) node k's extras, all of them, lie at ident[k]
	 * (NULL: none captured), laid out as they would follow its frame bytes, and a node holds
	 * its frame bytes and then a word that stands for its identity (equal words, equal
	 * identities: the BPF program's check); names and n_names as above, for the memo */
	const unsigned char *const *ident;
};

/* As pyframes_thread_stack(), from a capture: no thread-state lookup, no verify. The walk starts
 * at cap->head; a frame's bytes come from the capture wherever a node holds its address, and
 * from the target's memory otherwise, so a chain the capture cut short (its last node's caller
 * link not captured) goes on in live memory. Where nodes overlap (a torn or looping chain), the
 * one at the lower address wins, then the earlier one. -EINVAL (counted in no stats): n over
 * PYFRAMES_CAPTURE_MAX_NODES, with n > 0 nodes NULL or stride under 8 + frame_bytes, or no
 * spec for this CPython; else as pyframes_thread_stack() (-EAGAIN: a loop, a bad pointer, a
 * frame that is no frame), less -ENOENT. */
int pyframes_thread_stack_captured(struct pyframes *pf, const struct pyframes_capture *cap,
				   struct py_frame *ret_frames, size_t max, size_t *ret_n,
				   struct pyframes_cut *ret_cut);

const struct pyframes_stats *pyframes_stats(const struct pyframes *pf);
/* Whether the code cache started over (forgetting every name: a capture that leaves names it
 * sent before out must send them again) since the last call that said so. */
bool pyframes_codes_forgotten(struct pyframes *pf);

#endif
