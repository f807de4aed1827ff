package metarpc

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"tessera/internal/block"
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// unary runs one method: send req, decode the reply with dec.
func unary[Req, Rep any, T any](c *Client, ctx context.Context, method string,
	fn func(ctx context.Context, req Req, opts ...grpc.CallOption) (Rep, error), req Req, dec func(Rep) (T, error)) (T, error) {
	var rep Rep
	err := c.call(ctx, method, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		rep, err = fn(ctx, req, opts...)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := dec(rep)
	if err != nil {
		return v, c.ioErr(method, err)
	}
	return v, nil
}

func none(*pb.Empty) (struct{}, error) { return struct{}{}, nil }

// Lookup implements meta.API.
func (c *Client) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return unary(c, ctx, "Lookup", c.mc.Lookup, &pb.LookupRequest{Parent: uint64(parent), Name: name}, inodeIn)
}

// GetAttr implements meta.API.
func (c *Client) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return unary(c, ctx, "GetAttr", c.mc.GetAttr, &pb.InoRequest{Ino: uint64(ino)}, inodeIn)
}

// SetAttr implements meta.API.
func (c *Client) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	return unary(c, ctx, "SetAttr", c.mc.SetAttr, setAttrOut(ino, req), inodeIn)
}

// Create implements meta.API.
func (c *Client) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	return unary(c, ctx, "Create", c.mc.Create, createOut(req), inodeIn)
}

// Link implements meta.API.
func (c *Client) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	return unary(c, ctx, "Link", c.mc.Link, &pb.LinkRequest{Ino: uint64(ino), NewParent: uint64(newParent), NewName: newName}, inodeIn)
}

// Unlink implements meta.API.
func (c *Client) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	return unary(c, ctx, "Unlink", c.mc.Unlink, &pb.UnlinkRequest{Parent: uint64(parent), Name: name, Reap: uint64(reap)}, inodeIn)
}

// Rmdir implements meta.API.
func (c *Client) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	_, err := unary(c, ctx, "Rmdir", c.mc.Rmdir, &pb.NameRequest{Parent: uint64(parent), Name: name}, none)
	return err
}

// Rename implements meta.API.
func (c *Client) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	return unary(c, ctx, "Rename", c.mc.Rename, &pb.RenameRequest{OldParent: uint64(oldParent), OldName: oldName,
		NewParent: uint64(newParent), NewName: newName, Flags: flags}, inodeIn)
}

type dirPage struct {
	ents []meta.DirEntry
	more bool
}

// ReadDir implements meta.API.
func (c *Client) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	p, err := unary(c, ctx, "ReadDir", c.mc.ReadDir, &pb.ReadDirRequest{Dir: uint64(dir), After: after, Limit: int64(limit), Plus: plus},
		func(r *pb.ReadDirReply) (dirPage, error) {
			ents, more, err := dirEntriesIn(r)
			return dirPage{ents, more}, err
		})
	return p.ents, p.more, err
}

// GetRecipe implements meta.API.
func (c *Client) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	return unary(c, ctx, "GetRecipe", c.mc.GetRecipe, &pb.GetRecipeRequest{Ino: uint64(ino), First: first, Count: count}, recipeIn)
}

// Commit implements meta.API.
func (c *Client) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	return unary(c, ctx, "Commit", c.mc.Commit, commitOut(req), inodeIn)
}

// HoldOpen implements meta.API.
func (c *Client) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return unary(c, ctx, "HoldOpen", c.mc.HoldOpen, &pb.InoRequest{Ino: uint64(ino)}, inodeIn)
}

// ReleaseOpen implements meta.API.
func (c *Client) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	_, err := unary(c, ctx, "ReleaseOpen", c.mc.ReleaseOpen, &pb.InoRequest{Ino: uint64(ino)}, none)
	return err
}

// Reap implements meta.API.
func (c *Client) Reap(ctx context.Context, ino meta.Ino) error {
	_, err := unary(c, ctx, "Reap", c.mc.Reap, &pb.InoRequest{Ino: uint64(ino)}, none)
	return err
}

// GetXattr implements meta.API.
func (c *Client) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	return unary(c, ctx, "GetXattr", c.mc.GetXattr, &pb.XattrRequest{Ino: uint64(ino), Name: name},
		func(r *pb.XattrValue) ([]byte, error) {
			if r.GetValue() == nil {
				return []byte{}, nil // proto drops empty bytes; a present value is never nil
			}
			return r.Value, nil
		})
}

// SetXattr implements meta.API.
func (c *Client) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	_, err := unary(c, ctx, "SetXattr", c.mc.SetXattr, &pb.SetXattrRequest{Ino: uint64(ino), Name: name, Value: value, Flags: flags}, none)
	return err
}

// ListXattr implements meta.API.
func (c *Client) ListXattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	return unary(c, ctx, "ListXattr", c.mc.ListXattr, &pb.InoRequest{Ino: uint64(ino)},
		func(r *pb.XattrNames) ([]string, error) { return r.GetNames(), nil })
}

// RemoveXattr implements meta.API.
func (c *Client) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	_, err := unary(c, ctx, "RemoveXattr", c.mc.RemoveXattr, &pb.XattrRequest{Ino: uint64(ino), Name: name}, none)
	return err
}

// Sync implements meta.API.
func (c *Client) Sync(ctx context.Context) error {
	_, err := unary(c, ctx, "Sync", c.mc.Sync, &pb.Empty{}, none)
	return err
}

// StatFS implements meta.API.
func (c *Client) StatFS(ctx context.Context) (meta.StatFS, error) {
	return unary(c, ctx, "StatFS", c.mc.StatFS, &pb.Empty{}, func(r *pb.FSStats) (meta.StatFS, error) {
		return meta.StatFS{Files: r.GetFiles(), LogicalBytes: r.GetLogicalBytes()}, nil
	})
}

// Servers implements meta.API.
func (c *Client) Servers(ctx context.Context) (meta.ServerMap, error) {
	return unary(c, ctx, "Servers", c.mc.Servers, &pb.Empty{}, serverMapIn)
}

// RegisterServer implements meta.API.
func (c *Client) RegisterServer(ctx context.Context, s meta.Server) (meta.ServerMap, error) {
	return unary(c, ctx, "RegisterServer", c.mc.RegisterServer, serverOut(s), serverMapIn)
}

type refPage struct {
	refs []meta.BlockRef
	more bool
}

// ListBlocks implements meta.BlockLister: one page per call.
func (c *Client) ListBlocks(ctx context.Context, afterIno meta.Ino, afterIndex uint64, limit int) ([]meta.BlockRef, bool, error) {
	p, err := unary(c, ctx, "ListBlocks", c.mc.ListBlocks, &pb.ListBlocksRequest{AfterIno: uint64(afterIno), AfterIndex: afterIndex, Limit: int64(limit)},
		func(r *pb.ListBlocksReply) (refPage, error) {
			refs, more, err := refsIn(r)
			return refPage{refs, more}, err
		})
	return p.refs, p.more, err
}

// WalkBlocks implements meta.API, one ListBlocks page per call, calling fn
// between calls.
func (c *Client) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return meta.WalkLister(ctx, c, fn)
}

// SetServerState implements meta.API.
func (c *Client) SetServerState(ctx context.Context, id, state string) (meta.ServerMap, error) {
	return unary(c, ctx, "SetServerState", c.mc.SetServerState, &pb.SetServerStateRequest{Id: id, State: state}, serverMapIn)
}

// SetReplicas implements meta.API.
func (c *Client) SetReplicas(ctx context.Context, n int) (meta.ServerMap, error) {
	return unary(c, ctx, "SetReplicas", c.mc.SetReplicas, &pb.SetReplicasRequest{Replicas: int64(n)}, serverMapIn)
}

// MoverProgress implements meta.API.
func (c *Client) MoverProgress(ctx context.Context) (meta.MoverProgress, error) {
	return unary(c, ctx, "MoverProgress", c.mc.MoverProgress, &pb.Empty{}, progressIn)
}

// Decompose implements meta.API.
func (c *Client) Decompose(ctx context.Context, h block.Hash) error {
	_, err := unary(c, ctx, "Decompose", c.mc.Decompose, &pb.DecomposeRequest{Hash: hashOut(h)}, none)
	return err
}

// OpenSession implements meta.API.
func (c *Client) OpenSession(ctx context.Context) (meta.SessionInfo, error) {
	return unary(c, ctx, "OpenSession", c.mc.OpenSession, &pb.Empty{}, func(r *pb.SessionInfo) (meta.SessionInfo, error) {
		if r.GetTtl() < 0 {
			return meta.SessionInfo{}, badf("session_info.ttl: %d", r.Ttl)
		}
		return meta.SessionInfo{ID: meta.SessionID(r.GetId()), TTL: time.Duration(r.GetTtl())}, nil
	})
}

// CloseSession implements meta.API.
func (c *Client) CloseSession(ctx context.Context, id meta.SessionID) error {
	c.streams.drop(id)
	s := &Client{conn: c.conn, session: id}
	_, err := unary(s, ctx, "CloseSession", s.mc.CloseSession, &pb.Empty{}, none)
	return err
}
