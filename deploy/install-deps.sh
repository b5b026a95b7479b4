#!/usr/bin/env bash
# Installs the Debian 12 packages torqued builds and runs with; does nothing when they are all
# present. Usage: deploy/install-deps.sh [--test] [--containers]
#   --test        adds what the test suite needs
#   --containers  adds the container engine the container tests use (podman, rootful), with the
#                 containers.conf settings these VMs need
set -euo pipefail

with_test=0
with_containers=0
for option in "$@"; do
  case "$option" in
    --test) with_test=1 ;;
    --containers) with_containers=1 ;;
    *) echo "install-deps: unknown option $option" >&2; exit 2 ;;
  esac
done

# ccache: rebuilds reuse compiled objects (the container image's build stage keeps its cache).
packages=(
  build-essential cmake ninja-build pkg-config ccache
  libeigen3-dev liburdfdom-dev libsdformat-dev libtinyxml-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev prometheus-cpp-dev nlohmann-json3-dev libssl-dev
  libbenchmark-dev
)
if ((with_test)); then
  # openssl: the TLS tests make their certificates with it at run time; python3-h2 (hyperframe,
  # hpack): the hostile HTTP/2 client of tests/server/transport.
  packages+=(libgtest-dev libgmock-dev prometheus openssl python3-h2)
  # MuJoCo, which the MJCF reader's results are checked against (mujoco_agreement_test).
  packages+=(libmujoco-dev)
  # The Python client's tests: a venv over Debian's python3 with its gRPC, numpy and pytest;
  # matplotlib for the examples' plots.
  packages+=(python3-venv python3-pip python3-setuptools python3-wheel python3-grpcio
    python3-numpy python3-pytest python3-matplotlib)
  # The fuzzing stage: clang-14 with libFuzzer and its sanitizer runtimes, and llvm-symbolizer
  # for readable reports. (GCC's own sanitizer runtimes come with build-essential.)
  packages+=(clang-14 libclang-rt-14-dev llvm-14)
fi
if ((with_containers)); then
  # mmdebstrap makes the base image locally (no registry needs to be reachable); netavark and
  # aardvark-dns let containers of one compose network find each other by service name.
  # netavark sets up the networks' firewall rules with iptables, which it does not depend on.
  packages+=(podman buildah uidmap fuse-overlayfs slirp4netns catatonit runc netavark
    aardvark-dns iptables mmdebstrap podman-compose python3-yaml)
  # npm runs the offline Kubernetes schema validation (kubernetes-models, from the npm
  # registry); a Node.js that brings its own npm is used as it is.
  if ! command -v npm >/dev/null; then packages+=(nodejs npm); fi
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ((with_containers)); then
  # The VM's hard limit on open files is 20000 and podman asks for more by default; crun refuses
  # the VM's hybrid cgroup layout, runc runs on it; netavark rather than CNI, for the names.
  dropin=/etc/containers/containers.conf.d/50-torqued-vm.conf
  settings='[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[network]
network_backend = "netavark"

[engine]
runtime = "runc"'
  if [[ ! -f "$dropin" || "$(cat "$dropin")" != "$settings" ]]; then
    $sudo mkdir -p "$(dirname "$dropin")"
    echo "$settings" | $sudo tee "$dropin" >/dev/null
  fi
fi
