"""hwspy from Python: count hardware and software events, and profile, a block of code of this
process (or another process), through libhwspy, the engine of the hwspy command.

    import hwspy
    with hwspy.count(["cycles", "instructions", "cache-misses"]) as c:
        train_step()
    print(c.counts, c.metrics)

    with hwspy.profile("step.svg") as p:        # sampled, written at the end of the block
        train_step()
    print(p.top(5), p.stats)
"""
from hwspy._hwspy import UnavailableEventError, UnavailableEventWarning, __version__
from hwspy._count import Count, count, events
from hwspy._profile import Function, Profiler, profile

__all__ = ['Count', 'Function', 'Profiler', 'UnavailableEventError', 'UnavailableEventWarning',
           '__version__', 'count', 'events', 'profile']
