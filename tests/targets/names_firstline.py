"""Workload for test_names.py (firstline): a profile function burns argv[1] CPU seconds on the
'call' event of the module names_firstline_mod, whose frame then sits at its first instruction
(3.12+: a RESUME whose location says line 0; before 3.11 f_lasti -1)."""
import os
import sys
import time


def prof(frame, event, arg):
    if event == 'call' and frame.f_code.co_filename.endswith('names_firstline_mod.py'):
        end = time.process_time() + float(sys.argv[1])
        while time.process_time() < end:  # HOT:prof
            pass


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.setprofile(prof)
import names_firstline_mod  # noqa: E402,F401
sys.setprofile(None)
