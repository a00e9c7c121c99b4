"""A fixed amount of work with one slow function, for `hwspy diff` (test_diff.py).

  python diff_work.py ROUNDS

Each round calls lookup() (membership tests in a list: slow) and steady() (unchanged work).
test_diff.py writes an optimised copy in which lookup() uses a set: the block between the
markers below is replaced by a shorter one, so every line after it moves up.
"""
import sys


def lookup(items, keys):
    # slow begin
    hits = 0
    for k in keys:
        # a linear scan per key
        if k in items:
            hits += 1
    return hits
    # slow end


def steady(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def main():
    rounds = int(sys.argv[1])
    items = list(range(4000))
    keys = list(range(0, 8000, 10))
    for _ in range(rounds):
        lookup(items, keys)
        steady(50000)


if __name__ == '__main__':
    main()
