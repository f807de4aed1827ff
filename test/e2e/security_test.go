package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/test/cluster"
)

// Issue 12, items 2 and 3 on the block data path: TLS is the default,
// every block server route wants an identity, and roles are kept to their
// permissions. The tests are black-box: the block servers are reached as
// an outsider would (curl, here Go's HTTP client) and the certificates
// are made with `tessera certs`.

// blockServerAddrs returns the addresses in `tessera server list`.
func blockServerAddrs(t *testing.T, out string) []string {
	t.Helper()
	var addrs []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.HasPrefix(f[2], "127.0.0.1:") {
			addrs = append(addrs, f[2])
		}
	}
	if len(addrs) == 0 {
		t.Fatalf("no block server in `tessera server list`:\n%s", out)
	}
	return addrs
}

// outsider sends method path to a block server with tc (nil: plain
// HTTP) and returns the status, or 0 when the connection failed.
func outsider(t *testing.T, tc *tls.Config, method, addr, path string, body string) int {
	t.Helper()
	scheme := "https://"
	if tc == nil {
		scheme = "http://"
	}
	req, err := http.NewRequest(method, scheme+addr+path, strings.NewReader(body))
	must(t, err)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Logf("%s %s%s%s: %v", method, scheme, addr, path, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func trustCA(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	must(t, err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	return pool
}

func certConfig(t *testing.T, pool *x509.CertPool, dir, name string) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	must(t, err)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
}

// TestBlockServersRefuseOutsiders: on a cluster of separate processes run
// with certificates from `tessera certs` (the default), the issue's
// `curl -X DELETE` and `GET /v1/list` are refused without credentials, a
// read-only identity can read but neither write nor remove, and the mount
// and the admin commands work.
func TestBlockServersRefuseOutsiders(t *testing.T) {
	m := startMulti(t, 1)
	r := addMount(t, m)
	data := bytes.Repeat([]byte("content an outsider must not read or remove\n"), 8000)
	must(t, os.WriteFile(filepath.Join(r.Mount(), "f"), data, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := m.Run(ctx, "server", "list")
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("tessera server list with the admin certificate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	addr := blockServerAddrs(t, res.Stdout)[0]
	files, err := m.Servers()[0].BlockFiles()
	must(t, err)
	var hash string
	for h := range files {
		hash = h
	}
	if hash == "" {
		t.Fatal("no block on the server after writing the file")
	}
	pki := m.PKI()
	pool := trustCA(t, filepath.Join(pki.Dir(), "ca.crt"))
	anon := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	older := "?older-than=" + strconv.FormatInt(time.Now().Add(time.Hour).UnixNano(), 10)
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/v1/blocks/" + hash + older}, {"GET", "/v1/blocks/" + hash}, {"GET", "/v1/list"},
		{"PUT", "/v1/blocks/" + hash}, {"GET", "/v1/usage"},
	} {
		if code := outsider(t, anon, c.method, addr, c.path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a certificate: status %d, want 401", c.method, c.path, code)
		}
		if code := outsider(t, nil, c.method, addr, c.path, ""); code == http.StatusOK {
			t.Errorf("%s %s over plain HTTP: status 200", c.method, c.path)
		}
	}
	must(t, pki.Issue("reader", "client-ro"))
	ro := certConfig(t, pool, pki.Dir(), "reader")
	if code := outsider(t, ro, "GET", addr, "/v1/blocks/"+hash, ""); code != http.StatusOK {
		t.Errorf("GET as client-ro: status %d, want 200", code)
	}
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/v1/blocks/" + hash + older}, {"PUT", "/v1/blocks/" + hash}, {"GET", "/v1/list"},
	} {
		if code := outsider(t, ro, c.method, addr, c.path, string(data)); code != http.StatusForbidden {
			t.Errorf("%s %s as client-ro: status %d, want 403", c.method, c.path, code)
		}
	}
	// A certificate of another CA fails the handshake.
	other := filepath.Join(t.TempDir(), "other")
	for _, args := range [][]string{{"certs", "init", "--dir", other}, {"certs", "issue", "mallory", "--role", "admin", "--dir", other}} {
		res, err := cluster.RunBin(ctx, suite.bin, args...)
		must(t, err)
		if res.ExitCode != 0 {
			t.Fatalf("tessera %v: %s", args, res.Stderr)
		}
	}
	foreign := certConfig(t, pool, other, "mallory")
	foreign.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign.Certificates[0], nil }
	if code := outsider(t, foreign, "GET", addr, "/v1/list", ""); code != 0 {
		t.Errorf("GET /v1/list with another CA's certificate: status %d, want a failed handshake", code)
	}
	// Nothing was removed, and the cluster's own callers still work.
	got, err := os.ReadFile(filepath.Join(r.Mount(), "f"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %q, %v", got, err)
	}
	res, err = m.Run(ctx, "fsck")
	must(t, err)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "fsck: clean") {
		t.Fatalf("tessera fsck with the admin certificate: exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// An admin token instead of a certificate.
	tok, err := cluster.RunBin(ctx, suite.bin, "certs", "token", "ops", "--role", "admin", "--ttl", "10m", "--dir", pki.Dir())
	must(t, err)
	res, err = cluster.RunBin(ctx, suite.bin, "status", "--meta", m.MetaAddr(), "--token", strings.TrimSpace(tok.Stdout),
		"--tls-ca", filepath.Join(pki.Dir(), "ca.crt"))
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("tessera status --token: exit %d: %s", res.ExitCode, res.Stderr)
	}
	if log := m.LogTail(64 << 10); !strings.Contains(log, "block request refused") {
		t.Errorf("no refusal in the block server's log:\n%s", log)
	}
}

// TestUpUsesItsOwnCA: `tessera up` without flags makes DATA/tls/ and its
// block servers refuse callers without a certificate; the admin commands
// find DATA/tls/admin.* by themselves.
func TestUpUsesItsOwnCA(t *testing.T) {
	c := startCluster(t, withBlockServers(2))
	must(t, os.WriteFile(filepath.Join(c.Mount(), "f"), []byte("x"), 0o644))
	dir := filepath.Join(c.DataDir(), "tls")
	for _, f := range []string{"ca.crt", "ca.key", "meta.crt", "b0.crt", "b1.crt", "mount.crt", "admin.crt", "admin.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("tessera up made no %s: %v", f, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Run(ctx, "server", "list")
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("tessera server list --data: exit %d: %s", res.ExitCode, res.Stderr)
	}
	pool := trustCA(t, filepath.Join(dir, "ca.crt"))
	for _, addr := range blockServerAddrs(t, res.Stdout) {
		if code := outsider(t, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}, "GET", addr, "/v1/list", ""); code != http.StatusUnauthorized {
			t.Errorf("%s GET /v1/list without a certificate: %d, want 401", addr, code)
		}
		if code := outsider(t, certConfig(t, pool, dir, "admin"), "GET", addr, "/v1/list", ""); code != http.StatusOK {
			t.Errorf("%s GET /v1/list as admin: %d, want 200", addr, code)
		}
	}
	res, err = c.Run(ctx, "fsck")
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("tessera fsck --data: exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// TestRolesRefuseToStartWithoutTLS: without TLS flags a role says what to
// give; --insecure does not listen beyond loopback.
func TestRolesRefuseToStartWithoutTLS(t *testing.T) {
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"blockd", "--data", dir, "--meta", "127.0.0.1:1"}, "give --id"},
		{[]string{"meta", "--data", dir, "--listen", "0.0.0.0:0", "--insecure"}, "not a loopback address"},
		{[]string{"blockd", "--data", dir, "--meta", "127.0.0.1:1", "--listen", ":0", "--insecure"}, "not a loopback address"},
		{[]string{"up", "--data", dir, "--mount", dir, "--meta-listen", "0.0.0.0:0", "--insecure"}, "not a loopback address"},
		{[]string{"status", "--meta", "127.0.0.1:1"}, "--insecure"},
	} {
		res, err := cluster.RunBin(ctx, suite.bin, c.args...)
		must(t, err)
		if res.ExitCode != 2 || !strings.Contains(res.Stderr, c.want) {
			t.Errorf("tessera %s: exit %d, stderr %q; want exit 2 saying %q", strings.Join(c.args, " "), res.ExitCode, res.Stderr, c.want)
		}
	}
}

// TestRogueBlockServerCannotJoin: the issue's rogue `tessera blockd --meta
// ADDR` cannot join. One with a blockd certificate issued for another name
// cannot take over b0's id (the meta service binds a blockd to the id its
// certificate names), and one with a client-rw certificate is refused before
// it reaches the service; the server map is unchanged and no block went to
// either.
func TestRogueBlockServerCannotJoin(t *testing.T) {
	m := startMulti(t, 2)
	pki := m.PKI()
	must(t, pki.Issue("rogue", "blockd"))
	must(t, pki.Issue("someclient", "client-rw"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct{ cert, id, want string }{
		{"rogue", "b0", "permission denied"},
		{"rogue", "b9", "permission denied"},
		{"someclient", "b9", "blockd"},
	} {
		args := append([]string{"blockd", "--meta", m.MetaAddr(), "--id", c.id, "--data", t.TempDir(),
			"--listen", "127.0.0.1:0"}, pki.Args(c.cert)...)
		res, err := cluster.RunBin(ctx, suite.bin, args...)
		must(t, err)
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, c.want) {
			t.Errorf("blockd --id %s with %s's certificate: exit %d, stderr %q; want a refusal naming %q",
				c.id, c.cert, res.ExitCode, res.Stderr, c.want)
		}
	}
	res, err := m.Run(ctx, "server", "list")
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("server list: %s", res.Stderr)
	}
	if ids := blockServerAddrs(t, res.Stdout); len(ids) != 2 || strings.Contains(res.Stdout, "b9") {
		t.Fatalf("server map after the rogues:\n%s", res.Stdout)
	}
}

// TestConfinedAndReadOnlyMounts: through real mounts, a client-rw
// certificate issued with --root /proj sees /proj as its root (nothing of
// the rest of the namespace) and writes land in /proj; a client-ro
// certificate reads everything and every write is refused with a
// permission error or EROFS (the mount is read-only), changing nothing.
func TestConfinedAndReadOnlyMounts(t *testing.T) {
	m := startMulti(t, 2)
	admin := addMount(t, m)
	must(t, os.MkdirAll(filepath.Join(admin.Mount(), "proj", "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(admin.Mount(), "proj", "inside"), []byte("in"), 0o644))
	must(t, os.WriteFile(filepath.Join(admin.Mount(), "secret"), []byte("out"), 0o644))

	pki := m.PKI()
	must(t, pki.Issue("projuser", "client-rw", "--root", "/proj"))
	must(t, pki.Issue("reader", "client-ro"))

	p := addMount(t, m, pki.Args("projuser")...)
	ents, err := os.ReadDir(p.Mount())
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "inside,sub" {
		t.Fatalf("the /proj-confined mount's root lists %v, want [inside sub]", names)
	}
	if _, err := os.Stat(filepath.Join(p.Mount(), "secret")); !os.IsNotExist(err) {
		t.Fatalf("stat secret through the confined mount: %v, want not found", err)
	}
	must(t, os.WriteFile(filepath.Join(p.Mount(), "sub", "new"), []byte("made"), 0o644))
	if got, err := os.ReadFile(filepath.Join(admin.Mount(), "proj", "sub", "new")); err != nil || string(got) != "made" {
		t.Fatalf("the confined mount's write seen at /proj/sub/new: %q, %v", got, err)
	}

	r := addMount(t, m, pki.Args("reader")...)
	if got, err := os.ReadFile(filepath.Join(r.Mount(), "secret")); err != nil || string(got) != "out" {
		t.Fatalf("read through the client-ro mount: %q, %v", got, err)
	}
	for what, err := range map[string]error{
		"create": os.WriteFile(filepath.Join(r.Mount(), "proj", "x"), []byte("x"), 0o644),
		"mkdir":  os.Mkdir(filepath.Join(r.Mount(), "d"), 0o755),
		"remove": os.Remove(filepath.Join(r.Mount(), "secret")),
		"rename": os.Rename(filepath.Join(r.Mount(), "secret"), filepath.Join(r.Mount(), "s2")),
		"chmod":  os.Chmod(filepath.Join(r.Mount(), "secret"), 0o600),
	} {
		if !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s through the client-ro mount: %v, want a permission error or EROFS", what, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(admin.Mount(), "secret")); err != nil || string(got) != "out" {
		t.Fatalf("secret after the client-ro mount's attempts: %q, %v", got, err)
	}
}

// TestReadOnlyIdentityRefusedAtOpen (issue 23): a client-ro mount refuses
// an open for writing with EROFS at the open, so "echo x >> f" fails
// instead of exiting 0 and dropping the data at close; reads still work
// and the file is unchanged.
func TestReadOnlyIdentityRefusedAtOpen(t *testing.T) {
	m := startMulti(t, 1)
	admin := addMount(t, m)
	must(t, os.WriteFile(filepath.Join(admin.Mount(), "f"), []byte("old\n"), 0o666))
	pki := m.PKI()
	must(t, pki.Issue("reader", "client-ro"))
	r := addMount(t, m, pki.Args("reader")...)
	f := filepath.Join(r.Mount(), "f")
	for what, flags := range map[string]int{
		"O_WRONLY":          os.O_WRONLY,
		"O_RDWR":            os.O_RDWR,
		"O_WRONLY|O_APPEND": os.O_WRONLY | os.O_APPEND,
		"O_RDONLY|O_TRUNC":  os.O_RDONLY | os.O_TRUNC,
		"O_CREAT new":       os.O_WRONLY | os.O_CREATE,
	} {
		name := f
		if what == "O_CREAT new" {
			name = filepath.Join(r.Mount(), "new")
		}
		h, err := os.OpenFile(name, flags, 0o644)
		if err == nil {
			h.Close()
		}
		wantErrno(t, "open "+what+" through the client-ro mount", err, syscall.EROFS)
	}
	out, err := exec.Command("sh", "-c", "echo x >> "+f).CombinedOutput()
	if err == nil {
		t.Errorf("echo x >> f through the client-ro mount exited 0 (%s)", out)
	}
	if got, err := os.ReadFile(f); err != nil || string(got) != "old\n" {
		t.Errorf("read through the client-ro mount: %q, %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(admin.Mount(), "f")); err != nil || string(got) != "old\n" {
		t.Errorf("f after the client-ro mount's attempts: %q, %v", got, err)
	}
}

// TestRolesOnOneMachineNeedNoFlags: meta, block servers and a mount started
// with no TLS flag on one machine authenticate each other with the
// machine's own CA (made by the first of them), files go through, and a
// mount with another CA's certificate is refused.
func TestRolesOnOneMachineNeedNoFlags(t *testing.T) {
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 2, MachineCA: true})
	w := addMount(t, m)
	data := []byte("through the machine's CA")
	must(t, os.WriteFile(filepath.Join(w.Mount(), "f"), data, 0o644))
	if got, err := os.ReadFile(filepath.Join(w.Mount(), "f")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %q, %v", got, err)
	}
	for _, name := range []string{"ca.crt", "meta.crt", "b0.crt", "b1.crt", "mount.crt"} {
		if _, err := os.Stat(filepath.Join(m.PKI().Dir(), name)); err != nil {
			t.Errorf("the machine's CA directory lacks %s: %v", name, err)
		}
	}
	if log := m.LogTail(64 << 10); !strings.Contains(log, "TLS with this machine's CA") {
		t.Errorf("no role said it uses the machine's CA:\n%s", log)
	}
	res, err := m.Run(context.Background(), "fsck")
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("fsck with the machine CA's admin certificate: %s%s", res.Stdout, res.Stderr)
	}
	// A certificate of another CA: the mount cannot connect (neither side
	// trusts the other's CA).
	other := filepath.Join(t.TempDir(), "other")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"certs", "init", "--dir", other}, {"certs", "issue", "mallory", "--role", "client-rw", "--dir", other}} {
		res, err := cluster.RunBin(ctx, suite.bin, args...)
		must(t, err)
		if res.ExitCode != 0 {
			t.Fatalf("tessera %v: %s", args, res.Stderr)
		}
	}
	mnt := t.TempDir()
	res, err = cluster.RunBin(ctx, suite.bin, "mount", "--meta", m.MetaAddr(), "--meta-timeout", "5s",
		"--tls-cert", filepath.Join(other, "mallory.crt"), "--tls-key", filepath.Join(other, "mallory.key"),
		"--tls-ca", filepath.Join(other, "ca.crt"), mnt)
	must(t, err)
	if res.ExitCode == 0 {
		t.Fatalf("a mount with another CA's certificate started:\n%s", res.Stderr)
	}
}
