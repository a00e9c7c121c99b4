#!/usr/bin/env bash
# The longer fuzz run of pyframes' layout checks and frame walker (tests/fuzz/fuzz_pyframes.c;
# the unit suite runs the same harness for 20 s).
#   bench/fuzz.sh [SECONDS] [BUILD_DIR]     default 600 s on build-asan/ (ASan + UBSan), else build/
# Prints the seed, the executions and executions per second; on a crash, the execution that
# crashed and how to reproduce it (HWSPY_FUZZ_SEED=... HWSPY_FUZZ_ONE=...). Exit status: the
# harness's (non-zero when an execution crashed or broke a check).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
dir=${2:-}
if [ -z "$dir" ]; then
	if [ -d build-asan ]; then dir=build-asan; else dir=build; fi
fi
[ -d "$dir" ] || { echo "fuzz.sh: no build directory '$dir': run meson setup first" >&2; exit 2; }
ninja -C "$dir" tests/fuzz/fuzz_pyframes >/dev/null
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "fuzz_pyframes ($dir) for $seconds s"
HWSPY_FUZZ_SECONDS=$seconds CMOCKA_MESSAGE_OUTPUT=TAP "$dir/tests/fuzz/fuzz_pyframes"
