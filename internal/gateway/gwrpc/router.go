package gwrpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"tessera/internal/auth"
	"tessera/internal/gateway"
	"tessera/internal/meta"
)

// Router is what a mount asks (fuse.Gateway) when the cluster's gateways
// run as their own processes: each request goes to the owner of the inode,
// the first of gateway.Rendezvous over the live gateways' IDs as the meta
// service lists them. A gateway that does not answer (down, or killed
// mid-request) is skipped until the list no longer has it, and the request
// goes to the next by the same hash, which every other mount also picks.
type Router struct {
	// Optional makes a cluster with no live gateway registered serve
	// fileset inodes as they are (ListDir and Fetch return a zero Inode
	// and no error, Revalidate false), as a mount without gateways did;
	// otherwise such a request fails with ErrNoGateway (EHOSTUNREACH).
	Optional bool

	meta  meta.GatewaysAPI
	creds *auth.Credentials
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	live    []meta.GatewayNode
	listed  time.Time
	conns   map[string]*Remote   // by address
	skipped map[string]time.Time // address -> when it failed

	settings filesetSettings // for Due
}

// refreshEvery is how old the live list may be before a request lists
// again; a failed gateway also makes the next request list again.
const refreshEvery = meta.DefaultHeartbeat

// ErrNoGateway is returned when no live gateway answers.
var ErrNoGateway = errors.New("no live fileset gateway")

// NewRouter returns a Router over the registry m, dialing gateways with
// creds (nil: plain TCP).
func NewRouter(m meta.GatewaysAPI, creds *auth.Credentials, log *slog.Logger) *Router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Router{meta: m, creds: creds, log: log, now: time.Now, conns: map[string]*Remote{}, skipped: map[string]time.Time{}}
}

// Close closes the connections to gateways.
func (r *Router) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = map[string]*Remote{}
	return nil
}

// Live lists the live gateways (for tests and status), refreshing the list.
func (r *Router) Live(ctx context.Context) ([]meta.GatewayNode, error) {
	return r.list(ctx, true)
}

// list returns the live gateways not skipped, from the meta service when
// the copy is older than refreshEvery or fresh is set.
func (r *Router) list(ctx context.Context, fresh bool) ([]meta.GatewayNode, error) {
	r.mu.Lock()
	stale := fresh || r.now().Sub(r.listed) >= refreshEvery
	r.mu.Unlock()
	if stale {
		l, err := r.meta.Gateways(ctx)
		if err != nil {
			return nil, fmt.Errorf("list gateways: %w", err)
		}
		r.mu.Lock()
		r.live, r.listed = r.live[:0], r.now()
		for _, g := range l {
			if g.Live {
				r.live = append(r.live, g)
			}
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []meta.GatewayNode
	for _, g := range r.live {
		if t, ok := r.skipped[g.Addr]; ok && r.now().Sub(t) < 2*meta.GatewayTTL {
			continue
		}
		delete(r.skipped, g.Addr)
		out = append(out, g)
	}
	return out, nil
}

func (r *Router) conn(addr string) (*Remote, error) {
	r.mu.Lock()
	c := r.conns[addr]
	r.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := Dial(addr, r.creds)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if x := r.conns[addr]; x != nil {
		c.Close()
		return x, nil
	}
	r.conns[addr] = c
	return c, nil
}

// skip takes a gateway that failed out of the hashing for a while.
func (r *Router) skip(g meta.GatewayNode, err error) {
	r.log.Warn("gateway did not answer; asking the next", "gateway", g.ID, "addr", g.Addr, "err", err)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped[g.Addr] = r.now()
	r.listed = time.Time{}
	if c := r.conns[g.Addr]; c != nil {
		c.Close()
		delete(r.conns, g.Addr)
	}
}

// do runs call on the owner of ino, and on the next by the hash while the
// ones before are gone. Bounded: each gateway of a list is tried once, and
// the list is taken again once.
func (r *Router) do(ctx context.Context, ino meta.Ino, call func(*Remote) error) error {
	var last error
	for round := 0; round < 2; round++ {
		live, err := r.list(ctx, round > 0)
		if err != nil {
			return err
		}
		if len(live) == 0 && last == nil && r.Optional {
			return errNone
		}
		names := make([]string, len(live))
		for i, g := range live {
			names[i] = g.ID
		}
		for _, i := range gateway.Rendezvous(ino, names) {
			g := live[i]
			c, err := r.conn(g.Addr)
			if err == nil {
				err = call(c)
				if err == nil {
					return nil
				}
				// Name the gateway: the call's own text names only
				// the address it dialed, as a meta call's would.
				err = fmt.Errorf("gateway %s (%s): %w", g.ID, g.Addr, err)
				if !gone(err) {
					return err
				}
			}
			if ctx.Err() != nil {
				return err
			}
			last = err
			r.skip(g, err)
		}
	}
	if last != nil {
		return fmt.Errorf("%w: the last one tried: %w", ErrNoGateway, last)
	}
	return fmt.Errorf("inode %d: %w registered with the meta service (%w)", ino, ErrNoGateway, syscall.EHOSTUNREACH)
}

// errNone is do's answer, with Optional, when no gateway is live.
var errNone = errors.New("no gateway")

// none turns errNone into no error (the inode is served as it is).
func none(err error) error {
	if errors.Is(err, errNone) {
		return nil
	}
	return err
}

// ListDir implements fuse.Gateway.
func (r *Router) ListDir(ctx context.Context, dir meta.Ino) (in meta.Inode, err error) {
	err = r.do(ctx, dir, func(c *Remote) (err error) { in, err = c.ListDir(ctx, dir); return err })
	return in, none(err)
}

// Fetch implements fuse.Gateway.
func (r *Router) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (in meta.Inode, err error) {
	err = r.do(ctx, ino, func(c *Remote) (err error) { in, err = c.Fetch(ctx, ino, off, n); return err })
	return in, none(err)
}

// Revalidate implements fuse.Gateway.
func (r *Router) Revalidate(ctx context.Context, ino meta.Ino, force bool) (changed bool, err error) {
	err = r.do(ctx, ino, func(c *Remote) (err error) { changed, err = c.Revalidate(ctx, ino, force); return err })
	return changed, none(err)
}
