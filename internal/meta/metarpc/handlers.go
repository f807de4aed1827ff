package metarpc

import (
	"context"
	"io"
	"time"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// server implements the protocol's service over a meta.API. Every handler
// decodes its request (a malformed one is meta.ErrInvalid), calls the API
// bound to the call's session, and encodes the reply or the error
// (statusOf).
type server struct {
	unimplemented
	api     meta.API
	cluster ClusterInfo // Hello, ClusterStatus (cluster.go)
}

// maxCallbackWait bounds the wait of one Ack; the Service caps it further
// at a third of its session TTL.
const maxCallbackWait = 10 * time.Minute

// on returns the API a call runs against: bound to the call's session when
// it names one and the API can bind.
func (s *server) on(ctx context.Context) meta.API {
	if id := sessionOf(ctx); id != 0 {
		if b, ok := s.api.(meta.SessionBinder); ok {
			return b.WithSession(id)
		}
	}
	return s.api
}

func inodeReply(in meta.Inode, err error) (*pb.Inode, error) {
	if err != nil {
		return nil, statusOf(err)
	}
	return inodeOut(in), nil
}

func emptyReply(err error) (*pb.Empty, error) {
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.Empty{}, nil
}

func mapReply(m meta.ServerMap, err error) (*pb.ServerMap, error) {
	if err != nil {
		return nil, statusOf(err)
	}
	return serverMapOut(m), nil
}

// Lookup serves meta.API.Lookup.
func (s *server) Lookup(ctx context.Context, r *pb.LookupRequest) (*pb.Inode, error) {
	return inodeReply(s.on(ctx).Lookup(ctx, meta.Ino(r.Parent), r.Name))
}

// GetAttr serves meta.API.GetAttr.
func (s *server) GetAttr(ctx context.Context, r *pb.InoRequest) (*pb.Inode, error) {
	return inodeReply(s.on(ctx).GetAttr(ctx, meta.Ino(r.Ino)))
}

// SetAttr serves meta.API.SetAttr.
func (s *server) SetAttr(ctx context.Context, r *pb.SetAttrRequest) (*pb.Inode, error) {
	ino, req := setAttrIn(r)
	return inodeReply(s.on(ctx).SetAttr(ctx, ino, req))
}

// Create serves meta.API.Create.
func (s *server) Create(ctx context.Context, r *pb.CreateRequest) (*pb.Inode, error) {
	return inodeReply(s.on(ctx).Create(ctx, createIn(r)))
}

// Link serves meta.API.Link.
func (s *server) Link(ctx context.Context, r *pb.LinkRequest) (*pb.Inode, error) {
	return inodeReply(s.on(ctx).Link(ctx, meta.Ino(r.Ino), meta.Ino(r.NewParent), r.NewName))
}

// Unlink serves meta.API.Unlink.
func (s *server) Unlink(ctx context.Context, r *pb.UnlinkRequest) (*pb.Inode, error) {
	return inodeReply(s.on(ctx).Unlink(ctx, meta.Ino(r.Parent), r.Name, meta.Ino(r.Reap)))
}

// Rmdir serves meta.API.Rmdir.
func (s *server) Rmdir(ctx context.Context, r *pb.NameRequest) (*pb.Empty, error) {
	return emptyReply(s.on(ctx).Rmdir(ctx, meta.Ino(r.Parent), r.Name))
}

// Rename serves meta.API.Rename.
func (s *server) Rename(ctx context.Context, r *pb.RenameRequest) (*pb.Inode, error) {
	return inodeReply(s.on(ctx).Rename(ctx, meta.Ino(r.OldParent), r.OldName, meta.Ino(r.NewParent), r.NewName, r.Flags))
}

// ReadDir serves meta.API.ReadDir.
func (s *server) ReadDir(ctx context.Context, r *pb.ReadDirRequest) (*pb.ReadDirReply, error) {
	limit, err := intIn("readdir.limit", r.Limit)
	if err != nil {
		return nil, statusOf(err)
	}
	ents, more, err := s.on(ctx).ReadDir(ctx, meta.Ino(r.Dir), r.After, limit, r.Plus)
	if err != nil {
		return nil, statusOf(err)
	}
	return dirEntriesOut(ents, more), nil
}

// GetRecipe serves meta.API.GetRecipe.
func (s *server) GetRecipe(ctx context.Context, r *pb.GetRecipeRequest) (*pb.Recipe, error) {
	rec, err := s.on(ctx).GetRecipe(ctx, meta.Ino(r.Ino), r.First, r.Count)
	if err != nil {
		return nil, statusOf(err)
	}
	return recipeOut(rec), nil
}

// Commit serves meta.API.Commit.
func (s *server) Commit(ctx context.Context, r *pb.CommitRequest) (*pb.Inode, error) {
	req, err := commitIn(r)
	if err != nil {
		return nil, statusOf(err)
	}
	return inodeReply(s.on(ctx).Commit(ctx, req))
}

// HoldOpen serves meta.API.HoldOpen.
func (s *server) HoldOpen(ctx context.Context, r *pb.InoRequest) (*pb.Inode, error) {
	return inodeReply(s.on(ctx).HoldOpen(ctx, meta.Ino(r.Ino)))
}

// ReleaseOpen serves meta.API.ReleaseOpen.
func (s *server) ReleaseOpen(ctx context.Context, r *pb.InoRequest) (*pb.Empty, error) {
	return emptyReply(s.on(ctx).ReleaseOpen(ctx, meta.Ino(r.Ino)))
}

// Reap serves meta.API.Reap.
func (s *server) Reap(ctx context.Context, r *pb.InoRequest) (*pb.Empty, error) {
	return emptyReply(s.on(ctx).Reap(ctx, meta.Ino(r.Ino)))
}

// GetXattr serves meta.API.GetXattr.
func (s *server) GetXattr(ctx context.Context, r *pb.XattrRequest) (*pb.XattrValue, error) {
	v, err := s.on(ctx).GetXattr(ctx, meta.Ino(r.Ino), r.Name)
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.XattrValue{Value: v}, nil
}

// SetXattr serves meta.API.SetXattr.
func (s *server) SetXattr(ctx context.Context, r *pb.SetXattrRequest) (*pb.Empty, error) {
	return emptyReply(s.on(ctx).SetXattr(ctx, meta.Ino(r.Ino), r.Name, r.Value, r.Flags))
}

// ListXattr serves meta.API.ListXattr.
func (s *server) ListXattr(ctx context.Context, r *pb.InoRequest) (*pb.XattrNames, error) {
	names, err := s.on(ctx).ListXattr(ctx, meta.Ino(r.Ino))
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.XattrNames{Names: names}, nil
}

// RemoveXattr serves meta.API.RemoveXattr.
func (s *server) RemoveXattr(ctx context.Context, r *pb.XattrRequest) (*pb.Empty, error) {
	return emptyReply(s.on(ctx).RemoveXattr(ctx, meta.Ino(r.Ino), r.Name))
}

// Sync serves meta.API.Sync.
func (s *server) Sync(ctx context.Context, _ *pb.Empty) (*pb.Empty, error) {
	return emptyReply(s.on(ctx).Sync(ctx))
}

// StatFS serves meta.API.StatFS.
func (s *server) StatFS(ctx context.Context, _ *pb.Empty) (*pb.FSStats, error) {
	st, err := s.on(ctx).StatFS(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.FSStats{Files: st.Files, LogicalBytes: st.LogicalBytes}, nil
}

// Servers serves meta.API.Servers.
func (s *server) Servers(ctx context.Context, _ *pb.Empty) (*pb.ServerMap, error) {
	return mapReply(s.on(ctx).Servers(ctx))
}

// RegisterServer serves meta.API.RegisterServer.
func (s *server) RegisterServer(ctx context.Context, r *pb.Server) (*pb.ServerMap, error) {
	return mapReply(s.on(ctx).RegisterServer(ctx, serverIn(r)))
}

// SetServerState serves meta.API.SetServerState.
func (s *server) SetServerState(ctx context.Context, r *pb.SetServerStateRequest) (*pb.ServerMap, error) {
	return mapReply(s.on(ctx).SetServerState(ctx, r.Id, r.State))
}

// SetReplicas serves meta.API.SetReplicas.
func (s *server) SetReplicas(ctx context.Context, r *pb.SetReplicasRequest) (*pb.ServerMap, error) {
	n, err := intIn("set_replicas.replicas", r.Replicas)
	if err != nil {
		return nil, statusOf(err)
	}
	return mapReply(s.on(ctx).SetReplicas(ctx, n))
}

// MoverProgress serves meta.API.MoverProgress.
func (s *server) MoverProgress(ctx context.Context, _ *pb.Empty) (*pb.MoverReport, error) {
	p, err := s.on(ctx).MoverProgress(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	return progressOut(p), nil
}

// Decompose serves meta.API.Decompose.
func (s *server) Decompose(ctx context.Context, r *pb.DecomposeRequest) (*pb.Empty, error) {
	h, err := hashIn("decompose.hash", r.Hash)
	if err != nil {
		return nil, statusOf(err)
	}
	return emptyReply(s.on(ctx).Decompose(ctx, h))
}

// ListBlocks serves one page of meta.API.WalkBlocks: meta.BlockLister's
// ListBlocks when the API has it, else a walk that skips to the cursor
// (meta.ListBlocksOf).
func (s *server) ListBlocks(ctx context.Context, r *pb.ListBlocksRequest) (*pb.ListBlocksReply, error) {
	limit, err := intIn("list_blocks.limit", r.Limit)
	if err != nil {
		return nil, statusOf(err)
	}
	refs, more, err := meta.ListBlocksOf(ctx, s.on(ctx), meta.Ino(r.AfterIno), r.AfterIndex, limit)
	if err != nil {
		return nil, statusOf(err)
	}
	return refsOut(refs, more), nil
}

// OpenSession serves meta.API.OpenSession.
func (s *server) OpenSession(ctx context.Context, _ *pb.Empty) (*pb.SessionInfo, error) {
	info, err := s.api.OpenSession(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.SessionInfo{Id: uint64(info.ID), Ttl: int64(info.TTL)}, nil
}

// CloseSession serves meta.API.CloseSession for the call's session.
func (s *server) CloseSession(ctx context.Context, _ *pb.Empty) (*pb.Empty, error) {
	return emptyReply(s.api.CloseSession(ctx, sessionOf(ctx)))
}

// Callbacks serves the session's callback stream: one meta.API.Callbacks
// poll per Ack, its batch sent back (proto/tessera/meta/v1/meta.proto).
func (s *server) Callbacks(st pb.SessionsService_CallbacksServer) error {
	ctx := st.Context()
	id := sessionOf(ctx)
	for {
		a, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		wait := min(max(time.Duration(a.Wait), 0), maxCallbackWait)
		cbs, err := s.api.Callbacks(ctx, id, a.Seq, wait)
		if err != nil {
			return statusOf(err)
		}
		if err := st.Send(callbacksOut(cbs)); err != nil {
			return err
		}
	}
}
