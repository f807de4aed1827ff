package wan

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// CutMode says how a cut Link behaves; see the package comment.
type CutMode int

const (
	// Refuse closes every open connection and refuses new dials.
	Refuse CutMode = iota + 1
	// Blackhole stalls every connection, open or new, until Heal.
	Blackhole
)

// String names the mode as the package comment does.
func (m CutMode) String() string {
	switch m {
	case Refuse:
		return "refuse"
	case Blackhole:
		return "blackhole"
	}
	return fmt.Sprintf("CutMode(%d)", int(m))
}

// LinkOptions describe a Link.
type LinkOptions struct {
	// Listen is the address the Link listens on; it must be on
	// 127.0.0.0/8. Empty: 127.0.0.1:0 (a free port).
	Listen string
	// Latency is added to every byte's trip in each direction (one way: a
	// round trip pays twice it).
	Latency time.Duration
	// Rate caps each direction at this many bytes per second, shared by all
	// connections; 0 is no cap.
	Rate int64
	// FlowRate caps each connection, in each direction, at this many
	// bytes per second on top of Rate; 0 is no such cap. It stands for
	// what one TCP flow gets over a long path whatever the pipe's size
	// (a window or loss bound: toxiproxy's own bandwidth toxic caps each
	// connection so): parallel connections together get more than one.
	FlowRate int64
	// Name labels the Link in errors; empty: the upstream address.
	Name string
}

// Link is an emulated WAN link from Addr to an upstream address.
type Link struct {
	name     string
	upstream string
	gate     *gate
	up, down *direction
	proxy    *toxiproxy.Proxy

	mu      sync.Mutex
	refused bool // the proxy is stopped by Cut(Refuse)
	closed  bool
}

// ErrClosed is returned by the methods of a closed Link.
var ErrClosed = errors.New("wan: link closed")

// NewLink starts a Link to upstream and returns once it listens.
func NewLink(upstream string, o LinkOptions) (*Link, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if err := checkLoopback(o.Listen); err != nil {
		return nil, fmt.Errorf("wan: link to %s: %w", upstream, err)
	}
	if o.Latency < 0 || o.Rate < 0 || o.FlowRate < 0 {
		return nil, fmt.Errorf("wan: link to %s: negative latency %v, rate %d or flow rate %d", upstream, o.Latency, o.Rate, o.FlowRate)
	}
	if o.Latency%time.Millisecond != 0 {
		return nil, fmt.Errorf("wan: link to %s: latency %v is not a whole number of milliseconds", upstream, o.Latency)
	}
	if o.Name == "" {
		o.Name = upstream
	}
	g := newGate()
	l := &Link{
		name:     o.Name,
		upstream: upstream,
		gate:     g,
		up:       &direction{gate: g},
		down:     &direction{gate: g},
	}
	for _, d := range []*direction{l.up, l.down} {
		d.rate.Store(o.Rate)
		d.flowRate.Store(o.FlowRate)
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	l.proxy = toxiproxy.NewProxy(server, o.Name, o.Listen, upstream)
	for _, s := range []struct {
		stream string
		dir    *direction
	}{{"upstream", l.up}, {"downstream", l.down}} {
		w, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
			`{"name":"shape_%s","type":%q,"stream":%q}`, s.stream, shapeType, s.stream)))
		if err != nil {
			return nil, fmt.Errorf("wan: link to %s: shaping toxic: %w", upstream, err)
		}
		w.Toxic.(*shapeToxic).dir = s.dir
		// The latency toxic comes after the shaper, so that it counts from
		// the moment a chunk leaves the cap's queue.
		_, err = l.proxy.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
			`{"name":"latency_%s","type":"latency","stream":%q,"attributes":{"latency":%d,"jitter":0}}`,
			s.stream, s.stream, o.Latency.Milliseconds())))
		if err != nil {
			return nil, fmt.Errorf("wan: link to %s: latency toxic: %w", upstream, err)
		}
	}
	if err := l.proxy.Start(); err != nil {
		return nil, fmt.Errorf("wan: link to %s: listen on %s: %w", upstream, o.Listen, err)
	}
	return l, nil
}

// Addr is the address to dial to reach the upstream through the Link.
func (l *Link) Addr() string {
	l.proxy.Lock()
	defer l.proxy.Unlock()
	return l.proxy.Listen
}

// Upstream is the address the Link leads to.
func (l *Link) Upstream() string { return l.upstream }

// BytesUp is the number of bytes that crossed from dialers to the upstream.
func (l *Link) BytesUp() int64 { return l.up.bytes.Load() }

// BytesDown is the number of bytes that crossed from the upstream to dialers.
func (l *Link) BytesDown() int64 { return l.down.bytes.Load() }

// SetRate changes the cap of both directions (bytes per second, 0: none)
// from the next chunk on.
func (l *Link) SetRate(rate int64) {
	if rate < 0 {
		rate = 0
	}
	l.up.rate.Store(rate)
	l.down.rate.Store(rate)
}

// Cut starts an outage of the given mode; Cut of both modes (one after the
// other) both refuses and stalls. It is a no-op on a Link already cut so.
func (l *Link) Cut(mode CutMode) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	switch mode {
	case Refuse:
		if !l.refused {
			l.proxy.Stop()
			l.refused = true
		}
	case Blackhole:
		l.gate.shut()
	default:
		return fmt.Errorf("wan: link %s: cut: unknown mode %v", l.name, mode)
	}
	return nil
}

// Heal ends every outage: stalled bytes move on, and the Link listens again
// on its address if it was refusing.
func (l *Link) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.gate.open()
	if l.refused {
		if err := l.proxy.Start(); err != nil {
			return fmt.Errorf("wan: link %s: heal: listen again on %s: %w", l.name, l.proxy.Listen, err)
		}
		l.refused = false
	}
	return nil
}

// IsCut reports whether the Link is in an outage.
func (l *Link) IsCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused || l.gate.isShut()
}

// Close stops the Link: its listener and every connection through it.
func (l *Link) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.gate.closed)
	l.proxy.Stop()
	return nil
}

// checkLoopback refuses a listen address off 127.0.0.0/8: the emulation is
// for one machine and must not open ports to the network.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return fmt.Errorf("listen address %q is not on 127.0.0.0/8", addr)
	}
	return nil
}
