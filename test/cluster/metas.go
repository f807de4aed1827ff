package cluster

import (
	"errors"
	"slices"
	"strconv"
)

// AddMeta starts one more `tessera meta` over the same store as the first
// (MultiOptions.MetaDB: several meta processes share only a replicated
// store, such as etcd), with the first one's certificate, MetaArgs and
// then args, and waits for its ready line. Close stops it with the first.
func (m *Multi) AddMeta(args ...string) (*Daemon, error) {
	if m.opts.MetaDB == "" {
		return nil, errors.New("cluster: AddMeta needs MultiOptions.MetaDB (a store several processes share)")
	}
	m.mu.Lock()
	name := "meta" + strconv.Itoa(len(m.mu.metas)+1)
	m.mu.Unlock()
	d := m.daemon(name, MetaReadyPrefix, slices.Concat([]string{"meta", "--listen", "127.0.0.1:0", "--meta-db", m.opts.MetaDB},
		m.TLSArgs("meta"), m.opts.MetaArgs, args))
	d.want = func(f map[string]string) error {
		if f["listen"] == "" {
			return errors.New("no listen=ADDR")
		}
		return nil
	}
	err := d.start()
	m.mu.Lock()
	m.mu.metas = append(m.mu.metas, d) // even on error: Close stops what runs
	m.mu.Unlock()
	if err != nil {
		return nil, m.withLog(err)
	}
	return d, nil
}
