package metarpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"tessera/internal/meta"
)

// Several meta processes of one cluster (issue 13): a mount, a block server
// or an admin command is given their addresses (--meta a,b,c) and talks to
// one at a time, the nearest, failing over to the next when it stops
// answering.
//
// Nearest is the lowest round trip of a Hello call (the cheapest call every
// role may make), measured at DialMany and again every ManyOptions.Refresh.
//
// A call that could not reach the current process (meta.ErrUnreachable: it
// was not applied) is sent to the next nearest that answers, at once. A
// call whose reply was lost (meta.ErrReplyLost: it may have been applied)
// is returned as it is, so that metawait's rules for such calls still
// hold; before that the process is asked for a Hello, and if it does not
// answer that either (killed, or cut off with its connection still open)
// calls move to the next nearest, where the resend goes.
//
// Sessions are a meta process's own (unless the processes share them
// through their store): after a failover the new process answers the old
// session with meta.ErrSessionExpired, and the client opens a new one and
// announces its opens again, as after a restart. A refresh that finds a
// process less than half as far as the current one moves there (a mount
// that failed over to a remote site returns once its own site's meta
// answers again); that costs the same session re-open.

// DefaultRefresh is how often a Many measures its processes' round trips
// again.
const DefaultRefresh = 30 * time.Second

// ManyOptions configure DialMany.
type ManyOptions struct {
	DialOptions
	// Cluster, when set, is the cluster's name: a process whose Hello
	// names another cluster is not used (an address list mixing up two
	// clusters would otherwise mix their namespaces).
	Cluster string
	// Refresh is how often the round trips are measured again (0:
	// DefaultRefresh; negative: never, the tests call Probe).
	Refresh time.Duration
	// Logger receives a line at every switch of process; nil discards.
	Logger *slog.Logger
}

// Endpoint is one meta process as a Many last measured it.
type Endpoint struct {
	Addr    string
	Site    string        // what its Hello said
	Cluster string        // what its Hello said
	RTT     time.Duration // latest round trip of a Hello; 0 not measured
	Err     error         // why the latest probe failed; nil answered
	Current bool          // the process calls go to
}

// Many is a meta.API over several meta processes of one cluster; see the
// comment at the top of this file. It is safe for concurrent use;
// WithSession returns a Many bound to a session that shares its processes.
type Many struct {
	p   *pool
	sid meta.SessionID
}

var (
	_ meta.API           = (*Many)(nil)
	_ meta.BlockLister   = (*Many)(nil)
	_ meta.SessionBinder = (*Many)(nil)
)

// pool is what a Many and its session-bound copies share.
type pool struct {
	opts ManyOptions
	log  *slog.Logger
	// failover serializes switches, so that the calls that find the
	// current process gone at once do not each dial the others. Order:
	// failover before mu.
	failover sync.Mutex
	mu       sync.Mutex
	eps      []*endpoint // in the order given
	cur      *endpoint
	closed   bool
	stop     chan struct{}
	done     chan struct{}
}

// endpoint is one process; its fields are guarded by pool.mu.
type endpoint struct {
	addr    string
	c       *Client // nil until a dial worked
	rtt     time.Duration
	site    string
	cluster string
	err     error
}

// DialMany connects to the meta processes at addrs and picks the nearest
// that answers. It fails, naming every address and why, when none does
// (the error wraps meta.ErrUnreachable), or when given none.
func DialMany(ctx context.Context, addrs []string, opts ManyOptions) (*Many, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no meta service address given: %w", meta.ErrInvalid)
	}
	p := &pool{opts: opts, log: opts.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if a = strings.TrimSpace(a); a != "" && !seen[a] {
			seen[a] = true
			p.eps = append(p.eps, &endpoint{addr: a})
		}
	}
	if len(p.eps) == 0 {
		return nil, fmt.Errorf("no meta service address given: %w", meta.ErrInvalid)
	}
	p.probe(ctx)
	p.mu.Lock()
	p.cur = p.nearestLocked(nil)
	cur := p.cur
	p.mu.Unlock()
	if cur == nil {
		err := p.allFailed()
		p.close()
		return nil, err
	}
	p.log.Info("meta service chosen", "addr", cur.addr, "site", cur.site, "rtt", cur.rtt)
	if opts.Refresh >= 0 {
		every := opts.Refresh
		if every == 0 {
			every = DefaultRefresh
		}
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.refresh(every)
	}
	return &Many{p: p}, nil
}

// SplitAddrs splits a --meta list "a,b,c" into its addresses.
func SplitAddrs(list string) []string {
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// probeRounds Hellos are timed per probe; the fastest counts (the first
// may pay for a handshake or a cold path).
const probeRounds = 3

// probe measures every process's round trip, dialing those not connected
// yet, in parallel.
func (p *pool) probe(ctx context.Context) {
	p.mu.Lock()
	eps := slices.Clone(p.eps)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.measure(ctx, ep)
		}()
	}
	wg.Wait()
}

// measure dials ep if needed and times its Hello; the outcome is recorded
// in ep.
func (p *pool) measure(ctx context.Context, ep *endpoint) error {
	p.mu.Lock()
	c, closed := ep.c, p.closed
	p.mu.Unlock()
	if closed {
		return fmt.Errorf("meta service %s: client closed: %w", ep.addr, meta.ErrIO)
	}
	if c == nil {
		nc, err := Dial(ep.addr, p.opts.DialOptions)
		if err != nil {
			p.mu.Lock()
			ep.err = err
			p.mu.Unlock()
			return err
		}
		p.mu.Lock()
		if ep.c == nil && !p.closed {
			ep.c = nc
		} else {
			nc.Close()
		}
		c = ep.c
		p.mu.Unlock()
		if c == nil {
			return fmt.Errorf("meta service %s: client closed: %w", ep.addr, meta.ErrIO)
		}
	}
	var (
		best time.Duration
		h    Hello
		err  error
	)
	for range probeRounds {
		cctx, cancel := context.WithTimeout(ctx, DialTimeout)
		start := time.Now()
		h, err = c.Hello(cctx)
		d := time.Since(start)
		cancel()
		if err != nil {
			break
		}
		if best == 0 || d < best {
			best = d
		}
	}
	if err == nil && p.opts.Cluster != "" && h.Cluster != p.opts.Cluster {
		err = fmt.Errorf("meta service %s belongs to cluster %q, not %q: %w", ep.addr, h.Cluster, p.opts.Cluster, meta.ErrInvalid)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ep.err = err
	if err == nil {
		ep.rtt, ep.site, ep.cluster = max(best, 1), h.Site, h.Cluster
	}
	return err
}

// nearestLocked returns the answering process of the lowest round trip,
// skipping those in skip; nil when none answered.
func (p *pool) nearestLocked(skip map[*endpoint]bool) *endpoint {
	var best *endpoint
	for _, ep := range p.eps {
		if ep.err != nil || ep.c == nil || ep.rtt == 0 || skip[ep] {
			continue
		}
		if best == nil || ep.rtt < best.rtt {
			best = ep
		}
	}
	return best
}

// allFailed is DialMany's error when no process answered.
func (p *pool) allFailed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []string
	for _, ep := range p.eps {
		if ep.err != nil {
			errs = append(errs, ep.err.Error())
		}
	}
	if len(p.eps) == 1 && p.eps[0].err != nil {
		return p.eps[0].err
	}
	return fmt.Errorf("no meta service answers: %s (%w)", strings.Join(errs, "; "), meta.ErrUnreachable)
}

// current returns the process calls go to and its client.
func (p *pool) current() (*endpoint, *Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return nil, nil
	}
	return p.cur, p.cur.c
}

// switchFrom moves calls away from the process from, which a call could
// not reach, to the nearest other one that answers a Hello now, trying
// none in tried. It reports whether calls now go elsewhere.
func (p *pool) switchFrom(ctx context.Context, from *endpoint, tried map[*endpoint]bool) bool {
	p.failover.Lock()
	defer p.failover.Unlock()
	p.mu.Lock()
	if p.cur != from && p.cur != nil && !tried[p.cur] {
		p.mu.Unlock()
		return true // another call switched already
	}
	// Candidates: nearest first by what was measured; the unmeasured last.
	cands := slices.Clone(p.eps)
	slices.SortStableFunc(cands, func(a, b *endpoint) int {
		ra, rb := a.rtt, b.rtt
		if a.err != nil || ra == 0 {
			ra = time.Hour
		}
		if b.err != nil || rb == 0 {
			rb = time.Hour
		}
		return int(ra - rb)
	})
	p.mu.Unlock()
	for _, ep := range cands {
		if tried[ep] {
			continue
		}
		tried[ep] = true
		if err := p.measure(ctx, ep); err != nil {
			continue
		}
		p.mu.Lock()
		p.cur = ep
		p.mu.Unlock()
		p.log.Warn("meta service unreachable; calls go to another one", "from", from.addr, "to", ep.addr, "site", ep.site)
		return true
	}
	return false
}

// checkAfterLost asks ep, whose reply to a call was lost, for a Hello:
// a process that does not answer it either (killed, or cut off without
// its connection breaking, which keepalive would only notice after tens
// of seconds) is left for the nearest other one now, so that the call's
// resend goes there. A process that answers (it was only slow) keeps the
// calls.
func (p *pool) checkAfterLost(ep *endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	err := p.measure(ctx, ep)
	cancel()
	if err != nil {
		p.switchFrom(context.Background(), ep, map[*endpoint]bool{ep: true})
	}
}

// refresh measures the round trips every interval until close.
func (p *pool) refresh(every time.Duration) {
	defer close(p.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-p.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		p.reprobe(ctx)
		cancel()
	}
}

// reprobe measures again and moves to a process less than half as far as
// the current one, or to the nearest when the current one stopped
// answering.
func (p *pool) reprobe(ctx context.Context) {
	p.probe(ctx)
	p.failover.Lock()
	defer p.failover.Unlock()
	p.mu.Lock()
	cur, best := p.cur, p.nearestLocked(nil)
	if best == nil || best == cur || (cur != nil && cur.err == nil && best.rtt*2 >= cur.rtt) {
		p.mu.Unlock()
		return
	}
	p.cur = best
	p.mu.Unlock()
	from := ""
	if cur != nil {
		from = cur.addr
	}
	p.log.Info("meta service: moving to a nearer one", "from", from, "to", best.addr, "site", best.site, "rtt", best.rtt)
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	eps := slices.Clone(p.eps)
	p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
	for _, ep := range eps {
		p.mu.Lock()
		c := ep.c
		p.mu.Unlock()
		if c != nil {
			c.Close()
		}
	}
}

// Probe measures every process's round trip now and moves to a much
// nearer one, as the periodic refresh does.
func (m *Many) Probe(ctx context.Context) { m.p.reprobe(ctx) }

// Endpoints returns the processes as last measured, in the order given.
func (m *Many) Endpoints() []Endpoint {
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	out := make([]Endpoint, 0, len(m.p.eps))
	for _, ep := range m.p.eps {
		out = append(out, Endpoint{Addr: ep.addr, Site: ep.site, Cluster: ep.cluster, RTT: ep.rtt, Err: ep.err, Current: ep == m.p.cur})
	}
	return out
}

// Addr returns the address of the process calls go to now.
func (m *Many) Addr() string {
	ep, _ := m.p.current()
	if ep == nil {
		return ""
	}
	return ep.addr
}

// Current returns the client of the process calls go to now, for the
// calls that are not meta.API's (Hello, ClusterStatus).
func (m *Many) Current() *Client {
	_, c := m.p.current()
	return c
}

// Close closes the connections to every process; later calls fail.
func (m *Many) Close() error {
	m.p.close()
	return nil
}

// WithSession implements meta.SessionBinder: the returned Many sends id
// with every call, to whichever process is current.
func (m *Many) WithSession(id meta.SessionID) meta.API { return &Many{p: m.p, sid: id} }

// api is c bound to m's session.
func (m *Many) api(c *Client) *Client {
	if m.sid == 0 {
		return c
	}
	return &Client{conn: c.conn, session: m.sid}
}

// do runs call on the current process and, while it finds processes
// unreachable, on the next nearest (see the comment at the top of the
// file).
func (m *Many) do(ctx context.Context, call func(c *Client) error) error {
	tried := map[*endpoint]bool{}
	for {
		ep, c := m.p.current()
		if ep == nil {
			return fmt.Errorf("meta: client closed: %w", meta.ErrIO)
		}
		err := call(m.api(c))
		if errors.Is(err, meta.ErrReplyLost) {
			m.p.checkAfterLost(ep)
			return err
		}
		if !errors.Is(err, meta.ErrUnreachable) {
			return err
		}
		tried[ep] = true
		m.p.mu.Lock()
		ep.err = err
		m.p.mu.Unlock()
		if !m.p.switchFrom(ctx, ep, tried) {
			return err
		}
	}
}
