// Package metrics exports what Tessera's roles count as Prometheus series
// (issue 12 item 5; docs/metrics.md lists every series).
//
// Ownership. Each role process makes one registry (NewRegistry) and passes it
// in through its configuration (up.MetaConfig.Metrics,
// up.BlockServerConfig.Metrics, up.MountConfig.Metrics, up.Config.Metrics);
// nothing here registers with Prometheus's global default registry, so two
// roles in one process (tessera up) or two tests never share a series by
// accident. Listen serves a registry over HTTP at /metrics; the caller may add
// other handlers to Server.Mux (the status page goes at "/").
//
// How series are made. Where the code already counts (client.Stats, the
// meta service's leases, the mover's progress, the scrub's progress, a
// store's usage) a collector reads those counters at scrape time: nothing
// is counted twice and the hot paths stay as they were. Where nothing
// counted, a decorator counts: MetaAPI wraps a meta.API (per-operation
// counts, results and latencies), FUSE wraps the raw file system the
// kernel talks to (per-operation counts and latencies, bytes, requests in
// flight), BlockHTTP wraps a block server's HTTP handler (requests by
// route and status class, bytes in and out).
//
// Labels are bounded: op is a method or FUSE opcode name from a fixed set,
// route a pattern of the block server's route table, code a status class,
// result one of a handful of error classes (resultOf), class a block
// server's error class (its Tessera-Error header), tier a cache tier,
// state a server state, server a block server's id. No label carries a
// path, an inode or a hash.
//
// Names: tessera_<role>_<what>_<unit>, counters ending in _total, durations
// in seconds, sizes in bytes (the Prometheus conventions).
package metrics
