package metatest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// mnode is the model of one inode.
type mnode struct {
	ino       meta.Ino
	mode      uint32 // type and permission bits
	uid, gid  uint32
	nlink     uint32
	size      uint64
	target    string
	parent    *mnode            // directories only
	children  map[string]*mnode // directories only
	blocks    map[uint64]block.Hash
	hasInline bool
	inline    []byte
	gone      bool // removed (rmdir, replaced directory, reaped)
}

func (n *mnode) isDir() bool { return n.mode&syscall.S_IFMT == syscall.S_IFDIR }
func (n *mnode) isReg() bool { return n.mode&syscall.S_IFMT == syscall.S_IFREG }

// model is a tiny in-memory file system with the semantics Service promises.
type model struct {
	root  *mnode
	nodes map[meta.Ino]*mnode // every inode ever created, gone ones included
	files uint64              // inodes in use after the latest compare
}

// maxModelFiles bounds the namespace so that comparing it stays cheap.
const maxModelFiles = 40

// RunModel applies steps random operations, drawn from seed, to a fresh API
// and to an in-memory model, and compares errors, the namespace, attributes,
// recipes and usage after every step. A failure names the seed to replay.
func RunModel(t *testing.T, f Factory, seed uint64, steps int) {
	h := newHarness(t, f)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	root := &mnode{ino: meta.RootIno, mode: syscall.S_IFDIR | 0775, uid: rootUid, gid: rootGid, nlink: 2,
		children: map[string]*mnode{}}
	root.parent = root
	m := &model{root: root, nodes: map[meta.Ino]*mnode{meta.RootIno: root}}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d: %s\nlast ops:\n  %s", seed, len(log), fmt.Sprintf(format, args...),
			strings.Join(log[max(0, len(log)-15):], "\n  "))
	}
	outcomes := map[string]int{}
	ever := map[block.Hash]bool{} // blocks some recipe named
	for i := range steps {
		op, want, got := m.step(h, rng)
		log = append(log, op)
		outcome := "ok"
		if want != nil {
			outcome = want.Error()
		}
		outcomes[strings.Fields(op)[0]+": "+outcome]++
		if !sameErr(got, want) {
			fail("%s: got %v, want %v", op, got, want)
		}
		if msg := m.compare(h, i%25 == 0 || i == steps-1); msg != "" {
			fail("after %s: %s", op, msg)
		}
		if msg := m.checkRefs(h, ever); msg != "" {
			fail("after %s: reference counts: %s", op, msg)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

func sameErr(got, want error) bool {
	if want == nil || got == nil {
		return want == got
	}
	return errors.Is(got, want)
}

var modelNames = []string{"a", "b", "c", "d", "e"}

// pick returns a random live inode that ok accepts, or now and then another
// one (a gone inode, an orphan, the wrong type) to provoke errors.
func (m *model) pick(rng *rand.Rand, ok func(*mnode) bool) *mnode {
	var live, other []*mnode
	for _, ino := range slices.Sorted(maps.Keys(m.nodes)) {
		n := m.nodes[ino]
		if !n.gone && n.nlink > 0 && ok(n) {
			live = append(live, n)
		} else {
			other = append(other, n)
		}
	}
	if len(live) == 0 || (len(other) > 0 && rng.IntN(10) == 0) {
		if len(other) == 0 {
			return m.root
		}
		return other[rng.IntN(len(other))]
	}
	return live[rng.IntN(len(live))]
}

// name returns mostly an existing entry of dir, else any model name.
func (m *model) name(rng *rand.Rand, dir *mnode) string {
	if len(dir.children) > 0 && rng.IntN(10) < 7 {
		names := slices.Sorted(maps.Keys(dir.children))
		return names[rng.IntN(len(names))]
	}
	return modelNames[rng.IntN(len(modelNames))]
}

func isDir(n *mnode) bool   { return n.isDir() }
func notDir(n *mnode) bool  { return !n.isDir() }
func isReg(n *mnode) bool   { return n.isReg() }
func anyNode(n *mnode) bool { return true }

func (m *model) step(h *harness, rng *rand.Rand) (op string, want, got error) {
	dir := m.pick(rng, isDir)
	name := m.name(rng, dir)
	r := rng.IntN(100)
	if r < 25 && m.files > maxModelFiles {
		r = 25 + rng.IntN(20) // remove instead, to keep the namespace small
	}
	switch {
	case r < 25:
		typ := []uint32{syscall.S_IFREG, syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK}[rng.IntN(4)]
		req := meta.CreateReq{Parent: dir.ino, Name: name, Mode: typ | uint32(rng.IntN(01000)), Uid: uint32(rng.IntN(3)),
			Gid: uint32(rng.IntN(3)), Excl: rng.IntN(2) == 0}
		if typ == syscall.S_IFLNK {
			req.Target = strings.Repeat("t", 1+rng.IntN(20))
		}
		in, err := h.api.Create(h.ctx, req)
		return fmt.Sprintf("create %d/%s %o excl=%v", dir.ino, name, req.Mode, req.Excl), m.create(dir, req, in.Ino), err
	case r < 37:
		_, err := h.api.Unlink(h.ctx, dir.ino, name, 0)
		return fmt.Sprintf("unlink %d/%s", dir.ino, name), m.unlink(dir, name), err
	case r < 45:
		err := h.api.Rmdir(h.ctx, dir.ino, name)
		return fmt.Sprintf("rmdir %d/%s", dir.ino, name), m.rmdir(dir, name), err
	case r < 62:
		nd := m.pick(rng, isDir)
		nn := m.name(rng, nd)
		flags := []uint32{0, 0, meta.RenameNoReplace, meta.RenameExchange}[rng.IntN(4)]
		_, err := h.api.Rename(h.ctx, dir.ino, name, nd.ino, nn, flags)
		return fmt.Sprintf("rename %d/%s %d/%s flags=%d", dir.ino, name, nd.ino, nn, flags), m.rename(dir, name, nd, nn, flags), err
	case r < 70:
		n := m.pick(rng, notDir)
		_, err := h.api.Link(h.ctx, n.ino, dir.ino, name)
		return fmt.Sprintf("link %d %d/%s", n.ino, dir.ino, name), m.link(n, dir, name), err
	case r < 80:
		n := m.pick(rng, anyNode)
		req := meta.SetAttrReq{}
		if rng.IntN(2) == 0 {
			req.Valid |= meta.SetMode
			req.Mode = uint32(rng.IntN(010000))
		}
		if rng.IntN(2) == 0 {
			req.Valid |= meta.SetGid
			req.Gid = uint32(rng.IntN(3))
		}
		if rng.IntN(2) == 0 {
			req.Valid |= meta.SetSize
			req.Size = uint64(rng.IntN(6 * blockSize))
		}
		_, err := h.api.SetAttr(h.ctx, n.ino, req)
		return fmt.Sprintf("setattr %d %+v", n.ino, req), m.setattr(n, req), err
	case r < 95:
		n := m.pick(rng, isReg)
		req := m.commitReq(n, rng)
		_, err := h.api.Commit(h.ctx, req)
		return fmt.Sprintf("commit %+v", req), m.commit(n, req, err), err
	default:
		n := m.pick(rng, notDir)
		err := h.api.Reap(h.ctx, n.ino)
		return fmt.Sprintf("reap %d", n.ino), m.reap(n), err
	}
}

func (m *model) dirErr(d *mnode) error {
	switch {
	case d.gone:
		return meta.ErrNotFound
	case !d.isDir():
		return meta.ErrNotDir
	}
	return nil
}

func (m *model) create(dir *mnode, req meta.CreateReq, ino meta.Ino) error {
	if err := m.dirErr(dir); err != nil {
		return err
	}
	typ := req.Mode & syscall.S_IFMT
	if old, ok := dir.children[req.Name]; ok {
		switch {
		case typ != syscall.S_IFREG || req.Excl:
			return meta.ErrExist
		case old.isDir():
			return meta.ErrIsDir
		}
		return nil
	}
	n := &mnode{ino: ino, mode: req.Mode, uid: req.Uid, gid: req.Gid, nlink: 1, blocks: map[uint64]block.Hash{}}
	if dir.mode&syscall.S_ISGID != 0 {
		n.gid = dir.gid
		if typ == syscall.S_IFDIR {
			n.mode |= syscall.S_ISGID
		}
	}
	switch typ {
	case syscall.S_IFDIR:
		n.nlink, n.parent, n.children = 2, dir, map[string]*mnode{}
		dir.nlink++
	case syscall.S_IFLNK:
		n.mode = syscall.S_IFLNK | 0777
		n.target, n.size = req.Target, uint64(len(req.Target))
	}
	dir.children[req.Name] = n
	m.nodes[ino] = n
	return nil
}

func (m *model) unlink(dir *mnode, name string) error {
	if err := m.dirErr(dir); err != nil {
		return err
	}
	n, ok := dir.children[name]
	switch {
	case !ok:
		return meta.ErrNotFound
	case n.isDir():
		return meta.ErrIsDir
	}
	delete(dir.children, name)
	n.nlink--
	return nil
}

func (m *model) rmdir(dir *mnode, name string) error {
	if err := m.dirErr(dir); err != nil {
		return err
	}
	n, ok := dir.children[name]
	switch {
	case !ok:
		return meta.ErrNotFound
	case !n.isDir():
		return meta.ErrNotDir
	case len(n.children) > 0:
		return meta.ErrNotEmpty
	}
	delete(dir.children, name)
	n.gone = true
	dir.nlink--
	return nil
}

func (m *model) link(n, dir *mnode, name string) error {
	if err := m.dirErr(dir); err != nil {
		return err
	}
	_, exists := dir.children[name]
	switch {
	case n.gone:
		return meta.ErrNotFound
	case exists:
		return meta.ErrExist
	case n.isDir():
		return meta.ErrPerm
	case n.nlink == 0:
		return meta.ErrNotFound
	}
	dir.children[name] = n
	n.nlink++
	return nil
}

// under reports whether directory d is n or lies below it.
func under(d, n *mnode) bool {
	for {
		if d == n {
			return true
		}
		if d.ino == meta.RootIno {
			return false
		}
		d = d.parent
	}
}

func (m *model) rename(op *mnode, on string, np *mnode, nn string, flags uint32) error {
	if err := m.dirErr(op); err != nil {
		return err
	}
	if err := m.dirErr(np); err != nil {
		return err
	}
	src, ok := op.children[on]
	if !ok {
		return meta.ErrNotFound
	}
	dst, dstOk := np.children[nn]
	exchange := flags&meta.RenameExchange != 0
	switch {
	case flags&meta.RenameNoReplace != 0 && dstOk:
		return meta.ErrExist
	case exchange && !dstOk:
		return meta.ErrNotFound
	}
	cross := op != np
	if cross && src.isDir() && under(np, src) {
		return meta.ErrInvalid
	}
	if cross && exchange && dst.isDir() && under(op, dst) {
		return meta.ErrInvalid
	}
	if dstOk && dst == src {
		return nil
	}
	if dstOk && !exchange {
		switch {
		case src.isDir() && !dst.isDir():
			return meta.ErrNotDir
		case !src.isDir() && dst.isDir():
			return meta.ErrIsDir
		case dst.isDir() && len(dst.children) > 0:
			return meta.ErrNotEmpty
		}
	}
	move := func(n, from, to *mnode) {
		if cross && n.isDir() {
			n.parent = to
			from.nlink--
			to.nlink++
		}
	}
	if exchange {
		move(src, op, np)
		move(dst, np, op)
		op.children[on] = dst
	} else {
		if dstOk {
			if dst.isDir() {
				dst.gone = true
				np.nlink--
			} else {
				dst.nlink--
			}
		}
		move(src, op, np)
		delete(op.children, on)
	}
	np.children[nn] = src
	return nil
}

func (m *model) truncate(n *mnode, size uint64) {
	nb := (size + blockSize - 1) / blockSize
	for idx := range n.blocks {
		if idx >= nb {
			delete(n.blocks, idx)
		}
	}
	if n.hasInline {
		if nb == 0 {
			n.hasInline, n.inline = false, nil
		} else if uint64(len(n.inline)) > size {
			n.inline = n.inline[:size]
		}
	}
}

func (m *model) setattr(n *mnode, req meta.SetAttrReq) error {
	switch {
	case n.gone:
		return meta.ErrNotFound
	case req.Valid&meta.SetSize != 0 && n.isDir():
		return meta.ErrIsDir
	case req.Valid&meta.SetSize != 0 && !n.isReg():
		return meta.ErrInvalid
	}
	if req.Valid&meta.SetMode != 0 {
		n.mode = n.mode&syscall.S_IFMT | req.Mode&07777
	}
	if req.Valid&meta.SetGid != 0 {
		n.gid = req.Gid
	}
	if req.Valid&meta.SetSize != 0 {
		if req.Size < n.size {
			m.truncate(n, req.Size)
		}
		n.size = req.Size
	}
	return nil
}

// current returns block idx of n as a commit compares it.
func (n *mnode) current(idx uint64) block.Hash {
	if idx == 0 && n.hasInline {
		return block.Sum(n.inline)
	}
	return n.blocks[idx]
}

func (m *model) commitReq(n *mnode, rng *rand.Rand) meta.CommitReq {
	req := meta.CommitReq{Ino: n.ino, Forced: rng.IntN(8) == 0}
	for _, idx := range rng.Perm(6)[:rng.IntN(4)] {
		c := meta.BlockChange{Index: uint64(idx), Old: n.current(uint64(idx))}
		if rng.IntN(6) == 0 {
			c.Old = block.Sum([]byte{byte(rng.IntN(3))})
		}
		switch {
		case idx == 0 && rng.IntN(3) == 0:
			c.InlineNew, c.NewInline = true, []byte(strings.Repeat("i", rng.IntN(10)))
		case rng.IntN(5) > 0:
			c.New = block.Sum([]byte{byte(rng.IntN(3))})
		}
		req.Changes = append(req.Changes, c)
	}
	req.Size = uint64(rng.IntN(7 * blockSize))
	req.SetSize = rng.IntN(4) == 0
	return req
}

func (m *model) commit(n *mnode, req meta.CommitReq, got error) error {
	switch {
	case n.gone:
		return meta.ErrNotFound
	case n.isDir():
		return meta.ErrIsDir
	case !n.isReg():
		return meta.ErrInvalid
	}
	changes := slices.SortedFunc(slices.Values(req.Changes), func(a, b meta.BlockChange) int { return int(a.Index) - int(b.Index) })
	if !req.Forced {
		var cur []meta.BlockChange
		conflict := false
		for _, c := range changes {
			bc := meta.BlockChange{Index: c.Index, New: n.current(c.Index)}
			if c.Index == 0 && n.hasInline {
				bc.InlineNew, bc.NewInline = true, n.inline
			}
			cur = append(cur, bc)
			conflict = conflict || bc.New != c.Old
		}
		if conflict {
			var ce *meta.ConflictError
			if errors.As(got, &ce) && fmt.Sprint(ce.Current) != fmt.Sprint(cur) {
				return fmt.Errorf("conflict with current %v", cur)
			}
			return meta.ErrConflict
		}
	}
	for _, c := range changes {
		if c.Index == 0 {
			n.hasInline, n.inline = c.InlineNew, nil
			if c.InlineNew {
				n.inline = slices.Clone(c.NewInline)
				delete(n.blocks, 0)
				continue
			}
		}
		if c.New.IsZero() {
			delete(n.blocks, c.Index)
		} else {
			n.blocks[c.Index] = c.New
		}
	}
	if req.SetSize {
		n.size = req.Size
	} else {
		n.size = max(n.size, req.Size)
	}
	m.truncate(n, n.size)
	return nil
}

func (m *model) reap(n *mnode) error {
	if !n.gone && n.nlink == 0 {
		n.gone = true
	}
	return nil
}
