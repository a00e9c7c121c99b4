"""hwspy from Python: count hardware and software events, and profile, a block of code of this
process (or another process), through libhwspy, the engine of the hwspy command.

    import hwspy
    with hwspy.count(["cycles", "instructions", "cache-misses"]) as c:
        train_step()
    print(c.counts, c.metrics)
"""
from hwspy._hwspy import UnavailableEventError, UnavailableEventWarning, __version__
from hwspy._count import Count, count, events

__all__ = ['Count', 'UnavailableEventError', 'UnavailableEventWarning', '__version__', 'count',
           'events']
