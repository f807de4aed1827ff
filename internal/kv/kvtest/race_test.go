package kvtest

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"tessera/internal/kv"
)

// The race cases must catch the engines they are about: snapStore is an
// optimistic engine with snapshot reads that validates at commit only
// what its check says, and each case run on a too-weak check must fail.
// The holder waits for the other transaction's reads as long as it takes
// (snapStore never blocks it), so both always overlap.

func TestRaceCasesCatchWeakEngines(t *testing.T) {
	for _, tc := range []struct {
		check   string
		failing []string
	}{
		{"none", []string{"RacingIncrements", "WriteSkew", "Phantom"}},
		{"writes", []string{"WriteSkew", "Phantom"}}, // snapshot isolation
		{"reads", []string{"Phantom"}},               // point reads only
		{"ranges", nil},                              // serializable
	} {
		for name, fn := range map[string]func(testing.TB, kv.Store, time.Duration){
			"RacingIncrements": racingIncrements, "WriteSkew": writeSkew, "Phantom": phantom,
		} {
			want := false
			for _, f := range tc.failing {
				want = want || f == name
			}
			msg := runCase(t, fn, newSnapStore(tc.check))
			if got := msg != ""; got != want {
				t.Errorf("%s on an engine validating %s: failed %v (%q), want failed %v", name, tc.check, got, msg, want)
			}
		}
	}
}

// runCase runs fn on s with a recorder and returns its first failure.
func runCase(t *testing.T, fn func(testing.TB, kv.Store, time.Duration), s kv.Store) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r, s, time.Hour)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msg
}

// recorder is a testing.TB that notes failures instead of reporting them;
// Fatal ends the calling goroutine, as testing's does.
type recorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.msg == "" {
		r.msg = fmt.Sprintf(format, args...)
	}
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.Fatalf("%s", fmt.Sprint(args...)) }
func (r *recorder) Error(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)) }

// snapStore runs Updates concurrently on snapshots and, at commit,
// validates per check: "none" nothing, "writes" that no key it writes
// changed since its snapshot, "reads" also the keys it read, "ranges"
// also every range it scanned. It retries a conflicting Update.
type snapStore struct {
	check string
	mu    sync.Mutex
	data  map[string]string
	ver   map[string]int // last commit that wrote each key
	seq   int
}

func newSnapStore(check string) *snapStore {
	return &snapStore{check: check, data: map[string]string{}, ver: map[string]int{}}
}

type snapTxn struct {
	s      *snapStore
	snap   map[string]string
	at     int
	writes map[string]*string // nil: deleted
	reads  []string
	ranges [][2]string
	ro     bool
}

func (s *snapStore) begin(ro bool) *snapTxn {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := make(map[string]string, len(s.data))
	for k, v := range s.data {
		snap[k] = v
	}
	return &snapTxn{s: s, snap: snap, at: s.seq, writes: map[string]*string{}, ro: ro}
}

func (s *snapStore) View(ctx context.Context, fn func(kv.Txn) error) error { return fn(s.begin(true)) }
func (s *snapStore) Close() error                                          { return nil }

func (s *snapStore) Update(ctx context.Context, fn func(kv.Txn) error) error {
	for range 100 {
		tx := s.begin(false)
		if err := fn(tx); err != nil {
			return err
		}
		if s.commit(tx) {
			return nil
		}
	}
	return kv.ErrConflict
}

func (s *snapStore) commit(tx *snapTxn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := func(k string) bool { return s.ver[k] > tx.at }
	var keys []string
	switch s.check {
	case "ranges":
		for k := range s.ver {
			for _, r := range tx.ranges {
				if k >= r[0] && (r[1] == "" || k < r[1]) && changed(k) {
					return false
				}
			}
		}
		fallthrough
	case "reads":
		keys = append(keys, tx.reads...)
		fallthrough
	case "writes":
		for k := range tx.writes {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if changed(k) {
			return false
		}
	}
	s.seq++
	for k, v := range tx.writes {
		s.ver[k] = s.seq
		if v == nil {
			delete(s.data, k)
		} else {
			s.data[k] = *v
		}
	}
	return true
}

func (tx *snapTxn) Get(key []byte) ([]byte, bool, error) {
	k := string(key)
	tx.reads = append(tx.reads, k)
	if v, ok := tx.writes[k]; ok {
		if v == nil {
			return nil, false, nil
		}
		return []byte(*v), true, nil
	}
	v, ok := tx.snap[k]
	if !ok {
		return nil, false, nil
	}
	return []byte(v), true, nil
}

func (tx *snapTxn) Put(key, value []byte) error {
	if tx.ro {
		return fmt.Errorf("put in a view")
	}
	v := string(value)
	tx.writes[string(key)] = &v
	return nil
}

func (tx *snapTxn) Delete(key []byte) error {
	if tx.ro {
		return fmt.Errorf("delete in a view")
	}
	tx.writes[string(key)] = nil
	return nil
}

func (tx *snapTxn) Scan(start, end []byte, fn func(key, value []byte) (bool, error)) error {
	tx.ranges = append(tx.ranges, [2]string{string(start), string(end)})
	merged := map[string]string{}
	for k, v := range tx.snap {
		merged[k] = v
	}
	for k, v := range tx.writes {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	var keys []string
	for k := range merged {
		if strings.Compare(k, string(start)) >= 0 && (end == nil || k < string(end)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if more, err := fn([]byte(k), []byte(merged[k])); err != nil || !more {
			return err
		}
	}
	return nil
}

// failingStore is snapStore whose every Update fails before running its
// function, as an engine does whose cluster is gone.
type failingStore struct{ *snapStore }

func (failingStore) Update(context.Context, func(kv.Txn) error) error {
	return fmt.Errorf("cluster unreachable")
}

// An engine whose Updates fail before their reads makes a race case fail
// with that error; the case must end (before the fix the other Update
// waited for the holder's hold for ever).
func TestRaceCasesEndWhenUpdatesFailEarly(t *testing.T) {
	for name, fn := range map[string]func(testing.TB, kv.Store, time.Duration){
		"RacingIncrements": racingIncrements, "WriteSkew": writeSkew, "Phantom": phantom,
	} {
		if msg := runCase(t, fn, failingStore{newSnapStore("ranges")}); !strings.Contains(msg, "cluster unreachable") {
			t.Errorf("%s on an engine whose Updates fail: reported %q, want the Update's error", name, msg)
		}
	}
}
