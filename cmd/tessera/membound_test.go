package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	blockserver "tessera/internal/block/server"
	"tessera/internal/client"
	"tessera/internal/up"
)

// TestUpMemoryBound: tessera up's stated bound is the mount's
// (client.MemoryBound) plus every block server's in-flight bodies, the
// meta service's per-peer bytes and the fixed rest, and -h prints each
// part and the total; up's block servers default to one largest block in
// flight each.
func TestUpMemoryBound(t *testing.T) {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lf := addLimitFlags(fs)
	setUpInFlight(fs)
	mlf := addMetaLimitFlags(fs)
	if err := parse(fs, nil); err != nil {
		t.Fatal(err)
	}
	lim, err := lf.limits()
	if err != nil {
		t.Fatal(err)
	}
	if lim.MaxInFlight != blockserver.DefaultMaxBlockSize || lim.MaxInFlightPerIP != blockserver.DefaultMaxBlockSize {
		t.Fatalf("up's block servers hold %d bytes in flight (%d a peer); want %d", lim.MaxInFlight, lim.MaxInFlightPerIP, blockserver.DefaultMaxBlockSize)
	}
	mlim, err := mlf.limits()
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.Config{MemCacheBytes: 64 << 20, DirtyBytes: 32 << 20}
	parts := upMemParts(cfg, 3, lim, mlim)
	want := client.MemoryBound(cfg) + 3*lim.MaxInFlight + mlim.InFlight + up.MetaCacheBytes + upFixedBytes
	if got := memTotal(parts); got != want {
		t.Fatalf("total %d MiB; want %d MiB", got>>20, want>>20)
	}
	var b bytes.Buffer
	writeMemBound(&b, parts)
	for _, s := range []string{"mount: memory cache", "block servers", "meta service", "total"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the memory lines lack %q:\n%s", s, b.String())
		}
	}
}
