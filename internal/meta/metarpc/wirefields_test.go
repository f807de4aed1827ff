package metarpc

import (
	"strings"
	"testing"

	"google.golang.org/grpc"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// TestEveryMethodButCommitBounded: every request but a commit's has a
// maximum below the server-wide one, refused on its length prefix. Before
// the wire bounds, ten methods (server and gateway registrations, fileset
// creation, the write-back calls, IngestDir, SetGateway) took 16 MiB.
func TestEveryMethodButCommitBounded(t *testing.T) {
	gs := grpc.NewServer()
	registerServices(gs, &server{})
	maxima := methodMaxima(gs, DefaultMaxRecvMsg)
	methods := 0
	for svc, info := range gs.GetServiceInfo() {
		for _, m := range info.Methods {
			methods++
			n, ok := maxima["/"+svc+"/"+m.Name]
			switch {
			case m.Name == "Commit":
				if ok {
					t.Errorf("Commit bounded at %d bytes; its changes are bounded only in total", n)
				}
			case !ok:
				t.Errorf("%s: no maximum below %d bytes", m.Name, DefaultMaxRecvMsg)
			case n > 8<<20:
				t.Errorf("%s: maximum %d bytes", m.Name, n)
			}
		}
	}
	if methods < 50 {
		t.Fatalf("%d methods in the registered services: are they all registered?", methods)
	}
}

// TestWireFieldsRefusedByName: a string field over its wire bound is
// refused before the handler, naming the message, the field and the
// length, never the content; nested and repeated messages are walked.
func TestWireFieldsRefusedByName(t *testing.T) {
	long := strings.Repeat("\x01secret", 100) // 700 bytes
	for _, tc := range []struct {
		req  any
		want string
	}{
		{&pb.Server{Id: long}, "Server.id: 700 bytes, max 256"},
		{&pb.SetServerStateRequest{Id: "b1", State: long}, "SetServerStateRequest.state: 700 bytes, max 256"},
		{&pb.WritebackFailedRequest{Op: &pb.WBOp{Owner: long}}, "WBOp.owner: 700 bytes, max 256"},
		{&pb.WritebackFailedRequest{Op: &pb.WBOp{}, Cause: strings.Repeat("x", meta.MaxCause+1)}, "cause: 4097 bytes, max 4096"},
	} {
		err := checkWireFields(tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T: %v, want %q", tc.req, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%T: the error echoes the field: %.200v", tc.req, err)
		}
	}
	for _, ok := range []any{&pb.Server{Id: "b1", Addr: "127.0.0.1:7001", Dir: strings.Repeat("d", meta.MaxHomePath)},
		&pb.WritebackFailedRequest{Op: &pb.WBOp{Path: "a/b"}, Cause: strings.Repeat("x", meta.MaxCause)}} {
		if err := checkWireFields(ok); err != nil {
			t.Errorf("%T within bounds: %v", ok, err)
		}
	}
}

// TestClipKeepsBound: a failure text cut for the wire stays within its
// bound at a character boundary.
func TestClipKeepsBound(t *testing.T) {
	s := strings.Repeat("é", meta.MaxCause)
	c := meta.Clip(s, meta.MaxCause)
	if len(c) > meta.MaxCause || !strings.HasSuffix(c, "…") || !strings.HasPrefix(s, strings.TrimSuffix(c, "…")) {
		t.Errorf("Clip: %d bytes, suffix %q", len(c), c[len(c)-8:])
	}
	if meta.Clip("short", 10) != "short" {
		t.Error("Clip changed a short text")
	}
}
