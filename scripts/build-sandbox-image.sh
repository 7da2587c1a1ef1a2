#!/usr/bin/env bash
# Build the docker sandbox image (default driveros-sandbox:latest) without any registry:
#   1. debootstrap --variant=minbase bookworm from deb.debian.org into a temp directory,
#   2. `docker import` that root filesystem as driveros-sandbox-base:<recipe>,
#   3. core/driveros/sandbox/image/Dockerfile on top (git config, env, workdir).
# Idempotent: when the image exists with the same recipe hash label, nothing is rebuilt.
# Needs root (debootstrap) and a Docker daemon. Options via the environment:
#   DRIVEROS_SANDBOX_IMAGE (tag), DEBIAN_MIRROR, DRIVEROS_SANDBOX_REBUILD=1 (force).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${DRIVEROS_SANDBOX_IMAGE:-driveros-sandbox:latest}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
PACKAGES=git,ripgrep,python3,ca-certificates,procps,less
CONTEXT=core/driveros/sandbox/image

# The root filesystem depends only on the suite and packages (bump ROOTFS_VERSION when the
# debootstrap/slimming steps change); the image on everything in this recipe.
ROOTFS_VERSION=1
BASE_RECIPE="$(echo "$ROOTFS_VERSION $SUITE $PACKAGES" | sha256sum | cut -c1-16)"
RECIPE="$( { cat "$0" "$CONTEXT/Dockerfile"; echo "$BASE_RECIPE"; } | sha256sum | cut -c1-16)"
BASE="driveros-sandbox-base:$BASE_RECIPE"

have="$(docker image inspect -f '{{ index .Config.Labels "driveros.recipe" }}' "$IMAGE" 2>/dev/null || true)"
if [ "$have" = "$RECIPE" ] && [ "${DRIVEROS_SANDBOX_REBUILD:-0}" != 1 ]; then
  echo "sandbox image $IMAGE is up to date (recipe $RECIPE)"
  exit 0
fi

if [ "$(id -u)" != 0 ] && ! docker image inspect "$BASE" >/dev/null 2>&1; then
  echo "build-sandbox-image: debootstrap needs root; run this script as root" >&2
  exit 1
fi
command -v debootstrap >/dev/null || {
  echo "build-sandbox-image: debootstrap is missing (apt-get install debootstrap)" >&2
  exit 1
}

if [ "${DRIVEROS_SANDBOX_REBUILD:-0}" = 1 ] || ! docker image inspect "$BASE" >/dev/null 2>&1; then
  work="$(mktemp -d /tmp/driveros-rootfs.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  echo "debootstrap $SUITE (minbase + $PACKAGES) from $MIRROR ..."
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$work/rootfs" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1 || { tail -30 "$work/debootstrap.log" >&2; exit 1; }
  # Nothing in the image needs package caches, documentation or translations.
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/* \
    "$work"/rootfs/usr/share/doc/* "$work"/rootfs/usr/share/man/* "$work"/rootfs/usr/share/info/* \
    "$work"/rootfs/usr/share/locale/* "$work"/rootfs/var/log/*.log
  tar --numeric-owner -C "$work/rootfs" -c . | docker import - "$BASE" >/dev/null
fi

previous="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
log="$(mktemp /tmp/driveros-image-build.XXXXXX)"
DOCKER_BUILDKIT=0 docker build --build-arg BASE="$BASE" --label "driveros.recipe=$RECIPE" \
  -t "$IMAGE" "$CONTEXT" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect -f '{{.Id}}' "$IMAGE")" ]; then
  docker rmi "$previous" >/dev/null 2>&1 || true  # the replaced image, unless still in use
fi
# Base images of older recipes are dead weight.
docker images --format '{{.Repository}}:{{.Tag}}' driveros-sandbox-base \
  | grep -v ":$BASE_RECIPE\$" | xargs -r docker rmi >/dev/null 2>&1 || true
echo "built sandbox image $IMAGE (recipe $RECIPE)"
