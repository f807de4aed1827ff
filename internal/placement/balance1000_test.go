package placement

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// TestBalance1000Servers is the bound as stated: over 1,000 servers
// the most loaded holds at most 5% over the mean. With hashing, the load of a
// server is binomial: 5% over a mean of m is 0.05·√m standard deviations, and
// the largest of 1,000 servers lies about 3.2 above the mean, so the bound
// needs m in the thousands. This test places 8 million keys (m = 8,000,
// 0.05·√m = 4.5 deviations) by the same scoring Pick uses, r = 1, without
// building a hash per key, on every core: about 8·10^9 scores. Keys come
// from a fixed seed, so the result is reproducible.
func TestBalance1000Servers(t *testing.T) {
	if testing.Short() {
		t.Skip("8·10^9 scores: skipped with -short")
	}
	skipUnderRace(t)
	const n, keys = 1000, 8_000_000
	ids := servers(n)
	sk := make([]uint64, n)
	for i, id := range ids {
		sk[i] = serverKey(id)
	}
	workers := runtime.GOMAXPROCS(0)
	loads := make([][]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			load := make([]int, n)
			r := rand.New(rand.NewPCG(42, uint64(w)))
			for range keys / workers {
				bk := r.Uint64() // a block hash's first 8 bytes: uniform
				best, bestScore := 0, uint64(0)
				for i, s := range sk {
					if sc := score(bk, s); sc > bestScore {
						best, bestScore = i, sc
					}
				}
				load[best]++
			}
			loads[w] = load
		}()
	}
	wg.Wait()
	total := make([]int, n)
	for _, l := range loads {
		for i, v := range l {
			total[i] += v
		}
	}
	checkBalance(t, total, keys/workers*workers, 0.05)
}
