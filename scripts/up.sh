#!/usr/bin/env bash
# Brings Tessera up and mounts it, in the foreground: meta service, block
# servers and a FUSE mount in one process. Ctrl-C unmounts and exits.
#   scripts/up.sh [DATA_DIR [MOUNT_POINT]]   (defaults /var/tmp/tessera, /mnt/tessera)
# Extra flags for `tessera up` go in TESSERA_UP_FLAGS, e.g. "--block-servers 5".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
data=${1:-/var/tmp/tessera}
mnt=${2:-/mnt/tessera}
mkdir -p "$data" "$mnt"
go build -o bin/tessera ./cmd/tessera
# shellcheck disable=SC2086
exec bin/tessera up --data "$data" --mount "$mnt" ${TESSERA_UP_FLAGS:-}
