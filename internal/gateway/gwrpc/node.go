package gwrpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"tessera/internal/auth"
	"tessera/internal/client"
	"tessera/internal/gateway"
	gwpb "tessera/internal/gateway/gwrpc/gwpb"
	"tessera/internal/gateway/writeback"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// MetaAPI is what a gateway process needs of the meta service: the
// namespace and filesets (its Ingester), the write-back queue (its
// applier) and the gateway registry (its heartbeat).
type MetaAPI interface {
	gateway.MetaAPI
	meta.WritebackAPI
	meta.GatewaysAPI
}

// NodeConfig configures a gateway process (StartNode).
type NodeConfig struct {
	Meta MetaAPI
	Data *client.Client // the data path the Ingester stores through
	// ID names the gateway in the registry: with TLS, its certificate's
	// name (the meta service binds it to that).
	ID     string
	Site   string
	Listen string // HOST:PORT of the Gateway service
	// Creds make the port TLS-only and are what the gateway presents to
	// its peers; nil: plain TCP, every caller auth.Insecure.
	Creds *auth.Credentials
	// Serve carries the port's bounds (metarpc's; zero: its defaults).
	Serve     metarpc.ServeOptions
	Heartbeat time.Duration // default meta.DefaultHeartbeat
	Ingest    gateway.Options
	// Writeback false leaves the write-back queues to other gateways.
	Writeback bool
	Logger    *slog.Logger
}

// Node is a running gateway process: see the package comment.
type Node struct {
	cfg     NodeConfig
	ln      net.Listener
	self    *gateway.Ingester
	group   atomic.Pointer[gateway.Group]
	started int64
	wbOps   atomic.Uint64
	// fallbacks counts the ranges of split fetches this gateway stored
	// itself because the peer dealt them was gone (Remote.fallback).
	fallbacks atomic.Uint64
	wb        *writeback.Host
	cancel    context.CancelFunc
	done      chan error
	loops     sync.WaitGroup

	mu    sync.Mutex
	peers map[string]*Remote // by address
	live  []meta.GatewayNode
}

// StartNode listens, registers with the meta service (the gateway is live
// when it returns), and serves until Close.
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	if cfg.Meta == nil || cfg.Data == nil || cfg.ID == "" {
		return nil, errors.New("gateway: Meta, Data and ID are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = meta.DefaultHeartbeat
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen %s: %w", cfg.Listen, err)
	}
	n := &Node{cfg: cfg, ln: ln, self: gateway.NewIngester(cfg.Meta, cfg.Data, cfg.Ingest),
		started: time.Now().UnixNano(), done: make(chan error, 1), peers: map[string]*Remote{}}
	n.group.Store(gateway.NewGroupOf([]string{cfg.ID}, []gateway.Member{n.self}, 0))
	if err := n.beat(ctx); err != nil {
		ln.Close()
		n.self.Close()
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	opts := cfg.Serve
	opts.Creds, opts.Logger = cfg.Creds, cfg.Logger
	go func() {
		n.done <- metarpc.ServeWith(ln, opts, "gateway rpc", func(gs grpc.ServiceRegistrar) {
			gwpb.RegisterGatewayServer(gs, &server{self: n.self, group: &n.group, fresh: n.refresh})
		})
	}()
	n.loops.Add(1)
	go n.heartbeat(lctx)
	if cfg.Writeback {
		a, err := writeback.New(writeback.Config{Queue: countingQueue{cfg.Meta, &n.wbOps},
			Source: writeback.ClientSource{C: cfg.Data}, Owner: cfg.ID})
		if err != nil {
			n.Close()
			return nil, err
		}
		n.wb = writeback.StartHost(a, cfg.Meta, time.Second, cfg.Logger)
	}
	return n, nil
}

// Addr is where the Gateway service listens.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// Done reports the serving loop's end (nil after Close).
func (n *Node) Done() <-chan error { return n.done }

// Fallbacks returns how many ranges of split fetches this gateway stored
// itself because the gateway they were dealt to was gone.
func (n *Node) Fallbacks() uint64 { return n.fallbacks.Load() }

// Stats are the process's Ingester's counts.
func (n *Node) Stats() gateway.Stats { return n.self.Stats() }

// Live returns the live gateways as of the last heartbeat.
func (n *Node) Live() []meta.GatewayNode {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]meta.GatewayNode(nil), n.live...)
}

// Close stops serving, heartbeating and writing back, and closes the
// peers' connections and the home stores.
func (n *Node) Close() error {
	if n.cancel != nil {
		n.cancel()
	}
	n.loops.Wait()
	if g := n.group.Load(); g != nil {
		g.Stop() // the prefetches in the background, before what they use closes
	}
	if n.wb != nil {
		n.wb.Close()
	}
	err := n.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	n.mu.Lock()
	for _, p := range n.peers {
		p.Close()
	}
	n.peers = nil
	n.mu.Unlock()
	n.self.Close()
	return err
}

func (n *Node) heartbeat(ctx context.Context) {
	defer n.loops.Done()
	tick := time.NewTicker(n.cfg.Heartbeat)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := n.beat(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && !failing:
			n.cfg.Logger.Warn("gateway heartbeat failed; retrying", "gateway", n.cfg.ID, "err", err)
			failing = true
		case err == nil && failing:
			n.cfg.Logger.Info("gateway heartbeat restored", "gateway", n.cfg.ID)
			failing = false
		}
	}
}

// beat registers once with the counters so far and takes the live list
// as the group's members.
func (n *Node) beat(ctx context.Context) error {
	st := n.self.Stats()
	g := meta.GatewayNode{ID: n.cfg.ID, Addr: n.Addr(), Site: n.cfg.Site, Started: n.started,
		Counters: meta.GatewayCounters{BytesIngested: st.BytesFetch, Fetches: st.Ranges, Listings: st.Listings, WritebackOps: n.wbOps.Load()}}
	cctx, cancel := context.WithTimeout(ctx, max(n.cfg.Heartbeat, 2*time.Second))
	defer cancel()
	live, err := n.cfg.Meta.RegisterGateway(cctx, g)
	if err != nil {
		return fmt.Errorf("gateway %s: register with meta: %w", n.cfg.ID, err)
	}
	n.setLive(live)
	return nil
}

// refresh takes the live list from the meta service now.
func (n *Node) refresh(ctx context.Context) {
	l, err := n.cfg.Meta.Gateways(ctx)
	if err != nil {
		n.cfg.Logger.Debug("gateway: listing the live gateways", "err", err)
		return
	}
	live := l[:0]
	for _, g := range l {
		if g.Live {
			live = append(live, g)
		}
	}
	n.setLive(live)
}

// setLive makes the group of the live gateways: this one's Ingester and a
// connection to each other (dialed once; a gateway that cannot be dialed
// is left out until the next heartbeat).
func (n *Node) setLive(live []meta.GatewayNode) {
	sort.Slice(live, func(i, j int) bool { return live[i].ID < live[j].ID })
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.peers == nil { // closed
		return
	}
	names := []string{n.cfg.ID}
	ms := []gateway.Member{n.self}
	keep := map[string]bool{}
	for _, g := range live {
		if g.ID == n.cfg.ID {
			continue
		}
		p := n.peers[g.Addr]
		if p == nil {
			id, addr := g.ID, g.Addr
			var err error
			if p, err = Dial(g.Addr, n.cfg.Creds); err != nil {
				n.cfg.Logger.Warn("gateway: cannot reach a peer; left out", "peer", g.ID, "addr", g.Addr, "err", err)
				continue
			}
			p.fallback = n.self
			p.fellBack = func(off, size int64, err error) {
				n.fallbacks.Add(1)
				n.cfg.Logger.Warn("gateway: a peer was gone; storing its range of a split fetch here",
					"gateway", n.cfg.ID, "peer", id, "addr", addr, "off", off, "n", size, "err", err)
			}
			n.peers[g.Addr] = p
		}
		keep[g.Addr] = true
		names, ms = append(names, g.ID), append(ms, p)
	}
	for addr, p := range n.peers {
		if !keep[addr] {
			p.Close()
			delete(n.peers, addr)
		}
	}
	n.live = live
	old := n.group.Load()
	if old != nil && slices.Equal(old.Names(), names) && n.membersSame(old, ms) {
		return // the same gateways: the group stays (a refresh per fetch)
	}
	var grp *gateway.Group
	if old != nil {
		grp = old.Regroup(names, ms) // keeps the fetches in flight shared
	} else {
		grp = gateway.NewGroupOf(names, ms, 0)
	}
	n.group.Store(grp)
}

// membersSame reports whether g's members are ms (the same connections).
func (n *Node) membersSame(g *gateway.Group, ms []gateway.Member) bool {
	old := g.Members()
	if len(old) != len(ms) {
		return false
	}
	for i := range ms {
		if old[i] != ms[i] {
			return false
		}
	}
	return true
}

// SetRangeSize sets the size of the ranges a large fetch is cut into
// (gateway.Group.RangeSize), for this and later groups.
func (n *Node) SetRangeSize(size int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	g := *n.group.Load()
	g.RangeSize = size
	n.group.Store(&g)
}

// countingQueue counts the write-back operations applied (reported in
// the heartbeat).
type countingQueue struct {
	writeback.Queue
	n *atomic.Uint64
}

func (q countingQueue) WritebackDone(ctx context.Context, op meta.WBOp, token string) error {
	err := q.Queue.WritebackDone(ctx, op, token)
	if err == nil {
		q.n.Add(1)
	}
	return err
}
