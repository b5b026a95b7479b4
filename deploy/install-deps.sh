#!/usr/bin/env bash
# Installs the Debian 12 packages torqued builds and runs with; does nothing when they are all
# present. Usage: deploy/install-deps.sh [--test]   (--test adds what the test suite needs)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev liburdfdom-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev prometheus-cpp-dev nlohmann-json3-dev libssl-dev
  libbenchmark-dev
)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(libgtest-dev libgmock-dev prometheus)
  # The Python client's tests: a venv over Debian's python3 with its gRPC, numpy and pytest.
  packages+=(python3-venv python3-pip python3-setuptools python3-wheel python3-grpcio
    python3-numpy python3-pytest)
  # The fuzzing stage: clang-14 with libFuzzer and its sanitizer runtimes, and llvm-symbolizer
  # for readable reports. (GCC's own sanitizer runtimes come with build-essential.)
  packages+=(clang-14 libclang-rt-14-dev llvm-14)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
