/*
 * merge: one stack from a sample's native frames and its Python frames (DESIGN.md, "merge").
 *
 * Interpreter frames. A native frame is an eval-loop frame when its name is
 * _PyEval_EvalFrameDefault, or that name followed by a compiler suffix (".cold",
 * ".constprop.N", ".isra.N", ".part.N", ".lto_priv.N", ".llvm.N": anything after a '.', which
 * no C identifier contains), or when it starts with "_TAIL_CALL_" (3.14 built with the
 * tail-calling interpreter: every opcode and label is a function _TAIL_CALL_<NAME>, e.g.
 * _TAIL_CALL_LOAD_ATTR, _TAIL_CALL_start_frame, _TAIL_CALL_error). One C-level eval-loop entry
 * ("entry" below) is:
 *   - each _PyEval_EvalFrameDefault frame, clones included (a .cold part is reached by a jump
 *     inside the same C frame, so it stands for its entry, never next to it);
 *   - with the tail-calling interpreter, _PyEval_EvalFrameDefault plus the handler it calls
 *     (it keeps the entry frame on its own C stack, so the first handler call is a real call;
 *     handlers then musttail into each other): a handler frame joins the entry of the eval
 *     frame outside it when no kept frame lies between them, and starts an entry of its own
 *     otherwise (an unwind that ends inside a handler);
 *   - an eval frame reported as inlined into an eval frame joins that frame's entry.
 * In 3.8-3.10 every Python call enters _PyEval_EvalFrameDefault, in 3.11+ only calls from C do
 * (Python-to-Python calls stay in the same loop): pyframes marks the outermost Python frame of
 * each entry (py_frame.entry), so Python frame i belongs to the segment that starts at the
 * nearest entry-flagged frame at or outside it. Segments are taken root first and matched to
 * entries root first; each entry is replaced by its segment, outermost Python frame first.
 *
 * Other frames. Frames of the interpreter's module (basename equal to interp_module: libpython,
 * or the executable of a static build) and of a "python[0-9.]*[a-z]*" launcher executable
 * (main and _start of a shared build) are dropped, except:
 *   - the garbage collector: collect (3.8-3.9), gc_collect_main (3.10-3.13, 3.14 free-threaded),
 *     _PyGC_Collect (3.13+), gc_collect_young / gc_collect_increment / gc_collect_full (3.14);
 *   - waits for the GIL or a lock: take_gil, drop_gil (waits for the switch), the lock waits
 *     PyThread_acquire_lock_timed (+ _with_retries, 3.13+), _PyMutex_LockTimed,
 *     _PyParkingLot_Park and PyEvent_WaitTimed (3.13+).
 * A nameless frame of the interpreter's module (a stripped build) is dropped too, but counts as
 * possibly an unrecognised eval frame (below). Perf trampolines ("py::NAME:FILE" JIT frames of
 * python -X perf) repeat the Python frames and are dropped. Frames of every other module stay
 * where they are (libc, libffi, numpy, ...); a nameless one reads "MODULE+0xADDR" (written into
 * the caller's scratch) or "[unknown]" (FRAME_SPECIAL) without a module.
 *
 * Counts that disagree. E entries and S segments:
 *   - E == S: matched in order.
 *   - E == S + 1, the Python stack not truncated: the innermost entry runs no Python frame yet
 *     or any more (entering or leaving the loop: 3.11/3.12 skip a frame that has not started,
 *     3.8-3.10 set tstate->frame inside the loop); it is dropped.
 *   - E > S, the Python stack truncated (py_truncated, or its outermost frame is not an entry):
 *     matched from the innermost; the outer E - S entries, whose Python frames were cut, drop.
 *   - E < S, the native unwind did not visibly reach the thread's start (no frame named _start,
 *     __libc_start_main(_impl), __libc_start_call_main, start_thread, clone, clone3, main,
 *     Py_RunMain, Py_BytesMain, pymain_main, pythread_wrapper, t_bootstrap or thread_run): the
 *     stack copy ended before the outer eval frames, so the innermost E segments are matched
 *     and the outer S - E segments go at the root, before every native frame.
 *   - anything else: -EPROTO, never a mis-ordered stack.
 * The lenient cases also need every frame of the interpreter's module to be named (a nameless
 * one may be an eval frame: Debian's stripped python3.13/3.14 export the hot part of
 * _PyEval_EvalFrameDefault but its large .cold part has no symbol), except
 *   - E == S + 1 with the Python stack not truncated: a nameless eval frame would make it
 *     S + 2 or more entries, which no Python stack read whole leaves, so none is one (the
 *     innermost entry is dropped as above; Debian's python3.14 entering or leaving a ctypes
 *     callback);
 *   - E == 0 < S when every nameless interpreter frame lies outside every kept frame (e.g.
 *     only the leaf frame was passed): then the Python stack goes at the root and the native
 *     frames after it.
 *
 * Without native frames (n_native == 0) the result is the Python stack alone.
 *
 * Python frames unknown (py_unknown, n_py == 0: a Python stack read after its sample that did
 * not fit, so a later one). The native frames are kept as above and each entry becomes one
 * MERGE_PY_UNKNOWN frame (FRAME_SPECIAL), entries with no kept frame between them one frame
 * together: the sample ran Python code there, which no one can name any more. Never -EPROTO.
 */
#ifndef HWSPY_RECORD_MERGE_H
#define HWSPY_RECORD_MERGE_H

#include <stdbool.h>
#include <stddef.h>

#include "output/profile.h"
#include "pyframes/pyframes.h"
#include "record/record.h"
#include "symbolizer/symbolizer.h"

/* Scratch bytes one nameless native frame's "MODULE+0xADDR" text needs at most (a module
 * basename is at most 255 bytes). A scratch of max * MERGE_SCRATCH_PER_FRAME never runs out. */
#define MERGE_SCRATCH_PER_FRAME 280

/* The frame that stands for the Python code of an entry when py_unknown is set. */
#define MERGE_PY_UNKNOWN RECORD_PY_UNKNOWN

struct merge_in {
	const struct native_frame *native;  /* innermost first (inline frames included) */
	size_t n_native;
	const struct py_frame *py;          /* innermost first, with their entry flags */
	size_t n_py;
	const char *interp_module;          /* basename of the module holding the interpreter, or NULL */
	bool function_lines;                /* Python frames at their first line (--function) */
	bool py_truncated;                  /* pyframes cut the Python stack at its outer end */
	bool py_unknown;                    /* no Python frames for this sample (n_py must be 0) */
	char *scratch;                      /* texts of nameless native frames; may be NULL */
	size_t scratch_size;
	int32_t *py_at;                     /* NULL, or per frame written: the index in py of the
	                                     * Python frame it is, -1 for any other */
};

/* Writes the merged stack, root first, into ret (profile frames; strings borrowed from the
 * inputs and from in->scratch, so valid until the caller reuses either: intern them with
 * profile_frame_id() before the next merge). When the scratch runs out, a nameless frame
 * reads as its module's name alone.
 * 0, -EPROTO (entries and segments do not match; *ret_n = 0), -E2BIG (more than max frames:
 * the innermost max are kept and the result is still usable), -EINVAL (NULL arrays, or
 * py_unknown with Python frames). */
int merge_stacks(const struct merge_in *in, struct profile_frame *ret, size_t max, size_t *ret_n);

/* The profile frame merge_stacks() makes of Python frame py (at its first line with
 * function_lines). Without native frames (n_native 0, no py_unknown) its output is py's
 * frames root first, each so, as many as fit. */
void merge_py_frame(const struct py_frame *py, bool function_lines, struct profile_frame *ret);

/* True for names of the interpreter's eval-loop functions in any supported version
 * (_PyEval_EvalFrameDefault and its clones, 3.14's _TAIL_CALL_* handlers). */
bool merge_is_eval_frame(const char *name);

/* True for interpreter-internal names that merge keeps (garbage collector, GIL and lock
 * waits); clone suffixes accepted. */
bool merge_is_kept_internal(const char *name);

#endif
