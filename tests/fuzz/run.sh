#!/usr/bin/env bash
# Runs libFuzzer targets of a TORQUED_FUZZ build (tests/fuzz) on their seeds, SECONDS each, one
# after the other, and prints each target's executions. Fails on the first crash, sanitizer
# report, leak, timeout (10 s per input) or out-of-memory, whose input is left in
# BUILD_DIR/fuzz-artifacts/. New inputs go to BUILD_DIR/fuzz-corpus/TARGET/ (kept between runs,
# so a later run starts where the last one stopped), never to the seeds in tests/fuzz/corpus/.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
seconds=$2
shift 2
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(urdf_fuzzer mjcf_fuzzer sdf_fuzzer dh_fuzzer register_model_fuzzer session_request_fuzzer
    solve_request_fuzzer mpc_request_fuzzer)
fi
mkdir -p "$build/fuzz-artifacts"
for target in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$target
  log=$build/fuzz-artifacts/$target.log
  mkdir -p "$corpus"
  seeds=("tests/fuzz/corpus/$target")
  # The shared reference models seed the MJCF and SDF fuzzers where ../shared is checked out; they
  # are not copied into the repository (libFuzzer writes only into the first directory, $corpus).
  format=${target%_fuzzer}
  if [[ ($format == mjcf || $format == sdf) && -d ../shared/models/$format ]]; then
    seeds+=("../shared/models/$format")
  fi
  status=0
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -runs=100000000 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$target-" \
    "$corpus" "${seeds[@]}" >"$log" 2>&1 || status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  if ((status != 0)); then
    tail -n 60 "$log"
    echo "$target: FAILED after ${executions:-?} executions (exit $status); input and log in" \
      "$build/fuzz-artifacts/"
    exit 1
  fi
  echo "$target: ${executions:-?} executions in $seconds s, no crash ($(ls "$corpus" | wc -l) inputs in $corpus)"
done
