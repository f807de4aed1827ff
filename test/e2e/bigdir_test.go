package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBigDirectory creates, lists, looks up and removes -e2e.bigdir
// entries (100,000). It asserts what the directory holds, not how fast: the
// rates are logged (a busy machine ran it at a third of the usual speed),
// and the suite's -timeout bounds it.
func TestBigDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the 100,000-entry directory")
	}
	d := filepath.Join(fsDir(t), "big")
	must(t, os.Mkdir(d, 0o755))
	n := *bigDirN
	start := time.Now()
	name := func(i int) string { return fmt.Sprintf("entry-%07d", i) }

	// Two workers: the daemon gets the rest of the two cores.
	parallel := func(what string, fn func(i int) error) {
		t.Helper()
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 2 {
					if err := fn(i); err != nil {
						errs <- fmt.Errorf("%s %s: %w", what, name(i), err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		t.Logf("%s %d entries: %v (%.0f/s)", what, n, time.Since(t0).Round(time.Millisecond), float64(n)/time.Since(t0).Seconds())
	}

	parallel("create", func(i int) error {
		fd, err := unix.Open(filepath.Join(d, name(i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	})

	t0 := time.Now()
	f, err := os.Open(d)
	must(t, err)
	seen := make(map[string]bool, n)
	for {
		batch, err := f.Readdirnames(4096)
		for _, s := range batch {
			if seen[s] {
				t.Fatalf("readdir returned %q twice", s)
			}
			seen[s] = true
		}
		if err != nil || len(batch) == 0 {
			break
		}
	}
	f.Close()
	if len(seen) != n {
		t.Fatalf("readdir: %d entries, want %d", len(seen), n)
	}
	for i := range n {
		if !seen[name(i)] {
			t.Fatalf("readdir lacks %s", name(i))
		}
	}
	t.Logf("readdir %d entries: %v", n, time.Since(t0).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		i := rng.IntN(n)
		if st := stat(t, filepath.Join(d, name(i))); st.Mode&unix.S_IFMT != unix.S_IFREG {
			t.Errorf("lookup %s: mode %o", name(i), st.Mode)
		}
	}
	_, err = os.Stat(filepath.Join(d, name(n)))
	wantErrno(t, "lookup of a name not created", err, syscall.ENOENT)

	parallel("remove", func(i int) error { return unix.Unlink(filepath.Join(d, name(i))) })
	if ns := names(t, d); len(ns) != 0 {
		t.Fatalf("after removing every entry, readdir still lists %d (first %q)", len(ns), ns[0])
	}
	must(t, os.Remove(d))
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}
