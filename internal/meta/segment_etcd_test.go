package meta

import (
	"context"
	"fmt"
	"math"
	"testing"

	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestSegmentsOverEtcd runs the segmented reap, truncate (with crashes
// between segments and a restart) and the commit bound over a real etcd
// member, through an etcdkv store bounded at 256 operations per
// transaction (its Options.MaxTxnOps, which refuses as the server's
// --max-txn-ops does, with ErrTooLarge) and a Service bounded the same.
// Files of 300 blocks need some 600 writes to reap or cut: before
// segmenting, etcdkv refused those transactions and an orphan that size
// was never reaped.
func TestSegmentsOverEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const bound = 256
	n := 0
	env := func(t *testing.T) *segEnv {
		n++
		s, err := etcdkv.Open(context.Background(), etcdkv.Options{Endpoints: c.Endpoints(),
			Prefix: fmt.Sprintf("/segments%d", n), MaxTxnOps: bound})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return newSegEnvOver(t, s, bound, math.MaxInt)
	}
	t.Run("Reap", func(t *testing.T) { reapCase(env(t)) })
	t.Run("ReapCrash", func(t *testing.T) { reapCrashCase(env(t)) })
	t.Run("Truncate", func(t *testing.T) { truncateCase(env(t)) })
	t.Run("CommitBound", func(t *testing.T) { commitBoundCase(env(t)) })
}
