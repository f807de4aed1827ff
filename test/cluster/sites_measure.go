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

// Proc names one process of the sites (for per-process CPU samples).
type Proc struct {
	Site int    // index of its site
	Name string // e.g. "etcd", "meta", "blockd siteA-b0", "mount siteA-m0"
	PID  int
}

// Procs lists the sites' running processes: per site its etcd member,
// meta, block servers and mounts. The WAN links run in the caller's own
// process (internal/wan), not in any of these.
func (s *Sites) Procs() []Proc {
	var out []Proc
	for i, m := range s.etcd {
		if m.cmd != nil && m.cmd.Process != nil && !m.stopped {
			out = append(out, Proc{i, "etcd", m.cmd.Process.Pid})
		}
	}
	add := func(i int, ds ...*Daemon) {
		for _, d := range ds {
			if pid := d.PID(); pid > 0 && d.Running() {
				out = append(out, Proc{i, d.Name(), pid})
			}
		}
	}
	for i, d := range s.metas {
		add(i, d)
	}
	for i, ds := range s.servers {
		add(i, ds...)
	}
	for i := range s.mounts {
		add(i, s.Mounts(i)...)
	}
	return out
}

// BlockBytesTo sums the bytes site from sent up its links into site to's
// block servers (e.g. the copies a writer at from uploaded to to).
func (s *Sites) BlockBytesTo(from, to int) int64 {
	addrs := map[string]bool{}
	for _, d := range s.Servers(to) {
		addrs[d.Addr()] = true
	}
	var n int64
	for _, l := range s.mesh.Links(from, to) {
		if addrs[l.Upstream()] {
			n += l.BytesUp()
		}
	}
	return n
}

// LinkBytes returns, per pair of sites, the bytes that crossed the links
// site from dialed into site to so far, both directions summed
// ([from][to]; block servers and metas; etcd peers: EtcdPeerBytes).
func (s *Sites) LinkBytes() [][]int64 {
	n := len(s.opts.Sites)
	out := make([][]int64, n)
	for from := range n {
		out[from] = make([]int64, n)
		for to := range n {
			for _, l := range s.mesh.Links(from, to) {
				out[from][to] += l.BytesUp() + l.BytesDown()
			}
		}
	}
	return out
}

// EtcdPeerBytes returns the bytes that crossed the link in front of site
// i's etcd member's peer port so far (both directions: Raft traffic the
// other members sent it and its answers).
func (s *Sites) EtcdPeerBytes(i int) int64 {
	if l := s.etcd[i].peer; l != nil {
		return l.BytesUp() + l.BytesDown()
	}
	return 0
}
