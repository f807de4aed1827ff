package meta

import (
	"context"
	"fmt"
	"time"
)

// sessionKey is the context key under which a bound Service passes the
// calling session to the Service's methods.
type sessionKey struct{}

// sessionOf returns the session a call is made for, 0 for none.
func sessionOf(ctx context.Context) SessionID {
	id, _ := ctx.Value(sessionKey{}).(SessionID)
	return id
}

// OpenSession implements API.
func (s *Service) OpenSession(ctx context.Context) (SessionInfo, error) {
	if !s.sessionsMarked.Load() {
		err := s.update(ctx, func(t txn) error { return t.Put(keySessions, []byte{recordV1}) })
		if err != nil {
			return SessionInfo{}, fmt.Errorf("open session: %w", err)
		}
		s.sessionsMarked.Store(true)
	}
	return s.leases.open(), nil
}

// Callbacks implements API.
func (s *Service) Callbacks(ctx context.Context, id SessionID, ack uint64, wait time.Duration) ([]Callback, error) {
	return s.leases.poll(ctx, id, ack, wait)
}

// CloseSession implements API.
func (s *Service) CloseSession(ctx context.Context, id SessionID) error {
	s.leases.close(id)
	return nil
}

// Sessions returns how many client sessions are live.
func (s *Service) Sessions() int { return s.leases.sessionCount() }

// WithSession implements SessionBinder: the returned API makes its calls on
// behalf of session id. With id 0 it returns s.
func (s *Service) WithSession(id SessionID) API {
	if id == 0 {
		return s
	}
	return &boundService{Service: s, id: id}
}

// boundService is a Service whose calls carry a session; the Service's
// methods grant leases to it and leave it out of their callbacks. Written
// by hand, not generated (internal/meta/wrapgen): it binds only the calls
// that grant leases or call back (the rest are the embedded Service's),
// and which those are is a choice per method, not a pass-through.
type boundService struct {
	*Service
	id SessionID
}

func (b *boundService) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, sessionKey{}, b.id)
}

// Lookup implements API.
func (b *boundService) Lookup(ctx context.Context, parent Ino, name string) (Inode, error) {
	return b.Service.Lookup(b.ctx(ctx), parent, name)
}

// GetAttr implements API.
func (b *boundService) GetAttr(ctx context.Context, ino Ino) (Inode, error) {
	return b.Service.GetAttr(b.ctx(ctx), ino)
}

// SetAttr implements API.
func (b *boundService) SetAttr(ctx context.Context, ino Ino, req SetAttrReq) (Inode, error) {
	return b.Service.SetAttr(b.ctx(ctx), ino, req)
}

// Create implements API.
func (b *boundService) Create(ctx context.Context, req CreateReq) (Inode, error) {
	return b.Service.Create(b.ctx(ctx), req)
}

// Link implements API.
func (b *boundService) Link(ctx context.Context, ino, newParent Ino, newName string) (Inode, error) {
	return b.Service.Link(b.ctx(ctx), ino, newParent, newName)
}

// Unlink implements API.
func (b *boundService) Unlink(ctx context.Context, parent Ino, name string, reap Ino) (Inode, error) {
	return b.Service.Unlink(b.ctx(ctx), parent, name, reap)
}

// HoldOpen implements API.
func (b *boundService) HoldOpen(ctx context.Context, ino Ino) (Inode, error) {
	return b.Service.HoldOpen(b.ctx(ctx), ino)
}

// ReleaseOpen implements API.
func (b *boundService) ReleaseOpen(ctx context.Context, ino Ino) error {
	return b.Service.ReleaseOpen(b.ctx(ctx), ino)
}

// Rename implements API.
func (b *boundService) Rename(ctx context.Context, oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) (Inode, error) {
	return b.Service.Rename(b.ctx(ctx), oldParent, oldName, newParent, newName, flags)
}

// GetRecipe implements API.
func (b *boundService) GetRecipe(ctx context.Context, ino Ino, first, count uint64) (Recipe, error) {
	return b.Service.GetRecipe(b.ctx(ctx), ino, first, count)
}

// Commit implements API.
func (b *boundService) Commit(ctx context.Context, req CommitReq) (Inode, error) {
	return b.Service.Commit(b.ctx(ctx), req)
}

// SetXattr implements API.
func (b *boundService) SetXattr(ctx context.Context, ino Ino, name string, value []byte, flags uint32) error {
	return b.Service.SetXattr(b.ctx(ctx), ino, name, value, flags)
}

// RemoveXattr implements API.
func (b *boundService) RemoveXattr(ctx context.Context, ino Ino, name string) error {
	return b.Service.RemoveXattr(b.ctx(ctx), ino, name)
}

// readMark is taken before a read that grants a lease.
func (s *Service) readMark() uint64 { return s.leases.generation() }

// granted gives the calling session (if any) a lease on ino, read after
// mark. For reads that may meet a Sync change, use leasedRead.
func (s *Service) granted(ctx context.Context, ino Ino, mark uint64) {
	s.leases.grant(sessionOf(ctx), ino, mark)
}

// leasedRead runs read, which reads the state of one inode (known, when
// the caller knows it beforehand, else the one read returns), and grants
// the calling session a lease on it. A read that meets a Sync change of that
// inode under way (leaseTable.begin) waits for the change to end and runs
// again, so no session caches a state older than a change that returned.
func (s *Service) leasedRead(ctx context.Context, known Ino, read func() (Ino, error)) error {
	id := sessionOf(ctx)
	for {
		if id != 0 && known != 0 {
			if err := s.leases.await(ctx, known); err != nil {
				return err
			}
			// In a shared store, leases are granted only on inodes
			// whose lease record was written before the read; a
			// lag-tolerant read goes on without one when the store
			// refuses it (cutoff.go).
			if s.sh != nil && !s.leases.isRecorded(known) {
				recorded, err := s.lagRecord(ctx, "lease record", func(ctx context.Context) error {
					return s.ensureLease(ctx, known)
				})
				if err != nil {
					return err
				}
				if !recorded {
					got, err := read()
					if err == nil {
						s.leases.noLease(id, got)
					}
					return err
				}
			}
		}
		mark := s.readMark()
		got, err := read()
		if err != nil || s.leases.grant(id, got, mark) {
			return err
		}
		known = got
	}
}

// syncChange runs apply, a change of ino, as a Sync change when sync is set
// (see leaseTable.begin); otherwise it just runs it.
func (s *Service) syncChange(ctx context.Context, ino Ino, sync bool, apply func() error) error {
	if !sync {
		return apply()
	}
	end, err := s.leases.begin(ctx, ino, sessionOf(ctx))
	if err != nil {
		return err
	}
	defer end()
	return apply()
}

// leaseMark is readMark for a change of ino that gives the calling session
// a lease on it: in a shared store it first writes the lease record, so
// that the grant after the change is not refused.
func (s *Service) leaseMark(ctx context.Context, ino Ino) uint64 {
	if sessionOf(ctx) != 0 {
		// A failure only costs the caller its lease (the grant is
		// refused with an invalidation).
		_ = s.ensureLease(ctx, ino)
	}
	return s.readMark()
}
