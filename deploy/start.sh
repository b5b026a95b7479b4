#!/usr/bin/env bash
# The main job: installs what is missing, builds torqued in build/main/ and runs it in the
# foreground with the bundled models of deploy/models/ and its store under ./data (or
# $TORQUED_DATA_DIR). Extra arguments go to torqued (see `torqued --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
cmake -S . -B build/main -G Ninja -DCMAKE_BUILD_TYPE=Release -DTORQUED_BUILD_TESTS=OFF \
  -DTORQUED_BUILD_BENCH=OFF
cmake --build build/main -j"$(nproc)"
exec build/main/server/torqued "$@"
