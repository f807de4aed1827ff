package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/metrics"
	"tessera/internal/metrics/metricstest"
)

// serve starts a registry's listener on loopback for the test.
func serve(t *testing.T) (*prometheus.Registry, *metrics.Server, func() metricstest.Families) {
	t.Helper()
	reg := metrics.NewRegistry()
	srv, err := metrics.Listen("127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("closing the metrics listener: %v", err)
		}
	})
	return reg, srv, func() metricstest.Families {
		t.Helper()
		f, err := metricstest.Scrape(context.Background(), srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
}

func want(t *testing.T, f metricstest.Families, wantV float64, name string, labels ...string) {
	t.Helper()
	v, ok := f.Value(name, labels...)
	if !ok || v != wantV {
		t.Errorf("%s%v = %v (present %v), want %v", name, labels, v, ok, wantV)
	}
}

// TestMetaAPICountsCalls: every call through the decorator is counted by
// operation and result, timed, and scraped over HTTP; the decorator keeps
// the capabilities of the API it wraps.
func TestMetaAPICountsCalls(t *testing.T) {
	ctx := context.Background()
	reg, _, scrape := serve(t)
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	api := metrics.MetaAPI(svc, metrics.NewMetaCalls(reg, metrics.SideMeta))
	metrics.Meta(reg, svc)

	f0 := scrape()
	if _, ok := f0.Value("tessera_meta_requests_total", "op", "create"); ok {
		t.Errorf("a create counted before any call")
	}
	want(t, f0, 0, "tessera_meta_sessions")

	req := meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true}
	if _, err := api.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Create(ctx, req); !errors.Is(err, meta.ErrExist) {
		t.Fatalf("second exclusive create: %v, want EEXIST", err)
	}
	in, err := svc.Lookup(ctx, meta.RootIno, "f")
	if err != nil {
		t.Fatal(err)
	}
	stale := meta.CommitReq{Ino: in.Ino, Size: 1, Changes: []meta.BlockChange{
		{Index: 0, Old: block.Sum([]byte("what the writer thought")), New: block.Sum([]byte("x"))}}}
	if _, err := api.Commit(ctx, stale); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("commit on a stale block: %v, want a conflict", err)
	}
	if _, err := api.Lookup(ctx, meta.RootIno, "missing"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("lookup of a missing name: %v", err)
	}
	if _, ok := api.(meta.BlockLister); !ok {
		t.Errorf("the decorator over *meta.Service hides meta.BlockLister")
	}
	b, ok := api.(meta.SessionBinder)
	if !ok {
		t.Fatal("the decorator hides meta.SessionBinder")
	}
	info, err := api.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WithSession(info.ID).GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatal(err)
	}

	f := scrape()
	want(t, f, 1, "tessera_meta_requests_total", "op", "create", "result", "ok")
	want(t, f, 1, "tessera_meta_requests_total", "op", "create", "result", "exists")
	want(t, f, 1, "tessera_meta_requests_total", "op", "lookup", "result", "not_found")
	want(t, f, 1, "tessera_meta_requests_total", "op", "commit", "result", "conflict")
	want(t, f, 1, "tessera_meta_requests_total", "op", "getattr", "result", "ok")
	want(t, f, 2, "tessera_meta_request_duration_seconds", "op", "create")
	want(t, f, 1, "tessera_meta_sessions")
	want(t, f, 1, "tessera_meta_leases") // the bound getattr's lease on the root
	want(t, f, 2, "tessera_meta_files")  // the root and f
	want(t, f, 0, "tessera_mover_rounds_total")
	if _, ok := f.Value("go_goroutines"); !ok {
		t.Errorf("no Go runtime series (NewRegistry)")
	}
}

// TestListenMux: /metrics is served, other paths are the caller's.
func TestListenMux(t *testing.T) {
	_, srv, _ := serve(t)
	get := func(path string) int {
		resp, err := http.Get("http://" + srv.Addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/"); c != http.StatusNotFound {
		t.Errorf("GET / before a handler: %d, want 404", c)
	}
	srv.Mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	if c := get("/"); c != http.StatusTeapot {
		t.Errorf("GET / with the caller's handler: %d, want 418", c)
	}
	if c := get("/metrics"); c != http.StatusOK {
		t.Errorf("GET /metrics: %d", c)
	}
	if _, err := metrics.Listen("127.0.0.1:notaport", metrics.NewRegistry(), nil); err == nil {
		t.Errorf("Listen on a bad address: no error")
	}
}
