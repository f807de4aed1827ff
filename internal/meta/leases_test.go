package meta

import (
	"testing"
	"time"
)

// TestGrantAfterChange checks the race between a read and its grant: a
// change called back after the read's mark but before the grant reaches no
// holder, so the grant itself must send the reader an invalidation.
func TestGrantAfterChange(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := newLeaseTable(Options{}, func() time.Time { return now })
	reader := l.open().ID

	mark := l.generation()
	l.notify(change{ino: 7}) // committed between the read and the grant
	l.notify(change{ino: 8})
	l.grant(reader, 8+1, mark) // another inode: nothing to say
	l.grant(reader, 7, mark)
	cbs, err := l.poll(t.Context(), reader, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cbs) != 1 || cbs[0].Ino != 7 || cbs[0].Kind != CallbackInvalidate {
		t.Fatalf("callbacks = %+v, want one invalidation of inode 7", cbs)
	}

	// A grant whose mark is older than the record of recent changes is
	// invalidated conservatively.
	mark = l.generation()
	for i := range recentChanges + 1 {
		l.notify(change{ino: Ino(100 + i)})
	}
	l.grant(reader, 9, mark)
	cbs, _ = l.poll(t.Context(), reader, cbs[0].Seq, 0)
	if len(cbs) != 1 || cbs[0].Ino != 9 {
		t.Fatalf("callbacks = %+v, want one invalidation of inode 9", cbs)
	}
	// A fresh mark grants a plain lease.
	l.grant(reader, 9, l.generation())
	if cbs, _ = l.poll(t.Context(), reader, cbs[0].Seq, 0); len(cbs) != 0 {
		t.Fatalf("callbacks = %+v, want none", cbs)
	}
	if ws := l.notify(change{ino: 9}); len(ws) != 1 {
		t.Fatalf("notify reached %d holders, want the reader", len(ws))
	}
}

// TestSweepEndsIdleSessions checks that sessions nobody polls are freed.
func TestSweepEndsIdleSessions(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := newLeaseTable(Options{SessionTTL: time.Second}, func() time.Time { return now })
	for range 10 {
		l.grant(l.open().ID, 5, l.generation())
	}
	now = now.Add(2 * time.Second)
	l.open()
	if n := l.sessionCount(); n != 1 {
		t.Fatalf("%d sessions live, want 1", n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.mu.holders) != 0 {
		t.Fatalf("holders left: %v", l.mu.holders)
	}
}
