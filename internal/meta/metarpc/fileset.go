package metarpc

import (
	"time"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The conversions of the fileset methods (meta.FilesetAPI and
// FilesetReadsAPI, issue 14). The client's methods and the server's
// handlers of those, of EvictAPI and of VanishAPI are generated
// (zz_client_gen.go, zz_server_gen.go); Fileset travels as rpc GetFileset
// (its //tessera:rpc directive).

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

func filesetListOut(l []meta.Fileset) *pb.FilesetList {
	out := &pb.FilesetList{}
	for _, f := range l {
		out.Filesets = append(out.Filesets, filesetOut(f))
	}
	return out
}

// gatewayValueOut is gatewayOut of a value (SetGateway's parameter).
func gatewayValueOut(g meta.GatewayInfo) *pb.GatewayInfo { return gatewayOut(&g) }

// gatewayValueIn is gatewayIn of a field that must be set (SetGateway's).
func gatewayValueIn(field string, p *pb.GatewayInfo) (meta.GatewayInfo, error) {
	if p == nil {
		return meta.GatewayInfo{}, badf("%s: none", field)
	}
	g, err := gatewayIn(p)
	if err != nil {
		return meta.GatewayInfo{}, err
	}
	return *g, nil
}

func filesetReadsOut(root meta.Ino, d meta.FilesetReads) *pb.FilesetReadsRequest {
	return &pb.FilesetReadsRequest{Root: uint64(root), HitBytes: d.HitBytes, MissBytes: d.MissBytes}
}

func filesetReadsIn(p *pb.FilesetReadsRequest) (meta.Ino, meta.FilesetReads) {
	return meta.Ino(p.GetRoot()), meta.FilesetReads{HitBytes: p.GetHitBytes(), MissBytes: p.GetMissBytes()}
}
