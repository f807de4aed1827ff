package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"tessera/test/cluster"
)

func withArgs(args ...string) option {
	return func(o *cluster.Options) { o.Args = append(o.Args, args...) }
}

// nfsMount mounts the NFS export of c as uid:gid with the Go NFS client.
func nfsMount(t *testing.T, c *cluster.Cluster, uid, gid uint32) *nfsc.Target {
	t.Helper()
	addr := c.Field("nfs")
	if addr == "" {
		t.Fatal("tessera up's ready line names no nfs=ADDR")
	}
	cl, err := dialRPC(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	m := nfsc.Mount{Client: cl}
	target, err := m.Mount("/", rpc.NewAuthUnix("e2e", uid, gid).Auth())
	if err != nil {
		cl.Close()
		t.Fatalf("mount %s as %d:%d: %v", addr, uid, gid, err)
	}
	t.Cleanup(func() { target.Close() })
	return target
}

func nfsWrite(t *testing.T, target *nfsc.Target, p string, data []byte) {
	t.Helper()
	f, err := target.OpenFile(p, 0o644)
	if err != nil {
		t.Fatalf("nfs open %s: %v", p, err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("nfs write %s: %v", p, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("nfs close %s: %v", p, err)
	}
}

func nfsRead(t *testing.T, target *nfsc.Target, p string) []byte {
	t.Helper()
	f, err := target.Open(p)
	if err != nil {
		t.Fatalf("nfs open %s: %v", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("nfs read %s: %v", p, err)
	}
	return b
}

// TestNFSBesideFUSE serves `tessera up --nfs`: what NFS writes the FUSE
// mount reads and the other way round, POSIX permissions hold for a
// non-root uid over NFS, and a file handle still works after tessera up
// restarts (another process, another port).
func TestNFSBesideFUSE(t *testing.T) {
	c := startCluster(t, withArgs("--nfs", "127.0.0.1:0", "--squash", "none"))
	m := c.Mount()
	root := nfsMount(t, c, 0, 0)

	data := randBytes(24, 5*mib+77)
	nfsWrite(t, root, "from-nfs", data)
	wantContent(t, filepath.Join(m, "from-nfs"), data)

	back := randBytes(25, 3*mib+5)
	writeFile(t, filepath.Join(m, "from-fuse"), back)
	if got := nfsRead(t, root, "from-fuse"); !bytes.Equal(got, back) {
		t.Fatalf("nfs read of a file written on the FUSE mount: %d bytes, want the %d written", len(got), len(back))
	}
	if err := root.Symlink("from-nfs", "link"); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(m, "link")); err != nil || target != "from-nfs" {
		t.Fatalf("symlink made over NFS reads %q, %v on the mount", target, err)
	}
	if err := root.Rename("from-fuse", "renamed"); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(m, "renamed"), back)

	// Permissions as a non-root uid.
	must(t, os.Mkdir(filepath.Join(m, "private"), 0o700))
	writeFile(t, filepath.Join(m, "private", "secret"), []byte("root's"))
	must(t, os.WriteFile(filepath.Join(m, "readonly"), []byte("r"), 0o644))
	user := nfsMount(t, c, 1000, 1000)
	if _, err := user.ReadDirPlus("private"); !nfsErr(err, nfsc.NFS3ErrAcces) {
		t.Fatalf("uid 1000 listing root's 0700 directory: %v, want NFS3ERR_ACCES", err)
	}
	// LOOKUP is answered by the gate (go-nfs answered every failed one
	// with NFS3ERR_NOENT).
	if _, _, err := user.Lookup("private/secret"); !nfsErr(err, nfsc.NFS3ErrAcces) {
		t.Fatalf("uid 1000 looking into root's 0700 directory: %v, want NFS3ERR_ACCES", err)
	}
	f, err := user.OpenFile("readonly", 0o644)
	if err == nil {
		_, err = f.Write([]byte("x"))
		f.Close()
	}
	if !nfsErr(err, nfsc.NFS3ErrAcces) {
		t.Fatalf("uid 1000 writing root's 0644 file: %v, want NFS3ERR_ACCES", err)
	}
	wantContent(t, filepath.Join(m, "readonly"), []byte("r"))

	// A handle across a restart.
	_, fh, err := root.Lookup("from-nfs")
	if err != nil {
		t.Fatal(err)
	}
	root.Close()
	user.Close()
	restart(t, c)
	again := nfsMount(t, c, 0, 0)
	attr, err := again.GetAttr(fh)
	if err != nil {
		t.Fatalf("getattr with a handle from before the restart: %v", err)
	}
	if attr.Filesize != uint64(len(data)) {
		t.Fatalf("size %d through the old handle, want %d", attr.Filesize, len(data))
	}
	must(t, os.Remove(filepath.Join(m, "from-nfs")))
	// The unlink's callback to the NFS server's session, which drops the
	// attributes it keeps under its lease, comes after the unlink returns
	// (meta's notices of an unlink are not waited for; the session policy
	// allows its TTL of staleness, as a FUSE mount's attribute timeout
	// does): the handle is STALE once it has come.
	pollFor(t, "getattr of a removed file's handle to answer NFS3ERR_STALE", func() bool {
		_, err := again.GetAttr(fh)
		if err != nil && !nfsErr(err, nfsc.NFS3ErrStale) {
			t.Fatalf("getattr of a removed file's handle: %v, want NFS3ERR_STALE", err)
		}
		return err != nil
	})
}

func nfsErr(err error, num uint32) bool {
	var e *nfsc.Error
	return errors.As(err, &e) && e.ErrorNum == num
}

// needLibnfs skips without Debian's libnfs-utils (scripts/deps.sh --test
// installs it), and fails under CI=true.
func needLibnfs(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"nfs-ls", "nfs-cp", "nfs-cat"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed (scripts/deps.sh --test installs libnfs-utils)", tool)
			}
			t.Skipf("%s not installed (scripts/deps.sh --test installs libnfs-utils)", tool)
		}
	}
}

// libnfs runs a libnfs tool with a bounded time and returns its output.
func libnfs(t *testing.T, tool string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestNFSWithLibnfs uses a real NFS client that runs none of our code
// (libnfs's nfs-cp, nfs-cat, nfs-ls) against tessera up --nfs, NFS and
// MOUNT on the one port. tessera up on a loopback address does not squash
// root: as root (CI runs as root), libnfs creates a file in the export's
// root, root's 0755 directory, and the file is root's.
func TestNFSWithLibnfs(t *testing.T) {
	needLibnfs(t)
	c := startCluster(t, withArgs("--nfs", "127.0.0.1:0"))
	m := c.Mount()
	url := func(p string) string {
		port := c.Field("nfs")[strings.LastIndex(c.Field("nfs"), ":")+1:]
		return "nfs://127.0.0.1" + p + "?nfsport=" + port + "&mountport=" + port
	}
	if os.Geteuid() == 0 {
		top := filepath.Join(t.TempDir(), "top")
		must(t, os.WriteFile(top, []byte("in the export's root\n"), 0o644))
		// libnfs mounts the URL's directory: two slashes for the root.
		libnfs(t, "nfs-cp", top, url("//top"))
		wantContent(t, filepath.Join(m, "top"), []byte("in the export's root\n"))
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(m, "top"), &st))
		if st.Uid != 0 {
			t.Fatalf("a file root made over NFS on tessera up's loopback server is uid %d's, want root's (not squashed)", st.Uid)
		}
	}
	must(t, os.Mkdir(filepath.Join(m, "dir"), 0o755))
	src := filepath.Join(t.TempDir(), "src")
	data := randBytes(31, 4*mib+99)
	must(t, os.WriteFile(src, data, 0o644))
	libnfs(t, "nfs-cp", src, url("/dir/copied"))
	wantContent(t, filepath.Join(m, "dir", "copied"), data)

	writeFile(t, filepath.Join(m, "dir", "note"), []byte("written on the FUSE mount\n"))
	if got := libnfs(t, "nfs-cat", url("/dir/note")); got != "written on the FUSE mount\n" {
		t.Fatalf("nfs-cat: %q", got)
	}
	back := filepath.Join(t.TempDir(), "back")
	libnfs(t, "nfs-cp", url("/dir/copied"), back)
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("nfs-cp back: %d bytes, %v; want the %d written", len(got), err, len(data))
	}
	ls := libnfs(t, "nfs-ls", url("/dir"))
	for _, name := range []string{"copied", "note"} {
		if !strings.Contains(ls, name) {
			t.Fatalf("nfs-ls of dir misses %s:\n%s", name, ls)
		}
	}
}

// nfsMountAddr mounts the export of the NFS server at addr as uid:gid.
func nfsMountAddr(t *testing.T, addr string, uid, gid uint32) *nfsc.Target {
	t.Helper()
	cl, err := dialRPC(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	m := nfsc.Mount{Client: cl}
	target, err := m.Mount("/", rpc.NewAuthUnix("e2e", uid, gid).Auth())
	if err != nil {
		cl.Close()
		t.Fatalf("mount %s as %d:%d: %v", addr, uid, gid, err)
	}
	t.Cleanup(func() { target.Close() })
	return target
}

// TestNFSHandleMovesBetweenServers runs two `tessera nfs` processes of one
// cluster: a handle from server A works on server B (no table is shared),
// and what A wrote B reads, as does the FUSE mount.
func TestNFSHandleMovesBetweenServers(t *testing.T) {
	c := startCluster(t)
	var servers []*cluster.Daemon
	for range 2 {
		d, err := c.StartNFS("--squash", "none")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := d.Stop(); err != nil {
				t.Errorf("stopping tessera nfs: %v", err)
			}
		})
		servers = append(servers, d)
	}
	a := nfsMountAddr(t, servers[0].Field("nfs"), 0, 0)
	b := nfsMountAddr(t, servers[1].Field("nfs"), 0, 0)
	data := randBytes(33, 2*mib+3)
	if _, err := a.Mkdir("moved", 0o755); err != nil {
		t.Fatal(err)
	}
	nfsWrite(t, a, "moved/f", data)
	_, fh, err := a.Lookup("moved/f")
	if err != nil {
		t.Fatal(err)
	}
	attr, err := b.GetAttr(fh)
	if err != nil {
		t.Fatalf("server B with server A's handle: %v", err)
	}
	if attr.Filesize != uint64(len(data)) {
		t.Fatalf("size %d on server B, want %d", attr.Filesize, len(data))
	}
	if got := nfsRead(t, b, "moved/f"); !bytes.Equal(got, data) {
		t.Fatalf("server B reads %d bytes, want the %d server A wrote", len(got), len(data))
	}
	wantContent(t, filepath.Join(c.Mount(), "moved", "f"), data)
}

// dialRPC connects the Go NFS client to addr. The client binds a random
// local port of its own choosing (49152-65535, seeded by the clock), which
// may be in use: it is tried again, a bounded number of times.
func dialRPC(t testing.TB, addr string) (*rpc.Client, error) {
	t.Helper()
	var err error
	for range 20 {
		var c *rpc.Client
		if c, err = rpc.DialTCP("tcp", addr, false); err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, err
}
