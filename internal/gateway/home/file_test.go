package home_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"tessera/internal/gateway/home"
	"tessera/internal/gateway/home/hometest"
)

func TestFileConformance(t *testing.T) {
	hometest.Run(t, func(t *testing.T) home.Store {
		s, err := home.Open(context.Background(), "file://"+t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, hometest.Options{})
}

// TestFileConfined: a symlink at home pointing outside it is listed and
// read as a symlink, but nothing reads or writes through it.
func TestFileConfined(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "sec")); err != nil {
		t.Fatal(err)
	}
	s, err := home.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.Stat(ctx, "out")
	if err != nil || a.Kind != home.KindSymlink || a.Target != outside {
		t.Fatalf("Stat(out) = %+v, %v; want a symlink to %s", a, err, outside)
	}
	buf := make([]byte, 16)
	if _, err := s.ReadAt(ctx, "sec", buf, 0); err == nil || home.Retryable(err) {
		t.Fatalf("ReadAt through a symlink to outside: %v; want a permanent error", err)
	}
	if _, err := s.ReadAt(ctx, "out/secret", buf, 0); err == nil || home.Retryable(err) {
		t.Fatalf("ReadAt through a directory symlink to outside: %v; want a permanent error", err)
	}
	if err := s.WriteAt(ctx, "sec", []byte("x"), 0); err == nil {
		t.Fatal("WriteAt through a symlink to outside succeeded")
	}
	if err := s.Create(ctx, "out/new", 0o644); err == nil {
		t.Fatal("Create through a directory symlink to outside succeeded")
	}
	if _, err := s.ReadDir(ctx, "out"); err == nil {
		t.Fatal("ReadDir through a directory symlink to outside succeeded")
	}
	if b, _ := os.ReadFile(secret); string(b) != "outside" {
		t.Fatalf("the file outside the home now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was created outside the home: %v", err)
	}
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"ftp://x/y", "file://host/dir", "file:relative", "s3:///prefix", "s3://bucket/p",
		"s3://bucket/p?endpoint=ftp://x", "tessera://127.0.0.1:1/p", "%zz",
	} {
		s, err := home.Open(context.Background(), u)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if !errors.Is(err, home.ErrInvalidPath) || home.Retryable(err) {
			t.Errorf("Open(%q) = %v; want a permanent ErrInvalidPath", u, err)
		}
	}
}
