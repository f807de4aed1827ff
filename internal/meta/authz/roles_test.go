package authz_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/meta/authz"
)

// TestReadOnlyCannotWrite: a client-ro identity is refused every change of
// the namespace, with real arguments, and the namespace stays as it was.
func TestReadOnlyCannotWrite(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	d := f.mk(meta.RootIno, "d", dirMode)
	file := f.mk(d, "f", fileMode)
	f.mk(d, "empty", dirMode)
	if err := f.svc.SetXattr(ctx, file, "user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	before, err := f.svc.GetAttr(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	c := as(ro)
	writes := map[string]func() error{
		"Create": func() error {
			_, err := f.a.Create(c, meta.CreateReq{Parent: d, Name: "new", Mode: fileMode})
			return err
		},
		"SetAttr": func() error {
			_, err := f.a.SetAttr(c, file, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0777})
			return err
		},
		"Link": func() error { _, err := f.a.Link(c, file, d, "hard"); return err },
		"Unlink": func() error {
			_, err := f.a.Unlink(c, d, "f", file)
			return err
		},
		"Rmdir":  func() error { return f.a.Rmdir(c, d, "empty") },
		"Rename": func() error { _, err := f.a.Rename(c, d, "f", d, "g", 0); return err },
		"Commit": func() error {
			_, err := f.a.Commit(c, meta.CommitReq{Ino: file, Size: 1, Forced: true,
				Changes: []meta.BlockChange{{Index: 0, InlineNew: true, NewInline: []byte("x")}}})
			return err
		},
		"SetXattr":    func() error { return f.a.SetXattr(c, file, "user.k", []byte("w"), 0) },
		"RemoveXattr": func() error { return f.a.RemoveXattr(c, file, "user.k") },
		"Reap":        func() error { return f.a.Reap(c, file) },
		"Decompose":   func() error { return f.a.Decompose(c, block.Hash{1}) },
	}
	// Every write method of meta.API is in the list above.
	for _, m := range apiMethods() {
		if p, _ := ruleOf(m.Name); p == "change the namespace" {
			if _, ok := writes[m.Name]; !ok {
				t.Errorf("%s changes the namespace and is not tried here", m.Name)
			}
		}
	}
	for name, w := range writes {
		denied(t, "client-ro "+name, w())
	}
	after, err := f.svc.GetAttr(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the file changed under refused writes:\n%+v\n%+v", before, after)
	}
	ents, _, err := f.svc.ReadDir(ctx, d, "", 0, false)
	if err != nil || len(ents) != 2 {
		t.Fatalf("directory after refused writes: %v %v; want f and empty", ents, err)
	}
	if v, err := f.svc.GetXattr(ctx, file, "user.k"); err != nil || string(v) != "v" {
		t.Fatalf("xattr after refused writes: %q %v", v, err)
	}
}

// ruleOf names the permission a method needs.
func ruleOf(method string) (string, bool) {
	p, ok := authz.RuleOf(method)
	return p.String(), ok
}

// TestReadOnlyMountWorks: what a read-only mount does (a session, bound
// lookups, listings, opens and closes, recipes, callbacks, fsync, the
// server map, statfs) is allowed, and it is called back.
func TestReadOnlyMountWorks(t *testing.T) {
	f := newFixture(t)
	d := f.mk(meta.RootIno, "d", dirMode)
	file := f.mk(d, "f", fileMode)
	c := as(ro)
	info, err := f.a.OpenSession(c)
	if err != nil {
		t.Fatal(err)
	}
	api := f.a.WithSession(info.ID)
	in, err := api.Lookup(c, d, "f")
	if err != nil || in.Ino != file {
		t.Fatalf("lookup: %v %v", in.Ino, err)
	}
	if _, _, err := api.ReadDir(c, d, "", 0, true); err != nil {
		t.Fatal(err)
	}
	if _, err := api.HoldOpen(c, file); err != nil {
		t.Fatal(err)
	}
	if _, err := api.GetRecipe(c, file, 0, 16); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ListXattr(c, file); err != nil {
		t.Fatal(err)
	}
	if err := api.Sync(c); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Servers(c); err != nil {
		t.Fatal(err)
	}
	if _, err := api.StatFS(c); err != nil {
		t.Fatal(err)
	}
	// A writer changes the file: the read-only session is called back.
	if _, err := f.a.SetAttr(as(rw), file, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0600}); err != nil {
		t.Fatal(err)
	}
	cbs, err := f.a.Callbacks(c, info.ID, 0, 0)
	if err != nil || len(cbs) == 0 || cbs[0].Ino != file {
		t.Fatalf("callbacks: %+v %v; want one for inode %d", cbs, err, file)
	}
	if err := api.ReleaseOpen(c, file); err != nil {
		t.Fatal(err)
	}
	if err := f.a.CloseSession(c, info.ID); err != nil {
		t.Fatal(err)
	}
}

// TestClientCannotAdminister: client-rw is refused every administrative
// method, and the server map stays as it was.
func TestClientCannotAdminister(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.a.RegisterServer(as(admin), meta.Server{ID: "b0", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	before, err := f.svc.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := as(rw)
	_, err = f.a.SetServerState(c, "b0", meta.StateRemoved)
	denied(t, "client-rw SetServerState", err)
	_, err = f.a.SetServerState(c, "b0", meta.StateDraining)
	denied(t, "client-rw SetServerState", err)
	_, err = f.a.SetReplicas(c, 3)
	denied(t, "client-rw SetReplicas", err)
	_, err = f.a.RegisterServer(c, meta.Server{ID: "b9", Addr: "127.0.0.1:9"})
	denied(t, "client-rw RegisterServer", err)
	denied(t, "client-rw WalkBlocks", f.a.WalkBlocks(c, func(meta.Ino, uint64, block.Hash) error { return nil }))
	_, err = f.a.MoverProgress(c)
	denied(t, "client-rw MoverProgress", err)
	after, err := f.svc.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("server map changed under refused calls:\n%+v\n%+v", before, after)
	}
	for _, want := range []string{"meta call refused", "who=\"mount-rw (client-rw)\"", "method=SetReplicas"} {
		if !strings.Contains(f.log.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, f.log.String())
		}
	}
}

// TestRogueBlockdCannotRegisterAnother: a blockd registers and heartbeats
// the server its certificate names, and only that one; the registration
// of a new server is logged with who made it, a heartbeat is not.
func TestRogueBlockdCannotRegisterAnother(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.a.RegisterServer(as(admin), meta.Server{ID: "b0", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	c := as(blockdB1)
	if _, err := f.a.RegisterServer(c, meta.Server{ID: "b1", Addr: "127.0.0.1:2"}); err != nil {
		t.Fatalf("b1 registering itself: %v", err)
	}
	if _, err := f.a.RegisterServer(c, meta.Server{ID: "b1", Addr: "127.0.0.1:2"}); err != nil {
		t.Fatalf("b1 heartbeating: %v", err)
	}
	_, err := f.a.RegisterServer(c, meta.Server{ID: "b0", Addr: "127.0.0.1:666"})
	denied(t, "b1 registering b0", err)
	_, err = f.a.RegisterServer(c, meta.Server{ID: "b7", Addr: "127.0.0.1:667"})
	denied(t, "b1 registering b7", err)
	_, err = f.a.SetServerState(c, "b0", meta.StateDraining)
	denied(t, "b1 draining b0", err)
	m, err := f.svc.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Servers) != 2 {
		t.Fatalf("servers %+v; want b0 and b1", m.Servers)
	}
	for _, s := range m.Servers {
		if s.ID == "b0" && s.Addr != "127.0.0.1:1" {
			t.Fatalf("b0's address became %s", s.Addr)
		}
	}
	log := f.log.String()
	if n := strings.Count(log, "msg=\"admin action\""); n != 2 {
		t.Fatalf("%d admin actions logged; want 2 (b0 and b1 joining, no heartbeat):\n%s", n, log)
	}
	if !strings.Contains(log, `who="b1 (blockd)" via=cert method=RegisterServer server=b1`) {
		t.Fatalf("b1's registration not logged with who:\n%s", log)
	}
	if !strings.Contains(log, `may register only the server named \"b1\", not \"b0\"`) {
		t.Fatalf("the refusal does not say why:\n%s", log)
	}
	// Removed and back: a new server again.
	if _, err := f.a.SetServerState(as(admin), "b1", meta.StateRemoved); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.RegisterServer(c, meta.Server{ID: "b1", Addr: "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(f.log.String(), "msg=\"admin action\" who=\"b1 (blockd)\" via=cert method=RegisterServer"); n != 2 {
		t.Fatalf("b1 joining again after its removal: %d registrations logged, want 2:\n%s", n, f.log.String())
	}
}

// TestAdminActionsAreLogged: drains, removals and replication changes are
// logged with who made them.
func TestAdminActionsAreLogged(t *testing.T) {
	f := newFixture(t)
	c := as(admin)
	if _, err := f.a.RegisterServer(c, meta.Server{ID: "b0", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.SetServerState(c, "b0", meta.StateDraining); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.SetReplicas(c, 2); err != nil {
		t.Fatal(err)
	}
	log := f.log.String()
	for _, want := range []string{
		`who="alice (admin)" via=cert method=SetServerState server=b0 state=draining`,
		`who="alice (admin)" via=cert method=SetReplicas replicas=2`,
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
}
