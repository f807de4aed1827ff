package disk_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/disk"
)

// dirsUnder returns the directories below dir/blocks (not counting it).
func dirsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, "blocks")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// du is what dir/blocks and dir/quarantine take on disk, walked as du does.
func du(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, sub := range []string{"blocks", "quarantine"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			if os.IsNotExist(err) && p == filepath.Join(dir, sub) {
				return filepath.SkipDir
			}
			if err != nil {
				return err
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				return err
			}
			n += st.Blocks * 512
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func TestRemovePrunesEmptyFanOutDirs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	var hs []block.Hash
	for i := range 200 {
		hs = append(hs, put(t, s, blocktest.Data(uint64(i), 1000)))
	}
	if got := s.OnDisk(); got != du(t, dir) {
		t.Fatalf("OnDisk after 200 puts = %d, du = %d", got, du(t, dir))
	}
	for _, h := range hs[:100] {
		if ok, err := s.Remove(ctx, h, 1<<62); err != nil || !ok {
			t.Fatalf("remove %s: %v %v", h.Short(), ok, err)
		}
	}
	if got := s.OnDisk(); got != du(t, dir) {
		t.Fatalf("OnDisk after 100 removals = %d, du = %d", got, du(t, dir))
	}
	for _, h := range hs[100:] {
		if ok, err := s.Remove(ctx, h, 1<<62); err != nil || !ok {
			t.Fatalf("remove %s: %v %v", h.Short(), ok, err)
		}
	}
	if d := dirsUnder(t, dir); len(d) != 0 {
		t.Fatalf("%d fan-out directories left after every block was removed, e.g. %s", len(d), d[0])
	}
	if got, want := s.OnDisk(), du(t, dir); got != want {
		t.Fatalf("OnDisk of an empty store = %d, du = %d", got, want)
	}
	// The store still takes blocks where it pruned.
	for _, h := range hs[:10] {
		if ok, err := s.Has(ctx, []block.Hash{h}); err != nil || ok[0] {
			t.Fatalf("has removed block: %v %v", ok, err)
		}
	}
	h := put(t, s, blocktest.Data(0, 1000))
	if _, err := s.Get(ctx, h); err != nil {
		t.Fatalf("get after the leaf was pruned and made again: %v", err)
	}
}

func TestQuarantinePrunesItsLeaf(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	h := put(t, s, []byte("to be damaged"))
	if err := os.WriteFile(s.Path(h), []byte("to be d4maged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, h); err == nil {
		t.Fatal("get of a damaged block succeeded")
	}
	if d := dirsUnder(t, dir); len(d) != 0 {
		t.Fatalf("fan-out directories left after the only block was quarantined: %v", d)
	}
	if got, want := s.OnDisk(), du(t, dir); got != want {
		t.Fatalf("OnDisk with a quarantined copy = %d, du = %d", got, want)
	}
}

func TestOpenPrunesEmptyFanOutDirs(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := put(t, s, []byte("kept"))
	s.Close()
	// What a version that never pruned left behind: empty leaves, one
	// beside the block, and whole empty first levels.
	x := h.String()
	for _, d := range []string{x[:2] + "/ff", "00/00", "00/01", "fe/ed"} {
		if d[:2]+d[3:] == x[:4] {
			continue
		}
		if err := os.MkdirAll(filepath.Join(dir, "blocks", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s = open(t, dir)
	want := []string{filepath.Join(dir, "blocks", x[:2]), filepath.Join(dir, "blocks", x[:2], x[2:4])}
	got := dirsUnder(t, dir)
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("fan-out directories after Open: %v, want %v", got, want)
	}
	if blocks, _, _ := s.Usage(context.Background()); blocks != 1 {
		t.Fatalf("Usage after Open = %d blocks, want 1", blocks)
	}
	if got, want := s.OnDisk(), du(t, dir); got != want {
		t.Fatalf("OnDisk after Open = %d, du = %d", got, want)
	}
}

// sameLeaf returns n distinct blocks whose hashes share their first two
// bytes (one fan-out leaf).
func sameLeaf(t *testing.T, n int) [][]byte {
	t.Helper()
	var out [][]byte
	var prefix [2]byte
	for i := uint64(0); len(out) < n; i++ {
		data := binary.BigEndian.AppendUint64([]byte("leaf "), i)
		h := block.Sum(data)
		if len(out) == 0 {
			prefix = [2]byte{h[0], h[1]}
		}
		if h[0] == prefix[0] && h[1] == prefix[1] {
			out = append(out, data)
		}
	}
	return out
}

// TestPutRemoveRaceInOneLeaf has writers put and remove blocks of one leaf
// at once, so that the leaf is emptied and pruned while other Puts make
// sure of it and link into it: every Put must succeed and its block stay
// readable until its own writer removes it.
func TestPutRemoveRaceInOneLeaf(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	datas := sameLeaf(t, 4)
	var wg sync.WaitGroup
	errs := make(chan error, len(datas))
	for _, data := range datas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := block.Sum(data)
			for range 300 {
				if err := s.Put(ctx, h, data); err != nil {
					errs <- err
					return
				}
				if _, err := s.Get(ctx, h); err != nil {
					errs <- err
					return
				}
				if ok, err := s.Remove(ctx, h, 1<<62); err != nil || !ok {
					errs <- fmt.Errorf("remove %s: removed=%t, %v", h.Short(), ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("put/get/remove in one leaf: %v", err)
	}
	if d := dirsUnder(t, dir); len(d) != 0 {
		t.Fatalf("fan-out directories left after the race: %v", d)
	}
	if got, want := s.OnDisk(), du(t, dir); got != want {
		t.Fatalf("OnDisk after the race = %d, du = %d", got, want)
	}
}
