package s3

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// syncBuffer is a log's output, written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a real endpoint on loopback over a fixture, with a rw key.
type served struct {
	*fixture
	addr string
	key  Key
	log  *syncBuffer
	srv  *Server
}

func serveFixture(t *testing.T, cfg ServerConfig) *served {
	t.Helper()
	f := newFixture(t)
	k, err := NewKey(NewKeyRequest{Name: "alice", Role: RoleRW})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddKey(context.Background(), f.svc, k); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = l.Addr().String()
	l.Close()
	log := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	cfg.AdminDir = t.TempDir()
	s, err := Serve(context.Background(), f.b.v, NewIAM(f.svc, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("close: %v", err)
		}
	})
	return &served{fixture: f, addr: cfg.Listen, key: k, log: log, srv: s}
}

func (s *served) client(t *testing.T, id, secret string) *minio.Client {
	t.Helper()
	mc, err := minio.New(s.addr, &minio.Options{Creds: credentials.NewStaticV4(id, secret, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

// TestSignatureMismatchLogged: a request refused with
// SignatureDoesNotMatch is logged with what the server signed (the
// canonical request and string to sign), the key id and both clocks,
// never the secret.
func TestSignatureMismatchLogged(t *testing.T) {
	s := serveFixture(t, ServerConfig{})
	wrong := strings.Repeat("x", len(s.key.Secret))
	_, err := s.client(t, s.key.AccessKeyID, wrong).ListBuckets(context.Background())
	if e := minio.ToErrorResponse(err); e.Code != "SignatureDoesNotMatch" {
		t.Fatalf("a wrong secret: %v, want SignatureDoesNotMatch", err)
	}
	log := s.log.String()
	for _, want := range []string{`msg="s3: signature does not match"`, "access_key_id=" + s.key.AccessKeyID,
		"x_amz_date=", "server_time=", `canonical_request="GET\n/\n`, `host:` + s.addr, "string_to_sign=\"AWS4-HMAC-SHA256"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, s.key.Secret) || strings.Contains(log, wrong) {
		t.Errorf("the log holds a secret:\n%s", log)
	}
	if _, err := s.client(t, s.key.AccessKeyID, s.key.Secret).ListBuckets(context.Background()); err != nil {
		t.Fatalf("the right secret: %v", err)
	}
	if n := strings.Count(s.log.String(), "signature does not match"); n != 1 {
		t.Errorf("%d signature refusals logged, want 1", n)
	}
}
