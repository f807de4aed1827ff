package meta_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/policy"
)

// policyFixture is a Service with a clock the test moves.
type policyFixture struct {
	t   *testing.T
	ctx context.Context
	api meta.API
	now time.Time
}

func newPolicyFixture(t *testing.T, root string) *policyFixture {
	f := &policyFixture{t: t, ctx: context.Background(), now: time.Unix(1000, 0)}
	f.api = memService(t, meta.Options{RootPolicy: root, Now: func() time.Time { return f.now }})
	return f
}

func (f *policyFixture) create(parent meta.Ino, name string, mode uint32) meta.Inode {
	f.t.Helper()
	in, err := f.api.Create(f.ctx, meta.CreateReq{Parent: parent, Name: name, Mode: mode, Excl: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return in
}

func (f *policyFixture) attr(ino meta.Ino) meta.Inode {
	f.t.Helper()
	in, err := f.api.GetAttr(f.ctx, ino)
	if err != nil {
		f.t.Fatal(err)
	}
	return in
}

func (f *policyFixture) setPolicy(ino meta.Ino, name string, flags uint32) error {
	return f.api.SetXattr(f.ctx, ino, meta.PolicyXattr, []byte(name), flags)
}

func TestPolicyXattrInherited(t *testing.T) {
	f := newPolicyFixture(t, "posix")
	d := f.create(meta.RootIno, "d", syscall.S_IFDIR|0755)
	if d.Policy != "posix" {
		t.Fatalf("dir under the root got policy %q, want posix", d.Policy)
	}
	if err := f.setPolicy(d.Ino, "nfs", 0); err != nil {
		t.Fatal(err)
	}
	v, err := f.api.GetXattr(f.ctx, d.Ino, meta.PolicyXattr)
	if err != nil || string(v) != "nfs" {
		t.Fatalf("get = %q, %v; want nfs", v, err)
	}
	file := f.create(d.Ino, "f", syscall.S_IFREG|0644)
	sub := f.create(d.Ino, "sub", syscall.S_IFDIR|0755)
	deep := f.create(sub.Ino, "g", syscall.S_IFREG|0644)
	for _, c := range []struct {
		what string
		in   meta.Inode
		want string
	}{{"file in d", file, "nfs"}, {"dir in d", sub, "nfs"}, {"file in d/sub", deep, "nfs"},
		{"file in the root", f.create(meta.RootIno, "r", syscall.S_IFREG|0644), "posix"}} {
		if c.in.Policy != c.want {
			t.Errorf("%s: policy %q, want %q", c.what, c.in.Policy, c.want)
		}
		if got := f.attr(c.in.Ino).Policy; got != c.want {
			t.Errorf("%s: stored policy %q, want %q", c.what, got, c.want)
		}
	}
	// Changing the directory's policy later does not touch existing entries.
	if err := f.setPolicy(d.Ino, "immutable", 0); err != nil {
		t.Fatal(err)
	}
	if got := f.attr(file.Ino).Policy; got != "nfs" {
		t.Fatalf("existing file's policy became %q", got)
	}
}

func TestPolicyXattrOnOpenFile(t *testing.T) {
	f := newPolicyFixture(t, "")
	file := f.create(meta.RootIno, "f", syscall.S_IFREG|0644)
	if file.Policy != "" {
		t.Fatalf("policy %q under a root with none", file.Policy)
	}
	if _, err := f.api.GetXattr(f.ctx, file.Ino, meta.PolicyXattr); !errors.Is(err, meta.ErrNoAttr) {
		t.Fatalf("get with none set: %v, want ErrNoAttr", err)
	}
	// The file is open and has content: a client holds its recipe.
	h := block.Sum([]byte("a"))
	in, err := f.api.Commit(f.ctx, meta.CommitReq{Ino: file.Ino, Changes: []meta.BlockChange{{Index: 0, New: h}}, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	held, err := f.api.GetRecipe(f.ctx, file.Ino, 0, 1)
	if err != nil {
		t.Fatal(err)
	}

	f.now = f.now.Add(time.Second)
	if err := f.setPolicy(file.Ino, "seq-nocache", meta.XattrCreate); err != nil {
		t.Fatal(err)
	}
	after := f.attr(file.Ino)
	if after.Policy != "seq-nocache" || after.Change <= in.Change || after.Ctime != f.now.UnixNano() {
		t.Fatalf("after set: policy %q change %d (was %d) ctime %d (want %d)",
			after.Policy, after.Change, in.Change, after.Ctime, f.now.UnixNano())
	}
	if after.Size != 100 {
		t.Fatalf("size %d after a policy change", after.Size)
	}
	// The holder's recipe is still the content: its next optimistic commit
	// goes through.
	h2 := block.Sum([]byte("b"))
	if _, err := f.api.Commit(f.ctx, meta.CommitReq{Ino: file.Ino, Changes: []meta.BlockChange{{Index: 0, Old: held.Blocks[0], New: h2}}}); err != nil {
		t.Fatalf("commit after the policy change: %v", err)
	}
	names, err := f.api.ListXattr(f.ctx, file.Ino)
	if err != nil || strings.Join(names, ",") != meta.PolicyXattr {
		t.Fatalf("list = %v, %v", names, err)
	}
	if err := f.setPolicy(file.Ino, "posix", meta.XattrCreate); !errors.Is(err, meta.ErrExist) {
		t.Fatalf("create over a set policy: %v, want ErrExist", err)
	}
	if err := f.setPolicy(file.Ino, "posix", meta.XattrReplace); err != nil {
		t.Fatal(err)
	}

	// Unlinked while open: the orphan's policy can still change.
	if _, err := f.api.Unlink(f.ctx, meta.RootIno, "f", 0); err != nil {
		t.Fatal(err)
	}
	before := f.attr(file.Ino)
	f.now = f.now.Add(time.Second)
	if err := f.api.RemoveXattr(f.ctx, file.Ino, meta.PolicyXattr); err != nil {
		t.Fatal(err)
	}
	orphan := f.attr(file.Ino)
	if orphan.Nlink != 0 || orphan.Policy != "" || orphan.Change <= before.Change || orphan.Ctime != f.now.UnixNano() {
		t.Fatalf("orphan after remove: nlink %d policy %q change %d (was %d)", orphan.Nlink, orphan.Policy, orphan.Change, before.Change)
	}
	if err := f.api.RemoveXattr(f.ctx, file.Ino, meta.PolicyXattr); !errors.Is(err, meta.ErrNoAttr) {
		t.Fatalf("remove twice: %v, want ErrNoAttr", err)
	}
}

func TestPolicyXattrRefusesUnknownName(t *testing.T) {
	f := newPolicyFixture(t, "session")
	file := f.create(meta.RootIno, "f", syscall.S_IFREG|0644)
	before := f.attr(file.Ino)
	for _, bad := range []string{"x", "", "Posix", "session\x00"} {
		err := f.setPolicy(file.Ino, bad, 0)
		if !errors.Is(err, meta.ErrInvalid) || !errors.Is(err, policy.ErrUnknownPolicy) {
			t.Fatalf("set %q: %v, want ErrInvalid and ErrUnknownPolicy", bad, err)
		}
		if !strings.Contains(err.Error(), "valid policies are posix, seq-nocache, forced, relaxed, session, nfs, immutable") {
			t.Fatalf("set %q: message %q does not list the valid names", bad, err)
		}
	}
	if after := f.attr(file.Ino); after.Policy != "session" || after.Change != before.Change {
		t.Fatalf("refused sets changed the inode: policy %q change %d -> %d", after.Policy, before.Change, after.Change)
	}
}

func TestRootPolicyValidated(t *testing.T) {
	for _, c := range []struct {
		root string
		want error
	}{{"", nil}, {"immutable", nil}, {"bogus", meta.ErrInvalid}, {strings.Repeat("p", meta.MaxPolicyLen+1), meta.ErrNameTooLong}} {
		store := memkv.New()
		_, err := meta.New(store, meta.Options{RootPolicy: c.root})
		store.Close()
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("RootPolicy %.10q: %v, want %v", c.root, err, c.want)
		}
	}
}
