package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"tessera/internal/wan"
	"tessera/test/cluster"
)

// faultKinds are what the schedule picks from, each equally likely.
var faultKinds = []string{
	"kill-meta", "kill-blockd", "kill-etcd", "kill-etcd-leader", "move-leader",
	"pause-meta", "pause-blockd", "pause-etcd", "cut-mount-meta",
}

// faults injects one fault at a time until ctx ends: a calm gap, then a
// fault of a kind, a target and a length all drawn from the seed's
// generator (so one seed gives one schedule; when things happen depends
// on the machine). Each fault is healed before the next starts, and the
// last one before faults returns.
func (r *run) faults(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 1))
	for {
		pause(ctx, time.Duration(2000+rng.IntN(4000))*time.Millisecond)
		if ctx.Err() != nil {
			return
		}
		kind := faultKinds[rng.IntN(len(faultKinds))]
		length := time.Duration(1000+rng.IntN(4000)) * time.Millisecond
		target := rng.IntN(3)
		if err := r.inject(kind, target, length); err != nil {
			r.rec.violate("cluster-recovers", fmt.Sprintf("%s: %v", kind, err))
			r.logf("fault %s: %v", kind, err)
		}
	}
}

// inject runs one fault for about length and heals it. The fault's length
// is slept, not raced with ctx: a heal always happens.
func (r *run) inject(kind string, target int, length time.Duration) error {
	w := r.w
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r.rec.faultStart(kind)
	defer r.rec.faultEnd()
	daemon := func(ds []*cluster.Daemon) *cluster.Daemon { return ds[target%len(ds)] }
	switch kind {
	case "kill-meta", "kill-blockd":
		d := daemon(w.metas)
		if kind == "kill-blockd" {
			d = daemon(w.multi.Servers())
		}
		r.logf("fault %s: %s for %v", kind, d.Name(), length)
		if err := d.Kill9(); err != nil {
			return err
		}
		time.Sleep(length)
		return d.Start()
	case "kill-etcd", "kill-etcd-leader":
		i := target % w.etcd.Members()
		if kind == "kill-etcd-leader" {
			if l := w.etcd.Leader(ctx); l >= 0 {
				i = l
			}
		}
		r.logf("fault %s: etcd e%d for %v", kind, i, length)
		if err := w.etcd.Kill9(i); err != nil {
			return err
		}
		time.Sleep(length)
		return w.etcd.Restart(ctx, i)
	case "move-leader":
		l := w.etcd.Leader(ctx)
		i := (max(l, 0) + 1 + target%2) % w.etcd.Members()
		r.logf("fault %s: from e%d to e%d", kind, l, i)
		return w.etcd.MoveLeader(ctx, i)
	case "pause-meta", "pause-blockd":
		d := daemon(w.metas)
		if kind == "pause-blockd" {
			d = daemon(w.multi.Servers())
		}
		pid := d.PID()
		r.logf("fault %s: %s (pid %d) for %v", kind, d.Name(), pid, length)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(length)
		return syscall.Kill(pid, syscall.SIGCONT)
	case "pause-etcd":
		i := target % w.etcd.Members()
		r.logf("fault %s: etcd e%d (pid %d) for %v", kind, i, w.etcd.PID(i), length)
		if err := w.etcd.Pause(i); err != nil {
			return err
		}
		time.Sleep(length)
		return w.etcd.Resume(i)
	case "cut-mount-meta":
		l := w.links[target%len(w.links)]
		mode := wan.Refuse
		if target%2 == 1 {
			mode = wan.Blackhole
		}
		r.logf("fault %s: mount m%d's link to its meta, %v, for %v", kind, target%len(w.links), mode, length)
		if err := l.Cut(mode); err != nil {
			return err
		}
		time.Sleep(length)
		return l.Heal()
	}
	return fmt.Errorf("unknown fault kind %q", kind)
}
