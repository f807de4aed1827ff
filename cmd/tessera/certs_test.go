package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tessera/internal/auth"
)

func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := certsCommand(append(args, "--dir", dir), &out, time.Now())
		return out.String(), err
	}
	if _, err := run("issue", "b0", "--role", "blockd"); err == nil || !strings.Contains(err.Error(), "certs init") {
		t.Fatalf("issue without a CA: %v; want an error saying to run certs init", err)
	}
	if _, err := run("init"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("init"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second init: %v; want a refusal naming --force", err)
	}
	if _, err := run("issue", "b0", "--role", "root"); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Fatalf("unknown role: %v", err)
	}
	if _, err := run("issue", "b0"); err == nil || !strings.Contains(err.Error(), "--role is required") {
		t.Fatalf("no role: %v", err)
	}
	if _, err := run("issue", "../x", "--role", "admin"); err == nil {
		t.Fatal("a name with a path was accepted")
	}
	if _, err := run("issue", "b0", "--role", "blockd", "--host", "h1,10.0.0.5"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "b0.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("b0.key: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	c, err := auth.LoadCredentials(filepath.Join(dir, "b0.crt"), filepath.Join(dir, "b0.key"), filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Identity.Role != auth.RoleBlockd || c.Cert.Leaf.DNSNames[0] != "h1" || c.Cert.Leaf.IPAddresses[0].String() != "10.0.0.5" {
		t.Fatalf("issued %+v with hosts %v %v", c.Identity, c.Cert.Leaf.DNSNames, c.Cert.Leaf.IPAddresses)
	}
	if _, err := run("issue", "b0", "--role", "blockd"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("issue over an existing file: %v; want a refusal naming --force", err)
	}
	if _, err := run("issue", "b0", "--role", "blockd", "--force"); err != nil {
		t.Fatalf("issue --force: %v", err)
	}
	out, err := run("token", "ops", "--role", "admin", "--root", "/proj", "--ttl", "1h")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := auth.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewTokenVerifier(ca.Cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(strings.TrimSpace(out))
	if err != nil || id.Name != "ops" || id.Role != auth.RoleAdmin || id.Root != "/proj" {
		t.Fatalf("printed token verifies as %+v, %v", id, err)
	}
}
