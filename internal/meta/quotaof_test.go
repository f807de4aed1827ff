package meta

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestQuotaOf: the innermost quota over an inode — a file's directory's,
// a quota directory's own, an outer one's for a tree without its own —
// with its usage; ErrNotFound outside every quota and with none at all.
func TestQuotaOf(t *testing.T) {
	ctx := context.Background()
	s := newQuotaService(t)
	outer := mkdir(t, s, RootIno, "outer")
	inner := mkdir(t, s, outer, "inner")
	plain := mkdir(t, s, outer, "plain")
	other := mkdir(t, s, RootIno, "other")
	if _, err := s.QuotaOf(ctx, plain); !errors.Is(err, ErrNotFound) {
		t.Fatalf("QuotaOf with no quotas: %v; want ErrNotFound", err)
	}
	f, err := s.Create(ctx, CreateReq{Parent: inner, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetQuota(ctx, Quota{Dir: outer, MaxBytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetQuota(ctx, Quota{Dir: inner, MaxInodes: 10}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ino  Ino
		want Ino
	}{{"a file in inner", f.Ino, inner}, {"inner itself", inner, inner}, {"plain, under outer", plain, outer}, {"outer itself", outer, outer}} {
		q, err := s.QuotaOf(ctx, c.ino)
		if err != nil || q.Dir != c.want {
			t.Errorf("QuotaOf(%s): %+v %v; want directory %d's", c.name, q, err, c.want)
		}
	}
	if q, _ := s.QuotaOf(ctx, f.Ino); q.Inodes != 1 || q.MaxInodes != 10 {
		t.Errorf("QuotaOf a file in inner: %+v; want 1 of 10 inodes", q)
	}
	if q, _ := s.QuotaOf(ctx, outer); q.Inodes != 3 || q.MaxBytes != 1<<30 {
		t.Errorf("QuotaOf outer: %+v; want 3 inodes (inner, plain, f), 1 GiB", q)
	}
	for _, ino := range []Ino{other, RootIno} {
		if _, err := s.QuotaOf(ctx, ino); !errors.Is(err, ErrNotFound) {
			t.Errorf("QuotaOf(%d) outside every quota: %v; want ErrNotFound", ino, err)
		}
	}
}
