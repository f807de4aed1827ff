package metrics_test

import (
	"testing"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/metrics"
)

// blockingFS answers GETATTR once release is closed, and says when each
// request arrived.
type blockingFS struct {
	gofuse.RawFileSystem
	arrived chan struct{}
	release chan struct{}
}

func (b *blockingFS) GetAttr(cancel <-chan struct{}, in *gofuse.GetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	b.arrived <- struct{}{}
	<-b.release
	return gofuse.OK
}

// TestFUSEInFlight: requests being answered are the queue depth; once
// answered they are counted by opcode and result.
func TestFUSEInFlight(t *testing.T) {
	reg, _, scrape := serve(t)
	inner := &blockingFS{RawFileSystem: gofuse.NewDefaultRawFileSystem(),
		arrived: make(chan struct{}), release: make(chan struct{})}
	fs := metrics.FUSE(inner, metrics.NewFUSEOps(reg))
	const n = 3
	done := make(chan gofuse.Status, n)
	for range n {
		go func() { done <- fs.GetAttr(nil, &gofuse.GetAttrIn{}, &gofuse.AttrOut{}) }()
	}
	for range n {
		select {
		case <-inner.arrived:
		case <-time.After(time.Minute): // only a hang gets here
			t.Fatal("the requests did not reach the file system")
		}
	}
	f := scrape()
	want(t, f, n, "tessera_fuse_requests_in_flight")
	if _, ok := f.Value("tessera_fuse_requests_total", "op", "getattr"); ok {
		t.Errorf("requests counted before they were answered")
	}
	close(inner.release)
	for range n {
		if st := <-done; st != gofuse.OK {
			t.Fatalf("getattr through the decorator: %v", st)
		}
	}
	// An opcode the file system does not implement answers ENOSYS, counted
	// as an error.
	if st := fs.Mkdir(nil, &gofuse.MkdirIn{}, "d", &gofuse.EntryOut{}); st != gofuse.ENOSYS {
		t.Fatalf("mkdir on the default file system: %v", st)
	}
	f = scrape()
	want(t, f, 0, "tessera_fuse_requests_in_flight")
	want(t, f, n, "tessera_fuse_requests_total", "op", "getattr", "result", "ok")
	want(t, f, n, "tessera_fuse_request_duration_seconds", "op", "getattr")
	want(t, f, 1, "tessera_fuse_requests_total", "op", "mkdir", "result", "error")
}
