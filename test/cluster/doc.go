// Package cluster runs `tessera up` as a real child process for end-to-end
// tests and benchmarks, and guarantees that no FUSE mount outlives it.
// Multi does the same for a cluster of separate processes (`tessera meta`,
// `tessera blockd`, `tessera mount`, `tessera gateway`; see MultiOptions for
// their contract and AddGateway for the gateway's).
// Sites runs three (or more) emulated sites of such processes over one real
// etcd cluster, every connection between sites through internal/wan links
// (see SitesOptions and docs/design/2026-11-24-multisite-emulation.md).
//
// Contract of the binary this package relies on (see DESIGN.md §1):
//
//   - `tessera up --data DIR --mount MNT [--block-servers N] [--block-size B]`
//     runs in the foreground and prints one stdout line starting
//     "tessera up: ready" (containing "mount=MNT meta=ADDR") once MNT is usable;
//   - SIGINT/SIGTERM unmount and exit 0;
//   - a second run on the same DIR brings every file back, and cleans up MNT
//     if a killed run left it as a stale FUSE mount;
//   - `tessera status|gc|fsck --data DIR` work while `up` runs on DIR.
//
// Every child runs in its own process group with a parent-death signal, so a
// test binary that panics or times out still takes its daemons (and so their
// mounts) with it. Stop, Kill9 and Restart are safe to call in any order and
// more than once; after each of them the mount point is checked against
// /proc/mounts and detached if the daemon left it behind.
package cluster
