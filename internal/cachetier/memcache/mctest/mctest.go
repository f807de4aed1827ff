// Package mctest starts real memcached servers for tests: child processes
// on 127.0.0.1, on free ports, killed by PID when the test ends (and by the
// kernel if the test binary dies first).
//
// A test that needs memcached is skipped, with the reason, when the binary
// is missing or will not start; set TESSERA_REQUIRE_MEMCACHED=1 (CI) to
// make that a failure instead. TESSERA_MEMCACHED names the binary
// [memcached on $PATH]; the Debian package is memcached.
package mctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"tessera/internal/backoff"
)

// Server is a running memcached.
type Server struct {
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been reaped
}

// Options tune a server; zero fields take the default in brackets.
type Options struct {
	MemoryMB int // -m [64]
	Threads  int // -t [1: tests share small machines]
	Port     int // -p [a free port]
}

// Start starts a memcached and registers its end with tb.Cleanup.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	bin := os.Getenv("TESSERA_MEMCACHED")
	if bin == "" {
		bin = "memcached"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		unavailable(tb, "memcached is not installed (apt-get install -y memcached): %v", err)
	}
	if opts.MemoryMB <= 0 {
		opts.MemoryMB = 64
	}
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	var lastErr error
	for range 3 { // a free port may be taken between probe and start
		s, err := start(path, opts)
		if err == nil {
			tb.Cleanup(s.Kill)
			return s
		}
		lastErr = err
	}
	unavailable(tb, "memcached does not start: %v", lastErr)
	return nil
}

func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("TESSERA_REQUIRE_MEMCACHED") != "" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

func start(path string, opts Options) (*Server, error) {
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0",
		"-m", strconv.Itoa(opts.MemoryMB), "-t", strconv.Itoa(opts.Threads), "-c", "256"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses to run as root otherwise
	}
	cmd := exec.Command(path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(s.done)
	}()
	// Wait until it accepts connections (a process start has no event to
	// wait on; this polls briefly).
	bo := backoff.Policy{Base: time.Millisecond}.Start() // 1 ms doubling
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("memcached %s exited: %s", s.Addr, bytes.TrimSpace(stderr.Bytes()))
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		wait := bo.Next()
		if wait > 2*time.Second {
			s.Kill()
			return nil, fmt.Errorf("memcached %s does not accept connections: %v", s.Addr, err)
		}
		time.Sleep(wait)
	}
}

// PID returns the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Kill kills the server (SIGKILL, by PID) and waits for it to exit. It may
// be called more than once.
func (s *Server) Kill() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.done
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) { return freePort() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
