package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"tessera/internal/client"
	"tessera/internal/gateway"
	gwpb "tessera/internal/gateway/gwrpc/gwpb"
	"tessera/internal/meta/metarpc"
	pb "tessera/internal/meta/metarpc/metapb"
	"tessera/test/cluster"
)

// Issue 23 item 4 on a real `tessera gateway` with TLS (beside its meta
// service, a block server and a mount): valid low-privilege identities
// (client-ro from 127.0.0.2-5, client-rw from 127.0.0.6-9) send, all at
// once, the largest requests each field of the Gateway service allows
// (a Fetch's offset and length at their widest, asking for every block of
// the fileset's files; ListDir; Revalidate with force) and oversized ones
// (15 MiB of unknown fields after a valid inode number), and FetchData,
// which they may not call. Oversized requests are refused on their size,
// FetchData is denied, the rest is served; the process's resident memory
// stays under the bound docs/protocol.md states for the gateway (with 8
// addresses and a 128 MiB dirty budget, 768 MiB above its warmed-up RSS)
// and comes back within 64 MiB of it once the burst is over; an honest
// caller is served throughout. Every file reads back whole afterwards.
//
// Before --fetch-memory, the first Fetch of the sparse 1 GiB file split
// into 64 pieces each reading home through a 16 MiB window of its own, all
// at once: the gateway went from 37 to 1,313 MiB.
func TestGatewayPortBounds(t *testing.T) {
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 1})
	gw, err := m.AddGateway()
	must(t, err)
	mnt := addMount(t, m)
	pki := m.PKI()
	must(t, pki.Issue("reader", "client-ro"))
	must(t, pki.Issue("writer", "client-rw"))
	pool := trustCA(t, filepath.Join(pki.Dir(), "ca.crt"))

	// A fileset whose home holds 8 files of 32 MiB (64 blocks of 4 MiB)
	// and a directory of 1,000 names.
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "dir"), 0o755))
	const files, fileSize, sparseSize = 8, 32 << 20, 1 << 30
	for i := range files {
		writeFile(t, filepath.Join(home, fmt.Sprintf("f%d", i)), randBytes(uint64(900+i), fileSize))
	}
	// A sparse file of 1 GiB: a fetch of all of it asks for 64 pieces of
	// 16 MiB at once, each read through a window of home reads.
	sparse, err := os.Create(filepath.Join(home, "sparse"))
	must(t, err)
	must(t, sparse.Truncate(sparseSize))
	must(t, sparse.Close())
	for i := range 1000 {
		writeFile(t, filepath.Join(home, "dir", fmt.Sprintf("entry-%04d-%s", i, strings.Repeat("x", 200))), nil)
	}
	cache := filepath.Join(mnt.Mount(), "cache")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := m.Run(ctx, "fileset", "create", cache, "--home", "file://"+home, "--mode", "ro", "--prefetch", "none")
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("fileset create: exit %d: %s", res.ExitCode, res.Stderr)
	}
	ino := func(name string) uint64 { // a placeholder's stat fetches nothing
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(cache, name), &st))
		return st.Ino
	}
	var fileInos []uint64
	for i := range files {
		fileInos = append(fileInos, ino(fmt.Sprintf("f%d", i)))
	}
	dirIno, sparseIno := ino("dir"), ino("sparse")

	pid, addr := gw.PID(), gw.Addr()
	honest := gwpb.NewGatewayClient(gwConn(t, addr, "127.0.0.1", certConfig(t, pool, pki.Dir(), "admin")))
	served := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := honest.Revalidate(ctx, &gwpb.RevalidateRequest{Ino: dirIno}); err != nil {
			t.Fatalf("%s: the honest caller's revalidate: %v", what, err)
		}
	}
	for range 20 {
		served("warm-up")
	}
	base := vmRSS(t, pid)
	t.Logf("RSS after warm-up: %d MiB", base>>20)

	const addrs, rounds, workers = 8, 16, 16
	stopSampling := sampleRSSPeak(pid)
	// An oversized request: a valid inode number (field 1 of every
	// request) followed by 15 MiB of a field the service does not know,
	// which a decoder keeps.
	huge := strings.Repeat("\x01", 15<<20)
	oversized := &pb.LookupRequest{Parent: fileInos[0], Name: huge}
	type outcome struct{ kind, code string }
	var mu sync.Mutex
	got := map[outcome]int{}
	var wg sync.WaitGroup
	for a := range addrs {
		who := "reader"
		if a >= addrs/2 {
			who = "writer"
		}
		cc := gwConn(t, addr, fmt.Sprintf("127.0.0.%d", 2+a), certConfig(t, pool, pki.Dir(), who))
		c := gwpb.NewGatewayClient(cc)
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
					got[outcome{who + " " + kind, grpcstatus.Code(err).String()}]++
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(jobs)
			jobs <- func(ctx context.Context) (string, error) {
				_, err := c.Fetch(ctx, &gwpb.FetchRequest{Ino: sparseIno, Off: 0, N: 1 << 62})
				return "fetch 1 GiB", err
			}
			for i := range rounds {
				// Each address starts at its own file and block, so that
				// the burst asks for many pieces at once.
				f := fileInos[(a+i)%files]
				off := int64((a*rounds+i)%(fileSize>>22)) << 22
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.Fetch(ctx, &gwpb.FetchRequest{Ino: f, Off: off, N: 1 << 62})
					return "fetch", err
				}
				for _, method := range []string{"ListDir", "Fetch", "Revalidate"} {
					jobs <- func(ctx context.Context) (string, error) {
						err := cc.Invoke(ctx, "/tessera.gateway.v1.Gateway/"+method, oversized, &pb.Empty{})
						return method + " 15 MiB", err
					}
				}
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.ListDir(ctx, &pb.InoRequest{Ino: dirIno})
					return "listdir", err
				}
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.Revalidate(ctx, &gwpb.RevalidateRequest{Ino: f, Force: true})
					return "revalidate", err
				}
				jobs <- func(ctx context.Context) (string, error) {
					_, err := c.FetchData(ctx, &gwpb.FetchRequest{Ino: f, Off: 0, N: 1 << 62})
					return "fetchdata", err
				}
			}
		}()
	}
	served("the burst")
	wg.Wait()
	peak := stopSampling()
	t.Logf("outcomes: %v", got)
	for _, who := range []string{"reader", "writer"} {
		for _, method := range []string{"ListDir", "Fetch", "Revalidate"} {
			if n := got[outcome{who + " " + method + " 15 MiB", codes.ResourceExhausted.String()}]; n != addrs/2*rounds {
				t.Errorf("%s %s of 15 MiB: %d of %d refused on their size", who, method, n, addrs/2*rounds)
			}
		}
		if n := got[outcome{who + " fetchdata", codes.PermissionDenied.String()}]; n != addrs/2*rounds {
			t.Errorf("%s FetchData: %d of %d denied", who, n, addrs/2*rounds)
		}
		for _, kind := range []string{"fetch", "listdir"} {
			if n := got[outcome{who + " " + kind, codes.OK.String()}]; n != addrs/2*rounds {
				t.Errorf("%s %s: %d of %d served", who, kind, n, addrs/2*rounds)
			}
		}
		if n := got[outcome{who + " fetch 1 GiB", codes.OK.String()}]; n != addrs/2 {
			t.Errorf("%s fetch of the sparse 1 GiB file: %d of %d served", who, n, addrs/2)
		}
		// A forced revalidation of a file being fetched may meet the
		// fetch's record of its runs: ABORTED (a conflict, tried again by
		// callers), never another error.
		ok, aborted := got[outcome{who + " revalidate", codes.OK.String()}], got[outcome{who + " revalidate", codes.Aborted.String()}]
		if ok == 0 || ok+aborted != addrs/2*rounds {
			t.Errorf("%s revalidate: %d of %d served, %d aborted", who, ok, addrs/2*rounds, aborted)
		}
	}
	served("after the burst")
	checkPeak(t, pid, peak, base+gatewayBound(addrs), "")
	waitRSSBack(t, pid, base, 64<<20, "the burst")
	// Every block of every file was fetched: the files read back whole.
	for i := range files {
		wantContent(t, filepath.Join(cache, fmt.Sprintf("f%d", i)), randBytes(uint64(900+i), fileSize))
	}
}

// gatewayBound is what docs/protocol.md states a gateway may hold above
// its idle size with addrs peer addresses calling at once: each address's
// byte budget (requests and replies), the home-read buffers of all its
// fetches (--fetch-memory), its data path's dirty bytes, and 64 MiB of
// connections, TLS and the runtime's slack.
func gatewayBound(addrs int64) int64 {
	return addrs*metarpc.DefaultMaxInFlightPerPeer + gateway.DefaultMaxBuffered + client.DefaultDirtyBytes() + 64<<20
}

// gwConn is a raw gRPC connection to the gateway port at addr, dialing
// from local (a loopback IP) with tc, speaking the protocol's version.
func gwConn(t *testing.T, addr, local string, tc *tls.Config) *grpc.ClientConn {
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
	return cc
}
