package meta_test

import (
	"errors"
	"testing"

	"tessera/internal/meta"
)

// TestFilesetReads: mounts' read counts add up per fileset, come back with
// the fileset (Fileset and Filesets), are refused for a directory that is
// no fileset, and go with the fileset when it is deleted.
func TestFilesetReads(t *testing.T) {
	e := newWBEnv(t, meta.ModeRO)
	ctx, s, root := e.ctx, e.s, e.root
	for _, d := range []meta.FilesetReads{{HitBytes: 100}, {MissBytes: 40}, {HitBytes: 20, MissBytes: 0}, {}} {
		if err := s.AddFilesetReads(ctx, root, d); err != nil {
			t.Fatalf("AddFilesetReads(%+v): %v", d, err)
		}
	}
	f, err := s.Fileset(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if want := (meta.FilesetReads{HitBytes: 120, MissBytes: 40}); f.Reads != want {
		t.Errorf("Fileset reads %+v, want %+v", f.Reads, want)
	}
	if r := f.Reads.Ratio(); r != 0.75 {
		t.Errorf("ratio %v, want 0.75", r)
	}
	l, err := s.Filesets(ctx)
	if err != nil || len(l) != 1 || l[0].Reads != f.Reads {
		t.Errorf("Filesets = %+v, %v; want the same reads", l, err)
	}
	if err := s.AddFilesetReads(ctx, meta.RootIno, meta.FilesetReads{HitBytes: 1}); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("AddFilesetReads on no fileset: %v, want ErrNotFound", err)
	}
	if err := s.DeleteFileset(ctx, root); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateFileset(ctx, meta.Fileset{Root: root, Home: "file:///nonexistent", Mode: meta.ModeRO}); err != nil {
		t.Fatal(err)
	}
	if f, err := s.Fileset(ctx, root); err != nil || f.Reads != (meta.FilesetReads{}) {
		t.Errorf("the fileset made again: reads %+v, %v; want none (deleted with the old one)", f.Reads, err)
	}
}
