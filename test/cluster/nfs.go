package cluster

import (
	"errors"
	"path/filepath"
	"slices"
)

// NFSReadyPrefix is the ready line of `tessera nfs`.
const NFSReadyPrefix = "tessera nfs: ready"

// StartNFS starts `tessera nfs --meta ADDR --listen 127.0.0.1:0` beside a
// running `tessera up`, with the up's mount certificate (DATA/tls), then
// args, and waits for its ready line ("tessera nfs: ready nfs=ADDR ...").
// The caller stops it (Daemon.Stop), before the up.
func (c *Cluster) StartNFS(args ...string) (*Daemon, error) {
	p := &PKI{bin: c.opts.Bin, dir: filepath.Join(c.opts.DataDir, "tls")}
	a := slices.Concat([]string{"nfs", "--meta", c.MetaAddr(), "--listen", "127.0.0.1:0"}, p.Args("mount"), args)
	d := &Daemon{
		name: "nfs", bin: c.opts.Bin, args: a, prefix: NFSReadyPrefix,
		want: func(f map[string]string) error {
			if f["nfs"] == "" {
				return errors.New("want nfs=ADDR")
			}
			return nil
		},
		env: c.opts.Env, log: c.d.log, plain: true, readyTimeout: c.opts.ReadyTimeout, stopTimeout: c.opts.StopTimeout,
	}
	if err := d.start(); err != nil {
		return nil, err
	}
	return d, nil
}
