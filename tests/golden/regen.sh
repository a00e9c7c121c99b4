#!/bin/sh
# Rewrites tests/golden/expected/ from the hwspy of a build directory:
#     tests/golden/regen.sh [BUILD_DIR]        (default: build)
# ONLY for a deliberate change of an output (a new SVG feature, a reworded message, dump's wait
# words from the one wait table): the goldens are what the test `golden`
# (tests/integration/test_golden.py) holds every later build to, byte for byte. Run it with the
# build that has the change, read `git diff tests/golden/expected` line by line, and commit it
# with the change that caused it, saying why each output moved.
# The inputs (tests/golden/inputs/) are frozen and not rewritten here: they were recorded once
# with `hwspy record -q ... -- /usr/bin/python3 -S work.py SECS` (work.py copied to a directory
# named `dir <&"'> é`): cpu-threads.folded (-F 200 --threads, 0.5 s), after.folded (-F 200,
# 0.5 s, argument 'after'), faults-native.pb.gz (-e page-faults,cpu-clock --threads --native,
# 0.3 s), offcpu-kernel.folded (--off-cpu --threads --kernel, 0.25 s, 12 of its lines kept),
# wall.pb.gz (--wall --threads, 0.3 s); other-tools.folded by hand; hw-events.pb.gz with
# tests/integration/pprof_build.py (cycles, instructions, cache-misses, samples). A changed
# input needs every golden regenerated from the build BEFORE the change under test.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
exe=$build/cli/hwspy
[ -x "$exe" ] || { echo "regen.sh: no hwspy at $exe: build first (meson compile -C $build)" >&2; exit 1; }
exec python3 "$root/tests/integration/test_golden.py" --hwspy "$exe" --source-root "$root" --regen
