package cluster

import "time"

// RTT returns the round-trip time between sites i and j.
func (s *Sites) RTT(i, j int) time.Duration { return s.opts.RTT[i][j] }

// BlockBytesFrom sums the bytes that came down the links from site from
// into every other site's block servers: what site from fetched across the
// WAN from block servers (a nearby read adds nothing).
func (s *Sites) BlockBytesFrom(from int) int64 {
	var n int64
	for to := range s.opts.Sites {
		if to == from {
			continue
		}
		addrs := map[string]bool{}
		for _, d := range s.Servers(to) {
			addrs[d.Addr()] = true
		}
		for _, l := range s.mesh.Links(from, to) {
			if addrs[l.Upstream()] {
				n += l.BytesDown()
			}
		}
	}
	return n
}

// Missing counts the hashes (hex, as BlockFiles names them) of which none
// of site's block servers holds a file (-1 when one cannot be listed).
func (s *Sites) Missing(site int, hashes []string) int {
	have := map[string]bool{}
	for _, d := range s.Servers(site) {
		fs, err := d.BlockFiles()
		if err != nil {
			return -1
		}
		for h := range fs {
			have[h] = true
		}
	}
	n := 0
	for _, h := range hashes {
		if !have[h] {
			n++
		}
	}
	return n
}
