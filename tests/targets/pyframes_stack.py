# A target for pyframes tests: known stacks in several threads, then it sleeps in place.
# Writes "ready" to stdout once every thread is in position. Runs on CPython 2.7 .. 3.14.
# Stacks (innermost first), lines marked with "# L:<tag>" so tests can find them:
#   main thread:      Spinner.spin (loop) <- nested_b <- nested_a <- <module>
#   thread "rec":     recurse x6 <- rec_main
#   thread "gen":     gen_body (in a generator) <- gen_main
#   thread "uni":     résumé (données.py, written to a temp dir) <- uni_main (Python 3 only)
import os
import sys
import threading
import time

ready = threading.Semaphore(0)
stop = False


class Spinner(object):
    def spin(self):
        x = 0
        while not stop:
            x += 1  # L:spin
        return x


def nested_b():
    return Spinner().spin()  # L:nested_b


def nested_a():
    return nested_b()  # L:nested_a


def recurse(n):
    if n == 0:
        ready.release()
        while not stop:
            time.sleep(0.01)  # L:recurse_leaf
        return 0
    return recurse(n - 1) + 1  # L:recurse


def rec_main():
    recurse(5)  # L:rec_main


def gen_body():
    ready.release()
    while not stop:
        time.sleep(0.01)  # L:gen_body
        yield 1


def gen_main():
    for _ in gen_body():  # L:gen_main
        pass


UNI_SRC = u"""# -*- coding: utf-8 -*-
import time


def r\u00e9sum\u00e9(ready, stopped):
    ready.release()
    while not stopped():
        time.sleep(0.01)  # L:resume
"""


def uni_main():
    # a module with a non-ASCII file and function name, written at run time
    import tempfile
    d = tempfile.mkdtemp(prefix="pyframes_")
    path = os.path.join(d, u"donn\u00e9es.py")
    with open(path, "wb") as f:
        f.write(UNI_SRC.encode("utf-8"))
    ns = {}
    exec(compile(UNI_SRC, path, "exec"), ns)
    ns[u"r\u00e9sum\u00e9"](ready, lambda: stop)  # L:uni_main


def main():
    global stop
    funcs = [rec_main, gen_main]
    if sys.version_info[0] >= 3:
        funcs.append(uni_main)
    threads = [threading.Thread(target=f) for f in funcs]
    for t in threads:
        t.daemon = True
        t.start()
    for _ in threads:
        ready.acquire()
    sys.stdout.write("ready %d\n" % os.getpid())
    sys.stdout.flush()
    nested_a()  # L:main


if __name__ == "__main__":
    main()
