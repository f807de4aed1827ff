package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedDocsAreCurrent: docs/reference/ and the package map of
// docs/architecture.md are what `make docs` writes from the code now.
func TestGeneratedDocsAreCurrent(t *testing.T) {
	src := filepath.Join("..", "..")
	docs := filepath.Join(src, "docs")
	tmp := t.TempDir()
	arch, err := os.ReadFile(filepath.Join(docs, "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "architecture.md"), arch, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := gendocs(context.Background(), src, tmp); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"architecture.md", "reference/commands.md", "reference/metrics.md", "reference/formats.md"} {
		want, err := os.ReadFile(filepath.Join(tmp, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(docs, f))
		if err != nil {
			t.Errorf("docs/%s: %v (run make docs)", f, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s differs from what the code generates: run make docs (go run ./cmd/tessera gendocs docs)\nfirst difference near: %q",
				f, firstDiff(got, want))
		}
	}
}

// firstDiff returns the generated text around the first byte where a and b
// differ.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo, hi := max(0, i-60), min(len(b), i+60)
	return string(b[lo:hi])
}

// TestCommandsReferenceCoversEveryCommand: every command of the table has
// its section, with its flags, and no machine-dependent default is left.
func TestCommandsReferenceCoversEveryCommand(t *testing.T) {
	b, err := commandsDoc(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for n := range commands {
		if !strings.Contains(doc, "\n## tessera "+n+"\n") {
			t.Errorf("the reference has no section for tessera %s", n)
		}
	}
	for _, flag := range []string{"-data", "-mount", "-meta-db", "-home", "-scrub-rate"} {
		if !strings.Contains(doc, "  "+flag+" ") {
			t.Errorf("the reference does not list %s", flag)
		}
	}
	if strings.Contains(doc, "of this machine's memory") && strings.Contains(doc, "writers wait beyond it (default") {
		t.Errorf("a default that depends on the machine's memory is in the reference")
	}
}
