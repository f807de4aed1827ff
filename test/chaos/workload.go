package chaos

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// dataDir is the directory of the run's files under each mount: writers
// create and renamers rename in the same one, as in issue 23's repro.
const dataDir = "d"

// ackedFile is a file whose creating write, fsync and close all returned:
// its name (one of names, when a rename's outcome is unknown) and content.
type ackedFile struct {
	names []string // the last is the most likely
	size  int
	sum   [sha256.Size]byte
}

// history holds every acknowledged file.
type history struct {
	mu      sync.Mutex
	written []ackedFile // by writers: never renamed, readers pick from these
	renamed map[string]*ackedFile
}

func (h *history) addWritten(f ackedFile) {
	h.mu.Lock()
	h.written = append(h.written, f)
	h.mu.Unlock()
}

func (h *history) pick(rng *rand.Rand) (ackedFile, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.written) == 0 {
		return ackedFile{}, false
	}
	return h.written[rng.IntN(len(h.written))], true
}

// all returns every acknowledged file (renamed ones too).
func (h *history) all() []ackedFile {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]ackedFile(nil), h.written...)
	for _, f := range h.renamed {
		out = append(out, *f)
	}
	return out
}

// content is a file's bytes, from the worker's generator.
func content(rng *rand.Rand) []byte {
	sizes := []int{0, 100, 4 << 10, 64<<10 + 7, 200 << 10}
	b := make([]byte, sizes[rng.IntN(len(sizes))]+rng.IntN(512))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// writeSync creates path with data, fsyncs and closes it: nil only when
// all three returned without error (an acknowledged write).
func writeSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writer creates fsync'd files on one mount until ctx ends.
func (r *run) writer(ctx context.Context, m, g int) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(100+m*10+g)))
	for n := 1; ctx.Err() == nil; n++ {
		name := fmt.Sprintf("w-m%d-g%d-%06d", m, g, n)
		data := content(rng)
		start := time.Now()
		err := writeSync(filepath.Join(r.w.mounts[m].Mount(), dataDir, name), data)
		r.rec.op("write")
		if err != nil {
			r.rec.fail("write", err, start, "no-calm-errors", fmt.Sprintf("m%d: write %s", m, name))
			pause(ctx, 200*time.Millisecond)
			continue
		}
		r.hist.addWritten(ackedFile{names: []string{name}, size: len(data), sum: sha256.Sum256(data)})
	}
}

// renamer keeps a few acknowledged files of its own on one mount and
// renames them round and round in the writers' directory.
func (r *run) renamer(ctx context.Context, m int) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(200+m)))
	dir := filepath.Join(r.w.mounts[m].Mount(), dataDir)
	var mine []*ackedFile
	for n := 1; ctx.Err() == nil; n++ {
		start := time.Now()
		if len(mine) < 8 {
			name := fmt.Sprintf("r-m%d-%06d", m, n)
			data := content(rng)
			err := writeSync(filepath.Join(dir, name), data)
			r.rec.op("write")
			if err != nil {
				r.rec.fail("write", err, start, "no-calm-errors", fmt.Sprintf("m%d: write %s", m, name))
				pause(ctx, 200*time.Millisecond)
				continue
			}
			f := &ackedFile{names: []string{name}, size: len(data), sum: sha256.Sum256(data)}
			mine = append(mine, f)
			r.hist.mu.Lock()
			r.hist.renamed[fmt.Sprintf("m%d-%d", m, n)] = f
			r.hist.mu.Unlock()
			continue
		}
		f := mine[rng.IntN(len(mine))]
		r.hist.mu.Lock()
		old := f.names[len(f.names)-1]
		r.hist.mu.Unlock()
		next := fmt.Sprintf("r-m%d-%06d", m, n)
		err := os.Rename(filepath.Join(dir, old), filepath.Join(dir, next))
		r.rec.op("rename")
		r.hist.mu.Lock()
		if err != nil {
			f.names = append(f.names, next) // either name now
		} else {
			f.names = []string{next}
		}
		r.hist.mu.Unlock()
		if err != nil {
			r.rec.fail("rename", err, start, "no-calm-errors", fmt.Sprintf("m%d: rename %s to %s", m, old, next))
			// Where it is now is for the final check to find out.
			mine = slices.DeleteFunc(mine, func(g *ackedFile) bool { return g == f })
			pause(ctx, 200*time.Millisecond)
		}
		pause(ctx, 20*time.Millisecond)
	}
}

// reader reads acknowledged files back on one mount and compares them.
func (r *run) reader(ctx context.Context, m int) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(300+m)))
	for ctx.Err() == nil {
		f, ok := r.hist.pick(rng)
		if !ok {
			pause(ctx, 50*time.Millisecond)
			continue
		}
		start := time.Now()
		path := filepath.Join(r.w.mounts[m].Mount(), dataDir, f.names[0])
		b, err := os.ReadFile(path)
		r.rec.op("read")
		switch {
		case err != nil:
			r.rec.fail("read", err, start, "healthy-reads", fmt.Sprintf("m%d: read acknowledged %s", m, f.names[0]))
			pause(ctx, 100*time.Millisecond)
		case len(b) != f.size || sha256.Sum256(b) != f.sum:
			r.rec.violate("acked-readback", fmt.Sprintf("m%d: %s read %d bytes during the run, not the %d acknowledged (or other bytes)",
				m, f.names[0], len(b), f.size))
		}
	}
}

// pause sleeps d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
