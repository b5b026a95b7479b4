#!/usr/bin/env bash
# Fuzzes for a long time: every target for SECONDS (default 3600), PARALLEL targets at a time
# (default the number of cores), at low priority. Builds the fuzzers of build/asan (the ASan
# stage's build, tests/run.sh) first if they are missing.
# Usage: tests/fuzz/run_long.sh [SECONDS] [PARALLEL]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-3600}
parallel=${2:-$(nproc)}
build=build/asan
targets=(urdf_fuzzer mjcf_fuzzer sdf_fuzzer dh_fuzzer register_model_fuzzer session_request_fuzzer)
for target in "${targets[@]}"; do
  if [[ ! -x $build/tests/fuzz/$target ]]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-14 \
      -DTORQUED_SANITIZE=address -DTORQUED_FUZZ=ON
    cmake --build "$build" --target fuzzers
    break
  fi
done
failed=0
running=0
for target in "${targets[@]}"; do
  if ((running == parallel)); then
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  fi
  nice bash tests/fuzz/run.sh "$build" "$seconds" "$target" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=$((failed + 1))
  running=$((running - 1))
done
echo "fuzzers: $((${#targets[@]} - failed)) passed, $failed failed"
((failed == 0))
