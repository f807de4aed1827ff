package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNFSBigDirectoryListedWhole: a directory of 20,000 entries (made on
// the FUSE mount) is listed whole over NFS, each name once: by the Go
// client's READDIRPLUS, page after page with cookies and the cookie
// verifier (4 KiB pages: some 700 calls), and by libnfs's nfs-ls.
func TestNFSBigDirectoryListedWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the 20,000-entry directory")
	}
	const n = 20000
	c := startCluster(t, withArgs("--nfs", "127.0.0.1:0"))
	d := filepath.Join(c.Mount(), "big")
	must(t, os.Mkdir(d, 0o755))
	name := func(i int) string { return fmt.Sprintf("entry-%05d", i) }
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 { // two workers: the daemon gets the rest of the two cores
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				fd, err := unix.Open(filepath.Join(d, name(i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
				if err == nil {
					err = unix.Close(fd)
				}
				if err != nil {
					errs <- fmt.Errorf("create %s: %w", name(i), err)
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
	want := func(how string, names []string) {
		t.Helper()
		seen := make(map[string]bool, n)
		for _, s := range names {
			if s == "." || s == ".." {
				continue
			}
			if seen[s] {
				t.Fatalf("%s lists %q twice", how, s)
			}
			seen[s] = true
		}
		if len(seen) != n {
			t.Fatalf("%s lists %d entries, want %d", how, len(seen), n)
		}
		for i := range n {
			if !seen[name(i)] {
				t.Fatalf("%s lacks %s", how, name(i))
			}
		}
	}

	root := nfsMount(t, c, 0, 0)
	ents, err := root.ReadDirPlus("big")
	if err != nil {
		t.Fatalf("READDIRPLUS of 20,000 entries: %v", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.FileName)
	}
	want("READDIRPLUS (Go client)", names)

	needLibnfs(t) // skips here (the Go client's listing checked) without libnfs-utils
	port := c.Field("nfs")[strings.LastIndex(c.Field("nfs"), ":")+1:]
	out := libnfs(t, "nfs-ls", "nfs://127.0.0.1/big?nfsport="+port+"&mountport="+port)
	names = names[:0]
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			names = append(names, f[len(f)-1])
		}
	}
	want("nfs-ls", names)
}
