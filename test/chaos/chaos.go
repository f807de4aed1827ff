// Package chaos is a Jepsen-style run against a real cluster: 3 etcd
// members, 3 `tessera meta` over them, block servers and FUSE mounts on
// different metas, all real processes on loopback (test/cluster). While
// writers (fsync'd files, each acknowledged one recorded with its content
// hash), renamers, readers and linearizability clients work on every
// mount, faults are injected one at a time on a schedule drawn from a seed:
// kill -9 and restart of a meta, a block server or an etcd member (the
// leader too), etcd leader moves, SIGSTOP/SIGCONT of a process, and a
// mount's meta connection cut (refused or black-holed).
//
// Invariants (see docs/design/2026-11-28-chaos.md):
//   - acked-readback: every acknowledged file reads back byte for byte on
//     every mount, during the run and at its end;
//   - healthy-reads: no read of an acknowledged file fails while no fault
//     is on (nor healed less than Config.Grace ago);
//   - no-calm-errors: no write, rename or register operation fails then;
//   - linearizable: the registers' history, through O_SYNC|O_RSYNC
//     handles, is linearizable (porcupine, test/lincheck's model);
//   - cluster-recovers: every fault heals (a killed process starts again);
//   - fsck: `tessera fsck` is clean at the end;
//   - daemons: no process died by itself or failed to stop on SIGTERM.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Config describes a run.
type Config struct {
	Bin          string        // the tessera binary
	EtcdBin      string        // the etcd server binary
	Dir          string        // everything the run writes
	Seed         uint64        // of the fault schedule and the workloads
	Duration     time.Duration // of the faults phase
	BlockServers int           // default 3
	Mounts       int           // default 3, each on its own meta
	// Grace is how long after a fault heals errors are still put down to
	// it (a mount's failover, a meta's reconnection); default 10 s.
	Grace time.Duration
	Log   io.Writer // progress lines; nil: none
}

// run is one chaos run in progress.
type run struct {
	cfg   Config
	w     *world
	rec   *recorder
	hist  *history
	lin   *linHistory
	logMu sync.Mutex
}

func (r *run) logf(format string, a ...any) {
	if r.cfg.Log == nil {
		return
	}
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.cfg.Log, "%s chaos: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
}

// Run starts the cluster, runs the workloads under faults for
// cfg.Duration, checks the invariants and stops everything it started.
// The error is for a run that could not be made (the cluster did not
// start); broken invariants are in the Summary. When ctx ends first (the
// command's SIGINT or SIGTERM), the faults and workloads stop at once, the
// final checks are skipped and everything started is stopped and
// unmounted all the same: the Summary says Interrupted.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if cfg.Bin == "" || cfg.EtcdBin == "" || cfg.Dir == "" {
		return nil, errors.New("chaos: Bin, EtcdBin and Dir are required")
	}
	if cfg.BlockServers == 0 {
		cfg.BlockServers = 3
	}
	if cfg.Mounts == 0 {
		cfg.Mounts = 3
	}
	if cfg.Grace == 0 {
		cfg.Grace = 10 * time.Second
	}
	r := &run{cfg: cfg, rec: newRecorder(cfg.Grace), hist: &history{renamed: map[string]*ackedFile{}}, lin: &linHistory{}}
	r.logf("seed %d, %v of faults; starting 3 etcd members, 3 metas, %d block servers, %d mounts in %s",
		cfg.Seed, cfg.Duration, cfg.BlockServers, cfg.Mounts, cfg.Dir)
	w, err := startWorld(cfg)
	if err != nil {
		return nil, err
	}
	r.w = w
	sum := &Summary{Seed: cfg.Seed, Duration: cfg.Duration}
	defer func() {
		if err := w.close(); err != nil {
			r.rec.violate("daemons", err.Error())
		}
		sum.LogFile, sum.LogSignatures = r.saveLog()
		r.rec.mu.Lock()
		sum.fill(r.rec)
		r.rec.mu.Unlock()
	}()
	for i, m := range w.mounts {
		r.logf("mount m%d at %s uses meta %s", i, m.Mount(), m.Field("meta"))
	}
	if err := os.Mkdir(filepath.Join(w.mounts[0].Mount(), dataDir), 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if err := r.linSetup(); err != nil {
		return nil, err
	}
	r.lin.start = time.Now()
	r.rec.healed = time.Now().Add(-cfg.Grace) // calm from the start

	work, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for m := range w.mounts {
		wg.Go(func() { r.writer(work, m, 0) })
		wg.Go(func() { r.writer(work, m, 1) })
		wg.Go(func() { r.renamer(work, m) })
		wg.Go(func() { r.reader(work, m) })
		wg.Go(func() { r.linWorker(work, m) })
	}
	faultCtx, stopFaults := context.WithTimeout(ctx, cfg.Duration)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-faultCtx.Done():
				return
			case <-tick.C:
				r.rec.mu.Lock()
				r.logf("progress: ops %s; faults %d; errors %d; violations %d", counts(r.rec.ops),
					total(r.rec.faults), total(r.rec.errs), total(r.rec.nviol))
				r.rec.mu.Unlock()
			}
		}
	}()
	r.faults(faultCtx)
	stopFaults()
	<-done
	if ctx.Err() == nil {
		r.logf("faults over; %v of calm load", cfg.Grace)
		select {
		case <-time.After(cfg.Grace):
		case <-ctx.Done():
		}
	}
	stop()
	wg.Wait()
	if ctx.Err() != nil {
		r.logf("interrupted: stopping the cluster, no final checks")
		sum.Interrupted = true
		return sum, nil
	}

	r.logf("final checks")
	sum.Files, sum.ReadbackMounts = r.checkReadback()
	sum.Linear, _ = r.checkLinear(time.Minute)
	sum.Fsck = r.checkFsck()
	return sum, nil
}
