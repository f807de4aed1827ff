package main

import (
	"flag"
	"fmt"

	"tessera/internal/client"
)

// memFlags are a mount's memory bounds, on `tessera mount` and `tessera up`.
type memFlags struct {
	cache, dirty *int64
}

// addMemFlags adds --mem-cache and --dirty-bytes, whose defaults come from
// this machine's memory (and say so in -h).
func addMemFlags(fs *flag.FlagSet) memFlags {
	return memFlags{
		cache: fs.Int64("mem-cache", client.DefaultMemCacheBytes(),
			"memory block cache in bytes (default: 1/256 of this machine's memory, 32 MiB to 64 MiB; "+memCacheHelp),
		dirty: fs.Int64("dirty-bytes", client.DefaultDirtyBytes(),
			"written data a mount buffers and uploads at once, in bytes (default: 1/256 of this machine's memory, 32 MiB to 64 MiB); writers wait beyond it"),
	}
}

const memCacheHelp = "evicted blocks' memory kept for the next fetches adds up to an eighth); an idle mount empties both after 20 s"

// upMemCacheBytes and upDirtyBytes are tessera up's defaults of
// --mem-cache and --dirty-bytes on any machine. Its block servers run in
// the same process, on this host's disks: the mount reads their block
// files directly (checked against the segment sums), so the page cache of
// those files already holds what a block cache would, and an upload is a
// write over loopback, not a network round trip. At 64 MiB the cache
// filled with blocks the page cache held as well, and was the largest part
// of up's peak under fsx (docs/design/2026-11-29-fsx-memory.md); at 32 MiB
// it still was, with the dirty copies (docs/design/2026-11-29-idle-memory.md):
// the cache is at its floor, 16 MiB (read-ahead of blocks without a local
// copy waits there: three 4 MiB blocks). The dirty budget stays at 32
// MiB: below it four sequential writers slow down.
const (
	upMemCacheBytes = 16 << 20
	upDirtyBytes    = 32 << 20
)

// addUpMemFlags is addMemFlags with tessera up's defaults.
func addUpMemFlags(fs *flag.FlagSet) memFlags {
	return memFlags{
		cache: fs.Int64("mem-cache", upMemCacheBytes,
			"memory block cache in bytes (evicted blocks' memory kept for the next fetches adds up to an eighth; an idle mount empties both after 20 s); 16 MiB whatever the machine, the block servers' files being on this host, in its page cache"),
		dirty: fs.Int64("dirty-bytes", upDirtyBytes,
			"written data the mount buffers and uploads at once, in bytes; writers wait beyond it. 32 MiB whatever the machine: uploads go to this host's block servers"),
	}
}

// check refuses bounds too small to hold a block or two.
func (m memFlags) check() error {
	if *m.cache < 16<<20 {
		return fmt.Errorf("%w: --mem-cache %d: want at least 16 MiB (read-ahead waits there)", errUsage, *m.cache)
	}
	if *m.dirty < 8<<20 {
		return fmt.Errorf("%w: --dirty-bytes %d: want at least 8 MiB (two blocks)", errUsage, *m.dirty)
	}
	return nil
}
