package metawait

import (
	"context"
	"errors"
	"fmt"

	"tessera/internal/meta"
)

// commitAgain settles the answer to a commit sent again after its reply
// was lost. Not applied the first time, it is applied now, or conflicts
// with another client's change like any commit would. Applied the first
// time, it conflicts with itself: every block the conflict names holds
// what the commit installed, and the commit is answered as applied (the
// inode as it is now stands for its reply). A conflict naming other
// content cannot be told apart: the first may have been applied and then
// overwritten, and a redo would then apply it a second time, after the
// other client's write returned (readers would see this commit's content,
// then the other's, then this one's again). It fails with
// meta.ErrMaybeApplied.
func (a *API) commitAgain(ctx context.Context, req meta.CommitReq, out meta.Inode, err error) (meta.Inode, error) {
	var ce *meta.ConflictError
	if !errors.As(err, &ce) {
		return out, err
	}
	if !meta.Installed(req.Changes, ce.Current) {
		return meta.Inode{}, fmt.Errorf("commit of inode %d: %w: its blocks changed since it was sent", req.Ino, meta.ErrMaybeApplied)
	}
	return a.API.GetAttr(ctx, req.Ino)
}
