// Command tlscost measures what TLS alone costs on this machine: it sends
// the same bytes over a loopback TCP connection, plain and with TLS 1.3
// (what Go negotiates here, AES-GCM with AES-NI), in one process, and prints
// the CPU-seconds of both ends per GiB. bench/tls.sh's cluster figures carry
// this cost plus what TLS changes around it (no sendfile, no SO_RCVLOWAT).
//
//	tlscost [-size 1G] [-write 32768] [-rounds 2]
//
// Output, one line per round and mode:
//
//	mode=tls round=1 bytes=1073741824 cpu_s=1.36 cpu_s_per_gib=1.36 wall_s=5.6 suite=TLS_AES_128_GCM_SHA256
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"syscall"
	"time"

	"tessera/internal/block/tlsconn"
)

func main() {
	size := flag.Int64("size", 1<<30, "bytes to send per round and mode")
	write := flag.Int("write", 32<<10, "bytes per Write call (io.Copy's buffer is 32 KiB)")
	rounds := flag.Int("rounds", 2, "rounds, each plain then TLS")
	flag.Parse()
	if *size <= 0 || *write <= 0 || *rounds <= 0 {
		fmt.Fprintln(os.Stderr, "tlscost: -size, -write and -rounds must be positive")
		os.Exit(2)
	}
	cert, err := selfSigned()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlscost:", err)
		os.Exit(1)
	}
	for r := 1; r <= *rounds; r++ {
		for _, mode := range []string{"plain", "tls", "tlsconn"} {
			cpu, wall, suite, err := send(mode, cert, *size, *write)
			if err != nil {
				fmt.Fprintf(os.Stderr, "tlscost: %s round %d: %v\n", mode, r, err)
				os.Exit(1)
			}
			fmt.Printf("mode=%s round=%d bytes=%d cpu_s=%.2f cpu_s_per_gib=%.2f wall_s=%.1f suite=%s\n",
				mode, r, *size, cpu, cpu*float64(1<<30)/float64(*size), wall.Seconds(), suite)
		}
	}
}

// send copies size bytes from a client to a server on 127.0.0.1 in writes of
// write bytes and returns the process's CPU-seconds, the wall time and the
// cipher suite (tls; "-" plain).
func send(mode string, cert tls.Certificate, size int64, write int) (cpu float64, wall time.Duration, suite string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, "", err
	}
	defer ln.Close()
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		switch mode {
		case "tls":
			c = tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
		case "tlsconn":
			c = tlsconn.Server(c, tlsconn.Config(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}))
		}
		n, err := io.Copy(io.Discard, c)
		if err == nil && n != size {
			err = fmt.Errorf("server received %d bytes, want %d", n, size)
		}
		got <- err
	}()
	suite = "-"
	c0, t0 := cpuSeconds(), time.Now()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, 0, "", err
	}
	if mode != "plain" {
		pool := x509.NewCertPool()
		leaf, _ := x509.ParseCertificate(cert.Certificate[0])
		pool.AddCert(leaf)
		cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
		if mode == "tlsconn" {
			c, cfg = tlsconn.New(c), tlsconn.Config(cfg)
		}
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			tc.Close()
			return 0, 0, "", fmt.Errorf("handshake: %w", err)
		}
		suite = tls.CipherSuiteName(tc.ConnectionState().CipherSuite)
		c = tc
	}
	buf := make([]byte, write)
	for left := size; left > 0; {
		n := int64(len(buf))
		if n > left {
			n = left
		}
		uncork := tlsconn.Cork(c)
		_, err := c.Write(buf[:n])
		if err == nil {
			err = uncork()
		}
		if err != nil {
			c.Close()
			return 0, 0, "", fmt.Errorf("write: %w", err)
		}
		left -= n
	}
	if err := c.Close(); err != nil {
		return 0, 0, "", fmt.Errorf("close: %w", err)
	}
	if err := <-got; err != nil {
		return 0, 0, "", fmt.Errorf("server: %w", err)
	}
	return cpuSeconds() - c0, time.Since(t0), suite, nil
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		return 0
	}
	return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e9
}

// selfSigned makes an ECDSA P-256 certificate for 127.0.0.1 (as tessera
// certs does for a role) valid for an hour.
func selfSigned() (tls.Certificate, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tlscost"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, nil
}
