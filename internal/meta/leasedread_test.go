package meta

import (
	"context"
	"testing"

	"tessera/internal/kv/memkv"
)

// TestLeasedReadAgainAfterChange: a read that a Sync change overtakes
// entirely (the change begins after the state was read, and ends before
// the lease is granted) reads again. Its reader was no holder when the
// change began, so the change did not wait for it; the invalidation grant
// queues reaches it at some time after the change returned, and until then
// its client would serve the old state as leased: a read there that began
// after the change returned would miss it (posix promises it does not).
func TestLeasedReadAgainAfterChange(t *testing.T) {
	ctx := context.Background()
	s, err := New(memkv.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "f", Mode: 0o100644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	reader := s.WithSession(s.leases.open().ID).(*boundService)
	writer := s.WithSession(s.leases.open().ID)

	reads := 0
	var out Inode
	err = s.leasedRead(reader.ctx(ctx), f.Ino, func() (Ino, error) {
		reads++
		in, err := s.GetAttr(ctx, f.Ino) // unbound: grants nothing itself
		if err != nil {
			return 0, err
		}
		out = in
		if reads == 1 { // a whole Sync change, between the read and its grant
			if _, err := writer.SetAttr(ctx, f.Ino, SetAttrReq{Valid: SetMode, Mode: 0o600, Sync: true}); err != nil {
				return 0, err
			}
		}
		return f.Ino, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Mode&0o777 != 0o600 {
		t.Fatalf("leased read returned mode %o after %d reads, want the change's 600 (it returned before the read ended)", out.Mode&0o777, reads)
	}
	if reads != 2 {
		t.Fatalf("%d reads, want 2", reads)
	}
}
