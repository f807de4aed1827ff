package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tessera/test/cluster"
)

// The guide's commands run in CI: a fenced block opened with "```sh ci" in
// README.md or docs/guide/*.md is a command block a newcomer pastes. The
// blocks of one page run in order in one bash against one `tessera up`,
// with the page's own paths replaced by the test's (docs/guide/one-machine.md,
// "The guide's commands run in CI", is the user-facing description). A page
// that starts its own processes keeps them in a lab (guide_lab_test.go).
const guideFence = "```sh ci"

// The paths and the address the pages use, and what the test puts instead.
const (
	guideMount   = "/mnt/tessera"
	guideData    = "/var/tmp/tessera"
	guideHome    = "/var/tmp/tessera-home"
	guideMetrics = "127.0.0.1:9400"
)

// guideBlocks returns the bodies of the ci blocks of a Markdown page, in
// order. An unterminated block is an error, so a typo cannot hide a block.
func guideBlocks(page string) ([]string, error) {
	f, err := os.Open(page)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []string
	var cur []string
	in := false
	sc := bufio.NewScanner(f)
	line := 0
	start := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case !in && strings.TrimSpace(l) == guideFence:
			in, cur, start = true, nil, line
		case in && strings.TrimSpace(l) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, l)
		}
	}
	if in {
		return nil, fmt.Errorf("%s: the ci block opened at line %d is not closed", page, start)
	}
	return blocks, sc.Err()
}

// TestGuideBlocksParse: the extraction finds blocks and refuses an open one,
// so a page cannot silently drop out of TestGuideCommands.
func TestGuideBlocksParse(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.md")
	os.WriteFile(good, []byte("x\n```sh ci\necho a\necho b\n```\n```sh\nnot run\n```\n```sh ci\necho c\n```\n"), 0o644)
	b, err := guideBlocks(good)
	if err != nil || len(b) != 2 || b[0] != "echo a\necho b" || b[1] != "echo c" {
		t.Fatalf("guideBlocks = %q, %v; want the two ci blocks", b, err)
	}
	bad := filepath.Join(dir, "bad.md")
	os.WriteFile(bad, []byte("```sh ci\necho a\n"), 0o644)
	if _, err := guideBlocks(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("guideBlocks of an unclosed block: %v, want an error naming line 1", err)
	}
}

// TestGuideCommands runs every ci block of the README and the guide against
// one real `tessera up` (docs/guide/one-machine.md says how).
func TestGuideCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs/guide/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	type page struct {
		name   string
		script string
	}
	var run []page
	total := 0
	for _, p := range pages {
		blocks, err := guideBlocks(p)
		if err != nil {
			t.Fatal(err)
		}
		total += len(blocks)
		if len(blocks) > 0 {
			rel, _ := filepath.Rel(root, p)
			run = append(run, page{rel, strings.Join(blocks, "\n")})
		}
	}
	if total < 5 {
		t.Fatalf("only %d ci blocks in README.md and docs/guide; the tour alone has more", total)
	}

	c := startCluster(t, func(o *cluster.Options) {
		o.Args = append(o.Args, "--gateways", "1", "--metrics", "127.0.0.1:0")
	})
	metrics := c.Field("metrics")
	if metrics == "" {
		t.Fatal("tessera up named no metrics=ADDR in its ready line")
	}
	bin := t.TempDir()
	if err := os.Symlink(suite.bin, filepath.Join(bin, "tessera")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	for _, p := range run {
		t.Run(strings.ReplaceAll(p.name, "/", "_"), func(t *testing.T) {
			// guideLab first: guideData is a prefix of it (and of guideHome).
			repl := strings.NewReplacer(append(labSetup(t),
				guideHome, home, guideData, c.DataDir(), guideMount, c.Mount(), guideMetrics, metrics)...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", repl.Replace(p.script))
			// A process a page leaves running must not hold the test's output pipe.
			cmd.WaitDelay = 10 * time.Second
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("the ci blocks of %s failed: %v\n%s", p.name, err, out)
			}
		})
	}
}
