package e2e

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestGatewayNamesGoneAtHome: a read-only fileset with a validity lag of
// one second. Names removed at home (a file, a directory with its file)
// leave the cache once the lag has passed and the directory is used
// again through the mount; a file read and held open meanwhile still
// reads (what it cached: home no longer has the rest).
func TestGatewayNamesGoneAtHome(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "d"), 0o755))
	writeFile(t, filepath.Join(home, "a"), []byte("stays\n"))
	writeFile(t, filepath.Join(home, "b"), []byte("goes, open\n"))
	writeFile(t, filepath.Join(home, "d", "x"), []byte("goes with d\n"))
	cache := filepath.Join(c.Mount(), "cache")
	filesetCmd(t, c, "create", cache, "--home", "file://"+home, "--mode", "ro", "--validity-lag", "1s")
	if n := names(t, cache); strings.Join(n, " ") != "a b d" {
		t.Fatalf("the fileset lists %v", n)
	}
	wantContent(t, filepath.Join(cache, "d", "x"), []byte("goes with d\n"))
	// b is read (so cached: misses fetch only what is read) and held open.
	f, err := os.Open(filepath.Join(cache, "b"))
	must(t, err)
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "goes, open\n" {
		t.Fatalf("b reads %q, %v", b, err)
	}

	must(t, os.Remove(filepath.Join(home, "b")))
	must(t, os.RemoveAll(filepath.Join(home, "d")))
	later := time.Now().Add(time.Hour) // the directory's mtime moves even on a coarse clock
	must(t, os.Chtimes(home, later, later))

	var got []string
	for range 300 { // the lag, then each use may revalidate; at most a minute
		time.Sleep(200 * time.Millisecond)
		if got = names(t, cache); strings.Join(got, " ") == "a" {
			break
		}
	}
	if strings.Join(got, " ") != "a" {
		t.Fatalf("after the lag the fileset lists %v, want a", got)
	}
	if _, err := os.Stat(filepath.Join(cache, "d", "x")); !os.IsNotExist(err) {
		t.Errorf("d/x after its removal at home: %v", err)
	}
	b := make([]byte, 64)
	n, err := f.ReadAt(b, 0)
	if string(b[:n]) != "goes, open\n" {
		t.Errorf("b, open while removed, reads %q, %v", b[:n], err)
	}
	wantContent(t, filepath.Join(cache, "a"), []byte("stays\n"))
}

// TestGatewayRevalidateRemovesVanished: with a validity lag of an hour, a
// name removed at home stays until `tessera fileset revalidate`, which
// removes it (over the wire: the RemoveVanished call); in an iw fileset a
// name with a queued local change stays.
func TestGatewayRevalidateRemovesVanished(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(home, 0o755))
	for _, n := range []string{"a", "b", "c"} {
		writeFile(t, filepath.Join(home, n), []byte("home's "+n+"\n"))
	}
	cache := filepath.Join(c.Mount(), "cache")
	filesetCmd(t, c, "create", cache, "--home", "file://"+home, "--mode", "iw", "--validity-lag", "1h", "--sync-lag", "1h")
	for _, n := range []string{"a", "b", "c"} {
		wantContent(t, filepath.Join(cache, n), []byte("home's "+n+"\n"))
	}
	writeFile(t, filepath.Join(cache, "b"), []byte("changed in the cache\n")) // queued for an hour
	must(t, os.Remove(filepath.Join(home, "a")))
	must(t, os.Remove(filepath.Join(home, "b")))
	later := time.Now().Add(time.Hour)
	must(t, os.Chtimes(home, later, later))
	if n := names(t, cache); strings.Join(n, " ") != "a b c" {
		t.Fatalf("within the lag the fileset lists %v, want a b c", n)
	}
	res := runBin(t, "fileset", "revalidate", cache)
	if res.ExitCode != 0 {
		t.Fatalf("fileset revalidate: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if n := names(t, cache); strings.Join(n, " ") != "b c" {
		t.Errorf("after revalidate the fileset lists %v, want b c (a gone; b has a queued change)", n)
	}
	wantContent(t, filepath.Join(cache, "b"), []byte("changed in the cache\n"))
}
