// Command wanlink is one emulated WAN link as a process, for benchmark
// scripts: internal/wan's Link (toxiproxy in-process: a one-way latency
// and a rate cap per direction shared by every connection) from a listen
// address on 127.0.0.0/8 to an upstream address. bench/gateway.sh puts it
// between a caching fileset and its home.
//
//	wanlink -upstream HOST:PORT [-listen 127.0.0.1:0] [-rtt 30ms] [-rate 200Mbit] [-flow-rate 0]
//	        [-addr-file F] [-stats-file F]
//	wanlink -print-rate 200Mbit     (prints 200000000: the rate parser, for scripts)
//
// Once it listens it prints "wanlink: listening ADDR" (and writes ADDR to
// -addr-file). Every -stats-interval, on SIGUSR1 and at exit it writes
// "up_bytes down_bytes" (bytes that crossed the link each way since start)
// to -stats-file, so a script can take the bytes of one measurement as a
// difference. It runs until SIGTERM or SIGINT.
//
// The rate is in bits per second with an optional k/M/G suffix ("200Mbit",
// "200M", "1G"; "0": no cap), as links are quoted; the RTT is split in two
// equal one-way latencies.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tessera/internal/wan"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (127.0.0.0/8)")
	upstream := flag.String("upstream", "", "address the link leads to (required)")
	rtt := flag.Duration("rtt", 30*time.Millisecond, "round-trip time the link adds (an even number of milliseconds)")
	rate := flag.String("rate", "200Mbit", "cap per direction in bits/s (suffix k, M, G; 0: none)")
	flowRate := flag.String("flow-rate", "0", "cap of each connection per direction in bits/s, on top of -rate (0: none)")
	addrFile := flag.String("addr-file", "", "write the listen address here once listening")
	statsFile := flag.String("stats-file", "", "write \"up_bytes down_bytes\" here every -stats-interval, on SIGUSR1 and at exit")
	every := flag.Duration("stats-interval", time.Second, "how often to write -stats-file")
	printRate := flag.String("print-rate", "", "print this rate (as -rate takes it) in bits/s and exit")
	flag.Parse()
	if *printRate != "" {
		bps, err := parseRate(*printRate)
		if err != nil {
			fail(err)
		}
		fmt.Println(bps)
		return
	}
	if *upstream == "" {
		fail(fmt.Errorf("-upstream is required"))
	}
	bps, err := parseRate(*rate)
	if err != nil {
		fail(err)
	}
	flowBps, err := parseRate(*flowRate)
	if err != nil {
		fail(fmt.Errorf("-flow-rate: %w", err))
	}
	if *rtt%(2*time.Millisecond) != 0 {
		fail(fmt.Errorf("-rtt %v: want an even number of milliseconds (it is split into two whole one-way latencies)", *rtt))
	}
	l, err := wan.NewLink(*upstream, wan.LinkOptions{Listen: *listen, Latency: *rtt / 2, Rate: bps / 8, FlowRate: flowBps / 8, Name: "wanlink"})
	if err != nil {
		fail(err)
	}
	defer l.Close()
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(l.Addr()+"\n"), 0o644); err != nil {
			fail(fmt.Errorf("-addr-file: %w", err))
		}
	}
	writeStats := func() {
		if *statsFile == "" {
			return
		}
		// Written whole and renamed, so a reader never sees half a line.
		tmp := *statsFile + ".tmp"
		if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d\n", l.BytesUp(), l.BytesDown()), 0o644); err == nil {
			os.Rename(tmp, *statsFile)
		}
	}
	writeStats()
	fmt.Printf("wanlink: listening %s -> %s, rtt %v, rate %s (%d bytes/s per direction), flow rate %s (%d bytes/s per connection)\n",
		l.Addr(), *upstream, *rtt, *rate, bps/8, *flowRate, flowBps/8)

	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		select {
		case s := <-sig:
			writeStats()
			if s == syscall.SIGUSR1 {
				continue
			}
			fmt.Printf("wanlink: %v: up %d bytes, down %d bytes\n", s, l.BytesUp(), l.BytesDown())
			return
		case <-tick.C:
			writeStats()
		}
	}
}

// parseRate reads bits per second: a number with an optional k, M or G
// (powers of 1000) and an optional "bit" or "bps".
func parseRate(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(s, "bit"), "bps")
	mul := int64(1)
	switch {
	case strings.HasSuffix(t, "k"), strings.HasSuffix(t, "K"):
		mul, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mul, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mul, t = 1e9, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("-rate %q: want bits per second such as 200Mbit, 1G or 0", s)
	}
	return int64(v * float64(mul)), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wanlink:", err)
	os.Exit(2)
}
