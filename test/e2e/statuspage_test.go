package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/statuspage"
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

	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("TESSERA_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium is not installed (scripts/deps.sh --test installs it)")
		}
		t.Skip("chromium is not installed: the rendering is not checked")
	}
	// The bound is for a hang only.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--disable-dev-shm-usage", "--disable-breakpad", "--disable-crash-reporter",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "http://"+addr+"/")
	// Chromium's helpers share its process group, which is ended by the
	// leader's pid (a process this test started).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	dom := string(out)
	for _, want := range []string{"<title>Tessera status</title>", `data-id="b0"`, `data-id="b1"`, `data-state="up"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
