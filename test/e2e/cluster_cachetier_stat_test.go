package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/internal/cachetier/memcache/mctest"
)

// TestClusterMemcachedTierStats: stats served from the tier (IMCa), within
// what each policy allows a cached attribute.
//
//  1. Mount A (with the tier) creates 50 files in a directory with policy
//     relaxed (attributes may be a minute old): the creates fill the tier.
//     A fresh mount B stats them all: at least one memcached hit per file,
//     right sizes.
//  2. A client sees its own changes: A unlinks a file whose entry the tier
//     still holds, and its next stat of the name is ENOENT.
//  3. Under policy nfs (3 s), a chmod on A is seen by B once the TTLs have
//     passed, although the tier held the old mode.
func TestClusterMemcachedTierStats(t *testing.T) {
	needBinary(t)
	mc := mctest.Start(t, mctest.Options{})
	tier := "memcached://" + mc.Addr
	m := startMulti(t, 2)
	a := addMount(t, m, "--cache-tier", tier)
	dir := filepath.Join(a.Mount(), "relaxed")
	must(t, os.Mkdir(dir, 0o755))
	setPolicy(t, dir, "relaxed")
	const files = 50
	for i := range files {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), make([]byte, i), 0o644))
	}

	s0 := mcStats(t, mc.Addr)
	b := addMount(t, m, "--cache-tier", tier)
	for i := range files {
		fi, err := os.Stat(filepath.Join(b.Mount(), "relaxed", fmt.Sprintf("f%02d", i)))
		must(t, err)
		if fi.Size() != int64(i) {
			t.Fatalf("f%02d on a second mount: size %d, want %d", i, fi.Size(), i)
		}
	}
	s1 := mcStats(t, mc.Addr)
	t.Logf("stats on a fresh mount: %s", s1.delta(s0))
	if d := s1["get_hits"] - s0["get_hits"]; d < files {
		t.Errorf("%d stats of files another mount created: %d memcached hits, want at least %d", files, d, files)
	}

	// 2. Own changes: the entry f00 is in the tier (filled at create).
	gone := filepath.Join(dir, "f00")
	must(t, os.Remove(gone))
	if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat of a name this mount just removed: %v, want ENOENT", err)
	}

	// 3. Policy nfs (3 s): B sees A's chmod within the kernel's 3 s plus an
	// item's 3 s, although the tier held the old mode.
	nd := filepath.Join(a.Mount(), "nfs")
	must(t, os.Mkdir(nd, 0o755))
	setPolicy(t, nd, "nfs")
	g := filepath.Join("nfs", "g")
	must(t, os.WriteFile(filepath.Join(a.Mount(), g), []byte("x"), 0o644))
	if _, err := os.Stat(filepath.Join(b.Mount(), g)); err != nil { // B caches 0644 (kernel, tier)
		t.Fatal(err)
	}
	must(t, os.Chmod(filepath.Join(a.Mount(), g), 0o600))
	// A stale answer is a failure only for a stat that began after the
	// promise's end: how long this process waited to run, or to get its
	// answer, is the machine's load, not the mount's.
	waited := time.Now()
	for {
		began := time.Since(waited)
		fi, err := os.Stat(filepath.Join(b.Mount(), g))
		must(t, err)
		if fi.Mode().Perm() == 0o600 {
			t.Logf("a chmod was seen on the other mount by a stat begun %v after it", began.Round(time.Millisecond))
			break
		}
		if began > 6500*time.Millisecond {
			t.Fatalf("a stat begun %v after a chmod on another mount still saw mode %v; policy nfs allows 3 s of kernel cache plus 3 s of tier item", began.Round(time.Millisecond), fi.Mode().Perm())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
