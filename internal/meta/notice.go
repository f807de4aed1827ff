package meta

import "context"

// noticeHook tells the holders of leases on a changed inode (an edit's
// tell): in the change's transaction it writes a callback request to each
// other live meta service that recorded a lease on it (remotecb.go), so
// that the change and its requests commit together and a Service that
// dies after the commit has still called it back; after the commit it
// calls the change back to this Service's sessions other than the calling
// one, and for a Sync change waits for their acknowledgements (or their
// sessions' expiry) and for the other services' deletions of the requests.
func (s *Service) noticeHook() hook {
	return hook{name: "notice",
		inTxn: func(_ context.Context, t txn, e *edit) error {
			n := e.tell
			if n == nil || n.quiet || s.sh == nil || n.ino == 0 {
				return nil
			}
			reqs, err := s.writeCalls(t, n.ino)
			if err != nil {
				return err
			}
			_, cs := t.changes()
			if cs.calls == nil {
				cs.calls = make(map[Ino][][]byte)
			}
			cs.calls[n.ino] = reqs
			return nil
		},
		committed: func(ctx context.Context, cs *changeSet) error {
			var first error
			for i := range cs.edits {
				if n := cs.edits[i].tell; n != nil {
					if err := s.tell(ctx, *n, cs.calls[n.ino]); err != nil && first == nil {
						first = err
					}
				}
			}
			return first
		}}
}

// tell calls a committed change back to the holders of leases on n.ino
// other than the calling session, waiting with n.sync; reqs are the
// requests its transaction wrote to other meta services.
func (s *Service) tell(ctx context.Context, n notice, reqs [][]byte) error {
	from := sessionOf(ctx)
	if !n.quiet {
		n.from = from
		waits := s.leases.notify(n.change)
		if n.sync {
			if err := s.leases.wait(ctx, waits); err != nil {
				return err
			}
			if err := s.waitRemote(ctx, reqs); err != nil {
				return err
			}
		}
	}
	if n.gone {
		s.leases.gone(from, n.ino)
	}
	return nil
}
