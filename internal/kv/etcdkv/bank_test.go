package etcdkv_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestGroupCommitBank: concurrent transfers between accounts, audits that
// read every account (Views, and Updates that scan them and record the
// sum), over a real etcd with group commit on. The total never changes,
// and each account ends at its start plus the transfers that committed:
// no lost update, no write skew, no phantom.
func TestGroupCommitBank(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("inflight-%d", n), func(t *testing.T) {
			bank(t, open(t, c, etcdkv.Options{InFlight: n}))
		})
	}
}

// TestLocalUpdateReadsBank: the same with Updates reading their snapshot
// from the member the client talks to, on three members.
func TestLocalUpdateReadsBank(t *testing.T) {
	c := etcdtest.Start(t, 3)
	bank(t, open(t, c, etcdkv.Options{LocalUpdateReads: true}))
}

func bank(t *testing.T, s *etcdkv.Store) {
	ctx := context.Background()
	var merged, txns atomic.Int32
	etcdkv.SetCommitHook(s, func(b [][]string) {
		txns.Add(1)
		if len(b) > 1 {
			merged.Add(1)
		}
	})
	const accounts, start, workers, transfers, audits = 8, 100, 8, 20, 10
	acct := func(i int) []byte { return fmt.Appendf(nil, "acct/%d", i) }
	err := s.Update(ctx, func(tx kv.Txn) error {
		for i := range accounts {
			if err := tx.Put(acct(i), []byte(strconv.Itoa(start))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	balance := func(tx kv.Txn, i int) (int, error) {
		v, ok, err := tx.Get(acct(i))
		if err == nil && !ok {
			err = fmt.Errorf("account %d missing", i)
		}
		n, _ := strconv.Atoi(string(v))
		return n, err
	}
	sumAll := func(tx kv.Txn) (int, error) {
		sum := 0
		err := tx.Scan([]byte("acct/"), []byte("acct0"), func(_, v []byte) (bool, error) {
			n, err := strconv.Atoi(string(v))
			sum += n
			return true, err
		})
		return sum, err
	}
	var (
		mu  sync.Mutex
		net [accounts]int // the committed transfers' effect
	)
	var wg sync.WaitGroup
	errs := make(chan error, workers+2*audits)
	for w := range workers {
		wg.Go(func() {
			for k := range transfers {
				from, to, amount := (w+k)%accounts, (w+3*k+1)%accounts, 1+(w*7+k)%30
				if from == to {
					to = (to + 1) % accounts
				}
				moved := 0
				err := s.Update(ctx, func(tx kv.Txn) error {
					moved = 0
					a, err := balance(tx, from)
					if err != nil {
						return err
					}
					b, err := balance(tx, to)
					if err != nil || a < amount {
						return err
					}
					moved = amount
					return errors.Join(tx.Put(acct(from), []byte(strconv.Itoa(a-amount))), tx.Put(acct(to), []byte(strconv.Itoa(b+amount))))
				})
				if err != nil {
					errs <- fmt.Errorf("transfer %d->%d: %w", from, to, err)
					return
				}
				mu.Lock()
				net[from] -= moved
				net[to] += moved
				mu.Unlock()
			}
		})
	}
	for a := range audits {
		wg.Go(func() {
			err := s.View(ctx, func(tx kv.Txn) error {
				sum, err := sumAll(tx)
				if err == nil && sum != accounts*start {
					err = fmt.Errorf("a View's snapshot sums to %d, want %d", sum, accounts*start)
				}
				return err
			})
			if err != nil {
				errs <- err
			}
			var sum int
			err = s.Update(ctx, func(tx kv.Txn) error {
				var err error
				if sum, err = sumAll(tx); err != nil {
					return err
				}
				return tx.Put(fmt.Appendf(nil, "audit/%d", a), []byte(strconv.Itoa(sum)))
			})
			if err == nil && sum != accounts*start {
				err = fmt.Errorf("audit %d committed a sum of %d, want %d", a, sum, accounts*start)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	err = s.View(ctx, func(tx kv.Txn) error {
		for i := range accounts {
			b, err := balance(tx, i)
			if err != nil {
				return err
			}
			if b != start+net[i] {
				t.Errorf("account %d = %d, want %d + %d committed", i, b, start, net[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commit Txns, %d of them carried several Updates", txns.Load(), merged.Load())
}
