#!/usr/bin/env bash
# The container stage of the test command (tests/run.sh runs it after the host tests; CI too):
# installs the container engine when missing, makes the base image once (tests/deploy/
# base-image.sh), builds torqued's image and the compose stack's Prometheus image, installs the
# Kubernetes schema validator from npm, then runs tests/deploy/test_*.py with pytest: the image
# run for real, the compose stack with the dashboard's queries, the manifests validated and the
# Deployment's pod run by podman kube play. Everything it starts, it removes.
#
# Usage: tests/deploy/run.sh [BUILD_DIR [pytest args]]   BUILD_DIR: the host build to compare
# with (default build/test). TORQUED_SKIP_CONTAINERS=1 skips the stage (for developers; CI does
# not set it). Caches: podman's layers and ccache mount, $TORQUED_CACHE_DIR (default
# /var/cache/torqued: the base image tarball and the npm packages).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ "${TORQUED_SKIP_CONTAINERS:-0}" == 1 ]]; then
  echo "deploy: container tests skipped (TORQUED_SKIP_CONTAINERS=1)"
  exit 0
fi
build_dir=$(realpath "${1:-build/test}")
shift || true
cache_dir=${TORQUED_CACHE_DIR:-/var/cache/torqued}
export TORQUED_CACHE_DIR=$cache_dir

stage() { echo "deploy: $1 ($((SECONDS - start)) s)"; }
start=$SECONDS
# A failing step names itself, with the disk space left (podman's exit 125, its own errors, includes
# a full disk).
trap 'status=$?; echo "deploy: \"$BASH_COMMAND\" failed (exit $status) after $((SECONDS - start)) s" >&2; df -h / /var/lib/containers /var/tmp >&2' ERR
bash deploy/install-deps.sh --test --containers
stage "container engine ready"
bash tests/deploy/base-image.sh
stage "base image ready"
base=(--build-arg BASE=localbase:bookworm)
# The build stage is tagged so that its layers stay the next run's cache while the images that
# older sources left untagged are pruned.
podman build --quiet --format docker "${base[@]}" -f deploy/Dockerfile --target build \
  -t torqued-build:latest . >/dev/null
podman build --quiet --format docker "${base[@]}" -f deploy/Dockerfile -t torqued:latest . >/dev/null
stage "torqued image built"
podman build --quiet --format docker "${base[@]}" -t torqued-prometheus:latest deploy/prometheus \
  >/dev/null
podman image prune --force >/dev/null
stage "prometheus image built"
# Pinned versions, no lock file (it would name the registry); installed once into the cache.
npm_dir=$cache_dir/npm
validator_packages=(kubernetes-models@5.1.0 yaml@2.9.1)
if [[ "$(cat "$npm_dir/installed" 2>/dev/null)" != "${validator_packages[*]}" ]]; then
  rm -rf "$npm_dir"
  mkdir -p "$npm_dir"
  npm install --silent --no-audit --no-fund --no-save --prefix "$npm_dir" "${validator_packages[@]}"
  echo "${validator_packages[*]}" >"$npm_dir/installed"
fi
stage "schema validator ready"

export TORQUED_BINARY=$build_dir/server/torqued
export TORQUECTL_BINARY=$build_dir/clients/cpp/torquectl
export TORQUED_LOAD_BINARY=$build_dir/clients/cpp/load/torqued-load
export TORQUED_NPM_DIR=$npm_dir
stage "running the tests"
PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 -m pytest -p no:cacheprovider -v -s -ra tests/deploy "$@"
