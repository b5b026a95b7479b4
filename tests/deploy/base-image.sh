#!/usr/bin/env bash
# Makes the container base image localbase:bookworm once, since no image registry can be reached
# from these machines: a minimal Debian 12 made by mmdebstrap from the machine's own apt sources
# (so that packages in the image are the versions the host has), without documentation, manual
# pages and translations, like debian:bookworm-slim (the exclusions stay in the image's dpkg
# configuration, so packages installed on top of it leave them out too), imported into podman. The
# tarball is kept in $TORQUED_CACHE_DIR (default /var/cache/torqued) and the image in podman's
# storage; either one makes the next run a no-op or a 10-second import.
set -euo pipefail

image=localbase:bookworm
cache_dir=${TORQUED_CACHE_DIR:-/var/cache/torqued}
tarball=$cache_dir/localbase-bookworm.tar

if podman image exists "$image"; then
  exit 0
fi
mkdir -p "$cache_dir"
if [[ ! -s "$tarball" ]]; then
  sources=()
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    if [[ -s "$f" ]] && grep -q '^[^#]' "$f"; then sources+=("$f"); fi
  done
  echo "base-image: mmdebstrap bookworm from ${sources[*]}"
  mmdebstrap --variant=minbase --format=tar --quiet \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    bookworm "$tarball.partial" "${sources[@]}"
  mv "$tarball.partial" "$tarball"
fi
podman import --quiet "$tarball" "$image" >/dev/null
echo "base-image: imported $image from $tarball"
