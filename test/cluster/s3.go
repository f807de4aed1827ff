package cluster

import (
	"errors"
	"path/filepath"
	"slices"
)

// S3ReadyPrefix is the ready line of `tessera s3`.
const S3ReadyPrefix = "tessera s3: ready"

// StartS3 starts `tessera s3 --meta ADDR --listen LISTEN` beside a running
// `tessera up`, with the up's mount certificate (DATA/tls: the cluster
// identity, and the HTTPS certificate of the endpoint), then args, and
// waits for its ready line ("tessera s3: ready s3=ADDR ..."). The caller
// stops it (Daemon.Stop), before the up.
func (c *Cluster) StartS3(listen string, args ...string) (*Daemon, error) {
	p := &PKI{bin: c.opts.Bin, dir: filepath.Join(c.opts.DataDir, "tls")}
	a := slices.Concat([]string{"s3", "--meta", c.MetaAddr(), "--listen", listen}, p.Args("mount"), args)
	d := &Daemon{
		name: "s3", bin: c.opts.Bin, args: a, prefix: S3ReadyPrefix,
		want: func(f map[string]string) error {
			if f["s3"] == "" {
				return errors.New("want s3=ADDR")
			}
			return nil
		},
		// Its temporary directory (versitygw's admin socket) in the
		// test's data directory: a killed endpoint leaves nothing in /tmp.
		env: append(slices.Clone(c.opts.Env), "TMPDIR="+c.opts.DataDir), log: c.d.log, plain: true, readyTimeout: c.opts.ReadyTimeout, stopTimeout: c.opts.StopTimeout,
	}
	if err := d.start(); err != nil {
		return nil, err
	}
	return d, nil
}
