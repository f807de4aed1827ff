package main

import (
	"flag"
	"fmt"
	"time"

	"tessera/internal/meta/metawait"
)

// metaTimeoutFlag is --meta-timeout, on `tessera mount` and `tessera up`.
type metaTimeoutFlag struct{ d *time.Duration }

func addMetaTimeoutFlag(fs *flag.FlagSet) metaTimeoutFlag {
	return metaTimeoutFlag{fs.Duration("meta-timeout", metawait.DefaultTimeout,
		"how long an operation waits for an unreachable meta service before it fails with EIO, as on an NFS hard mount (0: wait forever; a killed process stops waiting)")}
}

// value returns the timeout as client.Config.MetaTimeout takes it
// (negative: forever), or a usage error for a negative flag.
func (m metaTimeoutFlag) value() (time.Duration, error) {
	switch d := *m.d; {
	case d < 0:
		return 0, fmt.Errorf("%w: --meta-timeout %v: want 0 (forever) or a positive duration", errUsage, d)
	case d == 0:
		return -1, nil
	default:
		return d, nil
	}
}
