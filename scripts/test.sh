#!/usr/bin/env bash
# Runs every fpfs test on a fresh Debian 12 machine (as root): installs the missing apt packages,
# builds, runs `swift test` (XCTest and Swift Testing, all targets) and exits with its status.
# Arguments go to `swift test` (`--filter NAME` runs some tests only; scripts/soak.sh does).
# Tests put their temporary folders and mounts under one directory; whatever happens (failure,
# Ctrl-C, SIGTERM) this script unmounts every fuse.fpfs mount left under it, then removes it.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
# shellcheck source=scripts/lib/install-deps.sh
source scripts/lib/install-deps.sh
# shellcheck source=scripts/lib/mounts.sh
source scripts/lib/mounts.sh
# shellcheck source=scripts/lib/stall.sh
source scripts/lib/stall.sh

fpfs_install_deps

# The mount tests keep their mountpoints, caches and the shared 1 GiB fixture here.
FPFS_TEST_TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/fpfs-test.XXXXXX")"
export FPFS_TEST_TMPDIR
test_pid=""

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    local status=$?
    trap - EXIT HUP INT TERM
    if [[ -n "$test_pid" ]]; then
        # The whole process group of the test run: swift test, its test runner and their tools.
        kill -TERM -- "-$test_pid" 2>/dev/null || true
        wait "$test_pid" 2>/dev/null || true
    fi
    fpfs_unmount_under "$FPFS_TEST_TMPDIR"
    fpfs_stop_daemons_under "$FPFS_TEST_TMPDIR"
    fpfs_stop_servers_under "$FPFS_TEST_TMPDIR"
    if [[ -z "$(fpfs_mounts_under "$FPFS_TEST_TMPDIR")" ]]; then
        rm -rf --one-file-system "$FPFS_TEST_TMPDIR"
    else
        echo "fpfs: could not unmount everything under $FPFS_TEST_TMPDIR; left it in place" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== swift build (the first build takes several minutes)" >&2
swift build --build-tests --quiet
FPFS_BINARY="$(swift build --show-bin-path)/fpfs"
export FPFS_BINARY

echo "== swift test" >&2
# In the background so that a signal reaches the trap at once instead of after the tests finish,
# and in a session of its own so that the trap can stop the whole test run by its process group.
# TMPDIR puts every test's temporary folders (and so their mounts) where the trap looks. The
# output goes through a file, shown as it grows, so that a run silent for 10 minutes (no test
# takes that long) is seen as stalled: the watch reports where it waits and stops it.
test_log="$FPFS_TEST_TMPDIR/swift-test.log"
# Made before tail starts: the background job would make it only once it runs, and a tail that
# finds no file gives up, so the log went unseen (the run itself went on).
: >"$test_log"
TMPDIR="$FPFS_TEST_TMPDIR" setsid swift test --skip-build "$@" </dev/null >>"$test_log" 2>&1 &
test_pid=$!
tail -f -n +1 --pid="$test_pid" "$test_log" &
tail_pid=$!
fpfs_watch_for_stall "$test_log" "$test_pid" 10 &
watch_pid=$!
set +e
wait "$test_pid"
test_status=$?
set -e
test_pid=""
kill "$watch_pid" 2>/dev/null || true
# tail prints what is left and ends within a second of the tests.
wait "$tail_pid" || true
exit "$test_status"
