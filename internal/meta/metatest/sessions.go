package metatest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"tessera/internal/meta"
)

// sessionCases are the lease and callback cases (DESIGN §2.4); Run runs them
// for APIs that implement meta.SessionBinder.
var sessionCases = []struct {
	name string
	fn   func(h *harness)
}{
	{"SessionUpdate", testSessionUpdate},
	{"SessionInvalidate", testSessionInvalidate},
	{"SessionOwnChanges", testSessionOwnChanges},
	{"SessionSetAttr", testSessionSetAttr},
	{"SessionExpiry", testSessionExpiry},
	{"SessionSyncWaitsForAck", testSessionSyncAck},
	{"SessionSyncHolderExpires", testSessionSyncExpiry},
	{"SessionSyncInvalidatesFirst", testSessionSyncFirst},
	{"SessionLeaseCap", testSessionLeaseCap},
}

// runSessions runs sessionCases, each on a fresh API.
func runSessions(t *testing.T, f Factory) {
	for _, c := range append(sessionCases[:len(sessionCases):len(sessionCases)], openCases...) {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, f)
			if _, ok := h.api.(meta.SessionBinder); !ok {
				t.Skip("the API does not implement meta.SessionBinder")
			}
			c.fn(h)
		})
	}
}

// ttl is the session TTL the harness's APIs use (the default).
const ttl = meta.DefaultSessionTTL

// sess is one open session and the API bound to it.
type sess struct {
	h   *harness
	id  meta.SessionID
	api meta.API
	ack uint64
}

func (h *harness) session() *sess {
	h.t.Helper()
	info, err := h.api.OpenSession(h.ctx)
	h.wantErr("open session", err, nil)
	if info.ID == 0 || info.TTL != ttl {
		h.t.Fatalf("OpenSession = %+v, want an id and TTL %v", info, ttl)
	}
	return &sess{h: h, id: info.ID, api: h.api.(meta.SessionBinder).WithSession(info.ID)}
}

// poll returns the pending callbacks without waiting, acknowledging the
// ones an earlier poll returned.
func (s *sess) poll() []meta.Callback {
	s.h.t.Helper()
	cbs, err := s.h.api.Callbacks(s.h.ctx, s.id, s.ack, 0)
	s.h.wantErr("callbacks", err, nil)
	for i, cb := range cbs {
		if cb.Seq <= s.ack || (i > 0 && cb.Seq <= cbs[i-1].Seq) {
			s.h.t.Fatalf("callback seqs not increasing past ack %d: %+v", s.ack, cbs)
		}
	}
	if n := len(cbs); n > 0 {
		s.ack = cbs[n-1].Seq
	}
	return cbs
}

// want polls and fails unless the callbacks are exactly the kinds listed,
// for ino.
func (s *sess) want(what string, ino meta.Ino, kinds ...meta.CallbackKind) []meta.Callback {
	s.h.t.Helper()
	cbs := s.poll()
	got := make([]meta.CallbackKind, len(cbs))
	for i, cb := range cbs {
		got[i] = cb.Kind
		if cb.Ino != ino {
			s.h.t.Fatalf("%s: callback for inode %d, want %d", what, cb.Ino, ino)
		}
	}
	eq(s.h, what, fmt.Sprint(got), fmt.Sprint(kinds))
	return cbs
}

func (s *sess) attr(ino meta.Ino) meta.Inode {
	s.h.t.Helper()
	in, err := s.api.GetAttr(s.h.ctx, ino)
	s.h.wantErr("getattr", err, nil)
	return in
}

func (s *sess) commit(req meta.CommitReq) meta.Inode {
	s.h.t.Helper()
	in, err := s.api.Commit(s.h.ctx, req)
	s.h.wantErr("commit", err, nil)
	return in
}

const (
	inval  = meta.CallbackInvalidate
	update = meta.CallbackUpdate
)

func testSessionUpdate(h *harness) {
	a, b := h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	b.attr(f.Ino) // b holds a lease
	b.want("nothing yet", f.Ino)
	in := a.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "x"), put(3, "y")}, Size: 4 * blockSize})
	cbs := b.want("one holder: update", f.Ino, update)
	cb := cbs[0]
	eq(h, "update's inode", cb.Inode.Attr, in.Attr)
	eq(h, "update's changes", fmt.Sprint(cb.Changes), fmt.Sprint([]meta.BlockChange{
		{Index: 0, New: hashOf("x")}, {Index: 3, New: hashOf("y")}}))
	eq(h, "set size", cb.SetSize, false)
	a.want("the writer is not called back", f.Ino)
	b.want("acknowledged callbacks are gone", f.Ino)

	// An update keeps the lease: the next change is called back too.
	in = a.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 3, Old: hashOf("y")}}, Size: blockSize, SetSize: true})
	cb = b.want("the lease stays after an update", f.Ino, update)[0]
	eq(h, "truncating update", cb.SetSize, true)
	eq(h, "hole", cb.Changes[0].New.IsZero(), true)
	eq(h, "size", cb.Inode.Size, in.Size)

	// A change made without a session is called back to every holder: the
	// writer's commits gave a a lease, so there are two.
	h.commit(meta.CommitReq{Ino: f.Ino, Size: 2 * blockSize})
	b.want("unbound change", f.Ino, inval)
	a.want("unbound change, writer's lease", f.Ino, inval)
}

func testSessionInvalidate(h *harness) {
	a, b, c := h.session(), h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	b.attr(f.Ino)
	if _, err := c.api.GetRecipe(h.ctx, f.Ino, 0, 10); err != nil {
		h.t.Fatal(err)
	}
	a.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "x")}, Size: 10})
	b.want("two holders: invalidate", f.Ino, inval)
	c.want("two holders: invalidate", f.Ino, inval)
	a.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, Old: hashOf("x"), New: hashOf("z")}}, Size: 10})
	b.want("an invalidation ends the lease", f.Ino)
	c.want("an invalidation ends the lease", f.Ino)

	// A new read gains a new lease; with one holder left it is an update.
	if _, err := b.api.Lookup(h.ctx, meta.RootIno, "f"); err != nil {
		h.t.Fatal(err)
	}
	a.commit(meta.CommitReq{Ino: f.Ino, Size: 20})
	b.want("lookup granted a lease", f.Ino, update)

	// Namespace changes invalidate as well.
	c.attr(f.Ino)
	if _, err := a.api.Link(h.ctx, f.Ino, meta.RootIno, "g"); err != nil {
		h.t.Fatal(err)
	}
	b.want("link, b", f.Ino, inval)
	c.want("link, c", f.Ino, inval)
	b.attr(f.Ino)
	if err := a.api.SetXattr(h.ctx, f.Ino, "user.k", []byte("v"), 0); err != nil {
		h.t.Fatal(err)
	}
	b.want("setxattr", f.Ino, inval)
}

func testSessionOwnChanges(h *harness) {
	a := h.session()
	f, err := a.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0100644})
	h.wantErr("create", err, nil)
	a.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "x")}, Size: 10})
	if _, err := a.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0600}); err != nil {
		h.t.Fatal(err)
	}
	a.want("own changes", f.Ino)
	// Create granted the lease: another writer's change reaches a.
	h.commit(meta.CommitReq{Ino: f.Ino, Size: 20})
	a.want("create granted a lease", f.Ino, update)
}

func testSessionSetAttr(h *harness) {
	a, b := h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "x"), put(1, "y")}, Size: 2 * blockSize})
	b.attr(f.Ino)
	in, err := a.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: 5})
	h.wantErr("truncate", err, nil)
	cb := b.want("truncate", f.Ino, update)[0]
	eq(h, "set size", cb.SetSize, true)
	eq(h, "size", cb.Inode.Size, uint64(5))
	eq(h, "change", cb.Inode.Change, in.Change)
	if _, err := a.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0600}); err != nil {
		h.t.Fatal(err)
	}
	cb = b.want("chmod", f.Ino, update)[0]
	eq(h, "chmod is no truncate", cb.SetSize, false)
	eq(h, "mode", cb.Inode.Mode&07777, uint32(0600))
}

func testSessionExpiry(h *harness) {
	a, b := h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	b.attr(f.Ino)
	h.clock.Advance(ttl - time.Millisecond)
	a.poll() // a renews; b does not
	h.clock.Advance(2 * time.Millisecond)
	a.commit(meta.CommitReq{Ino: f.Ino, Size: 1})
	_, err := h.api.Callbacks(h.ctx, b.id, 0, 0)
	h.wantErr("expired session", err, meta.ErrSessionExpired)
	a.poll()
	_, err = h.api.Callbacks(h.ctx, a.id^0x5a5a, 0, 0)
	h.wantErr("unknown session", err, meta.ErrSessionExpired)
	h.wantErr("close", h.api.CloseSession(h.ctx, a.id), nil)
	_, err = h.api.Callbacks(h.ctx, a.id, 0, 0)
	h.wantErr("closed session", err, meta.ErrSessionExpired)
	h.wantErr("close twice", h.api.CloseSession(h.ctx, a.id), nil)
}

// syncCommit starts a Sync commit through s and returns its result channel.
func (s *sess) syncCommit(req meta.CommitReq) chan error {
	req.Sync = true
	done := make(chan error, 1)
	go func() {
		_, err := s.api.Commit(s.h.ctx, req)
		done <- err
	}()
	return done
}

// notYet fails if done delivers within a short while.
func notYet(h *harness, what string, done chan error) {
	h.t.Helper()
	select {
	case err := <-done:
		h.t.Fatalf("%s returned early (err %v)", what, err)
	case <-time.After(100 * time.Millisecond):
	}
}

// finished fails unless done delivers nil soon.
func finished(h *harness, what string, done chan error) {
	h.t.Helper()
	select {
	case err := <-done:
		h.wantErr(what, err, nil)
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s did not return", what)
	}
}

func testSessionSyncAck(h *harness) {
	a, b := h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	b.attr(f.Ino)
	done := a.syncCommit(meta.CommitReq{Ino: f.Ino, Size: 1})
	// b's blocking poll returns the callback as soon as it is queued.
	cbs, err := h.api.Callbacks(h.ctx, b.id, 0, time.Hour)
	h.wantErr("long poll", err, nil)
	if len(cbs) != 1 {
		h.t.Fatalf("long poll = %+v, want one callback", cbs)
	}
	notYet(h, "sync commit before the ack", done)
	if _, err := h.api.Callbacks(h.ctx, b.id, cbs[0].Seq, 0); err != nil {
		h.t.Fatal(err)
	}
	finished(h, "sync commit after the ack", done)
	// The Sync commit ended b's lease before it changed the file (an
	// invalidation); b reads again and holds a new one. Without Sync the
	// commit returns with the callback unacknowledged.
	b.attr(f.Ino)
	a.commit(meta.CommitReq{Ino: f.Ino, Size: 2})
	b.ack = cbs[0].Seq
	b.want("async commit's callback", f.Ino, update)
}

func testSessionSyncExpiry(h *harness) {
	a, b := h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	b.attr(f.Ino) // and b never polls
	done := a.syncCommit(meta.CommitReq{Ino: f.Ino, Size: 1})
	notYet(h, "sync commit while the holder lives", done)
	h.clock.Advance(ttl / 2)
	notYet(h, "sync commit before the holder's TTL", done)
	h.clock.Advance(ttl / 2)
	h.clock.Advance(time.Millisecond)
	finished(h, "sync commit after the holder expired", done)
	_, err := h.api.Callbacks(h.ctx, b.id, 0, 0)
	if !errors.Is(err, meta.ErrSessionExpired) {
		h.t.Fatalf("holder's poll after expiry: %v, want ErrSessionExpired", err)
	}
}

func testSessionLeaseCap(h *harness) {
	h = newHarnessOpts(h.t, h.factory, func(o *meta.Options) { o.MaxLeases = 2 })
	a, b := h.session(), h.session()
	var fs []meta.Inode
	for i := range 3 {
		fs = append(fs, h.file(meta.RootIno, fmt.Sprint("f", i)))
	}
	b.attr(fs[0].Ino)
	b.attr(fs[1].Ino)
	b.attr(fs[0].Ino) // renews: f1 is now the oldest
	b.attr(fs[2].Ino)
	// A read that races its file's lease record (an engine shared with
	// other metas records it apart from the create) may first be answered
	// with an invalidation and read again: a harmless extra callback, so
	// one or two invalidations of f1, and nothing else, are right here.
	cbs := b.poll()
	if len(cbs) == 0 || len(cbs) > 2 {
		h.t.Fatalf("the oldest lease is dropped with an invalidation: got %+v", cbs)
	}
	for _, cb := range cbs {
		if cb.Ino != fs[1].Ino || cb.Kind != inval {
			h.t.Fatalf("the oldest lease is dropped with an invalidation: got %+v, want invalidations of inode %d", cbs, fs[1].Ino)
		}
	}
	a.commit(meta.CommitReq{Ino: fs[1].Ino, Size: 1})
	b.want("no lease, no callback", fs[1].Ino)
	a.commit(meta.CommitReq{Ino: fs[0].Ino, Size: 1})
	b.want("kept lease", fs[0].Ino, update)
}

// testSessionSyncFirst: a Sync commit invalidates the other holders before
// it changes the file, and a session that reads the file meanwhile waits
// for the change and sees it: no client can read the new state while
// another still serves the old one from its cache.
func testSessionSyncFirst(h *harness) {
	a, b, c := h.session(), h.session(), h.session()
	f := h.file(meta.RootIno, "f")
	b.attr(f.Ino)
	done := a.syncCommit(meta.CommitReq{Ino: f.Ino, Size: 7})
	cbs, err := h.api.Callbacks(h.ctx, b.id, 0, time.Hour)
	h.wantErr("long poll", err, nil)
	if len(cbs) != 1 || cbs[0].Kind != meta.CallbackInvalidate {
		h.t.Fatalf("one holder of a Sync change got %+v, want one invalidation", cbs)
	}
	// Not yet changed: a read without a session sees the old size at once.
	if in, err := h.api.GetAttr(h.ctx, f.Ino); err != nil || in.Size != 0 {
		h.t.Fatalf("GetAttr without a session during the change = %d, %v; want the old size 0", in.Size, err)
	}
	read := make(chan error, 1)
	go func() {
		in, err := c.api.GetAttr(h.ctx, f.Ino)
		if err == nil && in.Size != 7 {
			err = fmt.Errorf("size %d, want the new 7", in.Size)
		}
		read <- err
	}()
	notYet(h, "a session's read during a Sync change", read)
	if _, err := h.api.Callbacks(h.ctx, b.id, cbs[0].Seq, 0); err != nil {
		h.t.Fatal(err)
	}
	finished(h, "sync commit after the ack", done)
	finished(h, "the read after the change", read)
}
