package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/disk"
	"tessera/internal/block/server"
	"tessera/internal/logtest"
)

var (
	_ server.Backend = (*disk.Store)(nil)
	_ server.Files   = (*disk.Store)(nil)
	_ server.Creator = (*disk.Store)(nil)
)

type fixture struct {
	store *disk.Store
	url   string
	log   *logtest.Buffer
}

func start(t *testing.T, opts server.Options) *fixture {
	t.Helper()
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &fixture{store: s, log: &logtest.Buffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(f.log, nil))
	ts := httptest.NewServer(server.New(s, opts))
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

type reply struct {
	code   int
	header http.Header
	body   string
}

func (f *fixture) do(t *testing.T, method, path string, body []byte, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func expect(t *testing.T, what string, r reply, code int, bodyHas string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.body, bodyHas) {
		t.Fatalf("%s: %d %q; want %d with %q", what, r.code, r.body, code, bodyHas)
	}
}

func TestPut(t *testing.T) {
	f := start(t, server.Options{MaxBlockSize: 1000})
	data := []byte("a block")
	h := block.Sum(data)
	path := "/v1/blocks/" + h.String()
	expect(t, "PUT new", f.do(t, "PUT", path, data), 201, "")
	expect(t, "PUT again", f.do(t, "PUT", path, data), 204, "")
	expect(t, "PUT bad name", f.do(t, "PUT", "/v1/blocks/xyz", data), 400, `"xyz"`)
	r := f.do(t, "PUT", "/v1/blocks/"+block.Sum([]byte("x")).String(), data)
	expect(t, "PUT mismatch", r, 422, "does not match")
	big := blocktest.Data(1, 2000)
	expect(t, "PUT too large", f.do(t, "PUT", "/v1/blocks/"+block.Sum(big).String(), big), 413, "maximum block size of 1000 bytes")
	if got, err := f.store.Get(context.Background(), h); err != nil || string(got) != "a block" {
		t.Fatalf("stored block: %q, %v", got, err)
	}
}

func TestGet(t *testing.T) {
	f := start(t, server.Options{})
	data := blocktest.Data(1, 10000)
	h := block.Sum(data)
	path := "/v1/blocks/" + h.String()
	f.do(t, "PUT", path, data)

	r := f.do(t, "GET", path, nil)
	if r.code != 200 || r.body != string(data) || r.header.Get("ETag") != `"`+h.String()+`"` {
		t.Fatalf("GET: %d, %d bytes, ETag %q", r.code, len(r.body), r.header.Get("ETag"))
	}
	r = f.do(t, "GET", path, nil, "Range", "bytes=100-199")
	if r.code != 206 || r.body != string(data[100:200]) {
		t.Fatalf("GET range: %d, %d bytes", r.code, len(r.body))
	}
	r = f.do(t, "HEAD", path, nil)
	if r.code != 200 || r.header.Get("Content-Length") != "10000" {
		t.Fatalf("HEAD: %d, Content-Length %q", r.code, r.header.Get("Content-Length"))
	}
	missing := "/v1/blocks/" + block.Sum([]byte("missing")).String()
	r = f.do(t, "GET", missing, nil)
	expect(t, "GET missing", r, 404, "not found")
	if r.header.Get(server.ErrorHeader) != server.ClassNotFound {
		t.Fatalf("GET missing: %s = %q", server.ErrorHeader, r.header.Get(server.ErrorHeader))
	}
	expect(t, "HEAD missing", f.do(t, "HEAD", missing, nil), 404, "")
	r = f.do(t, "GET", "/v1/nothing", nil)
	if r.code != 404 || r.header.Get(server.ErrorHeader) != "" {
		t.Fatalf("unknown route: %d, class %q; want a 404 without a block error class", r.code, r.header.Get(server.ErrorHeader))
	}
}

func TestGetCorrupt(t *testing.T) {
	f := start(t, server.Options{})
	data := blocktest.Data(2, 5000)
	h := block.Sum(data)
	f.do(t, "PUT", "/v1/blocks/"+h.String(), data)
	data[0] ^= 0xff
	if err := os.WriteFile(f.store.Path(h), data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.do(t, "GET", "/v1/blocks/"+h.String(), nil)
	expect(t, "GET corrupt", r, 500, f.store.Path(h))
	if r.header.Get(server.ErrorHeader) != server.ClassCorrupt {
		t.Fatalf("GET corrupt: %s = %q", server.ErrorHeader, r.header.Get(server.ErrorHeader))
	}
	if log := f.log.String(); !strings.Contains(log, "corrupt block") || !strings.Contains(log, f.store.Path(h)) {
		t.Fatalf("log does not name the corrupt file:\n%s", log)
	}
}

func TestHasListRemoveUsage(t *testing.T) {
	f := start(t, server.Options{})
	a, b := []byte("block a"), []byte("block b")
	ha, hb := block.Sum(a), block.Sum(b)
	f.do(t, "PUT", "/v1/blocks/"+ha.String(), a)

	r := f.do(t, "POST", "/v1/has", append(ha[:], hb[:]...))
	if r.code != 200 || r.body != "\x01\x00" {
		t.Fatalf("has: %d %q", r.code, r.body)
	}
	expect(t, "has ragged", f.do(t, "POST", "/v1/has", []byte("short")), 400, "32-byte hashes")

	resp, err := http.Get(f.url + "/v1/list")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(body) != server.ListRecordSize || !bytes.Equal(body[:32], ha[:]) ||
		binary.BigEndian.Uint64(body[32:]) != uint64(len(a)) {
		t.Fatalf("list: %d bytes, %v", len(body), err)
	}
	if c := resp.Trailer.Get(server.ListCountTrailer); c != "1" {
		t.Fatalf("list count trailer = %q, want 1", c)
	}

	expect(t, "usage", f.do(t, "GET", "/v1/usage", nil), 200, `{"blocks":1,"bytes":7,"free":`)
	path := "/v1/blocks/" + ha.String()
	expect(t, "DELETE without older-than", f.do(t, "DELETE", path, nil), 400, "older-than")
	expect(t, "DELETE too young", f.do(t, "DELETE", path+"?older-than=1", nil), 200, `{"removed":false}`)
	expect(t, "DELETE", f.do(t, "DELETE", path+"?older-than=9223372036854775807", nil), 200, `{"removed":true}`)
	expect(t, "usage", f.do(t, "GET", "/v1/usage", nil), 200, `{"blocks":0,"bytes":0,"free":`)
}

// TestTouchSparesFromCollection: POST /v1/has?touch=1 reports what is held
// and marks it as just written, so a collection whose cutoff is after the
// block's upload but before the touch leaves it; an untouched block of the
// same age goes.
func TestTouchSparesFromCollection(t *testing.T) {
	f := start(t, server.Options{})
	a, b, c := []byte("block a"), []byte("block b"), []byte("block c")
	ha, hb, hc := block.Sum(a), block.Sum(b), block.Sum(c)
	long := time.Now().Add(-2 * time.Hour)
	for _, blk := range [][]byte{a, c} {
		h := block.Sum(blk)
		f.do(t, "PUT", "/v1/blocks/"+h.String(), blk)
		if err := os.Chtimes(f.store.Path(h), long, long); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := strconv.FormatInt(time.Now().Add(-time.Hour).UnixNano(), 10)

	r := f.do(t, "POST", "/v1/has?touch=1", append(ha[:], hb[:]...))
	if r.code != 200 || r.body != "\x01\x00" {
		t.Fatalf("touch: %d %q, want 200 \"\\x01\\x00\"", r.code, r.body)
	}
	if _, err := os.Stat(f.store.Path(hb)); err == nil {
		t.Fatal("touch created an absent block")
	}
	expect(t, "DELETE of the touched block", f.do(t, "DELETE", "/v1/blocks/"+ha.String()+"?older-than="+cutoff, nil), 200, `{"removed":false}`)
	expect(t, "DELETE of an untouched block as old", f.do(t, "DELETE", "/v1/blocks/"+hc.String()+"?older-than="+cutoff, nil), 200, `{"removed":true}`)
}

// TestRemoveMany: POST /v1/remove removes each block only if it is older
// than its own record's cutoff (a block written after its cutoff stays
// even when another record's cutoff is later than its write), answers one
// byte per record, and refuses too many records before reading them and a
// body that is not whole records, saying why.
func TestRemoveMany(t *testing.T) {
	for name, wrap := range map[string]func(*disk.Store) server.Backend{
		"batch": func(s *disk.Store) server.Backend { return s },
		"plain": func(s *disk.Store) server.Backend { return plainBackend{s} }, // Remove per record
	} {
		t.Run(name, func(t *testing.T) {
			st, err := disk.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			ts := httptest.NewServer(server.New(wrap(st), server.Options{}))
			t.Cleanup(ts.Close)
			f := &fixture{store: st, url: ts.URL}

			a, b := []byte("block a"), []byte("block b")
			ha, hb, absent := block.Sum(a), block.Sum(b), block.Sum([]byte("absent"))
			now := time.Now()
			for blk, at := range map[*[]byte]time.Time{&a: now.Add(-2 * time.Hour), &b: now.Add(-30 * time.Minute)} {
				h := block.Sum(*blk)
				f.do(t, "PUT", "/v1/blocks/"+h.String(), *blk)
				if err := os.Chtimes(st.Path(h), at, at); err != nil {
					t.Fatal(err)
				}
			}
			body := server.EncodeRemovals([]block.Removal{
				{Hash: ha, NotAfter: now.Add(-10 * time.Minute).UnixNano()}, // written before: goes
				{Hash: hb, NotAfter: now.Add(-40 * time.Minute).UnixNano()}, // written after: stays
				{Hash: absent, NotAfter: now.UnixNano()},
			})
			r := f.do(t, "POST", "/v1/remove", body)
			if r.code != 200 || r.body != "\x01\x00\x00" {
				t.Fatalf("remove: %d %q, want 200 \"\\x01\\x00\\x00\"", r.code, r.body)
			}
			if has, err := st.Has(context.Background(), []block.Hash{ha, hb}); err != nil || has[0] || !has[1] {
				t.Fatalf("after remove: held %v, %v; want a gone and b kept", has, err)
			}
			r = f.do(t, "POST", "/v1/remove", body)
			if r.code != 200 || r.body != "\x00\x00\x00" {
				t.Fatalf("remove again: %d %q, want nothing removed", r.code, r.body)
			}
			expect(t, "remove ragged", f.do(t, "POST", "/v1/remove", body[:server.RemoveRecordSize+1]), 400, "40-byte records")
			if r := f.do(t, "POST", "/v1/remove", nil); r.code != 200 || r.body != "" {
				t.Fatalf("remove of nothing: %d %q", r.code, r.body)
			}
		})
	}

	// Too many records: refused on the declared length, before the body
	// is read.
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	body := &watchedBody{Reader: bytes.NewReader(make([]byte, (server.MaxRemoveBatch+1)*server.RemoveRecordSize))}
	req := httptest.NewRequest("POST", "/v1/remove", body)
	req.ContentLength = (server.MaxRemoveBatch + 1) * server.RemoveRecordSize
	rec := httptest.NewRecorder()
	server.New(st, server.Options{}).ServeHTTP(rec, req)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "at most 4096 records") || body.read {
		t.Fatalf("remove of %d records: %d %q, body read %v; want 413 naming the limit, the body unread",
			server.MaxRemoveBatch+1, rec.Code, rec.Body, body.read)
	}
	// Chunked, without a length to refuse on: refused once past the limit.
	req = httptest.NewRequest("POST", "/v1/remove", io.MultiReader(bytes.NewReader(make([]byte, (server.MaxRemoveBatch+1)*server.RemoveRecordSize))))
	rec = httptest.NewRecorder()
	server.New(st, server.Options{}).ServeHTTP(rec, req)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "at most 4096 records") {
		t.Fatalf("chunked remove of %d records: %d %q; want 413 naming the limit", server.MaxRemoveBatch+1, rec.Code, rec.Body)
	}
}

// plainBackend hides disk.Store's optional capabilities, as a Backend
// without block.BatchRemover.
type plainBackend struct{ server.Backend }

// watchedBody is a request body that notes whether it was read.
type watchedBody struct {
	io.Reader
	read bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.read = true
	return b.Reader.Read(p)
}
