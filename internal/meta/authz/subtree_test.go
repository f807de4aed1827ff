package authz_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/meta"
)

// tree is /proj/{a, sub/b} and /secret/s, made on the bare service.
type tree struct {
	proj, a, sub, b, secret, s meta.Ino
}

func makeTree(f *fixture) tree {
	var tr tree
	tr.proj = f.mk(meta.RootIno, "proj", dirMode)
	tr.a = f.mk(tr.proj, "a", fileMode)
	tr.sub = f.mk(tr.proj, "sub", dirMode)
	tr.b = f.mk(tr.sub, "b", fileMode)
	tr.secret = f.mk(meta.RootIno, "secret", dirMode)
	tr.s = f.mk(tr.secret, "s", fileMode)
	return tr
}

// TestRootedClientSeesItsSubtreeAsRoot: a client rooted at /proj lists
// /proj's content as its root, and its root reads as RootIno.
func TestRootedClientSeesItsSubtreeAsRoot(t *testing.T) {
	f := newFixture(t)
	tr := makeTree(f)
	c := as(projRW)
	root, err := f.a.GetAttr(c, meta.RootIno)
	if err != nil || root.Ino != meta.RootIno || !root.IsDir() {
		t.Fatalf("getattr of its root: %+v %v", root.Attr, err)
	}
	for _, plus := range []bool{false, true} {
		ents, _, err := f.a.ReadDir(c, meta.RootIno, "", 0, plus)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
		}
		if strings.Join(names, ",") != "a,sub" {
			t.Fatalf("its root lists %v; want a, sub", names)
		}
	}
	in, err := f.a.Lookup(c, meta.RootIno, "a")
	if err != nil || in.Ino != tr.a {
		t.Fatalf("lookup a: %d %v", in.Ino, err)
	}
	if _, err := f.a.Lookup(c, meta.RootIno, "secret"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup of a name of the real root: %v; want ENOENT", err)
	}
	if _, err := f.a.Lookup(c, meta.RootIno, ".."); err == nil {
		t.Fatal("lookup of .. succeeded")
	}
	// Its root's real inode number is its root too.
	if in, err := f.a.GetAttr(c, tr.proj); err != nil || in.Ino != meta.RootIno {
		t.Fatalf("getattr of /proj's number: %d %v; want RootIno", in.Ino, err)
	}
	// What it creates lands in /proj.
	nf, err := f.a.Create(c, meta.CreateReq{Parent: meta.RootIno, Name: "new", Mode: fileMode})
	if err != nil {
		t.Fatal(err)
	}
	if in, err := f.svc.Lookup(context.Background(), tr.proj, "new"); err != nil || in.Ino != nf.Ino {
		t.Fatalf("created file not in /proj: %v", err)
	}
	if _, err := f.svc.Lookup(context.Background(), meta.RootIno, "new"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("created file in the real root: %v", err)
	}
	// StatFS and Servers name no inode: allowed.
	if _, err := f.a.StatFS(c); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Servers(c); err != nil {
		t.Fatal(err)
	}
}

// TestRootedClientCannotReachOutside: nothing outside /proj is reachable,
// by guessed inode numbers, Link, Rename or the cluster-wide methods, and
// no reply carries an inode number from outside.
func TestRootedClientCannotReachOutside(t *testing.T) {
	f := newFixture(t)
	tr := makeTree(f)
	c := as(projRW)
	outside := []meta.Ino{tr.secret, tr.s}
	for _, ino := range outside {
		_, err := f.a.GetAttr(c, ino)
		denied(t, "getattr outside", err)
		_, err = f.a.HoldOpen(c, ino)
		denied(t, "open outside", err)
		_, err = f.a.GetRecipe(c, ino, 0, 16)
		denied(t, "recipe outside", err)
		_, err = f.a.SetAttr(c, ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0777})
		denied(t, "setattr outside", err)
		_, err = f.a.ListXattr(c, ino)
		denied(t, "listxattr outside", err)
		denied(t, "setxattr outside", f.a.SetXattr(c, ino, "user.x", nil, 0))
		denied(t, "reap outside", f.a.Reap(c, ino))
		_, err = f.a.Commit(c, meta.CommitReq{Ino: ino, Forced: true, Size: 1,
			Changes: []meta.BlockChange{{InlineNew: true, NewInline: []byte("x")}}})
		denied(t, "commit outside", err)
		_, err = f.a.Link(c, ino, meta.RootIno, "stolen")
		denied(t, "link from outside", err)
	}
	_, err := f.a.Lookup(c, tr.secret, "s")
	denied(t, "lookup in a directory outside", err)
	_, _, err = f.a.ReadDir(c, tr.secret, "", 0, true)
	denied(t, "readdir outside", err)
	_, err = f.a.Create(c, meta.CreateReq{Parent: tr.secret, Name: "planted", Mode: fileMode})
	denied(t, "create outside", err)
	_, err = f.a.Link(c, tr.a, tr.secret, "leak")
	denied(t, "link to outside", err)
	_, err = f.a.Rename(c, meta.RootIno, "a", tr.secret, "a", 0)
	denied(t, "rename out", err)
	_, err = f.a.Rename(c, tr.secret, "s", meta.RootIno, "s", 0)
	denied(t, "rename in", err)
	_, err = f.a.Rename(c, meta.RootIno, "a", tr.secret, "s", meta.RenameExchange)
	denied(t, "exchange across", err)
	denied(t, "unlink outside", func() error { _, err := f.a.Unlink(c, tr.secret, "s", 0); return err }())
	denied(t, "rmdir outside", f.a.Rmdir(c, meta.Ino(tr.secret), "x"))
	denied(t, "walkblocks", f.a.WalkBlocks(c, func(meta.Ino, uint64, block.Hash) error { return nil }))
	_, err = f.a.MoverProgress(c)
	denied(t, "mover progress", err)

	// Guessing every inode number in use and a few past it: only /proj's
	// inodes answer, under their numbers, /proj itself as RootIno.
	inside := map[meta.Ino]bool{meta.RootIno: true, tr.a: true, tr.sub: true, tr.b: true}
	for ino := meta.Ino(1); ino < tr.s+300; ino++ {
		in, err := f.a.GetAttr(c, ino)
		if err != nil {
			continue
		}
		if !inside[in.Ino] {
			t.Fatalf("guessed inode %d answered as %d, not in /proj", ino, in.Ino)
		}
		if ino == meta.RootIno || ino == tr.proj {
			if in.Ino != meta.RootIno {
				t.Fatalf("its root answered as %d", in.Ino)
			}
		} else if in.Ino != ino {
			t.Fatalf("inode %d answered as %d", ino, in.Ino)
		}
	}
	// Nothing changed outside.
	if ents, _, err := f.svc.ReadDir(context.Background(), tr.secret, "", 0, false); err != nil || len(ents) != 1 {
		t.Fatalf("/secret after the attempts: %v %v", ents, err)
	}
}

// TestRootedCallbacksStayInside: a rooted session's callbacks name its
// root as RootIno and nothing outside; another identity cannot read them.
func TestRootedCallbacksStayInside(t *testing.T) {
	f := newFixture(t)
	tr := makeTree(f)
	c := as(projRW)
	info, err := f.a.OpenSession(c)
	if err != nil {
		t.Fatal(err)
	}
	api := f.a.WithSession(info.ID)
	if _, err := api.GetAttr(c, meta.RootIno); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Lookup(c, meta.RootIno, "a"); err != nil {
		t.Fatal(err)
	}
	// Changes by another mount: of its root, of a, of a file outside.
	other := as(rw)
	if _, err := f.a.SetAttr(other, tr.proj, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0700}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.SetAttr(other, tr.a, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0600}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.SetAttr(other, tr.s, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0600}); err != nil {
		t.Fatal(err)
	}
	// Another identity may not poll, bind to or close the session.
	_, err = f.a.Callbacks(other, info.ID, 0, 0)
	denied(t, "polling another's session", err)
	_, err = f.a.WithSession(info.ID).GetAttr(other, meta.RootIno)
	denied(t, "a call bound to another's session", err)
	denied(t, "closing another's session", f.a.CloseSession(other, info.ID))

	cbs, err := f.a.Callbacks(c, info.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[meta.Ino]bool{}
	for _, cb := range cbs {
		got[cb.Ino] = true
		if cb.Kind == meta.CallbackUpdate && cb.Inode.Ino != cb.Ino {
			t.Fatalf("callback %+v: inode %d in an update for %d", cb, cb.Inode.Ino, cb.Ino)
		}
		if cb.Ino == tr.proj || cb.Ino == tr.s || cb.Ino == tr.secret {
			t.Fatalf("callback names an inode number from outside: %+v", cb)
		}
	}
	if !got[meta.RootIno] || !got[tr.a] || len(got) != 2 {
		t.Fatalf("callbacks for %v; want its root (as %d) and a (%d)", got, meta.RootIno, tr.a)
	}
	if err := f.a.CloseSession(c, info.ID); err != nil {
		t.Fatal(err)
	}
}

// TestMissingRootIsAClearError: an identity whose root does not exist, or
// is not a directory, is refused with an error naming it.
func TestMissingRootIsAClearError(t *testing.T) {
	f := newFixture(t)
	tr := makeTree(f)
	_ = tr
	nope := auth.Identity{Name: "lost", Role: auth.RoleClientRW, Root: "/nope/deeper", Via: "cert"}
	_, err := f.a.GetAttr(as(nope), meta.RootIno)
	if !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "/nope/deeper") {
		t.Fatalf("missing root: %v; want ENOENT naming /nope/deeper", err)
	}
	file := auth.Identity{Name: "odd", Role: auth.RoleClientRW, Root: "/proj/a", Via: "cert"}
	_, err = f.a.GetAttr(as(file), meta.RootIno)
	if !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), "/proj/a") {
		t.Fatalf("root on a file: %v; want ENOTDIR naming /proj/a", err)
	}
	bad := auth.Identity{Name: "odd", Role: auth.RoleClientRW, Root: "proj/../x", Via: "cert"}
	_, err = f.a.GetAttr(as(bad), meta.RootIno)
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("unclean root: %v; want EINVAL", err)
	}
	// Made later, the root works at once.
	f.mk(meta.RootIno, "nope", dirMode)
	if _, err := f.a.GetAttr(as(auth.Identity{Name: "late", Role: auth.RoleClientRO, Root: "/nope", Via: "cert"}), meta.RootIno); err != nil {
		t.Fatal(err)
	}
}

// TestRootRemovedIsResolvedAgain: the confinement holds the directory; once
// it is removed and made again, the path is resolved again.
func TestRootRemovedIsResolvedAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.mk(meta.RootIno, "p", dirMode)
	id := auth.Identity{Name: "m", Role: auth.RoleClientRW, Root: "/p", Via: "cert"}
	if _, err := f.a.Create(as(id), meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: fileMode}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Unlink(ctx, d, "x", 0); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Rmdir(ctx, meta.RootIno, "p"); err != nil {
		t.Fatal(err)
	}
	d2 := f.mk(meta.RootIno, "p", dirMode)
	if _, err := f.a.Create(as(id), meta.CreateReq{Parent: meta.RootIno, Name: "y", Mode: fileMode}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Lookup(ctx, d2, "y"); err != nil {
		t.Fatalf("create after the root was made again: %v", err)
	}
}

// TestConfinementFollowsRenamesAndLinks: what an unconfined client moves
// into /proj becomes reachable, what it moves out or keeps only by a hard
// link outside does not.
func TestConfinementFollowsRenamesAndLinks(t *testing.T) {
	f := newFixture(t)
	tr := makeTree(f)
	ctx := context.Background()
	c := as(projRW)
	// Moved in: reachable.
	if _, err := f.svc.Rename(ctx, tr.secret, "s", tr.sub, "s", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.GetAttr(c, tr.s); err != nil {
		t.Fatalf("a file moved into /proj: %v", err)
	}
	// Moved out: no more.
	if _, err := f.svc.Rename(ctx, tr.proj, "a", tr.secret, "a", 0); err != nil {
		t.Fatal(err)
	}
	_, err := f.a.GetAttr(c, tr.a)
	denied(t, "a file moved out of /proj", err)
	// A directory moved out takes its files with it.
	if _, err := f.svc.Rename(ctx, tr.proj, "sub", tr.secret, "sub", 0); err != nil {
		t.Fatal(err)
	}
	_, err = f.a.GetAttr(c, tr.b)
	denied(t, "a file in a directory moved out of /proj", err)
	// A file of /proj hard-linked outside, whose name in /proj the
	// rooted client then removes: it keeps no way to it.
	x, err := f.a.Create(c, meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: fileMode})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Link(ctx, x.Ino, tr.secret, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Unlink(c, meta.RootIno, "x", 0); err != nil {
		t.Fatal(err)
	}
	_, err = f.a.GetAttr(c, x.Ino)
	denied(t, "a file whose last name in /proj went, linked outside", err)
	// A file it has open and unlinks stays usable (POSIX), as an orphan
	// of its last directory.
	info, err := f.a.OpenSession(c)
	if err != nil {
		t.Fatal(err)
	}
	api := f.a.WithSession(info.ID)
	y, err := api.Create(c, meta.CreateReq{Parent: meta.RootIno, Name: "y", Mode: fileMode, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Unlink(c, meta.RootIno, "y", 0); err != nil {
		t.Fatal(err)
	}
	if in, err := api.GetAttr(c, y.Ino); err != nil || in.Nlink != 0 {
		t.Fatalf("getattr of its open unlinked file: nlink %d, %v", in.Nlink, err)
	}
	// Also once its directory is removed (rm -rf while it is open).
	dir, err := api.Create(c, meta.CreateReq{Parent: meta.RootIno, Name: "tmpdir", Mode: dirMode})
	if err != nil {
		t.Fatal(err)
	}
	z, err := api.Create(c, meta.CreateReq{Parent: dir.Ino, Name: "z", Mode: fileMode, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Unlink(c, dir.Ino, "z", 0); err != nil {
		t.Fatal(err)
	}
	if err := api.Rmdir(c, meta.RootIno, "tmpdir"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.GetRecipe(c, z.Ino, 0, 16); err != nil {
		t.Fatalf("recipe of its open file whose directory went: %v", err)
	}
	// A hard link an unconfined client makes into /proj from outside
	// makes that file reachable, whatever its pointer names.
	if _, err := f.svc.Link(ctx, tr.s, tr.proj, "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.GetAttr(c, tr.s); err != nil {
		t.Fatalf("a file hard-linked into /proj: %v", err)
	}
	if _, err := f.svc.Unlink(ctx, tr.proj, "shared", 0); err != nil {
		t.Fatal(err)
	}
	_, err = f.a.GetAttr(c, tr.s)
	denied(t, "a file whose link into /proj went", err)
	for _, ino := range []meta.Ino{y.Ino, z.Ino} {
		if err := api.ReleaseOpen(c, ino); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefusalsAreLoggedAtABoundedRate: a flood of refused calls makes one
// line per interval per identity and method, which counts the rest.
func TestRefusalsAreLoggedAtABoundedRate(t *testing.T) {
	f := newFixture(t)
	c := as(ro)
	for range 100 {
		_, err := f.a.Create(c, meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: fileMode})
		denied(t, "create", err)
	}
	_, err := f.a.SetReplicas(c, 2)
	denied(t, "setreplicas", err)
	log := f.log.String()
	if n := strings.Count(log, "method=Create"); n != 1 {
		t.Fatalf("%d lines for 100 refused creates; want 1:\n%s", n, log)
	}
	if n := strings.Count(log, "method=SetReplicas"); n != 1 {
		t.Fatalf("another method's refusal held back by the first's flood:\n%s", log)
	}
	f.advance(time.Minute)
	_, err = f.a.Create(c, meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: fileMode})
	denied(t, "create", err)
	log = f.log.String()
	if !strings.Contains(log, "suppressed=99") {
		t.Fatalf("the next interval's line does not count the 99 held back:\n%s", log)
	}
	for _, want := range []string{`who="mount-ro (client-ro)"`, "via=cert", `why="meta Create: permission denied: mount-ro (client-ro) may not change the namespace`} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
	// Unauthenticated calls are logged too.
	if _, err := f.a.GetAttr(context.Background(), meta.RootIno); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatal(err)
	}
	if !strings.Contains(f.log.String(), `who=unauthenticated`) {
		t.Fatalf("unauthenticated call not logged:\n%s", f.log.String())
	}
}
