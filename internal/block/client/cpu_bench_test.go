package client_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/client"
	"tessera/internal/block/server"
)

// The block server of BenchmarkPutTLSServerCPU runs in a child process (this
// test binary again, TestBlockdChild), so that its CPU time is its own:
// these name the child's directory and, optionally, a CPU profile file.
const (
	childDirEnv  = "TESSERA_BENCH_BLOCKD_DIR"
	childProfEnv = "TESSERA_BENCH_BLOCKD_PROFILE"
)

// TestBlockdChild is the block server of BenchmarkPutTLSServerCPU: it
// skips unless started by it. It serves TLS on 127.0.0.1 from the
// credentials and store in $TESSERA_BENCH_BLOCKD_DIR, prints its address
// and serves until its standard input closes.
func TestBlockdChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("the block server of BenchmarkPutTLSServerCPU")
	}
	cert, key := auth.CertFiles(dir, "blockd")
	creds, err := auth.LoadCredentials(cert, key, filepath.Join(dir, auth.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	st := openDisk(t, filepath.Join(dir, "store"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewHTTPServer(ln.Addr().String(), server.New(st, server.Options{Creds: creds}), slog.New(slog.DiscardHandler))
	go srv.Serve(server.Listener(ln, creds))
	if p := os.Getenv(childProfEnv); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("addr=%s\n", ln.Addr())
	buf := make([]byte, 1)
	os.Stdin.Read(buf) // EOF when the benchmark is done
	srv.Close()
}

// procCPU returns the user and system CPU time of process pid.
func procCPU(t testing.TB, pid int) (user, sys time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's closing parenthesis: state is field 3;
	// utime and stime are fields 14 and 15, in clock ticks.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(ut) * tick, time.Duration(st) * tick
}

// BenchmarkPutTLSServerCPU puts 64 MiB of new 1 MiB blocks (the multi-site
// benchmark's block size), 4 at a time, over TLS to a real block server
// (disk store, fsync) in another process, and reports that server's CPU
// per 64 MiB: what a block server spends receiving, verifying and storing
// a 64 MiB write. Set TESSERA_BENCH_BLOCKD_PROFILE to profile the server.
//
// Compare builds in alternation, and mind the order: on an ext4 without a
// journal (the benchmark machine's), creating a file scans past the inodes
// freed in the last minutes, so each run (whose temporary store is then
// removed) makes the next one's Puts dearer.
func BenchmarkPutTLSServerCPU(b *testing.B) {
	const (
		blockSize = 1 << 20
		blocks    = 64
		parallel  = 4
	)
	dir := b.TempDir()
	ca, err := auth.NewCA("bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	if err := ca.Save(dir); err != nil {
		b.Fatal(err)
	}
	issue := func(name string, role auth.Role) (certPEM, keyPEM []byte) {
		cp, kp, err := ca.Issue(auth.Request{Name: name, Role: role, Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return cp, kp
	}
	cp, kp := issue("blockd", auth.RoleBlockd)
	cert, key := auth.CertFiles(dir, "blockd")
	if err := os.WriteFile(cert, cp, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(key, kp, 0o600); err != nil {
		b.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestBlockdChild$", "-test.v")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	var addr string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "addr="); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		b.Fatal("the block server did not start")
	}
	go func() {
		for sc.Scan() {
		}
	}()

	cp, kp = issue("mount", auth.RoleClientRW)
	kc, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		b.Fatal(err)
	}
	rw, err := auth.NewCredentials(kc, ca.PEM)
	if err != nil {
		b.Fatal(err)
	}
	tr := client.NewTLSTransport(rw)
	defer tr.CloseIdleConnections()
	c := client.New(addr, client.Options{Creds: rw, Transport: tr})
	ctx := context.Background()

	data := make([][]byte, blocks)
	for i := range data {
		data[i] = make([]byte, blockSize, blockSize+16<<10)
		for j := range data[i] {
			data[i][j] = byte(j*7 + j>>12 + i*31)
		}
	}
	put := func(round int) {
		hs := make([]block.Hash, blocks)
		for i := range data {
			copy(data[i], fmt.Sprintf("round %d block %d", round, i))
			hs[i] = block.Sum(data[i])
		}
		var wg sync.WaitGroup
		next := make(chan int)
		for range parallel {
			wg.Go(func() {
				for i := range next {
					if err := c.Put(ctx, hs[i], data[i]); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for i := range data {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	put(-1) // connections and handshakes, buffers
	pid := cmd.Process.Pid
	var user, sys time.Duration
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.SetBytes(blocks * blockSize)
	for i := 0; b.Loop(); i++ {
		u0, s0 := procCPU(b, pid)
		put(i)
		u1, s1 := procCPU(b, pid)
		user += u1 - u0
		sys += s1 - s0
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(user+sys), "srv-cpu-ms/op")
	b.ReportMetric(ms(user), "srv-user-ms/op")
	b.ReportMetric(ms(sys), "srv-sys-ms/op")
	cl := time.Duration(syscall.TimevalToNsec(ru1.Utime)+syscall.TimevalToNsec(ru1.Stime)) -
		time.Duration(syscall.TimevalToNsec(ru0.Utime)+syscall.TimevalToNsec(ru0.Stime))
	b.ReportMetric(ms(cl), "client-cpu-ms/op")
}
