#!/usr/bin/env bash
# Installs the Python client into a fresh venv (offline, over Debian's python3-grpcio, numpy and
# pytest) and runs its tests against a real torqued. CTest runs it (tests/CMakeLists.txt); by hand:
#   TORQUED_BINARY=build/dev/server/torqued TORQUECTL_BINARY=build/dev/clients/cpp/torquectl \
#     bash tests/clients/python/run_pytest.sh [WORK_DIR] [pytest args]
# ($TORQUECTL_BINARY is optional: without it the comparison with the C++ client is skipped.)
# WORK_DIR (default: a temporary directory) receives the venv and a copy of the package, so the
# source tree gets no build output; the copy finds the protos through TORQUED_PROTO_DIR.
set -euo pipefail
source_dir="$(cd "$(dirname "$0")/../../.." && pwd)"
work_dir="${1:-$(mktemp -d)}"
shift || true
: "${TORQUED_BINARY:?set TORQUED_BINARY to the torqued binary to test against}"

rm -rf "$work_dir/venv" "$work_dir/package"
mkdir -p "$work_dir/package"
cp -r "$source_dir/clients/python/pyproject.toml" "$source_dir/clients/python/setup.py" \
  "$source_dir/clients/python/torqued" "$work_dir/package/"
# Debian's interpreter: the python3 first on PATH may be another one without python3-grpcio.
# Debian's pip (python3-pip) installs into the venv: seeding the venv with its own pip costs
# more time than the rest of the set-up.
/usr/bin/python3 -m venv --system-site-packages --without-pip "$work_dir/venv"
TORQUED_PROTO_DIR="$source_dir/proto" "$work_dir/venv/bin/python" -m pip install --quiet \
  --no-build-isolation --no-index "$work_dir/package"

cd "$work_dir"
export TORQUED_MODEL_REPOSITORY="$source_dir/deploy/models"
# -P: no current directory on sys.path, so `import torqued` is the installed package.
PYTHONDONTWRITEBYTECODE=1 exec "$work_dir/venv/bin/python" -P -m pytest -p no:cacheprovider \
  -ra "$source_dir/clients/python/tests" "$@"
