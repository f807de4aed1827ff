package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// OpenSession implements meta.API: the session belongs to the caller.
func (v *view) OpenSession(ctx context.Context) (meta.SessionInfo, error) {
	c, _, err := v.begin(ctx, "OpenSession")
	if err != nil {
		return meta.SessionInfo{}, err
	}
	info, err := v.a.svc.OpenSession(ctx)
	if err == nil {
		v.a.sessions.add(info.ID, c.id, info.TTL, v.a.now())
	}
	return info, err
}

// owned checks that session sid is the caller's. A session the decorator
// does not know was not opened through it or has expired: ErrSessionExpired.
func (v *view) owned(c caller, method string, sid meta.SessionID) error {
	known, owned := v.a.sessions.check(sid, c.id, v.a.now())
	switch {
	case !known:
		return fmt.Errorf("meta %s: session %d: %w", method, sid, meta.ErrSessionExpired)
	case !owned:
		return v.a.deny(c.id, method, fmt.Errorf("%w: session %d is not %s's", auth.ErrDenied, sid, c.id))
	}
	return nil
}

// Callbacks implements meta.API for the caller's own sessions; the
// callbacks' inode numbers are mapped as every reply's.
func (v *view) Callbacks(ctx context.Context, sid meta.SessionID, ack uint64, wait time.Duration) ([]meta.Callback, error) {
	c, _, err := v.begin(ctx, "Callbacks")
	if err != nil {
		return nil, err
	}
	if err := v.owned(c, "Callbacks", sid); err != nil {
		return nil, err
	}
	cbs, err := v.a.svc.Callbacks(ctx, sid, ack, wait)
	if errors.Is(err, meta.ErrSessionExpired) {
		v.a.sessions.drop(sid)
	}
	for i := range cbs {
		cbs[i].Ino = c.out(cbs[i].Ino)
		c.outInode(&cbs[i].Inode)
	}
	return cbs, err
}

// CloseSession implements meta.API for the caller's own sessions; closing
// an unknown one is not an error, as on the Service.
func (v *view) CloseSession(ctx context.Context, sid meta.SessionID) error {
	c, _, err := v.begin(ctx, "CloseSession")
	if err != nil {
		return err
	}
	if err := v.owned(c, "CloseSession", sid); err != nil {
		if errors.Is(err, meta.ErrSessionExpired) {
			return nil
		}
		return err
	}
	v.a.sessions.drop(sid)
	return v.a.svc.CloseSession(ctx, sid)
}
