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
			"memory block cache in bytes (default: 1/256 of this machine's memory, 32 MiB to 64 MiB; evicted blocks' memory kept for the next fetches adds up to an eighth); an idle mount empties both after 20 s"),
		dirty: fs.Int64("dirty-bytes", client.DefaultDirtyBytes(),
			"written data a mount buffers and uploads at once, in bytes (default: 1/256 of this machine's memory, 32 MiB to 64 MiB); writers wait beyond it"),
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
