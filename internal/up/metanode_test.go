package up

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"tessera/internal/meta"
)

// TestStartMetaReapsOrphans: an inode left unlinked-while-open by a meta
// process that died is reaped when StartMeta opens the database, as
// `tessera up` always did; `tessera meta` did not (role parity).
func TestStartMetaReapsOrphans(t *testing.T) {
	ctx := context.Background()
	db := MetaDB{EngineBolt, filepath.Join(t.TempDir(), "meta.db")}
	store, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := meta.New(store, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Unlink(ctx, meta.RootIno, "f", 0); err != nil { // as if open: left for the reaper
		t.Fatal(err)
	}
	if inos, _, err := svc.Orphans(ctx, 0, 10); err != nil || len(inos) != 1 || inos[0] != f.Ino {
		t.Fatalf("orphans before the restart = %v, %v; want [%d]", inos, err, f.Ino)
	}
	store.Close() // the process died

	n, err := StartMeta(ctx, MetaConfig{DB: db, Role: MetaRole{GCInterval: -1, ReclaimAfter: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	inos, _, err := n.Svc.Orphans(ctx, 0, 10)
	if err != nil || len(inos) != 0 {
		t.Fatalf("orphans after StartMeta = %v, %v; want none", inos, err)
	}
	if _, err := n.Svc.GetAttr(ctx, f.Ino); err == nil {
		t.Fatalf("the orphan inode %d is still there after StartMeta", f.Ino)
	}
}
