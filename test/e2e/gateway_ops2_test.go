package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tessera/internal/wan"
	"tessera/test/cluster"
)

// Issue 14 items 1 and 6: what the gateway still lacked for users.

// statTree maps each path under dir to its type, mode, size, mtime and
// content (symlinks: target): a change of any shows.
func statTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		s := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += fmt.Sprintf(" %x", b)
		}
		out[rel] = s
		return nil
	})
	must(t, err)
	return out
}

// TestGatewayReadOnlyRefusesUpdates: in a read-only fileset every local
// update through a real mount fails with EROFS (create, mkdir, an open
// for writing or truncating, truncate, unlink, rmdir, rename, chmod,
// utimes, symlink, link, setxattr) and changes nothing at home or in the
// cache (no file is fetched to be refused); reads, listing, prefetch and
// evict keep working.
func TestGatewayReadOnlyRefusesUpdates(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "d", "sub"), 0o755))
	want := map[string][]byte{
		"top":   []byte("at the fileset's root\n"),
		"d/f":   randBytes(7, 5<<20+17), // over one 4 MiB block
		"d/g":   []byte("second file\n"),
		"d/sub": nil,
	}
	for rel, b := range want {
		if b != nil {
			writeFile(t, filepath.Join(home, rel), b)
		}
	}
	must(t, os.Symlink("f", filepath.Join(home, "d", "ln")))
	cache := filepath.Join(c.Mount(), "cache")
	filesetCmd(t, c, "create", cache, "--home", "file://"+home, "--mode", "ro", "--validity-lag", "1h")
	names(t, cache)
	names(t, filepath.Join(cache, "d")) // placeholders, nothing fetched
	homeBefore := statTree(t, home)
	cachedLine := regexp.MustCompile(`cached +.* in \d+ files whole, \d+ partly; \d+ placeholders`)
	cached := func() string {
		t.Helper()
		st := filesetCmd(t, c, "status", cache)
		m := cachedLine.FindString(st.Stdout)
		if m == "" {
			t.Fatalf("fileset status shows no cached line:\n%s", st.Stdout)
		}
		return m
	}
	before := cached()

	at := func(rel string) string { return filepath.Join(cache, rel) }
	ops := []struct {
		name string
		do   func() error
	}{
		{"create", func() error {
			f, err := os.OpenFile(at("d/new"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"create at the root", func() error { return os.WriteFile(at("new"), []byte("x"), 0o644) }},
		{"mkdir", func() error { return os.Mkdir(at("d/newdir"), 0o755) }},
		{"open for writing", func() error {
			// The open itself must fail: a write(2) that says yes
			// and a close that says EROFS lose what was written.
			f, err := os.OpenFile(at("d/f"), os.O_WRONLY, 0)
			if err == nil {
				_, werr := f.Write([]byte("local"))
				return fmt.Errorf("open succeeded (write: %v, close: %v)", werr, f.Close())
			}
			return err
		}},
		{"open read-write", func() error {
			f, err := os.OpenFile(at("d/g"), os.O_RDWR, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"open with O_TRUNC", func() error {
			f, err := os.OpenFile(at("top"), os.O_WRONLY|os.O_TRUNC, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"truncate", func() error { return os.Truncate(at("d/f"), 3) }},
		{"unlink", func() error { return os.Remove(at("d/g")) }},
		{"rmdir", func() error { return syscall.Rmdir(at("d/sub")) }},
		{"rename", func() error { return os.Rename(at("d/g"), at("d/h")) }},
		{"chmod", func() error { return os.Chmod(at("d/g"), 0o600) }},
		{"utimes", func() error { return os.Chtimes(at("top"), time.Unix(1, 0), time.Unix(1, 0)) }},
		{"symlink", func() error { return os.Symlink("g", at("d/s")) }},
		{"link", func() error { return os.Link(at("d/g"), at("d/hard")) }},
		{"setxattr", func() error { return unix.Setxattr(at("d/g"), "user.k", []byte("v"), 0) }},
		{"removexattr", func() error { return unix.Removexattr(at("d/g"), "user.k") }},
	}
	for _, op := range ops {
		if err := op.do(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s in a read-only fileset: %v, want EROFS", op.name, err)
		}
	}

	if got := statTree(t, home); !equalMaps(got, homeBefore) {
		t.Errorf("home changed:\n got %v\nwant %v", got, homeBefore)
	}
	if got := cached(); got != before {
		t.Errorf("the refused updates changed the cache: status %q, before %q", got, before)
	}
	// Reading keeps working: the cache serves home's tree as it was.
	for rel, b := range want {
		if b != nil {
			wantContent(t, at(rel), b)
		}
	}
	if got := statTree(t, cache); len(got) != len(homeBefore) {
		t.Errorf("the cache lists %d paths, home %d: %v", len(got), len(homeBefore), got)
	}
	filesetCmd(t, c, "evict", cache)
	filesetCmd(t, c, "prefetch", at("d/f"))
	wantContent(t, at("d/f"), want["d/f"])
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestGatewayDisconnectedUnlistedDir: an sw fileset over an S3 home
// reached through a link the test cuts. With home down, creates and a
// mkdir in a directory never listed succeed (they failed with the dial's
// ECONNREFUSED), and the directory lists its local entries; what needs
// home's bytes (a read, or an open for writing, of a file never fetched)
// fails with EIO. With home back, the directory lists home's names beside
// the local ones, and after flush home has the local ones, a name made on
// both sides settled by keep-both (home's kept, the cache's under
// .conflicts/ with a report).
func TestGatewayDisconnectedUnlistedDir(t *testing.T) {
	addr, backend, keyFile := startVersity(t)
	link, err := wan.NewLink(addr, wan.LinkOptions{Name: "cache-home"})
	must(t, err)
	t.Cleanup(func() { link.Close() })
	homeDir := filepath.Join(backend, "bkt", "pre")
	must(t, os.MkdirAll(filepath.Join(homeDir, "d"), 0o755))
	writeFile(t, filepath.Join(homeDir, "d", "x"), []byte("home's x\n"))
	writeFile(t, filepath.Join(homeDir, "d", "both"), []byte("home"))
	writeFile(t, filepath.Join(homeDir, "top"), []byte("never fetched\n"))

	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	cache := filepath.Join(c.Mount(), "cache")
	q := url.Values{"endpoint": {"http://" + link.Addr()}, "region": {"us-east-1"}, "access_key_file": {keyFile}}
	filesetCmd(t, c, "create", cache, "--home", "s3://bkt/pre?"+q.Encode(), "--mode", "sw", "--sync-lag", "1h")
	if n := names(t, cache); len(n) != 2 { // d and top, as placeholders
		t.Fatalf("the fileset lists %v, want d and top", n)
	}

	must(t, link.Cut(wan.Refuse))
	d := filepath.Join(cache, "d")
	if err := os.Mkdir(filepath.Join(d, "newdir"), 0o755); err != nil {
		t.Errorf("mkdir in a directory never listed, home down: %v", err)
	}
	if err := os.WriteFile(filepath.Join(d, "newfile"), []byte("made offline\n"), 0o644); err != nil {
		t.Errorf("create in a directory never listed, home down: %v", err)
	}
	if err := os.WriteFile(filepath.Join(d, "both"), []byte("cache"), 0o644); err != nil {
		t.Errorf("create of a name home has too, home down: %v", err)
	}
	if n := names(t, d); len(n) != 3 {
		t.Errorf("with home down the directory lists %v, want its three local entries", n)
	}
	if _, err := os.ReadFile(filepath.Join(cache, "top")); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a file never fetched, home down: %v, want EIO", err)
	}
	if f, err := os.OpenFile(filepath.Join(cache, "top"), os.O_WRONLY, 0); !errors.Is(err, syscall.EIO) {
		if err == nil {
			f.Close()
		}
		t.Errorf("open for writing of a file never fetched, home down: %v, want EIO", err)
	}

	must(t, link.Heal())
	if n := names(t, d); strings.Join(n, " ") != "both newdir newfile x" {
		t.Errorf("with home back the directory lists %v, want both newdir newfile x", n)
	}
	wantContent(t, filepath.Join(d, "x"), []byte("home's x\n"))
	wantContent(t, filepath.Join(d, "both"), []byte("cache"))
	filesetCmd(t, c, "flush", cache)
	wantContent(t, filepath.Join(homeDir, "d", "newfile"), []byte("made offline\n"))
	if fi, err := os.Stat(filepath.Join(homeDir, "d", "newdir")); err != nil || !fi.IsDir() {
		t.Errorf("home's d/newdir: %v, %v", fi, err)
	}
	wantContent(t, filepath.Join(homeDir, "d", "both"), []byte("home"))
	reports, _ := filepath.Glob(filepath.Join(homeDir, ".conflicts", "d", "both.*.report"))
	if len(reports) != 1 {
		t.Fatalf("conflict reports %v, want one", reports)
	}
	wantContent(t, strings.TrimSuffix(reports[0], ".report"), []byte("cache"))
}

// upGatewayLine is a line of `fileset status` for an in-process gateway of
// `tessera up --gateways N`, in the format of gateway processes' lines.
var upGatewayLine = regexp.MustCompile(`(?m)^    (up-gateway-\d+) in-process live: ingested (\d+) bytes, \S+ \S+/s over the last [^;]+; (\d+) fetches, \d+ listings, (\d+) write-back ops$`)

// TestGatewayUpReportsPerGateway: `fileset status` of a fileset served by
// `tessera up --gateways 2` lists both in-process gateways with their
// ingested bytes, rate, fetches and write-back ops, as it lists gateway
// processes: the bytes of a file read through the mount (fetched in
// ranges by both), and the write-back of a file made in the cache.
func TestGatewayUpReportsPerGateway(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) {
		o.Args = append(o.Args, "--gateways", "2")
	})
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(home, 0o755))
	data := randBytes(11, 40<<20) // several 16 MiB ranges, split among both
	writeFile(t, filepath.Join(home, "big"), data)
	cache := filepath.Join(c.Mount(), "cache")
	filesetCmd(t, c, "create", cache, "--home", "file://"+home, "--mode", "sw", "--sync-lag", "1s", "--prefetch", "none")
	wantContent(t, filepath.Join(cache, "big"), data)
	writeFile(t, filepath.Join(cache, "made"), []byte("written back\n"))
	filesetCmd(t, c, "flush", cache)

	var out string
	pollFor(t, "fileset status to show both in-process gateways with the ingest and the write-back", func() bool {
		out = filesetCmd(t, c, "status", cache).Stdout
		lines := upGatewayLine.FindAllStringSubmatch(out, -1)
		var bytes, wb uint64
		for _, l := range lines {
			b, _ := strconv.ParseUint(l[2], 10, 64)
			w, _ := strconv.ParseUint(l[4], 10, 64)
			bytes, wb = bytes+b, wb+w
		}
		if len(lines) == 2 && bytes >= uint64(len(data)) && wb >= 1 {
			return true
		}
		time.Sleep(300 * time.Millisecond) // the counters come with the next heartbeat
		return false
	})
	if !strings.Contains(out, "gateways    2 registered") {
		t.Errorf("fileset status does not count the two gateways:\n%s", out)
	}
	t.Logf("fileset status:\n%s", out)
}

// TestGatewayPrefetchThroughProcesses: with gateway processes live,
// `tessera fileset prefetch` has them fetch (each file through its owner,
// split among both): their counters in fileset status grow by the file's
// bytes, and the file then reads whole with home moved away (a hit).
func TestGatewayPrefetchThroughProcesses(t *testing.T) {
	m, home, cache := startGatewayCluster(t, 2, "ro")
	big := randBytes(141, 20<<20+321)
	writeFile(t, filepath.Join(home, "big"), big)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := m.Run(ctx, "fileset", "prefetch", filepath.Join(cache, "big"))
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("fileset prefetch: exit %d: %s %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	got, out := gatewayCounts(t, m, cache, func(c map[string][3]uint64) bool {
		var bytes uint64
		for _, v := range c {
			bytes += v[0]
		}
		return len(c) == 2 && bytes >= uint64(len(big))
	})
	var bytes uint64
	shared := 0
	for _, v := range got {
		bytes += v[0]
		if v[0] > 0 {
			shared++
		}
	}
	if bytes < uint64(len(big)) || shared < 2 {
		t.Errorf("the gateways ingested %d bytes, %d of them any; want the file's %d split among both\n%s", bytes, shared, len(big), out)
	}
	must(t, os.Rename(home, home+".away"))
	wantContent(t, filepath.Join(cache, "big"), big)
}

// TestGatewayStopDeregisters: a gateway process stopped with SIGTERM
// removes its registry record on the way out: fileset status lists only
// the other at once (not "silent" for the hour a crashed one is kept).
func TestGatewayStopDeregisters(t *testing.T) {
	m, _, cache := startGatewayCluster(t, 2, "ro")
	g1 := m.Gateways()[1]
	must(t, g1.Stop())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := m.Run(ctx, "fileset", "status", cache)
	must(t, err)
	if !strings.Contains(res.Stdout, "gateways    1 registered") || strings.Contains(res.Stdout, " g1 ") {
		t.Errorf("after g1's clean stop, fileset status still lists it:\n%s", res.Stdout)
	}
}

// TestGatewayReadOnlyWithProcesses: with gateway processes (the mount
// reads the fileset's mode through its Router), an open for writing and a
// truncate in a read-only fileset fail with EROFS at once, and the file
// still reads as home's.
func TestGatewayReadOnlyWithProcesses(t *testing.T) {
	_, home, cache := startGatewayCluster(t, 1, "ro")
	data := randBytes(142, 5<<20+3)
	writeFile(t, filepath.Join(home, "f"), data)
	p := filepath.Join(cache, "f")
	if f, err := os.OpenFile(p, os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
		if err == nil {
			f.Close()
		}
		t.Errorf("open for writing: %v, want EROFS at the open", err)
	}
	if err := os.Truncate(p, 1); !errors.Is(err, syscall.EROFS) {
		t.Errorf("truncate: %v, want EROFS", err)
	}
	wantContent(t, p, data)
}
