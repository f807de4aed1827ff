package metarpc

import (
	"time"

	"fmt"
	"math"

	"tessera/internal/block"
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// Conversions between meta's types and the protocol's messages. Encoders
// cannot fail; every decoder checks what the wire could get wrong and the
// Go types cannot hold (hash lengths, enum values, integer ranges, the
// bounds the API documents) and returns an error wrapping meta.ErrInvalid
// that names the field. Decoders accept nil messages as zero values, as
// proto3 does for absent fields.

// badf is a decoding error: the peer sent something the protocol forbids.
func badf(format string, args ...any) error {
	return fmt.Errorf("meta protocol: "+format+": %w", append(args, meta.ErrInvalid)...)
}

func hashOut(h block.Hash) []byte {
	if h.IsZero() {
		return nil
	}
	return h[:]
}

func hashIn(field string, b []byte) (block.Hash, error) {
	var h block.Hash
	switch len(b) {
	case 0:
		return h, nil
	case block.HashSize:
		copy(h[:], b)
		return h, nil
	}
	return h, badf("%s: a hash of %d bytes, want %d (or none)", field, len(b), block.HashSize)
}

func hashesOut(hs []block.Hash) [][]byte {
	if hs == nil {
		return nil
	}
	out := make([][]byte, len(hs))
	for i, h := range hs {
		out[i] = hashOut(h)
	}
	return out
}

func hashesIn(field string, bs [][]byte) ([]block.Hash, error) {
	if bs == nil {
		return nil, nil
	}
	out := make([]block.Hash, len(bs))
	for i, b := range bs {
		h, err := hashIn(field, b)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

func inlineIn(field string, b []byte) ([]byte, error) {
	if len(b) > meta.InlineMax {
		return nil, badf("%s: %d inline bytes, max %d", field, len(b), meta.InlineMax)
	}
	return b, nil
}

// intIn converts a wire int64 to an int (limits, counts).
func intIn(field string, v int64) (int, error) {
	if v < math.MinInt || v > math.MaxInt {
		return 0, badf("%s: %d out of range", field, v)
	}
	return int(v), nil
}

func attrOut(a meta.Attr) *pb.Attr {
	return &pb.Attr{Ino: uint64(a.Ino), Gen: a.Gen, Mode: a.Mode, Uid: a.Uid, Gid: a.Gid, Nlink: a.Nlink,
		Size: a.Size, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime, Rdev: a.Rdev, Change: a.Change,
		BlockSize: a.BlockSize, Policy: a.Policy, Replicas: uint32(a.Replicas), Sites: a.Sites}
}

func attrIn(p *pb.Attr) (meta.Attr, error) {
	if p == nil {
		return meta.Attr{}, nil
	}
	if p.Replicas > math.MaxUint8 {
		return meta.Attr{}, badf("attr.replicas: %d, max %d", p.Replicas, math.MaxUint8)
	}
	return meta.Attr{Ino: meta.Ino(p.Ino), Gen: p.Gen, Mode: p.Mode, Uid: p.Uid, Gid: p.Gid, Nlink: p.Nlink,
		Size: p.Size, Atime: p.Atime, Mtime: p.Mtime, Ctime: p.Ctime, Rdev: p.Rdev, Change: p.Change,
		BlockSize: p.BlockSize, Policy: p.Policy, Replicas: uint8(p.Replicas), Sites: p.Sites}, nil
}

func inodeOut(in meta.Inode) *pb.Inode {
	return &pb.Inode{Attr: attrOut(in.Attr), Target: in.Target, HasInline: in.HasInline, Inline: in.Inline, Gateway: gatewayOut(in.Gateway)}
}

func inodeIn(p *pb.Inode) (meta.Inode, error) {
	if p == nil {
		return meta.Inode{}, nil
	}
	a, err := attrIn(p.Attr)
	if err != nil {
		return meta.Inode{}, err
	}
	inl, err := inlineIn("inode.inline", p.Inline)
	if err != nil {
		return meta.Inode{}, err
	}
	g, err := gatewayIn(p.Gateway)
	if err != nil {
		return meta.Inode{}, err
	}
	return meta.Inode{Attr: a, Target: p.Target, HasInline: p.HasInline, Inline: inl, Gateway: g}, nil
}

func compositionOut(c meta.Composition) *pb.Composition {
	p := &pb.Composition{Len: c.Len, Base: hashOut(c.Base)}
	for _, x := range c.Patches {
		p.Patches = append(p.Patches, &pb.Patch{Hash: hashOut(x.Hash), Off: x.Off, Len: x.Len})
	}
	return p
}

func compositionIn(p *pb.Composition) (meta.Composition, error) {
	if p == nil {
		return meta.Composition{}, nil
	}
	if len(p.Patches) > meta.MaxPatches {
		return meta.Composition{}, badf("composition: %d patches, max %d", len(p.Patches), meta.MaxPatches)
	}
	base, err := hashIn("composition.base", p.Base)
	if err != nil {
		return meta.Composition{}, err
	}
	c := meta.Composition{Len: p.Len, Base: base}
	if p.Patches != nil {
		c.Patches = make([]meta.Patch, len(p.Patches))
	}
	for i, x := range p.Patches {
		if x == nil {
			continue
		}
		h, err := hashIn("composition.patches.hash", x.Hash)
		if err != nil {
			return meta.Composition{}, err
		}
		c.Patches[i] = meta.Patch{Hash: h, Off: x.Off, Len: x.Len}
	}
	return c, nil
}

func changesOut(cs []meta.BlockChange) []*pb.BlockChange {
	var out []*pb.BlockChange
	for _, c := range cs {
		p := &pb.BlockChange{Index: c.Index, Old: hashOut(c.Old), New: hashOut(c.New), InlineNew: c.InlineNew, NewInline: c.NewInline}
		if c.Compose != nil {
			p.Compose = compositionOut(*c.Compose)
		}
		out = append(out, p)
	}
	return out
}

func changesIn(ps []*pb.BlockChange) ([]meta.BlockChange, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make([]meta.BlockChange, len(ps))
	for i, p := range ps {
		if p == nil {
			continue
		}
		old, err := hashIn("change.old", p.Old)
		if err != nil {
			return nil, err
		}
		nw, err := hashIn("change.new", p.New)
		if err != nil {
			return nil, err
		}
		inl, err := inlineIn("change.new_inline", p.NewInline)
		if err != nil {
			return nil, err
		}
		c := meta.BlockChange{Index: p.Index, Old: old, New: nw, InlineNew: p.InlineNew, NewInline: inl}
		if p.Compose != nil {
			comp, err := compositionIn(p.Compose)
			if err != nil {
				return nil, err
			}
			c.Compose = &comp
		}
		out[i] = c
	}
	return out, nil
}

func setAttrOut(ino meta.Ino, r meta.SetAttrReq) *pb.SetAttrRequest {
	return &pb.SetAttrRequest{Ino: uint64(ino), Valid: r.Valid, Mode: r.Mode, Uid: r.Uid, Gid: r.Gid,
		Size: r.Size, Atime: r.Atime, Mtime: r.Mtime, Ctime: r.Ctime, Sync: r.Sync}
}

func setAttrIn(p *pb.SetAttrRequest) (meta.Ino, meta.SetAttrReq) {
	return meta.Ino(p.GetIno()), meta.SetAttrReq{Valid: p.GetValid(), Mode: p.GetMode(), Uid: p.GetUid(), Gid: p.GetGid(),
		Size: p.GetSize(), Atime: p.GetAtime(), Mtime: p.GetMtime(), Ctime: p.GetCtime(), Sync: p.GetSync()}
}

func createOut(r meta.CreateReq) *pb.CreateRequest {
	return &pb.CreateRequest{Parent: uint64(r.Parent), Name: r.Name, Mode: r.Mode, Uid: r.Uid, Gid: r.Gid,
		Rdev: r.Rdev, Target: r.Target, Excl: r.Excl, Open: r.Open, Tmpfile: r.Tmpfile}
}

func createIn(p *pb.CreateRequest) meta.CreateReq {
	return meta.CreateReq{Parent: meta.Ino(p.GetParent()), Name: p.GetName(), Mode: p.GetMode(), Uid: p.GetUid(),
		Gid: p.GetGid(), Rdev: p.GetRdev(), Target: p.GetTarget(), Excl: p.GetExcl(), Open: p.GetOpen(), Tmpfile: p.GetTmpfile()}
}

func commitOut(r meta.CommitReq) *pb.CommitRequest {
	return &pb.CommitRequest{Ino: uint64(r.Ino), Changes: changesOut(r.Changes), Size: r.Size, SetSize: r.SetSize,
		Mtime: r.Mtime, Forced: r.Forced, Sync: r.Sync, Superseded: hashesOut(r.Superseded)}
}

func commitIn(p *pb.CommitRequest) (meta.CommitReq, error) {
	if len(p.GetSuperseded()) > meta.MaxSuperseded {
		return meta.CommitReq{}, badf("commit: %d superseded blocks, max %d", len(p.Superseded), meta.MaxSuperseded)
	}
	cs, err := changesIn(p.GetChanges())
	if err != nil {
		return meta.CommitReq{}, err
	}
	sup, err := hashesIn("commit.superseded", p.GetSuperseded())
	if err != nil {
		return meta.CommitReq{}, err
	}
	return meta.CommitReq{Ino: meta.Ino(p.GetIno()), Changes: cs, Size: p.GetSize(), SetSize: p.GetSetSize(),
		Mtime: p.GetMtime(), Forced: p.GetForced(), Sync: p.GetSync(), Superseded: sup}, nil
}

func dirEntriesOut(es []meta.DirEntry, more bool) *pb.ReadDirReply {
	r := &pb.ReadDirReply{More: more}
	for _, e := range es {
		p := &pb.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Mode}
		if e.Inode != nil {
			p.Inode = inodeOut(*e.Inode)
		}
		r.Entries = append(r.Entries, p)
	}
	return r
}

func dirEntriesIn(r *pb.ReadDirReply) ([]meta.DirEntry, bool, error) {
	var out []meta.DirEntry
	if len(r.GetEntries()) > 0 {
		out = make([]meta.DirEntry, 0, len(r.Entries))
	}
	for _, p := range r.GetEntries() {
		e := meta.DirEntry{Name: p.GetName(), Ino: meta.Ino(p.GetIno()), Mode: p.GetMode()}
		if p.GetInode() != nil {
			in, err := inodeIn(p.Inode)
			if err != nil {
				return nil, false, err
			}
			e.Inode = &in
		}
		out = append(out, e)
	}
	return out, r.GetMore(), nil
}

func recipeOut(r meta.Recipe) *pb.Recipe {
	p := &pb.Recipe{Change: r.Change, Size: r.Size, First: r.First, Blocks: hashesOut(r.Blocks), HasInline: r.HasInline, Inline: r.Inline}
	for h, c := range r.Composed {
		p.Composed = append(p.Composed, &pb.ComposedBlock{Hash: hashOut(h), Composition: compositionOut(c)})
	}
	return p
}

func recipeIn(p *pb.Recipe) (meta.Recipe, error) {
	if len(p.GetBlocks()) > meta.MaxRecipeRun {
		return meta.Recipe{}, badf("recipe: %d blocks, max %d", len(p.Blocks), meta.MaxRecipeRun)
	}
	bs, err := hashesIn("recipe.blocks", p.GetBlocks())
	if err != nil {
		return meta.Recipe{}, err
	}
	inl, err := inlineIn("recipe.inline", p.GetInline())
	if err != nil {
		return meta.Recipe{}, err
	}
	r := meta.Recipe{Change: p.GetChange(), Size: p.GetSize(), First: p.GetFirst(), Blocks: bs, HasInline: p.GetHasInline(), Inline: inl}
	if len(p.GetComposed()) > len(bs) {
		return meta.Recipe{}, badf("recipe: %d compositions for %d blocks", len(p.Composed), len(bs))
	}
	for _, c := range p.GetComposed() {
		h, err := hashIn("recipe.composed.hash", c.GetHash())
		if err != nil {
			return meta.Recipe{}, err
		}
		comp, err := compositionIn(c.GetComposition())
		if err != nil {
			return meta.Recipe{}, err
		}
		if r.Composed == nil {
			r.Composed = map[block.Hash]meta.Composition{}
		}
		r.Composed[h] = comp
	}
	return r, nil
}

func serverOut(s meta.Server) *pb.Server {
	return &pb.Server{Id: s.ID, Addr: s.Addr, Dir: s.Dir, Host: s.Host, Rack: s.Rack, Site: s.Site, State: s.State, Seen: s.Seen}
}

func serverIn(p *pb.Server) meta.Server {
	return meta.Server{ID: p.GetId(), Addr: p.GetAddr(), Dir: p.GetDir(), Host: p.GetHost(), Rack: p.GetRack(),
		Site: p.GetSite(), State: p.GetState(), Seen: p.GetSeen()}
}

func serverMapOut(m meta.ServerMap) *pb.ServerMap {
	p := &pb.ServerMap{Epoch: m.Epoch, Replicas: int64(m.Replicas)}
	for _, s := range m.Servers {
		p.Servers = append(p.Servers, serverOut(s))
	}
	return p
}

func serverMapIn(p *pb.ServerMap) (meta.ServerMap, error) {
	r, err := intIn("server_map.replicas", p.GetReplicas())
	if err != nil {
		return meta.ServerMap{}, err
	}
	m := meta.ServerMap{Epoch: p.GetEpoch(), Replicas: r}
	for _, s := range p.GetServers() {
		m.Servers = append(m.Servers, serverIn(s))
	}
	return m, nil
}

func progressOut(m meta.MoverProgress) *pb.MoverReport {
	p := &pb.MoverReport{Round: m.Round, At: m.At, Running: m.Running, Blocks: m.Blocks, UnderReplicated: m.UnderReplicated,
		Misplaced: m.Misplaced, BytesToMove: m.BytesToMove, BytesMoved: m.BytesMoved, Err: m.Err, Lost: m.Lost}
	for _, l := range m.LostBlocks {
		q := &pb.LostBlock{Hash: hashOut(l.Hash)}
		for _, ino := range l.Inos {
			q.Inos = append(q.Inos, uint64(ino))
		}
		p.LostBlocks = append(p.LostBlocks, q)
	}
	for _, c := range m.UnderBySite {
		p.UnderBySite = append(p.UnderBySite, &pb.SiteCount{Site: c.Site, N: c.N, Bytes: c.Bytes, Since: c.Since})
	}
	return p
}

func progressIn(p *pb.MoverReport) (meta.MoverProgress, error) {
	if len(p.GetLostBlocks()) > meta.MaxLostReported {
		return meta.MoverProgress{}, badf("mover report: %d lost blocks, max %d", len(p.LostBlocks), meta.MaxLostReported)
	}
	m := meta.MoverProgress{Round: p.GetRound(), At: p.GetAt(), Running: p.GetRunning(), Blocks: p.GetBlocks(),
		UnderReplicated: p.GetUnderReplicated(), Misplaced: p.GetMisplaced(), BytesToMove: p.GetBytesToMove(),
		BytesMoved: p.GetBytesMoved(), Err: p.GetErr(), Lost: p.GetLost()}
	for _, q := range p.GetLostBlocks() {
		if len(q.GetInos()) > meta.MaxLostInodes {
			return meta.MoverProgress{}, badf("mover report: %d inodes of a lost block, max %d", len(q.Inos), meta.MaxLostInodes)
		}
		h, err := hashIn("mover_report.lost_blocks.hash", q.GetHash())
		if err != nil {
			return meta.MoverProgress{}, err
		}
		l := meta.LostBlock{Hash: h}
		for _, ino := range q.GetInos() {
			l.Inos = append(l.Inos, meta.Ino(ino))
		}
		m.LostBlocks = append(m.LostBlocks, l)
	}
	if len(p.GetUnderBySite()) > meta.MaxSitesReported {
		return meta.MoverProgress{}, badf("mover report: %d sites, max %d", len(p.GetUnderBySite()), meta.MaxSitesReported)
	}
	for _, c := range p.GetUnderBySite() {
		m.UnderBySite = append(m.UnderBySite, meta.SiteCount{Site: c.GetSite(), N: c.GetN(), Bytes: c.GetBytes(), Since: c.GetSince()})
	}
	return m, nil
}

func refsOut(refs []meta.BlockRef, more bool) *pb.ListBlocksReply {
	r := &pb.ListBlocksReply{More: more}
	for _, x := range refs {
		r.Refs = append(r.Refs, &pb.BlockRef{Ino: uint64(x.Ino), Index: x.Index, Hash: hashOut(x.Hash)})
	}
	return r
}

func refsIn(r *pb.ListBlocksReply) ([]meta.BlockRef, bool, error) {
	var out []meta.BlockRef
	for _, x := range r.GetRefs() {
		h, err := hashIn("block_ref.hash", x.GetHash())
		if err != nil {
			return nil, false, err
		}
		out = append(out, meta.BlockRef{Ino: meta.Ino(x.GetIno()), Index: x.GetIndex(), Hash: h})
	}
	return out, r.GetMore(), nil
}

func kindOut(k meta.CallbackKind) pb.CallbackKind {
	switch k {
	case meta.CallbackInvalidate:
		return pb.CallbackKind_CALLBACK_KIND_INVALIDATE
	case meta.CallbackUpdate:
		return pb.CallbackKind_CALLBACK_KIND_UPDATE
	}
	return pb.CallbackKind_CALLBACK_KIND_UNSPECIFIED
}

func kindIn(k pb.CallbackKind) (meta.CallbackKind, error) {
	switch k {
	case pb.CallbackKind_CALLBACK_KIND_INVALIDATE:
		return meta.CallbackInvalidate, nil
	case pb.CallbackKind_CALLBACK_KIND_UPDATE:
		return meta.CallbackUpdate, nil
	}
	return 0, badf("callback.kind: unknown value %d", int32(k))
}

func callbacksOut(cbs []meta.Callback) *pb.CallbackBatch {
	b := &pb.CallbackBatch{}
	for _, c := range cbs {
		b.Callbacks = append(b.Callbacks, &pb.Callback{Seq: c.Seq, Ino: uint64(c.Ino), Kind: kindOut(c.Kind),
			Inode: inodeOut(c.Inode), Changes: changesOut(c.Changes), SetSize: c.SetSize})
	}
	return b
}

func callbacksIn(b *pb.CallbackBatch) ([]meta.Callback, error) {
	var out []meta.Callback
	for _, p := range b.GetCallbacks() {
		k, err := kindIn(p.GetKind())
		if err != nil {
			return nil, err
		}
		in, err := inodeIn(p.GetInode())
		if err != nil {
			return nil, err
		}
		cs, err := changesIn(p.GetChanges())
		if err != nil {
			return nil, err
		}
		out = append(out, meta.Callback{Seq: p.GetSeq(), Ino: meta.Ino(p.GetIno()), Kind: k, Inode: in, Changes: cs, SetSize: p.GetSetSize()})
	}
	return out, nil
}

func statFSOut(st meta.StatFS) *pb.FSStats {
	return &pb.FSStats{Files: st.Files, LogicalBytes: st.LogicalBytes}
}

func statFSIn(r *pb.FSStats) (meta.StatFS, error) {
	return meta.StatFS{Files: r.GetFiles(), LogicalBytes: r.GetLogicalBytes()}, nil
}

func sessionInfoOut(info meta.SessionInfo) *pb.SessionInfo {
	return &pb.SessionInfo{Id: uint64(info.ID), Ttl: int64(info.TTL)}
}

func sessionInfoIn(r *pb.SessionInfo) (meta.SessionInfo, error) {
	if r.GetTtl() < 0 {
		return meta.SessionInfo{}, badf("session_info.ttl: %d", r.Ttl)
	}
	return meta.SessionInfo{ID: meta.SessionID(r.GetId()), TTL: time.Duration(r.GetTtl())}, nil
}

// xattrValueIn is a reply's value: proto drops empty bytes, and a present
// value is never nil.
func xattrValueIn(r *pb.XattrValue) ([]byte, error) {
	if r.GetValue() == nil {
		return []byte{}, nil
	}
	return r.Value, nil
}
