package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// localTarget does the same jobs as plain file operations under a
// directory (a FUSE mount): what a program on the mount's host does.
type localTarget struct{ root string }

func (t *localTarget) newClient() (client, error) { return localClient{t.root}, nil }
func (t *localTarget) close()                     {}
func (t *localTarget) describe() string {
	return fmt.Sprintf("plain file calls (pread/pwrite 1 MiB, fsync for COMMIT; untar closes without fsync, as tar does) under %s", t.root)
}

type localClient struct{ root string }

func (c localClient) p(p string) string { return filepath.Join(c.root, p) }

func (c localClient) Mkdir(p string, mode uint32) error { return os.Mkdir(c.p(p), os.FileMode(mode)) }
func (c localClient) Stat(p string) error               { _, err := os.Stat(c.p(p)); return err }
func (c localClient) Remove(p string) error             { return os.Remove(c.p(p)) }
func (c localClient) Symlink(target, p string) error    { return os.Symlink(target, c.p(p)) }
func (c localClient) IOSize() (read, write int)         { return 1 << 20, 1 << 20 }

func (c localClient) Create(p string, mode uint32) (file, error) {
	f, err := os.OpenFile(c.p(p), os.O_RDWR|os.O_CREATE|os.O_TRUNC, os.FileMode(mode))
	if err != nil {
		return nil, err
	}
	return localFile{f}, nil
}

func (c localClient) Open(p string) (file, error) {
	f, err := os.Open(c.p(p))
	if err != nil {
		return nil, err
	}
	return localFile{f}, nil
}

type localFile struct{ f *os.File }

func (f localFile) WriteAt(p []byte, off int64) error {
	_, err := f.f.WriteAt(p, off)
	return err
}
func (f localFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f localFile) Sync() error                             { return f.f.Sync() }
func (f localFile) Close() error                            { return f.f.Close() }
