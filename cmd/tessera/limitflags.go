package main

import (
	"flag"
	"fmt"

	blockserver "tessera/internal/block/server"
	"tessera/internal/meta/metarpc"
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

// metaLimitFlags are the meta service's per-peer bounds, on `tessera meta`
// and `tessera up`: a host running many mounts behind one address may need
// more. The other bounds of the meta port keep their defaults
// (docs/protocol.md).
type metaLimitFlags struct {
	calls    *int
	inFlight *int64
}

func addMetaLimitFlags(fs *flag.FlagSet) metaLimitFlags {
	return metaLimitFlags{
		calls: fs.Int("meta-max-calls-per-ip", metarpc.DefaultMaxStreamsPerPeer,
			"meta service: most calls open at once from one peer address; more are refused (RESOURCE_EXHAUSTED)"),
		inFlight: fs.Int64("meta-max-inflight-per-ip", metarpc.DefaultMaxInFlightPerPeer,
			"meta service: most request bytes held at once for one peer address; a read beyond it waits (at least twice the 16 MiB request limit)"),
	}
}

// limits returns the flags as metarpc.PeerLimits, refusing values that
// cannot work.
func (f metaLimitFlags) limits() (metarpc.PeerLimits, error) {
	switch {
	case *f.calls < 1:
		return metarpc.PeerLimits{}, fmt.Errorf("%w: --meta-max-calls-per-ip %d: want at least 1", errUsage, *f.calls)
	case *f.inFlight < 2*metarpc.DefaultMaxRecvMsg:
		return metarpc.PeerLimits{}, fmt.Errorf("%w: --meta-max-inflight-per-ip %d: want at least twice the largest request, %d", errUsage, *f.inFlight, 2*metarpc.DefaultMaxRecvMsg)
	}
	return metarpc.PeerLimits{Calls: *f.calls, InFlight: *f.inFlight}, nil
}
