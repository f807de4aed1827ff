package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/client"
	"tessera/internal/block/disk"
	"tessera/internal/block/server"
	"tessera/internal/block/tlsconn"
	"tessera/internal/logtest"
)

// countWrites counts the writes on every connection it accepts.
type countWrites struct {
	net.Listener
	n *atomic.Int64
}

func (l countWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{c, l.n}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Write(p []byte) (int, error) { c.n.Add(1); return c.Conn.Write(p) }

// startTLSStore is a block server on loopback serving st over TLS, the
// writes on its sockets counted; it returns its address and a client-rw
// client of it.
func startTLSStore(t *testing.T, st *disk.Store) (c *client.Client, writes *atomic.Int64) {
	t.Helper()
	ca, err := auth.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	logs := new(logtest.Buffer)
	creds := issueCreds(t, ca, "b0", auth.RoleBlockd, time.Hour)
	hd := server.New(st, server.Options{Creds: creds, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	writes = new(atomic.Int64)
	srv := server.NewHTTPServer(ln.Addr().String(), hd, slog.New(slog.NewTextHandler(logs, nil)))
	go srv.Serve(server.Listener(countWrites{ln, writes}, creds))
	t.Cleanup(func() { srv.Close() })
	rw := issueCreds(t, ca, "mount", auth.RoleClientRW, time.Hour)
	return client.New(ln.Addr().String(), client.Options{Creds: rw}), writes
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>12)
	}
	return b
}

// TestTLSGetSendsBlockInFewWrites: a 4 MiB block read over TLS leaves the
// server in tlsconn.FlushSize writes. Through ServeContent's 32 KiB copy
// each 16 KiB record was its own write(2): 256 of them, a wake-up of the
// reader each.
func TestTLSGetSendsBlockInFewWrites(t *testing.T) {
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	data := pattern(4 << 20)
	h := block.Sum(data)
	if err := st.Put(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	c, writes := startTLSStore(t, st)
	if _, err := c.Get(ctx, h); err != nil { // the handshake and a first reply
		t.Fatal(err)
	}
	for range 3 {
		w0 := writes.Load()
		got, err := c.Get(ctx, h)
		if err != nil || string(got) != string(data) {
			t.Fatalf("get 4 MiB over TLS: %d bytes, equal %v, %v", len(got), string(got) == string(data), err)
		}
		if n, want := writes.Load()-w0, int64(len(data)/tlsconn.FlushSize+4); n > want {
			t.Fatalf("a 4 MiB reply took %d writes, want at most %d", n, want)
		}
	}
}

// TestTLSGetOfCorruptBlock: over TLS, where the server hashes the block in
// memory, a corrupt copy is still refused as corrupt and quarantined by the
// store, as on plain HTTP.
func TestTLSGetOfCorruptBlock(t *testing.T) {
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	data := pattern(1 << 20)
	h := block.Sum(data)
	if err := st.Put(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), data...)
	bad[12345] ^= 1
	if err := os.WriteFile(st.Path(h), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := startTLSStore(t, st)
	if _, err := c.Get(ctx, h); !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("get of a corrupt block over TLS: %v, want block.ErrCorrupt", err)
	}
	if _, err := os.Stat(st.Path(h)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the corrupt file is still in the store (%v), want it quarantined", err)
	}
}
