package server

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/disk"
)

func FuzzDecodeHashes(f *testing.F) {
	a, b := block.Sum([]byte("a")), block.Sum([]byte("b"))
	f.Add([]byte{})
	f.Add(a[:])
	f.Add(append(a[:], b[:]...))
	f.Add(a[:31])
	f.Fuzz(func(t *testing.T, body []byte) {
		hs, err := DecodeHashes(body)
		ok := len(body)%block.HashSize == 0 && len(body)/block.HashSize <= MaxHasBatch
		if (err == nil) != ok {
			t.Fatalf("body of %d bytes: err %v", len(body), err)
		}
		if err != nil {
			return
		}
		var back []byte
		for _, h := range hs {
			back = append(back, h[:]...)
		}
		if !bytes.Equal(back, body) && len(body) > 0 {
			t.Fatalf("decoded hashes do not re-encode to the body")
		}
	})
}

func FuzzDecodeRemovals(f *testing.F) {
	a := block.Sum([]byte("a"))
	f.Add([]byte{})
	f.Add(EncodeRemovals([]block.Removal{{Hash: a, NotAfter: 5}}))
	f.Add(EncodeRemovals([]block.Removal{{Hash: a, NotAfter: -1}, {Hash: a, NotAfter: 1 << 62}}))
	f.Add(a[:])
	f.Fuzz(func(t *testing.T, body []byte) {
		rs, err := DecodeRemovals(body)
		ok := len(body)%RemoveRecordSize == 0 && len(body)/RemoveRecordSize <= MaxRemoveBatch
		if (err == nil) != ok {
			t.Fatalf("body of %d bytes: err %v", len(body), err)
		}
		if err == nil && !bytes.Equal(EncodeRemovals(rs), body) && len(body) > 0 {
			t.Fatalf("decoded records do not re-encode to the body")
		}
	})
}

func FuzzParseOlderThan(f *testing.F) {
	for _, q := range []string{"older-than=123", "older-than=-1", "older-than=", "", "older-than=1&older-than=2",
		"older-than=99999999999999999999", "older-than=%2B5", "older-than=0x10"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		n, err := ParseOlderThan(q)
		vs := q["older-than"]
		if err != nil {
			if len(vs) == 1 {
				if _, perr := strconv.ParseInt(vs[0], 10, 64); perr == nil {
					t.Fatalf("%q refused: %v", raw, err)
				}
			}
			return
		}
		if len(vs) != 1 {
			t.Fatalf("%q accepted with %d values", raw, len(vs))
		}
		if want, _ := strconv.ParseInt(vs[0], 10, 64); n != want {
			t.Fatalf("%q: %d, want %d", raw, n, want)
		}
	})
}

// FuzzHandler sends arbitrary requests (method, path, query, Range header,
// body) to a handler over a real store: every one gets a reply, every
// refusal by the handler names its class, and what succeeds is right.
func FuzzHandler(f *testing.F) {
	data := []byte("a block of the fuzz store")
	h := block.Sum(data)
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPost, "PATCH"}
	f.Add(uint8(0), "/v1/blocks/"+h.String(), "", "", []byte(nil))
	f.Add(uint8(0), "/v1/blocks/"+h.String(), "", "bytes=3-7", []byte(nil))
	f.Add(uint8(0), "/v1/blocks/"+h.String(), "", "bytes=99-", []byte(nil))
	f.Add(uint8(1), "/v1/blocks/"+h.String(), "", "", []byte(nil))
	f.Add(uint8(2), "/v1/blocks/"+h.String(), "", "", data)
	f.Add(uint8(2), "/v1/blocks/"+h.String(), "", "", []byte("other"))
	f.Add(uint8(2), "/v1/blocks/zz", "", "", data)
	f.Add(uint8(3), "/v1/blocks/"+block.Sum(nil).String(), "older-than=5", "", []byte(nil))
	f.Add(uint8(3), "/v1/blocks/"+h.String(), "older-than=x", "", []byte(nil))
	f.Add(uint8(4), "/v1/has", "", "", append(h[:], h[:5]...))
	f.Add(uint8(4), "/v1/has", "touch=1", "", h[:])
	f.Add(uint8(4), "/v1/check/"+h.String(), "quarantine=1", "", []byte(nil))
	f.Add(uint8(4), "/v1/remove", "", "", EncodeRemovals([]block.Removal{{Hash: h, NotAfter: 1 << 62}, {Hash: h, NotAfter: 0}}))
	f.Add(uint8(4), "/v1/remove", "", "", append(h[:], 1, 2))
	f.Add(uint8(0), "/v1/list", "", "", []byte(nil))
	f.Add(uint8(0), "/v1/usage", "", "", []byte(nil))
	f.Add(uint8(0), "/v1/scrub", "", "", []byte(nil))
	s, err := disk.Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	hd := New(s, Options{MaxBlockSize: 1 << 16})
	f.Cleanup(hd.Close)
	f.Fuzz(func(t *testing.T, m uint8, path, query, rng string, body []byte) {
		if err := s.Put(t.Context(), h, data); err != nil {
			t.Fatal(err)
		}
		method := methods[int(m)%len(methods)]
		req, err := http.NewRequest(method, "http://block"+path, bytes.NewReader(body))
		if err != nil || req.URL.Path != path {
			return
		}
		req.URL.RawQuery = query
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		rec := httptest.NewRecorder()
		hd.ServeHTTP(rec, req)
		code, class := rec.Code, rec.Header().Get(ErrorHeader)
		switch code {
		case http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusPartialContent:
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestedRangeNotSatisfiable,
			http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			// The router's and ServeContent's own refusals carry no class.
		default:
			if class == "" {
				t.Fatalf("%s %s?%s: status %d without %s", method, path, query, code, ErrorHeader)
			}
			if code == http.StatusInternalServerError {
				t.Fatalf("%s %s?%s: server error: %s", method, path, query, rec.Body)
			}
		}
		switch {
		case method == http.MethodPut && (code == http.StatusCreated || code == http.StatusNoContent):
			if name, err := block.ParseHash(req.PathValue("hex")); err != nil || name != block.Sum(body) {
				t.Fatalf("PUT %s stored a body hashing to %s", path, block.Sum(body))
			}
		case method == http.MethodPost && path == "/v1/has" && code == http.StatusOK:
			if rec.Body.Len() != len(body)/block.HashSize {
				t.Fatalf("has: %d replies for %d hashes", rec.Body.Len(), len(body)/block.HashSize)
			}
			for i, b := range rec.Body.Bytes() {
				held := b == 1
				if want := [block.HashSize]byte(body[i*block.HashSize:]) == h; want && !held {
					t.Fatalf("has: the stored block reported absent")
				}
			}
		case method == http.MethodPost && path == "/v1/remove" && code == http.StatusOK:
			if rec.Body.Len() != len(body)/RemoveRecordSize {
				t.Fatalf("remove: %d replies for %d records", rec.Body.Len(), len(body)/RemoveRecordSize)
			}
		case method == http.MethodGet && code == http.StatusOK && path == "/v1/blocks/"+h.String():
			if !bytes.Equal(rec.Body.Bytes(), data) {
				t.Fatalf("GET returned %q", rec.Body)
			}
		case method == http.MethodGet && code == http.StatusOK && path == "/v1/list":
			recs := rec.Body.Bytes()
			if len(recs)%ListRecordSize != 0 || rec.Result().Trailer.Get(ListCountTrailer) != strconv.Itoa(len(recs)/ListRecordSize) {
				t.Fatalf("list: %d bytes, trailer %q", len(recs), rec.Result().Trailer)
			}
			var names []block.Hash
			for i := 0; i < len(recs); i += ListRecordSize {
				names = append(names, block.Hash(recs[i:]))
				_ = binary.BigEndian.Uint64(recs[i+block.HashSize:])
			}
			if !slices.Contains(names, h) {
				t.Fatalf("list misses the stored block")
			}
		}
	})
}
