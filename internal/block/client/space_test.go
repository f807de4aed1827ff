package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/client"
	"tessera/internal/block/server"
)

func TestSpaceInfo(t *testing.T) {
	ctx := context.Background()
	dir1, dir2 := t.TempDir(), t.TempDir()
	s1, s2 := openDisk(t, dir1), openDisk(t, dir2)
	c1 := serve(t, server.New(s1, server.Options{}), client.Options{})
	c2 := serve(t, server.New(s2, server.Options{}), client.Options{})
	for i := range 20 {
		data := blocktest.Data(uint64(i), 10000)
		if err := c1.Put(ctx, block.Sum(data), data); err != nil {
			t.Fatal(err)
		}
	}
	sp1, err := c1.SpaceInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sp1.OnDisk != s1.OnDisk() || sp1.OnDisk < 20*10000 {
		t.Errorf("on disk over HTTP = %d, the store says %d, for 20 blocks of 10,000 bytes", sp1.OnDisk, s1.OnDisk())
	}
	free, size, err := s1.Space(ctx)
	if err != nil || sp1.Size != size || sp1.Free <= 0 || sp1.Free > size {
		t.Errorf("free %d size %d over HTTP; the store: free %d size %d, %v", sp1.Free, sp1.Size, free, size, err)
	}
	sp2, err := c2.SpaceInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Two stores in one temporary directory tree are on one file system.
	if sp1.FS == "" || sp1.FS != sp2.FS {
		t.Errorf("file system names %q and %q for two stores on one file system", sp1.FS, sp2.FS)
	}
	// A backend that knows only free and size (block.Spacer).
	type spacer struct {
		server.Backend
		block.Spacer
	}
	c3 := serve(t, server.New(spacer{plain{s2}, s2}, server.Options{}), client.Options{})
	sp3, err := c3.SpaceInfo(ctx)
	if err != nil || sp3.OnDisk != -1 || sp3.FS != "" || sp3.Size != sp2.Size {
		t.Errorf("space of a backend that only knows free and size: %+v, %v", sp3, err)
	}
	// One that knows nothing.
	c4 := serve(t, server.New(plain{s2}, server.Options{}), client.Options{})
	if _, err := c4.SpaceInfo(ctx); err == nil {
		t.Error("space of a backend that cannot tell it: no error")
	}
}

func TestSpaceInfoBoundsTheReply(t *testing.T) {
	for name, body := range map[string]string{
		"long name":   fmt.Sprintf(`{"free":1,"size":2,"fs":%q}`, strings.Repeat("x", block.MaxFSName+1)),
		"negative":    `{"free":-1,"size":2,"fs":"a"}`,
		"on disk < 0": `{"on_disk":-5,"free":1,"size":2}`,
	} {
		c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}), client.Options{})
		_, err := c.SpaceInfo(context.Background())
		if err == nil {
			t.Errorf("%s: reply %.60s… accepted", name, body)
			continue
		}
		if len(err.Error()) > 300 || errors.Is(err, block.ErrNotFound) {
			t.Errorf("%s: error %.100q… (%d bytes)", name, err, len(err.Error()))
		}
	}
}
