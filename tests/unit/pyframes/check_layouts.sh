#!/bin/sh
# Prints, with gdb and the debug info of pyenv's shared libpython builds, every offset the
# static tables pyframes/layouts/py38.h ... py312.h hold, so they can be compared by eye or
# diffed. Not part of the unit suite (needs pyenv + gdb):
#   tests/unit/pyframes/check_layouts.sh [PYENV_ROOT]
root=${1:-$(pyenv root)}
off() {
	lib=$1; shift
	for e in "$@"; do
		set -- "$@" -ex "echo $e = " -ex "output (unsigned long)($e)" -ex "echo \\n"
		shift
	done
	gdb -q -batch -nx "$lib" "$@" 2>&1 | grep -v '^warning'
}
for v in 3.8.18:3.8 3.9.18:3.9 3.10.13:3.10; do
	echo "== ${v%%:*}"
	off "$root/versions/${v%%:*}/lib/libpython${v##*:}.so.1.0" \
		'&((struct pyruntimestate*)0)->interpreters.head' \
		'&((PyInterpreterState*)0)->next' '&((PyInterpreterState*)0)->tstate_head' \
		'sizeof(PyThreadState)' '&((PyThreadState*)0)->next' '&((PyThreadState*)0)->interp' \
		'&((PyThreadState*)0)->frame' '&((PyThreadState*)0)->thread_id' \
		'sizeof(PyFrameObject)' '&((PyFrameObject*)0)->f_back' '&((PyFrameObject*)0)->f_code' \
		'&((PyFrameObject*)0)->f_lasti' '&((PyFrameObject*)0)->f_gen' \
		'sizeof(PyCodeObject)' '&((PyCodeObject*)0)->co_firstlineno' \
		'&((PyCodeObject*)0)->co_filename' '&((PyCodeObject*)0)->co_name' \
		'sizeof(PyASCIIObject)' 'sizeof(PyCompactUnicodeObject)' \
		'&((PyASCIIObject*)0)->length' '&((PyASCIIObject*)0)->state' \
		'&((PyBytesObject*)0)->ob_sval' '&((PyTypeObject*)0)->tp_name'
	# co_lnotab (3.8, 3.9) or co_linetable (3.10): one of the two prints an error
	off "$root/versions/${v%%:*}/lib/libpython${v##*:}.so.1.0" \
		'&((PyCodeObject*)0)->co_lnotab' '&((PyCodeObject*)0)->co_linetable' 2>&1 | grep -v 'no member'
done
for v in 3.11.7:3.11 3.12.1:3.12; do
	echo "== ${v%%:*}"
	off "$root/versions/${v%%:*}/lib/libpython${v##*:}.so.1.0" \
		'&((struct pyruntimestate*)0)->interpreters.head' \
		'&((PyInterpreterState*)0)->next' '&((PyInterpreterState*)0)->threads.head' \
		'sizeof(PyThreadState)' '&((PyThreadState*)0)->next' '&((PyThreadState*)0)->interp' \
		'&((PyThreadState*)0)->cframe' '&((PyThreadState*)0)->thread_id' \
		'&((PyThreadState*)0)->native_thread_id' '&((_PyCFrame*)0)->current_frame' \
		'sizeof(_PyInterpreterFrame)' '&((_PyInterpreterFrame*)0)->previous' \
		'&((_PyInterpreterFrame*)0)->f_code' '&((_PyInterpreterFrame*)0)->prev_instr' \
		'&((_PyInterpreterFrame*)0)->owner' \
		'sizeof(PyCodeObject)' '&((PyCodeObject*)0)->co_firstlineno' \
		'&((PyCodeObject*)0)->co_code_adaptive' '&((PyCodeObject*)0)->co_filename' \
		'&((PyCodeObject*)0)->co_name' '&((PyCodeObject*)0)->co_qualname' \
		'&((PyCodeObject*)0)->co_linetable' '&((PyCodeObject*)0)->_co_firsttraceable' \
		'sizeof(PyASCIIObject)' 'sizeof(PyCompactUnicodeObject)' \
		'FRAME_OWNED_BY_GENERATOR'
done
echo "== 3.11 only: is_entry"
off "$root/versions/3.11.7/lib/libpython3.11.so.1.0" '&((_PyInterpreterFrame*)0)->is_entry'
echo "== 3.12 only: FRAME_OWNED_BY_CSTACK"
off "$root/versions/3.12.1/lib/libpython3.12.so.1.0" 'FRAME_OWNED_BY_CSTACK'
# threads.c: sys.modules, the shared keys of instances, and the fixed object offsets it assumes
# (tp_basicsize 32, tp_flags 168, tp_dictoffset 288, md_dict 16, ma_keys 32, ma_values 40)
for v in 3.8.18:3.8:modules 3.9.18:3.9:modules 3.10.13:3.10:modules 3.11.7:3.11:modules \
	 3.12.1:3.12:imports.modules 3.13.0:3.13:imports.modules; do
	full=${v%%:*}; rest=${v#*:}; short=${rest%%:*}; field=${rest#*:}
	echo "== $full: objects"
	off "$root/versions/$full/lib/libpython$short.so.1.0" \
		"&((PyInterpreterState*)0)->$field" '&((PyHeapTypeObject*)0)->ht_cached_keys' \
		'&((PyTypeObject*)0)->tp_basicsize' '&((PyTypeObject*)0)->tp_flags' \
		'&((PyTypeObject*)0)->tp_dictoffset' '&((PyModuleObject*)0)->md_dict' \
		'&((PyDictObject*)0)->ma_keys' '&((PyDictObject*)0)->ma_values'
done
# gc.c: the cyclic GC's collecting flag: _PyRuntime.gc (3.8), PyInterpreterState.gc (3.9+; one
# of the two prints an error), collecting in struct _gc_runtime_state (3.13+: _Py_DebugOffsets)
for v in 3.8.18:3.8 3.9.18:3.9 3.10.13:3.10 3.11.7:3.11 3.12.1:3.12 3.13.0:3.13; do
	echo "== ${v%%:*}: gc"
	off "$root/versions/${v%%:*}/lib/libpython${v##*:}.so.1.0" \
		'&((struct pyruntimestate*)0)->gc' '&((PyInterpreterState*)0)->gc' \
		'&((struct _gc_runtime_state*)0)->collecting' 2>&1 | grep -v 'no member'
done
