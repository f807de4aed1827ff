package fuse

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// reqCounter counts the requests of a create that the kernel sends.
type reqCounter struct {
	gofuse.RawFileSystem
	lookups, creates, getattrs atomic.Int64
}

func (c *reqCounter) Lookup(cancel <-chan struct{}, h *gofuse.InHeader, name string, out *gofuse.EntryOut) gofuse.Status {
	c.lookups.Add(1)
	return c.RawFileSystem.Lookup(cancel, h, name, out)
}

func (c *reqCounter) Create(cancel <-chan struct{}, in *gofuse.CreateIn, name string, out *gofuse.CreateOut) gofuse.Status {
	c.creates.Add(1)
	return c.RawFileSystem.Create(cancel, in, name, out)
}

func (c *reqCounter) GetAttr(cancel <-chan struct{}, in *gofuse.GetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	c.getattrs.Add(1)
	return c.RawFileSystem.GetAttr(cancel, in, out)
}

// TestRequestsPerExclusiveCreate pins what open(O_CREAT|O_EXCL) of a new
// name costs in FUSE requests (issue 29; each is a round trip to the meta
// service, and over etcd one request of etcd's): one LOOKUP (the kernel's
// atomic open looks the name up once; a name never looked up has no
// dentry, so no cached negative entry could spare it), one CREATE, and at
// most one GETATTR (of the directory, whose attributes the kernel drops
// after each create in it and asks again for its permission check).
func TestRequestsPerExclusiveCreate(t *testing.T) {
	c := &reqCounter{}
	mnt := mountWith(t, Options{Wrap: func(fs gofuse.RawFileSystem) gofuse.RawFileSystem {
		c.RawFileSystem = fs
		return c
	}})
	d := filepath.Join(mnt, "d")
	if err := syscall.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 20
	l0, c0, g0 := c.lookups.Load(), c.creates.Load(), c.getattrs.Load()
	for i := range n {
		fd, err := syscall.Open(filepath.Join(d, fmt.Sprintf("f%02d", i)), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Close(fd); err != nil {
			t.Fatal(err)
		}
	}
	lookups, creates, getattrs := c.lookups.Load()-l0, c.creates.Load()-c0, c.getattrs.Load()-g0
	t.Logf("%d exclusive creates: %d LOOKUP, %d CREATE, %d GETATTR", n, lookups, creates, getattrs)
	if lookups != n || creates != n {
		t.Errorf("%d exclusive creates sent %d LOOKUPs and %d CREATEs; want %d of each", n, lookups, creates, n)
	}
	if getattrs > n {
		t.Errorf("%d exclusive creates sent %d GETATTRs; want at most one each", n, getattrs)
	}
}
