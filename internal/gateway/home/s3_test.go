package home_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/gateway/home"
	"tessera/internal/gateway/home/hometest"
)

// versitygw is a Versity S3 Gateway with a posix backend in a temp dir,
// run by a test on 127.0.0.1 in its own process group.
type versitygw struct {
	Endpoint string // http://127.0.0.1:PORT
	Dir      string // the posix backend: a bucket is a directory in it
	KeyFile  string // "ACCESS SECRET", for access_key_file=
}

// startVersityGW starts the gateway, or skips the test when the binary is
// missing (fails under CI=true: scripts/test.sh installs it).
func startVersityGW(t *testing.T, args ...string) *versitygw {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		// scripts/deps.sh installs it in $(go env GOPATH)/bin, which need
		// not be on PATH.
		gopath := os.Getenv("GOPATH")
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
		bin = filepath.Join(gopath, "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			msg := "versitygw not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0; scripts/test.sh does)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	g := &versitygw{Dir: t.TempDir()}
	const access, secret = "tessera-test", "tessera-test-secret"
	g.KeyFile = filepath.Join(t.TempDir(), "s3key")
	if err := os.WriteFile(g.KeyFile, []byte(access+" "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The port is picked free and handed over; should another process
	// take it meanwhile, the gateway exits and is started again on another.
	for attempt := 1; ; attempt++ {
		out, exited := g.start(t, bin, access, secret, args...)
		if exited == nil {
			return g
		}
		if attempt == 3 {
			t.Fatalf("versitygw exited: %v\n%s", exited, out)
		}
		t.Logf("versitygw exited (%v), starting it again:\n%s", exited, out)
	}
}

// start runs the gateway once on a free port and waits until it listens.
// It returns the gateway's exit error and output if it exited first.
func (g *versitygw) start(t *testing.T, bin, access, secret string, args ...string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	g.Endpoint = "http://" + addr
	cmd := exec.Command(bin, append(append([]string{"--port", addr, "--access", access, "--secret", secret, "--quiet"}, args...), "posix", g.Dir)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines atomic.Value
	lines.Store("")
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			lines.Store(b.String())
		}
	}()
	exited := make(chan error, 1)
	go func() { <-copied; exited <- cmd.Wait() }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			// Listening: ours only if our process holds the listening
			// socket; another test run's gateway may have taken the port
			// between our pick and its start (then ours exits soon).
			if ownsListener(cmd.Process.Pid, addr) {
				t.Cleanup(stop)
				return "", nil
			}
		}
		select {
		case err := <-exited:
			if err == nil {
				err = fmt.Errorf("exit status 0 before listening on %s", addr)
			}
			return lines.Load().(string), err
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("versitygw did not listen on %s within a minute\n%s", addr, lines.Load())
		}
	}
}

// bucket makes a bucket (a directory of the posix backend) and returns an
// s3:// URL of prefix in it through endpoint (the gateway's own, or a
// wan.Link's in front of it).
func (g *versitygw) bucket(t *testing.T, name, prefix, endpoint string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(g.Dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	q := url.Values{"endpoint": {endpoint}, "region": {"us-east-1"}, "access_key_file": {g.KeyFile}}
	return fmt.Sprintf("s3://%s/%s?%s", name, prefix, q.Encode())
}

func TestS3Conformance(t *testing.T) {
	g := startVersityGW(t)
	n := 0
	hometest.Run(t, func(t *testing.T) home.Store {
		n++
		// A fresh prefix per subtest; the odd ones in a bucket root.
		prefix := fmt.Sprintf("p%d/home", n)
		if n%2 == 1 {
			prefix = ""
		}
		s, err := home.Open(context.Background(), g.bucket(t, fmt.Sprintf("bucket%d", n), prefix, g.Endpoint))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, hometest.Options{})
}

// TestS3ForeignLayout: objects written by another S3 tool, without
// directory markers, still read as a tree.
func TestS3ForeignLayout(t *testing.T) {
	ctx := context.Background()
	g := startVersityGW(t)
	u := g.bucket(t, "foreign", "", g.Endpoint)
	// The posix backend stores object a/b/c as the file a/b/c.
	if err := os.MkdirAll(filepath.Join(g.Dir, "foreign", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.Dir, "foreign", "a", "b", "c"), []byte("deep"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := home.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{"a", "a/b"} {
		a, err := s.Stat(ctx, p)
		if err != nil || a.Kind != home.KindDir {
			t.Fatalf("Stat(%s) = %+v, %v; want a directory", p, a, err)
		}
	}
	ents, err := s.ReadDir(ctx, "a/b")
	if err != nil || len(ents) != 1 || ents[0].Name != "c" || ents[0].Size != 4 {
		t.Fatalf("ReadDir(a/b) = %+v, %v", ents, err)
	}
	buf := make([]byte, 10)
	if n, err := s.ReadAt(ctx, "a/b/c", buf, 0); n != 4 || err != io.EOF || string(buf[:4]) != "deep" {
		t.Fatalf("ReadAt = %d %q %v", n, buf[:n], err)
	}
}

func TestS3MissingBucket(t *testing.T) {
	g := startVersityGW(t)
	q := url.Values{"endpoint": {g.Endpoint}, "access_key_file": {g.KeyFile}}
	_, err := home.Open(context.Background(), "s3://nosuchbucket/x?"+q.Encode())
	if err == nil || home.Retryable(err) {
		t.Fatalf("Open of a missing bucket: %v; want a permanent error", err)
	}
	if !strings.Contains(err.Error(), "nosuchbucket") {
		t.Fatalf("the error %q does not name the bucket", err)
	}
}

// ownsListener reports whether process pid holds a socket listening on
// addr (127.0.0.1:PORT): the socket inodes of its descriptors against
// /proc/net/tcp's listening entries.
func ownsListener(pid int, addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return false
	}
	tcp, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	listening := map[string]bool{}
	for _, line := range strings.Split(string(tcp), "\n")[1:] {
		f := strings.Fields(line)
		// local_address is HEXIP:HEXPORT, st 0A is LISTEN, inode is field 9.
		if len(f) > 9 && f[3] == "0A" && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", p)) {
			listening["socket:["+f[9]+"]"] = true
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && listening[l] {
			return true
		}
	}
	return false
}
