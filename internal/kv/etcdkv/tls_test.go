package etcdkv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestTLS: an etcd:// URL with ca, cert and key speaks TLS to members that
// require client certificates; a client without a certificate is refused.
func TestTLS(t *testing.T) {
	c := etcdtest.StartTLS(t, 1)
	target, err := etcdkv.ParseURL(c.URL("/tls"))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := target.Options()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := etcdkv.Open(ctx, opts)
	if err != nil {
		t.Fatalf("Open over TLS: %v", err)
	}
	defer s.Close()
	if err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("k"), []byte("over tls")) }); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx kv.Txn) error {
		if v, ok, err := tx.Get([]byte("k")); err != nil || string(v) != "over tls" {
			return fmt.Errorf("k = %q, %v, %v", v, ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	anon := opts
	anon.TLS = opts.TLS.Clone()
	anon.TLS.Certificates = nil
	anon.DialTimeout = 2 * time.Second
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if s, err := etcdkv.Open(actx, anon); err == nil {
		s.Close()
		t.Fatal("a client without a certificate was let in")
	}
}
