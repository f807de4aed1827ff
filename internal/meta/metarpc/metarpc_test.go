package metarpc_test

import (
	"context"
	"flag"
	"net"
	"reflect"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	"tessera/internal/meta/metatest"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "seed of the model-based random test (0: a new one, logged)")
	stepsFlag = flag.Int("steps", 400, "steps of the model-based random test over RPC")
)

// serve starts Serve for api on a loopback port and stops it at cleanup.
func serve(t testing.TB, api meta.API) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- metarpc.Serve(ln, api, metarpc.ServeOptions{}) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func dial(t testing.TB, addr string) *metarpc.Client {
	c, err := metarpc.Dial(addr, metarpc.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rpcFactory serves a Service over memkv and returns a client of it.
func rpcFactory(t *testing.T, opts meta.Options) meta.API {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dial(t, serve(t, s))
}

func TestConformance(t *testing.T) {
	metatest.Run(t, rpcFactory)
}

func TestModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("replay with -seed %d", seed)
	metatest.RunModel(t, rpcFactory, seed, *stepsFlag)
}

// TestMoverProgressOverRPC puts a report in process and reads it over the
// wire, which the conformance suite cannot (the RPC client cannot put).
func TestMoverProgressOverRPC(t *testing.T) {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, meta.Options{Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, serve(t, s))
	want := meta.MoverProgress{Round: 2, At: 9, Running: true, Blocks: 4, UnderReplicated: 1, Misplaced: 3,
		BytesToMove: 100, BytesMoved: 50, Err: "boom",
		Lost: 1, LostBlocks: []meta.LostBlock{{Hash: block.Sum([]byte("gone")), Inos: []meta.Ino{42}}}}
	if err := s.PutMoverProgress(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	got, err := c.MoverProgress(context.Background())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("MoverProgress = %+v, %v; want %+v", got, err, want)
	}
	m, err := c.Servers(context.Background())
	if err != nil || m.Replicas != 2 {
		t.Fatalf("Servers = %+v, %v; want the default replicas 2", m, err)
	}
}

// TestFilesets runs the fileset cases over the wire: records, placeholders
// and gateway sections survive the conversions, and a gateway's update
// losing to a local change is still ErrConflict.
func TestFilesets(t *testing.T) {
	metatest.RunFilesets(t, rpcFactory)
}
