package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"tessera/internal/statuspage"
	"tessera/test/browser"
	"tessera/test/cluster"
)

// TestStatusPageUp: `tessera up --metrics 127.0.0.1:0` serves the status
// page on that listener: /status.json lists both block servers up with
// their usage read over TLS (no error), and the HTML page, rendered by a
// real headless Chromium, names them. The browser part is skipped only
// when chromium is not installed, unless TESSERA_REQUIRE_CHROMIUM=1.
func TestStatusPageUp(t *testing.T) {
	c := startCluster(t, withBlockServers(2), func(o *cluster.Options) {
		o.Args = append(o.Args, "--metrics", "127.0.0.1:0")
	})
	addr := c.Field("metrics")
	if addr == "" {
		t.Fatal("no metrics=ADDR in the ready line")
	}
	writeAndRead(t, c.Mount(), 1<<20)

	resp, err := http.Get("http://" + addr + "/status.json")
	must(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/status.json: %s\n%s", resp.Status, body)
	}
	var snap statuspage.Snapshot
	must(t, json.Unmarshal(body, &snap))
	got := map[string]string{}
	for _, s := range snap.Servers {
		got[s.ID] = s.State
		if s.Err != "" {
			t.Errorf("server %s: usage not read: %s", s.ID, s.Err)
		}
	}
	if got["b0"] != "up" || got["b1"] != "up" || len(got) != 2 {
		t.Fatalf("servers on the status page: %v, want b0 and b1 up", got)
	}
	if snap.Files < 1 {
		t.Errorf("status page counts %d files after a write", snap.Files)
	}

	dom := browser.DumpDOM(t, browser.Chromium(t), "http://"+addr+"/")
	for _, want := range []string{"<title>Tessera status</title>", `data-id="b0"`, `data-id="b1"`, `data-state="up"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
