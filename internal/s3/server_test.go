package s3

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
)

// TestPerClientSlowDown: past the requests in flight allowed to one
// client address, a request is answered 503 with an S3 SlowDown
// document at once; once one ends, the next is served.
func TestPerClientSlowDown(t *testing.T) {
	app := fiber.New()
	app.Use(perClient(1))
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	app.Get("/", func(c fiber.Ctx) error {
		entered <- struct{}{}
		<-release
		return c.SendString("ok")
	})
	first := make(chan *http.Response, 1)
	go func() {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
		if err != nil {
			t.Error(err)
		}
		first <- resp
	}()
	<-entered
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "<Code>SlowDown</Code>") {
		t.Errorf("a second request in flight: %d %q, want 503 SlowDown", resp.StatusCode, body)
	}
	close(release)
	if r := <-first; r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("the first request: %v", r)
	}
	select {
	case <-entered:
		t.Fatal("the refused request reached the handler")
	case <-time.After(0):
	}
	resp, err = app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a request after the first ended: %v %v, want 200", resp, err)
	}
}

// TestServeAdminDirAndListen: the admin socket's private directory is made
// in ServerConfig.AdminDir (a test's or a data directory: a killed process
// leaves nothing in /tmp) and removed at Close; a listen address of port 0
// is refused with an error saying why.
func TestServeAdminDirAndListen(t *testing.T) {
	f := newFixture(t)
	iam := NewIAM(f.svc, nil)
	_, err := Serve(context.Background(), f.b.v, iam, ServerConfig{Listen: "127.0.0.1:0", AdminDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "port 0 (any free port) is not supported") {
		t.Fatalf("listen on port 0: %v; want it refused, saying why", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	admin := t.TempDir()
	s, err := Serve(context.Background(), f.b.v, iam, ServerConfig{Listen: addr, AdminDir: admin, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// (The socket in it is bound by versitygw's admin server, which may
	// start after the S3 one says it listens.)
	dirs, _ := filepath.Glob(filepath.Join(admin, "tessera-s3-admin-*"))
	if len(dirs) != 1 {
		t.Errorf("admin socket directories in AdminDir: %q, want one", dirs)
	}
	if err := s.Close(); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("close: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(admin, "tessera-s3-admin-*")); len(left) != 0 {
		t.Errorf("left after Close: %q", left)
	}
}
