package meta_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"tessera/internal/meta"
)

// TestGatewayRegistry: a gateway is live while it heartbeats within
// GatewayTTL and not after (the service's injected clock); the rate over
// the last interval comes from the last two heartbeats.
func TestGatewayRegistry(t *testing.T) {
	now := time.Unix(1000, 0)
	api := memService(t, meta.Options{Now: func() time.Time { return now }})
	ga := api.(meta.GatewaysAPI)
	ctx := context.Background()
	if _, err := ga.RegisterGateway(ctx, meta.GatewayNode{ID: "", Addr: "x"}); !errors.Is(err, meta.ErrInvalid) {
		t.Fatalf("no id: %v; want ErrInvalid", err)
	}
	reg := func(id string, bytes uint64) []meta.GatewayNode {
		t.Helper()
		l, err := ga.RegisterGateway(ctx, meta.GatewayNode{ID: id, Addr: "127.0.0.1:1", Started: 7, Counters: meta.GatewayCounters{BytesIngested: bytes}})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	reg("a", 0)
	if l := reg("b", 0); len(l) != 2 {
		t.Fatalf("live after two registrations: %v", l)
	}
	now = now.Add(2 * time.Second)
	reg("a", 2<<20)
	now = now.Add(meta.GatewayTTL)
	l := reg("a", 4<<20)
	if len(l) != 1 || l[0].ID != "a" {
		t.Fatalf("live once b is silent for the TTL: %+v; want only a", l)
	}
	if r := l[0].IngestRate(); r <= 0 {
		t.Fatalf("rate of a: %v", r)
	}
	all, err := ga.Gateways(ctx)
	if err != nil || len(all) != 2 || all[1].ID != "b" || all[1].Live {
		t.Fatalf("Gateways: %+v, %v; want a live and b not", all, err)
	}
}

// TestGatewayInProcess: a gateway inside `tessera up` registers its
// counters under the GatewayInProcess address: Gateways lists it (for
// fileset status) but never as live, so nothing routes to it.
func TestGatewayInProcess(t *testing.T) {
	api := memService(t, meta.Options{})
	ga := api.(meta.GatewaysAPI)
	ctx := context.Background()
	l, err := ga.RegisterGateway(ctx, meta.GatewayNode{ID: "up-0", Addr: meta.GatewayInProcess, Started: 1, Counters: meta.GatewayCounters{BytesIngested: 5}})
	if err != nil || len(l) != 0 {
		t.Fatalf("registration of an in-process gateway: live %+v, %v; want none live", l, err)
	}
	if l, err = ga.RegisterGateway(ctx, meta.GatewayNode{ID: "p", Addr: "127.0.0.1:1"}); err != nil || len(l) != 1 || l[0].ID != "p" {
		t.Fatalf("live beside an in-process gateway: %+v, %v; want only p", l, err)
	}
	all, err := ga.Gateways(ctx)
	if err != nil || len(all) != 2 || all[1].ID != "up-0" || all[1].Live || all[1].Counters.BytesIngested != 5 {
		t.Fatalf("Gateways: %+v, %v; want p and up-0 (not live, its counters)", all, err)
	}
}

// TestGatewayLeaving: a registration with the GatewayLeaving address
// removes the gateway's record at once (a clean stop), the others stay.
func TestGatewayLeaving(t *testing.T) {
	api := memService(t, meta.Options{})
	ga := api.(meta.GatewaysAPI)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := ga.RegisterGateway(ctx, meta.GatewayNode{ID: id, Addr: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ga.RegisterGateway(ctx, meta.GatewayNode{ID: "a", Addr: meta.GatewayLeaving}); err != nil {
		t.Fatal(err)
	}
	all, err := ga.Gateways(ctx)
	if err != nil || len(all) != 1 || all[0].ID != "b" || !all[0].Live {
		t.Fatalf("Gateways after a left: %+v, %v; want b alone, live", all, err)
	}
}
