package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v3"
	"github.com/versity/versitygw/embedgw"
	"github.com/versity/versitygw/s3api"
	"github.com/versity/versitygw/s3api/utils"
	"github.com/versity/versitygw/s3err"

	"tessera/internal/vfs"
)

// ServerConfig is how an S3 endpoint listens.
type ServerConfig struct {
	Listen string // HOST:PORT (CheckListen: a port of 0 is refused)
	// CertFile and KeyFile, when set, serve HTTPS; without them the
	// caller has checked that plain HTTP is allowed (loopback or
	// --insecure).
	CertFile, KeyFile string
	Backend           Config
	// MaxConns bounds the connections served at once (default 1024),
	// MaxRequests the requests in flight (default DefaultMaxRequests;
	// each may hold an ioChunk buffer) and MaxPerClient those from one
	// client address (default 64): past either a request gets 503
	// SlowDown.
	MaxConns, MaxRequests, MaxPerClient int
	Logger                              *slog.Logger
	// AdminDir is where the private directory of versitygw's admin
	// socket is made ("": the system's temporary directory): a data
	// directory, or a test's, so that a killed process leaves nothing
	// in /tmp.
	AdminDir string
}

// DefaultMaxRequests bounds the requests in flight; with one ioChunk
// buffer each, RequestBufferBytes is what they may hold.
const (
	DefaultMaxRequests = 128
	RequestBufferBytes = DefaultMaxRequests * ioChunk
)

// Server is a running S3 endpoint.
type Server struct {
	Addr  string
	done  chan error
	stop  context.CancelFunc
	admin string // the private directory of versitygw's admin socket
}

// Serve starts an S3 endpoint over v, finding keys with iam; it returns
// once the endpoint listens. Only one runs per process (versitygw's rule).
func Serve(ctx context.Context, v *vfs.FS, iam *IAM, cfg ServerConfig) (*Server, error) {
	if err := CheckListen(cfg.Listen); err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Backend.Logger = cfg.Logger
	be, err := NewBackend(v, iam, cfg.Backend)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1024
	}
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	cfg.MaxRequests = min(cfg.MaxRequests, cfg.MaxConns)
	if cfg.MaxPerClient <= 0 {
		cfg.MaxPerClient = 64
	}
	// versitygw serves its admin API on the S3 port unless given one of
	// its own: a socket in a private directory, which nothing calls.
	admin, err := adminDir(cfg.AdminDir)
	if err != nil {
		return nil, err
	}
	var rootKey [24]byte
	rand.Read(rootKey[:])
	ready := make(chan struct{})
	var once sync.Once
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{Addr: cfg.Listen, done: make(chan error, 1), stop: stop, admin: admin}
	gw := &embedgw.Config{
		// The root account is versitygw's own; nobody knows its secret.
		RootUserAccess:      "TESSERAROOT" + hex.EncodeToString(rootKey[:4]),
		RootUserSecret:      hex.EncodeToString(rootKey[4:]),
		Region:              "us-east-1",
		Ports:               []string{cfg.Listen},
		AdminPorts:          []string{filepath.Join(admin, "admin.sock")},
		MaxConnections:      cfg.MaxConns,
		MaxRequests:         cfg.MaxRequests,
		AdminMaxConnections: 1,
		AdminMaxRequests:    1,
		MultipartMaxParts:   MaxParts,
		CertFile:            cfg.CertFile,
		KeyFile:             cfg.KeyFile,
		Quiet:               true,
		KeepAlive:           true, // chunked bodies kept in sync: keepalive.go
		SocketPerm:          "0600",
		IAMService:          iam,
		S3Options: []s3api.Option{
			s3api.WithMiddleware("/", perClient(cfg.MaxPerClient)),
			s3api.WithMiddleware("/", syncChunkedBody()),
			s3api.WithMiddleware("/", logSignatureMismatch(cfg.Logger, cfg.Backend.Clock)),
			s3api.WithOnListen(func() { once.Do(func() { close(ready) }) }),
		},
	}
	go func() { s.done <- embedgw.RunVersityGW(sctx, be, gw) }()
	select {
	case <-ready:
	case err := <-s.done:
		os.RemoveAll(admin)
		stop()
		if err == nil {
			err = errors.New("stopped before listening")
		}
		return nil, fmt.Errorf("s3: %w", err)
	case <-ctx.Done():
		stop()
		<-s.done
		os.RemoveAll(admin)
		return nil, ctx.Err()
	}
	cfg.Logger.Info("s3: serving", "listen", cfg.Listen, "tls", cfg.CertFile != "", "root", be.root)
	go be.sweepUploads(sctx)
	return s, nil
}

// sweepUploads runs ExpireUploads every expirySweep until ctx ends.
func (b *Backend) sweepUploads(ctx context.Context) {
	if b.expiry <= 0 {
		return
	}
	t := b.clk.NewTimer(b.expirySweep())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if _, err := b.ExpireUploads(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("s3: removing abandoned multipart uploads failed", "err", err)
		}
		t.Reset(b.expirySweep())
	}
}

// CheckListen checks an S3 endpoint's listen address: HOST:PORT with a
// port from 1 to 65535. Port 0 (any free port) is refused: versitygw binds
// the address it is given and does not say which port it got, so the
// endpoint could not tell its clients where it is.
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want HOST:PORT, such as 127.0.0.1:9000", addr)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	switch {
	case err != nil:
		return fmt.Errorf("listen address %q: port %q is not a number from 1 to 65535", addr, port)
	case n == 0:
		return fmt.Errorf("listen address %q: port 0 (any free port) is not supported: the S3 server binds the address it is given and cannot report the port it got; name a port, such as 9000", addr)
	}
	return nil
}

// adminDir makes the private directory of the admin socket in parent, or
// in the system's temporary directory when parent is "" or too long a
// path for a Unix socket.
func adminDir(parent string) (string, error) {
	const sockPathMax = 107 // sun_path, with its NUL
	if parent != "" && len(filepath.Join(parent, "tessera-s3-admin-0123456789", "admin.sock")) > sockPathMax {
		parent = ""
	}
	dir, err := os.MkdirTemp(parent, "tessera-s3-admin-")
	if err != nil {
		return "", fmt.Errorf("s3: the admin socket's directory: %w", err)
	}
	return dir, nil
}

// Done reports the end of serving.
func (s *Server) Done() <-chan error { return s.done }

// Close stops serving.
func (s *Server) Close() error {
	s.stop()
	err := <-s.done
	s.done <- err
	os.RemoveAll(s.admin)
	return err
}

// perClient bounds the requests in flight from one client address: past
// max a request is answered 503 SlowDown at once.
func perClient(max int) fiber.Handler {
	var mu sync.Mutex
	inFlight := make(map[netip.Addr]int)
	return func(c fiber.Ctx) error {
		ip, err := netip.ParseAddr(c.IP())
		if err != nil {
			return c.Next()
		}
		mu.Lock()
		if inFlight[ip] >= max {
			mu.Unlock()
			// Answered here: an error returned from a middleware
			// would be versitygw's 500 InternalError.
			e := s3err.GetAPIError(s3err.ErrSlowDown)
			reqID, hostID := utils.EnsureRequestIDs(c)
			c.Response().Header.SetContentType(fiber.MIMEApplicationXML)
			return c.Status(e.HTTPStatusCode).Send(e.XMLBody(reqID, hostID))
		}
		inFlight[ip]++
		mu.Unlock()
		defer func() {
			mu.Lock()
			if inFlight[ip]--; inFlight[ip] <= 0 {
				delete(inFlight, ip)
			}
			mu.Unlock()
		}()
		return c.Next()
	}
}
