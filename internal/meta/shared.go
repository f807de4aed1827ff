package meta

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"tessera/internal/kv"
)

// This file lets several Services (meta processes) over one store behave as
// one service (issue 13; docs/design/2026-11-24-multi-meta.md). Each Service
// of a shared store (Options.Shared) has a random MetaID and keeps, in the
// store next to the namespace:
//
//   - a liveness record ("M" meta), renewed every third of the session TTL
//     and lapsing a TTL after its last renewal;
//   - a lease record ("L" ino meta) while some of its sessions may hold a
//     lease on the inode (written before the first such lease is granted,
//     dropped lazily: remotecb.go);
//   - an open record ("O" ino meta) while some of its sessions hold the
//     inode open (sharedopens.go);
//   - the callback requests other Services addressed to it ("C" meta req),
//     which it delivers to its sessions and deletes once they acknowledged.
//
// Sessions, their leases, queues and open counts stay soft state in the
// memory of the Service that serves them; the records only say which
// Service to ask.

// MetaID names one Service of a shared store. It is random per Service, so
// a restarted process is a new member and its predecessor's records lapse.
type MetaID uint64

// String formats the id as the logs and the store name it.
func (m MetaID) String() string { return fmt.Sprintf("%016x", uint64(m)) }

// Key prefixes of the shared-store families (doc.go, key schema).
const (
	pfxLive    = 'M'
	pfxLease   = 'L'
	pfxOpen    = 'O'
	pfxCallReq = 'C'
)

// lockStripes is how many mutexes serialize one Service's writes of its
// lease and open records, by inode.
const lockStripes = 64

// sharedState is what a Service of a shared store adds to one alone.
type sharedState struct {
	id      MetaID
	watcher kv.Watcher
	ttl     time.Duration
	// grace: the open records of a Service whose liveness lapsed still
	// hold their inodes this long, so its clients can fail over and
	// re-announce their opens elsewhere (opens.go, restart grace).
	grace time.Duration
	log   *slog.Logger
	// stripes serialize the writes and drops of this Service's lease and
	// open records of one inode with the in-memory sets that mirror them.
	stripes [lockStripes]sync.Mutex
	// dropsNow ends the drainer's gathering window (flushOpenDrops).
	dropsNow chan struct{}

	mu struct {
		sync.Mutex
		// opened mirrors this Service's "O" records.
		opened map[Ino]bool
		// inflight are the callback requests being delivered (by key).
		inflight map[string]bool
		// drops are the open records whose last open ended, to be
		// deleted by the drainer (opendrops.go); dropsIdle is closed when
		// the drainer running ends, nil when none runs.
		drops     map[Ino]struct{}
		dropsIdle chan struct{}
	}
}

func (sh *sharedState) stripe(ino Ino) *sync.Mutex { return &sh.stripes[uint64(ino)%lockStripes] }

// lockStripes locks the stripes of inos in ascending order (one caller
// holding several never deadlocks with another) and returns their unlock.
func (sh *sharedState) lockStripes(inos []Ino) (unlock func()) {
	var stripes []int
	for _, ino := range inos {
		stripes = append(stripes, int(uint64(ino)%lockStripes))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		sh.stripes[i].Lock()
	}
	return func() {
		for _, i := range stripes {
			sh.stripes[i].Unlock()
		}
	}
}

func metaKey(pfx byte, mid MetaID) []byte {
	return binary.BigEndian.AppendUint64([]byte{pfx}, uint64(mid))
}

// liveKey is "M" meta.
func liveKey(mid MetaID) []byte { return metaKey(pfxLive, mid) }

// leaseRecKey is "L" ino meta.
func leaseRecKey(ino Ino, mid MetaID) []byte {
	return binary.BigEndian.AppendUint64(inoKey(pfxLease, ino), uint64(mid))
}

// openRecKey is "O" ino meta.
func openRecKey(ino Ino, mid MetaID) []byte {
	return binary.BigEndian.AppendUint64(inoKey(pfxOpen, ino), uint64(mid))
}

// callReqPrefix is "C" meta: the requests addressed to that Service.
func callReqPrefix(mid MetaID) []byte { return metaKey(pfxCallReq, mid) }

// parseInoMeta parses an "L" or "O" key.
func parseInoMeta(k []byte) (Ino, MetaID, error) {
	if len(k) != 17 {
		return 0, 0, corruptf("shared-state key %x", k)
	}
	return Ino(be64(k[1:])), MetaID(be64(k[9:])), nil
}

// encodeLive encodes a liveness record: 1 | expires unix ns 8.
func encodeLive(expires int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{recordV1}, uint64(expires))
}

func decodeLive(b []byte) (int64, error) {
	if len(b) != 9 || b[0] != recordV1 {
		return 0, corruptf("liveness record %x", b)
	}
	return int64(be64(b[1:])), nil
}

// encodeCallReq encodes a callback request: 1 | ino 8 | from meta 8.
func encodeCallReq(ino Ino, from MetaID) []byte {
	b := binary.BigEndian.AppendUint64([]byte{recordV1}, uint64(ino))
	return binary.BigEndian.AppendUint64(b, uint64(from))
}

func decodeCallReq(b []byte) (Ino, MetaID, error) {
	if len(b) != 17 || b[0] != recordV1 {
		return 0, 0, corruptf("callback request %x", b)
	}
	return Ino(be64(b[1:])), MetaID(be64(b[9:])), nil
}

// newShared prepares the shared state of s and writes its first liveness
// record, so that others see it before it serves a session.
func (s *Service) newShared(opts Options) error {
	w, ok := s.store.(kv.Watcher)
	if !ok {
		return fmt.Errorf("meta: a shared store must offer a change feed (kv.Watcher); %T does not: %w", s.store, ErrInvalid)
	}
	sh := &sharedState{id: MetaID(rand.Uint64() | 1), watcher: w, ttl: s.leases.ttl, grace: graceFor(opts), log: opts.Logger}
	if sh.log == nil {
		sh.log = slog.New(slog.DiscardHandler)
	}
	sh.mu.opened = make(map[Ino]bool)
	sh.mu.inflight = make(map[string]bool)
	sh.mu.drops = make(map[Ino]struct{})
	sh.dropsNow = make(chan struct{}, 1)
	s.sh = sh
	s.leases.shared = true
	return s.beat(context.Background())
}

// Shared reports whether s shares its store with other Services
// (Options.Shared).
func (s *Service) Shared() bool { return s.sh != nil }

// ID returns the id of s among the Services of a shared store (0 when it is
// alone).
func (s *Service) ID() MetaID {
	if s.sh == nil {
		return 0
	}
	return s.sh.id
}

// Store returns the store s serves (the meta role elects its singletons
// through it when it is a kv.Elector).
func (s *Service) Store() kv.Store { return s.store }

// beat renews the liveness record of s.
func (s *Service) beat(ctx context.Context) error {
	_, err := s.renew(ctx)
	return err
}

// Liveness states renew finds.
const (
	liveOK      = iota
	liveExpired // the others may have skipped callbacks to s and dropped its lease records
	liveGone    // the cleanup removed every record of s
)

// renew renews the liveness record of s and reports what it found: a
// record that had expired (a process paused, or cut off from the store for
// longer than the TTL) or none (cleaned up after the orphan grace).
func (s *Service) renew(ctx context.Context) (state int, err error) {
	now := s.now()
	err = s.update(ctx, func(t txn) error {
		until, ok, err := t.liveUntil(s.sh.id)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			state = liveGone
		case now.After(until):
			state = liveExpired
		default:
			state = liveOK
		}
		return t.Put(liveKey(s.sh.id), encodeLive(now.Add(s.sh.ttl).UnixNano()))
	})
	if err != nil {
		return liveOK, fmt.Errorf("meta %s: renew liveness: %w", s.sh.id, err)
	}
	return state, nil
}

// liveUntil returns when the liveness of mid lapses (ok false: it has no
// record: it never lived, or was cleaned up).
func (t txn) liveUntil(mid MetaID) (until time.Time, ok bool, err error) {
	v, ok, err := t.Get(liveKey(mid))
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	exp, err := decodeLive(v)
	if err != nil {
		return time.Time{}, false, err
	}
	return time.Unix(0, exp), true, nil
}

// ServeShared runs what a Service of a shared store does in the background
// until ctx ends: it renews its liveness, delivers the callback requests
// other Services address to it, and drops the open and lease records its
// sessions no longer need. The meta role runs it; it returns nil for a Service that
// is alone.
func (s *Service) ServeShared(ctx context.Context) error {
	if s.sh == nil {
		return nil
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.deliverLoop(ctx)
	}()
	every := s.sh.ttl / 3
	until := s.now().Add(s.sh.ttl) // New wrote the first record
	for {
		if state, err := s.renew(ctx); err == nil {
			until = s.now().Add(s.sh.ttl)
			switch state {
			case liveExpired:
				// Changes meanwhile may have skipped this Service:
				// its sessions revalidate what they cache.
				s.sh.log.Warn("meta liveness had expired: invalidating every lease", "meta", s.sh.id)
				s.leases.invalidateEverything()
			case liveGone:
				s.sh.log.Error("meta records were cleaned up: ending every session", "meta", s.sh.id)
				s.lapse()
			}
		} else if ctx.Err() == nil {
			s.sh.log.Warn("meta liveness", "err", err)
			if s.now().Add(every).After(until) {
				// Others will stop calling back to this Service
				// and may drop its records: its sessions can no
				// longer be kept coherent.
				s.sh.log.Error("meta liveness lapses: ending every session", "meta", s.sh.id)
				s.lapse()
			}
		}
		s.tidyOpens(ctx)
		s.tidyLeases(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-s.leases.after(every):
		}
	}
}

// lapse ends every session of s and forgets its lease and open records,
// which the others may delete from now on: its clients open new sessions
// and announce their opens again.
func (s *Service) lapse() {
	s.leases.endAll()
	s.sh.mu.Lock()
	clear(s.sh.mu.opened)
	s.sh.mu.Unlock()
}

// CleanupDead deletes the records of every Service whose liveness lapsed
// more than the orphan grace ago: its liveness, lease, open and callback
// request records. Nobody waits for a lapsed Service (remotecb.go), so
// this only reclaims space and releases the orphans it held open. The
// reaper's leader runs it (ReapLoop). It returns how many it cleaned.
func (s *Service) CleanupDead(ctx context.Context) (int, error) {
	if s.sh == nil {
		return 0, nil
	}
	now := s.now()
	var dead []MetaID
	err := s.view(ctx, func(t txn) error {
		dead = dead[:0]
		p := []byte{pfxLive}
		return t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
			if len(k) != 9 {
				return false, corruptf("liveness key %x", k)
			}
			exp, err := decodeLive(v)
			if err != nil {
				return false, err
			}
			if now.After(time.Unix(0, exp).Add(s.sh.grace)) {
				dead = append(dead, MetaID(be64(k[1:])))
			}
			return true, nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("list meta liveness: %w", err)
	}
	for _, mid := range dead {
		if err := s.cleanup(ctx, mid); err != nil {
			return 0, err
		}
		s.sh.log.Info("cleaned up the records of a lapsed meta service", "meta", mid)
	}
	return len(dead), nil
}

// cleanupPage is how many records one cleanup transaction deletes.
const cleanupPage = 512

// cleanup deletes the records of the lapsed Service mid, a page per
// transaction, its liveness record last (so a cleanup cut short is
// resumed).
func (s *Service) cleanup(ctx context.Context, mid MetaID) error {
	for _, fam := range []byte{pfxCallReq, pfxLease, pfxOpen} {
		for {
			n := 0
			err := s.update(ctx, func(t txn) error {
				n = 0
				start := []byte{fam}
				if fam == pfxCallReq {
					start = callReqPrefix(mid)
				}
				var keys [][]byte
				err := t.Scan(start, kv.PrefixEnd(start), func(k, _ []byte) (bool, error) {
					if fam != pfxCallReq {
						if _, m, err := parseInoMeta(k); err != nil || m != mid {
							return err == nil, err
						}
					}
					keys = append(keys, append([]byte(nil), k...))
					return len(keys) < cleanupPage, nil
				})
				if err != nil {
					return err
				}
				n = len(keys)
				for _, k := range keys {
					if err := t.Delete(k); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("clean up meta %s: %w", mid, err)
			}
			if n < cleanupPage {
				break
			}
		}
	}
	err := s.update(ctx, func(t txn) error { return t.Delete(liveKey(mid)) })
	if err != nil {
		return fmt.Errorf("clean up meta %s: %w", mid, err)
	}
	return nil
}
