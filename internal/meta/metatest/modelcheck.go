package metatest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// The model's comparison with the service (model.go): each inode's
// attributes, the tree's names, and the recipes.

// check compares an inode with its model.
func (n *mnode) check(in *meta.Inode) string {
	got := fmt.Sprintf("mode %o uid %d gid %d nlink %d size %d target %q inline %v %q",
		in.Mode, in.Uid, in.Gid, in.Nlink, in.Size, in.Target, in.HasInline, in.Inline)
	want := fmt.Sprintf("mode %o uid %d gid %d nlink %d size %d target %q inline %v %q",
		n.mode, n.uid, n.gid, n.nlink, n.size, n.target, n.hasInline, n.inline)
	if got != want || in.Ino != n.ino {
		return fmt.Sprintf("inode %d: got %s, want %s", n.ino, got, want)
	}
	return ""
}

// compare checks the API against the model: the namespace from the root,
// every reachable or orphaned inode and its recipe, usage, and (when full)
// that removed inodes are gone.
func (m *model) compare(h *harness, full bool) string {
	var msgs []string
	checked := map[meta.Ino]bool{}
	var walk func(d *mnode)
	walk = func(d *mnode) {
		var ents []meta.DirEntry
		for after := ""; ; {
			page, more, err := h.api.ReadDir(h.ctx, d.ino, after, 3, true)
			if err != nil {
				msgs = append(msgs, fmt.Sprintf("readdir %d: %v", d.ino, err))
				return
			}
			ents = append(ents, page...)
			if !more {
				break
			}
			after = page[len(page)-1].Name
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name)
		}
		if want := slices.Sorted(maps.Keys(d.children)); !slices.Equal(got, want) {
			msgs = append(msgs, fmt.Sprintf("dir %d lists %v, want %v", d.ino, got, want))
			return
		}
		for _, e := range ents {
			n := d.children[e.Name]
			if e.Ino != n.ino || e.Inode == nil {
				msgs = append(msgs, fmt.Sprintf("dir %d entry %s: ino %d, want %d", d.ino, e.Name, e.Ino, n.ino))
				continue
			}
			if msg := n.check(e.Inode); msg != "" {
				msgs = append(msgs, msg)
			}
			if !checked[n.ino] {
				checked[n.ino] = true
				if n.isDir() {
					walk(n)
				}
			}
		}
	}
	in, err := h.api.GetAttr(h.ctx, meta.RootIno)
	if err != nil {
		return fmt.Sprintf("getattr root: %v", err)
	}
	if msg := m.root.check(&in); msg != "" {
		msgs = append(msgs, msg)
	}
	walk(m.root)
	var want meta.StatFS
	for _, ino := range slices.Sorted(maps.Keys(m.nodes)) {
		n := m.nodes[ino]
		if n.gone {
			if full {
				if _, err := h.api.GetAttr(h.ctx, ino); !errors.Is(err, meta.ErrNotFound) {
					msgs = append(msgs, fmt.Sprintf("removed inode %d: getattr %v", ino, err))
				}
			}
			continue
		}
		want.Files++
		if !n.isReg() {
			continue
		}
		want.LogicalBytes += n.size
		if !checked[ino] {
			in, err := h.api.GetAttr(h.ctx, ino)
			if err != nil {
				msgs = append(msgs, fmt.Sprintf("orphan %d: %v", ino, err))
				continue
			}
			if msg := n.check(&in); msg != "" {
				msgs = append(msgs, "orphan "+msg)
			}
		}
		if msg := n.checkRecipe(h); msg != "" {
			msgs = append(msgs, msg)
		}
	}
	m.files = want.Files
	if st, err := h.api.StatFS(h.ctx); err != nil || st != want {
		msgs = append(msgs, fmt.Sprintf("statfs %+v %v, want %+v", st, err, want))
	}
	return strings.Join(msgs, "; ")
}

func (n *mnode) checkRecipe(h *harness) string {
	r, err := h.api.GetRecipe(h.ctx, n.ino, 0, 100)
	if err != nil {
		return fmt.Sprintf("recipe %d: %v", n.ino, err)
	}
	want := make([]block.Hash, (n.size+blockSize-1)/blockSize)
	for idx, hs := range n.blocks {
		if idx >= uint64(len(want)) {
			return fmt.Sprintf("model of %d keeps block %d past size %d", n.ino, idx, n.size)
		}
		want[idx] = hs
	}
	if !slices.Equal(r.Blocks, want) || r.HasInline != n.hasInline || string(r.Inline) != string(n.inline) {
		return fmt.Sprintf("recipe %d: got %v %v %q, want %v %v %q", n.ino, r.Blocks, r.HasInline, r.Inline, want, n.hasInline, n.inline)
	}
	return ""
}
