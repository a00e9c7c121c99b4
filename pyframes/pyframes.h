/*
 * pyframes: reads the Python call stack of one thread of another process.
 *
 * pyframes_open() finds the CPython interpreter in a target (the _PyRuntime symbol of the
 * executable or of a libpython in /proc/PID/maps, opened through /proc/PID/map_files or
 * /proc/PID/root; else a scan of .PyRuntime / .bss), reads its version and picks the layout
 * for it: 3.13+ from the target's own _Py_DebugOffsets (validated), 3.8-3.12 from a static
 * table per version (layouts/py3XX.h, selected in layout.c only).
 *
 * pyframes_thread_stack() turns a thread (by its kernel TID) into frames, innermost first,
 * with names and line numbers resolved through a cache of code objects owned by the
 * struct pyframes. Every walk checks the cached code objects it uses against the target (a few
 * header fields of each, all in one readv()), so a code object freed and replaced by another at
 * the same address is named afresh at once. Strings in struct py_frame stay valid until
 * pyframes_free().
 *
 * Every byte comes through a struct remote_mem, so tests feed fake memory. Remote memory is
 * untrusted: every pointer, length and count is checked and every loop is bounded.
 *
 * Errors (negative errno):
 *   -ENOENT   no CPython interpreter found in the target (or: no thread state for that TID)
 *   -ENOTSUP  a CPython whose version hwspy does not support (info->version says which)
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

/* process_vm_readv-backed reader (read and readv) for pid (mem.c). remote_mem_close() frees
 * its context. */
int remote_mem_open_pid(pid_t pid, struct remote_mem *ret);
void remote_mem_close(struct remote_mem *mem);

struct pyframes_info {
	int major, minor, micro;
	char version[32];       /* "3.11.7"; filled whenever a version was recognised, even on -ENOTSUP */
	char binary[256];       /* path of the file that holds _PyRuntime, as mapped in the target */
	uint64_t runtime_addr;  /* remote address of _PyRuntime (0 if not found) */
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
	uint64_t walks;          /* pyframes_thread_stack calls */
	uint64_t torn;           /* -EAGAIN results */
	uint64_t unreadable;     /* -EFAULT results */
	uint64_t no_thread;      /* -ENOENT: TID without a PyThreadState */
	uint64_t truncated;      /* stacks deeper than max, cut at the outermost end */
	uint64_t code_cache_hits, code_cache_misses;
	uint64_t remote_reads;   /* read() and readv() calls made (a readv() counts once) */
};

struct pyframes;

/* Finds the interpreter in pid. ret_info is filled as far as detection got (may be NULL).
 * Does not take ownership of mem, which must outlive the struct pyframes. */
int pyframes_open(pid_t pid, const struct remote_mem *mem, struct pyframes **ret,
		  struct pyframes_info *ret_info);
void pyframes_free(struct pyframes *pf);
const struct pyframes_info *pyframes_info(const struct pyframes *pf);

/* Frames of thread tid, innermost first, at most max (the innermost max are kept).
 * 0 with *ret_n == 0 means the thread has a PyThreadState but runs no Python code now. */
int pyframes_thread_stack(struct pyframes *pf, pid_t tid, struct py_frame *ret_frames,
			  size_t max, size_t *ret_n);

/* For threads that keep running during the read (--nonblocking): after each walk, re-read the
 * thread's current frame and that frame's code object, and report -EAGAIN (torn) if either
 * changed. Costs two reads per walk. Off by default. */
void pyframes_set_verify(struct pyframes *pf, bool on);

const struct pyframes_stats *pyframes_stats(const struct pyframes *pf);

#endif
