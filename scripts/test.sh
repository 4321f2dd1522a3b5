#!/usr/bin/env bash
# Every test, after `make lint` (the rest of `make test`), ordered so that a 2-core machine
# stays busy while nothing timing-sensitive shares it:
#
#   1. in the background, at the lowest CPU priority: the Rust tests' build (profile
#      `checked`), then cargo-fuzz (if missing) and the fuzz targets' build;
#   2. meanwhile the Python tests whose assertions do not depend on timing, two at a time
#      (`-m "not timing"`): unit tests, end-to-end runs checked on counts, contents and
#      order, and every study's and shipped scenario's smoke run. They leave a core idle
#      much of the time (runs wait on their scenario's clock), which the build takes; at
#      nice 19 it gets almost nothing while they need the CPU;
#   3. the Rust tests, once built;
#   4. the tests marked `timing` (delays, rates, queue dynamics, the machine's CPUs), one at
#      a time with nothing else running;
#   5. every fuzz target for SECONDS, one per CPU.
#
# Each phase says how long it took. A phase that fails ends the script (and the build).
#
#   scripts/test.sh SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/test.sh SECONDS   (fuzzing time per target, a positive integer)" >&2
  exit 2
fi
export PATH="$HOME/.cargo/bin:$PATH"

phase_start=0
phase() {
  [ "$phase_start" -eq 0 ] || echo "test: done in $(( $(date +%s) - phase_start )) s"
  phase_start=$(date +%s)
  [ $# -eq 0 ] || echo "test: $*"
}

mkdir -p target
build_log=target/test-build.log
# Its own process group (setsid), so that a failing phase can stop the whole build.
setsid bash -c 'nice -n 19 cargo test --profile checked --no-run --quiet && nice -n 19 ./scripts/fuzz.sh --build' \
  >"$build_log" 2>&1 &
build=$!
trap 'kill -TERM -- "-$build" 2>/dev/null || true' EXIT
build_start=$(date +%s)

phase "Python tests not marked timing, two at a time (the Rust tests and fuzz targets build meanwhile: $build_log)"
python3 -m pytest -q -rA --durations=15 -n 2 --maxschedchunk 1 -m "not timing" tests

phase "waiting for the build"
if ! wait "$build"; then
  tail -n 60 "$build_log" >&2
  echo "test: building the Rust tests or the fuzz targets failed ($build_log)" >&2
  exit 1
fi
echo "test: the build took $(( $(date +%s) - build_start )) s in the background"

phase "Rust tests (profile checked: overflow checks; Cargo.toml says why not debug assertions)"
cargo test --profile checked --quiet

phase "Python tests marked timing, one at a time"
python3 -m pytest -q -rA --durations=15 -m timing tests

phase "fuzz targets, ${seconds} s each"
./scripts/fuzz.sh "$seconds"
phase
