package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	blockserver "tessera/internal/block/server"
	"tessera/internal/meta/metarpc"
)

func parseLimits(args ...string) (blockserver.Limits, error) {
	fs := flag.NewFlagSet("blockd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lf := addLimitFlags(fs)
	if err := parse(fs, args); err != nil {
		return blockserver.Limits{}, err
	}
	return lf.limits()
}

// TestLimitFlags: the defaults are blockserver.DefaultLimits, explicit
// values win, and caps that cannot work are refused naming the flag.
func TestLimitFlags(t *testing.T) {
	l, err := parseLimits()
	if err != nil || l != blockserver.DefaultLimits() {
		t.Fatalf("defaults: %+v, %v", l, err)
	}
	l, err = parseLimits("--max-conns", "10", "--max-conns-per-ip", "5", "--max-inflight", "1073741824", "--max-inflight-per-ip", "134217728")
	if err != nil || l.MaxConns != 10 || l.MaxConnsPerIP != 5 || l.MaxInFlight != 1<<30 || l.MaxInFlightPerIP != 128<<20 {
		t.Fatalf("explicit: %+v, %v", l, err)
	}
	for _, args := range [][]string{
		{"--max-conns", "0"},
		{"--max-conns-per-ip", "2000"},
		{"--max-inflight-per-ip", "1048576"},
		{"--max-inflight", "67108864"},
	} {
		_, err := parseLimits(args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v; want a usage error naming %s", args, err, args[0])
		}
	}
}

func parseMetaLimits(args ...string) (metarpc.PeerLimits, error) {
	fs := flag.NewFlagSet("meta", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mlf := addMetaLimitFlags(fs)
	if err := parse(fs, args); err != nil {
		return metarpc.PeerLimits{}, err
	}
	return mlf.limits()
}

// TestMetaLimitFlags: the defaults are metarpc's, explicit values win, and
// values Serve could not work with are refused naming the flag.
func TestMetaLimitFlags(t *testing.T) {
	l, err := parseMetaLimits()
	if err != nil || l != (metarpc.PeerLimits{Calls: metarpc.DefaultMaxStreamsPerPeer, InFlight: metarpc.DefaultMaxInFlightPerPeer}) {
		t.Fatalf("defaults: %+v, %v", l, err)
	}
	l, err = parseMetaLimits("--meta-max-calls-per-ip", "4096", "--meta-max-inflight-per-ip", "268435456")
	if err != nil || l.Calls != 4096 || l.InFlight != 256<<20 {
		t.Fatalf("explicit: %+v, %v", l, err)
	}
	for _, args := range [][]string{
		{"--meta-max-calls-per-ip", "0"},
		{"--meta-max-inflight-per-ip", "16777216"},
	} {
		_, err := parseMetaLimits(args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v; want a usage error naming %s", args, err, args[0])
		}
	}
}
