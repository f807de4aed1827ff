package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	pb "tessera/internal/meta/metarpc/metapb"
	"tessera/test/cluster"
)

// Issue 23 on a real `tessera meta` with TLS: a valid low-privilege
// identity (client-ro) sends, from eight loopback addresses at once, the
// largest messages each field allows, and the issue's attack (lookups and
// creates of 15 MiB names). The process's resident memory stays under the
// bound docs/design/2026-11-28-request-bounds.md states and comes back down
// once the burst is over; an honest client is served throughout.
//
// Bound, above the RSS measured after a warm-up (base), with A addresses:
// A x MaxInFlightPerPeer (64 MiB: requests read or being read; a 16 MiB
// commit is the only method that may be that large) x 2 (the decoded copy
// of a request beside its wire bytes) + 64 MiB (connections, TLS, the
// runtime's slack). After the burst: base + 64 MiB.
//
// Before, 40 lookups of 15 MiB names from one address took meta from
// 55 MB to 2.9 GiB, and 8 addresses x 40 creates to 3.8 GiB, held for
// minutes.
func TestMetaPortBounds(t *testing.T) {
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 1})
	pid, addr := m.Meta().PID(), m.MetaAddr()
	pki := m.PKI()
	must(t, pki.Issue("reader", "client-ro"))
	pool := trustCA(t, filepath.Join(pki.Dir(), "ca.crt"))
	ro := certConfig(t, pool, pki.Dir(), "reader")

	honest := metaConn(t, addr, "127.0.0.1", certConfig(t, pool, pki.Dir(), "admin"))
	served := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := honest.GetAttr(ctx, &pb.InoRequest{Ino: uint64(meta.RootIno)}); err != nil {
			t.Fatalf("%s: the honest client's getattr: %v", what, err)
		}
	}
	for range 20 {
		served("warm-up")
	}
	base := vmRSS(t, pid)
	t.Logf("RSS after warm-up: %d MiB", base>>20)

	const addrs, calls, workers, commits = 8, 40, 8, 8
	stopSampling := sampleRSSPeak(pid)
	huge := strings.Repeat("\x01", 15<<20)
	long := strings.Repeat("n", 4<<10) // within Lookup's maximum, over the name's
	value := make([]byte, meta.XattrValueMax)
	commit := &pb.CommitRequest{Ino: uint64(meta.RootIno)}
	for i := 0; proto.Size(commit) < metarpc.DefaultMaxRecvMsg-(meta.InlineMax+1<<10); i++ {
		commit.Changes = append(commit.Changes, &pb.BlockChange{Index: uint64(i), InlineNew: true, NewInline: make([]byte, meta.InlineMax)})
	}
	type outcome struct{ kind, code string }
	var mu sync.Mutex
	got := map[outcome]int{}
	var wg sync.WaitGroup
	for a := range addrs {
		c := metaConn(t, addr, fmt.Sprintf("127.0.0.%d", 2+a), ro)
		jobs := make(chan func(context.Context) (string, error))
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for job := range jobs {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					kind, err := job(ctx)
					cancel()
					mu.Lock()
					got[outcome{kind, grpcstatus.Code(err).String()}]++
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(jobs)
			for i := range calls {
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.Lookup(ctx, &pb.LookupRequest{Parent: uint64(meta.RootIno), Name: huge})
					return "lookup 15 MiB", err
				}
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.Create(ctx, &pb.CreateRequest{Parent: uint64(meta.RootIno), Name: huge, Mode: 0o100644})
					return "create 15 MiB", err
				}
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.Lookup(ctx, &pb.LookupRequest{Parent: uint64(meta.RootIno), Name: long})
					return "lookup 4 KiB", err
				}
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.SetXattr(ctx, &pb.SetXattrRequest{Ino: uint64(meta.RootIno), Name: "user." + strings.Repeat("x", 250), Value: value})
					return "setxattr 64 KiB", err
				}
				if i < commits {
					jobs <- func(ctx context.Context) (string, error) {
						_, err := c.Commit(ctx, commit)
						return "commit 16 MiB", err
					}
				}
			}
		}()
	}
	served("the burst")
	wg.Wait()
	peak := stopSampling()
	t.Logf("outcomes: %v", got)
	for o, n := range got {
		if o.code == "OK" {
			t.Errorf("%d calls %s as client-ro succeeded", n, o.kind)
		}
	}
	for _, kind := range []string{"lookup 15 MiB", "create 15 MiB"} {
		if n := got[outcome{kind, codes.ResourceExhausted.String()}]; n != addrs*calls {
			t.Errorf("%s: %d of %d refused on their size", kind, n, addrs*calls)
		}
	}
	served("after the burst")
	checkPeak(t, pid, peak, base+addrs*2*metarpc.DefaultMaxInFlightPerPeer+64<<20, "")
	waitRSSBack(t, pid, base, 64<<20, "the burst")
}

// metaConn is a raw gRPC client of the meta port at addr, dialing from
// local (a loopback IP) with tc, speaking the protocol's version.
func metaConn(t *testing.T, addr, local string, tc *tls.Config) pb.FSServiceClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(credentials.NewTLS(tc)),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20), grpc.MaxCallRecvMsgSize(64<<20)),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, "tessera-protocol", strconv.Itoa(metarpc.ProtocolVersion)), method, req, reply, cc, opts...)
		}))
	must(t, err)
	t.Cleanup(func() { cc.Close() })
	return pb.NewFSServiceClient(cc)
}
