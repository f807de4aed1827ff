package kvtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"tessera/internal/kv"
)

// seedEnv names the environment variable that replays a random case.
const seedEnv = "TESSERA_KVTEST_SEED"

func seed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv(seedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
		return n
	}
	n := uint64(time.Now().UnixNano())
	t.Logf("seed %d (set %s to replay)", n, seedEnv)
	return n
}

// op is one step of a random transaction.
type op struct {
	kind       byte // 'p'ut, 'd'elete, 'g'et, 's'can
	key, value string
	end        string // for scans; "" means no upper bound
}

// testRandomModel applies random transactions to the store and to a map, and
// compares every read. Keys come from a small alphabet around 0x00 and 0xff so
// that transactions collide and bounds land on edges.
func testRandomModel(t *testing.T, h *harness) {
	s := h.store
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, sd^0x9e3779b97f4a7c15))
	alphabet := []byte{0x00, 'a', 'b', 0xff}
	randKey := func() string {
		k := make([]byte, 1+rng.IntN(3))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(k)
	}
	randOp := func() op {
		switch n := rng.IntN(10); {
		case n < 4:
			o := op{kind: 'p', key: randKey(), value: strconv.Itoa(rng.IntN(1000))}
			if rng.IntN(5) == 0 {
				o.value = ""
			}
			return o
		case n < 6:
			return op{kind: 'd', key: randKey()}
		case n < 8:
			return op{kind: 'g', key: randKey()}
		default:
			o := op{kind: 's', key: randKey()}
			if rng.IntN(4) > 0 {
				o.end = randKey()
			}
			if rng.IntN(4) == 0 {
				o.key = ""
			}
			return o
		}
	}

	model := map[string]string{}
	errRollback := errors.New("rollback")
	for round := range 120 {
		ops := make([]op, 1+rng.IntN(8))
		for i := range ops {
			ops[i] = randOp()
		}
		rollback := rng.IntN(8) == 0
		var after map[string]string
		err := s.Update(context.Background(), func(tx kv.Txn) error {
			local := maps.Clone(model)
			for i, o := range ops {
				if err := applyOp(tx, local, o); err != nil {
					return fmt.Errorf("op %d of %q: %w", i, ops, err)
				}
			}
			after = local
			if rollback {
				return errRollback
			}
			return nil
		})
		if rollback && !errors.Is(err, errRollback) || !rollback && err != nil {
			t.Fatalf("seed %d round %d: Update: %v", sd, round, err)
		}
		if !rollback {
			model = after
		}
		view(t, s, func(tx kv.Txn) error {
			if err := applyOp(tx, model, op{kind: 's'}); err != nil {
				t.Fatalf("seed %d round %d: after commit: %v", sd, round, err)
			}
			return nil
		})
	}
}

// applyOp applies o to tx and to the model m, and compares what they read.
func applyOp(tx kv.Txn, m map[string]string, o op) error {
	switch o.kind {
	case 'p':
		m[o.key] = o.value
		return tx.Put([]byte(o.key), []byte(o.value))
	case 'd':
		delete(m, o.key)
		return tx.Delete([]byte(o.key))
	case 'g':
		v, ok, err := txGet(tx, o.key)
		if mv, mok := m[o.key]; err != nil || ok != mok || v != mv {
			return fmt.Errorf("Get(%q) = %q, %v, %v; want %q, %v", o.key, v, ok, err, mv, mok)
		}
		return nil
	default:
		var start, end []byte
		if o.key != "" {
			start = []byte(o.key)
		}
		if o.end != "" {
			end = []byte(o.end)
		}
		got, err := txScan(tx, start, end)
		if err != nil {
			return err
		}
		var want []pair
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k >= o.key && (o.end == "" || k < o.end) {
				want = append(want, pair{k, m[k]})
			}
		}
		if !equalPairs(got, want) {
			return fmt.Errorf("Scan(%q, %q) = %q; want %q", o.key, o.end, got, want)
		}
		return nil
	}
}
