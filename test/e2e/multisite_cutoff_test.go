package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// cutoffMajorityWait is the metas' majority-wait in TestMultiSiteCutOff:
// how long a write at the cut-off site waits for an etcd leader before it
// fails (issue 13 item 5: "a clear error after a bounded, configurable
// wait").
const cutoffMajorityWait = 3 * time.Second

// cutoffBound bounds every file system call the test makes at the cut-off
// site: not a speed budget (the calls take a few majority waits at most)
// but the line between "answers" and "hangs".
const cutoffBound = 3 * time.Minute

// TestMultiSiteCutOff: site C cut off from the majority with its own etcd
// member still running (Isolate, a real minority) keeps serving the reads
// its policy allows from its member and its own block servers, answers
// writes with EIO after the majority wait without acknowledging them, and
// after rejoining writes again, fsck is clean and every acknowledged write
// reads back at every site (issue 13 item 5).
func TestMultiSiteCutOff(t *testing.T) {
	needBinary(t)
	s := cluster.StartSites(t, cluster.SitesOptions{
		Bin: suite.bin, EtcdBin: etcdtest.Binary(t), Dir: t.TempDir(), RTT: sitesRTT,
		MetaArgs:     []string{"--block-size", itoa(consistencyBlockSize), "--replicas", "2"},
		MountArgs:    []string{"--meta-timeout", "20s"},
		MajorityWait: cutoffMajorityWait,
	})
	t.Cleanup(func() {
		if t.Failed() {
			p := filepath.Join(os.TempDir(), "tessera-"+sanitize(t.Name())+".log")
			if err := os.WriteFile(p, []byte(s.LogSince(0)), 0o644); err == nil {
				t.Logf("whole sites output: %s", p)
			}
		}
	})

	// Files written at A (fsync: a copy at every site), read once at C.
	policies := []string{"session", "relaxed", "posix"}
	acks := map[string]*ackLog{}
	dirs := map[string][]string{}
	for k, pol := range policies {
		dirs[pol] = siteDir(t, s, "cut-"+pol, pol)
		acks[pol] = &ackLog{}
		must(t, writeAcked(dirs[pol][siteA], "f", uint64(100*(k+1)), 3, nil, acks[pol]))
		for name, id := range acksIn(acks[pol], "f-") {
			readBack(t, filepath.Join(dirs[pol][siteC], name), id, pol, "before the cut")
		}
	}

	must(t, s.Isolate(siteC))
	rejoined := false
	t.Cleanup(func() {
		if !rejoined {
			_ = s.Rejoin(siteC)
		}
	})

	// Reads the policy allows: stat, ls, cat of every file, from C's member
	// (serializable) and C's own block servers.
	for _, pol := range []string{"session", "relaxed"} {
		dir := dirs[pol][siteC]
		var names []string
		err := bounded(t, "ls "+dir, func() error {
			ents, err := os.ReadDir(dir)
			for _, e := range ents {
				names = append(names, e.Name())
			}
			return err
		})
		if err != nil {
			t.Errorf("%s at the cut-off site C: ls: %v; want the listing", pol, err)
		} else if want := []string{"f-000", "f-001", "f-002"}; !slices.Equal(names, want) {
			t.Errorf("%s at the cut-off site C: ls lists %v, want %v", pol, names, want)
		}
		for name, id := range acksIn(acks[pol], "f-") {
			p := filepath.Join(dir, name)
			if err := bounded(t, "stat "+p, func() error {
				fi, err := os.Stat(p)
				if err == nil && fi.Size() != 24_000 {
					err = fmt.Errorf("size %d, want 24000", fi.Size())
				}
				return err
			}); err != nil {
				t.Errorf("%s at the cut-off site C: stat %s: %v", pol, name, err)
			}
			readBack(t, p, id, pol, "at the cut-off site C")
		}
	}

	// A write at C: refused with EIO once the majority wait is over, and
	// never acknowledged.
	for _, pol := range []string{"session", "relaxed"} {
		p := filepath.Join(dirs[pol][siteC], "minority")
		err := bounded(t, "write "+p, func() error { return writeSynced(p, stamped(9000, 24_000)) })
		t.Logf("%s: a write at the cut-off site C: %v", pol, err)
		if err == nil {
			t.Errorf("%s: a write at the cut-off site C was acknowledged", pol)
		} else if !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: a write at the cut-off site C failed with %v, want EIO", pol, err)
		}
	}

	// posix reads are linearizable: C's member has no leader to ask, so
	// the read fails (EIO) rather than answer what may be stale.
	for name := range acksIn(acks["posix"], "f-") {
		p := filepath.Join(dirs["posix"][siteC], name)
		err := bounded(t, "posix read "+p, func() error { _, err := os.ReadFile(p); return err })
		t.Logf("posix: a read at the cut-off site C: %v", err)
		if err == nil {
			t.Errorf("posix: a read at the cut-off site C answered without a majority")
		} else if !errors.Is(err, syscall.EIO) {
			t.Errorf("posix: a read at the cut-off site C failed with %v, want EIO", err)
		}
		break
	}

	must(t, s.Rejoin(siteC))
	rejoined = true

	// C writes again once its member has caught up (bounded).
	var werr error
	for try := range 60 {
		name := fmt.Sprintf("after-%02d", try)
		werr = writeAcked(dirs["session"][siteC], name, uint64(7000+try), 1, nil, acks["session"])
		if werr == nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if werr != nil {
		t.Fatalf("writes at C after rejoining: %v", werr)
	}
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
		t.Errorf("fsck after rejoining: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The refused writes left nothing behind.
	for _, pol := range []string{"session", "relaxed"} {
		if _, err := os.Stat(filepath.Join(dirs[pol][siteA], "minority")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the write refused at the cut-off site C: stat at A after rejoining: %v, want it absent", pol, err)
		}
	}
	// Every acknowledged write, at every site.
	for _, pol := range policies {
		checkAckedIn(t, dirs[pol], acks[pol], pol)
	}
}

// acksIn returns the acknowledged writes whose names start with prefix.
func acksIn(a *ackLog, prefix string) map[string]uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]uint64{}
	for n, id := range a.acks {
		if len(n) >= len(prefix) && n[:len(prefix)] == prefix {
			out[n] = id
		}
	}
	return out
}

// checkAckedIn is checkAcked naming the directory's policy.
func checkAckedIn(t *testing.T, at []string, acks *ackLog, pol string) {
	t.Helper()
	for site, dir := range at {
		for name, id := range acks.acks {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if want := stamped(id, 24_000); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s, site %d: acknowledged write %s: read %s, %v; want %s", pol, site, name, describeStamped(got), err, describeStamped(want))
			}
		}
	}
}

// readBack reads path (bounded) and checks it holds the stamped write id.
func readBack(t *testing.T, path string, id uint64, pol, when string) {
	t.Helper()
	var got []byte
	err := bounded(t, "read "+path, func() (err error) { got, err = os.ReadFile(path); return err })
	if want := stamped(id, 24_000); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s %s: read %s: %s, %v; want %s", pol, when, filepath.Base(path), describeStamped(got), err, describeStamped(want))
	}
}

// bounded runs fn and returns its error, or fails the test when fn has not
// returned after cutoffBound: a call that hangs is the failure looked for.
// The goroutine left behind ends when the mount goes (t.Cleanup).
func bounded(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(cutoffBound):
		t.Fatalf("%s: no answer after %v (the mount hangs)", what, cutoffBound)
		return nil
	}
}
