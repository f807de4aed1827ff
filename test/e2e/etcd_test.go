package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// TestMetaOverEtcd: `tessera meta --meta-db etcd://…` keeps the namespace
// in a real etcd cluster (spoken to over TLS with a client certificate): a
// file written through a mount is read back, its
// metadata is in etcd under the URL's prefix, and a meta process killed
// with SIGKILL and started again serves it to a fresh mount (the meta
// process holds no state of its own).
func TestMetaOverEtcd(t *testing.T) {
	needBinary(t)
	etcd := etcdtest.StartTLS(t, 1)
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 2, MetaDB: etcd.URL("/e2e")})
	mnt := addMount(t, m).Mount()

	want := make([]byte, 3<<20+123)
	rand.Read(want)
	must(t, os.MkdirAll(filepath.Join(mnt, "d", "e"), 0o755))
	p := filepath.Join(mnt, "d", "e", "f")
	f, err := os.Create(p)
	must(t, err)
	_, err = f.Write(want)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back through the mount: %d bytes, %v; want %d bytes written", len(got), err, len(want))
	}

	// The namespace is in etcd, under the prefix.
	s, err := etcdkv.Open(context.Background(), etcdkv.Options{Endpoints: etcd.Endpoints(), Prefix: "/e2e", TLS: etcd.TLS()})
	must(t, err)
	defer s.Close()
	keys := 0
	must(t, s.View(context.Background(), func(tx kv.Txn) error {
		return tx.Scan(nil, nil, func(_, _ []byte) (bool, error) { keys++; return true, nil })
	}))
	if keys == 0 {
		t.Fatal("no key under the prefix /e2e in etcd after a write through meta over etcd")
	}

	must(t, m.Meta().Kill9())
	must(t, m.Meta().Start())
	mnt2 := addMount(t, m).Mount()
	if got, err := os.ReadFile(filepath.Join(mnt2, "d", "e", "f")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after meta was killed and restarted, a fresh mount reads %d bytes, %v; want the %d bytes written", len(got), err, len(want))
	}
}
