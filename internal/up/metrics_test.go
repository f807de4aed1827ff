package up

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/blockdial"
	"tessera/internal/client"
	"tessera/internal/meta/metarpc"
	"tessera/internal/metrics"
	"tessera/internal/metrics/metricstest"
)

// TestRoleMetrics runs a meta service and a block server as the role
// commands compose them, with one registry served on loopback, and checks
// that the series move with work done over their real ports: a meta call
// over RPC, a block stored and read over HTTP, and (as root, with
// /dev/fuse) a file written and read through a real FUSE mount.
func TestRoleMetrics(t *testing.T) {
	ctx := context.Background()
	reg := metrics.NewRegistry()
	msrv, err := metrics.Listen("127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { msrv.Close() })
	scrape := func() metricstest.Families {
		t.Helper()
		f, err := metricstest.Scrape(ctx, msrv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	value := func(f metricstest.Families, name string, labels ...string) float64 {
		t.Helper()
		v, ok := f.Value(name, labels...)
		if !ok {
			t.Fatalf("no series %s%v in the scrape", name, labels)
		}
		return v
	}

	mn, err := StartMeta(ctx, MetaConfig{DB: MetaDB{Engine: EngineMem}, Metrics: reg,
		Role: MetaRole{GCInterval: -1, ReclaimAfter: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mn.Close() })
	mc, err := metarpc.Dial(mn.Addr, metarpc.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Close() })
	bn, err := StartBlockServer(ctx, mc, BlockServerConfig{ID: "b0", Dir: t.TempDir(), Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bn.Close() })

	f := scrape()
	if v := value(f, "tessera_meta_requests_total", "op", "register_server", "result", "ok"); v < 1 {
		t.Errorf("register_server over RPC counted %v times, want >= 1", v)
	}
	if v := value(f, "tessera_meta_block_servers", "state", "up"); v != 1 {
		t.Errorf("block servers up = %v, want 1", v)
	}
	if v := value(f, "tessera_blockd_stored_bytes", "server", "b0"); v != 0 {
		t.Errorf("stored bytes of an empty server = %v", v)
	}
	if v := value(f, "tessera_blockd_filesystem_free_ratio", "server", "b0"); v <= 0 {
		t.Errorf("free fraction of the server's file system = %v", v)
	}

	// A block stored and read over HTTP, and a read of a missing one.
	bc := blockclient.New(bn.Server.Addr, blockclient.Options{Tries: 1})
	data := bytes.Repeat([]byte("tessera metrics "), 4096) // 64 KiB
	h := block.Sum(data)
	if err := bc.Put(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	if got, err := bc.Get(ctx, h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get back: %d bytes, %v", len(got), err)
	}
	if _, err := bc.Get(ctx, block.Sum([]byte("absent"))); !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("get of an absent block: %v", err)
	}
	f = scrape()
	n := float64(len(data))
	if v := value(f, "tessera_blockd_received_bytes_total", "server", "b0"); v < n {
		t.Errorf("block server received %v bytes, want >= %v", v, n)
	}
	if v := value(f, "tessera_blockd_sent_bytes_total", "server", "b0"); v < n {
		t.Errorf("block server sent %v bytes, want >= %v", v, n)
	}
	if v := value(f, "tessera_blockd_requests_total", "server", "b0", "route", "PUT /v1/blocks/{hex}", "code", "2xx"); v != 1 {
		t.Errorf("PUTs counted: %v, want 1", v)
	}
	if v := value(f, "tessera_blockd_requests_total", "server", "b0", "route", "GET /v1/blocks/{hex}", "code", "4xx"); v != 1 {
		t.Errorf("GETs of an absent block counted: %v, want 1", v)
	}
	if v := value(f, "tessera_blockd_errors_total", "server", "b0", "class", "not-found"); v != 1 {
		t.Errorf("not-found errors counted: %v, want 1", v)
	}
	if v := value(f, "tessera_blockd_stored_bytes", "server", "b0"); v != n {
		t.Errorf("stored bytes = %v, want %v", v, n)
	}

	t.Run("mount", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting needs root")
		}
		if _, err := os.Stat("/dev/fuse"); err != nil {
			t.Skip("no /dev/fuse")
		}
		dir := t.TempDir()
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		node, err := StartMountWith(ctx, MountConfig{Dir: dir, Metrics: reg, Client: client.Config{
			Meta: mc, Dial: blockdial.DialBlockServer, Logger: log, DiskCacheDir: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- node.Serve(mctx) }()
		t.Cleanup(func() {
			stop()
			if err := <-served; err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
		before := scrape()
		content := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("read back: %d bytes, %v", len(got), err)
		}
		f := scrape()
		size := float64(len(content))
		moved := func(name string, least float64, labels ...string) {
			t.Helper()
			b, _ := before.Value(name, labels...)
			if d := value(f, name, labels...) - b; d < least {
				t.Errorf("%s%v moved by %v, want >= %v", name, labels, d, least)
			}
		}
		moved("tessera_fuse_written_bytes_total", size)
		moved("tessera_fuse_requests_total", 1, "op", "write", "result", "ok")
		moved("tessera_fuse_requests_total", 1, "op", "create", "result", "ok")
		moved("tessera_fuse_request_duration_seconds", 1, "op", "write")
		moved("tessera_client_block_sent_bytes_total", size)
		moved("tessera_client_commits_total", 1)
		moved("tessera_client_meta_requests_total", 1, "op", "commit", "result", "ok")
		moved("tessera_meta_requests_total", 1, "op", "commit", "result", "ok")
		moved("tessera_blockd_received_bytes_total", size, "server", "b0")
		if v := value(f, "tessera_meta_sessions"); v != 1 {
			t.Errorf("meta sessions with one mount = %v", v)
		}
		value(f, "tessera_fuse_requests_in_flight")

		// Under posix reads bypass the kernel's page cache: a second read
		// of a file is answered by the client's memory cache.
		d := filepath.Join(dir, "posix")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(d, "user.tessera.policy", []byte("posix"), 0); err != nil {
			t.Fatal(err)
		}
		q := filepath.Join(d, "g")
		if err := os.WriteFile(q, content, 0o644); err != nil {
			t.Fatal(err)
		}
		before = scrape()
		for range 2 {
			if got, err := os.ReadFile(q); err != nil || !bytes.Equal(got, content) {
				t.Fatalf("read back under posix: %d bytes, %v", len(got), err)
			}
		}
		f = scrape()
		moved("tessera_client_cache_hits_total", 1, "tier", "memory")
		moved("tessera_fuse_read_bytes_total", 2*size)
		for _, tier := range []string{"memory", "disk", "memcached", "memcached_stat"} {
			value(f, "tessera_client_cache_hits_total", "tier", tier)
		}
	})
}
