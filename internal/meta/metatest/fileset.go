package metatest

import (
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	"tessera/internal/meta"
)

// RunFilesets runs the fileset cases against the factory's APIs, which
// must also implement meta.FilesetAPI.
func RunFilesets(t *testing.T, f Factory) {
	t.Run("Lifecycle", func(t *testing.T) { testFilesetLifecycle(newHarness(t, f)) })
	t.Run("Ingest", func(t *testing.T) { testFilesetIngest(newHarness(t, f)) })
	t.Run("SetGateway", func(t *testing.T) { testSetGateway(newHarness(t, f)) })
}

func filesets(h *harness) meta.FilesetAPI {
	fa, ok := h.api.(meta.FilesetAPI)
	if !ok {
		h.t.Fatalf("%T does not implement meta.FilesetAPI", h.api)
	}
	return fa
}

func mkdirT(h *harness, parent meta.Ino, name string) meta.Inode {
	h.t.Helper()
	in, err := h.api.Create(h.ctx, meta.CreateReq{Parent: parent, Name: name, Mode: syscall.S_IFDIR | 0755, Excl: true})
	if err != nil {
		h.t.Fatal(err)
	}
	return in
}

func testFilesetLifecycle(h *harness) {
	t, ctx, fa := h.t, h.ctx, filesets(h)
	d := mkdirT(h, meta.RootIno, "cache")
	bad := []meta.Fileset{
		{Root: d.Ino},
		{Root: d.Ino, Home: "ftp://x/y"},
		{Root: d.Ino, Home: "file:///h", Mode: "rw"},
		{Root: d.Ino, Home: "file:///h", Prefetch: "all"},
		{Root: d.Ino, Home: "file:///h", Conflicts: "mine"},
		{Root: d.Ino, Home: "file:///h", ValidityLag: -time.Second},
	}
	for _, b := range bad {
		if _, err := fa.CreateFileset(ctx, b); !errors.Is(err, meta.ErrInvalid) {
			t.Errorf("create %+v: %v, want ErrInvalid", b, err)
		}
	}
	got, err := fa.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file:///h", Mode: meta.ModeSW, ValidityLag: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := meta.Fileset{Root: d.Ino, Home: "file:///h", Mode: meta.ModeSW, ValidityLag: time.Minute,
		SyncLag: meta.DefaultSyncLag, Prefetch: meta.PrefetchRange, Conflicts: meta.ConflictsKeepBoth,
		State: meta.FilesetActive, Created: got.Created}
	if got != want || got.Created == 0 {
		t.Fatalf("created %+v, want %+v", got, want)
	}
	if again, err := fa.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file:///h"}); !errors.Is(err, meta.ErrExist) {
		t.Errorf("second create on one root: %+v, %v, want ErrExist", again, err)
	}
	in, err := h.api.GetAttr(ctx, d.Ino)
	if err != nil || in.Gateway == nil || in.Gateway.Fileset != d.Ino || in.Gateway.State != meta.CachePlaceholder {
		t.Fatalf("root after create: %+v, %v", in.Gateway, err)
	}
	full := mkdirT(h, meta.RootIno, "full")
	mkdirT(h, full.Ino, "x")
	if _, err := fa.CreateFileset(ctx, meta.Fileset{Root: full.Ino, Home: "file:///h"}); !errors.Is(err, meta.ErrNotEmpty) {
		t.Errorf("create on a non-empty directory: %v, want ErrNotEmpty", err)
	}
	if g, err := fa.Fileset(ctx, d.Ino); err != nil || g != got {
		t.Errorf("Fileset: %+v, %v", g, err)
	}
	if l, err := fa.Filesets(ctx); err != nil || len(l) != 1 || l[0] != got {
		t.Errorf("Filesets: %+v, %v", l, err)
	}
	if err := fa.DeleteFileset(ctx, d.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := fa.Fileset(ctx, d.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("Fileset after delete: %v, want ErrNotFound", err)
	}
	if err := fa.DeleteFileset(ctx, d.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if in, err := h.api.GetAttr(ctx, d.Ino); err != nil || in.Gateway != nil {
		t.Errorf("root after delete: %+v, %v", in.Gateway, err)
	}
}

func testFilesetIngest(h *harness) {
	t, ctx, fa := h.t, h.ctx, filesets(h)
	d := mkdirT(h, meta.RootIno, "cache")
	plain := mkdirT(h, meta.RootIno, "plain")
	if _, err := fa.IngestDir(ctx, meta.IngestDirReq{Dir: plain.Ino, Entries: []meta.HomeEntry{{Name: "a", Mode: syscall.S_IFREG}}}); !errors.Is(err, meta.ErrInvalid) {
		t.Errorf("ingest outside a fileset: %v, want ErrInvalid", err)
	}
	// Local-update: a read-only fileset refuses the local file below (EROFS).
	if _, err := fa.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file:///h", Mode: meta.ModeLU}); err != nil {
		t.Fatal(err)
	}
	if _, err := fa.IngestDir(ctx, meta.IngestDirReq{Dir: d.Ino, Entries: []meta.HomeEntry{{Name: "p", Mode: syscall.S_IFIFO}}}); !errors.Is(err, meta.ErrInvalid) {
		t.Errorf("ingest of a fifo: %v, want ErrInvalid", err)
	}
	// A local name wins over home's.
	local, err := h.api.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: "mine", Mode: syscall.S_IFREG | 0600, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	ents := []meta.HomeEntry{
		{Name: "d", Mode: syscall.S_IFDIR | 0750, HomeMtime: mt, Token: "t-d"},
		{Name: "f", Mode: syscall.S_IFREG, Size: 123456, HomeMtime: mt, HomeCtime: mt + 1, Token: "t-f"},
		{Name: "e", Mode: syscall.S_IFREG | 0600},
		{Name: "l", Mode: syscall.S_IFLNK, Target: "f"},
		{Name: "mine", Mode: syscall.S_IFREG, Size: 9},
	}
	dir, err := fa.IngestDir(ctx, meta.IngestDirReq{Dir: d.Ino, Entries: ents, Done: true, Validated: 42})
	if err != nil {
		t.Fatal(err)
	}
	if dir.Gateway.State != meta.CacheCached || dir.Gateway.Validated != 42 || dir.Nlink != 3 {
		t.Errorf("directory after its listing: nlink %d, %+v", dir.Nlink, dir.Gateway)
	}
	f, err := h.api.Lookup(ctx, d.Ino, "f")
	if err != nil {
		t.Fatal(err)
	}
	if f.Mode != syscall.S_IFREG|0644 || f.Size != 123456 || f.Mtime != mt || f.Ctime != mt+1 || f.Gateway == nil ||
		f.Gateway.HomePath != "f" || f.Gateway.State != meta.CachePlaceholder || f.Gateway.Token != "t-f" || f.Gateway.Fileset != d.Ino {
		t.Errorf("placeholder f: %+v %+v", f.Attr, f.Gateway)
	}
	sub, err := h.api.Lookup(ctx, d.Ino, "d")
	if err != nil || !sub.IsDir() || sub.Mode&07777 != 0750 || sub.Nlink != 2 || sub.Gateway.State != meta.CachePlaceholder {
		t.Fatalf("placeholder d: %+v %+v, %v", sub.Attr, sub.Gateway, err)
	}
	if e, err := h.api.Lookup(ctx, d.Ino, "e"); err != nil || e.Gateway.State != meta.CacheCached || e.Size != 0 {
		t.Errorf("empty file e: %+v, %v", e.Gateway, err)
	}
	if l, err := h.api.Lookup(ctx, d.Ino, "l"); err != nil || l.Target != "f" || l.Gateway.State != meta.CacheCached {
		t.Errorf("symlink l: %q %+v, %v", l.Target, l.Gateway, err)
	}
	if m, err := h.api.Lookup(ctx, d.Ino, "mine"); err != nil || m.Ino != local.Ino || m.Size != 0 {
		t.Errorf("local file mine after ingest: %+v, %v (want inode %d untouched)", m.Attr, err, local.Ino)
	} else if m.Gateway == nil || m.Gateway.Fileset != d.Ino || m.Gateway.HomePath != "" || m.Gateway.State != meta.CacheCached {
		t.Errorf("a file made locally in a fileset: section %+v, want fileset %d, no home path, cached", m.Gateway, d.Ino)
	}
	// Below: paths join, and a second listing adds only what is new.
	if _, err := fa.IngestDir(ctx, meta.IngestDirReq{Dir: sub.Ino, Entries: []meta.HomeEntry{{Name: "g", Mode: syscall.S_IFREG, Size: 1}}}); err != nil {
		t.Fatal(err)
	}
	if g, err := h.api.Lookup(ctx, sub.Ino, "g"); err != nil || g.Gateway.HomePath != "d/g" {
		t.Errorf("d/g: %+v, %v", g.Gateway, err)
	}
	if _, err := fa.IngestDir(ctx, meta.IngestDirReq{Dir: d.Ino, Entries: ents, Done: true, Validated: 43}); err != nil {
		t.Fatal(err)
	}
	if f2, err := h.api.Lookup(ctx, d.Ino, "f"); err != nil || f2.Ino != f.Ino {
		t.Errorf("f after a second listing: %d, %v (want %d)", f2.Ino, err, f.Ino)
	}
	list, _, err := h.api.ReadDir(ctx, d.Ino, "", 100, false)
	if err != nil || len(list) != 5 {
		t.Errorf("listing: %d entries, %v, want 5", len(list), err)
	}
}

func testSetGateway(h *harness) {
	t, ctx, fa := h.t, h.ctx, filesets(h)
	d := mkdirT(h, meta.RootIno, "cache")
	if _, err := fa.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file:///h", Mode: meta.ModeSW}); err != nil {
		t.Fatal(err)
	}
	if _, err := fa.IngestDir(ctx, meta.IngestDirReq{Dir: d.Ino, Entries: []meta.HomeEntry{{Name: "f", Mode: syscall.S_IFREG, Size: 10}}}); err != nil {
		t.Fatal(err)
	}
	f, err := h.api.Lookup(ctx, d.Ino, "f")
	if err != nil {
		t.Fatal(err)
	}
	g := *f.Gateway
	g.State = meta.CacheCached
	if _, err := fa.SetGateway(ctx, f.Ino, meta.GatewayInfo{Fileset: d.Ino}, 0); !errors.Is(err, meta.ErrInvalid) {
		t.Errorf("section without a state: %v, want ErrInvalid", err)
	}
	// A local change since the gateway read the inode: its update loses.
	if _, err := h.api.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0600}); err != nil {
		t.Fatal(err)
	}
	if _, err := fa.SetGateway(ctx, f.Ino, g, f.Change); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("SetGateway over a local change: %v, want ErrConflict", err)
	}
	now, err := h.api.GetAttr(ctx, f.Ino)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fa.SetGateway(ctx, f.Ino, g, now.Change)
	if err != nil || out.Gateway.State != meta.CacheCached || out.Change != now.Change {
		t.Errorf("SetGateway: %+v change %d, %v (want change %d kept)", out.Gateway, out.Change, err, now.Change)
	}
	// A partial file's cached runs go through and come back.
	part := g
	part.State, part.Cached = meta.CachePartial, []meta.BlockRange{{First: 0, End: 2}, {First: 7, End: 9}}
	if out, err = fa.SetGateway(ctx, f.Ino, part, 0); err != nil || !reflect.DeepEqual(out.Gateway.Cached, part.Cached) {
		t.Errorf("SetGateway of runs %v: %+v, %v", part.Cached, out.Gateway, err)
	}
	if in, err := h.api.GetAttr(ctx, f.Ino); err != nil || !reflect.DeepEqual(in.Gateway.Cached, part.Cached) {
		t.Errorf("runs read back: %+v, %v", in.Gateway, err)
	}
	part.Cached = []meta.BlockRange{{First: 7, End: 9}, {First: 0, End: 2}}
	if _, err := fa.SetGateway(ctx, f.Ino, part, 0); !errors.Is(err, meta.ErrInvalid) {
		t.Errorf("unsorted runs: %v, want ErrInvalid", err)
	}
}
