package main

import (
	"flag"
	"fmt"
	"time"

	"tessera/internal/meta"
	"tessera/internal/mover"
	"tessera/internal/up"
)

// metaRoleFlags are the flags of the meta role's background work, shared
// by `tessera meta` and `tessera up`.
type metaRoleFlags struct {
	downAfter, interval *time.Duration
	rate                *int64
}

func addMetaRoleFlags(fs *flag.FlagSet) metaRoleFlags {
	return metaRoleFlags{
		downAfter: fs.Duration("down-after", meta.DefaultDownAfter, "mark a block server down after this long without a heartbeat"),
		interval:  fs.Duration("mover-interval", mover.DefaultInterval, "time between the mover's repair and rebalance rounds"),
		rate:      fs.Int64("mover-rate", mover.DefaultRate, "bytes per second the mover copies at most (negative: unlimited)"),
	}
}

// config checks the flags and returns the role's configuration.
func (f metaRoleFlags) config() (up.MetaRole, error) {
	if *f.downAfter <= 0 || *f.interval <= 0 || *f.rate == 0 {
		return up.MetaRole{}, fmt.Errorf("%w: --down-after and --mover-interval must be positive, --mover-rate not 0", errUsage)
	}
	return up.MetaRole{DownAfter: *f.downAfter, MoverInterval: *f.interval, MoverRate: *f.rate}, nil
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
