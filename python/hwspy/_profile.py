"""hwspy.profile and hwspy.Profiler: sample this process while a block of code runs.

    with hwspy.profile("step.svg") as p:        # written when the block ends
        train_step()
    print(p.top(5), p.stats)

The samples are taken by libhwspy's recorder on a thread of its own (never in the profile),
of every thread of the process, threads started in the block included, each turned into its
Python stack: exactly the one at the sample where the machine allows it (a BPF capture, as
root), else read just after the sample (p.stats['mode'], p.stats['exact'] and ['late'] say
which).
"""
import collections
import warnings

from hwspy import _hwspy

__all__ = ['profile', 'Profiler', 'Function']

Function = collections.namedtuple('Function', 'function file line weight share samples kind')
Function.__doc__ = """A function and the samples it was running in (self: at the top of the
stack). weight: their value of the sampled event (cpu-clock: nanoseconds; a count event: its
count); share: weight's part of the whole profile's (0..1); line: the function's line with the
most weight; kind: 'python', 'native', 'kernel' or 'special' ('[unknown]' ...)."""


class Profiler:
    """A recording of this process by libhwspy: start() ... stop(), or a `with` block.

    output: where stop() writes the profile (str or path; the format from its name, as
    `hwspy record -o`: .svg, .folded/.txt, .speedscope.json, .pb.gz/.pprof), or None to keep
    it in memory only (write() writes it later).
    event: the event sampled ('cpu-clock', 'page-faults', 'cache-misses' ...; one name, or
    several comma-separated, the first sampled and the others read at each sample); None:
    what `hwspy record` samples by default (cycles where the machine has a hardware PMU, else
    cpu-clock).
    rate: samples a second per thread (default 100); period: or one sample every N events
    (an event that counts occurrences, such as page-faults, is sampled at a period by
    default). native: native frames too (C extensions, the interpreter); threads: a root
    frame per thread; mode: 'auto' (exact where allowed: the BPF capture as root, else a
    signal at each sample; else not), 'capture', 'signal' or 'nonblocking'.

    Errors: an unknown event or a bad argument is a ValueError saying so (hwspy.events() lists
    what is available); an event that exists but this machine cannot sample (no hardware PMU,
    not supported here) is hwspy.UnavailableEventError (an OSError, as hwspy.count raises with
    strict=True); where this process may not sample itself, PermissionError says which
    setting refuses it.

    A Profiler records once; enable()/disable() are start()/stop() as cProfile spells them.
    """

    def __init__(self, output=None, *, event=None, rate=None, period=0, native=False,
                 threads=False, mode='auto', title=None):
        self.output = output
        self.title = title
        fmt_speedscope = output is not None and str(output).endswith('.speedscope.json')
        self._rec = _hwspy.Recorder(event=event, rate=rate, period=period, native=native,
                                    threads=threads, mode=mode, speedscope=fmt_speedscope)
        self._native = native
        self._running = False
        self._stopped = False

    # -- recording
    def start(self):
        """Starts sampling every thread of this process; returns once sampling has begun."""
        self._rec.start()
        self._running = True
        return self

    def stop(self):
        """Stops sampling (every sample is in when it returns) and writes `output` if one
        was given. Calling it again does nothing."""
        if not self._running:
            return self
        self._running = False
        self._stopped = True
        self._rec.stop()
        if self.output is not None:
            self.write(self.output)
        return self

    enable = start
    disable = stop

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stop()
            return False
        # the block raised (KeyboardInterrupt too): what was sampled is still written, and
        # the block's exception is the one that propagates
        try:
            self.stop()
        except Exception as e:          # noqa: BLE001 - said, not lost
            warnings.warn('hwspy: the profile of the interrupted block was not written: %s'
                          % e, RuntimeWarning, stacklevel=2)
        return False

    # -- the profile
    def folded(self):
        """The profile as folded text: one 'frame;frame;... weight' line per stack."""
        return self._rec.folded()

    def write(self, path, format=None):
        """Writes the profile into path (format from its name unless given: 'folded',
        'speedscope', 'svg', 'pprof'), whole or not at all."""
        self._rec.write(path, format, self.title)

    def top(self, n=10, native=None):
        """The n functions with the most self weight, heaviest first: a list of Function
        (function, file, line, weight, share, samples, kind). native: whether native code
        (C, the interpreter, the vDSO) is a function of its own, or the time of the Python
        function that called it (None: as the Profiler's native option)."""
        if native is None:
            native = self._native
        leaves = self._rec.leaves(not native)
        total = sum(l[6] for l in leaves)
        by = {}
        for kind, name, file, line, module, samples, weight in leaves:
            key = (kind, name, file if kind == 'python' else module)
            f = by.get(key)
            if f is None:
                by[key] = f = [name, file if kind == 'python' else module, line, 0, 0, kind,
                               0]
            f[3] += weight
            f[4] += samples
            if weight > f[6]:
                f[2], f[6] = line, weight
        rows = sorted(by.values(), key=lambda f: (-f[3], f[0]))
        return [Function(f[0], f[1], f[2], f[3], f[3] / total if total else 0.0, f[4], f[5])
                for f in rows[:n]]

    @property
    def stats(self):
        """What the recording says of itself: mode ('capture' or 'signal': exact, or
        'nonblocking'),
        samples, exact (stacks captured at their sample), late (read after it), lost (by the
        kernel), dropped (unreadable stacks), excluded (hwspy's own thread's), threads,
        elapsed_ns, event, total (its weight), user_only (kernel mode not allowed here),
        notes (what the recorder chose or fell back to, in words)."""
        return self._rec.info()

    @property
    def threads(self):
        """{tid: name} of the threads the samples came from."""
        return self._rec.threads()

    def __repr__(self):
        state = 'running' if self._running else 'stopped' if self._stopped else 'not started'
        return '<hwspy.Profiler %s output=%r>' % (state, self.output)


def profile(output=None, *, event=None, rate=None, period=0, native=False, threads=False,
            mode='auto', title=None):
    """A Profiler for a `with` block: samples this process while the block runs and writes
    `output` when it ends (None: kept in memory; p.write() later). See Profiler."""
    return Profiler(output, event=event, rate=rate, period=period, native=native,
                    threads=threads, mode=mode, title=title)
