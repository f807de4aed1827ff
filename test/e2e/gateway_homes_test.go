package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tessera/test/cluster"
)

// Issue 14: the s3:// and tessera:// homes through the same path as
// file:// (listing into placeholders, fetching through the mount).

// homeTree writes the tree every home test serves into dir (a directory
// of a posix S3 backend's bucket, or another cluster's mount).
func homeTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	want := map[string][]byte{
		"a":          []byte("a small object\n"),
		"sub/b":      randBytes(7, 5<<20+77), // over one 4 MiB block
		"sub/deep/c": []byte("deep\n"),
	}
	for rel, b := range want {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		writeFile(t, filepath.Join(dir, rel), b)
	}
	return want
}

// serveHome makes a read-only fileset of homeURL on a fresh `tessera up
// --gateways 1` and checks that it serves want byte for byte.
func serveHome(t *testing.T, homeURL string, want map[string][]byte) {
	t.Helper()
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	cache := filepath.Join(c.Mount(), "cache")
	if res := runBin(t, "fileset", "create", cache, "--home", homeURL, "--mode", "ro"); res.ExitCode != 0 {
		t.Fatalf("fileset create: exit %d: %s", res.ExitCode, res.Stderr)
	}
	if n := names(t, cache); strings.Join(n, " ") != "a sub" {
		t.Errorf("the fileset lists %v, want a sub", n)
	}
	for rel, b := range want {
		wantContent(t, filepath.Join(cache, rel), b)
	}
}

// TestGatewayTesseraHome: the home is another Tessera (a second `tessera
// up`), reached with its mount's certificate.
func TestGatewayTesseraHome(t *testing.T) {
	h := startCluster(t, withBlockServers(1))
	must(t, os.Mkdir(filepath.Join(h.Mount(), "home"), 0o755))
	want := homeTree(t, filepath.Join(h.Mount(), "home"))
	addr, err := os.ReadFile(filepath.Join(h.DataDir(), "meta.addr"))
	must(t, err)
	tlsDir := filepath.Join(h.DataDir(), "tls")
	q := url.Values{"cert": {filepath.Join(tlsDir, "mount.crt")}, "key": {filepath.Join(tlsDir, "mount.key")}, "ca": {filepath.Join(tlsDir, "ca.crt")}}
	serveHome(t, fmt.Sprintf("tessera://%s/home?%s", strings.TrimSpace(string(addr)), q.Encode()), want)
}

// TestGatewayS3Home: the home is a bucket of a Versity S3 Gateway
// (posix backend) started by the test on 127.0.0.1.
func TestGatewayS3Home(t *testing.T) {
	addr, backend, keyFile := startVersity(t) // gateway_outage_test.go
	want := homeTree(t, filepath.Join(backend, "bkt", "pre"))
	q := url.Values{"endpoint": {"http://" + addr}, "region": {"us-east-1"}, "access_key_file": {keyFile}}
	serveHome(t, "s3://bkt/pre?"+q.Encode(), want)
}
