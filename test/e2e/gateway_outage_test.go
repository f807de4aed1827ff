package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/wan"
	"tessera/test/cluster"
)

// Issue 14, the outage test: disconnected operation of a single-writer
// fileset whose home is an S3 store (Versity S3 Gateway, posix backend)
// reached through an emulated WAN link (internal/wan: 30 ms each way, a
// capped rate), so every byte between the cache's gateways and home
// crosses a real TCP link that the test cuts.

// outageScale multiplies the workload; `-tags bigoutage` raises it.
var outageScale = 1

// startVersity starts a Versity S3 Gateway on 127.0.0.1 over a posix
// backend with one bucket "bkt" and returns its address, the backend
// directory and a key file for the s3:// URL (access_key_file). It skips
// the test where versitygw is not installed, outside CI.
func startVersity(t *testing.T) (addr, backend, keyFile string) {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		out, _ := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(strings.TrimSpace(string(out)), "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("versitygw not installed (scripts/test.sh installs it)")
			}
			t.Skip("versitygw not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
		}
	}
	backend = t.TempDir()
	must(t, os.Mkdir(filepath.Join(backend, "bkt"), 0o755))
	keyFile = filepath.Join(t.TempDir(), "s3key")
	const access, secret = "gw-outage", "gw-outage-secret"
	must(t, os.WriteFile(keyFile, []byte(access+" "+secret+"\n"), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr = ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--port", addr, "--access", access, "--secret", secret, "--quiet", "posix", backend)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	for range 600 { // at most a minute
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr, backend, keyFile
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("versitygw did not listen on %s", addr)
	return
}

// homeView is treeOf for the posix backend of an S3 home: the bucket's
// own bookkeeping (versitygw's .sgwtmp) is not part of the tree.
func homeView(t *testing.T, dir string) map[string]string {
	out := treeOf(t, dir)
	for p := range out {
		if p == ".sgwtmp" || strings.HasPrefix(p, ".sgwtmp/") {
			delete(out, p)
		}
	}
	return out
}

// compareTrees fails unless the two trees are equal, listing differences.
func compareTrees(t *testing.T, cache, home map[string]string) {
	t.Helper()
	var diffs []string
	for p, v := range cache {
		if hv, ok := home[p]; !ok {
			diffs = append(diffs, "missing at home: "+p)
		} else if hv != v {
			diffs = append(diffs, fmt.Sprintf("differs: %s (%d bytes in the cache, %d at home)", p, len(v), len(hv)))
		}
	}
	for p := range home {
		if _, ok := cache[p]; !ok {
			diffs = append(diffs, "only at home: "+p)
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("home != cache (%d entries in the cache, %d at home):\n%s", len(cache), len(home), strings.Join(diffs[:min(len(diffs), 30)], "\n"))
	}
}

// outageWorkload runs the updates of the outage test at the fileset
// directory fs and returns how many operations it made. Every one must
// succeed: home is down, and the cache alone answers.
func outageWorkload(t *testing.T, fs string, scale int) int {
	ops := 0
	do := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("with home down, %s: %v", what, err)
		}
		ops++
	}
	nd, nf := 10*scale, 60
	for i := range nd {
		d := filepath.Join(fs, fmt.Sprintf("d%d", i))
		do("mkdir", os.Mkdir(d, 0o755))
		do("mkdir", os.Mkdir(filepath.Join(d, "s"), 0o755))
		for j := range nf {
			n := (i*nf + j) % 3000
			if j%25 == 0 {
				n = 300*kib + i*j // past inline: through the block servers
			}
			do("create", os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), randBytes(uint64(i*1000+j), n), 0o644))
		}
	}
	for i := range nd { // rewrites and appends
		for j := 0; j < nf; j += 3 {
			p := filepath.Join(fs, fmt.Sprintf("d%d/f%d", i, j))
			if j%2 == 0 {
				do("rewrite", os.WriteFile(p, randBytes(uint64(7e6+i*1000+j), 1000+j), 0o644))
				continue
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			do("open for append", err)
			_, err = f.Write([]byte(fmt.Sprintf("appended %d/%d\n", i, j)))
			do("append", err)
			do("close", f.Close())
		}
	}
	for i := range nd { // renames across directories, then removes
		for j := 1; j < nf; j += 6 {
			do("rename", os.Rename(filepath.Join(fs, fmt.Sprintf("d%d/f%d", i, j)), filepath.Join(fs, fmt.Sprintf("d%d/s/r%d", (i+1)%nd, j))))
		}
		for j := 2; j < nf; j += 6 {
			do("remove", os.Remove(filepath.Join(fs, fmt.Sprintf("d%d/f%d", i, j))))
		}
		// Made and removed before home saw it: cancelled in the queue.
		tmp := filepath.Join(fs, fmt.Sprintf("d%d/tmp", i))
		do("create", os.WriteFile(tmp, []byte("short-lived"), 0o644))
		do("remove", os.Remove(tmp))
	}
	// Directories renamed whole, with what they hold.
	do("mkdir", os.Mkdir(filepath.Join(fs, "moved"), 0o755))
	for i := nd - 3; i < nd; i++ {
		do("rename dir", os.Rename(filepath.Join(fs, fmt.Sprintf("d%d", i)), filepath.Join(fs, fmt.Sprintf("moved/m%d", i))))
	}
	// Empty directories made and half of them removed again.
	for i := range 20 {
		do("mkdir", os.Mkdir(filepath.Join(fs, fmt.Sprintf("e%d", i)), 0o755))
	}
	for i := 0; i < 20; i += 2 {
		do("rmdir", os.Remove(filepath.Join(fs, fmt.Sprintf("e%d", i))))
	}
	// A deep tree: a chain of 40 directories, each with a file and a
	// side directory, whose lower half is then removed bottom up (rmdir
	// after its children, as rm -r does).
	deep := fs
	var chain []string
	for i := range 40 {
		deep = filepath.Join(deep, fmt.Sprintf("deep%d", i))
		chain = append(chain, deep)
		do("mkdir deep", os.Mkdir(deep, 0o755))
		do("mkdir side", os.Mkdir(filepath.Join(deep, "side"), 0o755))
		do("create deep", os.WriteFile(filepath.Join(deep, "x"), []byte(deep), 0o644))
	}
	for i := len(chain) - 1; i >= 20; i-- {
		do("remove deep", os.Remove(filepath.Join(chain[i], "x")))
		do("rmdir side", os.Remove(filepath.Join(chain[i], "side")))
		do("rmdir deep", os.Remove(chain[i]))
	}
	return ops
}

// TestGatewayOutage: an sw fileset over an s3:// home behind a WAN link,
// two gateways in `tessera up`. With the link cut (home refuses every
// connection) 1,000+ creates, writes, renames, removes, mkdirs and rmdirs
// of a deep tree at the cache all succeed. The link healed, `tessera
// fileset flush` starts the drain and the whole process (meta, both
// gateways, the mount) is killed with SIGKILL once home has some of it;
// started again, flush returns once the queue is drained, and home's tree
// equals the cache's byte for byte: nothing acknowledged was lost, and the
// deep tree made and partly removed applied without ENOENT or ENOTEMPTY
// (no operation failed for good).
func TestGatewayOutage(t *testing.T) {
	addr, backend, keyFile := startVersity(t)
	link, err := wan.NewLink(addr, wan.LinkOptions{Latency: 30 * time.Millisecond, Rate: 8 << 20, Name: "cache-home"})
	must(t, err)
	t.Cleanup(func() { link.Close() })
	homeDir := filepath.Join(backend, "bkt", "pre")
	must(t, os.Mkdir(homeDir, 0o755))

	c := startCluster(t, func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "2") })
	fsDir := filepath.Join(c.Mount(), "cache")
	q := url.Values{"endpoint": {"http://" + link.Addr()}, "region": {"us-east-1"}, "access_key_file": {keyFile}}
	filesetCmd(t, c, "create", fsDir, "--home", "s3://bkt/pre?"+q.Encode(), "--mode", "sw", "--sync-lag", "1s")

	// The fileset's root is listed while home is up (a directory never
	// listed needs home: it is a placeholder); then home goes down, and the
	// gateways keep trying (sync lag 1 s) and meet refused connections.
	if n := names(t, fsDir); len(n) != 0 {
		t.Fatalf("the new fileset lists %v", n)
	}
	must(t, link.Cut(wan.Refuse))
	ops := outageWorkload(t, fsDir, outageScale)
	if ops < 1000 {
		t.Fatalf("the workload made %d operations, want 1,000 or more", ops)
	}
	before := treeOf(t, fsDir)
	if got := homeView(t, homeDir); len(got) != 0 {
		t.Fatalf("home has %d entries while the link is cut", len(got))
	}
	st := filesetCmd(t, c, "status", fsDir)
	if !strings.Contains(st.Stdout, "queue") {
		t.Fatalf("fileset status shows no queue: %s", st.Stdout)
	}
	t.Logf("%d operations at the cache with home down (%d entries); status:\n%s", ops, len(before), st.Stdout)

	// Home back: the drain starts; kill -9 the process mid-drain.
	must(t, link.Heal())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bg := make(chan struct{})
	go func() {
		defer close(bg)
		cluster.RunBin(ctx, c.Opts().Bin, "fileset", "flush", fsDir, "--data", c.DataDir())
	}()
	atHome := func() int { return len(homeView(t, homeDir)) }
	for i := 0; i < 6000 && atHome() < 20; i++ { // at most a minute
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("home has %d of %d entries when the process is killed", atHome(), len(before))
	must(t, c.Kill9())
	<-bg
	if err := c.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	after := treeOf(t, fsDir)
	compareTrees(t, before, after) // the cache lost nothing either
	res := filesetCmd(t, c, "flush", fsDir)
	if !strings.Contains(res.Stdout, "drained") || strings.Contains(res.Stderr, "failed for good") {
		t.Fatalf("flush said: %s %s", res.Stdout, res.Stderr)
	}
	compareTrees(t, before, homeView(t, homeDir))
	t.Logf("link: %d bytes up, %d down", link.BytesUp(), link.BytesDown())
}
