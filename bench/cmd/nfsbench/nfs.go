package main

import (
	"fmt"
	"io"
	"net"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"
)

// WRITE's stable_how (RFC 1813 3.3.7).
const (
	unstable = 0
	fileSync = 2
)

// nfsTarget is where the NFS client connects: one host, the NFS port and
// the MOUNT port (the same for Tessera, which answers both on one port).
type nfsTarget struct {
	host             string
	nfsPort, mntPort int
	export           string
	uid, gid         uint32
	stable           uint32 // WRITE's stable_how
	maxIO            uint32 // cap on READ/WRITE sizes (0: the server's preferred sizes)

	mountOnce      sync.Once
	mountErr       error
	rootFH         []byte
	rtpref, wtpref uint32

	connsMu sync.Mutex
	conns   []*rpc.Client
}

// parseNFSAddr splits HOST:PORT[,MOUNTPORT].
func parseNFSAddr(s string) (host string, nfsPort, mntPort int, err error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, 0, fmt.Errorf("-nfs %q: want HOST:PORT or HOST:NFSPORT,MOUNTPORT: %v", s, err)
	}
	ports := strings.SplitN(p, ",", 2)
	if nfsPort, err = strconv.Atoi(ports[0]); err != nil || nfsPort <= 0 || nfsPort > 65535 {
		return "", 0, 0, fmt.Errorf("-nfs %q: NFS port %q is not a port number", s, ports[0])
	}
	mntPort = nfsPort
	if len(ports) == 2 {
		if mntPort, err = strconv.Atoi(ports[1]); err != nil || mntPort <= 0 || mntPort > 65535 {
			return "", 0, 0, fmt.Errorf("-nfs %q: MOUNT port %q is not a port number", s, ports[1])
		}
	}
	return h, nfsPort, mntPort, nil
}

func (t *nfsTarget) auth() rpc.Auth { return rpc.NewAuthUnix("nfsbench", t.uid, t.gid).Auth() }

// mount asks MOUNT for the export's root handle and FSINFO for the
// preferred transfer sizes, once.
func (t *nfsTarget) mount() error {
	t.mountOnce.Do(func() { t.mountErr = t.mountNow() })
	return t.mountErr
}

func (t *nfsTarget) mountNow() error {
	mc, err := nfsc.DialServiceAtPort(t.host, t.mntPort)
	if err != nil {
		return fmt.Errorf("dial MOUNT at %s:%d: %w", t.host, t.mntPort, err)
	}
	defer mc.Close()
	res, err := mc.Call(&struct {
		rpc.Header
		Dirpath string
	}{rpc.Header{Rpcvers: 2, Prog: nfsc.MountProg, Vers: nfsc.MountVers, Proc: nfsc.MountProc3MNT, Cred: t.auth(), Verf: rpc.AuthNull}, t.export})
	if err != nil {
		return fmt.Errorf("MNT %s at %s:%d: %w", t.export, t.host, t.mntPort, err)
	}
	st, err := xdr.ReadUint32(res)
	if err != nil {
		return fmt.Errorf("MNT %s: reply: %w", t.export, err)
	}
	if st != nfsc.MNT3Ok {
		return fmt.Errorf("MNT %s: mountstat3 %d", t.export, st)
	}
	if t.rootFH, err = xdr.ReadOpaque(res); err != nil {
		return fmt.Errorf("MNT %s: reply handle: %w", t.export, err)
	}
	c, err := t.connect()
	if err != nil {
		return err
	}
	nc := c.(*nfsClient)
	res, err = nc.call(&struct {
		rpc.Header
		FH []byte
	}{nc.hdr(nfsc.NFSProc3FSInfo), t.rootFH})
	if err != nil {
		return fmt.Errorf("FSINFO: %w", err)
	}
	var info nfsc.FSInfo
	if err := xdr.Read(res, &info); err != nil {
		return fmt.Errorf("FSINFO: reply: %w", err)
	}
	t.rtpref, t.wtpref = info.RTPref, info.WTPref
	if t.maxIO > 0 {
		t.rtpref, t.wtpref = min(t.rtpref, t.maxIO), min(t.wtpref, t.maxIO)
	}
	if t.rtpref == 0 || t.wtpref == 0 {
		return fmt.Errorf("FSINFO: preferred read/write sizes %d/%d", info.RTPref, info.WTPref)
	}
	return nil
}

// connect opens one more connection (each worker has its own: go-nfs
// serves one call at a time per connection).
func (t *nfsTarget) newClient() (client, error) {
	if err := t.mount(); err != nil {
		return nil, err
	}
	return t.connect()
}

func (t *nfsTarget) connect() (client, error) {
	c, err := nfsc.DialServiceAtPort(t.host, t.nfsPort)
	if err != nil {
		return nil, fmt.Errorf("dial NFS at %s:%d: %w", t.host, t.nfsPort, err)
	}
	t.connsMu.Lock()
	t.conns = append(t.conns, c)
	t.connsMu.Unlock()
	return &nfsClient{t: t, c: c, auth: t.auth(), dirs: map[string][]byte{"": t.rootFH, ".": t.rootFH}}, nil
}

func (t *nfsTarget) close() {
	t.connsMu.Lock()
	defer t.connsMu.Unlock()
	for _, c := range t.conns {
		c.Close()
	}
}

func (t *nfsTarget) describe() string {
	return fmt.Sprintf("go-nfs-client NFSv3 %s:%d (mount port %d), rsize %d wsize %d, writes %s",
		t.host, t.nfsPort, t.mntPort, t.rtpref, t.wtpref, map[uint32]string{unstable: "UNSTABLE+COMMIT", fileSync: "FILE_SYNC+COMMIT"}[t.stable])
}

// nfsClient is one connection. Directory handles are cached by path (the
// benchmark is the only writer), so an operation on DIR/NAME is one call.
type nfsClient struct {
	t    *nfsTarget
	c    *rpc.Client
	auth rpc.Auth
	dirs map[string][]byte
}

func (c *nfsClient) hdr(proc uint32) rpc.Header {
	return rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: proc, Cred: c.auth, Verf: rpc.AuthNull}
}

// call sends one call and returns the reply after its nfsstat3, or the error.
func (c *nfsClient) call(args any) (io.ReadSeeker, error) {
	res, err := c.c.Call(args)
	if err != nil {
		return nil, err
	}
	st, err := xdr.ReadUint32(res)
	if err != nil {
		return nil, err
	}
	return res, nfsc.NFS3Error(st)
}

// dir returns the handle of directory p, looking up what is not cached.
func (c *nfsClient) dir(p string) ([]byte, error) {
	p = strings.Trim(path.Clean("/"+p), "/")
	if fh, ok := c.dirs[p]; ok {
		return fh, nil
	}
	parent, name := path.Split(p)
	pfh, err := c.dir(parent)
	if err != nil {
		return nil, err
	}
	fh, err := c.lookup(pfh, name)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", p, err)
	}
	c.dirs[p] = fh
	return fh, nil
}

func (c *nfsClient) lookup(dirFH []byte, name string) ([]byte, error) {
	res, err := c.call(&struct {
		rpc.Header
		What nfsc.Diropargs3
	}{c.hdr(nfsc.NFSProc3Lookup), nfsc.Diropargs3{FH: dirFH, Filename: name}})
	if err != nil {
		return nil, err
	}
	fh, err := xdr.ReadOpaque(res)
	if err != nil {
		return nil, err
	}
	return fh, nil
}

func (c *nfsClient) split(p string) ([]byte, string, error) {
	parent, name := path.Split(strings.Trim(path.Clean("/"+p), "/"))
	fh, err := c.dir(parent)
	return fh, name, err
}

func (c *nfsClient) Mkdir(p string, mode uint32) error {
	pfh, name, err := c.split(p)
	if err != nil {
		return err
	}
	res, err := c.call(&struct {
		rpc.Header
		Where nfsc.Diropargs3
		Attrs nfsc.Sattr3
	}{c.hdr(nfsc.NFSProc3Mkdir), nfsc.Diropargs3{FH: pfh, Filename: name}, nfsc.Sattr3{Mode: nfsc.SetMode{SetIt: true, Mode: mode}}})
	if err != nil {
		return fmt.Errorf("mkdir %s: %w", p, err)
	}
	var ok nfsc.PostOpFH3
	if err := xdr.Read(res, &ok); err != nil {
		return fmt.Errorf("mkdir %s: reply: %w", p, err)
	}
	if ok.IsSet {
		c.dirs[strings.Trim(path.Clean("/"+p), "/")] = ok.FH
	}
	return nil
}

func (c *nfsClient) create(p string, mode uint32) ([]byte, error) {
	pfh, name, err := c.split(p)
	if err != nil {
		return nil, err
	}
	type how struct {
		Mode uint32 // UNCHECKED
		Attr nfsc.Sattr3
	}
	res, err := c.call(&struct {
		rpc.Header
		Where nfsc.Diropargs3
		HW    how
	}{c.hdr(nfsc.NFSProc3Create), nfsc.Diropargs3{FH: pfh, Filename: name}, how{Attr: nfsc.Sattr3{Mode: nfsc.SetMode{SetIt: true, Mode: mode}}}})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	var ok nfsc.PostOpFH3
	if err := xdr.Read(res, &ok); err != nil {
		return nil, fmt.Errorf("create %s: reply: %w", p, err)
	}
	if !ok.IsSet {
		pfh, name, _ := c.split(p)
		return c.lookup(pfh, name)
	}
	return ok.FH, nil
}

func (c *nfsClient) Create(p string, mode uint32) (file, error) {
	fh, err := c.create(p, mode)
	if err != nil {
		return nil, err
	}
	return &nfsFile{c: c, fh: fh, name: p}, nil
}

func (c *nfsClient) Open(p string) (file, error) {
	pfh, name, err := c.split(p)
	if err != nil {
		return nil, err
	}
	fh, err := c.lookup(pfh, name)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", p, err)
	}
	return &nfsFile{c: c, fh: fh, name: p}, nil
}

// Stat is LOOKUP of the name in its (cached) directory: the reply carries
// the attributes, as a stat through a kernel client with a cold cache costs.
func (c *nfsClient) Stat(p string) error {
	pfh, name, err := c.split(p)
	if err != nil {
		return err
	}
	if _, err := c.lookup(pfh, name); err != nil {
		return fmt.Errorf("lookup %s: %w", p, err)
	}
	return nil
}

func (c *nfsClient) Remove(p string) error {
	pfh, name, err := c.split(p)
	if err != nil {
		return err
	}
	if _, err := c.call(&struct {
		rpc.Header
		What nfsc.Diropargs3
	}{c.hdr(nfsc.NFSProc3Remove), nfsc.Diropargs3{FH: pfh, Filename: name}}); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

func (c *nfsClient) Symlink(target, p string) error {
	pfh, name, err := c.split(p)
	if err != nil {
		return err
	}
	if _, err := c.call(&struct {
		rpc.Header
		Link  nfsc.Diropargs3
		Sattr nfsc.Sattr3
		Data  string
	}{c.hdr(nfsc.NFSProc3Symlink), nfsc.Diropargs3{FH: pfh, Filename: name}, nfsc.Sattr3{}, target}); err != nil {
		return fmt.Errorf("symlink %s: %w", p, err)
	}
	return nil
}

func (c *nfsClient) IOSize() (read, write int) { return int(c.t.rtpref), int(c.t.wtpref) }

// nfsFile is a file handle: stateless READ/WRITE by handle, COMMIT at Sync.
type nfsFile struct {
	c     *nfsClient
	fh    []byte
	name  string
	dirty atomic.Bool // written since the last COMMIT
}

func (f *nfsFile) WriteAt(p []byte, off int64) error {
	for len(p) > 0 {
		n := min(len(p), int(f.c.t.wtpref))
		res, err := f.c.call(&struct {
			rpc.Header
			FH       []byte
			Offset   uint64
			Count    uint32
			How      uint32
			Contents []byte
		}{f.c.hdr(nfsc.NFSProc3Write), f.fh, uint64(off), uint32(n), f.c.t.stable, p[:n]})
		if err != nil {
			return fmt.Errorf("write %s at %d: %w", f.name, off, err)
		}
		var ok struct {
			Wcc   nfsc.WccData
			Count uint32
		}
		if err := xdr.Read(res, &ok); err != nil {
			return fmt.Errorf("write %s: reply: %w", f.name, err)
		}
		if ok.Count == 0 || int(ok.Count) > n {
			return fmt.Errorf("write %s at %d: server wrote %d of %d bytes", f.name, off, ok.Count, n)
		}
		p, off = p[ok.Count:], off+int64(ok.Count)
		f.dirty.Store(true)
	}
	return nil
}

func (f *nfsFile) ReadAt(p []byte, off int64) (int, error) {
	n := min(len(p), int(f.c.t.rtpref))
	res, err := f.c.call(&struct {
		rpc.Header
		FH     []byte
		Offset uint64
		Count  uint32
	}{f.c.hdr(nfsc.NFSProc3Read), f.fh, uint64(off), uint32(n)})
	if err != nil {
		return 0, fmt.Errorf("read %s at %d: %w", f.name, off, err)
	}
	var ok struct {
		Attr  nfsc.PostOpAttr
		Count uint32
		EOF   uint32
	}
	if err := xdr.Read(res, &ok); err != nil {
		return 0, fmt.Errorf("read %s: reply: %w", f.name, err)
	}
	data, err := xdr.ReadOpaque(res)
	if err != nil {
		return 0, fmt.Errorf("read %s: reply data: %w", f.name, err)
	}
	if len(data) > n {
		return 0, fmt.Errorf("read %s: server sent %d bytes for %d asked", f.name, len(data), n)
	}
	k := copy(p, data)
	if ok.EOF != 0 && k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// Sync is COMMIT of the whole file (a no-op for the data of FILE_SYNC writes).
func (f *nfsFile) Sync() error {
	if _, err := f.c.call(&struct {
		rpc.Header
		FH     []byte
		Offset uint64
		Count  uint32
	}{f.c.hdr(nfsc.NFSProc3Commit), f.fh, 0, 0}); err != nil {
		return fmt.Errorf("commit %s: %w", f.name, err)
	}
	f.dirty.Store(false)
	return nil
}

// Close commits what was written since the last COMMIT, as a kernel client
// does at close (close-to-open consistency).
func (f *nfsFile) Close() error {
	if !f.dirty.Load() {
		return nil
	}
	return f.Sync()
}
