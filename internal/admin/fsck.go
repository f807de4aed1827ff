package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// FsckOptions configure Fsck.
type FsckOptions struct {
	// Repair moves corrupt copies aside on their servers (block.Checker
	// with quarantine) so that the mover restores them from good copies.
	// Without it Fsck only reads: nothing changes on any server.
	Repair bool
}

// FsckReport counts what Fsck found.
type FsckReport struct {
	Blocks      int // live blocks checked
	Copies      int // copies checked
	Corrupt     int // corrupt copies found
	Quarantined int // corrupt copies moved aside (Repair)
	Lost        int // live blocks without a good copy
	Impossible  int // recipes no writes could have made
	Unreachable int // servers that could not be listed
	Quotas      int // directory quotas whose usage was checked by a walk
	QuotaDrift  int // quotas whose kept usage differs from the walk
}

// Problems is the number of problems the report counts.
func (r FsckReport) Problems() int {
	return r.Corrupt + r.Lost + r.Impossible + r.Unreachable + r.QuotaDrift
}

// fileRef is one recipe entry naming a block.
type fileRef struct {
	ino meta.Ino
	idx uint64
}

// Fsck checks every copy of every block a recipe refers to, on every
// server that lists it, against its hash where it lies (block.Checker),
// reports a block with no good copy left as lost with the files (inodes)
// naming it, and checks that each block's content can be what writes and
// truncates made (impossible), and that each directory quota's usage is
// what a walk of its tree counts (fsckQuotas). It writes one line per
// problem to w. Only
// with opts.Repair does it change anything: corrupt copies are then moved
// aside, for the mover to restore from good ones.
func Fsck(ctx context.Context, c *Cluster, w io.Writer, opts FsckOptions) (FsckReport, error) {
	var r FsckReport
	m, err := c.Meta.Servers(ctx)
	if err != nil {
		return r, fmt.Errorf("block-server map: %w", err)
	}
	stores, err := c.dialAll(m)
	if err != nil {
		return r, err
	}
	refs := make(map[block.Hash][]fileRef)
	var walked int64
	c.report(Progress{Op: "fsck", Phase: "walk"})
	err = c.Meta.WalkBlocks(ctx, func(ino meta.Ino, idx uint64, h block.Hash) error {
		refs[h] = append(refs[h], fileRef{ino, idx})
		if walked++; walked%walkEvery == 0 {
			c.report(Progress{Op: "fsck", Phase: "walk", Done: walked})
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("walk recipes: %w", err)
	}
	c.report(Progress{Op: "fsck", Phase: "walk", Done: walked, Total: walked})
	// Who holds what: a copy nobody lists is not there to check.
	holders := make(map[block.Hash][]string)
	sizes := make(map[block.Hash]int64) // for the progress reports
	for _, s := range m.Servers {
		if s.State == meta.StateDown {
			continue
		}
		err := stores[s.ID].List(ctx, func(info block.Info) error {
			if _, ok := refs[info.Hash]; ok {
				holders[info.Hash] = append(holders[info.Hash], s.ID)
				sizes[info.Hash] = info.Size
			}
			return nil
		})
		if err != nil {
			r.Unreachable++
			fmt.Fprintf(w, "server %s: cannot list its blocks: %v\n", s.ID, err)
			delete(stores, s.ID)
			for h, ids := range holders {
				holders[h] = slices.DeleteFunc(ids, func(id string) bool { return id == s.ID })
			}
		}
	}
	hashes := make([]block.Hash, 0, len(refs))
	for h := range refs {
		hashes = append(hashes, h)
	}
	sort.Slice(hashes, func(i, j int) bool { return string(hashes[i][:]) < string(hashes[j][:]) })
	attrs := make(map[meta.Ino]meta.Inode)
	check := Progress{Op: "fsck", Phase: "check", Total: int64(len(hashes))}
	for _, size := range sizes {
		check.TotalBytes += size
	}
	for _, h := range hashes {
		c.report(check)
		check.Done++
		check.Bytes += sizes[h]
		r.Blocks++
		ids := holders[h]
		sort.Strings(ids)
		var good []string
		var bad []string
		for _, id := range ids {
			r.Copies++
			err := stores[id].Check(ctx, h, opts.Repair)
			switch {
			case err == nil:
				good = append(good, id)
			case errors.Is(err, block.ErrNotFound):
				// Removed since the listing (gc, the mover).
			case errors.Is(err, block.ErrCorrupt):
				r.Corrupt++
				bad = append(bad, id)
				what := "left in place (tessera fsck --repair moves it aside)"
				if opts.Repair {
					r.Quarantined++
					what = "moved aside"
				}
				fmt.Fprintf(w, "block %s on server %s: corrupt copy, %s (%s): %v\n", h, id, what, files(refs[h]), err)
			default:
				if ctx.Err() != nil {
					return r, ctx.Err()
				}
				r.Unreachable++
				fmt.Fprintf(w, "block %s on server %s: cannot check: %v\n", h, id, err)
			}
		}
		if len(good) == 0 {
			r.Lost++
			how := "no server holds it"
			if len(bad) > 0 {
				how = fmt.Sprintf("every copy is corrupt (on %s)", strings.Join(bad, ", "))
			}
			fmt.Fprintf(w, "block %s: LOST: %s; %s\n", h, how, files(refs[h]))
			continue
		}
		if err := checkContent(ctx, c, stores[good[0]], h, refs[h], attrs, w, &r); err != nil {
			return r, err
		}
	}
	c.report(check)
	if err := fsckQuotas(ctx, c, w, &r); err != nil {
		return r, err
	}
	if opts.Repair && r.Quarantined > 0 {
		fmt.Fprintf(w, "fsck: %d corrupt copies moved aside; the mover restores them from good copies at its next round\n", r.Quarantined)
	}
	return r, nil
}

// checkContent reads a good copy of h and reports the recipe entries
// whose files it cannot belong to (impossible).
func checkContent(ctx context.Context, c *Cluster, bs BlockServer, h block.Hash, rs []fileRef,
	attrs map[meta.Ino]meta.Inode, w io.Writer, r *FsckReport) error {
	data, err := bs.Get(ctx, h)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(w, "block %s: cannot read a copy that checked good: %v\n", h, err)
		r.Unreachable++
		return nil
	}
	for _, ref := range rs {
		in, ok := attrs[ref.ino]
		if !ok {
			if in, err = c.Meta.GetAttr(ctx, ref.ino); err != nil {
				continue // removed since the walk
			}
			attrs[ref.ino] = in
		}
		if what := impossible(in, ref.idx, data); what != "" {
			r.Impossible++
			fmt.Fprintf(w, "inode %d block %d (%s): %s\n", ref.ino, ref.idx, h.Short(), what)
		}
	}
	return nil
}

// files names the files of a block: "inode 12 block 3, inode 15 block 0"
// (at most 8, then how many more).
func files(rs []fileRef) string {
	var b strings.Builder
	b.WriteString("files: ")
	for i, ref := range rs {
		if i == 8 {
			fmt.Fprintf(&b, " and %d more", len(rs)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "inode %d block %d", ref.ino, ref.idx)
	}
	return b.String()
}

// impossible says why block idx of file in, with content data, cannot be
// what any sequence of writes and truncates made ("" if it can be): a
// block past the end of the file, longer than the file's block size, or
// with bytes past the file's end (a truncate cuts the block it ends in).
func impossible(in meta.Inode, idx uint64, data []byte) string {
	bs := int64(in.BlockSize)
	if bs <= 0 {
		bs = meta.DefaultBlockSize
	}
	start := int64(idx) * bs
	switch {
	case start >= int64(in.Size):
		return fmt.Sprintf("a block at offset %d, past the end of the %d-byte file", start, in.Size)
	case int64(len(data)) > bs:
		return fmt.Sprintf("%d bytes in a block of a file whose blocks are %d bytes", len(data), bs)
	case start+int64(len(data)) > int64(in.Size) && !block.AllZero(data[int64(in.Size)-start:]):
		return fmt.Sprintf("data past the end of the %d-byte file", in.Size)
	}
	return ""
}
