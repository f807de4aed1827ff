package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
)

// GatewayReadyPrefix is the ready line of `tessera gateway`.
const GatewayReadyPrefix = "tessera gateway: ready"

// AddGateway starts fileset gateway number len(Gateways()): `tessera
// gateway --meta ADDR --id g<i> --listen 127.0.0.1:0` with a certificate of
// role gateway named g<i>, then args, and waits for its ready line
// ("tessera gateway: ready id=ID listen=ADDR"). Close stops it after the
// mounts and before the block servers.
func (m *Multi) AddGateway(args ...string) (*Daemon, error) {
	m.mu.Lock()
	i := len(m.mu.gateways)
	m.mu.Unlock()
	id := "g" + strconv.Itoa(i)
	if m.pki != nil && !m.opts.MachineCA {
		if err := m.pki.Issue(id, "gateway"); err != nil {
			return nil, err
		}
	}
	a := slices.Concat([]string{"gateway", "--meta", m.MetaAddr(), "--id", id, "--listen", "127.0.0.1:0"}, m.TLSArgs(id), args)
	d := m.daemon("gateway "+id, GatewayReadyPrefix, a)
	d.id = id
	d.want = func(f map[string]string) error {
		if f["id"] != id || f["listen"] == "" {
			return fmt.Errorf("want id=%s and listen=ADDR", id)
		}
		return nil
	}
	err := d.start()
	m.mu.Lock()
	m.mu.gateways = append(m.mu.gateways, d) // even on error: Close stops what runs
	m.mu.Unlock()
	if err != nil {
		return nil, m.withLog(err)
	}
	return d, nil
}

// Gateways returns the gateways in the order they were added.
func (m *Multi) Gateways() []*Daemon {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.gateways)
}

// StartGateway starts `tessera gateway --meta ADDR --id ID --listen
// 127.0.0.1:0` beside a running `tessera up`, with a certificate of role
// gateway named id issued by the up's CA (DATA/tls), then args, and waits
// for its ready line. The caller stops it (Daemon.Stop), before the up.
func (c *Cluster) StartGateway(id string, args ...string) (*Daemon, error) {
	p := &PKI{bin: c.opts.Bin, dir: filepath.Join(c.opts.DataDir, "tls")}
	if err := p.Issue(id, "gateway"); err != nil {
		return nil, err
	}
	a := slices.Concat([]string{"gateway", "--meta", c.MetaAddr(), "--id", id, "--listen", "127.0.0.1:0"}, p.Args(id), args)
	d := &Daemon{
		name: "gateway " + id, bin: c.opts.Bin, args: a, prefix: GatewayReadyPrefix, id: id,
		want: func(f map[string]string) error {
			if f["id"] != id || f["listen"] == "" {
				return fmt.Errorf("want id=%s and listen=ADDR", id)
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
