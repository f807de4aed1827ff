// Package browser renders a page in a real headless Chromium (Debian's
// package, which scripts/deps.sh --test installs) for the tests of pages
// Tessera serves. Chromium runs in a process group of its own, ended by
// the group's id when the page is rendered or the test's bound runs out.
package browser

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Chromium returns the path of chromium. Without it the test is skipped
// with a message, or fails when TESSERA_REQUIRE_CHROMIUM=1.
func Chromium(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("TESSERA_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium is not installed (scripts/deps.sh --test installs it: apt-get install -y chromium)")
		}
		t.Skip("chromium is not installed: apt-get install -y chromium (scripts/deps.sh --test does it) to run this test")
	}
	return bin
}

// DumpDOM loads url in a headless Chromium and returns the DOM it built,
// failing the test when the browser fails.
func DumpDOM(t testing.TB, bin, url string) string {
	t.Helper()
	// The bound is for a hang only: a browser's first start on a busy
	// machine takes seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--disable-dev-shm-usage", "--disable-breakpad", "--disable-crash-reporter",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind, if any
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, stderr.String())
	}
	return string(out)
}
