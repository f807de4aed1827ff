package metatest

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Sweeper is the optional capability of marking silent servers down; the
// in-process Service has it, an RPC client does not (the meta process runs
// the sweeper), so the cases that need it are skipped over RPC.
type Sweeper interface {
	SweepServers(ctx context.Context, now time.Time, downAfter time.Duration) (meta.ServerMap, error)
}

// ProgressPutter is the optional capability of storing the mover's report.
type ProgressPutter interface {
	PutMoverProgress(ctx context.Context, p meta.MoverProgress) error
}

func (h *harness) register(s meta.Server) meta.ServerMap {
	h.t.Helper()
	m, err := h.api.RegisterServer(h.ctx, s)
	if err != nil {
		h.t.Fatalf("register %s: %v", s.ID, err)
	}
	return m
}

func (h *harness) setState(id, state string) meta.ServerMap {
	h.t.Helper()
	m, err := h.api.SetServerState(h.ctx, id, state)
	if err != nil {
		h.t.Fatalf("set %s %s: %v", id, state, err)
	}
	return m
}

// stateOf returns the state of server id in m ("" when absent).
func stateOf(m meta.ServerMap, id string) string {
	for _, s := range m.Servers {
		if s.ID == id {
			return s.State
		}
	}
	return ""
}

func testServers(h *harness) {
	m, err := h.api.Servers(h.ctx)
	h.wantErr("servers", err, nil)
	eq(h, "empty", m.Epoch+uint64(len(m.Servers)), 0)
	eq(h, "default replicas", m.Replicas, 1)
	b1 := meta.Server{ID: "b1", Addr: "127.0.0.1:7001", Dir: "/d1", Host: "h1", Rack: "r1", Site: "s1", State: "down", Seen: 1}
	m = h.register(b1)
	eq(h, "epoch 1", m.Epoch, uint64(1))
	eq(h, "a new server is up", m.Servers[0].State, meta.StateUp)
	eq(h, "seen is the service's clock", m.Servers[0].Seen, h.clock.Now().UnixNano())
	at := h.clock.Advance(time.Second)
	m = h.register(b1)
	eq(h, "heartbeat keeps epoch", m.Epoch, uint64(1))
	eq(h, "seen updated", m.Servers[0].Seen, at)
	b1.Rack = "r2"
	m = h.register(b1)
	eq(h, "label change bumps", m.Epoch, uint64(2))
	b0 := meta.Server{ID: "b0", Addr: "127.0.0.1:7000"}
	m = h.register(b0)
	eq(h, "new server bumps", m.Epoch, uint64(3))
	got, err := h.api.Servers(h.ctx)
	h.wantErr("servers", err, nil)
	eq(h, "map", got.Epoch, uint64(3))
	b0.State, b0.Seen = meta.StateUp, at
	b1.State, b1.Seen = meta.StateUp, at
	if !slices.Equal(got.Servers, []meta.Server{b0, b1}) {
		h.t.Fatalf("servers = %+v", got.Servers)
	}
	_, err = h.api.RegisterServer(h.ctx, meta.Server{})
	h.wantErr("empty id", err, meta.ErrInvalid)
	_, err = h.api.RegisterServer(h.ctx, meta.Server{ID: strings.Repeat("b", meta.MaxServerID+1)})
	h.wantErr("long id", err, meta.ErrNameTooLong)
}

// testMembership walks a server through drain, silence, return and removal,
// checking the epoch changes exactly when the map does.
func testMembership(h *harness) {
	h.register(meta.Server{ID: "b0", Addr: "a0"})
	m := h.register(meta.Server{ID: "b1", Addr: "a1"})
	e := m.Epoch
	step := func(what string, m meta.ServerMap, id, state string, bump bool) {
		h.t.Helper()
		eq(h, what+": state of "+id, stateOf(m, id), state)
		want := e
		if bump {
			want++
		}
		eq(h, what+": epoch", m.Epoch, want)
		e = m.Epoch
	}
	step("drain", h.setState("b1", meta.StateDraining), "b1", meta.StateDraining, true)
	step("drain again", h.setState("b1", meta.StateDraining), "b1", meta.StateDraining, false)
	step("heartbeat while draining", h.register(meta.Server{ID: "b1", Addr: "a1", State: meta.StateUp}), "b1", meta.StateDraining, false)
	step("undrain", h.setState("b1", meta.StateUp), "b1", meta.StateUp, true)
	_, err := h.api.SetServerState(h.ctx, "b1", meta.StateDown)
	h.wantErr("set down", err, meta.ErrInvalid)
	_, err = h.api.SetServerState(h.ctx, "nope", meta.StateDraining)
	h.wantErr("unknown server", err, meta.ErrNotFound)

	if sw, ok := h.api.(Sweeper); ok {
		h.clock.Advance(3 * time.Second)
		h.register(meta.Server{ID: "b0", Addr: "a0"}) // b0 heartbeats, b1 is silent
		m, err := sw.SweepServers(h.ctx, h.clock.Now(), 5*time.Second)
		h.wantErr("sweep", err, nil)
		step("sweep before the timeout", m, "b1", meta.StateUp, false)
		h.clock.Advance(3 * time.Second)
		m, err = sw.SweepServers(h.ctx, h.clock.Now(), 5*time.Second)
		h.wantErr("sweep", err, nil)
		step("sweep after the timeout", m, "b1", meta.StateDown, true)
		eq(h, "b0 heard from 3 s ago", stateOf(m, "b0"), meta.StateUp)
		m, _ = sw.SweepServers(h.ctx, h.clock.Now(), 5*time.Second)
		step("sweep again", m, "b1", meta.StateDown, false)
		step("down comes back up", h.register(meta.Server{ID: "b1", Addr: "a1"}), "b1", meta.StateUp, true)
		h.setState("b1", meta.StateDraining)
		e++
		h.clock.Advance(6 * time.Second)
		h.register(meta.Server{ID: "b0", Addr: "a0"})
		m, _ = sw.SweepServers(h.ctx, h.clock.Now(), 5*time.Second)
		step("silent draining server", m, "b1", meta.StateDown, true)
		eq(h, "b0 still up", stateOf(m, "b0"), meta.StateUp)
	}
	m = h.setState("b1", meta.StateRemoved)
	eq(h, "removed", len(m.Servers), 1)
	eq(h, "remove bumps", m.Epoch, e+1)
	_, err = h.api.SetServerState(h.ctx, "b1", meta.StateRemoved)
	h.wantErr("remove twice", err, meta.ErrNotFound)
}

func testReplicas(h *harness) {
	m, err := h.api.SetReplicas(h.ctx, 1)
	h.wantErr("set the default", err, nil)
	eq(h, "same factor keeps epoch", m.Epoch, uint64(0))
	m, err = h.api.SetReplicas(h.ctx, 3)
	h.wantErr("set 3", err, nil)
	eq(h, "replicas", m.Replicas, 3)
	eq(h, "change bumps", m.Epoch, uint64(1))
	m, _ = h.api.SetReplicas(h.ctx, 3)
	eq(h, "again keeps epoch", m.Epoch, uint64(1))
	m, _ = h.api.Servers(h.ctx)
	eq(h, "stored", m.Replicas, 3)
	for _, bad := range []int{0, -1, meta.MaxReplicas + 1} {
		_, err = h.api.SetReplicas(h.ctx, bad)
		h.wantErr("bad factor", err, meta.ErrInvalid)
	}
}

func testMoverProgress(h *harness) {
	p, err := h.api.MoverProgress(h.ctx)
	h.wantErr("progress", err, nil)
	if !reflect.DeepEqual(p, meta.MoverProgress{}) {
		h.t.Fatalf("none yet = %+v, want the zero report", p)
	}
	pp, ok := h.api.(ProgressPutter)
	if !ok {
		return
	}
	want := meta.MoverProgress{Round: 3, At: 5, Running: true, Blocks: 10, UnderReplicated: 2,
		Misplaced: 1, BytesToMove: 1 << 40, BytesMoved: 7, Err: "list b1: unreachable",
		Lost: 2, LostBlocks: []meta.LostBlock{{Hash: block.Sum([]byte("lost")), Inos: []meta.Ino{12, 13}}}}
	h.wantErr("put", pp.PutMoverProgress(h.ctx, want), nil)
	p, err = h.api.MoverProgress(h.ctx)
	h.wantErr("progress", err, nil)
	if !reflect.DeepEqual(p, want) {
		h.t.Fatalf("round trip = %+v, want %+v", p, want)
	}
}
