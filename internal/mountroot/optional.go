package mountroot

// The optional meta interfaces (meta.OptionalInterfaces) seen from the
// directory: every inode number in a call and its reply is swapped as in
// the API's own methods, fileset roots and queued operations' inodes
// included. Their methods are generated (zz_mountroot_gen.go), each passed
// on through meta.Forward, so an API below without the capability answers
// meta.ErrNotSupported; what is written here is one mapper per type that
// carries inode numbers, which the generator applies to every argument and
// result of that type (each element of a slice). The swap is its own
// inverse, so one mapper serves both ways. A mapper changes only the value
// it is handed: a field shared with the caller (a pointer's target, a
// slice an argument carries) is copied before it is changed, as mapInode
// copies the gateway section.

import (
	"tessera/internal/meta"
)

func (a *API) fwd() meta.Forward { return meta.Forward{Next: a.api} }

// mapFileset maps a fileset's root.
func (a *API) mapFileset(f *meta.Fileset) { f.Root = a.m(f.Root) }

// mapIngestDirReq maps the directory a gateway fills.
func (a *API) mapIngestDirReq(req *meta.IngestDirReq) { req.Dir = a.m(req.Dir) }

// mapGatewayInfo maps the fileset root an inode's gateway section names.
func (a *API) mapGatewayInfo(g *meta.GatewayInfo) { g.Fileset = a.m(g.Fileset) }

// mapClaimReq maps the fileset root a claim is for.
func (a *API) mapClaimReq(req *meta.ClaimReq) { req.Root = a.m(req.Root) }

// mapWBOp maps a queued operation's inodes.
func (a *API) mapWBOp(op *meta.WBOp) { op.Root, op.Ino = a.m(op.Root), a.m(op.Ino) }

// mapWBStats maps the failed operations of a reply (its own slice).
func (a *API) mapWBStats(st *meta.WBStats) {
	for i := range st.Failed {
		a.mapWBOp(&st.Failed[i])
	}
}
