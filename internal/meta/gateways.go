package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"tessera/internal/kv"
)

// Gateway processes (`tessera gateway`, issue 14) register here as block
// servers do, and heartbeat; a mount asks for the live ones to find the
// owner of an inode. A record is kept under pfxGatewayNode + id, JSON: it
// is small, read by status and mounts only, and gains fields as the role
// reports more (json ignores what an older reader does not know).

const pfxGatewayNode = 'n'

// GatewayTTL is how long a gateway stays live after its last heartbeat; a
// gateway heartbeats every DefaultHeartbeat.
const GatewayTTL = DefaultDownAfter

// gatewayForget is how long a silent gateway's record is kept (for status)
// before a registration removes it.
const gatewayForget = time.Hour

// GatewayInProcess is the Addr of a gateway running inside another
// process (`tessera up --gateways N`): it registers and heartbeats only so
// that `fileset status` shows its counters beside the gateway processes'.
// It serves no Gateway service, so it is never live: mounts and gateway
// processes never route to it.
const GatewayInProcess = "in-process"

// GatewayLeaving, as the Addr of a registration, removes the gateway's
// record: a gateway stopping cleanly (SIGTERM) says so, and mounts stop
// routing to it at once instead of when its heartbeat lapses. (An address
// rather than a call of its own: the wire protocol is unchanged.)
const GatewayLeaving = "leaving"

// GatewayCounters are what a gateway process did since it started, sent
// with every heartbeat.
type GatewayCounters struct {
	BytesIngested uint64 `json:"bytes"`     // bytes read from homes into the cluster
	Fetches       uint64 `json:"fetches"`   // fetches and ranges of split fetches done
	Listings      uint64 `json:"listings"`  // home directories listed
	WritebackOps  uint64 `json:"writeback"` // write-back operations applied to homes
}

// GatewayNode is one gateway process as meta knows it.
type GatewayNode struct {
	ID   string `json:"id"`   // the gateway's name (its certificate's)
	Addr string `json:"addr"` // where its Gateway service listens
	Site string `json:"site,omitempty"`
	// Seen is the service's time (unix ns) of the last heartbeat, Started
	// the gateway's start (its own clock; a new value means a restart).
	Seen    int64 `json:"seen"`
	Started int64 `json:"started"`
	// Counters are the last heartbeat's; Prev and PrevSeen the one
	// before, so a rate over the last interval needs no second sample.
	Counters GatewayCounters `json:"counters"`
	Prev     GatewayCounters `json:"prev"`
	PrevSeen int64           `json:"prevSeen"`
	// Live is set by Gateways: heard from within GatewayTTL.
	Live bool `json:"-"`
}

// IngestRate is the bytes per second ingested between the last two
// heartbeats (0 with one).
func (g GatewayNode) IngestRate() float64 {
	d := g.Seen - g.PrevSeen
	if g.PrevSeen == 0 || d <= 0 || g.Counters.BytesIngested < g.Prev.BytesIngested {
		return 0
	}
	return float64(g.Counters.BytesIngested-g.Prev.BytesIngested) / (float64(d) / 1e9)
}

// GatewaysAPI is the gateway registry. Service implements it; so do the
// RPC clients.
type GatewaysAPI interface {
	// RegisterGateway adds or refreshes gateway g (a heartbeat): Seen
	// comes from the service's clock. It returns the live gateways. With
	// Addr GatewayLeaving it removes g's record instead (returns none).
	//tessera:authz cache cluster: bound to its name
	RegisterGateway(ctx context.Context, g GatewayNode) ([]GatewayNode, error)
	// Gateways lists the gateways known, by ID, Live set on those heard
	// from within GatewayTTL.
	//tessera:authz read cluster
	Gateways(ctx context.Context) ([]GatewayNode, error)
}

var _ GatewaysAPI = (*Service)(nil)

func gatewayNodeKey(id string) []byte { return append([]byte{pfxGatewayNode}, id...) }

// checkGatewayNode validates g's fields against the record's limits.
func checkGatewayNode(g *GatewayNode) error {
	if g.ID == "" || strings.IndexByte(g.ID, 0) >= 0 {
		return fmt.Errorf("gateway id %s: %w", Quote(g.ID), ErrInvalid)
	}
	if len(g.ID) > MaxServerID {
		return fmt.Errorf("gateway id of %d bytes: %w", len(g.ID), ErrNameTooLong)
	}
	if g.Addr == "" {
		return fmt.Errorf("gateway %s: no address: %w", Quote(g.ID), ErrInvalid)
	}
	if len(g.Addr) > maxServerField || len(g.Site) > maxServerField {
		return fmt.Errorf("gateway %s: address or site too long: %w", Quote(g.ID), ErrNameTooLong)
	}
	return nil
}

// RegisterGateway implements GatewaysAPI.
func (s *Service) RegisterGateway(ctx context.Context, g GatewayNode) ([]GatewayNode, error) {
	if err := checkGatewayNode(&g); err != nil {
		return nil, fmt.Errorf("register gateway: %w", err)
	}
	var out []GatewayNode
	err := s.update(ctx, func(t txn) error {
		now := s.nowNs()
		k := gatewayNodeKey(g.ID)
		if g.Addr == GatewayLeaving {
			out = nil
			return t.Delete(k)
		}
		v, ok, err := t.Get(k)
		if err != nil {
			return err
		}
		if ok {
			var old GatewayNode
			if err := json.Unmarshal(v, &old); err != nil {
				return corruptf("gateway record %q: %v", g.ID, err)
			}
			if old.Started == g.Started {
				g.Prev, g.PrevSeen = old.Counters, old.Seen
			}
		}
		g.Seen, g.Live = now, true
		b, err := json.Marshal(g)
		if err != nil {
			return err
		}
		if err := t.Put(k, b); err != nil {
			return err
		}
		all, err := t.gatewayNodes(now)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, x := range all {
			switch {
			case x.Live:
				out = append(out, x)
			case now-x.Seen > int64(gatewayForget):
				if err := t.Delete(gatewayNodeKey(x.ID)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("register gateway %s: %w", Quote(g.ID), err)
	}
	return out, nil
}

// Gateways implements GatewaysAPI.
func (s *Service) Gateways(ctx context.Context) ([]GatewayNode, error) {
	var out []GatewayNode
	err := s.view(ctx, func(t txn) (err error) {
		out, err = t.gatewayNodes(s.nowNs())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("gateways: %w", err)
	}
	return out, nil
}

// gatewayNodes reads every gateway record, marking the live ones at now.
func (t txn) gatewayNodes(now int64) ([]GatewayNode, error) {
	var out []GatewayNode
	p := []byte{pfxGatewayNode}
	err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		var g GatewayNode
		if err := json.Unmarshal(v, &g); err != nil {
			return false, corruptf("gateway record %q: %v", k[1:], err)
		}
		g.Live = now-g.Seen <= int64(GatewayTTL) && g.Addr != GatewayInProcess
		out = append(out, g)
		return true, nil
	})
	return out, err
}
