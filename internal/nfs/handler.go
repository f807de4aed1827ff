package nfs

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io/fs"
	"net"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// connHandler is go-nfs's Handler for one connection: each connection
// gets its own go-nfs server (Server.serveConn), so that the file system
// it hands go-nfs knows the connection's gate, and so the credentials of
// the call being served.
type connHandler struct {
	srv  *Server
	gate *gate
	ctx  context.Context
	// callCtx is ctx with the inodes of the call go-nfs serves
	// (vfs.WithFresh: fresh), for the file system's calls.
	callCtx context.Context
	fs      *billyFS

	// The inodes met while serving one call, by path (go-nfs stats and
	// looks up the same paths several times per call, and READDIRPLUS
	// makes a handle of each entry listed). Dropped at the next call and
	// after every change.
	seq   uint64
	paths map[string]meta.Inode
	inos  map[meta.Ino]meta.Inode
}

var (
	_ gonfs.Handler        = (*connHandler)(nil)
	_ gonfs.CachingHandler = (*connHandler)(nil)
)

func newConnHandler(srv *Server, g *gate, ctx context.Context) *connHandler {
	h := &connHandler{srv: srv, gate: g, ctx: ctx}
	h.callCtx = vfs.WithFresh(ctx, h.fresh)
	h.fs = &billyFS{conn: h}
	return h
}

// cached returns the inode path p resolved to during this call.
func (h *connHandler) cached(p string) (meta.Inode, bool) {
	h.sync()
	in, ok := h.paths[p]
	return in, ok
}

// fresh returns the inode ino as this call met it (vfs.WithFresh).
func (h *connHandler) fresh(ino meta.Ino) (meta.Inode, bool) {
	h.sync()
	in, ok := h.inos[ino]
	return in, ok
}

// sync drops what an earlier call resolved.
func (h *connHandler) sync() {
	if s := h.gate.serving(); s != h.seq {
		h.seq, h.paths, h.inos = s, nil, nil
	}
}

// remember records what path p resolved to during this call.
func (h *connHandler) remember(p string, in meta.Inode) {
	h.sync()
	if h.paths == nil {
		h.paths = make(map[string]meta.Inode)
		h.inos = make(map[meta.Ino]meta.Inode)
	}
	if len(h.paths) < 1<<16 {
		h.paths[p] = in
		h.inos[in.Ino] = in
	}
}

// changed records in as the inode's attributes now, wherever this call
// met it (a change of its attributes only).
func (h *connHandler) changed(in meta.Inode) {
	h.sync()
	if _, ok := h.inos[in.Ino]; !ok {
		return
	}
	h.inos[in.Ino] = in
	for p, old := range h.paths {
		if old.Ino == in.Ino {
			h.paths[p] = in
		}
	}
}

// forget drops what this call resolved: a change happened.
func (h *connHandler) forget() { h.paths, h.inos = nil, nil }

// Mount answers MNT of the export ("/" or the --export path) or of a
// directory inside it (libnfs mounts the directory of the file it is
// given), which the caller must be able to reach.
func (h *connHandler) Mount(ctx context.Context, c net.Conn, req gonfs.MountRequest) (gonfs.MountStatus, billy.Filesystem, []gonfs.AuthFlavor) {
	flavors := []gonfs.AuthFlavor{gonfs.AuthFlavorUnix, gonfs.AuthFlavorNull}
	p := "/" + strings.Trim(string(req.Dirpath), "/")
	if p == "/" {
		p = h.srv.cfg.Export // "/" is the export, whatever its path
	}
	rel, ok := strings.CutPrefix(p, h.srv.cfg.Export)
	if !ok || (rel != "" && rel[0] != '/' && h.srv.cfg.Export != "") {
		h.srv.log.Info("nfs: mount of a path outside the export", "peer", c.RemoteAddr().String(), "export", h.srv.cfg.Export)
		return gonfs.MountStatusErrNoEnt, nil, nil
	}
	if strings.Trim(rel, "/") == "" {
		return gonfs.MountStatusOk, h.fs, flavors
	}
	in, err := h.fs.resolve(rel)
	switch {
	case errors.Is(err, syscall.EACCES):
		return gonfs.MountStatusErrAcces, nil, nil
	case err != nil:
		return gonfs.MountStatusErrNoEnt, nil, nil
	case !in.IsDir():
		return gonfs.MountStatusErrNotDir, nil, nil
	}
	return gonfs.MountStatusOk, &billyFS{conn: h, base: in.Ino}, flavors
}

// Change: attributes may change unless the server is read-only.
func (h *connHandler) Change(billy.Filesystem) billy.Change {
	if h.srv.cfg.ReadOnly {
		return nil
	}
	return h.fs
}

// FSStat reports the room for new data (vfs.FS.StatFS).
func (h *connHandler) FSStat(ctx context.Context, _ billy.Filesystem, s *gonfs.FSStat) error {
	st, err := h.srv.v.StatFS(h.ctx)
	if err != nil {
		return pathErr("fsstat", err)
	}
	b := uint64(st.Bsize)
	s.TotalSize, s.FreeSize, s.AvailableSize = st.Blocks*b, st.Bfree*b, st.Bavail*b
	s.TotalFiles, s.FreeFiles, s.AvailableFiles = st.Files, st.Ffree, st.Ffree
	return nil
}

// ToHandle makes the handle of the inode path names.
func (h *connHandler) ToHandle(fs billy.Filesystem, path []string) []byte {
	b, ok := fs.(*billyFS)
	if !ok {
		b = h.fs
	}
	in, err := b.resolve(b.Join(path...))
	if err != nil {
		// go-nfs has just found the path; a handle of nothing is stale
		// at its first use.
		return h.srv.handle(0, 0)
	}
	return h.srv.handle(in.Ino, in.Gen)
}

// FromHandle checks a handle (this cluster and export, an inode that
// exists with the generation named) and returns a path starting at its
// inode. Anything else is stale.
func (h *connHandler) FromHandle(b []byte) (billy.Filesystem, []string, error) {
	fh, err := decodeHandle(b)
	if err != nil {
		return nil, nil, err
	}
	if fh.cluster != h.srv.cfg.ClusterID || fh.export != uint64(h.srv.exportIno) {
		return nil, nil, errForeignHandle
	}
	if fh.ino == h.srv.exportIno {
		return h.fs, []string{}, nil
	}
	in, err := h.srv.v.GetAttr(h.ctx, fh.ino)
	if err != nil {
		return nil, nil, pathErr("handle", err)
	}
	if in.Gen != fh.gen || in.Nlink == 0 {
		return nil, nil, errStale
	}
	p := inoComponent(fh.ino)
	h.remember(p, in)
	return h.fs, []string{p}, nil
}

// errStale: the handle's inode is gone (or was replaced: another
// generation).
var errStale = errors.New("stale file handle")

// InvalidateHandle: handles are not kept, nothing to forget.
func (h *connHandler) InvalidateHandle(billy.Filesystem, []byte) error { return nil }

// HandleLimit bounds the entries go-nfs puts in one READDIR reply (half
// of it); handles themselves are not kept.
func (h *connHandler) HandleLimit() int { return 1 << 12 }

// VerifierFor keeps a listing go-nfs made and names it by a verifier, so
// that the next pages of READDIR and READDIRPLUS come from the same
// listing (cookies are positions in it).
func (h *connHandler) VerifierFor(path string, contents []fs.FileInfo) uint64 {
	return h.srv.listings.put(h.gate, path, contents)
}

// DataForVerifier returns the listing VerifierFor named, if still kept.
func (h *connHandler) DataForVerifier(path string, verifier uint64) []fs.FileInfo {
	return h.srv.listings.get(h.gate, path, verifier)
}

// handle encodes the handle of ino.
func (s *Server) handle(ino meta.Ino, gen uint64) []byte {
	return fileHandle{cluster: s.cfg.ClusterID, export: uint64(s.exportIno), ino: ino, gen: gen}.encode()
}

// listings keeps the last directory listings handed to each connection,
// a few per connection, for the pages after the first.
type listings struct {
	mu   sync.Mutex
	next uint64
	m    map[*gate][]listing
}

type listing struct {
	path     string
	verifier uint64
	ents     []fs.FileInfo
}

// perConn is how many listings a connection keeps.
const perConn = 4

func (l *listings) put(g *gate, path string, ents []fs.FileInfo) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[*gate][]listing)
	}
	l.next++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], l.next)
	sum := sha256.Sum256(append(b[:], path...))
	v := binary.BigEndian.Uint64(sum[:]) | 1 // never 0: 0 means none
	ls := append(l.m[g], listing{path: path, verifier: v, ents: ents})
	if len(ls) > perConn {
		ls = ls[len(ls)-perConn:]
	}
	l.m[g] = ls
	return v
}

func (l *listings) get(g *gate, path string, v uint64) []fs.FileInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.m[g] {
		if e.verifier == v && e.path == path {
			return e.ents
		}
	}
	return nil
}

func (l *listings) drop(g *gate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, g)
}
