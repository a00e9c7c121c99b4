/*
 * Unit tests of record/merge.c: synthetic native + Python stacks for each CPython family.
 *
 * Stacks are written root first (as one reads them); check() reverses them into the
 * innermost-first order merge_stacks() takes and compares the exact output, root first.
 * Output frames render as "py NAME FILE:LINE", "c NAME MODULE" (plus " FILE:LINE" when the
 * frame has a source file) and "sp NAME" (FRAME_SPECIAL).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "record/merge.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_FRAMES 64

#define LIB38 "libpython3.8.so.1.0"
#define LIB310 "libpython3.10.so.1.0"
#define LIB311 "libpython3.11.so.1.0"
#define LIB312 "libpython3.12.so.1.0"
#define LIB313 "libpython3.13.so.1.0"
#define LIB314 "libpython3.14.so.1.0"
#define LIBC "libc.so.6"
#define EFD "_PyEval_EvalFrameDefault"

#define NAT(n, m) { .addr = 0x1000, .name = (n), .module = (m) }
#define NAT_AT(n, m, off) { .addr = 0x7f0000000000 + (off), .module_offset = (off), .name = (n), .module = (m) }
#define NAT_INL(n, m) { .addr = 0x1000, .name = (n), .module = (m), .inlined = true }
#define NAT_SRC(n, m, f, l) { .addr = 0x1000, .name = (n), .module = (m), .file = (f), .line = (l) }
#define PYF(n, f, l, e) \
	{ .code = 0x10, .name = (n), .file = (f), .line = (l), .first_line = 1, .entry = (e) }

struct tc {
	const char *interp;
	const struct native_frame *nat;         /* root first */
	size_t n_nat;
	const struct py_frame *py;              /* root first */
	size_t n_py;
	bool function_lines, py_truncated, py_unknown;
	size_t max;                             /* 0: MAX_FRAMES */
	size_t scratch;                         /* 0: 4096 */
};

static void render(const struct profile_frame *f, char *s, size_t n)
{
	switch (f->kind) {
	case FRAME_PYTHON:
		assert_null(f->module);
		snprintf(s, n, "py %s %s:%d", f->name, f->file ? f->file : "-", f->line);
		break;
	case FRAME_NATIVE:
		if (f->file)
			snprintf(s, n, "c %s %s %s:%d", f->name, f->module ? f->module : "-", f->file,
				 f->line);
		else
			snprintf(s, n, "c %s %s", f->name, f->module ? f->module : "-");
		break;
	case FRAME_SPECIAL:
		snprintf(s, n, "sp %s", f->name);
		break;
	default:
		snprintf(s, n, "kind %d %s", (int) f->kind, f->name);
		break;
	}
}

static void check_r(const struct tc *t, const char *const *want, size_t n_want, int want_r)
{
	struct native_frame nat[MAX_FRAMES];
	struct py_frame py[MAX_FRAMES];
	struct profile_frame out[MAX_FRAMES];
	char scratch[4096], line[512];
	size_t i, n = 12345;
	struct merge_in in = {
		.native = nat, .n_native = t->n_nat, .py = py, .n_py = t->n_py,
		.interp_module = t->interp, .function_lines = t->function_lines,
		.py_truncated = t->py_truncated, .py_unknown = t->py_unknown, .scratch = scratch,
		.scratch_size = t->scratch ? t->scratch : sizeof(scratch),
	};
	int r;

	assert_true(t->n_nat <= MAX_FRAMES && t->n_py <= MAX_FRAMES);
	for (i = 0; i < t->n_nat; i++)
		nat[i] = t->nat[t->n_nat - 1 - i];
	for (i = 0; i < t->n_py; i++)
		py[i] = t->py[t->n_py - 1 - i];
	r = merge_stacks(&in, out, t->max ? t->max : MAX_FRAMES, &n);
	for (i = 0; i < n && i < n_want; i++) {
		render(&out[i], line, sizeof(line));
		if (strcmp(line, want[i]) != 0)
			break;
	}
	if (r != want_r || n != n_want || i < n) {
		print_message("# got %d, %zu frames:\n", r, n);
		for (i = 0; i < n && i < MAX_FRAMES; i++) {
			render(&out[i], line, sizeof(line));
			print_message("#   %s\n", line);
		}
	}
	assert_int_equal(r, want_r);
	assert_int_equal(n, n_want);
	for (i = 0; i < n; i++) {
		render(&out[i], line, sizeof(line));
		assert_string_equal(line, want[i]);
	}
}

#define TC(i, n, p) { .interp = (i), .nat = (n), .n_nat = N_OF(n), .py = (p), .n_py = N_OF(p) }
#define TC_MAX(i, n, p, m) { .interp = (i), .nat = (n), .n_nat = N_OF(n), .py = (p), \
			     .n_py = N_OF(p), .max = (m) }
#define CHECK(t, want) check_r((t), (want), N_OF(want), 0)

static void check_eproto(const struct tc *t)
{
	check_r(t, NULL, 0, -EPROTO);
}

/* ---- without native frames ------------------------------------------------------------- */

static void test_python_only(void **state)
{
	static const struct py_frame py[] = {
		PYF("<module>", "app.py", 30, true), PYF("main", "app.py", 20, false),
		PYF("work", "lib.py", 7, true),
	};
	static const char *const want[] = {
		"py <module> app.py:30", "py main app.py:20", "py work lib.py:7",
	};
	static const char *const want_fn[] = {
		"py <module> app.py:1", "py main app.py:1", "py work lib.py:1",
	};
	struct tc t = { .interp = LIB311, .py = py, .n_py = N_OF(py) };

	(void) state;
	CHECK(&t, want);
	t.function_lines = true;
	CHECK(&t, want_fn);
}

static void test_empty(void **state)
{
	struct tc t = { .interp = LIB311 };

	(void) state;
	check_r(&t, NULL, 0, 0);
}

/* ---- 3.8 - 3.10: one eval frame per Python frame --------------------------------------- */

static void test_py38_each_frame_an_entry(void **state)
{
	static const struct native_frame nat[] = {
		NAT("_start", "python3.8"), NAT("__libc_start_main", LIBC), NAT("main", "python3.8"),
		NAT("Py_BytesMain", LIB38), NAT("pymain_run_python", LIB38),
		NAT("PyRun_SimpleFileExFlags", LIB38), NAT("run_mod", LIB38),
		NAT("PyEval_EvalCode", LIB38), NAT("_PyEval_EvalCodeWithName", LIB38),
		NAT(EFD, LIB38), NAT("_PyFunction_Vectorcall", LIB38),
		NAT("function_code_fastcall", LIB38), NAT(EFD, LIB38),
		NAT("_PyFunction_Vectorcall", LIB38), NAT("function_code_fastcall", LIB38),
		NAT(EFD, LIB38),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "app.py", 30, true), PYF("main", "app.py", 20, true),
		PYF("work", "app.py", 7, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6",
		"py <module> app.py:30", "py main app.py:20", "py work app.py:7",
	};
	struct tc t = TC(LIB38, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_py310_extension_leaf(void **state)
{
	static const char *const multiarray = "_multiarray_umath.cpython-310-x86_64-linux-gnu.so";
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT("main", "python3.10"),
		NAT("Py_RunMain", LIB310), NAT(EFD, LIB310), NAT("_PyFunction_Vectorcall", LIB310),
		NAT(EFD, LIB310), NAT("_PyObject_MakeTpCall", LIB310),
		NAT("array_dot", multiarray), NAT("cblas_dgemm", "libopenblas.so.0"),
		NAT_SRC("dgemm_kernel", "libopenblas.so.0", "kernel.S", 12),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "mm.py", 9, true), PYF("mul", "mm.py", 4, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6",
		"py <module> mm.py:9", "py mul mm.py:4",
		"c array_dot _multiarray_umath.cpython-310-x86_64-linux-gnu.so",
		"c cblas_dgemm libopenblas.so.0",
		"c dgemm_kernel libopenblas.so.0 kernel.S:12",
	};
	struct tc t = TC(LIB310, nat, py);

	(void) state;
	CHECK(&t, want);
}

/* ---- 3.11: is_entry segments, .cold clones ---------------------------------------------- */

static void test_py311_entry_segments_and_cold(void **state)
{
	/* sorted(key=...) calls back into Python from C: a second eval-loop entry */
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT("main", "python3.11"),
		NAT("Py_BytesMain", LIB311), NAT("_PyEval_EvalFrameDefault.cold", LIB311),
		NAT("builtin_sorted", LIB311), NAT("list_sort_impl", LIB311),
		NAT("_PyObject_VectorcallTstate", LIB311), NAT("_PyEval_Vector", LIB311),
		NAT(EFD, LIB311), NAT("PyUnicode_Concat", LIB311),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "app.py", 40, true), PYF("main", "app.py", 30, false),
		PYF("order", "app.py", 22, false), PYF("key", "app.py", 5, true),
		PYF("norm", "app.py", 2, false),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6",
		"py <module> app.py:40", "py main app.py:30", "py order app.py:22",
		"py key app.py:5", "py norm app.py:2",
	};
	struct tc t = TC(LIB311, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_static_build(void **state)
{
	/* python3.11 linked statically: the executable is the interpreter's module */
	static const struct native_frame nat[] = {
		NAT("_start", "python3.11"), NAT("__libc_start_main", LIBC),
		NAT("__libc_start_call_main", LIBC), NAT("main", "python3.11"),
		NAT("Py_BytesMain", "python3.11"), NAT(EFD, "python3.11"),
		NAT("method_vectorcall_O", "python3.11"), NAT("_PyEval_Vector", "python3.11"),
		NAT("_PyEval_EvalFrameDefault.cold", "python3.11"), NAT("take_gil", "python3.11"),
		NAT("pthread_cond_timedwait", LIBC),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "s.py", 3, true), PYF("f", "s.py", 1, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "c __libc_start_call_main libc.so.6",
		"py <module> s.py:3", "py f s.py:1",
		"c take_gil python3.11", "c pthread_cond_timedwait libc.so.6",
	};
	struct tc t = TC("python3.11", nat, py);

	(void) state;
	CHECK(&t, want);
}

/* ---- 3.12 / 3.13: shim frames, GC, locks ------------------------------------------------ */

static void test_py312_gc_and_internals(void **state)
{
	/* the eval breaker runs the GC; a __del__ called by the GC enters the loop again */
	static const struct native_frame nat[] = {
		NAT("clone3", LIBC), NAT("start_thread", LIBC), NAT("pythread_wrapper", LIB312),
		NAT("thread_run", LIB312), NAT(EFD, LIB312), NAT("_Py_HandlePending", LIB312),
		NAT("_Py_RunGC", LIB312), NAT("gc_collect_main", LIB312),
		NAT("finalize_garbage", LIB312), NAT("PyObject_CallFinalizerFromDealloc", LIB312),
		NAT("slot_tp_finalize", LIB312), NAT("_PyEval_Vector", LIB312), NAT(EFD, LIB312),
		NAT("dict_subscript", LIB312),
	};
	static const struct py_frame py[] = {
		PYF("run", "threading.py", 1010, true), PYF("worker", "w.py", 8, false),
		PYF("__del__", "w.py", 3, true),
	};
	static const char *const want[] = {
		"c clone3 libc.so.6", "c start_thread libc.so.6",
		"py run threading.py:1010", "py worker w.py:8",
		"c gc_collect_main libpython3.12.so.1.0",
		"py __del__ w.py:3",
	};
	struct tc t = TC(LIB312, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_py313_gc_and_lock_frames_kept(void **state)
{
	static const struct native_frame gc[] = {
		NAT("__libc_start_main", LIBC), NAT("Py_BytesMain", LIB313), NAT(EFD, LIB313),
		NAT("gc_collect", LIB313), NAT("_PyGC_Collect", LIB313),
		NAT("gc_collect_main", LIB313), NAT("deduce_unreachable", LIB313),
		NAT("visit_decref", LIB313),
	};
	static const struct native_frame lock[] = {
		NAT("__libc_start_main", LIBC), NAT("Py_BytesMain", LIB313), NAT(EFD, LIB313),
		NAT("lock_PyThread_acquire_lock", LIB313), NAT("_PyMutex_LockTimed", LIB313),
		NAT("_PyParkingLot_Park", LIB313), NAT("_PySemaphore_Wait", LIB313),
		NAT("sem_clockwait", LIBC), NAT("__futex_abstimed_wait_common", LIBC),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "m.py", 12, true), PYF("step", "m.py", 4, false),
	};
	static const char *const want_gc[] = {
		"c __libc_start_main libc.so.6", "py <module> m.py:12", "py step m.py:4",
		"c _PyGC_Collect libpython3.13.so.1.0", "c gc_collect_main libpython3.13.so.1.0",
	};
	static const char *const want_lock[] = {
		"c __libc_start_main libc.so.6", "py <module> m.py:12", "py step m.py:4",
		"c _PyMutex_LockTimed libpython3.13.so.1.0",
		"c _PyParkingLot_Park libpython3.13.so.1.0",
		"c sem_clockwait libc.so.6", "c __futex_abstimed_wait_common libc.so.6",
	};
	struct tc t = TC(LIB313, gc, py);

	(void) state;
	CHECK(&t, want_gc);
	t.nat = lock;
	t.n_nat = N_OF(lock);
	CHECK(&t, want_lock);
}

static void test_py38_clones_of_kept_frames(void **state)
{
	/* 3.8's gcmodule collect() and ceval_gil take_gil() exist as .constprop clones */
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB38), NAT("_PyObject_GC_Alloc", LIB38),
		NAT("collect_generations", LIB38), NAT("collect.constprop.0", LIB38),
		NAT("PyEval_RestoreThread", LIB38), NAT("take_gil.constprop.0", LIB38),
		NAT_INL("PyCOND_TIMEDWAIT", LIB38), NAT("pthread_cond_timedwait", LIBC),
	};
	static const struct py_frame py[] = { PYF("<module>", "g.py", 2, true) };
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> g.py:2",
		"c collect.constprop.0 libpython3.8.so.1.0",
		"c take_gil.constprop.0 libpython3.8.so.1.0",
		"c pthread_cond_timedwait libc.so.6",
	};
	struct tc t = TC(LIB38, nat, py);

	(void) state;
	CHECK(&t, want);
}

/* ---- 3.14: tail-calling interpreter and the plain build --------------------------------- */

static void test_py314_tail_call_handlers(void **state)
{
	/* _PyEval_EvalFrameDefault calls _TAIL_CALL_start_frame; handlers musttail each other, so
	 * one handler (sometimes a run of them, after a broken unwind) follows each entry */
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT("Py_BytesMain", LIB314), NAT(EFD, LIB314),
		NAT("_TAIL_CALL_CALL_BUILTIN_FAST", LIB314), NAT("builtin_sorted", LIB314),
		NAT("list_sort_impl", LIB314), NAT("_PyEval_Vector", LIB314), NAT(EFD, LIB314),
		NAT("_TAIL_CALL_start_frame", LIB314), NAT("_TAIL_CALL_LOAD_ATTR", LIB314),
		NAT("_PyObject_GenericGetAttrWithDict", LIB314),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "t.py", 9, true), PYF("go", "t.py", 6, false),
		PYF("key", "t.py", 2, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> t.py:9", "py go t.py:6",
		"py key t.py:2",
	};
	struct tc t = TC(LIB314, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_py314_handler_after_kept_frame_is_new_entry(void **state)
{
	/* an unwind that lost the inner _PyEval_EvalFrameDefault: a handler after a kept frame
	 * starts its own entry */
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB314), NAT("_TAIL_CALL_CALL", LIB314),
		NAT("ffi_call", "libffi.so.8"), NAT("_TAIL_CALL_RETURN_VALUE", LIB314),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "t.py", 9, true), PYF("cb", "t.py", 2, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> t.py:9", "c ffi_call libffi.so.8",
		"py cb t.py:2",
	};
	struct tc t = TC(LIB314, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_py314_plain_build(void **state)
{
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT("Py_BytesMain", LIB314), NAT(EFD, LIB314),
		NAT("PyObject_Vectorcall", LIB314), NAT("_PyEval_EvalFrameDefault.cold", LIB314),
		NAT("_PyGC_Collect", LIB314), NAT("gc_collect_young", LIB314),
		NAT("gc_collect_region", LIB314),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "t.py", 9, true), PYF("alloc", "t.py", 3, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> t.py:9", "py alloc t.py:3",
		"c _PyGC_Collect libpython3.14.so.1.0", "c gc_collect_young libpython3.14.so.1.0",
	};
	struct tc t = TC(LIB314, nat, py);

	(void) state;
	CHECK(&t, want);
}

/* ---- C in the middle -------------------------------------------------------------------- */

static void test_ctypes_qsort_callback(void **state)
{
	static const char *const ct = "_ctypes.cpython-311-x86_64-linux-gnu.so";
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT("main", "python3.11"),
		NAT("Py_BytesMain", LIB311), NAT(EFD, LIB311), NAT("_PyObject_MakeTpCall", LIB311),
		NAT("PyCFuncPtr_call", ct), NAT("_ctypes_callproc", ct),
		NAT("ffi_call_int", "libffi.so.8"), NAT("ffi_call_unix64", "libffi.so.8"),
		NAT("qsort_r", LIBC), NAT("msort_with_tmp", LIBC),
		NAT("ffi_closure_unix64", "libffi.so.8"),
		NAT("ffi_closure_unix64_inner", "libffi.so.8"), NAT("_CallPythonObject", ct),
		NAT("PyObject_Vectorcall", LIB311), NAT("_PyFunction_Vectorcall", LIB311),
		NAT("_PyEval_Vector", LIB311), NAT("_PyEval_EvalFrameDefault.cold", LIB311),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "c.py", 20, true), PYF("sort_with_c", "c.py", 14, false),
		PYF("cmp", "c.py", 5, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6",
		"py <module> c.py:20", "py sort_with_c c.py:14",
		"c PyCFuncPtr_call _ctypes.cpython-311-x86_64-linux-gnu.so",
		"c _ctypes_callproc _ctypes.cpython-311-x86_64-linux-gnu.so",
		"c ffi_call_int libffi.so.8", "c ffi_call_unix64 libffi.so.8",
		"c qsort_r libc.so.6", "c msort_with_tmp libc.so.6",
		"c ffi_closure_unix64 libffi.so.8", "c ffi_closure_unix64_inner libffi.so.8",
		"c _CallPythonObject _ctypes.cpython-311-x86_64-linux-gnu.so",
		"py cmp c.py:5",
	};
	struct tc t = TC(LIB311, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_py312_real_stack(void **state)
{
	/* gdb's backtrace of /tmp/cb.py under pyenv's 3.12.1 (sorted(key=lambda) -> ctypes qsort
	 * -> Python comparator -> time.sleep); libffi's "??" frames have no symbol */
	static const char *const ct = "_ctypes.cpython-312-x86_64-linux-gnu.so";
	static const struct native_frame nat[] = {
		NAT("_start", "python3.12"), NAT("__libc_start_main_impl", LIBC),
		NAT("__libc_start_call_main", LIBC), NAT("Py_BytesMain", LIB312),
		NAT("pymain_main", LIB312), NAT("Py_RunMain", LIB312),
		NAT("pymain_run_python", LIB312), NAT("pymain_run_file", LIB312),
		NAT("pymain_run_file_obj", LIB312), NAT("_PyRun_AnyFileObject", LIB312),
		NAT("_PyRun_SimpleFileObject", LIB312), NAT("pyrun_file", LIB312),
		NAT("run_mod", LIB312), NAT("run_eval_code_obj", LIB312),
		NAT("PyEval_EvalCode", LIB312), NAT("_PyEval_Vector", LIB312),
		NAT_INL("_PyEval_EvalFrame", LIB312), NAT(EFD, LIB312),
		NAT("PyObject_Vectorcall", LIB312), NAT_INL("_PyObject_VectorcallTstate", LIB312),
		NAT("cfunction_vectorcall_FASTCALL_KEYWORDS", LIB312), NAT("builtin_sorted", LIB312),
		NAT("PyObject_Vectorcall", LIB312), NAT_INL("_PyObject_VectorcallTstate", LIB312),
		NAT("cfunction_vectorcall_FASTCALL_KEYWORDS", LIB312), NAT("list_sort", LIB312),
		NAT_INL("list_sort_impl", LIB312), NAT("PyObject_CallOneArg", LIB312),
		NAT_INL("_PyObject_VectorcallTstate", LIB312), NAT(EFD, LIB312),
		NAT_INL("_PyObject_VectorcallTstate", LIB312), NAT("_PyObject_MakeTpCall", LIB312),
		NAT("PyCFuncPtr_call", ct), NAT("_ctypes_callproc", ct),
		NAT_INL("_call_function_pointer", ct), NAT("ffi_call", "libffi.so.8"),
		NAT_AT(NULL, "libffi.so.8", 0x7c31), NAT_AT(NULL, "libffi.so.8", 0x7a2e),
		NAT("__GI___qsort_r", LIBC), NAT("msort_with_tmp", LIBC),
		NAT("msort_with_tmp", LIBC), NAT("msort_with_tmp", LIBC), NAT("msort_with_tmp", LIBC),
		NAT_AT(NULL, "libffi.so.8", 0x8096), NAT_AT(NULL, "libffi.so.8", 0x82f5),
		NAT("closure_fcn", ct), NAT_INL("_CallPythonObject", ct),
		NAT("PyObject_Vectorcall", LIB312), NAT_INL("_PyObject_VectorcallTstate", LIB312),
		NAT(EFD, LIB312), NAT("PyObject_Vectorcall", LIB312),
		NAT_INL("_PyObject_VectorcallTstate", LIB312), NAT("cfunction_vectorcall_O", LIB312),
		NAT("time_sleep", LIB312), NAT_INL("pysleep", LIB312),
		NAT("__GI___clock_nanosleep", LIBC),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "cb.py", 12, true), PYF("outer", "cb.py", 11, false),
		PYF("outer.<locals>.<lambda>", "cb.py", 11, true), PYF("inner", "cb.py", 9, false),
		PYF("cmp", "cb.py", 5, true),
	};
	static const char *const want[] = {
		"c __libc_start_main_impl libc.so.6", "c __libc_start_call_main libc.so.6",
		"py <module> cb.py:12", "py outer cb.py:11",
		"py outer.<locals>.<lambda> cb.py:11", "py inner cb.py:9",
		"c PyCFuncPtr_call _ctypes.cpython-312-x86_64-linux-gnu.so",
		"c _ctypes_callproc _ctypes.cpython-312-x86_64-linux-gnu.so",
		"c _call_function_pointer _ctypes.cpython-312-x86_64-linux-gnu.so",
		"c ffi_call libffi.so.8", "c libffi.so.8+0x7c31 libffi.so.8",
		"c libffi.so.8+0x7a2e libffi.so.8", "c __GI___qsort_r libc.so.6",
		"c msort_with_tmp libc.so.6", "c msort_with_tmp libc.so.6",
		"c msort_with_tmp libc.so.6", "c msort_with_tmp libc.so.6",
		"c libffi.so.8+0x8096 libffi.so.8", "c libffi.so.8+0x82f5 libffi.so.8",
		"c closure_fcn _ctypes.cpython-312-x86_64-linux-gnu.so",
		"c _CallPythonObject _ctypes.cpython-312-x86_64-linux-gnu.so",
		"py cmp cb.py:5", "c __GI___clock_nanosleep libc.so.6",
	};
	struct tc t = TC(LIB312, nat, py);

	(void) state;
	CHECK(&t, want);
}

/* ---- threads without Python ------------------------------------------------------------- */

static void test_native_only_thread(void **state)
{
	static const struct native_frame nat[] = {
		NAT("clone3", LIBC), NAT("start_thread", LIBC), NAT("worker", "libmylib.so"),
		NAT("PyGILState_Ensure", LIB311), NAT("PyEval_RestoreThread", LIB311),
		NAT("take_gil", LIB311), NAT("pthread_cond_timedwait", LIBC),
	};
	static const char *const want[] = {
		"c clone3 libc.so.6", "c start_thread libc.so.6", "c worker libmylib.so",
		"c take_gil libpython3.11.so.1.0", "c pthread_cond_timedwait libc.so.6",
	};
	struct tc t = { .interp = LIB311, .nat = nat, .n_nat = N_OF(nat) };

	(void) state;
	CHECK(&t, want);
}

/* ---- counts that disagree --------------------------------------------------------------- */

static void test_mismatch_eproto(void **state)
{
	/* a complete unwind (reaches __libc_start_main) with fewer entries than segments */
	static const struct native_frame one_entry[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB311), NAT("PyObject_Call", LIB311),
	};
	/* more entries than segments, Python stack complete: only one spare is explained */
	static const struct native_frame three_entries[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB311), NAT("_PyEval_Vector", LIB311),
		NAT(EFD, LIB311), NAT("_PyEval_Vector", LIB311), NAT(EFD, LIB311),
	};
	static const struct py_frame py3[] = {
		PYF("a", "x.py", 1, true), PYF("b", "x.py", 2, true), PYF("c", "x.py", 3, true),
	};
	static const struct py_frame py1[] = { PYF("a", "x.py", 1, true) };
	struct tc t = TC(LIB311, one_entry, py3);

	(void) state;
	check_eproto(&t);
	t.nat = three_entries;
	t.n_nat = N_OF(three_entries);
	t.py = py1;
	t.n_py = N_OF(py1);
	check_eproto(&t);
	/* a thread that reached its start without an eval frame, but Python frames */
	t.nat = one_entry;
	t.n_nat = 1;
	check_eproto(&t);
}

static void test_stripped_cold_part_eproto(void **state)
{
	/* Debian's stripped python3.14: the hot part of _PyEval_EvalFrameDefault has a .dynsym
	 * entry, its .cold part (most opcode bodies) has none. An unnamed interpreter frame may be
	 * an eval frame, so no lenient pairing. */
	static const struct native_frame nat[] = {
		NAT(NULL, "python3.14"), NAT("__libc_start_main", LIBC),
		NAT(EFD, "python3.14"), NAT("PyObject_Vectorcall", "python3.14"),
		NAT_AT(NULL, "python3.14", 0x4498c0), NAT("PyUnicode_Concat", "python3.14"),
	};
	static const struct native_frame truncated[] = {
		NAT(EFD, "python3.14"), NAT("PyObject_Vectorcall", "python3.14"),
		NAT_AT(NULL, "python3.14", 0x4498c0), NAT("memcpy", LIBC),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "d.py", 9, true), PYF("f", "d.py", 3, true),
	};
	struct tc t = TC("python3.14", nat, py);

	(void) state;
	check_eproto(&t);
	t.nat = truncated;
	t.n_nat = N_OF(truncated);
	check_eproto(&t);
}

static void test_stripped_matching_counts(void **state)
{
	/* nameless interpreter frames are dropped; when the named eval frames match, fine */
	static const struct native_frame nat[] = {
		NAT(NULL, "python3.14"), NAT("__libc_start_main", LIBC), NAT(EFD, "python3.14"),
		NAT_AT(NULL, "python3.14", 0x5bc000), NAT("deflate", "libz.so.1"),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "z.py", 9, true), PYF("pack", "z.py", 3, false),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> z.py:9", "py pack z.py:3",
		"c deflate libz.so.1",
	};
	struct tc t = TC("python3.14", nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_entering_loop_spare_innermost_entry(void **state)
{
	/* 3.12: sampled inside the new _PyEval_EvalFrameDefault before its frame started (the
	 * walker skips an incomplete frame): the innermost entry has no Python frame */
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB312), NAT("_PyEval_Vector", LIB312),
		NAT(EFD, LIB312), NAT("_Py_EnterRecursiveCallTstate", LIB312),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "e.py", 5, true), PYF("caller", "e.py", 2, false),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> e.py:5", "py caller e.py:2",
	};
	struct tc t = TC(LIB312, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_stripped_spare_innermost_entry(void **state)
{
	/* Debian's stripped python3.14 entering a ctypes callback (seen under hwspy): the
	 * callback's eval frame has not started its Python frame yet; nameless interpreter frames
	 * around. E == S + 1: a nameless eval frame would make it S + 2, so none is one. */
	static const struct native_frame nat[] = {
		NAT("_start", "python3.14"), NAT("__libc_start_main", LIBC),
		NAT(NULL, "python3.14"), NAT("Py_RunMain", "python3.14"),
		NAT(NULL, "python3.14"), NAT("_PyEval_EvalFrameDefault.cold", "python3.14"),
		NAT(NULL, "python3.14"), NAT("ffi_call", "libffi.so.8"), NAT("qsort_r", LIBC),
		NAT(NULL, "libffi.so.8"), NAT("PyObject_Vectorcall", "python3.14"),
		NAT(NULL, "python3.14"), NAT(EFD, "python3.14"),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "n.py", 50, true), PYF("sort_with_callback", "n.py", 20, false),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6",
		"py <module> n.py:50", "py sort_with_callback n.py:20",
		"c ffi_call libffi.so.8", "c qsort_r libc.so.6", "c libffi.so.8+0x0 libffi.so.8",
	};
	struct tc t = TC("python3.14", nat, py);

	(void) state;
	CHECK(&t, want);
	/* a truncated Python stack: its missing outer frames could pair with a nameless one */
	t.py_truncated = true;
	check_eproto(&t);
}

/* ---- Python frames unknown (a late read that was not the sample's) -------------------- */

static void test_py_unknown_marks_entries(void **state)
{
	/* native frames kept; each run of entries with no kept frame between is one [python];
	 * nameless interpreter frames are dropped as ever, and nothing is -EPROTO */
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT("Py_BytesMain", LIB312),
		NAT(EFD, LIB312), NAT("import_name", LIB312), NAT(EFD, LIB312),
		NAT("PyCFuncPtr_call", "_ctypes.so"), NAT("qsort_r", LIBC),
		NAT(NULL, LIB312), NAT(EFD, LIB312), NAT("gc_collect_main", LIB312),
		NAT("visit_reachable", LIB312),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "sp " MERGE_PY_UNKNOWN,
		"c PyCFuncPtr_call _ctypes.so", "c qsort_r libc.so.6", "sp " MERGE_PY_UNKNOWN,
		"c gc_collect_main libpython3.12.so.1.0",
	};
	static const char *const none[] = { "c __libc_start_main libc.so.6" };
	static const struct py_frame py[] = { PYF("f", "u.py", 1, true) };
	struct profile_frame out[4];
	struct tc t = { .interp = LIB312, .nat = nat, .n_nat = N_OF(nat), .py_unknown = true };
	struct merge_in in = { .native = nat, .n_native = 1, .py = py, .n_py = 1,
			       .interp_module = LIB312, .py_unknown = true };
	size_t n = 3;

	(void) state;
	CHECK(&t, want);
	/* no entry: no [python] */
	t.n_nat = 2;
	CHECK(&t, none);
	/* the innermost max frames: a [python] frame counts as one */
	t.n_nat = N_OF(nat);
	t.max = 2;
	check_r(&t, want + 4, 2, -E2BIG);
	/* Python frames and py_unknown together: a caller's mistake */
	assert_int_equal(merge_stacks(&in, out, 4, &n), -EINVAL);
	assert_int_equal(n, 0);
}

/* ---- truncation ------------------------------------------------------------------------- */

static void test_native_unwind_truncated(void **state)
{
	/* the stack copy ended inside the second of four entries: the outer two segments go at
	 * the root, before the outermost unwound frame */
	static const struct native_frame nat[] = {
		NAT("_PyObject_Call", LIB311), NAT(EFD, LIB311), NAT("ufunc_generic_call", "_umath.so"),
		NAT("_PyEval_Vector", LIB311), NAT(EFD, LIB311), NAT("PyNumber_Add", LIB311),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "r.py", 50, true), PYF("a", "r.py", 40, true),
		PYF("b", "r.py", 30, true), PYF("b2", "r.py", 25, false),
		PYF("c", "r.py", 20, true),
	};
	static const char *const want[] = {
		"py <module> r.py:50", "py a r.py:40", "py b r.py:30", "py b2 r.py:25",
		"c ufunc_generic_call _umath.so", "py c r.py:20",
	};
	struct tc t = TC(LIB311, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_native_leaf_only(void **state)
{
	/* one native frame (the leaf): the Python stack, then the leaf if it is shown */
	static const struct native_frame in_c[] = { NAT("deflate", "libz.so.1") };
	static const struct native_frame in_loop[] = { NAT(EFD, LIB311) };
	static const struct native_frame internal[] = { NAT("dict_subscript", LIB311) };
	static const struct native_frame nameless[] = { NAT_AT(NULL, "python3.14", 0x4498c0) };
	static const struct py_frame py[] = {
		PYF("<module>", "l.py", 9, true), PYF("f", "l.py", 3, false),
		PYF("g", "l.py", 1, true),
	};
	static const char *const want_c[] = {
		"py <module> l.py:9", "py f l.py:3", "py g l.py:1", "c deflate libz.so.1",
	};
	static const char *const want_py[] = {
		"py <module> l.py:9", "py f l.py:3", "py g l.py:1",
	};
	struct tc t = TC(LIB311, in_c, py);

	(void) state;
	CHECK(&t, want_c);
	t.nat = in_loop;
	CHECK(&t, want_py);
	t.nat = internal;
	CHECK(&t, want_py);
	t.interp = "python3.14";
	t.nat = nameless;
	CHECK(&t, want_py);
}

static void test_python_stack_truncated(void **state)
{
	/* 3.10: pyframes kept the innermost 2 of 4 frames (caller says so): the outer entries
	 * lost their Python frames and drop, the inner ones match */
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB310), NAT(EFD, LIB310),
		NAT("slot_tp_call", LIB310), NAT(EFD, LIB310), NAT(EFD, LIB310),
	};
	static const struct py_frame py[] = {
		PYF("rec", "d.py", 3, true), PYF("rec", "d.py", 4, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py rec d.py:3", "py rec d.py:4",
	};
	/* 3.11: the outermost kept frame is no entry: truncation seen without the flag */
	static const struct native_frame nat311[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB311), NAT("_PyEval_Vector", LIB311),
		NAT(EFD, LIB311), NAT("_PyEval_Vector", LIB311), NAT(EFD, LIB311),
	};
	static const struct py_frame py311[] = {
		PYF("deep", "d.py", 8, false), PYF("deeper", "d.py", 9, false),
		PYF("cb", "d.py", 1, true),
	};
	static const char *const want311[] = {
		"c __libc_start_main libc.so.6", "py deep d.py:8", "py deeper d.py:9",
		"py cb d.py:1",
	};
	struct tc t = TC(LIB310, nat, py);

	(void) state;
	check_eproto(&t);
	t.py_truncated = true;
	CHECK(&t, want);
	t = (struct tc) TC(LIB311, nat311, py311);
	CHECK(&t, want311);
}

static void test_e2big_keeps_innermost(void **state)
{
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB311), NAT("PyObject_Call", LIB311),
		NAT("deflate", "libz.so.1"), NAT("fill_window", "libz.so.1"),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "z.py", 9, true), PYF("pack", "z.py", 3, false),
	};
	static const char *const want[] = {
		"py pack z.py:3", "c deflate libz.so.1", "c fill_window libz.so.1",
	};
	struct tc t = TC_MAX(LIB311, nat, py, 3);

	(void) state;
	check_r(&t, want, N_OF(want), -E2BIG);
}

/* ---- names ------------------------------------------------------------------------------ */

static void test_nameless_native_frames(void **state)
{
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB311),
		NAT_AT(NULL, "/usr/lib/libfoo.so.1", 0x1234ab), NAT_AT(NULL, NULL, 0xdead),
		NAT_AT("", "libbar.so", 0x42), NAT_AT(NULL, LIB311, 0x99),
	};
	static const struct py_frame py[] = { PYF("<module>", "n.py", 1, true) };
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> n.py:1",
		"c libfoo.so.1+0x1234ab libfoo.so.1", "sp [unknown]",
		"c libbar.so+0x42 libbar.so",
	};
	/* a scratch too small for the second text: that frame reads as its module */
	static const char *const want_small[] = {
		"c __libc_start_main libc.so.6", "py <module> n.py:1",
		"c libfoo.so.1+0x1234ab libfoo.so.1", "sp [unknown]",
		"c libbar.so libbar.so",
	};
	struct tc t = TC(LIB311, nat, py);

	(void) state;
	CHECK(&t, want);
	t.scratch = sizeof("libfoo.so.1+0x1234ab") + 4;
	CHECK(&t, want_small);
}

static void test_perf_trampolines_dropped(void **state)
{
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB312),
		{ .addr = 0x7f0000000000, .name = "py::main:/srv/app.py", .jit = true },
		NAT(EFD, LIB312),
	};
	static const struct py_frame py[] = {
		PYF("<module>", "app.py", 1, true), PYF("main", "app.py", 7, true),
	};
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> app.py:1", "py main app.py:7",
	};
	struct tc t = TC(LIB312, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_inlined_eval_frame_joins_entry(void **state)
{
	static const struct native_frame nat[] = {
		NAT("__libc_start_main", LIBC), NAT(EFD, LIB311),
		NAT_INL("_PyEval_EvalFrameDefault.part.0", LIB311), NAT("PyObject_Repr", LIB311),
	};
	static const struct py_frame py[] = { PYF("<module>", "i.py", 1, true) };
	static const char *const want[] = {
		"c __libc_start_main libc.so.6", "py <module> i.py:1",
	};
	struct tc t = TC(LIB311, nat, py);

	(void) state;
	CHECK(&t, want);
}

static void test_is_eval_frame(void **state)
{
	(void) state;
	assert_true(merge_is_eval_frame("_PyEval_EvalFrameDefault"));
	assert_true(merge_is_eval_frame("_PyEval_EvalFrameDefault.cold"));
	assert_true(merge_is_eval_frame("_PyEval_EvalFrameDefault.constprop.0"));
	assert_true(merge_is_eval_frame("_PyEval_EvalFrameDefault.isra.0"));
	assert_true(merge_is_eval_frame("_PyEval_EvalFrameDefault.part.0"));
	assert_true(merge_is_eval_frame("_TAIL_CALL_LOAD_ATTR_INSTANCE_VALUE"));
	assert_true(merge_is_eval_frame("_TAIL_CALL_start_frame"));
	assert_false(merge_is_eval_frame("_PyEval_EvalFrame"));
	assert_false(merge_is_eval_frame("_PyEval_EvalFrameDefaultX"));
	assert_false(merge_is_eval_frame("PyEval_EvalFrameEx"));
	assert_false(merge_is_eval_frame("_PyEval_Vector"));
	assert_false(merge_is_eval_frame(""));
	assert_false(merge_is_eval_frame(NULL));
	assert_true(merge_is_kept_internal("take_gil"));
	assert_true(merge_is_kept_internal("collect.constprop.1"));
	assert_false(merge_is_kept_internal("collect_generations"));
	assert_false(merge_is_kept_internal("PyEval_RestoreThread"));
	assert_false(merge_is_kept_internal(NULL));
}

static void test_einval(void **state)
{
	struct profile_frame out[2];
	struct merge_in in = { .n_native = 1 };
	size_t n = 7;

	(void) state;
	assert_int_equal(merge_stacks(&in, out, 2, &n), -EINVAL);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_only),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_py38_each_frame_an_entry),
		cmocka_unit_test(test_py310_extension_leaf),
		cmocka_unit_test(test_py311_entry_segments_and_cold),
		cmocka_unit_test(test_static_build),
		cmocka_unit_test(test_py312_gc_and_internals),
		cmocka_unit_test(test_py313_gc_and_lock_frames_kept),
		cmocka_unit_test(test_py38_clones_of_kept_frames),
		cmocka_unit_test(test_py314_tail_call_handlers),
		cmocka_unit_test(test_py314_handler_after_kept_frame_is_new_entry),
		cmocka_unit_test(test_py314_plain_build),
		cmocka_unit_test(test_ctypes_qsort_callback),
		cmocka_unit_test(test_py312_real_stack),
		cmocka_unit_test(test_native_only_thread),
		cmocka_unit_test(test_mismatch_eproto),
		cmocka_unit_test(test_stripped_cold_part_eproto),
		cmocka_unit_test(test_stripped_matching_counts),
		cmocka_unit_test(test_entering_loop_spare_innermost_entry),
		cmocka_unit_test(test_stripped_spare_innermost_entry),
		cmocka_unit_test(test_py_unknown_marks_entries),
		cmocka_unit_test(test_native_unwind_truncated),
		cmocka_unit_test(test_native_leaf_only),
		cmocka_unit_test(test_python_stack_truncated),
		cmocka_unit_test(test_e2big_keeps_innermost),
		cmocka_unit_test(test_nameless_native_frames),
		cmocka_unit_test(test_perf_trampolines_dropped),
		cmocka_unit_test(test_inlined_eval_frame_joins_entry),
		cmocka_unit_test(test_is_eval_frame),
		cmocka_unit_test(test_einval),
	};

	return cmocka_run_group_tests_name("merge", tests, NULL, NULL);
}
