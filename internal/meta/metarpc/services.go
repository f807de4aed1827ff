package metarpc

import (
	"google.golang.org/grpc"

	pb "tessera/internal/meta/metarpc/metapb"
)

// The protocol has one gRPC service per concern of the meta API
// (proto/tessera/meta/v1/meta.proto): FSService, ClusterService,
// SessionsService, FilesetService, WritebackService and QuotaService, each
// with its interface's methods under the same names. The server is one
// type implementing all of them, and the client one stub of each, so a
// handler or a call names its method only. Who may call what is decided
// per interface by the API the server wraps (package authz's tables).

// stubs are the client's stubs of every service.
type stubs struct {
	pb.FSServiceClient
	pb.ClusterServiceClient
	pb.SessionsServiceClient
	pb.FilesetServiceClient
	pb.WritebackServiceClient
	pb.QuotaServiceClient
}

// newStubs returns the stubs of every service over cc.
func newStubs(cc grpc.ClientConnInterface) stubs {
	return stubs{
		FSServiceClient:        pb.NewFSServiceClient(cc),
		ClusterServiceClient:   pb.NewClusterServiceClient(cc),
		SessionsServiceClient:  pb.NewSessionsServiceClient(cc),
		FilesetServiceClient:   pb.NewFilesetServiceClient(cc),
		WritebackServiceClient: pb.NewWritebackServiceClient(cc),
		QuotaServiceClient:     pb.NewQuotaServiceClient(cc),
	}
}

// unimplemented are the generated defaults the server embeds, one per
// service (each answers Unimplemented for a method the server lacks).
type unimplemented struct {
	pb.UnimplementedFSServiceServer
	pb.UnimplementedClusterServiceServer
	pb.UnimplementedSessionsServiceServer
	pb.UnimplementedFilesetServiceServer
	pb.UnimplementedWritebackServiceServer
	pb.UnimplementedQuotaServiceServer
}

// registerServices registers srv as every meta service.
func registerServices(gs grpc.ServiceRegistrar, srv *server) {
	pb.RegisterFSServiceServer(gs, srv)
	pb.RegisterClusterServiceServer(gs, srv)
	pb.RegisterSessionsServiceServer(gs, srv)
	pb.RegisterFilesetServiceServer(gs, srv)
	pb.RegisterWritebackServiceServer(gs, srv)
	pb.RegisterQuotaServiceServer(gs, srv)
}
