package client_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/client"
	"tessera/internal/block/server"
)

// cannedReply answers every request with the same reply, without a
// network: the fuzz targets feed the client's decoders directly.
type cannedReply struct {
	status            int
	class, contentRng string
	body              []byte
	count             string
}

func (c cannedReply) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	h := http.Header{}
	if c.class != "" {
		h.Set(server.ErrorHeader, c.class)
	}
	if c.contentRng != "" {
		h.Set("Content-Range", c.contentRng)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d canned", c.status), StatusCode: c.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)),
		Trailer: http.Header{server.ListCountTrailer: {c.count}}, Request: req,
	}, nil
}

// FuzzReplies gives every call of the client an arbitrary reply (status,
// error class, Content-Range, body, list count trailer): nothing panics,
// and a call succeeds only on a reply that means what it returns.
func FuzzReplies(f *testing.F) {
	data := []byte("some block")
	h := block.Sum(data)
	rec := make([]byte, server.ListRecordSize)
	copy(rec, h[:])
	binary.BigEndian.PutUint64(rec[block.HashSize:], uint64(len(data)))
	f.Add(200, "", "", rec, "1")
	f.Add(200, "", "", append(rec, rec[:7]...), "1")
	f.Add(200, "", "", []byte{1, 0}, "")
	f.Add(200, "", "", data, "")
	f.Add(206, "", "", data[2:5], "")
	f.Add(416, "", "bytes */10", []byte(nil), "")
	f.Add(200, "", "", []byte(`{"removed":true,"blocks":3,"bytes":9,"state":"good"}`), "")
	f.Add(404, server.ClassNotFound, "", []byte("no such block"), "")
	f.Add(500, server.ClassCorrupt, "", []byte("corrupt"), "")
	f.Add(503, server.ClassBusy, "", []byte("busy"), "")
	f.Fuzz(func(t *testing.T, status int, class, contentRng string, body []byte, count string) {
		if status < 100 || status > 999 {
			return
		}
		reply := cannedReply{status: status, class: class, contentRng: contentRng, body: body, count: count}
		c := client.New("127.0.0.1:1", client.Options{Transport: reply, Tries: 1, MaxBlockSize: 1 << 20})
		ctx := context.Background()

		var got []block.Info
		err := c.List(ctx, func(i block.Info) error { got = append(got, i); return nil })
		if err == nil {
			if status != 200 || len(body)%server.ListRecordSize != 0 || count != strconv.Itoa(len(body)/server.ListRecordSize) {
				t.Fatalf("list accepted: status %d, %d bytes, count %q", status, len(body), count)
			}
			for i, info := range got {
				r := body[i*server.ListRecordSize:]
				if info.Hash != block.Hash(r) || info.Size != int64(binary.BigEndian.Uint64(r[block.HashSize:])) ||
					info.ModTime != int64(binary.BigEndian.Uint64(r[block.HashSize+8:])) {
					t.Fatalf("list record %d decoded as %+v", i, info)
				}
			}
		}

		has, err := c.Has(ctx, []block.Hash{h, block.Sum(nil)})
		if err == nil {
			if status != 200 || len(body) != 2 {
				t.Fatalf("has accepted: status %d, %d bytes", status, len(body))
			}
			if has[0] != (body[0] == 1) || has[1] != (body[1] == 1) {
				t.Fatalf("has %v from %v", has, body)
			}
		}

		if b, err := c.Get(ctx, h); err == nil && (status != 200 || !bytes.Equal(b, data)) {
			t.Fatalf("get accepted: status %d, %q", status, b)
		}
		if b, err := c.GetRange(ctx, h, 2, 3); err == nil && len(b) > 3 {
			t.Fatalf("range of 3 bytes returned %d", len(b))
		}
		if _, _, err := c.Usage(ctx); err == nil && status != 200 {
			t.Fatalf("usage accepted status %d", status)
		}
		if _, err := c.Remove(ctx, h, 1); err == nil && status != 200 {
			t.Fatalf("remove accepted status %d", status)
		}
		if err := c.Check(ctx, h, false); err == nil && status != 200 {
			t.Fatalf("check accepted status %d", status)
		}
		_, _ = c.Scrub(ctx)
	})
}
