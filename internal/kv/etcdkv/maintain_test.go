package etcdkv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestMaintainCompactsAndDefragments: a round of Maintain compacts the
// history to the newest revision an earlier round noted at least Retain
// ago, never younger (the retention is kept), defragments the member, and
// records its state, which Maintenance (any process sharing the store)
// and Members (the file's size and in-use size) report.
func TestMaintainCompactsAndDefragments(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, etcdkv.Options{})
	bg := context.Background()
	value := []byte(strings.Repeat("v", 4096))
	write := func(n int) int64 {
		for range n {
			if err := s.Update(bg, func(tx kv.Txn) error { return tx.Put([]byte("k"), value) }); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := s.Client().Get(bg, "probe")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	// readsAt reports whether the history still holds revision rev.
	readsAt := func(rev int64) bool {
		_, err := s.Client().Get(bg, s.Prefix()+"k/k", clientv3.WithRev(rev))
		if err != nil && !errors.Is(err, rpctypes.ErrCompacted) && !strings.Contains(err.Error(), rpctypes.ErrorDesc(rpctypes.ErrCompacted)) {
			t.Fatalf("get at revision %d: %v", rev, err)
		}
		return err == nil
	}
	first := write(1)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	opts := kv.MaintainOptions{Retain: time.Hour, DefragFree: 1 << 40}

	// Round 1 notes the revision; nothing is an hour old: no compaction.
	m, err := s.Maintain(bg, t0, opts)
	if err != nil {
		t.Fatal(err)
	}
	noted := write(200)
	if m.CompactedRev != 0 || !readsAt(first) {
		t.Fatalf("round 1 compacted to %d; want nothing compacted (retention 1h)", m.CompactedRev)
	}
	// Round 2, 30 minutes on: still nothing an hour old.
	if m, err = s.Maintain(bg, t0.Add(30*time.Minute), opts); err != nil || m.CompactedRev != 0 {
		t.Fatalf("round 2: compacted to %d, %v; want nothing compacted", m.CompactedRev, err)
	}
	// Round 3, 61 minutes on: round 1's revision goes, round 2's stays;
	// every member whose file is free enough is defragmented.
	write(50)
	opts.DefragFree = 1
	m, err = s.Maintain(bg, t0.Add(61*time.Minute), opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.CompactedRev < first || m.CompactedRev >= noted {
		t.Fatalf("round 3 compacted to %d; want round 1's revision (>= %d, < %d)", m.CompactedRev, first, noted)
	}
	if readsAt(m.CompactedRev - 1) {
		t.Fatalf("revision %d still readable after compaction to %d", m.CompactedRev-1, m.CompactedRev)
	}
	if !readsAt(noted) {
		t.Fatalf("revision %d (younger than the retention) was compacted", noted)
	}
	if m.DefragAt.IsZero() || m.DefragMember == "" {
		t.Fatalf("round 3 defragmented nothing: %+v", m)
	}
	// Another process sharing the store reports the same state.
	other := open(t, c, etcdkv.Options{Prefix: s.Prefix()})
	got, err := other.Maintenance(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got.CompactedRev != m.CompactedRev || !got.CompactedAt.Equal(t0.Add(61*time.Minute)) || !got.DefragAt.Equal(m.DefragAt) || got.Err != "" {
		t.Fatalf("Maintenance = %+v; want %+v", got, m)
	}
	ms, err := other.Members(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, mem := range ms {
		if mem.DBSize <= 0 || mem.DBInUse <= 0 || mem.DBInUse > mem.DBSize {
			t.Fatalf("member %s: db size %d, in use %d; want 0 < in use <= size", mem.Name, mem.DBSize, mem.DBInUse)
		}
	}
}
