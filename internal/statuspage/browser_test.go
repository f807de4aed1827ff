package statuspage_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPageInChromium: the page, served on a real loopback listener by a
// real meta node, rendered by a real headless Chromium (Debian's package,
// which scripts/deps.sh --test installs), lists the servers in the DOM the
// browser built. Skipped only when chromium is not installed, unless
// TESSERA_REQUIRE_CHROMIUM=1.
func TestPageInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("TESSERA_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium is not installed (scripts/deps.sh --test installs it: apt-get install -y chromium)")
		}
		t.Skip("chromium is not installed: apt-get install -y chromium (scripts/deps.sh --test does it) to run this test")
	}
	c := startCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c.node.Status, ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	// The bound is for a hang only: a browser's first start on a busy
	// machine takes seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--disable-dev-shm-usage", "--disable-breakpad", "--disable-crash-reporter", "--user-data-dir="+t.TempDir(), "--dump-dom", "http://"+ln.Addr().String()+"/")
	// Chromium starts helper processes: its own process group, ended by
	// the group's id (the leader's pid, which this test started).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind, if any
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	dom := string(out)
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
