"""A pprof profile (perftools.profiles.Profile, gzipped) written by the tests themselves, for
inputs with several events that a folded file cannot carry:

    data = pprof_build.profile([('samples', 'count'), ('cpu-clock', 'nanoseconds'), ...],
                               [([('main', 'app.py', 1), ('work', 'app.py', 5)], [30, 3e7, ...]),
                                ...])

Each stack is its frames, root first, as (function name, file, line) (Python frames, as hwspy's
pprof reader types a frame with a file), and one integer value per sample type. Only the fields
hwspy convert reads are written: sample_type, sample, location (one line each), function,
string_table. Standard library only.
"""
import gzip


def _varint(n):
    n = int(n)
    if n < 0:
        raise ValueError('negative varint')
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _num(field, n):
    return _varint(field << 3) + _varint(n)


def _msg(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def profile(types, stacks):
    """The gzipped protobuf (bytes) of these sample types and stacks (see the module doc). As
    profile.proto says, a reader takes the last type as the default one (hwspy: event 0)."""
    strings, index = [''], {'': 0}
    functions, locations = {}, {}

    def s(text):
        if text not in index:
            index[text] = len(strings)
            strings.append(text)
        return index[text]

    def location(frame):
        name, file, line = frame
        fid = functions.setdefault((name, file), len(functions) + 1)
        return locations.setdefault((fid, line), len(locations) + 1)

    out = b''.join(_msg(1, _num(1, s(name)) + _num(2, s(unit))) for name, unit in types)
    for frames, values in stacks:
        if len(values) != len(types):
            raise ValueError('%d values for %d sample types' % (len(values), len(types)))
        locs = [location(f) for f in reversed(frames)]      # leaf first
        out += _msg(2, b''.join(_num(1, l) for l in locs) + b''.join(_num(2, v) for v in values))
    for (fid, line), lid in locations.items():
        out += _msg(4, _num(1, lid) + _msg(4, _num(1, fid) + _num(2, line)))
    for (name, file), fid in functions.items():
        out += _msg(5, _num(1, fid) + _num(2, s(name)) + _num(4, s(file)))
    out += b''.join(_msg(6, t.encode('utf-8')) for t in strings)
    return gzip.compress(out)
