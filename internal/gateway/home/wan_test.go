package home_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"

	"tessera/internal/gateway/home"
	"tessera/internal/wan"
)

// TestS3OverWAN runs an S3 home through an emulated WAN link (30 ms round
// trip, an 8 MiB/s cap) and cuts the link in the middle of operations: a
// multipart WriteFile over an existing file cut with Refuse, a WriteAt
// stalled by a Blackhole until its context ends. Each returns a retryable
// error, the file is left whole as it was (WriteFile and WriteAt are atomic
// on S3), and after Heal the retry succeeds.
func TestS3OverWAN(t *testing.T) {
	g := startVersityGW(t)
	const rate = 8 << 20
	link, err := wan.NewLink(g.Endpoint[len("http://"):], wan.LinkOptions{Latency: 15 * time.Millisecond, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	ctx := context.Background()
	s, err := home.Open(ctx, g.bucket(t, "wanbucket", "home", "http://"+link.Addr())+"&retries=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	v1 := []byte("version one, small, written before the outage")
	if _, err := s.WriteFile(ctx, "f", bytes.NewReader(v1), int64(len(v1)), 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Stat(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("a Stat through a link of 30 ms round trip took %v", d)
	}

	// A 20 MiB WriteFile (multipart: 16 MiB parts) cut once 4 MiB went up.
	v2 := make([]byte, 20<<20)
	rand.New(rand.NewSource(1)).Read(v2)
	up0 := link.BytesUp()
	done := make(chan error, 1)
	go func() {
		_, err := s.WriteFile(ctx, "f", bytes.NewReader(v2), int64(len(v2)), 0)
		done <- err
	}()
	waitFor(t, "4 MiB through the link", func() bool { return link.BytesUp()-up0 >= 4<<20 })
	if err := link.Cut(wan.Refuse); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if err == nil {
		t.Fatalf("WriteFile of %d bytes through a link cut after %d went up succeeded", len(v2), link.BytesUp()-up0)
	}
	if !home.Retryable(err) {
		t.Fatalf("WriteFile through a cut link: %v; want a retryable error", err)
	}
	t.Logf("cut mid-WriteFile: %v", err)
	if _, err := s.Stat(ctx, "f"); !home.Retryable(err) {
		t.Fatalf("Stat through a refusing link: %v; want a retryable error", err)
	}
	if err := link.Heal(); err != nil {
		t.Fatal(err)
	}
	checkWhole(t, s, "f", v1)
	if _, err := s.WriteFile(ctx, "f", bytes.NewReader(v2), int64(len(v2)), 0); err != nil {
		t.Fatalf("WriteFile retried after the heal: %v", err)
	}
	checkWhole(t, s, "f", v2)

	// A WriteAt stalled by a blackhole ends with its context, retryable,
	// and changes nothing.
	g1 := bytes.Repeat([]byte("g"), 1000)
	if _, err := s.WriteFile(ctx, "g", bytes.NewReader(g1), int64(len(g1)), 0); err != nil {
		t.Fatal(err)
	}
	if err := link.Cut(wan.Blackhole); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = s.WriteAt(sctx, "g", []byte("XXXX"), 100)
	cancel()
	if err == nil || !home.Retryable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteAt through a blackholed link: %v; want a retryable deadline error", err)
	}
	if err := link.Heal(); err != nil {
		t.Fatal(err)
	}
	checkWhole(t, s, "g", g1)
	if err := s.WriteAt(ctx, "g", []byte("XXXX"), 100); err != nil {
		t.Fatalf("WriteAt retried after the heal: %v", err)
	}
	copy(g1[100:], "XXXX")
	checkWhole(t, s, "g", g1)
}

// checkWhole reads p whole and compares.
func checkWhole(t *testing.T, s home.Store, p string, want []byte) {
	t.Helper()
	ctx := context.Background()
	a, err := s.Stat(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, a.Size)
	if n, err := s.ReadAt(ctx, p, got, 0); err != nil || n != len(got) {
		t.Fatalf("ReadAt %s: %d of %d bytes, %v", p, n, len(got), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s holds %d bytes (%q...), want %d bytes (%q...): half-applied", p, len(got), got[:min(len(got), 16)], len(want), want[:min(len(want), 16)])
	}
}

// waitFor polls cond every 10 ms; only a hang reaches its minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestS3RenameCutOverWAN cuts the link while an S3 home renames a
// directory (copies, then deletes: not atomic). Wherever the cut falls,
// every file is under its old name or its new one, never lost; after the
// heal the retried rename completes and the tree is whole at the target.
func TestS3RenameCutOverWAN(t *testing.T) {
	g := startVersityGW(t)
	link, err := wan.NewLink(g.Endpoint[len("http://"):], wan.LinkOptions{Latency: 15 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	ctx := context.Background()
	s, err := home.Open(ctx, g.bucket(t, "renamebucket", "", "http://"+link.Addr())+"&retries=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	files := map[string][]byte{}
	for _, d := range []string{"src", "src/sub"} {
		if err := s.Mkdir(ctx, d, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		rel := fmt.Sprintf("f%02d", i)
		if i%3 == 0 {
			rel = "sub/" + rel
		}
		data := []byte(strings.Repeat(rel, 10+i))
		files[rel] = data
		if _, err := s.WriteFile(ctx, "src/"+rel, bytes.NewReader(data), int64(len(data)), 0); err != nil {
			t.Fatal(err)
		}
	}
	up0 := link.BytesUp()
	done := make(chan error, 1)
	go func() { done <- s.Rename(ctx, "src", "dst") }()
	// A few requests in (the lookups before the copies cost about as
	// much); wherever it falls, what follows must hold.
	waitFor(t, "the rename's first requests", func() bool { return link.BytesUp()-up0 >= 8<<10 })
	if err := link.Cut(wan.Refuse); err != nil {
		t.Fatal(err)
	}
	err = <-done
	t.Logf("rename cut after %d bytes up: %v", link.BytesUp()-up0, err)
	if err != nil && !home.Retryable(err) {
		t.Fatalf("Rename through a cut link: %v; want a retryable error", err)
	}
	if err := link.Heal(); err != nil {
		t.Fatal(err)
	}
	for rel, data := range files {
		old, oerr := readAll(s, "src/"+rel)
		nw, nerr := readAll(s, "dst/"+rel)
		switch {
		case oerr == nil && bytes.Equal(old, data), nerr == nil && bytes.Equal(nw, data):
		default:
			t.Fatalf("%s after the cut: src %v, dst %v: lost", rel, oerr, nerr)
		}
	}
	if _, err := s.Stat(ctx, "src"); err == nil {
		if err := s.Rename(ctx, "src", "dst"); err != nil {
			t.Fatalf("the retried rename: %v", err)
		}
	} else if !errors.Is(err, home.ErrNotFound) {
		t.Fatal(err)
	}
	for rel, data := range files {
		checkWhole(t, s, "dst/"+rel, data)
	}
	if _, err := s.Stat(ctx, "src"); !errors.Is(err, home.ErrNotFound) {
		t.Fatalf("src after the rename: %v, want ErrNotFound", err)
	}
}

func readAll(s home.Store, p string) ([]byte, error) {
	ctx := context.Background()
	a, err := s.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	b := make([]byte, a.Size)
	n, err := s.ReadAt(ctx, p, b, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return b[:n], nil
}
