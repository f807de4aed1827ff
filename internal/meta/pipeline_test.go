package meta

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
)

// spyHook records every edit it is shown, in the transaction and after
// the commit.
type spyHook struct {
	mu        sync.Mutex
	inTxn     []edit
	committed []edit
}

func (h *spyHook) hook() hook {
	return hook{name: "spy",
		inTxn: func(_ context.Context, _ txn, e *edit) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.inTxn = append(h.inTxn, *e)
			return nil
		},
		committed: func(_ context.Context, cs *changeSet) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.committed = append(h.committed, cs.edits...)
			return nil
		}}
}

func (h *spyHook) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inTxn, h.committed = nil, nil
}

// kinds returns the distinct kinds of edits, sorted.
func kinds(es []edit) []editKind {
	var ks []editKind
	for _, e := range es {
		if !slices.Contains(ks, e.kind) {
			ks = append(ks, e.kind)
		}
	}
	slices.Sort(ks)
	return ks
}

// pipeEnv is a Service with a spy hook registered after New's own.
type pipeEnv struct {
	t   *testing.T
	ctx context.Context
	s   *Service
	spy *spyHook
}

func newPipeEnv(t *testing.T) *pipeEnv {
	s, err := New(memkv.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &pipeEnv{t: t, ctx: context.Background(), s: s, spy: &spyHook{}}
	s.addHook(e.spy.hook())
	return e
}

func (e *pipeEnv) mk(dir Ino, name string, mode uint32) Ino {
	e.t.Helper()
	in, err := e.s.Create(e.ctx, CreateReq{Parent: dir, Name: name, Mode: mode, Excl: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return in.Ino
}

func (e *pipeEnv) file(name string) Ino { return e.mk(RootIno, name, syscall.S_IFREG|0o644) }

// orphan makes a file and unlinks it without reaping: an orphan.
func (e *pipeEnv) orphan() Ino {
	e.t.Helper()
	ino := e.file("o")
	if _, err := e.s.Unlink(e.ctx, RootIno, "o", 0); err != nil {
		e.t.Fatal(err)
	}
	return ino
}

// fileset makes the fileset directory "fs" of mode m.
func (e *pipeEnv) fileset(m FilesetMode) Ino {
	e.t.Helper()
	root := e.mk(RootIno, "fs", syscall.S_IFDIR|0o755)
	if _, err := e.s.CreateFileset(e.ctx, Fileset{Root: root, Home: "file:///nonexistent", Mode: m}); err != nil {
		e.t.Fatal(err)
	}
	return root
}

// homeFile ingests home's file "h" of 5 bytes into a read-only fileset,
// cached: what EvictData and RemoveVanished take.
func (e *pipeEnv) homeFile() (dir, ino Ino) {
	e.t.Helper()
	dir = e.fileset(ModeRO)
	if _, err := e.s.IngestDir(e.ctx, IngestDirReq{Dir: dir, Entries: []HomeEntry{{Name: "h", Mode: syscall.S_IFREG | 0o644, Size: 5, HomeMtime: 7}}}); err != nil {
		e.t.Fatal(err)
	}
	in, err := e.s.Lookup(e.ctx, dir, "h")
	if err != nil {
		e.t.Fatal(err)
	}
	g := *in.Gateway
	g.State = CacheCached
	if _, err := e.s.SetGateway(e.ctx, in.Ino, g, 0); err != nil {
		e.t.Fatal(err)
	}
	return dir, in.Ino
}

// pipeRow is an exported method of *Service: either how to make it
// change something (call, which sets up, calls e.spy.reset, then makes
// the change) and the kinds of edits the hooks must see, or why it makes
// none (none).
type pipeRow struct {
	none string
	call func(e *pipeEnv) error
	want []editKind
}

// Reasons a method records no edit.
const (
	reads    = "reads only"
	sessions = "sessions and opens: held in memory, a marker record"
	cluster  = "the cluster's records (servers, gateways, replicas, mover progress, meta liveness)"
	blocks   = "block accounting (references, releases, compositions), not a file's metadata"
	queue    = "write-back queue bookkeeping, the writeback hook's own records"
	hidden   = "drops recipe entries past a file's end, which no reader sees (segment.go)"
	stats    = "fileset read statistics"
	quotas   = "quota settings, the quota hook's own records"
)

var pipeRows = map[string]pipeRow{
	"Lookup": {none: reads}, "GetAttr": {none: reads}, "ReadDir": {none: reads}, "GetRecipe": {none: reads},
	"GetXattr": {none: reads}, "ListXattr": {none: reads}, "StatFS": {none: reads}, "Servers": {none: reads},
	"MoverProgress": {none: reads}, "WalkBlocks": {none: reads}, "ListBlocks": {none: reads},
	"Orphans": {none: reads}, "Releases": {none: reads}, "BlockRefs": {none: reads}, "CheckRefs": {none: reads},
	"Fileset": {none: reads}, "Filesets": {none: reads}, "Gateways": {none: reads},
	"WritebackStats": {none: reads}, "WritebackToken": {none: reads}, "Within": {none: reads},
	"ID": {none: reads}, "InGrace": {none: reads}, "LeaseStats": {none: reads}, "Sessions": {none: reads},
	"Shared": {none: reads}, "Site": {none: reads}, "Store": {none: reads}, "Sync": {none: reads},
	"WithSession": {none: reads},

	"OpenSession": {none: sessions}, "CloseSession": {none: sessions}, "Callbacks": {none: sessions},
	"HoldOpen": {none: sessions}, "ServeShared": {none: sessions},

	"RegisterServer": {none: cluster}, "SetServerState": {none: cluster}, "SetReplicas": {none: cluster},
	"SweepServers": {none: cluster}, "PutMoverProgress": {none: cluster}, "RegisterGateway": {none: cluster},
	"CleanupDead": {none: cluster},

	"Decompose": {none: blocks}, "DropReleases": {none: blocks}, "DropReleasesBefore": {none: blocks},
	"ClaimWriteback": {none: queue}, "WritebackFailed": {none: queue}, "RequestFlush": {none: queue},
	"FinishDrops":     {none: hidden},
	"AddFilesetReads": {none: stats},
	"SetQuota":        {none: quotas}, "RemoveQuota": {none: quotas}, "Quota": {none: reads}, "Quotas": {none: reads}, "QuotaOf": {none: reads}, "CheckQuota": {none: reads},

	"Create": {want: []editKind{editCreate}, call: func(e *pipeEnv) error {
		e.spy.reset()
		_, err := e.s.Create(e.ctx, CreateReq{Parent: RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644})
		return err
	}},
	"SetAttr": {want: []editKind{editAttr}, call: func(e *pipeEnv) error {
		f := e.file("f")
		e.spy.reset()
		_, err := e.s.SetAttr(e.ctx, f, SetAttrReq{Valid: SetMode | SetSize, Mode: 0o600, Size: 9})
		return err
	}},
	"Link": {want: []editKind{editLink}, call: func(e *pipeEnv) error {
		f := e.file("f")
		e.spy.reset()
		_, err := e.s.Link(e.ctx, f, RootIno, "g")
		return err
	}},
	"Unlink": {want: []editKind{editRemove, editDelete}, call: func(e *pipeEnv) error {
		f := e.file("f")
		e.spy.reset()
		_, err := e.s.Unlink(e.ctx, RootIno, "f", f) // its last link, not open: deleted at once
		return err
	}},
	"Rmdir": {want: []editKind{editRemove, editDelete}, call: func(e *pipeEnv) error {
		e.mk(RootIno, "d", syscall.S_IFDIR|0o755)
		e.spy.reset()
		return e.s.Rmdir(e.ctx, RootIno, "d")
	}},
	"Rename": {want: []editKind{editRename, editDelete}, call: func(e *pipeEnv) error {
		e.mk(RootIno, "a", syscall.S_IFDIR|0o755)
		e.mk(RootIno, "b", syscall.S_IFDIR|0o755)
		e.spy.reset()
		_, err := e.s.Rename(e.ctx, RootIno, "a", RootIno, "b", 0) // b, empty, goes
		return err
	}},
	"Commit": {want: []editKind{editContent}, call: func(e *pipeEnv) error {
		f := e.file("f")
		e.spy.reset()
		_, err := e.s.Commit(e.ctx, CommitReq{Ino: f, Size: 3, Changes: []BlockChange{{Index: 0, New: block.Sum([]byte("abc"))}}})
		return err
	}},
	"Reap": {want: []editKind{editDelete}, call: func(e *pipeEnv) error {
		o := e.orphan()
		e.spy.reset()
		return e.s.Reap(e.ctx, o)
	}},
	"ReapOrphans": {want: []editKind{editDelete}, call: func(e *pipeEnv) error {
		e.orphan()
		e.spy.reset()
		_, err := e.s.ReapOrphans(e.ctx)
		return err
	}},
	"ReleaseOpen": {want: []editKind{editDelete}, call: func(e *pipeEnv) error {
		si, err := e.s.OpenSession(e.ctx)
		if err != nil {
			return err
		}
		api := e.s.WithSession(si.ID)
		in, err := api.Create(e.ctx, CreateReq{Parent: RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Open: true})
		if err != nil {
			return err
		}
		if _, err := api.Unlink(e.ctx, RootIno, "f", in.Ino); err != nil { // open: an orphan
			return err
		}
		e.spy.reset()
		return api.ReleaseOpen(e.ctx, in.Ino) // the last open: deleted
	}},
	"SetXattr": {want: []editKind{editXattr}, call: func(e *pipeEnv) error {
		f := e.file("f")
		e.spy.reset()
		return e.s.SetXattr(e.ctx, f, "user.a", []byte("1"), 0)
	}},
	"RemoveXattr": {want: []editKind{editXattr}, call: func(e *pipeEnv) error {
		f := e.file("f")
		if err := e.s.SetXattr(e.ctx, f, "user.a", []byte("1"), 0); err != nil {
			return err
		}
		e.spy.reset()
		return e.s.RemoveXattr(e.ctx, f, "user.a")
	}},
	"CreateFileset": {want: []editKind{editFileset}, call: func(e *pipeEnv) error {
		d := e.mk(RootIno, "fs", syscall.S_IFDIR|0o755)
		e.spy.reset()
		_, err := e.s.CreateFileset(e.ctx, Fileset{Root: d, Home: "file:///nonexistent"})
		return err
	}},
	"DeleteFileset": {want: []editKind{editFileset}, call: func(e *pipeEnv) error {
		root := e.fileset(ModeRO)
		e.spy.reset()
		return e.s.DeleteFileset(e.ctx, root)
	}},
	"IngestDir": {want: []editKind{editIngest, editFileset}, call: func(e *pipeEnv) error {
		root := e.fileset(ModeRO)
		e.spy.reset()
		_, err := e.s.IngestDir(e.ctx, IngestDirReq{Dir: root, Done: true,
			Entries: []HomeEntry{{Name: "h", Mode: syscall.S_IFREG | 0o644, Size: 1}}})
		return err
	}},
	"SetGateway": {want: []editKind{editFileset}, call: func(e *pipeEnv) error {
		_, f := e.homeFile()
		in, err := e.s.GetAttr(e.ctx, f)
		if err != nil {
			return err
		}
		e.spy.reset()
		_, err = e.s.SetGateway(e.ctx, f, *in.Gateway, 0)
		return err
	}},
	"EvictData": {want: []editKind{editFileset}, call: func(e *pipeEnv) error {
		_, f := e.homeFile()
		e.spy.reset()
		_, err := e.s.EvictData(e.ctx, f)
		return err
	}},
	"RemoveVanished": {want: []editKind{editRemove}, call: func(e *pipeEnv) error {
		dir, f := e.homeFile()
		e.spy.reset()
		return e.s.RemoveVanished(e.ctx, dir, "h", f, false)
	}},
	"WritebackDone": {want: []editKind{editFileset}, call: func(e *pipeEnv) error {
		root := e.fileset(ModeSW)
		f := e.mk(root, "f", syscall.S_IFREG|0o644)
		ops, err := e.s.ClaimWriteback(e.ctx, ClaimReq{Root: root, Owner: "gw", TTL: time.Minute, Limit: 10})
		if err != nil {
			return err
		}
		if len(ops) != 1 || ops[0].Ino != f {
			return fmt.Errorf("claimed %+v, want the put of %d", ops, f)
		}
		e.spy.reset()
		return e.s.WritebackDone(e.ctx, ops[0], "tok") // home has its content now
	}},
}

// TestPipelineHookSeesEveryChange registers a hook and shows that it sees,
// in the transaction and again after the commit, the edits of every
// operation that changes metadata, and that together they cover every
// kind of edit and everything an edit can touch. Every exported method of
// *Service needs a row: a new one without a row fails here.
func TestPipelineHookSeesEveryChange(t *testing.T) {
	typ := reflect.TypeOf((*Service)(nil))
	for i := range typ.NumMethod() {
		if _, ok := pipeRows[typ.Method(i).Name]; !ok {
			t.Errorf("method %s has no row in pipeRows: say what it changes (want) or why nothing (none)", typ.Method(i).Name)
		}
	}
	var seen []editKind
	var touched touch
	for name, row := range pipeRows {
		if _, ok := typ.MethodByName(name); !ok {
			t.Errorf("row %s names no method of *Service", name)
			continue
		}
		if row.none != "" {
			if row.call != nil || row.want != nil {
				t.Errorf("row %s: none with a call", name)
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			e := newPipeEnv(t)
			if err := row.call(e); err != nil {
				t.Fatal(err)
			}
			if got := kinds(e.spy.inTxn); !slices.Equal(got, row.want) {
				t.Errorf("in the transaction the hook saw %v, want %v", got, row.want)
			}
			if got := kinds(e.spy.committed); !slices.Equal(got, row.want) {
				t.Errorf("after the commit the hook saw %v, want %v", got, row.want)
			}
			for _, ed := range e.spy.committed {
				if ed.ino == 0 {
					t.Errorf("%v edit without an inode", ed.kind)
				}
				touched |= ed.kind.touches()
			}
		})
		seen = append(seen, row.want...)
	}
	for k := editKind(1); k <= editKinds; k++ {
		if !slices.Contains(seen, k) {
			t.Errorf("no operation in the table makes a %v edit", k)
		}
	}
	if touched != touchAll {
		t.Errorf("the edits touched %05b, want %05b (inodes, entries, recipes, xattrs, fileset state)", touched, touchAll)
	}
}

// TestPipelineHookAborts shows that an in-transaction hook's error aborts
// the change, with the hook's error, and that no post-commit hook runs.
func TestPipelineHookAborts(t *testing.T) {
	e := newPipeEnv(t)
	refuse := errors.New("refused by the hook")
	e.s.addHook(hook{name: "refuse", inTxn: func(_ context.Context, _ txn, ed *edit) error {
		if ed.kind == editCreate {
			return refuse
		}
		return nil
	}})
	e.spy.reset()
	_, err := e.s.Create(e.ctx, CreateReq{Parent: RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if !errors.Is(err, refuse) {
		t.Fatalf("create: %v, want the hook's error", err)
	}
	if _, err := e.s.Lookup(e.ctx, RootIno, "f"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lookup after the refused create: %v, want ErrNotFound", err)
	}
	if len(e.spy.committed) != 0 {
		t.Fatalf("post-commit hooks saw %v of an aborted change", kinds(e.spy.committed))
	}
	st, err := e.s.StatFS(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 1 {
		t.Fatalf("files %d after the refused create, want 1 (the root)", st.Files)
	}
}
