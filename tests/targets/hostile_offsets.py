# A hostile 3.13+ target: it rewrites its own _Py_DebugOffsets (the block at the start of
# _PyRuntime that debuggers and profilers read CPython's offsets from) with a few ctypes writes,
# then runs Python code. The offsets it writes stay inside the struct sizes it declares (so a
# parser that only checks those accepts them) but lie far past what a profiler copies of each
# object. CPython itself never reads the block, so the target runs on as before.
#
# hostile_offsets.py FIELD [SECONDS]: FIELD is one of the keys of CASES ("pyobject.ob_type",
# ...); prints "ready FIELD OFFSET" once the block is rewritten (and read back), then calls
# functions for SECONDS (default 8) and prints "done N" (N calls) and exits 0.
import ctypes
import struct
import sys
import time

# Where each section of _Py_DebugOffsets starts (bytes from the cookie), per minor version; a
# section is a run of uint64: the struct's size, then the offsets of its fields.
SECTIONS = {
    13: {'thread_state': 152, 'pyobject': 352, 'unicode_object': 536},
    14: {'thread_state': 176, 'pyobject': 400, 'unicode_object': 616},
}
# field -> (section, index of the field in its section, declared struct size, offset written)
CASES = {
    # indexes hwspy's copy of a code object's header
    'pyobject.ob_type': ('pyobject', 1, 16 << 20, (16 << 20) - 8),
    # indexes its copy of a str object's header
    'unicode_object.state': ('unicode_object', 1, 16 << 20, (16 << 20) - 8),
    # indexes its copy of a thread state (the 64 KiB the parser used to allow)
    'thread_state.native_thread_id': ('thread_state', 6, 64 << 10, (64 << 10) - 8),
}


def runtime_block():
    """The address of _PyRuntime, after checking its cookie."""
    addr = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime'))
    if ctypes.string_at(addr, 8) != b'xdebugpy':
        raise SystemExit('no _Py_DebugOffsets cookie at _PyRuntime (%#x)' % addr)
    return addr


def rewrite(field):
    section, index, size, offset = CASES[field]
    base = runtime_block() + SECTIONS[sys.version_info[1]][section]
    ctypes.memmove(base, struct.pack('<Q', size), 8)
    ctypes.memmove(base + 8 * index, struct.pack('<Q', offset), 8)
    got = struct.unpack('<QQ', ctypes.string_at(base, 8) + ctypes.string_at(base + 8 * index, 8))
    if got != (size, offset):
        raise SystemExit('the rewrite did not stick: %r' % (got,))
    return offset


def leaf(n):
    return n * 3 + 1


def work(seconds):
    end = time.monotonic() + seconds
    calls = 0
    while time.monotonic() < end:
        for i in range(1000):
            calls += leaf(i) & 1
    return calls


def main():
    field = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
    if sys.version_info[:2] not in [(3, v) for v in SECTIONS]:
        raise SystemExit('hostile_offsets.py needs Python 3.13 or 3.14')
    offset = rewrite(field)
    print('ready %s %d' % (field, offset), flush=True)
    print('done %d' % work(seconds), flush=True)


if __name__ == '__main__':
    main()
