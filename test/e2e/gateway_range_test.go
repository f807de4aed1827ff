package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"tessera/test/cluster"
)

// Issue 14 item 2 (ranged misses) and item 7 (fileset prefetch) through a
// real mount of `tessera up --gateways 2`.

// TestGatewayRangedRead: in a fileset with prefetch none, a 4 KiB read in
// the middle of a 24 MiB home file returns home's bytes without the file
// being fetched whole: with the file moved away at home the same range
// still reads (a hit), a range never read fails with EIO (never zeros),
// and with the file back it reads home's bytes. mmap reads alike: an
// uncached page is fetched, one never fetched faults with the file gone.
// (A file:// home holds its directory open: the file, not the directory,
// is moved.) An open for writing completes the partial
// file first, so a write leaves home's other bytes in place.
func TestGatewayRangedRead(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "2") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(home, 0o755))
	const size = 24 << 20
	data := randBytes(14, size)
	writeFile(t, filepath.Join(home, "big"), data)
	cache := filepath.Join(c.Mount(), "cache")
	if res := runBin(t, "fileset", "create", cache, "--home", "file://"+home, "--mode", "lu", "--prefetch", "none"); res.ExitCode != 0 {
		t.Fatalf("fileset create: exit %d: %s", res.ExitCode, res.Stderr)
	}
	big := filepath.Join(cache, "big")
	f, err := os.Open(big)
	must(t, err)
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != size {
		t.Fatalf("stat of the placeholder: %v, %v; want home's size %d", st, err, size)
	}
	const mid = size/2 + 4096
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(buf, mid); err != nil {
		t.Fatal(err)
	}
	wantBytes(t, "4 KiB in the middle", buf, data[mid:mid+4096])

	// mmap reads go through the same path: an uncached page is fetched.
	// (The mount is another process: faulting on it from here is safe.)
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	must(t, err)
	defer syscall.Munmap(m)
	must(t, syscall.Madvise(m, syscall.MADV_RANDOM))
	const moff = 17<<20 + 99
	wantBytes(t, "an mmap read of an uncached block", append([]byte{}, m[moff:moff+100]...), data[moff:moff+100])

	hb := filepath.Join(home, "big")
	must(t, os.Rename(hb, hb+".away"))
	// With the file gone at home, touching a page never fetched faults
	// (SIGBUS: a panic here) rather than reading zeros.
	if b, faulted := touchPage(m, 6<<20+5); !faulted {
		t.Errorf("an mmap read of a block never fetched, the file gone at home: read %#x, want a fault", b)
	}
	g, err := os.Open(big)
	must(t, err)
	defer g.Close()
	if _, err := g.ReadAt(buf, mid); err != nil {
		t.Fatalf("the range read before, with home away: %v", err)
	}
	wantBytes(t, "the cached range with home away", buf, data[mid:mid+4096])
	_, err = g.ReadAt(buf, 1<<20)
	if !isErrno(err, syscall.EIO) {
		t.Errorf("a range never read, with home away: %v, want EIO", err)
	}
	must(t, os.Rename(hb+".away", hb))
	if _, err := g.ReadAt(buf, 1<<20); err != nil {
		t.Fatalf("the range with home back: %v", err)
	}
	wantBytes(t, "a range fetched after home came back", buf, data[1<<20:1<<20+4096])

	// A write into the partial file: the open completes it from home.
	w, err := os.OpenFile(big, os.O_WRONLY, 0)
	must(t, err)
	_, err = w.WriteAt([]byte("local bytes"), 10)
	must(t, err)
	must(t, w.Close())
	want := append([]byte{}, data...)
	copy(want[10:], "local bytes")
	must(t, os.Rename(hb, hb+".away"))
	wantContent(t, big, want)
}

// TestGatewayPrefetchCommand: `tessera fileset prefetch --list FILE`
// lists the directory named and fetches every file under it; afterwards,
// with home's files moved away, every file reads whole, and a file
// outside the list fails to read. --json prints progress
// lines and a result.
func TestGatewayPrefetchCommand(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "2") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "d", "e"), 0o755))
	files := map[string][]byte{
		"d/a":     randBytes(1, 5<<20+7),
		"d/e/b":   randBytes(2, 1000),
		"d/e/c":   randBytes(3, 9<<20),
		"outside": randBytes(4, 100),
	}
	for rel, b := range files {
		writeFile(t, filepath.Join(home, rel), b)
	}
	cache := filepath.Join(c.Mount(), "cache")
	if res := runBin(t, "fileset", "create", cache, "--home", "file://"+home, "--prefetch", "none"); res.ExitCode != 0 {
		t.Fatalf("fileset create: exit %d: %s", res.ExitCode, res.Stderr)
	}
	list := filepath.Join(t.TempDir(), "list")
	writeFile(t, list, []byte("# what to fetch\n"+filepath.Join(cache, "d")+"\n"))
	res := runBin(t, "fileset", "prefetch", "--list", list, "--json")
	if res.ExitCode != 0 {
		t.Fatalf("fileset prefetch: exit %d: %s %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	var result map[string]any
	for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("a --json line is not JSON: %q", l)
		}
		if ev["event"] == "result" {
			result = ev
		}
	}
	if result == nil || result["ok"] != true || result["files"] != float64(3) {
		t.Errorf("prefetch result: %v; want ok with 3 files", result)
	}
	must(t, os.Rename(filepath.Join(home, "d"), filepath.Join(home, "d.away")))
	must(t, os.Rename(filepath.Join(home, "outside"), filepath.Join(home, "outside.away")))
	for rel, b := range files {
		if rel == "outside" {
			continue
		}
		wantContent(t, filepath.Join(cache, rel), b)
	}
	// A file outside the list was not fetched: with it away at home, its
	// read fails (EIO), never returns zeros.
	if got, err := os.ReadFile(filepath.Join(cache, "outside")); !isErrno(err, syscall.EIO) {
		t.Errorf("a file outside the list, away at home: %d bytes (home's: %v), %v; want EIO", len(got), bytes.Equal(got, files["outside"]), err)
	}
	bad := runBin(t, "fileset", "prefetch")
	if bad.ExitCode == 0 || !strings.Contains(bad.Stderr, "--list FILE") {
		t.Errorf("fileset prefetch without a path: exit %d, %q; want a usage error", bad.ExitCode, bad.Stderr)
	}
}

// touchPage reads m[off], reporting a memory fault instead of dying of it.
func touchPage(m []byte, off int) (b byte, faulted bool) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if recover() != nil {
			faulted = true
		}
	}()
	return m[off], false
}
