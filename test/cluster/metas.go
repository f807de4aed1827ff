package cluster

import (
	"errors"
	"slices"
	"strconv"
)

// AddMeta starts one more `tessera meta` over the shared store of
// MultiOptions.MetaDB (an etcd:// URL), with the first meta's flags and
// args, and waits until it listens. Mounts reach it with
// AddMount("--meta", d.Addr()) (or a list of addresses, to fail over).
func (m *Multi) AddMeta(args ...string) (*Daemon, error) {
	if m.opts.MetaDB == "" {
		return nil, errors.New("cluster: AddMeta needs MultiOptions.MetaDB, a store meta processes share")
	}
	m.mu.Lock()
	name := "meta" + strconv.Itoa(len(m.mu.metas)+1)
	m.mu.Unlock()
	d := m.daemon(name, MetaReadyPrefix, slices.Concat([]string{"meta", "--listen", "127.0.0.1:0", "--meta-db", m.opts.MetaDB},
		m.TLSArgs("meta"), m.opts.MetaArgs, args))
	d.want = m.meta.want
	err := d.start()
	m.mu.Lock()
	m.mu.metas = append(m.mu.metas, d) // even on error: Close stops it
	m.mu.Unlock()
	if err != nil {
		return nil, m.withLog(err)
	}
	return d, nil
}

// Metas returns the meta processes: the first, then those AddMeta added.
func (m *Multi) Metas() []*Daemon {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Daemon{m.meta}, m.mu.metas...)
}
