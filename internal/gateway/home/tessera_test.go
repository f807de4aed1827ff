package home_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/gateway/home"
	"tessera/internal/gateway/home/hometest"
	"tessera/internal/meta"
	"tessera/internal/up"
)

// tesseraHome is a second Tessera cluster started in this process as
// `tessera up` starts one (internal/up): a meta service on the bolt engine
// and two block servers, TLS on every port with the credentials up makes.
type tesseraHome struct {
	Addr string
	TLS  *up.LocalTLS
	Dir  string // the data directory (TLS in DIR/tls)
	Svc  *meta.Service
}

func startTesseraHome(t *testing.T) *tesseraHome {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	lt, err := up.EnsureLocalTLS(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	node, err := up.StartMeta(ctx, up.MetaConfig{
		DB:    up.MetaDB{Engine: up.EngineBolt, Path: filepath.Join(dir, "meta.db")},
		Creds: lt.Meta,
		// Servers stay up however slow the test; nothing is collected.
		Role: up.MetaRole{DownAfter: time.Hour, MoverInterval: time.Hour, GCInterval: -1, ReclaimAfter: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	for i := range 2 {
		b, err := up.StartBlockServer(ctx, node.Svc, up.BlockServerConfig{
			ID: fmt.Sprintf("b%d", i), Dir: filepath.Join(dir, fmt.Sprintf("b%d", i)),
			Heartbeat: time.Hour, Creds: lt.Blocks[i],
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
	}
	return &tesseraHome{Addr: node.Addr, TLS: lt, Dir: dir, Svc: node.Svc}
}

// url returns the tessera:// URL of path with the mount's (client-rw)
// certificate.
func (h *tesseraHome) url(path string) string {
	tls := up.TLSDir(h.Dir)
	cert, key := auth.CertFiles(tls, up.MountCertName)
	q := url.Values{"cert": {cert}, "key": {key}, "ca": {filepath.Join(tls, auth.CACertFile)}}
	return fmt.Sprintf("tessera://%s/%s?%s", h.Addr, path, q.Encode())
}

func TestTesseraConformance(t *testing.T) {
	h := startTesseraHome(t)
	n := 0
	hometest.Run(t, func(t *testing.T) home.Store {
		n++
		// Each subtest in a directory of its own, the first at the root.
		path := ""
		if n > 1 {
			path = fmt.Sprintf("home%d", n)
			if _, err := h.Svc.Create(context.Background(), meta.CreateReq{
				Parent: meta.RootIno, Name: path, Mode: syscall.S_IFDIR | 0o755}); err != nil {
				t.Fatal(err)
			}
		}
		s, err := home.Open(context.Background(), h.url(path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, hometest.Options{})
}

// TestTesseraRefusesOtherCA: a certificate of another CA does not open the
// home (the TLS handshake fails), and the error says so.
func TestTesseraRefusesOtherCA(t *testing.T) {
	h := startTesseraHome(t)
	other := t.TempDir()
	if _, err := up.EnsureLocalTLS(other, 0); err != nil {
		t.Fatal(err)
	}
	tls := up.TLSDir(other)
	cert, key := auth.CertFiles(tls, up.MountCertName)
	q := url.Values{"cert": {cert}, "key": {key}, "ca": {filepath.Join(tls, auth.CACertFile)}, "meta_timeout": {"2s"}}
	s, err := home.Open(context.Background(), fmt.Sprintf("tessera://%s/?%s", h.Addr, q.Encode()))
	if err == nil {
		s.Close()
		t.Fatal("a certificate of another CA opened the home")
	}
	t.Logf("refused: %v", err)
}
