package meta

import (
	"context"
	"errors"
	"math"
	"testing"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
)

// TestCommitReleasesSuperseded: a commit's Superseded uploads that no
// recipe names are released in its transaction; one a recipe names (the
// same content in another file) is not; too many are refused.
func TestCommitReleasesSuperseded(t *testing.T) {
	ctx := context.Background()
	svc, err := New(memkv.New(), Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) Inode {
		in, err := svc.Create(ctx, CreateReq{Parent: RootIno, Name: name, Mode: 0o100644})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	a, b := mk("a"), mk("b")
	named, unnamed := block.Sum([]byte("named")), block.Sum([]byte("unnamed"))
	if _, err := svc.Commit(ctx, CommitReq{Ino: b.Ino, Size: 5, Changes: []BlockChange{{New: named}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Commit(ctx, CommitReq{Ino: a.Ino, Size: 10, Changes: []BlockChange{{New: block.Sum([]byte("whole"))}},
		Superseded: []block.Hash{named, unnamed}}); err != nil {
		t.Fatal(err)
	}
	rels, _, err := svc.Releases(ctx, Release{}, math.MaxInt64, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 1 || rels[0].Hash != unnamed {
		t.Fatalf("releases %+v; want just the unnamed upload", rels)
	}
	_, err = svc.Commit(ctx, CommitReq{Ino: a.Ino, Superseded: make([]block.Hash, MaxSuperseded+1)})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%d superseded: %v; want ErrInvalid", MaxSuperseded+1, err)
	}
}
