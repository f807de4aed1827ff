package e2e

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeSynced writes data to a new file in 1 MiB writes, fsyncs it and its
// directory. It returns nil only when both fsyncs succeeded.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for off := 0; off < len(data); off += mib {
		if _, err := f.Write(data[off:min(off+mib, len(data))]); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// TestCrashKeepsFsyncedData kills `tessera up` with SIGKILL while files are
// being written, starts it again on the same data directory, and checks that
// every file whose fsync had returned reads back intact, that files still
// being written hold no bytes that were never written, and that fsck is
// clean.
func TestCrashKeepsFsyncedData(t *testing.T) {
	c := startCluster(t)
	d := filepath.Join(c.Mount(), "crash")
	must(t, os.Mkdir(d, 0o755))

	type acked struct {
		name string
		size int
		sum  [32]byte
	}
	var (
		mu       sync.Mutex
		ack      []acked
		unsynced sync.Map // name -> seed of its content
		written  atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	const unsyncedFile = 24 * mib
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for w := range 3 { // write, fsync, record, next
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; !stopped(); i++ {
				name := fmt.Sprintf("synced-%d-%03d", w, i)
				data := randBytes(uint64(w<<20|i), 64*kib+rng.IntN(9*mib))
				if err := writeSynced(filepath.Join(d, name), data); err != nil {
					return
				}
				mu.Lock()
				ack = append(ack, acked{name, len(data), sha256.Sum256(data)})
				mu.Unlock()
			}
		}()
	}
	for w := range 2 { // keep writing, never fsync
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stopped(); i++ {
				name := fmt.Sprintf("unsynced-%d-%03d", w, i)
				seed := uint64(1<<40 | w<<20 | i)
				data := randBytes(seed, unsyncedFile)
				f, err := os.Create(filepath.Join(d, name))
				if err != nil {
					return
				}
				unsynced.Store(name, seed)
				for off := 0; off < len(data); off += mib {
					if _, err := f.Write(data[off : off+mib]); err != nil {
						f.Close()
						return
					}
					written.Add(mib)
				}
				f.Close()
			}
		}()
	}

	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(ack)
		mu.Unlock()
		if n >= 8 && written.Load() >= 32*mib {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			t.Fatalf("writers too slow: %d files fsynced, %d MiB unsynced after 2 minutes", n, written.Load()>>20)
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, c.Kill9())
	close(stop)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("writers still blocked 30 s after the daemon was killed")
	}
	mu.Lock()
	acks := append([]acked(nil), ack...)
	mu.Unlock()
	t.Logf("killed with %d files fsynced and %d MiB written unsynced", len(acks), written.Load()>>20)

	restart(t, c) // over the stale mount the killed run left

	for _, a := range acks {
		b, err := os.ReadFile(filepath.Join(d, a.name))
		switch {
		case err != nil:
			t.Errorf("fsynced %s: %v", a.name, err)
		case len(b) != a.size:
			t.Errorf("fsynced %s: %d bytes, want %d", a.name, len(b), a.size)
		case sha256.Sum256(b) != a.sum:
			t.Errorf("fsynced %s: content differs", a.name)
		}
	}
	unsynced.Range(func(k, v any) bool {
		name, seed := k.(string), v.(uint64)
		want := randBytes(seed, unsyncedFile)
		f, err := os.Open(filepath.Join(d, name))
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		if err != nil {
			t.Errorf("unsynced %s: open: %v", name, err)
			return true
		}
		defer f.Close()
		got, err := io.ReadAll(f)
		if err != nil {
			t.Errorf("unsynced %s: read: %v", name, err)
			return true
		}
		if len(got) > len(want) {
			t.Errorf("unsynced %s: %d bytes, more than the %d ever written", name, len(got), len(want))
			return true
		}
		for i := range got {
			if got[i] != want[i] && got[i] != 0 {
				t.Errorf("unsynced %s: byte %d is %#x, which was never written there (want %#x or a hole)", name, i, got[i], want[i])
				break
			}
		}
		return true
	})
	fsckClean(t, c)
}

// TestCrashKeepsClosedFiles: what a close acknowledged survives a kill -9 of
// `tessera up`, fsync or not (docs/design/2026-11-23-small-files.md): files
// written as tar writes them (write, futimens, fchmod, close), inline-sized
// and in blocks, a rename and an unlink, all read back after the restart.
func TestCrashKeepsClosedFiles(t *testing.T) {
	c := startCluster(t)
	d := filepath.Join(c.Mount(), "closed")
	must(t, os.Mkdir(d, 0o755))
	mtime := time.Unix(1500000000, 0)
	sizes := []int{0, 1, 100, 5000, 64 * kib, 64*kib + 1, 300 * kib}
	for i, n := range sizes {
		p := filepath.Join(d, fmt.Sprintf("f%d", i))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		must(t, err)
		_, err = f.Write(randBytes(uint64(i), n))
		must(t, err)
		must(t, os.Chtimes(p, mtime, mtime))
		must(t, f.Chmod(0o640))
		must(t, f.Close())
	}
	must(t, os.Rename(filepath.Join(d, "f0"), filepath.Join(d, "renamed")))
	must(t, os.Remove(filepath.Join(d, "f1")))

	must(t, c.Kill9())
	restart(t, c)

	if _, err := os.Stat(filepath.Join(d, "f1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed f1 after the crash: %v, want ENOENT", err)
	}
	for i, n := range sizes {
		name := fmt.Sprintf("f%d", i)
		switch i {
		case 0:
			name = "renamed"
		case 1:
			continue
		}
		p := filepath.Join(d, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s (%d bytes, closed before the crash): %v", name, n, err)
			continue
		}
		if sha256.Sum256(b) != sha256.Sum256(randBytes(uint64(i), n)) {
			t.Errorf("%s: %d bytes read back, differ from the %d written", name, len(b), n)
		}
		fi, err := os.Stat(p)
		must(t, err)
		if !fi.ModTime().Equal(mtime) || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mtime %v mode %v, want %v and 0640", name, fi.ModTime(), fi.Mode().Perm(), mtime)
		}
	}
	fsckClean(t, c)
}
