package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tessera/test/cluster"
)

// ackLog is the list of writes a test saw acknowledged (close after
// fsync returned), each a file name and its content's stamp.
type ackLog struct {
	mu   sync.Mutex
	acks map[string]uint64
}

func (a *ackLog) add(name string, id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.acks == nil {
		a.acks = map[string]uint64{}
	}
	a.acks[name] = id
}

// writeAcked writes up to n files dir/prefix-K (stamped content, fsync,
// close) until stop is closed, recording each acknowledged one. It returns
// the first error (nil when every write it tried was acknowledged).
func writeAcked(dir, prefix string, base uint64, n int, stop <-chan struct{}, acks *ackLog) error {
	for k := range n {
		select {
		case <-stop:
			return nil
		default:
		}
		id := base + uint64(k)
		name := fmt.Sprintf("%s-%03d", prefix, k)
		f, err := os.Create(filepath.Join(dir, name))
		if err == nil {
			_, err = f.Write(stamped(id, 24_000))
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		acks.add(name, id)
	}
	return nil
}

// checkAcked reads every acknowledged write at every site (each site's
// path of the directory in at).
func checkAcked(t *testing.T, at []string, acks *ackLog) {
	t.Helper()
	acks.mu.Lock()
	defer acks.mu.Unlock()
	for site, dir := range at {
		for name, id := range acks.acks {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if want := stamped(id, 24_000); err != nil || !bytes.Equal(got, want) {
				t.Errorf("site %d: acknowledged write %s: read %s, %v; want %s", site, name, describeStamped(got), err, describeStamped(want))
			}
		}
	}
	t.Logf("%d acknowledged writes read back at each of %d sites", len(acks.acks), len(at))
}

// testPartition: site C is cut off while A and B write. The majority goes
// on; a write at C fails with an error after the bounded wait instead of
// being acknowledged; after healing, fsck is clean and every acknowledged
// write is read at every site.
func testPartition(t *testing.T, s *cluster.Sites) {
	at := siteDir(t, s, "partition", "session")
	acks := &ackLog{}
	must(t, writeAcked(at[siteA], "before", 1000, 3, nil, acks))

	must(t, s.Partition(siteC))
	healed := false
	defer func() {
		if !healed {
			s.Heal(siteC)
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, site := range []int{siteA, siteB} {
		wg.Go(func() {
			errs[i] = writeAcked(at[site], fmt.Sprintf("during-%d", site), uint64(2000+1000*site), 5, nil, acks)
		})
	}
	// The minority's write: refused after the bounded wait (--meta-timeout).
	start := time.Now()
	minority := writeAcked(at[siteC], "minority", 9000, 1, nil, acks)
	t.Logf("a write at the partitioned site C returned after %v: %v", time.Since(start).Round(time.Millisecond), minority)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("majority site %d, writing while C is partitioned: %v", []int{siteA, siteB}[i], err)
		}
	}
	if minority == nil {
		t.Errorf("a write at the partitioned site C was acknowledged")
	}

	must(t, s.Heal(siteC))
	healed = true
	// C catches up (etcd, then its meta and mount): bounded.
	var res cluster.Result
	for try := range 30 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r, err := s.Run(ctx, siteA, "fsck")
		cancel()
		must(t, err)
		if res = r; r.ExitCode == 0 || try == 29 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if res.ExitCode != 0 {
		t.Errorf("fsck after healing: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	waitReadable(t, at[siteC], acks)
	checkAcked(t, at, acks)
}

// waitReadable polls (bounded) until the partitioned site's mount answers
// again: the first acknowledged file is read there.
func waitReadable(t *testing.T, dir string, acks *ackLog) {
	t.Helper()
	var name string
	acks.mu.Lock()
	for n := range acks.acks {
		name = n
		break
	}
	acks.mu.Unlock()
	var err error
	for range 120 {
		if _, err = os.Stat(filepath.Join(dir, name)); err == nil {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("site C after healing: stat %s: %v", name, err)
}

// testKillMeta: kill -9 of site B's meta while B writes: B's mount fails
// over to another site's meta (its --meta list) and nothing acknowledged
// is lost.
func testKillMeta(t *testing.T, s *cluster.Sites) {
	at := siteDir(t, s, "killmeta", "session")
	acks := &ackLog{}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- writeAcked(at[siteB], "w", 5000, 40, stop, acks) }()
	// Kill once a few writes are acknowledged (bounded).
	for range 600 {
		acks.mu.Lock()
		n := len(acks.acks)
		acks.mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(t, s.Meta(siteB).Kill9())
	// Writes go on through another meta: wait for 3 more acknowledgements.
	acks.mu.Lock()
	before := len(acks.acks)
	acks.mu.Unlock()
	var werr error
	for range 600 {
		acks.mu.Lock()
		n := len(acks.acks)
		acks.mu.Unlock()
		if n >= before+3 {
			break
		}
		select {
		case werr = <-done:
		default:
		}
		if werr != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	if werr == nil {
		werr = <-done
	}
	if werr != nil && !errors.Is(werr, os.ErrClosed) {
		t.Errorf("site B writing through the kill of its meta: %v", werr)
	}
	acks.mu.Lock()
	after := len(acks.acks)
	acks.mu.Unlock()
	if after < before+3 {
		t.Errorf("site B's mount acknowledged %d writes after its meta was killed, want it to go on (failover)", after-before)
	}
	must(t, s.Meta(siteB).Start())
	checkAcked(t, at, acks)
}
