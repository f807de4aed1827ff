package fsx

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// small is a configuration that exercises every path quickly on a local disk.
func small(dir string, seed uint64, ops int) Config {
	return Config{Dir: dir, Seed: seed, Ops: ops, BlockSize: 64 << 10}
}

func TestRunLocalDisk(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		st, err := Run(small(t.TempDir(), seed, 3000))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: %v", seed, st)
		for o := Op(0); o < numOps; o++ {
			if st.Count[o] == 0 {
				t.Errorf("seed %d: op %v never ran", seed, o)
			}
		}
	}
}

func TestDefaultSizesLocalDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	st, err := Run(Config{Dir: t.TempDir(), Seed: 42, Ops: 2000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", st)
}

func TestSameSeedSameOps(t *testing.T) {
	record := func() []string {
		var descs []string
		cfg := small(t.TempDir(), 7, 1500)
		cfg.afterOp = func(_ *runner, _ int, desc string) { descs = append(descs, desc) }
		if _, err := Run(cfg); err != nil {
			t.Fatal(err)
		}
		return descs
	}
	a, b := record(), record()
	if !slices.Equal(a, b) {
		t.Fatalf("two runs with seed 7 differ:\n%v\n%v", a[:10], b[:10])
	}
}

// TestDetectsChanges checks the checker: a byte changed or a file cut
// behind its back must be reported, with the seed and a log.
// (A change made earlier in a run can be erased by later operations, such
// as a truncate or an unlink, so the change is made at the end.)
func TestDetectsChanges(t *testing.T) {
	tamper := map[string]func(path string, size int64) error{
		"flip byte": func(path string, size int64) error {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, size/2); err != nil {
				return err
			}
			b[0] ^= 0x5a
			_, err = f.WriteAt(b, size/2)
			return err
		},
		"lose tail": func(path string, size int64) error { return os.Truncate(path, size-1) },
	}
	for name, fn := range tamper {
		t.Run(name, func(t *testing.T) {
			cfg := small(t.TempDir(), 11, 2000)
			done := false
			cfg.afterOp = func(r *runner, i int, _ string) {
				// At the last operation, so no later one can legitimately
				// erase the change: the final verification must see it.
				if done || i < cfg.Ops-1 {
					return
				}
				for _, n := range r.existingNames() {
					if sz := r.byName[n].size(); sz > 0 {
						if err := fn(r.path(n), sz); err != nil {
							t.Fatal(err)
						}
						done = true
						return
					}
				}
			}
			_, err := Run(cfg)
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("tampering went unnoticed: err = %v", err)
			}
			if f.Seed != 11 || f.Op != cfg.Ops || len(f.Log) == 0 || !strings.Contains(f.Error(), "seed 11") {
				t.Fatalf("failure lacks replay information: %v", f)
			}
			t.Logf("reported as: %s", strings.SplitN(f.Error(), "\n", 2)[0])
		})
	}
}
