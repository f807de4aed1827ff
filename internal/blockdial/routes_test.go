package blockdial

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"tessera/internal/meta"
)

// TestRoutes: a block server dialed at ADDR is reached through VIA, and a
// malformed TESSERA_ROUTES makes every dial fail naming the bad entry.
func TestRoutes(t *testing.T) {
	// VIA: a real listener answering HTTP; ADDR: a port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "via")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()

	t.Setenv(RoutesEnv, addr+"="+l.Addr().String())
	d := New(nil)
	if d.err != nil {
		t.Fatal(d.err)
	}
	c := &http.Client{Transport: d.tr}
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+addr+"/", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET through the route: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "via" {
		t.Fatalf("GET http://%s/ answered %q, want the VIA server's \"via\"", addr, b)
	}

	t.Setenv(RoutesEnv, addr+"=nonsense")
	bad := New(nil)
	if _, err := bad.Block(meta.Server{Addr: addr}); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("Block with a malformed %s: %v, want an error naming the entry", RoutesEnv, err)
	}
}
