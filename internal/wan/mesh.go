package wan

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// MeshOptions describe the WAN between N sites.
type MeshOptions struct {
	// RTT[i][j] is the round-trip time between sites i and j; it must be
	// square, symmetric, with a zero diagonal. Each link gets half of it as
	// its one-way latency.
	RTT [][]time.Duration
	// Rate caps each direction of every link (bytes per second; 0: none).
	Rate int64
}

// Mesh is the set of Links between sites: for each service a site
// exposes, one Link from every other site to it.
type Mesh struct {
	rtt  [][]time.Duration
	rate int64

	mu     sync.Mutex
	links  map[[2]int][]*Link // [from, to] -> the links from site from into site to
	cut    map[int]CutMode    // partitioned sites
	closed bool
}

// NewMesh checks the matrix and returns a Mesh without links yet.
func NewMesh(o MeshOptions) (*Mesh, error) {
	n := len(o.RTT)
	if n < 2 {
		return nil, fmt.Errorf("wan: mesh of %d sites: need at least 2", n)
	}
	for i := range o.RTT {
		if len(o.RTT[i]) != n {
			return nil, fmt.Errorf("wan: mesh: RTT row %d has %d entries, want %d", i, len(o.RTT[i]), n)
		}
		if o.RTT[i][i] != 0 {
			return nil, fmt.Errorf("wan: mesh: RTT[%d][%d] is %v, want 0", i, i, o.RTT[i][i])
		}
		for j := range o.RTT[i] {
			if o.RTT[i][j] != o.RTT[j][i] || o.RTT[i][j] < 0 {
				return nil, fmt.Errorf("wan: mesh: RTT[%d][%d]=%v and RTT[%d][%d]=%v: want equal and not negative",
					i, j, o.RTT[i][j], j, i, o.RTT[j][i])
			}
		}
	}
	return &Mesh{rtt: o.RTT, rate: o.Rate, links: map[[2]int][]*Link{}, cut: map[int]CutMode{}}, nil
}

// Sites is the number of sites.
func (m *Mesh) Sites() int { return len(m.rtt) }

// Expose makes the service at upstream, which runs in site, reachable from
// every other site through a Link of their pair. addrs[i] is the address
// site i dials; addrs[site] is upstream itself. The Link from site i
// listens on 127.0.0.(10+i), so that a log line's address says which site
// dialed. A site partitioned at the time gets its links cut as well.
func (m *Mesh) Expose(site int, upstream string) (addrs []string, err error) {
	if site < 0 || site >= len(m.rtt) {
		return nil, fmt.Errorf("wan: mesh: expose %s: site %d out of range [0,%d)", upstream, site, len(m.rtt))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	addrs = make([]string, len(m.rtt))
	type made1 struct {
		from int
		l    *Link
	}
	var made []made1
	for i := range m.rtt {
		if i == site {
			addrs[i] = upstream
			continue
		}
		l, err := NewLink(upstream, LinkOptions{
			Listen:  fmt.Sprintf("127.0.0.%d:0", 10+i),
			Latency: m.rtt[i][site] / 2,
			Rate:    m.rate,
			Name:    fmt.Sprintf("site%d->site%d:%s", i, site, upstream),
		})
		if err != nil {
			for _, x := range made {
				x.l.Close()
			}
			return nil, err
		}
		made = append(made, made1{i, l})
		addrs[i] = l.Addr()
	}
	for _, x := range made {
		from, l := x.from, x.l
		m.links[[2]int{from, site}] = append(m.links[[2]int{from, site}], l)
		for _, p := range []int{from, site} {
			if mode, ok := m.cut[p]; ok {
				if err := l.Cut(mode); err != nil {
					return nil, err
				}
			}
		}
	}
	return addrs, nil
}

// Links returns the links from site from into site to, one per exposed
// service of to.
func (m *Mesh) Links(from, to int) []*Link {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Link(nil), m.links[[2]int{from, to}]...)
}

// Partition cuts every link into and out of site, in the given mode.
func (m *Mesh) Partition(site int, mode CutMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.cut[site] = mode
	var errs []error
	for k, ls := range m.links {
		if k[0] != site && k[1] != site {
			continue
		}
		for _, l := range ls {
			errs = append(errs, l.Cut(mode))
		}
	}
	return errors.Join(errs...)
}

// Heal ends site's partition; links that also touch another partitioned
// site stay cut.
func (m *Mesh) Heal(site int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	delete(m.cut, site)
	var errs []error
	for k, ls := range m.links {
		if k[0] != site && k[1] != site {
			continue
		}
		other := k[0]
		if other == site {
			other = k[1]
		}
		if _, ok := m.cut[other]; ok {
			continue
		}
		for _, l := range ls {
			errs = append(errs, l.Heal())
		}
	}
	return errors.Join(errs...)
}

// Close closes every link.
func (m *Mesh) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, ls := range m.links {
		for _, l := range ls {
			l.Close()
		}
	}
	m.links = map[[2]int][]*Link{}
	return nil
}
