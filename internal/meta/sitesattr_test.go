package meta_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"tessera/internal/meta"
	"tessera/internal/placement"
)

// A per-site replication spec set on a directory is kept in canonical form,
// read back through the xattr, carried in Attr (Sites, Replicas = the
// total) and inherited by what is created under the directory.
func TestReplicasXattrSiteSpecInherited(t *testing.T) {
	f := newPolicyFixture(t, "")
	d := f.create(meta.RootIno, "d", syscall.S_IFDIR|0755)
	if err := f.api.SetXattr(f.ctx, d.Ino, meta.ReplicasXattr, []byte("siteC:1, siteA:1,siteB:2"), 0); err != nil {
		t.Fatal(err)
	}
	v, err := f.api.GetXattr(f.ctx, d.Ino, meta.ReplicasXattr)
	if err != nil || string(v) != "siteA:1,siteB:2,siteC:1" {
		t.Fatalf("get = %q, %v; want the canonical siteA:1,siteB:2,siteC:1", v, err)
	}
	file := f.create(d.Ino, "f", syscall.S_IFREG|0644)
	sub := f.create(d.Ino, "sub", syscall.S_IFDIR|0755)
	deep := f.create(sub.Ino, "g", syscall.S_IFREG|0644)
	for _, in := range []meta.Inode{f.attr(d.Ino), file, f.attr(file.Ino), sub, f.attr(deep.Ino)} {
		if in.Sites != "siteA:1,siteB:2,siteC:1" || in.Replicas != 4 {
			t.Errorf("inode %d: sites %q replicas %d, want siteA:1,siteB:2,siteC:1 and 4", in.Ino, in.Sites, in.Replicas)
		}
	}
	// A number replaces the site spec; removing the xattr clears both.
	if err := f.api.SetXattr(f.ctx, file.Ino, meta.ReplicasXattr, []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	if in := f.attr(file.Ino); in.Sites != "" || in.Replicas != 2 {
		t.Fatalf("after setting 2: sites %q replicas %d", in.Sites, in.Replicas)
	}
	if err := f.api.RemoveXattr(f.ctx, d.Ino, meta.ReplicasXattr); err != nil {
		t.Fatal(err)
	}
	if in := f.attr(d.Ino); in.Sites != "" || in.Replicas != 0 {
		t.Fatalf("after removexattr: sites %q replicas %d", in.Sites, in.Replicas)
	}
}

// A bad spec is refused with ErrInvalid and an error naming the bad part;
// the inode keeps its spec.
func TestReplicasXattrRefusesBadSpec(t *testing.T) {
	f := newPolicyFixture(t, "")
	d := f.create(meta.RootIno, "d", syscall.S_IFDIR|0755)
	if err := f.api.SetXattr(f.ctx, d.Ino, meta.ReplicasXattr, []byte("a:1,b:1"), 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, part string }{
		{"a:1,b:x", `"b:x"`},
		{"a:1,b", `"b"`},
		{"a:1,a:2", `"a" named twice`},
		{"a:5,b:5", "10 copies"},
		{"si te:1", `"si te:1"`},
		{"0", `"0"`},
		{"ten", `"ten"`},
	} {
		err := f.api.SetXattr(f.ctx, d.Ino, meta.ReplicasXattr, []byte(c.spec), 0)
		if !errors.Is(err, meta.ErrInvalid) || !errors.Is(err, placement.ErrBadSpec) || !strings.Contains(err.Error(), c.part) {
			t.Errorf("set %q: %v; want ErrInvalid naming %s", c.spec, err, c.part)
		}
	}
	if in := f.attr(d.Ino); in.Sites != "a:1,b:1" || in.Replicas != 2 {
		t.Fatalf("after refused sets: sites %q replicas %d, want a:1,b:1 and 2", in.Sites, in.Replicas)
	}
}
