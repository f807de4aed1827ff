package metarpc_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	gwpb "tessera/internal/gateway/gwrpc/gwpb"
	"tessera/internal/meta/metarpc"
	metapb "tessera/internal/meta/metarpc/metapb"
)

// heldGateway is a gateway service whose Fetch waits until released.
type heldGateway struct {
	gwpb.UnimplementedGatewayServer
	in      chan struct{}
	release chan struct{}
}

func (g *heldGateway) Fetch(ctx context.Context, _ *gwpb.FetchRequest) (*metapb.Inode, error) {
	g.in <- struct{}{}
	<-g.release
	return &metapb.Inode{}, nil
}

// TestGatewayPortBudget: a port served with ServeWith for another service
// (the gateway's) charges its unary calls to the caller's byte budget as
// meta's are, each its method's computed maximum while it runs. Before,
// only meta's methods were known as unary: a gateway call was charged
// nothing, and the gateway port had no byte budget at all.
func TestGatewayPortBudget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probe := &metarpc.BudgetProbe{}
	g := &heldGateway{in: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- metarpc.ServeWith(ln, metarpc.ServeOptions{Logger: slog.New(slog.DiscardHandler)}.ProbeBudgets(probe), "gateway rpc",
			func(gs grpc.ServiceRegistrar) { gwpb.RegisterGatewayServer(gs, g) })
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang only
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "tessera-protocol", strconv.Itoa(metarpc.ProtocolVersion))
	called := make(chan error, 1)
	go func() {
		_, err := gwpb.NewGatewayClient(cc).Fetch(ctx, &gwpb.FetchRequest{Ino: 1, Off: 2, N: 3})
		called <- err
	}()
	<-g.in
	use := probe.Use("127.0.0.1")
	if use.Streams != 1 || use.Bytes <= 0 || use.Bytes > 8<<10 {
		t.Errorf("a running gateway Fetch holds %+v of its peer's budget, want 1 call and its request's size", use)
	}
	close(g.release)
	if err := <-called; err != nil {
		t.Fatal(err)
	}
}
