// Package hometest is the conformance suite of home.Store: Run checks,
// against a real store, every promise of package home's contract — kinds
// and attributes, change tokens, ranged reads and io.EOF, whole-file and
// in-place writes, truncation, the error classes (ENOENT and ENOTEMPTY
// told apart, permanent versus retryable), renames of files and of
// directories with what is under them, path checks, and the optional
// Symlinker and Setattrer where the store has them. Every implementation
// runs it (package home's tests).
package hometest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"testing"
	"time"

	"tessera/internal/gateway/home"
)

// Options tune Run for a store.
type Options struct {
	// LargeFile is the size of the large-file check (a multipart upload on
	// S3); 0 means 20 MiB.
	LargeFile int64
}

// Run runs the suite; open returns a new, empty store for each subtest
// (the caller closes it, e.g. with t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) home.Store, o Options) {
	if o.LargeFile == 0 {
		o.LargeFile = 20 << 20
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s home.Store)
	}{
		{"EmptyRoot", testEmptyRoot},
		{"WriteReadStat", testWriteReadStat},
		{"Token", testToken},
		{"DirToken", testDirToken},
		{"WriteAtTruncate", testWriteAtTruncate},
		{"CreateMkdir", testCreateMkdir},
		{"ReadDir", testReadDir},
		{"Remove", testRemove},
		{"Rmdir", testRmdir},
		{"RenameFile", testRenameFile},
		{"RenameDir", testRenameDir},
		{"Missing", testMissing},
		{"BadPaths", testBadPaths},
		{"Symlink", testSymlink},
		{"Setattr", testSetattr},
		{"Concurrent", testConcurrent},
		{"LargeFile", func(t *testing.T, s home.Store) { testLarge(t, s, o.LargeFile) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantErr checks err is of class (errors.Is) and permanent.
func wantErr(t *testing.T, what string, err, class error) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Fatalf("%s: err %v, want %v", what, err, class)
	}
	if home.Retryable(err) {
		t.Fatalf("%s: %v is retryable, want permanent", what, err)
	}
}

func put(t *testing.T, s home.Store, p string, data []byte) home.Attr {
	t.Helper()
	a, err := s.WriteFile(ctx(t), p, bytes.NewReader(data), int64(len(data)), 0o644)
	must(t, "WriteFile "+p, err)
	return a
}

// content reads a whole file through ReadAt.
func content(t *testing.T, s home.Store, p string) []byte {
	t.Helper()
	a, err := s.Stat(ctx(t), p)
	must(t, "Stat "+p, err)
	buf := make([]byte, a.Size+10)
	n, err := s.ReadAt(ctx(t), p, buf, 0)
	if err != io.EOF {
		t.Fatalf("ReadAt %s past its end: n %d, err %v; want io.EOF", p, n, err)
	}
	return buf[:n]
}

func checkContent(t *testing.T, s home.Store, p string, want []byte) {
	t.Helper()
	if got := content(t, s, p); !bytes.Equal(got, want) {
		t.Fatalf("%s holds %d bytes %q..., want %d bytes %q...", p, len(got), head(got), len(want), head(want))
	}
}

func head(b []byte) []byte { return b[:min(len(b), 16)] }

func testEmptyRoot(t *testing.T, s home.Store) {
	for _, p := range []string{"", "/", "."} {
		a, err := s.Stat(ctx(t), p)
		must(t, "Stat of the root", err)
		if a.Kind != home.KindDir {
			t.Fatalf("Stat(%q).Kind = %v, want dir", p, a.Kind)
		}
	}
	ents, err := s.ReadDir(ctx(t), "")
	must(t, "ReadDir root", err)
	if len(ents) != 0 {
		t.Fatalf("a new home lists %v, want nothing", ents)
	}
}

func testWriteReadStat(t *testing.T, s home.Store) {
	data := []byte("hello, home; a few bytes of a small file")
	before := time.Now().Add(-time.Hour) // clocks of a remote store may differ a little
	a := put(t, s, "f", data)
	if a.Kind != home.KindFile || a.Size != int64(len(data)) || a.Name != "f" || a.Token == "" {
		t.Fatalf("WriteFile returned %+v; want a file named f of %d bytes with a token", a, len(data))
	}
	st, err := s.Stat(ctx(t), "/f")
	must(t, "Stat", err)
	if st.Size != a.Size || st.Token != a.Token || st.Kind != home.KindFile {
		t.Fatalf("Stat %+v differs from WriteFile's %+v", st, a)
	}
	if st.Mtime.Before(before) {
		t.Fatalf("mtime %v is before the write (%v)", st.Mtime, before)
	}
	checkContent(t, s, "f", data)
	// Ranges: inside, straddling the end, at the end, past it.
	buf := make([]byte, 5)
	n, err := s.ReadAt(ctx(t), "f", buf, 7)
	if err != nil || n != 5 || string(buf) != string(data[7:12]) {
		t.Fatalf("ReadAt(7, 5) = %d %q %v; want 5 %q nil", n, buf[:n], err, data[7:12])
	}
	n, err = s.ReadAt(ctx(t), "f", buf, int64(len(data)-2))
	if err != io.EOF || n != 2 || string(buf[:2]) != string(data[len(data)-2:]) {
		t.Fatalf("ReadAt straddling the end = %d %q %v; want 2 %q io.EOF", n, buf[:n], err, data[len(data)-2:])
	}
	for _, off := range []int64{int64(len(data)), int64(len(data)) + 100} {
		if n, err = s.ReadAt(ctx(t), "f", buf, off); err != io.EOF || n != 0 {
			t.Fatalf("ReadAt at %d (end %d) = %d %v; want 0 io.EOF", off, len(data), n, err)
		}
	}
	// Overwrite whole, shorter; an empty file.
	put(t, s, "f", []byte("short"))
	checkContent(t, s, "f", []byte("short"))
	put(t, s, "empty", nil)
	checkContent(t, s, "empty", nil)
	// WriteFile onto a directory is refused.
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0o755))
	_, err = s.WriteFile(ctx(t), "d", bytes.NewReader(nil), 0, 0)
	wantErr(t, "WriteFile onto a directory", err, home.ErrIsDir)
	_, err = s.ReadAt(ctx(t), "d", buf, 0)
	wantErr(t, "ReadAt of a directory", err, home.ErrIsDir)
	_, err = s.WriteFile(ctx(t), "nodir/f", bytes.NewReader(nil), 0, 0)
	wantErr(t, "WriteFile into a missing directory", err, home.ErrNotFound)
}

func testToken(t *testing.T, s home.Store) {
	a := put(t, s, "f", []byte("version one"))
	b, err := s.Stat(ctx(t), "f")
	must(t, "Stat", err)
	if a.Token != b.Token {
		t.Fatalf("token changed without a change: %q then %q", a.Token, b.Token)
	}
	c := put(t, s, "f", []byte("version two"))
	if c.Token == a.Token {
		t.Fatalf("token %q did not change when the content did", c.Token)
	}
	must(t, "WriteAt", s.WriteAt(ctx(t), "f", []byte("3"), 9))
	d, err := s.Stat(ctx(t), "f")
	must(t, "Stat", err)
	if d.Token == c.Token {
		t.Fatalf("token %q did not change after WriteAt", d.Token)
	}
}

// testDirToken: a directory's attributes change (token, or mtime where
// the store has no token) when an entry is added to or removed from it
// at home, and not otherwise: revalidation relies on it to see new names
// (s3:// has no directory mtime; its token is derived from a listing).
func testDirToken(t *testing.T, s home.Store) {
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0o755))
	put(t, s, "d/a", []byte("a"))
	stat := func() home.Attr {
		a, err := s.Stat(ctx(t), "d")
		must(t, "Stat", err)
		return a
	}
	changed := func(x, y home.Attr) bool {
		if x.Token != "" || y.Token != "" {
			return x.Token != y.Token
		}
		return !x.Mtime.Equal(y.Mtime) || !x.Ctime.Equal(y.Ctime)
	}
	a, b := stat(), stat()
	if changed(a, b) {
		t.Fatalf("directory's attributes changed without a change: %+v then %+v", a, b)
	}
	time.Sleep(10 * time.Millisecond) // stores with coarse mtimes
	put(t, s, "d/b", []byte("b"))
	c := stat()
	if !changed(b, c) {
		t.Fatalf("directory's attributes did not change when an entry was added: %+v then %+v", b, c)
	}
	time.Sleep(10 * time.Millisecond)
	must(t, "Remove", s.Remove(ctx(t), "d/a"))
	if d := stat(); !changed(c, d) {
		t.Fatalf("directory's attributes did not change when an entry was removed: %+v then %+v", c, d)
	}
}

func testWriteAtTruncate(t *testing.T, s home.Store) {
	put(t, s, "f", []byte("0123456789"))
	must(t, "WriteAt middle", s.WriteAt(ctx(t), "f", []byte("ab"), 3))
	checkContent(t, s, "f", []byte("012ab56789"))
	must(t, "WriteAt past the end", s.WriteAt(ctx(t), "f", []byte("Z"), 12))
	checkContent(t, s, "f", []byte("012ab56789\x00\x00Z"))
	must(t, "Truncate down", s.Truncate(ctx(t), "f", 4))
	checkContent(t, s, "f", []byte("012a"))
	must(t, "Truncate up", s.Truncate(ctx(t), "f", 6))
	checkContent(t, s, "f", []byte("012a\x00\x00"))
	must(t, "Truncate to 0", s.Truncate(ctx(t), "f", 0))
	checkContent(t, s, "f", nil)
	wantErr(t, "WriteAt of a missing file", s.WriteAt(ctx(t), "nope", []byte("x"), 0), home.ErrNotFound)
	wantErr(t, "Truncate of a missing file", s.Truncate(ctx(t), "nope", 0), home.ErrNotFound)
	wantErr(t, "WriteAt at a negative offset", s.WriteAt(ctx(t), "f", []byte("x"), -1), home.ErrInvalidPath)
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0))
	wantErr(t, "Truncate of a directory", s.Truncate(ctx(t), "d", 0), home.ErrIsDir)
	wantErr(t, "WriteAt into a directory", s.WriteAt(ctx(t), "d", []byte("x"), 0), home.ErrIsDir)
}

func testCreateMkdir(t *testing.T, s home.Store) {
	must(t, "Create", s.Create(ctx(t), "f", 0o600))
	checkContent(t, s, "f", nil)
	wantErr(t, "Create of an existing file", s.Create(ctx(t), "f", 0o600), home.ErrExist)
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0o755))
	wantErr(t, "Mkdir of an existing directory", s.Mkdir(ctx(t), "d", 0o755), home.ErrExist)
	wantErr(t, "Mkdir over a file", s.Mkdir(ctx(t), "f", 0o755), home.ErrExist)
	wantErr(t, "Create over a directory", s.Create(ctx(t), "d", 0o644), home.ErrExist)
	must(t, "Mkdir nested", s.Mkdir(ctx(t), "d/e", 0o755))
	must(t, "Create nested", s.Create(ctx(t), "d/e/f", 0o644))
	wantErr(t, "Mkdir with a missing parent", s.Mkdir(ctx(t), "x/y", 0o755), home.ErrNotFound)
	wantErr(t, "Create with a missing parent", s.Create(ctx(t), "x/f", 0o644), home.ErrNotFound)
	a, err := s.Stat(ctx(t), "d/e")
	must(t, "Stat", err)
	if a.Kind != home.KindDir || a.Name != "e" {
		t.Fatalf("Stat(d/e) = %+v, want a directory named e", a)
	}
	if a.Mode != 0 && a.Mode&0o777 != 0o755 {
		t.Fatalf("Stat(d/e).Mode = %o, want 755 (or 0 where the store has no modes)", a.Mode)
	}
}

func testReadDir(t *testing.T, s home.Store) {
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0))
	want := map[string]home.Kind{"b": home.KindFile, "a": home.KindFile, "sub": home.KindDir, "c.txt": home.KindFile}
	put(t, s, "d/b", []byte("bb"))
	put(t, s, "d/a", []byte("a"))
	put(t, s, "d/c.txt", []byte("ccc"))
	must(t, "Mkdir", s.Mkdir(ctx(t), "d/sub", 0))
	put(t, s, "d/sub/deep", []byte("not listed in d"))
	ents, err := s.ReadDir(ctx(t), "d")
	must(t, "ReadDir", err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
		if want[e.Name] != e.Kind {
			t.Errorf("entry %q kind %v, want %v", e.Name, e.Kind, want[e.Name])
		}
		if e.Kind == home.KindFile && e.Size != int64(map[string]int{"a": 1, "b": 2, "c.txt": 3}[e.Name]) {
			t.Errorf("entry %q size %d", e.Name, e.Size)
		}
		if e.Kind == home.KindFile {
			st, err := s.Stat(ctx(t), "d/"+e.Name)
			must(t, "Stat", err)
			if st.Token != e.Token {
				t.Errorf("entry %q: ReadDir token %q, Stat token %q", e.Name, e.Token, st.Token)
			}
		}
	}
	if fmt.Sprint(names) != "[a b c.txt sub]" {
		t.Fatalf("ReadDir(d) names %v, want [a b c.txt sub] in order", names)
	}
	_, err = s.ReadDir(ctx(t), "d/a")
	wantErr(t, "ReadDir of a file", err, home.ErrNotDir)
	_, err = s.ReadDir(ctx(t), "nope")
	wantErr(t, "ReadDir of a missing directory", err, home.ErrNotFound)
	ents, err = s.ReadDir(ctx(t), "")
	must(t, "ReadDir root", err)
	if len(ents) != 1 || ents[0].Name != "d" || ents[0].Kind != home.KindDir {
		t.Fatalf("ReadDir of the root %+v, want just d", ents)
	}
}

func testRemove(t *testing.T, s home.Store) {
	put(t, s, "f", []byte("x"))
	must(t, "Remove", s.Remove(ctx(t), "f"))
	_, err := s.Stat(ctx(t), "f")
	wantErr(t, "Stat after Remove", err, home.ErrNotFound)
	wantErr(t, "Remove again", s.Remove(ctx(t), "f"), home.ErrNotFound)
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0))
	wantErr(t, "Remove of a directory", s.Remove(ctx(t), "d"), home.ErrIsDir)
}

func testRmdir(t *testing.T, s home.Store) {
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0))
	put(t, s, "d/f", []byte("x"))
	err := s.Rmdir(ctx(t), "d")
	wantErr(t, "Rmdir of a non-empty directory", err, home.ErrNotEmpty)
	if errors.Is(err, home.ErrNotFound) {
		t.Fatalf("ENOTEMPTY %v also matches ENOENT", err)
	}
	wantErr(t, "Rmdir of a file", s.Rmdir(ctx(t), "d/f"), home.ErrNotDir)
	must(t, "Remove", s.Remove(ctx(t), "d/f"))
	must(t, "Rmdir", s.Rmdir(ctx(t), "d"))
	_, err = s.Stat(ctx(t), "d")
	wantErr(t, "Stat after Rmdir", err, home.ErrNotFound)
	err = s.Rmdir(ctx(t), "d")
	wantErr(t, "Rmdir again", err, home.ErrNotFound)
	if errors.Is(err, home.ErrNotEmpty) {
		t.Fatalf("ENOENT %v also matches ENOTEMPTY", err)
	}
	// A deep tree removed bottom-up (what write-back does).
	must(t, "Mkdir", s.Mkdir(ctx(t), "a", 0))
	must(t, "Mkdir", s.Mkdir(ctx(t), "a/b", 0))
	must(t, "Mkdir", s.Mkdir(ctx(t), "a/b/c", 0))
	put(t, s, "a/b/c/f", []byte("x"))
	wantErr(t, "Rmdir a/b", s.Rmdir(ctx(t), "a/b"), home.ErrNotEmpty)
	must(t, "Remove", s.Remove(ctx(t), "a/b/c/f"))
	for _, d := range []string{"a/b/c", "a/b", "a"} {
		must(t, "Rmdir "+d, s.Rmdir(ctx(t), d))
	}
	ents, err := s.ReadDir(ctx(t), "")
	must(t, "ReadDir", err)
	if len(ents) != 0 {
		t.Fatalf("root lists %+v after removing everything", ents)
	}
}

func testRenameFile(t *testing.T, s home.Store) {
	put(t, s, "a", []byte("content of a"))
	must(t, "Rename", s.Rename(ctx(t), "a", "b"))
	_, err := s.Stat(ctx(t), "a")
	wantErr(t, "Stat of the old name", err, home.ErrNotFound)
	checkContent(t, s, "b", []byte("content of a"))
	put(t, s, "c", []byte("c, replaced"))
	must(t, "Rename over a file", s.Rename(ctx(t), "b", "c"))
	checkContent(t, s, "c", []byte("content of a"))
	must(t, "Mkdir", s.Mkdir(ctx(t), "d", 0))
	must(t, "Rename into a directory", s.Rename(ctx(t), "c", "d/c"))
	checkContent(t, s, "d/c", []byte("content of a"))
	wantErr(t, "Rename of a missing file", s.Rename(ctx(t), "nope", "x"), home.ErrNotFound)
	wantErr(t, "Rename into a missing directory", s.Rename(ctx(t), "d/c", "nodir/c"), home.ErrNotFound)
}

func testRenameDir(t *testing.T, s home.Store) {
	must(t, "Mkdir", s.Mkdir(ctx(t), "src", 0))
	must(t, "Mkdir", s.Mkdir(ctx(t), "src/sub", 0))
	put(t, s, "src/f", []byte("f"))
	put(t, s, "src/sub/g", []byte("g"))
	must(t, "Rename a directory", s.Rename(ctx(t), "src", "dst"))
	_, err := s.Stat(ctx(t), "src")
	wantErr(t, "Stat of the old directory", err, home.ErrNotFound)
	checkContent(t, s, "dst/f", []byte("f"))
	checkContent(t, s, "dst/sub/g", []byte("g"))
	ents, err := s.ReadDir(ctx(t), "dst")
	must(t, "ReadDir", err)
	if len(ents) != 2 || ents[0].Name != "f" || ents[1].Name != "sub" {
		t.Fatalf("ReadDir(dst) = %+v, want f and sub", ents)
	}
	must(t, "Mkdir", s.Mkdir(ctx(t), "full", 0))
	put(t, s, "full/x", []byte("x"))
	wantErr(t, "Rename over a non-empty directory", s.Rename(ctx(t), "dst", "full"), home.ErrNotEmpty)
	checkContent(t, s, "dst/f", []byte("f"))
}

func testMissing(t *testing.T, s home.Store) {
	buf := make([]byte, 4)
	_, err := s.Stat(ctx(t), "a/b")
	wantErr(t, "Stat", err, home.ErrNotFound)
	_, err = s.ReadAt(ctx(t), "a", buf, 0)
	wantErr(t, "ReadAt", err, home.ErrNotFound)
	wantErr(t, "Remove", s.Remove(ctx(t), "a"), home.ErrNotFound)
	wantErr(t, "Rmdir", s.Rmdir(ctx(t), "a"), home.ErrNotFound)
}

func testBadPaths(t *testing.T, s home.Store) {
	put(t, s, "f", []byte("x"))
	for _, p := range []string{"../f", "a/../f", "..", "a//b", "./f", "f\x00g"} {
		_, err := s.Stat(ctx(t), p)
		wantErr(t, fmt.Sprintf("Stat(%q)", p), err, home.ErrInvalidPath)
		_, err = s.WriteFile(ctx(t), p, bytes.NewReader(nil), 0, 0)
		wantErr(t, fmt.Sprintf("WriteFile(%q)", p), err, home.ErrInvalidPath)
		wantErr(t, fmt.Sprintf("Rename(f, %q)", p), s.Rename(ctx(t), "f", p), home.ErrInvalidPath)
	}
	checkContent(t, s, "f", []byte("x"))
}

func testSymlink(t *testing.T, s home.Store) {
	sl, ok := s.(home.Symlinker)
	if !ok {
		t.Skip("the store has no symlinks")
	}
	put(t, s, "target", []byte("t"))
	must(t, "Symlink", sl.Symlink(ctx(t), "target", "link"))
	a, err := s.Stat(ctx(t), "link")
	must(t, "Stat", err)
	if a.Kind != home.KindSymlink {
		t.Fatalf("Stat(link).Kind = %v, want symlink (Stat does not follow)", a.Kind)
	}
	got, err := sl.Readlink(ctx(t), "link")
	if err != nil || got != "target" {
		t.Fatalf("Readlink = %q, %v; want target", got, err)
	}
	wantErr(t, "Symlink over an existing name", sl.Symlink(ctx(t), "x", "link"), home.ErrExist)
	must(t, "Remove of a symlink", s.Remove(ctx(t), "link"))
	checkContent(t, s, "target", []byte("t"))
}

func testSetattr(t *testing.T, s home.Store) {
	sa, ok := s.(home.Setattrer)
	if !ok {
		t.Skip("the store keeps no modes or times")
	}
	put(t, s, "f", []byte("x"))
	must(t, "Chmod", sa.Chmod(ctx(t), "f", 0o600))
	mt := time.Date(2020, 5, 17, 12, 0, 0, 0, time.UTC)
	must(t, "Chtimes", sa.Chtimes(ctx(t), "f", time.Time{}, mt))
	a, err := s.Stat(ctx(t), "f")
	must(t, "Stat", err)
	if a.Mode&0o777 != 0o600 || !a.Mtime.Equal(mt) {
		t.Fatalf("after Chmod 600 and Chtimes %v: mode %o mtime %v", mt, a.Mode, a.Mtime)
	}
	wantErr(t, "Chmod of a missing file", sa.Chmod(ctx(t), "nope", 0o600), home.ErrNotFound)
}

func testConcurrent(t *testing.T, s home.Store) {
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := bytes.Repeat([]byte{byte('a' + i)}, 1000+i)
			_, err := s.WriteFile(ctx(t), fmt.Sprintf("f%d", i), bytes.NewReader(data), int64(len(data)), 0)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, "concurrent WriteFile", err)
	}
	for i := range n {
		checkContent(t, s, fmt.Sprintf("f%d", i), bytes.Repeat([]byte{byte('a' + i)}, 1000+i))
	}
}

func testLarge(t *testing.T, s home.Store, size int64) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	data := make([]byte, size)
	rand.New(rand.NewSource(seed)).Read(data)
	a := put(t, s, "big", data)
	if a.Size != size {
		t.Fatalf("size %d, want %d", a.Size, size)
	}
	r := rand.New(rand.NewSource(seed + 1))
	for range 8 {
		off := r.Int63n(size)
		n := min(int64(1+r.Intn(3<<20)), size-off)
		buf := make([]byte, n)
		got, err := s.ReadAt(ctx(t), "big", buf, off)
		if (err != nil && err != io.EOF) || int64(got) != n || !bytes.Equal(buf, data[off:off+n]) {
			t.Fatalf("ReadAt(big, off %d, %d bytes) = %d, %v, or wrong bytes", off, n, got, err)
		}
	}
	checkContent(t, s, "big", data)
}
