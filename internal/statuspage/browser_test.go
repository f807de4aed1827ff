package statuspage_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"tessera/test/browser"
)

// TestPageInChromium: the page, served on a real loopback listener by a
// real meta node, rendered by a real headless Chromium (Debian's package,
// which scripts/deps.sh --test installs), lists the servers in the DOM the
// browser built. Skipped only when chromium is not installed, unless
// TESSERA_REQUIRE_CHROMIUM=1.
func TestPageInChromium(t *testing.T) {
	bin := browser.Chromium(t)
	c := startCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c.node.Status, ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	dom := browser.DumpDOM(t, bin, "http://"+ln.Addr().String()+"/")
	rows := serverRows(t, dom)
	want := map[string]string{"b0": "up", "b1": "up", "b2": "draining"}
	for id, state := range want {
		if rows[id] != state {
			t.Errorf("server %s: state %q in the rendered DOM, want %q", id, rows[id], state)
		}
	}
	for _, s := range []string{"<title>Tessera status</title>", c.blocks[1].Server.Addr, "Replication health", "Recent errors"} {
		if !strings.Contains(dom, s) {
			t.Errorf("the rendered DOM lacks %q", s)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
