package main

import (
	"flag"
	"fmt"

	blockserver "tessera/internal/block/server"
)

// limitFlags are a block server's resource bounds, on `tessera blockd` and
// `tessera up`: the ones a machine's size or a cluster's shape may call to
// change. The timeouts keep their defaults (blockserver.DefaultLimits).
type limitFlags struct {
	conns, connsPerIP       *int
	inFlight, inFlightPerIP *int64
}

func addLimitFlags(fs *flag.FlagSet) limitFlags {
	d := blockserver.DefaultLimits()
	return limitFlags{
		conns: fs.Int("max-conns", d.MaxConns,
			"block server: most connections open at once; more are answered 503 and closed"),
		connsPerIP: fs.Int("max-conns-per-ip", d.MaxConnsPerIP,
			"block server: most connections open at once from one peer address"),
		inFlight: fs.Int64("max-inflight", d.MaxInFlight,
			"block server: most request-body bytes held in memory at once; requests beyond it wait (a minute at most, then 503)"),
		inFlightPerIP: fs.Int64("max-inflight-per-ip", d.MaxInFlightPerIP,
			"block server: most request-body bytes held at once for one peer address (at least the maximum block size)"),
	}
}

// limits returns the flags as blockserver.Limits, refusing values that
// cannot work.
func (f limitFlags) limits() (blockserver.Limits, error) {
	switch {
	case *f.conns < 1 || *f.connsPerIP < 1:
		return blockserver.Limits{}, fmt.Errorf("%w: --max-conns %d and --max-conns-per-ip %d must be at least 1", errUsage, *f.conns, *f.connsPerIP)
	case *f.connsPerIP > *f.conns:
		return blockserver.Limits{}, fmt.Errorf("%w: --max-conns-per-ip %d exceeds --max-conns %d", errUsage, *f.connsPerIP, *f.conns)
	case *f.inFlightPerIP < blockserver.DefaultMaxBlockSize:
		return blockserver.Limits{}, fmt.Errorf("%w: --max-inflight-per-ip %d: want at least the maximum block size, %d", errUsage, *f.inFlightPerIP, blockserver.DefaultMaxBlockSize)
	case *f.inFlightPerIP > *f.inFlight:
		return blockserver.Limits{}, fmt.Errorf("%w: --max-inflight-per-ip %d exceeds --max-inflight %d", errUsage, *f.inFlightPerIP, *f.inFlight)
	}
	l := blockserver.DefaultLimits()
	l.MaxConns, l.MaxConnsPerIP = *f.conns, *f.connsPerIP
	l.MaxInFlight, l.MaxInFlightPerIP = *f.inFlight, *f.inFlightPerIP
	return l, nil
}
