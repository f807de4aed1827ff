package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	blockserver "tessera/internal/block/server"
	"tessera/internal/client"
	"tessera/internal/meta/metarpc"
	"tessera/internal/nfs"
	"tessera/internal/s3"
	"tessera/internal/up"
	"tessera/internal/vfs"
)

// upFixedBytes is what tessera up holds besides its bounded parts: the Go
// runtime, the KV engine's memtables (pebble's defaults), the
// FUSE request buffers, goroutine stacks, the meta service's leases
// (meta.DefaultMaxLeases a session, the mount's one) and the code.
const upFixedBytes = 96 << 20

// memPart is one bounded part of a process's memory.
type memPart struct {
	name  string
	bytes int64
}

// upMemParts are the parts of tessera up's memory and their bounds: the
// mount's (client.MemoryParts), every block server's request bodies in
// flight, the meta service's request bytes of one peer address (up's
// mount; each other address that calls adds as much), the meta store's
// block cache, and the rest.
func upMemParts(mem client.Config, servers int, block blockserver.Limits, metaLim metarpc.PeerLimits) []memPart {
	var out []memPart
	for _, p := range client.MemoryParts(mem) {
		out = append(out, memPart{"mount: " + p.Name, p.Bytes})
	}
	block = block.WithDefaults(blockserver.DefaultMaxBlockSize)
	out = append(out,
		memPart{fmt.Sprintf("block servers: request bodies in flight (%d x --max-inflight)", servers), int64(servers) * block.MaxInFlight},
		memPart{"meta service: requests of one peer address (--meta-max-inflight-per-ip)", metaLim.InFlight},
		memPart{"meta service: KV block cache", up.MetaCacheBytes},
		memPart{"runtime, KV engine memtables, FUSE buffers, leases", upFixedBytes},
	)
	return out
}

// nfsMemParts are the parts of an NFS server's memory (tessera nfs, or
// the one tessera up --nfs runs): its client's and the calls in flight.
func nfsMemParts(mem client.Config, prefix string) []memPart {
	var out []memPart
	for _, p := range client.MemoryParts(mem) {
		out = append(out, memPart{prefix + p.Name, p.Bytes})
	}
	return append(out, memPart{prefix + "calls in flight, all connections", nfs.DefaultInFlight},
		memPart{prefix + "attribute cache", vfs.AttrCacheBytes})
}

// s3MemParts are the parts of an S3 endpoint's memory: its client's and
// the buffers of the requests in flight.
func s3MemParts(mem client.Config, prefix string) []memPart {
	var out []memPart
	for _, p := range client.MemoryParts(mem) {
		out = append(out, memPart{prefix + p.Name, p.Bytes})
	}
	return append(out, memPart{prefix + "request buffers in flight", s3.RequestBufferBytes})
}

// roleFixedBytes is what a single role's process holds besides its bounded
// parts: the Go runtime, goroutine stacks, buffers and code.
const roleFixedBytes = 48 << 20

// mountMemParts are the parts of tessera mount's memory.
func mountMemParts(mem client.Config) []memPart {
	var out []memPart
	for _, p := range client.MemoryParts(mem) {
		out = append(out, memPart{p.Name, p.Bytes})
	}
	return append(out, memPart{"runtime, FUSE buffers, per-inode state", roleFixedBytes})
}

// blockdMemParts are the parts of tessera blockd's memory.
func blockdMemParts(block blockserver.Limits) []memPart {
	block = block.WithDefaults(blockserver.DefaultMaxBlockSize)
	return []memPart{
		{"request bodies in flight (--max-inflight)", block.MaxInFlight},
		{"runtime, connections' buffers", roleFixedBytes},
	}
}

// helpMem prints parts after a role's flags when err asked for help.
func helpMem(err error, parts func() []memPart) error {
	if errors.Is(err, flag.ErrHelp) {
		writeMemBound(os.Stdout, parts())
	}
	return err
}

// memTotal sums parts.
func memTotal(parts []memPart) int64 {
	var n int64
	for _, p := range parts {
		n += p.bytes
	}
	return n
}

// writeMemBound writes the parts and their sum, for -h and the log.
func writeMemBound(w io.Writer, parts []memPart) {
	fmt.Fprintf(w, "\nMemory: the process stays within the sum of its parts' bounds (with these flags, on this machine):\n")
	for _, p := range parts {
		fmt.Fprintf(w, "  %-72s %6d MiB\n", p.name, p.bytes>>20)
	}
	fmt.Fprintf(w, "  %-72s %6d MiB\n", "total (also the Go runtime's soft memory limit)", memTotal(parts)>>20)
}

// memBoundLine is the parts in one line, for the log.
func memBoundLine(parts []memPart) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d MiB", p.name, p.bytes>>20)
	}
	return b.String()
}

// limitMemory makes total the Go runtime's soft memory limit: past it the
// collector runs harder, so garbage (a copy per small write, fetch buffers
// replaced) does not carry the heap past the stated bound. It is soft: live
// data beyond it is not an error, only more collections.
func limitMemory(total int64) {
	if total > 0 {
		debug.SetMemoryLimit(total)
	}
}

// upGCPercent is tessera up's GC target (GOGC; the other commands run at
// main's 50). Its heap is mostly block buffers, which hold no pointers and
// cost the collector almost nothing to mark, and it allocates fast (a
// private copy per partial write of a block, fetch buffers): fsx allocated
// 12 GB in 36 s. The heap's growth between collections was a third of
// up's peak there; at 25 the collector ran 1.1% -> 2-3% of the process's
// CPU (docs/design/2026-11-29-fsx-memory.md). Where its live heap is
// small (a metadata phase: stat, create of small files), the heap may
// still grow by upGCFloor between collections (memtrim.GrowthFloor): at
// 25 alone a stat's collector cost doubled against GOGC 50
// (docs/design/2026-11-29-gc-growth-floor.md).
const upGCPercent = 25

// upGCFloor is the least growth of tessera up's heap between collections.
const upGCFloor = 16 << 20

// upInFlight is tessera up's default of --max-inflight and
// --max-inflight-per-ip: its block servers share one host and mostly its
// own mount, whose dirty budget bounds what it sends, so each holds at
// most one largest block's worth of request bodies (256 MiB each, as a
// dedicated server's, put three of them at 768 MiB of the bound).
const upInFlight = blockserver.DefaultMaxBlockSize

// setUpInFlight makes upInFlight the default of up's in-flight flags
// (the flags are shared with tessera blockd, whose defaults stay).
func setUpInFlight(fs *flag.FlagSet) {
	for _, name := range []string{"max-inflight", "max-inflight-per-ip"} {
		f := fs.Lookup(name)
		v := strconv.FormatInt(upInFlight, 10)
		if err := f.Value.Set(v); err != nil {
			panic(err) // a constant the flag refuses: a bug here
		}
		f.DefValue = v
	}
}
