package metarpc

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The fileset methods (meta.FilesetAPI, issue 14): conversions, the
// client's methods and the server's handlers.

func gatewayOut(g *meta.GatewayInfo) *pb.GatewayInfo {
	if g == nil {
		return nil
	}
	var runs []uint64
	for _, r := range g.Cached {
		runs = append(runs, r.First, r.End)
	}
	return &pb.GatewayInfo{Fileset: uint64(g.Fileset), HomePath: g.HomePath, HomeMtime: g.HomeMtime,
		HomeCtime: g.HomeCtime, HomeSize: g.HomeSize, Token: g.Token, State: uint32(g.State), Validated: g.Validated,
		Cached: runs}
}

func gatewayIn(p *pb.GatewayInfo) (*meta.GatewayInfo, error) {
	if p == nil {
		return nil, nil
	}
	if p.State < uint32(meta.CachePlaceholder) || p.State > uint32(meta.CacheCached) {
		return nil, badf("gateway.state %d: want 1, 2 or 3", p.State)
	}
	if p.Fileset == 0 {
		return nil, badf("gateway.fileset: none")
	}
	if len(p.HomePath) > meta.MaxHomePath || len(p.Token) > meta.MaxToken {
		return nil, badf("gateway: home path of %d bytes or token of %d bytes too long", len(p.HomePath), len(p.Token))
	}
	if len(p.Cached)%2 != 0 || len(p.Cached) > 2*meta.MaxCachedRanges {
		return nil, badf("gateway.cached: %d numbers, want pairs, at most %d", len(p.Cached), 2*meta.MaxCachedRanges)
	}
	var runs []meta.BlockRange
	for i := 0; i < len(p.Cached); i += 2 {
		runs = append(runs, meta.BlockRange{First: p.Cached[i], End: p.Cached[i+1]})
	}
	return &meta.GatewayInfo{Fileset: meta.Ino(p.Fileset), HomePath: p.HomePath, HomeMtime: p.HomeMtime,
		HomeCtime: p.HomeCtime, HomeSize: p.HomeSize, Token: p.Token, State: meta.CacheState(p.State), Validated: p.Validated,
		Cached: runs}, nil
}

func filesetOut(f meta.Fileset) *pb.Fileset {
	return &pb.Fileset{Root: uint64(f.Root), Home: f.Home, Mode: string(f.Mode), ValidityLag: int64(f.ValidityLag),
		SyncLag: int64(f.SyncLag), Prefetch: f.Prefetch, Conflicts: f.Conflicts, State: f.State, Created: f.Created,
		ReadHitBytes: f.Reads.HitBytes, ReadMissBytes: f.Reads.MissBytes}
}

func filesetIn(p *pb.Fileset) (meta.Fileset, error) {
	if len(p.GetHome()) > meta.MaxHomeURL {
		return meta.Fileset{}, badf("fileset.home of %d bytes, max %d", len(p.GetHome()), meta.MaxHomeURL)
	}
	return meta.Fileset{Root: meta.Ino(p.GetRoot()), Home: p.GetHome(), Mode: meta.FilesetMode(p.GetMode()),
		ValidityLag: time.Duration(p.GetValidityLag()), SyncLag: time.Duration(p.GetSyncLag()), Prefetch: p.GetPrefetch(),
		Conflicts: p.GetConflicts(), State: p.GetState(), Created: p.GetCreated(),
		Reads: meta.FilesetReads{HitBytes: p.GetReadHitBytes(), MissBytes: p.GetReadMissBytes()}}, nil
}

func filesetListIn(p *pb.FilesetList) ([]meta.Fileset, error) {
	var out []meta.Fileset
	for _, f := range p.GetFilesets() {
		x, err := filesetIn(f)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func ingestDirIn(p *pb.IngestDirRequest) (meta.IngestDirReq, error) {
	if len(p.GetEntries()) > meta.MaxIngestEntries {
		return meta.IngestDirReq{}, badf("ingest_dir.entries: %d, max %d", len(p.GetEntries()), meta.MaxIngestEntries)
	}
	r := meta.IngestDirReq{Dir: meta.Ino(p.GetDir()), Done: p.GetDone(), Validated: p.GetValidated()}
	for _, e := range p.GetEntries() {
		r.Entries = append(r.Entries, meta.HomeEntry{Name: e.Name, Mode: e.Mode, Size: e.Size, HomeMtime: e.HomeMtime,
			HomeCtime: e.HomeCtime, Token: e.Token, Target: e.Target})
	}
	return r, nil
}

func ingestDirOut(r meta.IngestDirReq) *pb.IngestDirRequest {
	p := &pb.IngestDirRequest{Dir: uint64(r.Dir), Done: r.Done, Validated: r.Validated}
	for _, e := range r.Entries {
		p.Entries = append(p.Entries, &pb.HomeEntry{Name: e.Name, Mode: e.Mode, Size: e.Size, HomeMtime: e.HomeMtime,
			HomeCtime: e.HomeCtime, Token: e.Token, Target: e.Target})
	}
	return p
}

func emptyIn(*pb.Empty) (struct{}, error) { return struct{}{}, nil }

// CreateFileset implements meta.FilesetAPI.
func (c *Client) CreateFileset(ctx context.Context, f meta.Fileset) (meta.Fileset, error) {
	return unary(c, ctx, "CreateFileset", c.mc.CreateFileset, filesetOut(f), filesetIn)
}

// Fileset implements meta.FilesetAPI.
func (c *Client) Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	return unary(c, ctx, "GetFileset", c.mc.GetFileset, &pb.InoRequest{Ino: uint64(root)}, filesetIn)
}

// Filesets implements meta.FilesetAPI.
func (c *Client) Filesets(ctx context.Context) ([]meta.Fileset, error) {
	return unary(c, ctx, "Filesets", c.mc.Filesets, &pb.Empty{}, filesetListIn)
}

// DeleteFileset implements meta.FilesetAPI.
func (c *Client) DeleteFileset(ctx context.Context, root meta.Ino) error {
	_, err := unary(c, ctx, "DeleteFileset", c.mc.DeleteFileset, &pb.InoRequest{Ino: uint64(root)}, emptyIn)
	return err
}

// IngestDir implements meta.FilesetAPI.
func (c *Client) IngestDir(ctx context.Context, req meta.IngestDirReq) (meta.Inode, error) {
	return unary(c, ctx, "IngestDir", c.mc.IngestDir, ingestDirOut(req), inodeIn)
}

// SetGateway implements meta.FilesetAPI.
func (c *Client) SetGateway(ctx context.Context, ino meta.Ino, g meta.GatewayInfo, ifChange uint64) (meta.Inode, error) {
	return unary(c, ctx, "SetGateway", c.mc.SetGateway,
		&pb.SetGatewayRequest{Ino: uint64(ino), Gateway: gatewayOut(&g), IfChange: ifChange}, inodeIn)
}

// filesets is the served API's fileset half; a service without one
// answers every fileset call ENOTSUP.
func (s *server) filesets() (meta.FilesetAPI, error) {
	fa, ok := s.api.(meta.FilesetAPI)
	if !ok {
		return nil, statusOf(errNoFilesets)
	}
	return fa, nil
}

// CreateFileset serves meta.FilesetAPI.CreateFileset.
func (s *server) CreateFileset(ctx context.Context, r *pb.Fileset) (*pb.Fileset, error) {
	fa, err := s.filesets()
	if err != nil {
		return nil, err
	}
	f, err := filesetIn(r)
	if err != nil {
		return nil, statusOf(err)
	}
	return filesetReply(fa.CreateFileset(ctx, f))
}

func filesetReply(f meta.Fileset, err error) (*pb.Fileset, error) {
	if err != nil {
		return nil, statusOf(err)
	}
	return filesetOut(f), nil
}

// GetFileset serves meta.FilesetAPI.Fileset.
func (s *server) GetFileset(ctx context.Context, r *pb.InoRequest) (*pb.Fileset, error) {
	fa, err := s.filesets()
	if err != nil {
		return nil, err
	}
	return filesetReply(fa.Fileset(ctx, meta.Ino(r.Ino)))
}

// Filesets serves meta.FilesetAPI.Filesets.
func (s *server) Filesets(ctx context.Context, _ *pb.Empty) (*pb.FilesetList, error) {
	fa, err := s.filesets()
	if err != nil {
		return nil, err
	}
	l, err := fa.Filesets(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.FilesetList{}
	for _, f := range l {
		out.Filesets = append(out.Filesets, filesetOut(f))
	}
	return out, nil
}

// DeleteFileset serves meta.FilesetAPI.DeleteFileset.
func (s *server) DeleteFileset(ctx context.Context, r *pb.InoRequest) (*pb.Empty, error) {
	fa, err := s.filesets()
	if err != nil {
		return nil, err
	}
	return emptyReply(fa.DeleteFileset(ctx, meta.Ino(r.Ino)))
}

// IngestDir serves meta.FilesetAPI.IngestDir.
func (s *server) IngestDir(ctx context.Context, r *pb.IngestDirRequest) (*pb.Inode, error) {
	fa, err := s.filesets()
	if err != nil {
		return nil, err
	}
	req, err := ingestDirIn(r)
	if err != nil {
		return nil, statusOf(err)
	}
	return inodeReply(fa.IngestDir(ctx, req))
}

// SetGateway serves meta.FilesetAPI.SetGateway.
func (s *server) SetGateway(ctx context.Context, r *pb.SetGatewayRequest) (*pb.Inode, error) {
	fa, err := s.filesets()
	if err != nil {
		return nil, err
	}
	g, err := gatewayIn(r.Gateway)
	if err != nil {
		return nil, statusOf(err)
	}
	if g == nil {
		return nil, statusOf(badf("set_gateway.gateway: none"))
	}
	return inodeReply(fa.SetGateway(ctx, meta.Ino(r.Ino), *g, r.IfChange))
}

// errNoFilesets answers fileset calls to a service that has none.
var errNoFilesets = fmt.Errorf("meta service has no filesets: %w", syscall.ENOTSUP)
