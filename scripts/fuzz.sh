#!/usr/bin/env bash
# Builds and runs every fuzz target of fuzz/Cargo.toml for SECONDS each, FUZZ_JOBS at a
# time (default: one per CPU), one line per target (run time, executions, outcome);
# exits non-zero if any target crashed. `--build` only installs cargo-fuzz if missing and
# builds the targets (`make test` builds them while other tests run).
# Idempotent: installs cargo-fuzz only when missing, and each run grows the corpora in
# fuzz/corpus/ (kept out of git), so later runs start where earlier ones stopped.
#
#   scripts/fuzz.sh SECONDS
#   scripts/fuzz.sh --build
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-}
if [ "$seconds" != --build ] && ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh SECONDS | --build   (SECONDS: time per target, a positive integer)" >&2
  exit 2
fi
jobs=${FUZZ_JOBS:-$(nproc)}
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: FUZZ_JOBS must be a positive integer (got '$jobs')" >&2
  exit 2
fi

export PATH="$HOME/.cargo/bin:$PATH"
# libFuzzer and the sanitizer flags need nightly; this script does not install a
# toolchain (that is a download outside the package registries).
rustup run nightly rustc --version >/dev/null 2>&1 \
  || { echo "fuzz: the nightly toolchain is required (rustup toolchain list)" >&2; exit 1; }
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked --quiet
fi

fuzz=(cargo +nightly fuzz)
targets=$("${fuzz[@]}" list --fuzz-dir fuzz)
[ -n "$targets" ] || { echo "fuzz: no targets in fuzz/Cargo.toml" >&2; exit 1; }

echo "fuzz: building $(echo "$targets" | wc -l) target(s)"
"${fuzz[@]}" build --fuzz-dir fuzz >fuzz/build.log 2>&1 \
  || { tail -n 40 fuzz/build.log >&2; echo "fuzz: build failed (fuzz/build.log)" >&2; exit 1; }
[ "$seconds" = --build ] && exit 0

# Seeds: real inputs from the repository, so a parser starts from well-formed input and
# the fuzzer spends its time past the first syntax error.
seed() {
  local target=$1 dir=fuzz/corpus/$1
  mkdir -p "$dir"
  case $target in
    linkem_trace)
      [ -e tests/data/scenarios/constant12.trace ] && cp -n tests/data/scenarios/constant12.trace "$dir/seed-constant12"
      ;;
    engine_config)
      [ -e tests/data/engine-config.json ] && cp -n tests/data/engine-config.json "$dir/seed-python-written"
      # The documented example: the first ```json block of docs/engine-config.md.
      [ -e docs/engine-config.md ] && [ ! -e "$dir/seed-documented" ] \
        && awk '/^```json$/ {inside = 1; next} inside && /^```/ {exit} inside' docs/engine-config.md >"$dir/seed-documented"
      ;;
  esac
  return 0
}

# One target's run; its line (and whether it crashed) goes to fuzz/logs/<target>.line.
run_target() {
  local target=$1 log=fuzz/logs/$1.log start status elapsed runs corpus outcome
  start=$(date +%s)
  # A target's dictionary (fuzz/dicts/<target>.dict), if it has one, guides mutations.
  local dict=()
  [ -e "fuzz/dicts/$target.dict" ] && dict=(-dict="fuzz/dicts/$target.dict")
  set +e
  "${fuzz[@]}" run --fuzz-dir fuzz "$target" -- -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}" >"$log" 2>&1
  status=$?
  set -e
  elapsed=$(( $(date +%s) - start ))
  # libFuzzer's closing line: "Done N runs in T second(s)"; after a crash, the stats.
  runs=$(sed -n 's/^Done \([0-9]*\) runs in .*/\1/p' "$log" | tail -n 1)
  [ -n "$runs" ] || runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
  if [ "$status" -eq 0 ]; then
    outcome=ok
  else
    outcome="CRASH (exit $status; see $log and fuzz/artifacts/$target/)"
  fi
  printf 'fuzz: %-20s %4ss  %12s execs  corpus %6s  %s\n' "$target" "$elapsed" "${runs:-?}" "$corpus" "$outcome" \
    >"fuzz/logs/$target.line"
  return "$status"
}

# Each target is one process on one CPU: FUZZ_JOBS of them at a time, each for SECONDS.
mkdir -p fuzz/logs
for target in $targets; do
  seed "$target"
  rm -f "fuzz/logs/$target.line"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$target" &
done
wait

failed=()
for target in $targets; do
  if [ -e "fuzz/logs/$target.line" ]; then
    cat "fuzz/logs/$target.line"
  else
    echo "fuzz: $target did not report (see fuzz/logs/$target.log)"
  fi
  grep -q ' ok$' "fuzz/logs/$target.line" 2>/dev/null || failed+=("$target")
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) crashed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all targets ran ${seconds}s without a crash"
