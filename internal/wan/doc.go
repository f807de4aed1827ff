// Package wan emulates wide-area links between sites on one machine, for tests
// and benchmarks of what Tessera does across a WAN (issues 13 and 14).
//
// A Link is a TCP proxy, run in-process on toxiproxy used as a library (no
// separate server process, no HTTP API), from a listen address on 127.0.0.0/8
// to an upstream address. Whoever dials the Link's Addr reaches the upstream
// through it, and every byte in either direction pays:
//
//   - a one-way latency (LinkOptions.Latency): a request and its reply see
//     twice it, the round-trip time; there is no jitter, so a test can bound
//     an exchange from below;
//   - a bandwidth cap (LinkOptions.Rate, bytes per second) per direction,
//     shared by every connection through the Link, as on one physical link:
//     three parallel streams together get the cap, not three times it. Time
//     spent queued for the cap and the latency add up, as serialization and
//     propagation delay do. The cap's schedule may lag the present by up to
//     10 ms (catchUp), so that a sleeper woken late by a busy machine makes
//     up the time it lost: a lone connection gets the whole cap, not half of
//     it. The price is a burst of at most 10 ms of the rate, after an idle
//     spell or a late wake-up;
//   - optionally, a cap per connection as well (LinkOptions.FlowRate): what
//     one TCP flow gets over a long path whatever the pipe's size, bounded
//     by its window or by loss; toxiproxy's own bandwidth toxic caps each
//     connection so. Parallel connections then together get more than one
//     (up to Rate), which is why parallel transfers pay on real WANs;
//   - an outage, Cut(mode) until Heal(). Two kinds, because real partitions
//     come in both:
//     Refuse (a router that answers: ICMP unreachable, a reset): every open
//     connection through the Link is closed at once (its peers see EOF or a
//     reset) and new dials are refused (ECONNREFUSED): the listener is closed
//     until Heal, which listens again on the same address.
//     Blackhole (a cable cut, packets dropped silently): open connections
//     stall, nothing passes either way, and nothing is dropped either: what
//     was sent waits and is delivered after Heal, as TCP retransmission
//     would. New dials still complete at the TCP level (the kernel accepts
//     them), but no byte passes, so a TLS or gRPC handshake hangs until its
//     own timeout, as a dial into a silent partition does.
//
// Counters: BytesUp (dialer to upstream) and BytesDown (upstream to dialer)
// count the bytes that crossed the Link, after the cap and the gate.
//
// A Mesh builds the links between N sites from a matrix of round-trip times
// (issue 13: three sites at 60, 60 and 120 ms): Expose a service of site j
// and get, for every site i, the address through which i reaches it (j
// itself gets the service's own address: no WAN inside a site). Partition a
// site to cut every link into and out of it.
//
// What callers can rely on: a Link never adds less than its latency to a
// byte's trip and never passes bytes faster than its cap on average: over
// any window W, at most Rate × (W + 10 ms) bytes, plus a chunk (toxiproxy
// reads up to 32 KiB at a time) per connection; while cut it passes nothing. It promises no upper bound on delay: on a busy
// machine everything is slower, which is why the tests bound speed from
// above and delay from below only.
//
// Concurrency: every method of Link and Mesh is safe for concurrent use.
// Close stops the listener and every connection; the goroutines toxiproxy
// runs per connection end with their connections.
package wan
