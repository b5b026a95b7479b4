#!/usr/bin/env bash
# Prints the Debian packages that hold the shared libraries BINARY... load, one per line: the
# runtime stage of deploy/Dockerfile installs exactly these, so that the -dev package list of
# install-deps.sh stays the only list. Usage: deploy/runtime-packages.sh BINARY...
set -euo pipefail

owner_of() {
  # dpkg knows a file by the path its package ships, which after the /usr merge may differ from
  # the path the loader reports (/lib vs /usr/lib) or from the symlink's target.
  local path=$1 candidate
  for candidate in "$path" "${path/#\/usr\/lib\//\/lib\/}" "${path/#\/lib\//\/usr\/lib\/}" \
    "$(realpath "$path")"; do
    if dpkg-query -S "$candidate" 2>/dev/null | sed -n '1s/:.*//p' | grep .; then return 0; fi
  done
  echo "runtime-packages: no package holds $path" >&2
  return 1
}

libraries=$(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
for library in $libraries; do owner_of "$library"; done | sed 's/:amd64$//; s/:arm64$//' | sort -u
