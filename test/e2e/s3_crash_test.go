package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// TestS3Kill9 kills `tessera s3` with SIGKILL while PUTs and a multipart
// upload are under way, then serves again from a new process: every PUT
// that was acknowledged reads back whole, every other key is absent or
// whole, never torn; the upload's acknowledged part is still listed and
// the upload can be aborted.
func TestS3Kill9(t *testing.T) {
	c := startCluster(t)
	addr := freePort(t)
	d, err := c.StartS3(addr)
	if err != nil {
		t.Fatal(err)
	}
	// Its admin socket's directory is in the test's data directory
	// (TMPDIR): the kill below leaves nothing in /tmp.
	if adm, _ := filepath.Glob(filepath.Join(c.DataDir(), "tessera-s3-admin-*")); len(adm) != 1 {
		t.Errorf("the endpoint's admin directory in the data directory: %q, want one", adm)
	}
	k := s3KeyAdd(t, c, "crash", "--role", "rw")
	mc := s3TLSClient(t, c, addr, k)
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "crash", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	const writers, perWriter, size = 4, 40, 1<<20 + 4097
	content := func(w, i int) []byte { return randBytes(uint64(w*1000+i+1), size) }
	core := minio.Core{Client: mc}
	up, err := core.NewMultipartUpload(ctx, "crash", "mp/obj", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	part1 := randBytes(99, 5<<20)
	p1, err := core.PutObjectPart(ctx, "crash", "mp/obj", up, 1, bytes.NewReader(part1), int64(len(part1)), minio.PutObjectPartOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	acked := make(map[string]bool)
	tried := make(map[string][]byte)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				key := fmt.Sprintf("w%d/o%03d", w, i)
				data := content(w, i)
				mu.Lock()
				tried[key] = data
				mu.Unlock()
				if _, err := mc.PutObject(ctx, "crash", key, bytes.NewReader(data), size, minio.PutObjectOptions{}); err != nil {
					return // the endpoint died
				}
				mu.Lock()
				acked[key] = true
				mu.Unlock()
			}
		}()
	}
	// A second part in flight too.
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := randBytes(98, 5<<20)
		core.PutObjectPart(ctx, "crash", "mp/obj", up, 2, bytes.NewReader(p), int64(len(p)), minio.PutObjectPartOptions{})
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 8 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.Kill9(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	addr2 := freePort(t)
	d2, err := c.StartS3(addr2)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Stop()
	mc2 := s3TLSClient(t, c, addr2, k)
	whole, absent := 0, 0
	for key, data := range tried {
		o, err := mc2.GetObject(ctx, "crash", key, minio.GetObjectOptions{})
		var got []byte
		if err == nil {
			got, err = readAllClose(o)
		}
		switch {
		case err == nil && bytes.Equal(got, data):
			whole++
		case s3Status(err) == http.StatusNotFound && !acked[key]:
			absent++
		case acked[key]:
			t.Errorf("%s was acknowledged before the kill, then read %d bytes (err %v): want it whole", key, len(got), err)
		default:
			t.Errorf("%s (not acknowledged) read %d bytes (err %v): want it absent or whole", key, len(got), err)
		}
	}
	t.Logf("%d PUTs acknowledged, %d tried: %d whole after the kill, %d absent", len(acked), len(tried), whole, absent)
	core2 := minio.Core{Client: mc2}
	parts, err := core2.ListObjectParts(ctx, "crash", "mp/obj", up, 0, 100)
	if err != nil {
		t.Fatalf("list parts after the kill: %v", err)
	}
	if len(parts.ObjectParts) == 0 || parts.ObjectParts[0].PartNumber != 1 || strings.Trim(parts.ObjectParts[0].ETag, `"`) != strings.Trim(p1.ETag, `"`) {
		t.Errorf("parts after the kill: %+v, want part 1 (%s) first", parts.ObjectParts, p1.ETag)
	}
	if err := core2.AbortMultipartUpload(ctx, "crash", "mp/obj", up); err != nil {
		t.Errorf("abort after the kill: %v", err)
	}
}

func readAllClose(o *minio.Object) ([]byte, error) {
	defer o.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(o)
	return b.Bytes(), err
}
