#!/usr/bin/env bash
# Brings Tessera up and mounts it, in the foreground: meta service, block
# servers and a FUSE mount in one process. Ctrl-C unmounts and exits.
#   scripts/up.sh [DATA_DIR [MOUNT_POINT]]   (defaults /var/tmp/tessera, /mnt/tessera)
# Extra flags for `tessera up` go in TESSERA_UP_FLAGS, e.g. "--block-servers 5".
# It links bin/tessera into /usr/local/bin (TESSERA_LINK_DIR), so that
# `tessera status` and the other commands are on PATH; TESSERA_NO_LINK=1
# skips that. A mount left stale by a killed run is detached first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
data=${1:-/var/tmp/tessera}
mnt=${2:-/mnt/tessera}
# A FUSE mount whose process was killed answers every call with ENOTCONN
# ("Transport endpoint is not connected"), mkdir -p included: detach it.
# A live mount is left alone (tessera up says who holds the data dir).
if ! stat "$mnt" >/dev/null 2>&1 && grep -qs " $(realpath -m "$mnt") fuse" /proc/mounts; then
	echo "up.sh: detaching the stale mount at $mnt" >&2
	fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"
fi
mkdir -p "$data" "$mnt"
go build -ldflags "-X main.commit=$(git rev-parse HEAD 2>/dev/null)" -o bin/tessera ./cmd/tessera
if [ "${TESSERA_NO_LINK:-}" != 1 ]; then
	dir=${TESSERA_LINK_DIR:-/usr/local/bin}
	link=$dir/tessera
	if [ -e "$link" ] && [ ! -L "$link" ]; then
		echo "up.sh: $link exists and is not a link; leaving it (this build is $PWD/bin/tessera)" >&2
	elif ! ln -sfn "$PWD/bin/tessera" "$link" 2>/dev/null; then
		echo "up.sh: cannot link $link (run as root, or TESSERA_NO_LINK=1); the binary is $PWD/bin/tessera" >&2
	fi
fi
# shellcheck disable=SC2086
exec bin/tessera up --data "$data" --mount "$mnt" ${TESSERA_UP_FLAGS:-}
