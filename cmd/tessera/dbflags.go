package main

import (
	"flag"
	"fmt"
	"time"

	"tessera/internal/block/disk"
	"tessera/internal/block/scrub"
	"tessera/internal/up"
)

// metaDBUsage is the help text of --meta-db, shared by every role that
// runs a meta service.
const metaDBUsage = "the meta service's KV engine and its place: pebble:DIR, bolt:FILE, mem: (in memory, lost at exit) or " +
	"etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?ca=FILE&cert=FILE&key=FILE&majority-wait=30s] (a shared etcd cluster; majority-wait: how long a write waits for a majority before it fails); default pebble:DATA/meta"

// addMetaDBFlag adds --meta-db to fs, and --kv, the same flag under the
// name issue 13 gives it.
func addMetaDBFlag(fs *flag.FlagSet) *string {
	db := fs.String("meta-db", "", metaDBUsage)
	fs.StringVar(db, "kv", "", "same as --meta-db")
	return db
}

// metaDB returns the database named by --meta-db, or the one of the data
// directory (up.MetaDBForDataDir) when only --data is given.
func metaDB(url, data string) (up.MetaDB, error) {
	if url == "" {
		return up.MetaDBForDataDir(data), nil
	}
	db, err := up.ParseMetaDB(url)
	if err != nil {
		return up.MetaDB{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	return db, nil
}

// scrubFlags are the block servers' scrub flags (blockd and up).
type scrubFlags struct {
	rate     *int64
	interval *time.Duration
}

func addScrubFlags(fs *flag.FlagSet) scrubFlags {
	return scrubFlags{
		rate: fs.Int64("scrub-rate", scrub.DefaultRate, "bytes per second the background scrub re-hashes stored blocks at "+
			"(corrupt copies are moved aside and restored from good ones; 0: no scrub; negative: unlimited)"),
		interval: fs.Duration("scrub-interval", scrub.DefaultInterval, "least time between the starts of two scrub rounds"),
	}
}

// pageCacheFlag is the block servers' --page-cache-window (blockd and up).
type pageCacheFlag struct{ bytes *int64 }

func addPageCacheFlag(fs *flag.FlagSet) pageCacheFlag {
	return pageCacheFlag{fs.Int64("page-cache-window", disk.DefaultWriteCache,
		"bytes of the blocks a server wrote last that it leaves in the page cache, per store, for the reads that "+
			"follow a write (other sites, the mover); older blocks' pages are dropped once durable (0: none)")}
}

// config is the flag as up.BlockServerConfig.WriteCache takes it.
func (f pageCacheFlag) config() (int64, error) {
	switch {
	case *f.bytes < 0:
		return 0, fmt.Errorf("%w: --page-cache-window %d: want 0 or more bytes", errUsage, *f.bytes)
	case *f.bytes == 0:
		return -1, nil
	}
	return *f.bytes, nil
}

func (f scrubFlags) check() error {
	if *f.interval <= 0 {
		return fmt.Errorf("%w: --scrub-interval %v must be positive", errUsage, *f.interval)
	}
	return nil
}
