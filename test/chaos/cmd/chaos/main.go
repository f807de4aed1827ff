// Command chaos runs test/chaos against a real cluster for a while:
//
//	chaos [--minutes N] [--seed S] [--dir DIR] [--bin TESSERA] [--etcd ETCD]
//
// It builds the tessera binary unless --bin is given, prints progress,
// then the violations' details, and on its last line the run's summary
// (operations, faults, errors by kind, each invariant's result). It exits
// 1 when an invariant failed and 2 when the run could not be made or was
// interrupted: on SIGINT or SIGTERM it stops the faults and workloads,
// stops every process it started and unmounts its mounts before it exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"tessera/test/chaos"
	"tessera/test/cluster"
)

func main() {
	minutes := flag.Float64("minutes", 1, "how long faults are injected")
	seed := flag.Uint64("seed", 1, "seed of the fault schedule and the workloads")
	dir := flag.String("dir", "", "directory for the cluster's data and mounts (default: a new temporary one, removed after)")
	bin := flag.String("bin", "", "the tessera binary (default: built from the repository around the working directory)")
	etcd := flag.String("etcd", "", "the etcd server binary (default: $TESSERA_ETCD, else etcd on PATH)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *minutes, *seed, *dir, *bin, *etcd)
	if errors.Is(err, errInvariants) {
		os.Exit(1)
	}
	if errors.Is(err, errInterrupted) {
		fmt.Println("chaos INTERRUPTED: everything it started is stopped and unmounted")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		fmt.Println("chaos ERROR: the run could not be made:", err)
		os.Exit(2)
	}
}

// errInvariants ends a run whose summary (already printed) says an
// invariant failed.
var errInvariants = errors.New("an invariant failed")

// errInterrupted ends a run stopped by a signal (its cluster is stopped).
var errInterrupted = errors.New("interrupted by a signal before the final checks")

func run(ctx context.Context, minutes float64, seed uint64, dir, bin, etcd string) error {
	if minutes <= 0 || minutes > 24*60 {
		return fmt.Errorf("--minutes %v: want more than 0 and at most a day", minutes)
	}
	var keep *bool // a temporary directory, kept when the run fails
	if dir == "" {
		d, err := os.MkdirTemp("", "tessera-chaos-")
		if err != nil {
			return err
		}
		keep = new(bool)
		defer func() {
			if !*keep {
				os.RemoveAll(d)
			}
		}()
		dir = d
	}
	if etcd == "" {
		etcd = os.Getenv("TESSERA_ETCD")
	}
	if etcd == "" {
		p, err := exec.LookPath("etcd")
		if err != nil {
			return fmt.Errorf("no etcd server binary (scripts/deps.sh --test installs it): %w", err)
		}
		etcd = p
	}
	if bin == "" {
		root, err := cluster.RepoRoot(".")
		if err != nil {
			return err
		}
		bin = filepath.Join(dir, "tessera")
		bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		fmt.Println("chaos: building", bin)
		if err := cluster.Build(bctx, root, bin); err != nil {
			return err
		}
	}
	sum, err := chaos.Run(ctx, chaos.Config{Bin: bin, EtcdBin: etcd, Dir: filepath.Join(dir, "run"), Seed: seed,
		Duration: time.Duration(minutes * float64(time.Minute)), Log: os.Stdout})
	if err != nil {
		return err
	}
	fmt.Print(sum.Report())
	if !sum.OK() && keep != nil {
		*keep = true
		fmt.Printf("chaos: the run's directory is kept: %s (cluster output: %s)\n", dir, sum.LogFile)
	}
	fmt.Println(sum)
	if sum.Interrupted && sum.Violated() == 0 {
		return errInterrupted
	}
	if !sum.OK() {
		return errInvariants
	}
	return nil
}
