package chaos

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"tessera/internal/wan"
	"tessera/test/cluster"
)

// world is the cluster under test: 3 etcd members, 3 metas over them,
// block servers told every meta, and mounts each on its own meta through
// a Link (the mount's meta connection, which a fault cuts) with the other
// metas after it to fail over to.
type world struct {
	etcd   *cluster.Etcd
	multi  *cluster.Multi
	metas  []*cluster.Daemon
	links  []*wan.Link // links[i]: mount i to meta i
	mounts []*cluster.Daemon
}

func startWorld(cfg Config) (w *world, err error) {
	w = &world{}
	defer func() {
		if err != nil {
			err = errors.Join(err, w.close())
			w = nil
		}
	}()
	if w.etcd, err = cluster.StartEtcd(cluster.EtcdOptions{Bin: cfg.EtcdBin, Dir: filepath.Join(cfg.Dir, "etcd")}); err != nil {
		return w, err
	}
	if w.multi, err = cluster.StartMulti(cluster.MultiOptions{
		Bin: cfg.Bin, Dir: filepath.Join(cfg.Dir, "cluster"), MetaDB: w.etcd.URL("/chaos"),
		MetaArgs: []string{"--replicas", "2"},
	}); err != nil {
		return w, err
	}
	w.metas = []*cluster.Daemon{w.multi.Meta()}
	for range 2 {
		d, err := w.multi.AddMeta()
		if err != nil {
			return w, err
		}
		w.metas = append(w.metas, d)
	}
	var all []string
	for _, d := range w.metas {
		all = append(all, d.Addr())
	}
	for range cfg.BlockServers {
		if _, err := w.multi.AddServer("--meta", strings.Join(all, ",")); err != nil {
			return w, err
		}
	}
	for i := range cfg.Mounts {
		own := w.metas[i%len(w.metas)]
		l, err := wan.NewLink(own.Addr(), wan.LinkOptions{Name: fmt.Sprintf("mount m%d to %s", i, own.Name())})
		if err != nil {
			return w, err
		}
		w.links = append(w.links, l)
		list := []string{l.Addr()}
		for j := 1; j < len(w.metas); j++ {
			list = append(list, w.metas[(i+j)%len(w.metas)].Addr())
		}
		d, err := w.multi.AddMount("--meta", strings.Join(list, ","))
		if err != nil {
			return w, err
		}
		w.mounts = append(w.mounts, d)
	}
	return w, nil
}

// close stops everything this run started, by process id; nothing stays
// mounted. Errors are the daemons' contract violations (one that died by
// itself, or did not stop on SIGTERM).
func (w *world) close() error {
	var errs []error
	if w.multi != nil {
		errs = append(errs, w.multi.Close())
	}
	for _, l := range w.links {
		l.Close()
	}
	if w.etcd != nil {
		w.etcd.Close()
	}
	return errors.Join(errs...)
}
