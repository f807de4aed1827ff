package meta

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// keyReplicas holds the cluster's default replication factor (see doc.go).
var keyReplicas = []byte("mreplicas")

// StateRemoved is what SetServerState takes to drop a server from the map;
// no server is ever in this state.
const StateRemoved = "removed"

// bumpEpoch increments the map's epoch.
func (t txn) bumpEpoch() error {
	v, ok, err := t.Get(keyEpoch)
	if err != nil {
		return err
	}
	var e uint64
	if ok {
		if e, err = decodeU64(v); err != nil {
			return err
		}
	}
	return t.Put(keyEpoch, encodeU64(e+1))
}

// storedReplicas returns the stored default replication factor, or 0 when
// none is stored.
func (t txn) storedReplicas() (int, error) {
	v, ok, err := t.Get(keyReplicas)
	if err != nil || !ok {
		return 0, err
	}
	n, err := decodeU64(v)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > MaxReplicas {
		return 0, corruptf("replicas record: %d, want 1 to %d", n, MaxReplicas)
	}
	return int(n), nil
}

// replicas returns the stored default replication factor, or def.
func (t txn) replicas(def int) (int, error) {
	n, err := t.storedReplicas()
	if n == 0 {
		n = def
	}
	return n, err
}

// SetReplicas sets the cluster's default replication factor. The epoch
// changes when the effective factor does.
func (s *Service) SetReplicas(ctx context.Context, r int) (ServerMap, error) {
	if r < 1 || r > MaxReplicas {
		return ServerMap{}, fmt.Errorf("set replicas %d: want 1 to %d: %w", r, MaxReplicas, ErrInvalid)
	}
	var out ServerMap
	err := s.update(ctx, func(t txn) error {
		stored, err := t.storedReplicas()
		if err != nil {
			return err
		}
		if stored != r {
			if err := t.Put(keyReplicas, encodeU64(uint64(r))); err != nil {
				return err
			}
		}
		before := stored
		if before == 0 {
			before = s.replicas
		}
		if before != r {
			if err := t.bumpEpoch(); err != nil {
				return err
			}
		}
		out, err = s.serverMapTx(t)
		return err
	})
	if err != nil {
		return ServerMap{}, fmt.Errorf("set replicas %d: %w", r, err)
	}
	return out, nil
}

// SetServerState sets a server's state to StateUp (undrain) or
// StateDraining, or drops it from the map (StateRemoved). Setting the state
// a server already has changes nothing; every other change bumps the epoch.
// A down server set to up stays up only if it heartbeats: the next sweep
// finds it silent otherwise.
func (s *Service) SetServerState(ctx context.Context, id, state string) (ServerMap, error) {
	var out ServerMap
	err := s.update(ctx, func(t txn) error {
		k := serverKey(id)
		v, ok, err := t.Get(k)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		srv, err := decodeServer(id, v)
		if err != nil {
			return err
		}
		switch state {
		case StateRemoved:
			if err := t.Delete(k); err != nil {
				return err
			}
		case StateUp, StateDraining:
			if srv.State == state {
				out, err = s.serverMapTx(t)
				return err
			}
			srv.State = state
			if err := t.Put(k, encodeServer(&srv)); err != nil {
				return err
			}
		default:
			return ErrInvalid
		}
		if err := t.bumpEpoch(); err != nil {
			return err
		}
		out, err = s.serverMapTx(t)
		return err
	})
	if err != nil {
		return ServerMap{}, fmt.Errorf("set server %s %s: %w", Quote(id), Quote(state), err)
	}
	return out, nil
}

// SweepServers marks down every up or draining server whose latest
// heartbeat (Seen) is older than now-downAfter (a draining server that goes
// silent is down too) and bumps the epoch if it marked any. The meta role
// runs it every second; it is not part of API.
func (s *Service) SweepServers(ctx context.Context, now time.Time, downAfter time.Duration) (ServerMap, error) {
	cutoff := now.Add(-downAfter).UnixNano()
	silent := func(srv Server) bool { return srv.State != StateDown && srv.Seen < cutoff }
	// Most sweeps find nothing: look first, so that they write nothing.
	out, err := s.Servers(ctx)
	if err != nil || !slices.ContainsFunc(out.Servers, silent) {
		return out, err
	}
	err = s.update(ctx, func(t txn) error {
		m, err := t.serverMap()
		if err != nil {
			return err
		}
		changed := false
		for _, srv := range m.Servers {
			if !silent(srv) {
				continue
			}
			srv.State = StateDown
			if err := t.Put(serverKey(srv.ID), encodeServer(&srv)); err != nil {
				return err
			}
			changed = true
		}
		if changed {
			if err := t.bumpEpoch(); err != nil {
				return err
			}
		}
		out, err = s.serverMapTx(t)
		return err
	})
	if err != nil {
		return ServerMap{}, fmt.Errorf("sweep servers: %w", err)
	}
	return out, nil
}
