package nfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"

	gonfs "github.com/willscott/go-nfs"

	"tessera/internal/meta"
	"tessera/internal/ratelog"
	"tessera/internal/vfs"
)

// Squash says whose identity a caller's AUTH_SYS uid and gid are taken as.
type Squash string

// Squash modes: root (the default) maps uid 0 to Anonymous, all maps every
// caller to it, none trusts the credentials as sent.
const (
	SquashRoot Squash = "root"
	SquashAll  Squash = "all"
	SquashNone Squash = "none"
)

// Anonymous is the uid and gid of a squashed caller and of AUTH_NONE.
const Anonymous = 65534

// Config is what a Server serves and how.
type Config struct {
	// ClusterID goes into every file handle: a handle of another
	// cluster is stale here (cmd/tessera derives it from the CA).
	ClusterID uint64
	// Export is the directory served as the client's root ("" or "/":
	// the file system's root), a path resolved at start.
	Export   string
	Squash   Squash
	Allow    []netip.Prefix // clients allowed to connect; nil: any
	ReadOnly bool
	// MaxConns bounds the connections open at once, MaxConnsPerIP those
	// of one client address (defaults 256 and 16). Each connection has
	// at most maxCallsPerConn calls of at most maxRecordSize in flight.
	MaxConns, MaxConnsPerIP int
	// MaxInFlight bounds the bytes of the calls in flight on all
	// connections (default DefaultInFlight); a connection past it waits
	// before its next record is read.
	MaxInFlight int64
	Logger      *slog.Logger
}

// Server serves NFSv3 and MOUNT on one listener over a vfs.FS.
type Server struct {
	cfg       Config
	v         *vfs.FS
	log       *slog.Logger
	exportIno meta.Ino
	verifier  [8]byte
	listings  listings
	inFlight  *budget
	refused   ratelog.Limiter
	badLog    ratelog.Limiter

	// ioHook, if set (tests), is called before each READ, WRITE or
	// COMMIT the gate serves, with its procedure.
	ioHook func(proc uint32)

	mu    sync.Mutex
	open  int
	peers map[netip.Addr]int
	conns map[*gate]struct{}
	wg    sync.WaitGroup
}

// New resolves the export and returns the server. verifier is the write
// verifier: it must differ at every start of the process, so that clients
// resend the UNSTABLE writes a restart may have lost (write.go).
func New(ctx context.Context, v *vfs.FS, cfg Config, verifier [8]byte) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.MaxConnsPerIP <= 0 {
		cfg.MaxConnsPerIP = 16
	}
	switch cfg.Squash {
	case "":
		cfg.Squash = SquashRoot
	case SquashRoot, SquashAll, SquashNone:
	default:
		return nil, fmt.Errorf("nfs: squash %q: want root, all or none", cfg.Squash)
	}
	quietLibrary.Do(func() {
		// go-nfs logs with the standard logger, paths from the network
		// among it; this package logs what an operator needs.
		gonfs.SetLogger(&gonfs.DefaultLogger{Level: gonfs.PanicLevel})
	})
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultInFlight
	}
	// An identity that may only read: every change is refused as a
	// read-only server's (NFS3ERR_ROFS), not at the meta service (EACCES).
	cfg.ReadOnly = cfg.ReadOnly || v.IdentityReadOnly()
	cfg.Export = "/" + strings.Trim(cfg.Export, "/")
	s := &Server{inFlight: newBudget(cfg.MaxInFlight), cfg: cfg, v: v, log: cfg.Logger, verifier: verifier, peers: make(map[netip.Addr]int), conns: make(map[*gate]struct{})}
	ino := meta.RootIno
	for _, c := range split(cfg.Export) {
		in, err := v.Lookup(ctx, vfs.Root, ino, c)
		if err != nil {
			return nil, fmt.Errorf("nfs: export %s: %w", cfg.Export, err)
		}
		if !in.IsDir() {
			return nil, fmt.Errorf("nfs: export %s: %w", cfg.Export, syscall.ENOTDIR)
		}
		ino = in.Ino
	}
	if cfg.Export == "/" {
		s.cfg.Export = ""
	}
	s.exportIno = ino
	return s, nil
}

var quietLibrary sync.Once

// squash maps the credentials of a call as Config.Squash says.
func (s *Server) squash(flavor uint32, c vfs.Cred) vfs.Cred {
	anon := vfs.Cred{Uid: Anonymous, Gid: Anonymous}
	switch {
	case flavor != authSys, s.cfg.Squash == SquashAll:
		return anon
	case s.cfg.Squash == SquashRoot && c.Uid == 0:
		return anon
	}
	return c
}

// Serve accepts connections on ln until it is closed or ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				s.closeAll()
				s.wg.Wait()
				return nil
			}
			return err
		}
		peer, ok := s.admit(c)
		if !ok {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.left(peer)
			s.serveConn(ctx, c)
		}()
	}
}

// admit checks a new connection against --allow and the caps.
func (s *Server) admit(c net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	peer := ap.Addr().Unmap()
	if s.cfg.Allow != nil && !allowed(s.cfg.Allow, peer) {
		s.refused.Log(s.log, slog.LevelWarn, "nfs: refusing a client outside --allow", "peer", peer.String())
		return peer, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open >= s.cfg.MaxConns || s.peers[peer] >= s.cfg.MaxConnsPerIP {
		s.refused.Log(s.log, slog.LevelWarn, "nfs: refusing a connection: too many open", "peer", peer.String(), "from_peer", s.peers[peer], "open", s.open)
		return peer, false
	}
	s.open++
	s.peers[peer]++
	return peer, true
}

func allowed(nets []netip.Prefix, a netip.Addr) bool {
	for _, p := range nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (s *Server) left(peer netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.peers[peer]--; s.peers[peer] <= 0 {
		delete(s.peers, peer)
	}
}

// serveConn serves one connection with a go-nfs server of its own.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := newGate(cctx, c, s.squash, s.inFlight)
	g.exportPath = "/" + strings.TrimPrefix(s.cfg.Export, "/")
	s.mu.Lock()
	s.conns[g] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, g)
		s.mu.Unlock()
		s.listings.drop(g)
		g.Close()
	}()
	h := newConnHandler(s, g, cctx)
	g.serveIO = h.serveIO
	srv := &gonfs.Server{Handler: h, ID: s.verifier, Context: cctx}
	ln := &oneConn{c: g, done: make(chan struct{})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	// go-nfs stops reading at a bad record or a closed connection, but
	// closes the connection only at a clean end: the gate says when
	// either happened.
	<-g.dead
	if err := g.readErr(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) {
		// The error names sizes and fields, never the peer's bytes.
		s.badLog.Log(s.log, slog.LevelWarn, "nfs: closing a connection after a bad record", "peer", c.RemoteAddr().String(), "err", err)
	}
	g.Close()
	close(ln.done)
	<-served
	cancel()
	g.waitCalls()
}

// closeAll closes every connection (the server stops).
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for g := range s.conns {
		g.Close()
	}
}

// Open reports the connections open (for tests and status).
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// oneConn is a listener that yields one connection, then waits until the
// server is done with it before saying it is closed itself.
type oneConn struct {
	c    *gate
	once sync.Once
	done chan struct{}
}

func (l *oneConn) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.c.LocalAddr() }
