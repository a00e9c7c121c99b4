#!/usr/bin/env bash
# The test command (README): builds and runs every test suite.
#  1. build/      -Dwerror=true, all suites: unit, integration (every installed Python), ...
#                 but 'hostile', 'tui' and 'asan', which step 2 runs with the ASan build's hwspy
#                 (a test in 'asan' is in 'integration' too: run once, sanitized, not twice)
#  2. build-asan/ AddressSanitizer + UBSan, the unit suite (the fuzzer among it) and the hostile
#     targets (suite 'hostile': the ASan build's hwspy against a corrupt _Py_DebugOffsets).
#     It also runs suite 'tui' (hwspy top in tmux) with that build's hwspy: top's behaviour and
#     its sanitizer-cleanliness in one run (the same tests with the release build would add
#     ~21 s to the suite and find nothing more), and suite 'asan' (hwspy stat's cases on one
#     Python) with it too.
# Both steps always run; the exit status is non-zero if either failed.
# Needs root for the integration suite (ptrace and perf events on other processes, and the
# permission test runs hwspy as nobody); run tests/setup-pythons.sh first for Debian 3.13/3.14.
# Extra arguments go to both `meson test` runs, e.g. tests/run-all.sh --num-processes 1.
set -euo pipefail
cd "$(dirname "$0")/.."
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

setup() {
	local dir=$1
	shift
	if [ -d "$dir" ]; then
		meson setup "$dir" --wipe "$@" >/dev/null 2>&1 || { rm -rf "$dir"; meson setup "$dir" "$@"; }
	else
		meson setup "$dir" "$@"
	fi
}

status=0
step() {
	local name=$1
	shift
	echo "=== $name"
	local t0=$SECONDS
	if "$@"; then
		echo "=== $name: OK ($((SECONDS - t0)) s)"
	else
		echo "=== $name: FAILED ($((SECONDS - t0)) s)"
		status=1
	fi
}

release() {
	setup build -Dwerror=true &&
	meson compile -C build &&
	meson test -C build --no-suite hostile --no-suite tui --no-suite asan --print-errorlogs "$@"
}

asan() {
	setup build-asan -Db_sanitize=address,undefined -Db_lundef=false &&
	meson compile -C build-asan &&
	meson test -C build-asan --suite unit --suite hostile --suite tui --suite asan --print-errorlogs "$@"
}

step 'build (-Dwerror=true), all suites but hostile, tui and asan (run by the ASan build)' release "$@"
step 'build-asan (address,undefined), unit, hostile, tui and asan suites' asan "$@"
exit $status
