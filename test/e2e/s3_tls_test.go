package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"tessera/test/cluster"
)

// TestS3TLS runs `tessera s3` beside `tessera up` with the cluster's
// mount certificate: it serves HTTPS that a client trusting the cluster
// CA uses, and a plain HTTP request gets no S3 answer; without
// certificates, a non-loopback address is refused at start.
func TestS3TLS(t *testing.T) {
	c := startCluster(t)
	addr := freePort(t)
	d, err := c.StartS3(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	mc := s3TLSClient(t, c, addr, s3KeyAdd(t, c, "tls", "--role", "rw"))
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "sec", minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket over HTTPS: %v", err)
	}
	data := []byte("over TLS")
	s3Put(t, mc, "sec", "k", data, minio.PutObjectOptions{})
	if got := s3Get(t, mc, "sec", "k", minio.GetObjectOptions{}); !bytes.Equal(got, data) {
		t.Errorf("GET over HTTPS: %q", got)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/sec/k"); err == nil {
		if resp.StatusCode < 400 || resp.Header.Get("X-Amz-Request-Id") != "" {
			t.Errorf("plain HTTP to the HTTPS endpoint: %s with an S3 answer", resp.Status)
		}
		resp.Body.Close()
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := cluster.RunBin(rctx, c.Opts().Bin, "s3", "--meta", c.MetaAddr(), "--listen", "0.0.0.0:9")
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode == 0 || !strings.Contains(out.Stderr, "not a loopback address") {
		t.Errorf("tessera s3 on 0.0.0.0 without certificates: exit %d, stderr %q; want refused, naming why", out.ExitCode, out.Stderr)
	}
}

// s3TLSClient is a minio-go client of the HTTPS endpoint at addr that
// trusts c's CA.
func s3TLSClient(t *testing.T, c *cluster.Cluster, addr string, k s3Key) *minio.Client {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(c.DataDir(), "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	mc, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(k.ID, k.Secret, ""), Secure: true, Transport: tr,
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}
