package statuspage_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"tessera/internal/meta"
	"tessera/internal/statuspage"
	"tessera/internal/up"
)

// TestPageShowsClusterAndSites: the page of a meta node started with a
// cluster name and a site names both, and counts the block servers per
// site; /status.json carries the same.
func TestPageShowsClusterAndSites(t *testing.T) {
	ctx := t.Context()
	node, err := up.StartMeta(ctx, up.MetaConfig{DB: up.MetaDB{Engine: up.EngineMem}, DefaultReplicas: 1,
		Cluster: "lab", Site: "north",
		Role: up.MetaRole{DownAfter: time.Hour, MoverInterval: time.Hour, GCInterval: -1, ReclaimAfter: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	for i, site := range []string{"north", "south", "south"} {
		b, err := up.StartBlockServer(ctx, node.Svc, up.BlockServerConfig{ID: "b" + string(rune('0'+i)), Dir: t.TempDir(),
			Site: site, Heartbeat: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
	}
	if _, err := node.Svc.SetServerState(ctx, "b2", meta.StateDraining); err != nil {
		t.Fatal(err)
	}
	code, page := get(t, node.Status, "GET", "/")
	for _, want := range []string{
		`<span id="cluster-name">lab</span>`,
		"<td>" + node.Addr + "</td><td>north</td>",
		`data-site="north"><td>north</td><td class="n">1</td><td class="n">1</td><td class="n">0</td><td class="n">0</td><td class="n">1</td>`,
		`data-site="south"><td>south</td><td class="n">2</td><td class="n">1</td><td class="n">1</td><td class="n">0</td><td class="n">0</td>`,
	} {
		if code != 200 || !strings.Contains(page, want) {
			t.Errorf("page (%d) lacks %s", code, want)
		}
	}
	_, body := get(t, node.Status, "GET", "/status.json")
	var s statuspage.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if s.Cluster == nil || s.Cluster.Name != "lab" || len(s.Cluster.Metas) != 1 || s.Cluster.Metas[0].Site != "north" ||
		s.Cluster.Replicated || len(s.Sites) != 2 || s.Sites[1].Draining != 1 {
		t.Errorf("status.json: cluster %+v sites %+v", s.Cluster, s.Sites)
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}
