#!/usr/bin/env bash
# The test command: installs what is missing, builds everything in build/test/ and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh --test
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build/test -j"$(nproc)"
ctest --test-dir build/test --output-on-failure -j"$(nproc)" "$@"

# Container stage: the image, the compose stack and the Kubernetes manifests, built and run
# (TORQUED_SKIP_CONTAINERS=1 skips it; CI does not).
bash tests/deploy/run.sh build/test
