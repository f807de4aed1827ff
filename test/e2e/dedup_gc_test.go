package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

// writeFileSync writes a whole file and fsyncs it, so that `tessera status`
// sees its blocks.
func writeFileSync(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := writeSynced(path, data); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

type usage struct{ files, logical, stored, blocks int64 }

func readUsage(t testing.TB, c *cluster.Cluster) usage {
	t.Helper()
	st := status(t, c)
	var u usage
	for key, p := range map[string]*int64{"files": &u.files, "logical bytes": &u.logical,
		"stored block bytes": &u.stored, "blocks": &u.blocks} {
		n, err := st.Int(key)
		if err != nil {
			t.Fatal(err)
		}
		*p = n
	}
	return u
}

// TestDedup: a second file with the same 64 MiB stores (almost) nothing new.
func TestDedup(t *testing.T) {
	c := startCluster(t)
	data := randBytes(20, 64*mib)
	u0 := readUsage(t, c)
	writeFileSync(t, filepath.Join(c.Mount(), "a"), data)
	u1 := readUsage(t, c)
	must(t, os.Mkdir(filepath.Join(c.Mount(), "dir"), 0o755))
	writeFileSync(t, filepath.Join(c.Mount(), "dir", "b"), data)
	u2 := readUsage(t, c)
	t.Logf("status before: %+v; after a: %+v; after b: %+v", u0, u1, u2)

	first, second := u1.stored-u0.stored, u2.stored-u1.stored
	if first < int64(len(data)) {
		t.Errorf("the first 64 MiB file grew stored block bytes by %d, less than its size", first)
	}
	if second*50 >= first {
		t.Errorf("the identical second file grew stored block bytes by %d, not < 2%% of the first's %d", second, first)
	}
	if u1.logical-u0.logical != int64(len(data)) || u2.logical-u1.logical != int64(len(data)) {
		t.Errorf("logical bytes grew by %d and %d, want %d each", u1.logical-u0.logical, u2.logical-u1.logical, len(data))
	}
	if u1.files-u0.files != 1 || u2.files-u1.files < 1 {
		t.Errorf("files went %d -> %d -> %d, want one more per file", u0.files, u1.files, u2.files)
	}
	wantContent(t, filepath.Join(c.Mount(), "dir", "b"), data)
}

// TestGC: blocks of a deleted file go with `gc --grace 0s`; a live file's
// stay and read back intact after a restart (no client cache to hide a loss).
func TestGC(t *testing.T) {
	c := startCluster(t)
	keep := randBytes(21, 9*mib+5)
	gone := randBytes(22, 17*mib)
	keepPath, gonePath := filepath.Join(c.Mount(), "keep"), filepath.Join(c.Mount(), "gone")
	writeFileSync(t, keepPath, keep)
	u1 := readUsage(t, c)
	writeFileSync(t, gonePath, gone)
	u2 := readUsage(t, c)
	if u2.stored-u1.stored < int64(len(gone)) {
		t.Fatalf("a %d-byte file grew stored block bytes by only %d", len(gone), u2.stored-u1.stored)
	}
	must(t, os.Remove(gonePath))

	res := tessera(t, c, "gc", "--grace", "0s")
	if res.ExitCode != 0 {
		t.Fatalf("tessera gc --grace 0s: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("tessera gc --grace 0s:\n%s", res.Stdout)
	u3 := readUsage(t, c)
	t.Logf("usage with keep: %+v; with gone too: %+v; after delete and gc: %+v", u1, u2, u3)
	if u3.stored != u1.stored || u3.blocks != u1.blocks {
		t.Errorf("after gc: stored block bytes %d in %d blocks, want back to %d in %d", u3.stored, u3.blocks, u1.stored, u1.blocks)
	}

	restart(t, c)
	wantContent(t, keepPath, keep)
	fsckClean(t, c)
}

// TestGCGrace: with the default grace (1 h), gc removes nothing recent, not
// even the blocks of a file deleted a moment ago.
func TestGCGrace(t *testing.T) {
	c := startCluster(t)
	p := filepath.Join(c.Mount(), "f")
	writeFileSync(t, p, randBytes(23, 9*mib))
	must(t, os.Remove(p))
	before := readUsage(t, c)
	res := tessera(t, c, "gc")
	if res.ExitCode != 0 {
		t.Fatalf("tessera gc: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	after := readUsage(t, c)
	if after.stored != before.stored || after.blocks != before.blocks {
		t.Errorf("gc with the default grace removed recent blocks: %+v -> %+v\n%s", before, after, res.Stdout)
	}
	if before.stored < 9*mib {
		t.Errorf("stored block bytes %d before gc: the deleted file's blocks were already gone", before.stored)
	}
}

// TestBackgroundGC: the meta role collects by itself. With a collection
// every second and a grace of one, the blocks an overwrite superseded and
// those of a deleted file go without `tessera gc`; the live file's stay.
func TestBackgroundGC(t *testing.T) {
	c := startCluster(t, func(o *cluster.Options) {
		o.Args = append(o.Args, "--gc-interval", "1s", "--gc-grace", "1s")
	})
	p, gonePath := filepath.Join(c.Mount(), "f"), filepath.Join(c.Mount(), "gone")
	writeFileSync(t, p, randBytes(24, 8*mib))
	final := randBytes(25, 8*mib)
	// Overwrite in place: supersedes every block of the first version.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(final, 0)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	writeFileSync(t, gonePath, randBytes(26, 8*mib))
	must(t, os.Remove(gonePath))
	before := readUsage(t, c)
	deadline := time.Now().Add(2 * time.Minute) // for a hang only
	for {
		u := readUsage(t, c)
		// Three files' worth of blocks before; the live file's after.
		if u.blocks*3 <= before.blocks && u.stored*3 <= before.stored {
			t.Logf("usage before the collection: %+v; after: %+v", before, u)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background gc removed nothing in 2 minutes: %+v -> %+v", before, u)
		}
		time.Sleep(250 * time.Millisecond)
	}
	wantContent(t, p, final)
	fsckClean(t, c)
}
