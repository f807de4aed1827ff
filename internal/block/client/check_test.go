package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/client"
	"tessera/internal/block/scrub"
	"tessera/internal/block/server"
)

// TestCheckOverHTTP: Check without quarantine reports a corrupt copy and
// leaves its file alone; with quarantine the file is moved aside; a good
// copy is good and an absent one not found.
func TestCheckOverHTTP(t *testing.T) {
	d := openDisk(t, t.TempDir())
	c := serve(t, server.New(d, server.Options{}), client.Options{})
	ctx := context.Background()
	good, bad := blocktest.Data(1, 5000), blocktest.Data(2, 5000)
	gh, bh := block.Sum(good), block.Sum(bad)
	for _, b := range [][]byte{good, bad} {
		if err := c.Put(ctx, block.Sum(b), b); err != nil {
			t.Fatal(err)
		}
	}
	bad[7] ^= 1
	if err := os.WriteFile(d.Path(bh), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(ctx, gh, false); err != nil {
		t.Fatalf("Check of a good copy: %v", err)
	}
	if err := c.Check(ctx, block.Sum([]byte("absent")), false); !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("Check of an absent block: %v; want ErrNotFound", err)
	}
	if err := c.Check(ctx, bh, false); !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("Check of a corrupt copy: %v; want ErrCorrupt", err)
	}
	if _, err := os.Stat(d.Path(bh)); err != nil {
		t.Fatalf("Check without quarantine moved the corrupt file: %v", err)
	}
	if err := c.Check(ctx, bh, true); !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("Check with quarantine of a corrupt copy: %v; want ErrCorrupt", err)
	}
	if _, err := os.Stat(d.Path(bh)); !os.IsNotExist(err) {
		t.Fatalf("Check with quarantine left the corrupt file in place (stat: %v)", err)
	}
	if q, _ := filepath.Glob(filepath.Join(d.Dir(), "quarantine", bh.String()+".*")); len(q) != 1 {
		t.Fatalf("quarantine holds %v", q)
	}
}

// TestScrubProgressOverHTTP: GET /v1/scrub serves Options.Scrub, and a
// server without one answers not found.
func TestScrubProgressOverHTTP(t *testing.T) {
	d := openDisk(t, t.TempDir())
	want := scrub.Progress{Rate: 5, Rounds: 2, Blocks: 3, Bytes: 4, Corrupt: 1, LastCorrupt: "x"}
	c := serve(t, server.New(d, server.Options{Scrub: func() scrub.Progress { return want }}), client.Options{})
	got, err := c.Scrub(context.Background())
	if err != nil || got != want {
		t.Fatalf("Scrub = %+v, %v; want %+v", got, err, want)
	}
	none := serve(t, server.New(d, server.Options{}), client.Options{})
	if _, err := none.Scrub(context.Background()); !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("Scrub of a server without one: %v; want ErrNotFound", err)
	}
}
