package main

import (
	"flag"
	"fmt"
	"time"

	"tessera/internal/meta"
	"tessera/internal/mover"
	"tessera/internal/reclaim"
	"tessera/internal/up"
)

// metaRoleFlags are the flags of the meta role's background work, shared
// by `tessera meta` and `tessera up`.
type metaRoleFlags struct {
	downAfter, interval, gcEvery, gcGrace, reclaimAfter *time.Duration
	rate                                                *int64
	maintEvery, retain                                  *time.Duration
	defragFree                                          *int64
}

func addMetaRoleFlags(fs *flag.FlagSet) metaRoleFlags {
	return metaRoleFlags{
		downAfter: fs.Duration("down-after", meta.DefaultDownAfter, "mark a block server down after this long without a heartbeat"),
		interval:  fs.Duration("mover-interval", mover.DefaultInterval, "time between the mover's repair and rebalance rounds"),
		rate:      fs.Int64("mover-rate", mover.DefaultRate, "bytes per second the mover copies at most (negative: unlimited)"),
		gcEvery:   fs.Duration("gc-interval", up.DefaultGCInterval, "time between collections of blocks no file refers to (0: none; tessera gc still collects)"),
		gcGrace:   fs.Duration("gc-grace", up.DefaultGCGrace, "the background collection keeps unreferenced blocks younger than this (uploads not yet committed; clients re-mark uploads older than 1s before committing them, so keep it well above that)"),
		reclaimAfter: fs.Duration("reclaim-after", reclaim.DefaultAfter, "remove a block from the block servers this long after the last file naming it let go "+
			"(covers readers of the previous content; 0: never, leaving it to the collection every --gc-interval)"),
		maintEvery: fs.Duration("store-maintain-every", up.DefaultStoreMaintainEvery, "time between compactions and defragmentations of an etcd meta store by the elected meta (0: none)"),
		retain:     fs.Duration("store-retain", up.DefaultStoreRetain, "history of an etcd meta store kept by its compactions"),
		defragFree: fs.Int64("store-defrag-free", up.DefaultStoreDefragFree, "defragment an etcd member (one at a time) once this many bytes of its file are free"),
	}
}

// config checks the flags and returns the role's configuration.
func (f metaRoleFlags) config() (up.MetaRole, error) {
	if *f.downAfter <= 0 || *f.interval <= 0 || *f.rate == 0 {
		return up.MetaRole{}, fmt.Errorf("%w: --down-after and --mover-interval must be positive, --mover-rate not 0", errUsage)
	}
	if *f.reclaimAfter < 0 {
		return up.MetaRole{}, fmt.Errorf("%w: --reclaim-after must not be negative (0 turns the reclaimer off)", errUsage)
	}
	if *f.gcEvery < 0 || *f.gcGrace <= 0 {
		return up.MetaRole{}, fmt.Errorf("%w: --gc-interval must not be negative and --gc-grace must be positive "+
			"(a collection keeping nothing young would remove blocks uploaded but not yet committed)", errUsage)
	}
	rc := up.MetaRole{DownAfter: *f.downAfter, MoverInterval: *f.interval, MoverRate: *f.rate, GCInterval: *f.gcEvery, GCGrace: *f.gcGrace}
	if *f.gcEvery == 0 {
		rc.GCInterval = -1 // off
	}
	if *f.maintEvery < 0 || *f.retain <= 0 || *f.defragFree <= 0 {
		return up.MetaRole{}, fmt.Errorf("%w: --store-maintain-every must not be negative, --store-retain and --store-defrag-free must be positive", errUsage)
	}
	rc.StoreMaintainEvery, rc.StoreRetain, rc.StoreDefragFree = *f.maintEvery, *f.retain, *f.defragFree
	if *f.maintEvery == 0 {
		rc.StoreMaintainEvery = -1 // off
	}
	rc.ReclaimAfter = *f.reclaimAfter
	if rc.ReclaimAfter == 0 {
		rc.ReclaimAfter = -1 // off
	}
	return rc, nil
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
