package meta

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"tessera/internal/kv"
)

// The appliers' side of the write-back queue (package gateway/writeback).

// ClaimReq asks for queued operations of one fileset to apply.
type ClaimReq struct {
	Root  Ino
	Owner string // the claiming gateway
	// Shard and Shards: claim only operations whose inode hashes to
	// Shard among Shards live gateways (Shards 0 or 1: all).
	Shard, Shards int
	// TTL is how long the claim holds; a gateway killed while applying
	// loses its claims after it and another takes them.
	TTL time.Duration
	// Before: only operations queued before it (unix ns; the sync lag);
	// 0 takes every age (flush).
	Before int64
	Limit  int
}

// WBWindow bounds how many queued operations one claim looks at.
const WBWindow = 4096

// ClaimWriteback claims up to Limit operations that can be applied now:
// not claimed by a live claim, not waiting for a retry, not failed for
// good, and with no earlier operation still queued that they depend on
// (Overlaps: same path, a path under the other, either side of a rename).
// Permanently failed operations do not hold later ones back.
func (s *Service) ClaimWriteback(ctx context.Context, req ClaimReq) ([]WBOp, error) {
	if req.Limit <= 0 || req.Owner == "" || req.TTL <= 0 {
		return nil, fmt.Errorf("claim write-back of %d: limit %d, owner %s, ttl %v: %w", req.Root, req.Limit, Quote(req.Owner), req.TTL, ErrInvalid)
	}
	var out []WBOp
	err := s.update(ctx, func(t txn) error {
		out = out[:0]
		now := s.nowNs()
		before := req.Before
		if before != 0 {
			// A flush makes what was queued before it due at once.
			v, ok, err := t.Get(wbKey(wbFlush, req.Root))
			if err != nil {
				return err
			}
			if ok {
				f, err := decodeU64(v)
				if err != nil {
					return err
				}
				before = max(before, int64(f)+1) // what was queued up to it
			}
		}
		var earlier []string // paths of the operations still queued before
		p := wbKey(wbQueue, req.Root)
		seen := 0
		err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
			if len(k) != len(p)+8 {
				return false, corruptf("write-back queue key %q", k)
			}
			op, err := decodeWBOp(req.Root, be64(k[len(p):]), v)
			if err != nil {
				return false, err
			}
			seen++
			if op.Permanent {
				return seen < WBWindow, nil
			}
			free := !blocked(earlier, op) && op.Until <= now &&
				(before == 0 || op.At < before) && mine(op.Ino, req.Shard, req.Shards)
			earlier = append(earlier, op.Path)
			if op.Path2 != "" {
				earlier = append(earlier, op.Path2)
			}
			if free {
				op.Owner, op.Until = req.Owner, now+int64(req.TTL)
				out = append(out, *op)
			}
			return len(out) < req.Limit && seen < WBWindow, nil
		})
		if err != nil {
			return err
		}
		for i := range out {
			if err := t.Put(wbQueueKey(out[i].Root, out[i].Seq), encodeWBOp(&out[i])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim write-back of %d: %w", req.Root, err)
	}
	return out, nil
}

func blocked(earlier []string, op *WBOp) bool {
	for _, e := range earlier {
		if Overlaps(e, op.Path) || (op.Path2 != "" && Overlaps(e, op.Path2)) {
			return true
		}
	}
	return false
}

func mine(ino Ino, shard, shards int) bool {
	if shards <= 1 {
		return true
	}
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(ino >> (8 * i))
	}
	h.Write(b[:])
	return int(h.Sum64()%uint64(shards)) == shard
}

// Overlaps reports whether two fileset paths depend on each other: equal,
// or one lies under the other ("" is the root, under which everything is).
func Overlaps(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == "" || a == b || strings.HasPrefix(b, a) && b[len(a)] == '/'
}

// WritebackDone deletes an applied operation (when it is still the one
// claimed) and records home's token for its inode, which conflict checks
// compare with later ("" keeps what is recorded; a removal drops it). A
// Put with a token and nothing queued after it also brings the file's
// gateway section up to date (wbReached): home now holds what the cache
// does, so eviction and the removal of names gone at home take the file
// as clean.
func (s *Service) WritebackDone(ctx context.Context, op WBOp, token string) error {
	err := s.update(ctx, func(t txn) error {
		cur, err := t.wbOp(op.Root, op.Seq)
		if err != nil || cur == nil {
			return err
		}
		if err := t.Delete(wbQueueKey(op.Root, op.Seq)); err != nil {
			return err
		}
		l, err := t.wbLatestOp(op.Ino)
		if err != nil {
			return err
		}
		if l == nil {
			if err := t.Delete(wbKey(wbLatest, op.Ino)); err != nil {
				return err
			}
		}
		switch {
		case op.Kind == OpRemove || op.Kind == OpRmdir:
			return t.Delete(wbKey(wbToken, op.Ino))
		case token != "":
			if err := t.Put(wbKey(wbToken, op.Ino), encodeXattr([]byte(token))); err != nil {
				return err
			}
			if op.Kind == OpPut && l == nil {
				return t.wbReached(op, token, s.nowNs())
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write-back %d/%d done: %w", op.Root, op.Seq, err)
	}
	return nil
}

// WritebackFailed gives a claimed operation back after a failure: a
// retryable one is tried again from retryAt, a permanent one stays queued,
// marked, for status (and holds nothing back).
func (s *Service) WritebackFailed(ctx context.Context, op WBOp, cause string, permanent bool, retryAt time.Time) error {
	if len(cause) > 4096 {
		cause = cause[:4096]
	}
	err := s.update(ctx, func(t txn) error {
		cur, err := t.wbOp(op.Root, op.Seq)
		if err != nil || cur == nil {
			return err
		}
		cur.Owner, cur.Until = "", retryAt.UnixNano()
		cur.Attempts++
		cur.Err, cur.Permanent = cause, permanent
		return t.Put(wbQueueKey(op.Root, op.Seq), encodeWBOp(cur))
	})
	if err != nil {
		return fmt.Errorf("write-back %d/%d failed: %w", op.Root, op.Seq, err)
	}
	return nil
}

// RequestFlush makes every operation queued so far in fileset root due at
// once, whatever the sync lag (tessera fileset flush).
func (s *Service) RequestFlush(ctx context.Context, root Ino) error {
	err := s.update(ctx, func(t txn) error {
		if _, err := t.getFileset(root); err != nil {
			return err
		}
		return t.Put(wbKey(wbFlush, root), encodeU64(uint64(s.nowNs())))
	})
	if err != nil {
		return fmt.Errorf("request flush of %d: %w", root, err)
	}
	return nil
}

// WritebackToken returns home's token recorded after the last apply of
// ino, else the token the gateway recorded when it last read ino
// from home ("" when neither is).
func (s *Service) WritebackToken(ctx context.Context, ino Ino) (string, error) {
	var tok string
	err := s.view(ctx, func(t txn) error {
		tok = "" // a rerun (kv.Store.View) starts afresh
		v, ok, err := t.Get(wbKey(wbToken, ino))
		if err != nil {
			return err
		}
		if !ok {
			// Never written back: what the gateway last read.
			rec, err := t.getInode(ino)
			if err == nil && rec.Gateway != nil {
				tok = rec.Gateway.Token
			}
			if errors.Is(err, ErrNotFound) {
				err = nil
			}
			return err
		}
		b, err := decodeXattr(v)
		tok = string(b)
		return err
	})
	return tok, err
}

// WBStats are a fileset queue's figures for status.
type WBStats struct {
	Depth int // queued operations, permanent failures included
	// Oldest is when the oldest operation was queued (unix ns, 0 when
	// the queue is empty): now minus it is the measured sync lag.
	Oldest int64
	// Failed are the operations that failed for good.
	Failed []WBOp
}

// WritebackStats reads the queue figures of fileset root.
func (s *Service) WritebackStats(ctx context.Context, root Ino) (WBStats, error) {
	var st WBStats
	err := s.view(ctx, func(t txn) error {
		st = WBStats{}
		p := wbKey(wbQueue, root)
		return t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
			op, err := decodeWBOp(root, be64(k[len(p):]), v)
			if err != nil {
				return false, err
			}
			st.Depth++
			if st.Oldest == 0 || op.At < st.Oldest {
				st.Oldest = op.At
			}
			if op.Permanent {
				st.Failed = append(st.Failed, *op)
			}
			return true, nil
		})
	})
	if err != nil {
		return WBStats{}, fmt.Errorf("write-back stats of %d: %w", root, err)
	}
	return st, nil
}

// WritebackAPI is the write-back queue's part of the service, for
// gateways (claims, results) and status (stats). *Service implements it,
// and so do the RPC client (metarpc) and the authorizing view (authz).
type WritebackAPI interface {
	//tessera:authz cache cluster
	ClaimWriteback(ctx context.Context, req ClaimReq) ([]WBOp, error)
	//tessera:authz cache cluster
	WritebackDone(ctx context.Context, op WBOp, token string) error
	//tessera:authz cache cluster
	WritebackFailed(ctx context.Context, op WBOp, cause string, permanent bool, retryAt time.Time) error
	//tessera:authz cache cluster
	WritebackToken(ctx context.Context, ino Ino) (string, error)
	//tessera:authz read cluster
	WritebackStats(ctx context.Context, root Ino) (WBStats, error)
	//tessera:authz cache cluster: admins and gateways
	RequestFlush(ctx context.Context, root Ino) error
}

var _ WritebackAPI = (*Service)(nil)

// wbReached records in the gateway section of op's file that home holds
// its current content, as home's object at op.Path with change token
// token: the Put was the file's last queued change, so nothing local is
// newer. A file made in the cache gets its home path (it is at home now).
// The inode's Change is left alone: its content did not change.
func (t txn) wbReached(op WBOp, token string, now int64) error {
	rec, err := t.getInode(op.Ino)
	if errors.Is(err, ErrNotFound) {
		return nil // removed since; its removal follows
	}
	if err != nil {
		return err
	}
	if rec.Gateway == nil || !rec.IsRegular() || rec.Gateway.State != CacheCached {
		return nil
	}
	g := *rec.Gateway
	g.HomePath, g.HomeSize, g.HomeMtime, g.HomeCtime, g.Token = op.Path, rec.Size, rec.Mtime, 0, token
	g.Validated = now
	rec.Gateway = &g
	if err := t.putInode(rec); err != nil {
		return err
	}
	return t.record(edit{kind: editFileset, ino: rec.Ino, rec: rec})
}
