package up

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"tessera/internal/auth"
)

func TestEnsureLocalTLS(t *testing.T) {
	data := t.TempDir()
	first, err := EnsureLocalTLS(data, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[*auth.Credentials]auth.Role{first.Meta: auth.RoleMeta, first.Mount: auth.RoleClientRW,
		first.Admin: auth.RoleAdmin, first.Blocks[0]: auth.RoleBlockd, first.Blocks[1]: auth.RoleBlockd}
	for c, role := range want {
		if c.Identity.Role != role {
			t.Errorf("%s: role %s, want %s", c.Identity.Name, c.Identity.Role, role)
		}
	}
	for _, name := range []string{"ca.key", "meta.key", "b1.key", "admin.key"} {
		fi, err := os.Stat(filepath.Join(TLSDir(data), name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, fi.Mode().Perm())
		}
	}
	// A second start reuses them, and issues what a third server needs.
	second, err := EnsureLocalTLS(data, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(second.Meta.Cert.Certificate[0], first.Meta.Cert.Certificate[0]) {
		t.Error("the meta certificate was issued again on the second start")
	}
	if len(second.Blocks) != 3 || second.Blocks[2].Identity.Name != "b2" {
		t.Fatalf("third block server: %+v", second.Blocks)
	}
	admin, err := LoadLocalAdmin(data)
	if err != nil || admin.Identity.Role != auth.RoleAdmin {
		t.Fatalf("LoadLocalAdmin: %+v, %v", admin, err)
	}
	// A certificate of an older CA (the CA was replaced) is issued anew.
	if err := os.Remove(filepath.Join(TLSDir(data), auth.CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureLocalTLS(data, 1); err == nil {
		t.Fatal("a CA certificate without its key was used")
	}
	os.Remove(filepath.Join(TLSDir(data), auth.CACertFile))
	third, err := EnsureLocalTLS(data, 1)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(third.Meta.Cert.Certificate[0], first.Meta.Cert.Certificate[0]) {
		t.Error("a certificate of the old CA was kept")
	}
}
