package s3

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// TestKeepAliveChunkedBodies: requests of every kind on one kept-alive
// connection, among them chunked bodies (minio-go's zero-byte PUT is an
// HTTP chunked body of one empty aws-chunked chunk), refused ones whose
// body nobody read, and a chunked body of unsigned payload refused for
// its missing length. Each is answered in turn on the one connection. A
// chunked body left unread used to be parsed as the next request: its 400
// reached the client as an unsolicited response on an idle connection,
// which the client dropped (s3bench's fill of zero-byte PUTs failed so).
func TestKeepAliveChunkedBodies(t *testing.T) {
	s := serveFixture(t, ServerConfig{})
	var dials atomic.Int32
	tr := &http.Transport{
		MaxConnsPerHost: 1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	client := func(secret string) *minio.Client {
		mc, err := minio.New(s.addr, &minio.Options{Creds: credentials.NewStaticV4(s.key.AccessKeyID, secret, ""), Region: "us-east-1",
			BucketLookup: minio.BucketLookupPath, MaxRetries: 1, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		return mc
	}
	mc, wrong := client(s.key.Secret), client(strings.Repeat("x", len(s.key.Secret)))
	ctx := context.Background()
	put := func(mc *minio.Client, key string, size int) error {
		_, err := mc.PutObject(ctx, "bkt", key, bytes.NewReader(bytes.Repeat([]byte{'a'}, size)), int64(size), minio.PutObjectOptions{})
		return err
	}
	if err := mc.MakeBucket(ctx, "bkt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		what string
		do   func() error
		code string // the S3 error expected ("": none)
	}{
		{"zero-byte PUT", func() error { return put(mc, "empty", 0) }, ""},
		{"HEAD", func() error { _, err := mc.StatObject(ctx, "bkt", "empty", minio.StatObjectOptions{}); return err }, ""},
		{"4 KiB PUT", func() error { return put(mc, "small", 4096) }, ""},
		{"zero-byte PUT, wrong secret", func() error { return put(wrong, "no", 0) }, "SignatureDoesNotMatch"},
		{"GET", func() error {
			o, err := mc.GetObject(ctx, "bkt", "small", minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			defer o.Close()
			b, err := io.ReadAll(o)
			if err == nil && len(b) != 4096 {
				t.Errorf("GET gave %d bytes, want 4096", len(b))
			}
			return err
		}, ""},
		{"zero-byte PUT over a prefix", func() error { put(mc, "d/k", 1); return put(mc, "d", 0) }, "ExistingObjectIsDirectory"},
		{"chunked PUT of an unsigned payload", func() error { return chunkedPut(t, tr, s, "unsigned", 100<<10) }, "MissingContentLength"},
		{"zero-byte PUT again", func() error { return put(mc, "empty2", 0) }, ""},
		{"LIST", func() error {
			for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{}) {
				if o.Err != nil {
					return o.Err
				}
			}
			return nil
		}, ""},
	} {
		err := step.do()
		if got := minio.ToErrorResponse(err).Code; got != step.code || (step.code == "" && err != nil) {
			t.Errorf("step %d, %s: %v (code %q), want %q", i, step.what, err, got, step.code)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the requests took %d connections, want 1 kept alive", n)
	}
	// An unread chunked body past maxChunkedDrain is not read: the
	// connection is closed after the answer, and the next request gets
	// a new one.
	if err := chunkedPut(t, tr, s, "unsigned", maxChunkedDrain+64<<10); minio.ToErrorResponse(err).Code != "MissingContentLength" {
		t.Errorf("a chunked PUT of an unsigned payload past the drain bound: %v, want MissingContentLength", err)
	}
	if err := put(mc, "after", 1); err != nil {
		t.Errorf("a PUT after the connection closed: %v", err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("after an unread body past the bound: %d connections in all, want 2", n)
	}
}

// chunkedPut sends a PUT of n bytes with an unsigned payload in an HTTP
// chunked body (no Content-Length) through tr.
func chunkedPut(t *testing.T, tr http.RoundTripper, s *served, key string, n int) error {
	t.Helper()
	body := io.MultiReader(bytes.NewReader(make([]byte, n))) // no length known: chunked
	req, err := http.NewRequest(http.MethodPut, "http://"+s.addr+"/bkt/"+key, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	req = signer.SignV4(*req, s.key.AccessKeyID, s.key.Secret, "", "us-east-1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e minio.ErrorResponse
	if i, j := bytes.Index(b, []byte("<Code>")), bytes.Index(b, []byte("</Code>")); i >= 0 && j > i {
		e.Code = string(b[i+6 : j])
	}
	e.StatusCode = resp.StatusCode
	return e
}
