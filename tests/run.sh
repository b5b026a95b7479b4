#!/usr/bin/env bash
# The test command: installs what is missing, then builds everything and runs every test twice:
# portable in build/test/, then for this machine's CPU in build/test-native/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh --test

echo "== Release build, portable (baseline x86-64)"
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build/test -j"$(nproc)"
ctest --test-dir build/test --output-on-failure -j"$(nproc)" "$@"

# The same suite built for this machine's CPU (-march=native: AVX2, FMA and wider registers where
# it has them), where floating-point contraction and Eigen's alignment differ from the portable
# build while results must agree and model ids must not change (tests/server/model_id_test.cpp
# pins the portable build's). Benchmarks are left out: nothing here runs them.
echo "== Release build, native ($(grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo "no AVX2"))"
cmake -S . -B build/test-native -G Ninja -DCMAKE_BUILD_TYPE=Release -DTORQUED_NATIVE=ON \
  -DTORQUED_BUILD_BENCH=OFF
cmake --build build/test-native -j"$(nproc)"
ctest --test-dir build/test-native --output-on-failure -j"$(nproc)" "$@"
