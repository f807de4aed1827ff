package main

import (
	"bufio"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"tessera/test/cluster"
)

// -ops (a diagnostic): the mounts and metas serve /metrics, and each plain
// read is followed by a comment line with what its reading mount and its
// site's meta service did meanwhile, per operation: calls and total time,
// from the histograms' _count and _sum (FUSE requests at the mount, the
// mount's meta calls, the meta service's calls served).

// opSeries are the histograms an -ops line reads, with the prefix it
// prints before their op names.
var opSeries = []struct{ name, short string }{
	{"tessera_fuse_request_duration_seconds", "fuse."},
	{"tessera_client_meta_request_duration_seconds", "call."},
	{"tessera_meta_request_duration_seconds", "meta."},
}

// opTotals maps "fuse.read" and the like to [count, seconds].
type opTotals map[string][2]float64

// scrapeOps reads the op histograms of the daemons' /metrics (a daemon
// started without --metrics adds nothing).
func scrapeOps(ds ...*cluster.Daemon) opTotals {
	out := opTotals{}
	for _, d := range ds {
		addr := d.Field("metrics")
		if addr == "" {
			continue
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			for _, s := range opSeries {
				rest, ok := strings.CutPrefix(line, s.name)
				if !ok {
					continue
				}
				field := -1
				switch {
				case strings.HasPrefix(rest, "_count{"):
					field = 0
				case strings.HasPrefix(rest, "_sum{"):
					field = 1
				}
				op := labelOf(rest, "op")
				sp := strings.LastIndexByte(rest, ' ')
				if field < 0 || op == "" || sp < 0 {
					continue
				}
				v, err := strconv.ParseFloat(rest[sp+1:], 64)
				if err != nil {
					continue
				}
				k := s.short + op
				t := out[k]
				t[field] += v
				out[k] = t
			}
		}
		resp.Body.Close()
	}
	return out
}

// labelOf returns the value of label in a series' {…} part.
func labelOf(series, label string) string {
	_, rest, ok := strings.Cut(series, label+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// printOps prints the growth from a to b: op=calls/ms.
func printOps(what string, a, b opTotals) {
	var parts []string
	for k, v := range b {
		n, sec := v[0]-a[k][0], v[1]-a[k][1]
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d/%.2fms", k, int(n), sec*1e3))
		}
	}
	sort.Strings(parts)
	fmt.Printf("# ops %s: %s\n", what, strings.Join(parts, " "))
}
