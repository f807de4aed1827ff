package gateway

import (
	"sync"

	"tessera/internal/meta"
)

// piece is a run of blocks [first, end) of one file that one gateway is
// fetching. Readers that need any of its blocks wait for done instead of
// fetching them again (one fetch per block however many readers miss it).
type piece struct {
	first, end uint64
	done       chan struct{}
	err        error // set before done is closed
}

// flights are the pieces being fetched, by file and block.
type flights struct {
	mu sync.Mutex
	m  map[meta.Ino]map[uint64]*piece
}

// claim registers new pieces of at most maxBlocks blocks for the blocks of
// runs that no piece is fetching yet (mine: the caller must fetch them and
// call finish), and returns the pieces already fetching the others
// (theirs: to wait for).
func (f *flights) claim(ino meta.Ino, runs []meta.BlockRange, maxBlocks uint64) (mine, theirs []*piece) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[meta.Ino]map[uint64]*piece{}
	}
	busy := f.m[ino]
	if busy == nil {
		busy = map[uint64]*piece{}
		f.m[ino] = busy
	}
	seen := map[*piece]bool{}
	for _, r := range runs {
		for b := r.First; b < r.End; {
			if p := busy[b]; p != nil {
				if !seen[p] {
					seen[p] = true
					theirs = append(theirs, p)
				}
				b = p.end
				continue
			}
			p := &piece{first: b, end: b, done: make(chan struct{})}
			for p.end < r.End && p.end-p.first < maxBlocks && busy[p.end] == nil {
				busy[p.end] = p
				p.end++
			}
			mine = append(mine, p)
			b = p.end
		}
	}
	if len(busy) == 0 {
		delete(f.m, ino)
	}
	return mine, theirs
}

// next claims the first piece (at most maxBlocks) of runs that no piece
// is fetching, or returns nil: what a background fill takes next.
func (f *flights) next(ino meta.Ino, runs []meta.BlockRange, maxBlocks uint64) *piece {
	f.mu.Lock()
	defer f.mu.Unlock()
	busy := f.m[ino]
	for _, r := range runs {
		for b := r.First; b < r.End; b++ {
			if busy[b] != nil {
				continue
			}
			if busy == nil {
				if f.m == nil {
					f.m = map[meta.Ino]map[uint64]*piece{}
				}
				busy = map[uint64]*piece{}
				f.m[ino] = busy
			}
			p := &piece{first: b, end: b, done: make(chan struct{})}
			for p.end < r.End && p.end-p.first < maxBlocks && busy[p.end] == nil {
				busy[p.end] = p
				p.end++
			}
			return p
		}
	}
	return nil
}

// trim drops from piece p of ino, claimed and not yet fetched, the blocks
// at its ends that held reports cached (a piece another fetch recorded
// and finished between the caller's read of the file's cached runs and
// its claim), and reports whether any block is left to fetch; when none
// is, p is finished (its waiters find every block held). A cached block
// inside p, between missing ones, is fetched again with them.
func (f *flights) trim(ino meta.Ino, p *piece, held func(b uint64) bool) bool {
	f.mu.Lock()
	busy := f.m[ino]
	for p.first < p.end && held(p.first) {
		if busy[p.first] == p {
			delete(busy, p.first)
		}
		p.first++
	}
	for p.end > p.first && held(p.end-1) {
		if busy[p.end-1] == p {
			delete(busy, p.end-1)
		}
		p.end--
	}
	left := p.first < p.end
	if len(busy) == 0 {
		delete(f.m, ino)
	}
	f.mu.Unlock()
	if !left {
		close(p.done)
	}
	return left
}

// finish ends piece p of ino with err and wakes its waiters.
func (f *flights) finish(ino meta.Ino, p *piece, err error) {
	f.mu.Lock()
	busy := f.m[ino]
	for b := p.first; b < p.end; b++ {
		if busy[b] == p {
			delete(busy, b)
		}
	}
	if len(busy) == 0 {
		delete(f.m, ino)
	}
	f.mu.Unlock()
	p.err = err
	close(p.done)
}

// free returns the blocks of runs of ino that no piece is fetching.
func (f *flights) free(ino meta.Ino, runs []meta.BlockRange) []meta.BlockRange {
	f.mu.Lock()
	defer f.mu.Unlock()
	busy := f.m[ino]
	if len(busy) == 0 {
		return runs
	}
	var out []meta.BlockRange
	for _, r := range runs {
		for b := r.First; b < r.End; b++ {
			if busy[b] != nil {
				continue
			}
			if n := len(out); n > 0 && out[n-1].End == b {
				out[n-1].End++
			} else {
				out = append(out, meta.BlockRange{First: b, End: b + 1})
			}
		}
	}
	return out
}
