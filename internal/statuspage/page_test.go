package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"tessera/internal/admin"
	"tessera/internal/block"
	"tessera/internal/blockdial"
	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/statuspage"
	"tessera/internal/up"
)

// testCluster is a real meta node (engine in memory, RPC listener, meta
// role) and three real block servers on loopback, b2 draining, with one
// file of two blocks stored once on b0 (R=1).
type testCluster struct {
	node   *up.MetaNode
	blocks []*up.BlockServerNode
	ino    meta.Ino
}

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	ctx := t.Context()
	node, err := up.StartMeta(ctx, up.MetaConfig{
		DB:              up.MetaDB{Engine: up.EngineMem},
		DefaultReplicas: 1,
		BlockSize:       64 << 10,
		// Servers stay up however slow the test (their heartbeats are
		// an hour apart), and no collection runs. The mover runs, but
		// moves nothing: with R=1 and two servers up, each block's
		// candidates are both, so a copy on b0 is where it belongs.
		Role: up.MetaRole{DownAfter: time.Hour, MoverInterval: time.Hour, GCInterval: -1, ReclaimAfter: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	c := &testCluster{node: node}
	for i := range 3 {
		b, err := up.StartBlockServer(ctx, node.Svc, up.BlockServerConfig{ID: fmt.Sprintf("b%d", i), Dir: t.TempDir(),
			Host: fmt.Sprintf("h%d", i), Heartbeat: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		c.blocks = append(c.blocks, b)
	}
	if _, err := node.Svc.SetServerState(ctx, "b2", meta.StateDraining); err != nil {
		t.Fatal(err)
	}
	in, err := node.Svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	c.ino = in.Ino
	c.write(t, 0, "block zero", "block one")
	return c
}

// write commits blocks from index first, each stored on b0, and sets the
// file's size to their end.
func (c *testCluster) write(t *testing.T, first int, contents ...string) {
	t.Helper()
	var changes []meta.BlockChange
	for i, s := range contents {
		h := block.Sum([]byte(s))
		if err := c.blocks[0].Store.Put(t.Context(), h, []byte(s)); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, meta.BlockChange{Index: uint64(first + i), New: h})
	}
	size := uint64(first+len(contents)-1)*(64<<10) + uint64(len(contents[len(contents)-1]))
	if _, err := c.node.Svc.Commit(t.Context(), meta.CommitReq{Ino: c.ino, Forced: true, Size: size, Changes: changes}); err != nil {
		t.Fatal(err)
	}
}

// get serves path through h and returns the status and body.
func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), method, path, nil))
	return rec.Code, rec.Body.String()
}

// serverRows parses page and returns its server rows' data-id mapped to
// their data-state, failing on HTML that does not parse.
func serverRows(t *testing.T, page string) map[string]string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	rows := map[string]string{}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "tr" || attr(n, "class") != "server" {
			continue
		}
		rows[attr(n, "data-id")] = attr(n, "data-state")
	}
	return rows
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// TestPageListsServers: the page of a real meta node lists every
// registered server with its state, and shows capacity, health, mover,
// throughput and the meta role's warnings (here: its engine is in memory).
func TestPageListsServers(t *testing.T) {
	c := startCluster(t)
	code, page := get(t, c.node.Status, "GET", "/")
	if code != 200 {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	rows := serverRows(t, page)
	want := map[string]string{"b0": "up", "b1": "up", "b2": "draining"}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("server rows %v, want %v", rows, want)
	}
	for _, s := range []string{
		c.blocks[0].Server.Addr,
		`id="capacity"`, "19 B in 2 blocks", // "block zero" + "block one", stored once
		`id="health"`, "under-replicated blocks",
		`id="mover"`, `id="throughput"`, "measuring", "reads go from the mounts",
		"meta database in memory", // the meta role's warning, from the ring
		"free of its file system", "(3 servers reporting)",
		"on disk (stores as du counts them, 3 servers reporting)",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

// TestStatusJSON: /status.json is the same snapshot for scripts, and the
// throughput is the counters' change between two requests over the time
// between them (a fake clock).
func TestStatusJSON(t *testing.T) {
	c := startCluster(t)
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	h := statuspage.New(statuspage.Config{Cluster: &admin.Cluster{Meta: c.node.Svc, Dial: blockdial.DialAdmin},
		Errors: c.node.Errors, Clock: clk})
	snap := func() statuspage.Snapshot {
		t.Helper()
		code, body := get(t, h, "GET", "/status.json")
		var s statuspage.Snapshot
		if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil {
			t.Fatalf("GET /status.json: %d, %v\n%s", code, err, body)
		}
		return s
	}
	s := snap()
	if len(s.Servers) != 3 || s.Servers[0].ID != "b0" || s.Servers[2].State != "draining" || s.Servers[0].Blocks != 2 {
		t.Fatalf("servers %+v, want b0 (2 blocks), b1, b2 draining", s.Servers)
	}
	if s.Files != 2 || s.Capacity.StoredBytes != 19 || s.Capacity.Reporting != 3 || s.Throughput.Measured {
		t.Fatalf("snapshot %+v, want 2 inodes, 19 bytes stored by 3 servers, no rate yet", s)
	}
	if c := s.Capacity; c.SpaceReporting != 3 || c.FreeBytes <= 0 || c.SizeBytes < c.FreeBytes || s.Servers[1].Free == nil {
		t.Fatalf("capacity %+v, servers %+v: want the free space of 3 servers' file systems", c, s.Servers)
	}
	// Two blocks take a file-system block each, and their directories more.
	if c := s.Capacity; c.OnDiskReporting != 3 || c.OnDiskBytes < 2*4096 || s.Servers[0].OnDisk == nil || *s.Servers[0].OnDisk < 2*4096 {
		t.Fatalf("capacity %+v, servers %+v: want what 3 servers' stores take on disk", c, s.Servers)
	}
	if len(s.Errors) == 0 || !strings.Contains(s.Errors[len(s.Errors)-1].Msg, "in memory") {
		t.Fatalf("errors %+v, want the meta role's warning about its engine", s.Errors)
	}
	logical := s.LogicalBytes
	c.write(t, 2, strings.Repeat("x", 4000)) // 4000 more stored bytes, the file grows to 2×64 KiB + 4000
	clk.Advance(2 * time.Second)
	s = snap()
	tp := s.Throughput
	wantLogical := float64(s.LogicalBytes-logical) / 2
	if !tp.Measured || tp.Interval != 2 || tp.LogicalBytesPerSec != wantLogical || !tp.StoredMeasured || tp.StoredBytesPerSec != 2000 {
		t.Fatalf("throughput %+v, want %v logical and 2000 stored bytes/s over 2 s", tp, wantLogical)
	}
	// A request sooner than a second after the last sample shows the same rate.
	clk.Advance(100 * time.Millisecond)
	if again := snap().Throughput; again != tp {
		t.Fatalf("throughput %+v 100 ms later, want %+v again", again, tp)
	}
}

// TestPageRoutes: only GET and HEAD of / and /status.json.
func TestPageRoutes(t *testing.T) {
	c := startCluster(t)
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/", 200}, {"HEAD", "/", 200}, {"GET", "/status.json", 200},
		{"GET", "/nothing", 404}, {"POST", "/", 405}, {"DELETE", "/status.json", 405},
	} {
		if code, body := get(t, c.node.Status, tc.method, tc.path); code != tc.code {
			t.Errorf("%s %s: %d, want %d\n%s", tc.method, tc.path, code, tc.code, body)
		}
	}
}

// TestPageMetaUnreachable: a cluster that cannot be read gives 503 and
// says why, on the page and in the JSON.
func TestPageMetaUnreachable(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	h := statuspage.New(statuspage.Config{Cluster: &admin.Cluster{Meta: c.node.Svc, Dial: blockdial.DialAdmin}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "could not be read") {
		t.Fatalf("GET / with the cluster unreadable: %d\n%s", rec.Code, rec.Body)
	}
}

// TestRefusedCallersNotShown: the page needs no credentials, so refusals
// of callers (records naming a peer: the meta port's refused connections
// and calls, whose reason may name the identity, its role and --root) are
// shown only as counts by reason; neither the page nor its JSON shows an
// address, an identity or a path of theirs. Before, the recent-errors table
// listed each with all its attributes.
func TestRefusedCallersNotShown(t *testing.T) {
	c := startCluster(t)
	log := slog.New(statuspage.Tee(slog.DiscardHandler, c.node.Errors))
	for i := range 2 {
		log.Warn("meta rpc refused a call", "peer", fmt.Sprintf("192.0.2.%d:4242", 5+i), "method", "/tessera.meta.v1.Meta/SetXattr",
			"why", "permission denied: client-ro (role ro, root /secret/alice) may not write")
	}
	// A line of a rate-limited log (ratelog.Handler) stands for those it held back too.
	log.Warn("meta rpc refused a call", "peer", "192.0.2.7:4242", "method", "/tessera.meta.v1.Meta/Lookup",
		"why", "a request of 15728647 bytes", "suppressed", 40)
	log.With("peer", "192.0.2.9:1").Warn("meta rpc refused a connection", "why", "handshake: certificate of client-ro")
	log.Warn("meta call refused", "who", "reader (client-ro, root /secret/alice)", "via", "cert", "method", "SetXattr",
		"why", "permission denied: reader (client-ro) may not change the namespace")
	h := statuspage.New(statuspage.Config{Cluster: &admin.Cluster{Meta: c.node.Svc, Dial: blockdial.DialAdmin}, Errors: c.node.Errors})
	for _, path := range []string{"/", "/status.json"} {
		code, body := get(t, h, "GET", path)
		if code != 200 {
			t.Fatalf("GET %s: %d", path, code)
		}
		for _, secret := range []string{"192.0.2.", "client-ro", "/secret/alice", "role ro", "reader"} {
			if strings.Contains(body, secret) {
				t.Errorf("GET %s shows %q of a refused caller", path, secret)
			}
		}
	}
	_, body := get(t, h, "GET", "/status.json")
	var s statuspage.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	want := []statuspage.Refusals{{Reason: "meta call refused", Count: 1}, {Reason: "meta rpc refused a call", Count: 43},
		{Reason: "meta rpc refused a connection", Count: 1}}
	if !reflect.DeepEqual(s.Refused, want) {
		t.Errorf("refused %+v, want %+v", s.Refused, want)
	}
	if _, page := get(t, h, "GET", "/"); !strings.Contains(page, "meta rpc refused a call</td><td class=\"n\">43") {
		t.Errorf("the page does not count the refusals:\n%s", page)
	}
}
