package etcdkv_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/kv/kvtest"
)

// opener returns stores over the cluster, each test directory its own key
// prefix (so that a reopen on the same directory finds its data).
func opener(endpoints func() []string, before func(), opts ...etcdkv.Options) kvtest.Opener {
	return func(t *testing.T, dir string) kv.Store {
		if before != nil {
			before()
		}
		sum := sha256.Sum256([]byte(dir))
		var o etcdkv.Options
		if len(opts) > 0 {
			o = opts[0]
		}
		o.Endpoints, o.Prefix = endpoints(), "/t/"+hex.EncodeToString(sum[:8])
		s, err := etcdkv.Open(context.Background(), o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
}

func TestConformanceOneMember(t *testing.T) {
	c := etcdtest.Start(t, 1)
	kvtest.RunDurable(t, opener(c.Endpoints, nil))
}

// TestConformanceLosingAMember runs the suite on three members and kills
// the leader with SIGKILL part way: the remaining majority carries on.
func TestConformanceLosingAMember(t *testing.T) {
	c := etcdtest.Start(t, 3)
	opens := 0
	killed := -1
	kvtest.RunDurable(t, opener(c.Endpoints, func() {
		opens++
		if opens == 8 {
			killed = c.Leader()
			if killed < 0 {
				killed = 0
			}
			t.Logf("killing etcd member %s (the leader) with SIGKILL", c.Members[killed].Name)
			c.Kill(killed)
			c.WaitReady()
		}
	}))
	if killed < 0 {
		t.Fatal("the suite ended before a member was killed")
	}
}

// TestConformanceLocalUpdateReads runs the suite on three members with
// Updates reading their snapshots from the member the client talks to
// (update-reads=local): the commit's compares, and for Updates that only
// read or whose fn failed a Txn of compares, keep them serializable.
func TestConformanceLocalUpdateReads(t *testing.T) {
	c := etcdtest.Start(t, 3)
	kvtest.RunDurable(t, opener(c.Endpoints, nil, etcdkv.Options{LocalUpdateReads: true}))
}
