"""hwspy.count: hardware and software event counts of a block of this process, or of another
process for a while, through libhwspy's counting (the engine of `hwspy stat`).

    with hwspy.count(["cycles", "instructions", "cache-misses"]) as c:
        train_step()
    c.counts        {event: value}, scaled for multiplexing (value * enabled / running)
    c.enabled       {event: ns the counters were enabled}  } summed over the threads counted
    c.running       {event: ns they ran on the PMU}         } (equal where not multiplexed)
    c.metrics       derived ratios where their events were counted: 'ipc', 'ghz',
                    'cpus' (CPUs utilised, from task-clock or cpu-clock), '<X-misses>_mpki'
                    (misses per 1k instructions), '<X-misses>_miss_rate' (% of its reference)
    c.findings      `hwspy stat`'s findings as data: [{'id', 'metric', 'value', 'threshold',
                    'above', 'unit', 'meaning', 'advice', 'functions'}]
    c.unmeasured    findings that need an event that was not counted
    c.threads       [{'tid', 'name', 'task_clock_ns', 'counts': {event: value}}]: a thread
                    started after the process's counting began is counted in the row of the
                    thread that started it (the kernel's inherited counters)
    c.unavailable   {event: reason} for events this machine cannot count (no hardware PMU
                    in a VM ...): one hwspy.UnavailableEventWarning, the rest still counted;
                    strict=True raises hwspy.UnavailableEventError (an OSError) instead
    c.user_only     True where kernel mode is not allowed (kernel.perf_event_paranoid >= 2
                    without CAP_PERFMON): everything counted in user space only (':u')
    c.wall          seconds counted (the block, its pauses left out)
    c.enable(), c.disable()  resume and pause this block's counting inside it

How it costs little: the first block of an event set in a process opens one counter per event
per thread (inherited by the threads started later, whose counts the kernel adds to their
creator's, live ones included) and keeps them open; every block then only reads them at its
start and end (bench/pycount.py measures it). Blocks nest and overlap freely (each reads the
same counters): an outer block includes an inner one's work. c.disable() pauses this block
alone. A block counts every thread of the process, not only the one running it.

As a decorator, @hwspy.count([...]) counts each call: the function's `.last` is the last
call's count, its `.total` the sum of every call (`.total.calls` of them).

hwspy.count(events, pid=N, duration=S) counts process N for S seconds (None: until it exits;
the GIL is released while it waits, Ctrl-C stops it) and returns the finished count. No such
process: ProcessLookupError; not allowed: PermissionError saying which privilege. An unknown
event is a ValueError naming it and the events this machine has; hwspy.events() lists every
named event with its availability.
"""
import functools
import math
import os
import threading
import time
import warnings

from hwspy import _hwspy
from hwspy._hwspy import UnavailableEventError, UnavailableEventWarning

__all__ = ['count', 'Count', 'events']

_sessions = {}                  # (pid, events) -> _hwspy.Session, opened once per process
_lock = threading.Lock()


def _spec(events):
    if isinstance(events, str):
        names = [e for e in events.split(',') if e]
    else:
        try:
            names = list(events)
        except TypeError:
            raise TypeError('events: a list of event names, not %r' % (events,)) from None
    for e in names:
        if not isinstance(e, str) or not e:
            raise TypeError('events: names (str), not %r' % (e,))
    if not names:
        raise ValueError('events: at least one event name')
    return names, ','.join(names)


def _session(joined):
    key = (os.getpid(), joined)     # a forked child counts itself with its own counters
    s = _sessions.get(key)
    if s is None:
        with _lock:
            s = _sessions.get(key)
            if s is None:
                s = _hwspy.Session(joined)
                _sessions[key] = s
    return s


def events():
    """The named events (as `hwspy list`), each probed here: a list of dicts with name, alias,
    kind, description, available, reason (why not, or 'user space only ...')."""
    return _hwspy.events()


def count(events, *, strict=False, pid=None, duration=None):
    """Counts events: a block of this process (`with`, or a decorator), or with pid= another
    process for duration seconds (returns the finished Count). See the module's text."""
    names, joined = _spec(events)
    if (os.getpid(), joined) not in _sessions:
        _hwspy.check_events(joined)
    if pid is None:
        if duration is not None:
            raise TypeError('duration= goes with pid= (a block counts as long as it runs)')
        return Count(names, joined, strict)
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise TypeError('pid: a process id (int), not %r' % (pid,))
    if duration is not None and not duration > 0:
        raise ValueError('duration: seconds (> 0), not %r' % (duration,))
    c = Count(names, joined, strict)
    t0 = time.perf_counter_ns()
    d = _hwspy.measure(joined, pid, int(duration * 1e9) if duration else 0)
    c._wall_ns = time.perf_counter_ns() - t0
    c._info = d.pop('info')
    c._check(2)
    c._result = d
    return c


class Count:
    """The counts of a block (see hwspy.count). Made by hwspy.count(...)."""

    def __init__(self, names, joined, strict):
        self._names = names
        self._joined = joined
        self._strict = strict
        self._session = None
        self._info = None
        self._sum = self._start = self._zero = None
        self._result = None
        self._active = False
        self._paused = False
        self._wall_ns = 0
        self._t0 = 0
        self.calls = 0

    def __repr__(self):
        if self._result is None and self._sum is None:
            return '<hwspy.Count %s: not run>' % self._joined
        return '<hwspy.Count %s: %r>' % (self._joined, self.counts)

    # ---- the block

    def _check(self, stacklevel):
        un = self._info['unavailable']
        if not un:
            return
        words = '; '.join("'%s': %s" % kv for kv in un.items())
        if self._strict:
            raise UnavailableEventError('cannot count %s here (strict=True): %s'
                                        % (', '.join("'%s'" % k for k in un), words))
        warnings.warn('not counted: %s (c.unavailable%s)' % (
            words, '; the other events are counted' if self._info['counting'] else
            '; none of the events is counted'), UnavailableEventWarning,
            stacklevel=stacklevel + 1)

    def _open(self):
        s = _session(self._joined)
        if s is not self._session:
            self._session, self._info = s, s.info()
            self._zero = s.zero() if self._info['counting'] else None
            self._sum = s.zero() if self._info['counting'] else None
        return s

    def __enter__(self):
        if self._active:
            raise RuntimeError('this hwspy.count block runs already (make one per block)')
        s = self._open()
        self._check(2)
        if self._info['counting']:
            self._sum = s.zero()
            self._result = None
            self._wall_ns = 0
            self._active = True
            self._paused = False
            self._t0 = time.perf_counter_ns()
            self._start = s.mark()
        self.calls += 1
        return self

    def __exit__(self, *exc):
        if self._active:
            if not self._paused:
                end = self._session.mark()
                self._session.add(self._sum, self._start, end)
                self._wall_ns += time.perf_counter_ns() - self._t0
            self._active = False
            self._start = None
        return False

    def disable(self):
        """Pauses this block's counting (the work until enable() is left out)."""
        if not self._active:
            raise RuntimeError('disable() inside the with block of this count')
        if not self._paused:
            end = self._session.mark()
            self._session.add(self._sum, self._start, end)
            self._wall_ns += time.perf_counter_ns() - self._t0
            self._paused = True
            self._result = None

    def enable(self):
        """Resumes this block's counting after disable()."""
        if not self._active:
            raise RuntimeError('enable() inside the with block of this count')
        if self._paused:
            self._paused = False
            self._t0 = time.perf_counter_ns()
            self._start = self._session.mark()

    def _absorb(self, other):
        """Adds other's counted intervals (another Count of the same events) to this one."""
        s = self._open()
        if not self._info['counting'] or other._session is not s:
            return
        s.add(self._sum, self._zero, other._sum)
        self._wall_ns += other._wall_ns
        self.calls += 1
        self._result = None

    # ---- the decorator

    def __call__(self, func):
        spec = self

        @functools.wraps(func)
        def counted(*args, **kwargs):
            c = Count(spec._names, spec._joined, spec._strict)
            with warnings.catch_warnings():
                if spec.calls:      # said once, at the first call
                    warnings.simplefilter('ignore', UnavailableEventWarning)
                spec.calls += 1
                c.__enter__()
            try:
                return func(*args, **kwargs)
            finally:
                c.__exit__(None, None, None)
                counted.last = c
                counted.total._absorb(c)

        counted.last = None
        counted.total = Count(self._names, self._joined, self._strict)
        return counted

    # ---- the values

    def _read(self):
        if self._result is not None and not self._active:
            return self._result
        if self._session is None:
            raise RuntimeError('this count has not run (use it as `with hwspy.count(...) as '
                               'c:`)')
        s = self._session
        if not self._info['counting']:
            self._result = {'events': [], 'threads': [], 'findings': [], 'unmeasured': [],
                            'user_only': self._info['user_only']}
            return self._result
        total = self._sum
        if self._active and not self._paused:
            total = s.zero()                # a live reading: the intervals so far and now
            s.add(total, self._zero, self._sum)
            s.add(total, self._start, s.mark())
        r = s.result(total)
        if not self._active:
            self._result = r
        return r

    def _keys(self):
        evs = self._read()['events']
        if len(evs) == len(self._names):
            return list(zip(self._names, evs))
        return [(e['name'], e) for e in evs]

    @property
    def events(self):
        """The events asked for, each as a dict of everything counted (value, raw, enabled_ns,
        running_ns, counted, error, metrics ...)."""
        return dict(self._keys())

    @property
    def counts(self):
        return {k: e['value'] for k, e in self._keys() if e['counted']}

    @property
    def enabled(self):
        return {k: e['enabled_ns'] for k, e in self._keys() if e['counted']}

    @property
    def running(self):
        return {k: e['running_ns'] for k, e in self._keys() if e['counted']}

    @property
    def metrics(self):
        m = {}
        for k, e in self._keys():
            if not e['counted']:
                continue
            for name, key in (('ipc', 'ipc'), ('ghz', 'ghz'), ('cpus', 'cpus')):
                if not math.isnan(e[name]) and key not in m:
                    m[key] = e[name]
            if not math.isnan(e['mpki']):
                m[k + '_mpki'] = e['mpki']
            if not math.isnan(e['miss_rate']):
                m[k + '_miss_rate'] = e['miss_rate']
        return m

    @property
    def findings(self):
        return self._read()['findings']

    @property
    def unmeasured(self):
        return self._read()['unmeasured']

    @property
    def threads(self):
        keys = [k for k, _ in self._keys()]
        out = []
        for t in self._read()['threads']:
            vals = {k: v for k, v in zip(keys, t['values']) if not math.isnan(v)}
            out.append({'tid': t['tid'], 'name': t['name'],
                        'task_clock_ns': t['task_clock_ns'], 'counts': vals})
        return out

    @property
    def unavailable(self):
        if self._info is None:
            return {}
        un = self._info['unavailable']
        if len(self._info['names']) == len(self._names):
            lib = dict(zip(self._info['names'], self._names))
            return {lib.get(k, k): v for k, v in un.items()}
        return dict(un)

    @property
    def user_only(self):
        return bool(self._info and self._info['user_only'])

    @property
    def wall(self):
        if self._active and not self._paused:
            return (self._wall_ns + time.perf_counter_ns() - self._t0) / 1e9
        return self._wall_ns / 1e9
