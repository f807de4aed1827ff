package memcache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"tessera/internal/cachetier/memcache"
	"tessera/internal/cachetier/memcache/mctest"
)

func TestClientRoundTrip(t *testing.T) {
	srv := mctest.Start(t, mctest.Options{})
	c := memcache.New(srv.Addr, memcache.Options{})
	defer c.Close()
	ctx := context.Background()

	v, err := c.Version(ctx)
	if err != nil || v == "" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 60000) // 960000 bytes
	items := []memcache.Item{
		{Key: "k1", Value: []byte("one"), Flags: 7},
		{Key: "k2", Value: []byte{}},
		{Key: "k3", Value: []byte("x\r\nEND\r\n")},
		{Key: "big", Value: big, Exptime: 60},
	}
	if err := c.SetMulti(ctx, items); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "k1", "missing", "k2", "k3", "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d items, want 4", len(got))
	}
	for i, it := range got {
		if it.Key != items[i].Key || !bytes.Equal(it.Value, items[i].Value) || it.Flags != items[i].Flags {
			t.Errorf("item %d: got %s (%d bytes, flags %d)", i, it.Key, len(it.Value), it.Flags)
		}
	}
	if ok, err := c.Delete(ctx, "k1"); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if ok, err := c.Delete(ctx, "k1"); ok || err != nil {
		t.Fatalf("second Delete = %v, %v", ok, err)
	}
	if got, _ := c.Get(ctx, "k1"); len(got) != 0 {
		t.Fatalf("deleted key still there")
	}

	// Over the client's limit: refused before sending.
	if err := c.Set(ctx, memcache.Item{Key: "huge", Value: make([]byte, 2<<20)}); !errors.Is(err, memcache.ErrTooLarge) || memcache.IsConnError(err) {
		t.Fatalf("Set of 2 MiB: %v", err)
	}
	// Over the server's limit (the client allows more): the server says so
	// and stays usable.
	c2 := memcache.New(srv.Addr, memcache.Options{MaxValue: 2 << 20})
	defer c2.Close()
	if err := c2.Set(ctx, memcache.Item{Key: "huge", Value: make([]byte, 2<<20)}); !errors.Is(err, memcache.ErrTooLarge) || memcache.IsConnError(err) {
		t.Fatalf("Set of 2 MiB past the server's limit: %v", err)
	}
	if _, err := c2.Version(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestClientManyKeys(t *testing.T) {
	srv := mctest.Start(t, mctest.Options{})
	c := memcache.New(srv.Addr, memcache.Options{})
	defer c.Close()
	ctx := context.Background()
	var items []memcache.Item
	var keys []string
	for i := range 300 {
		k := fmt.Sprintf("key:%s:%d", strings.Repeat("f", 64), i)
		keys = append(keys, k)
		if i%3 != 0 {
			items = append(items, memcache.Item{Key: k, Value: []byte(k)})
		}
	}
	if err := c.SetMulti(ctx, items); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, keys...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("got %d items, want %d", len(got), len(items))
	}
	for i, it := range got {
		if it.Key != items[i].Key || string(it.Value) != it.Key {
			t.Fatalf("item %d: %s = %q", i, it.Key, it.Value)
		}
	}
}

func TestClientConcurrent(t *testing.T) {
	srv := mctest.Start(t, mctest.Options{})
	c := memcache.New(srv.Addr, memcache.Options{MaxConns: 4, MaxIdle: 2})
	defer c.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := fmt.Sprintf("w%d:%d", w, i)
				if err := c.Set(ctx, memcache.Item{Key: k, Value: []byte(k)}); err != nil {
					errs <- err
					return
				}
				got, err := c.Get(ctx, k)
				if err != nil || len(got) != 1 || string(got[0].Value) != k {
					errs <- fmt.Errorf("get %s: %v, %v", k, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// fakeServer accepts connections and hands each to serve, with a channel
// closed when the test ends.
func fakeServer(t *testing.T, serve func(c net.Conn, quit <-chan struct{})) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit); l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serve(c, quit)
			})
		}
	})
	return l.Addr().String()
}

// TestClientNeverHangs checks the deadlines against servers that stall,
// trickle, or answer garbage.
func TestClientNeverHangs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(net.Conn, <-chan struct{})
		want  error
	}{
		{"silent", func(c net.Conn, stop <-chan struct{}) { <-stop }, memcache.ErrTimeout},
		{"stalls mid-value", func(c net.Conn, stop <-chan struct{}) {
			c.Write([]byte("VALUE k 0 100\r\nabc"))
			<-stop
		}, memcache.ErrTimeout},
		{"garbage", func(c net.Conn, stop <-chan struct{}) {
			c.Write([]byte("HELLO THERE\r\n"))
			<-stop
		}, memcache.ErrProtocol},
		{"endless line", func(c net.Conn, stop <-chan struct{}) {
			c.Write(bytes.Repeat([]byte("x"), 20000))
			<-stop
		}, memcache.ErrProtocol},
		{"closes", func(c net.Conn, stop <-chan struct{}) {}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeServer(t, tc.serve)
			c := memcache.New(addr, memcache.Options{OpTimeout: 100 * time.Millisecond})
			defer c.Close()
			// The error says which bound ended the Get (ErrTimeout: the
			// 100 ms op timeout); how long it took on the wall clock
			// depends on the machine's load and is not checked.
			_, err := c.Get(context.Background(), "k")
			if !memcache.IsConnError(err) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Get: %v, want a ConnError wrapping %v", err, tc.want)
			}
		})
	}
}

func TestClientDialRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := memcache.New(addr, memcache.Options{})
	defer c.Close()
	if _, err := c.Version(context.Background()); !memcache.IsConnError(err) {
		t.Fatalf("Version of a closed port: %v", err)
	}
}

func TestClientContext(t *testing.T) {
	addr := fakeServer(t, func(c net.Conn, stop <-chan struct{}) { <-stop })
	// An op timeout no test run reaches: only the context can end these
	// Gets, and their errors say it did (context.Canceled, not a
	// ConnError), whatever the machine's load.
	c := memcache.New(addr, memcache.Options{OpTimeout: time.Hour})
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Get(ctx, "k")
	if !errors.Is(err, context.Canceled) || memcache.IsConnError(err) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) || memcache.IsConnError(err) {
		t.Fatalf("Get past the context's deadline: %v", err)
	}
	if _, err := c.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with an expired context: %v", err)
	}
}
