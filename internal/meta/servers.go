package meta

import (
	"context"
	"fmt"
	"strings"

	"tessera/internal/kv"
)

// Sync implements API: it syncs the store when the store defers its syncs
// (kv.Syncer); other stores are durable at every commit.
func (s *Service) Sync(ctx context.Context) error {
	sy, ok := s.store.(kv.Syncer)
	if !ok {
		return nil
	}
	return classify(sy.Sync(ctx))
}

// StatFS sums the usage counters' shards.
func (s *Service) StatFS(ctx context.Context) (StatFS, error) {
	var out StatFS
	err := s.view(ctx, func(t txn) error {
		out = StatFS{}
		p := []byte{pfxCounter}
		return t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
			if len(k) == 2 && k[1] == ctrNextIno {
				return true, nil
			}
			kind, _, err := parseCounterKey(k)
			if err != nil {
				return false, err
			}
			n, err := decodeU64(v)
			if err != nil {
				return false, err
			}
			if kind == ctrFiles {
				out.Files += n
			} else {
				out.LogicalBytes += n
			}
			return true, nil
		})
	})
	if err != nil {
		return StatFS{}, fmt.Errorf("statfs: %w", err)
	}
	return out, nil
}

// Servers returns the block-server map, servers in ID order.
func (s *Service) Servers(ctx context.Context) (ServerMap, error) {
	var out ServerMap
	err := s.view(ctx, func(t txn) (err error) {
		out, err = s.serverMapTx(t)
		return err
	})
	if err != nil {
		return ServerMap{}, fmt.Errorf("servers: %w", err)
	}
	return out, nil
}

// serverMapTx is the map with the replication factor filled in.
func (s *Service) serverMapTx(t txn) (ServerMap, error) {
	m, err := t.serverMap()
	if err != nil {
		return m, err
	}
	m.Replicas, err = t.replicas(s.replicas)
	return m, err
}

func (t txn) serverMap() (ServerMap, error) {
	var m ServerMap
	v, ok, err := t.Get(keyEpoch)
	if err != nil {
		return m, err
	}
	if ok {
		if m.Epoch, err = decodeU64(v); err != nil {
			return m, err
		}
	}
	p := []byte{pfxServer}
	err = t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		id, err := parseServerKey(k)
		if err != nil {
			return false, err
		}
		srv, err := decodeServer(id, v)
		if err != nil {
			return false, err
		}
		m.Servers = append(m.Servers, srv)
		return true, nil
	})
	return m, err
}

// RegisterServer adds server srv.ID or refreshes it (a heartbeat) and
// returns the map. Seen is set from the service's clock (the caller's is
// ignored, so hosts' clocks need not agree) and the state follows the
// membership rules: a new or down server is up, a draining one stays
// draining (srv.State is ignored; SetServerState changes it). The epoch
// increases when anything but Seen changes: a plain heartbeat keeps it.
func (s *Service) RegisterServer(ctx context.Context, srv Server) (ServerMap, error) {
	var out ServerMap
	err := checkServer(&srv)
	if err == nil {
		err = s.update(ctx, func(t txn) error {
			k := serverKey(srv.ID)
			v, ok, err := t.Get(k)
			if err != nil {
				return err
			}
			srv.Seen, srv.State = s.nowNs(), StateUp
			changed := !ok
			if ok {
				old, err := decodeServer(srv.ID, v)
				if err != nil {
					return err
				}
				if old.State == StateDraining {
					srv.State = StateDraining
				}
				old.Seen = srv.Seen
				changed = old != srv
			}
			if err := t.Put(k, encodeServer(&srv)); err != nil {
				return err
			}
			if changed {
				if err := t.bumpEpoch(); err != nil {
					return err
				}
			}
			out, err = s.serverMapTx(t)
			return err
		})
	}
	if err != nil {
		return ServerMap{}, fmt.Errorf("register server %s: %w", Quote(srv.ID), err)
	}
	return out, nil
}

// checkServer validates a server's fields against the record's limits.
func checkServer(srv *Server) error {
	if srv.ID == "" || strings.IndexByte(srv.ID, 0) >= 0 {
		return ErrInvalid
	}
	if len(srv.ID) > MaxServerID {
		return ErrNameTooLong
	}
	for _, f := range []string{srv.Addr, srv.Dir, srv.Host, srv.Rack, srv.Site, srv.State} {
		if len(f) > maxServerField {
			return ErrNameTooLong
		}
	}
	return nil
}
