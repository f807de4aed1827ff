package etcdkv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"tessera/internal/kv"
)

// leadership is a won etcd election on its own session.
type leadership struct {
	s    *Store
	sess *concurrency.Session
	el   *concurrency.Election
	once sync.Once
	done chan struct{}
}

// Campaign implements kv.Elector; see the package comment.
func (s *Store) Campaign(ctx context.Context, name, id string) (kv.Leadership, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("etcdkv: campaign %q as %q: %w", name, id, err)
	}
	ttl := max(1, int(s.opts.SessionTTL.Seconds()))
	sess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(ttl))
	if err != nil {
		return nil, fmt.Errorf("etcdkv: campaign %q as %q: session: %w", name, id, err)
	}
	el := concurrency.NewElection(sess, s.opts.Prefix+"e/"+name)
	// The wait behind earlier candidates ends with the session: a
	// candidate whose lease lapsed (its member cut off longer than the
	// TTL) has no key in the election any more, and would otherwise wait
	// for the leader's key to go and then "win" on a dead session, maybe
	// while a later candidate leads. The caller campaigns again instead.
	cctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-sess.Done():
			cancel(errSessionEnded)
		case <-cctx.Done():
		}
	}()
	err = el.Campaign(cctx, id)
	ended := errors.Is(context.Cause(cctx), errSessionEnded)
	if err == nil {
		select {
		case <-sess.Done():
			err, ended = errSessionEnded, false
		default:
		}
	}
	cancel(nil)
	if err != nil {
		sess.Close()
		if ended {
			err = fmt.Errorf("%w: %w", errSessionEnded, err)
		} else if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return nil, fmt.Errorf("etcdkv: campaign %q as %q: %w", name, id, err)
	}
	l := &leadership{s: s, sess: sess, el: el, done: make(chan struct{})}
	s.mu.Lock()
	s.sessions[l] = struct{}{}
	s.mu.Unlock()
	go func() {
		select {
		case <-sess.Done(): // the lease lapsed or was revoked
			l.end()
		case <-l.done:
		}
	}()
	return l, nil
}

// errSessionEnded is why a campaign stops when its session's lease is gone.
var errSessionEnded = errors.New("the campaign's session ended (its lease lapsed or was revoked)")

// Done implements kv.Leadership.
func (l *leadership) Done() <-chan struct{} { return l.done }

// Resign implements kv.Leadership: the leader key goes, and the session's
// lease with it.
func (l *leadership) Resign(ctx context.Context) error {
	err := l.el.Resign(ctx)
	if cerr := l.sess.Close(); err == nil {
		err = cerr
	}
	l.end()
	if err != nil {
		return fmt.Errorf("etcdkv: resign: %w", err)
	}
	return nil
}

func (l *leadership) end() {
	l.once.Do(func() {
		close(l.done)
		l.s.mu.Lock()
		delete(l.s.sessions, l)
		l.s.mu.Unlock()
	})
}

// statusTimeout bounds Members' wait for one member's status.
const statusTimeout = 3 * time.Second

// Members implements kv.Members: the cluster's members, each asked for its
// status directly.
func (s *Store) Members(ctx context.Context) ([]kv.Member, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("etcdkv: members: %w", err)
	}
	resp, err := s.cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcdkv: members: %w", err)
	}
	out := make([]kv.Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		km := kv.Member{Name: m.Name}
		if len(m.ClientURLs) == 0 {
			km.Err = "no client URL (not started yet)"
			out = append(out, km)
			continue
		}
		km.Addr = m.ClientURLs[0]
		// A dead member must not use up the time of the others.
		sctx, cancel := context.WithTimeout(ctx, statusTimeout)
		st, err := s.cli.Status(sctx, km.Addr)
		cancel()
		if err != nil {
			km.Err = err.Error()
		} else {
			km.Healthy = true
			km.Leader = st.Leader == m.ID
			km.Rev = st.Header.Revision
			km.DBSize, km.DBInUse = st.DbSize, st.DbSizeInUse
			if len(st.Errors) > 0 {
				km.Healthy = false
				km.Err = fmt.Sprint(st.Errors)
			}
		}
		out = append(out, km)
	}
	return out, nil
}
