package home_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"tessera/internal/gateway/home"
)

// TestFileSweepsDeadWritersTmp: a temporary file left by a writer killed
// between writing and renaming (kill -9) is removed by the next WriteFile
// into the same directory; one still locked by a live writer, one younger
// than the grace, and leftovers in other directories are not.
func TestFileSweepsDeadWritersTmp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "d"), 0o755))
	old := time.Now().Add(-time.Hour)
	mk := func(rel string, mtime time.Time) string {
		p := filepath.Join(dir, rel)
		must(os.WriteFile(p, []byte("half a write"), 0o644))
		must(os.Chtimes(p, mtime, mtime))
		return p
	}
	dead := mk("d/.tessera-home-tmp.dead", old)
	young := mk("d/.tessera-home-tmp.young", time.Now())
	live := mk("d/.tessera-home-tmp.live", old)
	other := mk(".tessera-home-tmp.elsewhere", old)
	// A live writer (another gateway) holds its lock.
	lf, err := os.Open(live)
	must(err)
	defer lf.Close()
	must(syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	s, err := home.OpenFile(dir)
	must(err)
	defer s.Close()
	body := []byte("new content")
	if _, err := s.WriteFile(ctx, "d/x", bytes.NewReader(body), int64(len(body)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead writer's temporary file is still there (%v)", err)
	}
	for _, p := range []string{young, live, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "d/x")); err != nil || !bytes.Equal(b, body) {
		t.Errorf("d/x = %q, %v", b, err)
	}
	ents, err := s.ReadDir(ctx, "d")
	must(err)
	if len(ents) != 1 || ents[0].Name != "x" {
		t.Errorf("d lists %v, want only x", ents)
	}
	// The live writer dies: its lock goes with it, and the next start's
	// first write into d removes the file.
	lf.Close()
	s2, err := home.OpenFile(dir)
	must(err)
	defer s2.Close()
	if _, err := s2.WriteFile(ctx, "d/y", bytes.NewReader(body), int64(len(body)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("the temporary file of the writer that died since is still there (%v)", err)
	}
}
