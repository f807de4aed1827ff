package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MultiOptions describe a cluster of separate processes: one `tessera
// meta`, block servers (`tessera blockd`) and mounts (`tessera mount`).
//
// Contract of the binary it relies on:
//
//   - `tessera meta --data DIR --listen 127.0.0.1:0 [flags]` prints
//     "tessera meta: ready listen=ADDR";
//   - `tessera blockd --data DIR --meta ADDR --id ID --listen 127.0.0.1:0
//     --host H [flags]` prints "tessera blockd: ready id=ID listen=ADDR";
//   - `tessera mount --meta ADDR [flags] MNT` prints "tessera mount: ready
//     mount=MNT meta=ADDR"; SIGTERM unmounts and exits 0 (SIGTERM ends the
//     other two with status 0 as well);
//   - `tessera status --meta ADDR` prints "key: value" lines (see
//     ClusterStatus) and `tessera server drain|undrain|remove|list` take
//     --meta ADDR;
//   - `tessera certs init|issue NAME --role ROLE --host 127.0.0.1 --dir D`
//     make a CA and certificates, and every command above takes
//     --tls-cert/--tls-key/--tls-ca (or --insecure).
type MultiOptions struct {
	Bin          string   // the tessera binary
	Dir          string   // base directory: meta/, b0/, b1/…, m0/… are made in it
	BlockServers int      // started by StartMulti (more with AddServer)
	MetaArgs     []string // more flags for `meta` (--replicas, --block-size…)
	// MetaDB, when set, is meta's --meta-db (e.g. an etcd:// URL) instead
	// of --data Dir/meta.
	MetaDB string
	// ServerArgs returns more flags for block server i (nil: none). Each
	// server gets --id b<i> --host h<i> first, so a flag here overrides them.
	ServerArgs func(i int) []string
	Env        []string // added to the test's environment
	// Insecure runs every process with --insecure; otherwise StartMulti
	// makes a CA and certificates in Dir/pki (PKI) and every process,
	// admin commands included, runs with TLS.
	Insecure bool
	// MachineCA runs the roles with no TLS flags at all, as a user on one
	// machine would: each takes a certificate of the machine's CA, kept in
	// Dir/machine-tls (TESSERA_TLS_DIR in every process's environment).
	// Admin commands use an admin certificate of that CA (PKI).
	MachineCA bool

	ReadyTimeout time.Duration // per process, default 30 s
	StopTimeout  time.Duration // per process, default 20 s
}

// Multi is a running cluster of separate processes. Close it from every
// test's cleanup: it stops mounts, block servers and meta, in that order,
// and leaves nothing mounted whatever happened before.
type Multi struct {
	opts MultiOptions
	log  *logBuf // every process's output, each line prefixed with its name
	meta *Daemon
	pki  *PKI // nil with Insecure

	mu struct {
		sync.Mutex
		servers  []*Daemon
		mounts   []*Daemon
		metas    []*Daemon // more meta processes (AddMeta)
		gateways []*Daemon // fileset gateways (AddGateway, gateways.go)
	}
}

// StartMulti starts meta and opts.BlockServers block servers, each waited
// for. On error nothing is left running.
func StartMulti(opts MultiOptions) (*Multi, error) {
	if opts.Bin == "" || opts.Dir == "" {
		return nil, errors.New("cluster: Bin and Dir are required")
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 20 * time.Second
	}
	m := &Multi{opts: opts, log: newLogBuf(4 << 20)}
	if opts.MachineCA {
		mdir := filepath.Join(opts.Dir, "machine-tls")
		m.opts.Env = append(slices.Clone(opts.Env), "TESSERA_TLS_DIR="+mdir)
		m.pki = &PKI{bin: opts.Bin, dir: mdir} // its CA: made by the first role
	} else if !opts.Insecure {
		var err error
		if m.pki, err = newPKI(opts.Bin, filepath.Join(opts.Dir, "pki")); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(opts.Dir, "meta")
	db := []string{"--data", dir}
	if opts.MetaDB != "" {
		db = []string{"--meta-db", opts.MetaDB}
	}
	m.meta = m.daemon("meta", MetaReadyPrefix,
		slices.Concat([]string{"meta", "--listen", "127.0.0.1:0"}, db, m.TLSArgs("meta"), opts.MetaArgs))
	m.meta.dataDir = dir
	m.meta.want = func(f map[string]string) error {
		if f["listen"] == "" {
			return errors.New("no listen=ADDR")
		}
		return nil
	}
	if err := m.meta.start(); err != nil {
		return nil, m.withLog(err)
	}
	if opts.MachineCA {
		if err := m.pki.Issue("admin", "admin"); err != nil {
			return nil, errors.Join(err, m.Close())
		}
	}
	for range opts.BlockServers {
		if _, err := m.AddServer(); err != nil {
			return nil, errors.Join(err, m.Close())
		}
	}
	return m, nil
}

func (m *Multi) daemon(name, prefix string, args []string) *Daemon {
	return &Daemon{
		name: name, bin: m.opts.Bin, args: args, prefix: prefix, env: m.opts.Env, log: m.log,
		readyTimeout: m.opts.ReadyTimeout, stopTimeout: m.opts.StopTimeout,
	}
}

func (m *Multi) withLog(err error) error {
	return fmt.Errorf("%w\n--- cluster output (tail) ---\n%s", err, m.log.Tail(16<<10))
}

// Opts returns the options the cluster was started with.
func (m *Multi) Opts() MultiOptions { return m.opts }

// Meta returns the meta service's daemon.
func (m *Multi) Meta() *Daemon { return m.meta }

// MetaAddr returns the meta service's address.
func (m *Multi) MetaAddr() string { return m.meta.Addr() }

// AddServer starts block server number len(Servers()) with id b<i>, host
// label h<i>, data directory Dir/b<i>, then opts.ServerArgs(i) and args.
func (m *Multi) AddServer(args ...string) (*Daemon, error) {
	m.mu.Lock()
	i := len(m.mu.servers)
	m.mu.Unlock()
	id := "b" + strconv.Itoa(i)
	dir := filepath.Join(m.opts.Dir, id)
	if m.pki != nil {
		if err := m.pki.Issue(id, "blockd"); err != nil {
			return nil, err
		}
	}
	a := append([]string{"blockd", "--data", dir, "--meta", m.MetaAddr(), "--id", id,
		"--listen", "127.0.0.1:0", "--host", "h" + strconv.Itoa(i)}, m.TLSArgs(id)...)
	if m.opts.ServerArgs != nil {
		a = append(a, m.opts.ServerArgs(i)...)
	}
	d := m.daemon("blockd "+id, BlockdReadyPrefix, append(a, args...))
	d.dataDir, d.id = dir, id
	d.want = func(f map[string]string) error {
		if f["id"] != id || f["listen"] == "" {
			return fmt.Errorf("want id=%s and listen=ADDR", id)
		}
		return nil
	}
	if err := d.start(); err != nil {
		return nil, m.withLog(err)
	}
	m.mu.Lock()
	m.mu.servers = append(m.mu.servers, d)
	m.mu.Unlock()
	return d, nil
}

// AddMount starts `tessera mount --meta ADDR ARGS Dir/m<i>` and waits until
// it is mounted. Each mount is a fresh process: its caches are cold.
func (m *Multi) AddMount(args ...string) (*Daemon, error) {
	return m.AddMountOf("", args...)
}

// AddMountOf is AddMount of a source: `tessera mount --meta ADDR [flags]
// SOURCE MNT` (SOURCE NAME:/dir: a cluster's name and a directory of it;
// "" mounts the root as AddMount does).
func (m *Multi) AddMountOf(source string, args ...string) (*Daemon, error) {
	m.mu.Lock()
	i := len(m.mu.mounts)
	m.mu.Unlock()
	name := "m" + strconv.Itoa(i)
	mnt := filepath.Join(m.opts.Dir, name)
	a := slices.Concat([]string{"mount", "--meta", m.MetaAddr()}, m.TLSArgs("mount"), args)
	if source != "" {
		a = append(a, source)
	}
	d := m.daemon("mount "+name, MountReadyPrefix, append(a, mnt))
	d.mountDir = mnt
	d.want = func(f map[string]string) error {
		if f["mount"] != mnt {
			return fmt.Errorf("want mount=%s", mnt)
		}
		return nil
	}
	err := d.start()
	m.mu.Lock()
	m.mu.mounts = append(m.mu.mounts, d) // even on error: Close checks its mount point
	m.mu.Unlock()
	if err != nil {
		return nil, m.withLog(err)
	}
	return d, nil
}

// Servers returns the block servers in the order they were added.
func (m *Multi) Servers() []*Daemon {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.servers)
}

// Server returns the block server with the given id, or nil.
func (m *Multi) Server(id string) *Daemon {
	for _, d := range m.Servers() {
		if d.id == id {
			return d
		}
	}
	return nil
}

// Mounts returns the mounts in the order they were added.
func (m *Multi) Mounts() []*Daemon {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.mounts)
}

// LogMark returns a position in the cluster's output for LogSince.
func (m *Multi) LogMark() int64 { return m.log.Mark() }

// LogSince returns the cluster's output after mark (as far as it is kept).
func (m *Multi) LogSince(mark int64) string { return m.log.Since(mark) }

// LogTail returns the last n bytes of the cluster's output.
func (m *Multi) LogTail(n int) string { return m.log.Tail(n) }

// Run executes `tessera ARGS... --meta ADDR` with the admin certificate
// (bounded by ctx). A non-zero exit is not an error; failing to run is.
func (m *Multi) Run(ctx context.Context, args ...string) (Result, error) {
	return RunBin(ctx, m.opts.Bin, slices.Concat(args, []string{"--meta", m.MetaAddr()}, m.TLSArgs("admin"))...)
}

// PKI returns the cluster's CA and certificates (nil with Insecure).
func (m *Multi) PKI() *PKI { return m.pki }

// TLSArgs returns the flags that make a process use NAME's certificate
// (meta, b<i>, mount, admin, or one issued with PKI().Issue), or
// --insecure in an Insecure cluster.
func (m *Multi) TLSArgs(name string) []string {
	if m.pki == nil {
		return []string{"--insecure"}
	}
	if m.opts.MachineCA && name != "admin" {
		return nil
	}
	return m.pki.Args(name)
}

// ServerCmd runs `tessera server OP ID --meta ADDR` (OP: drain, undrain,
// remove) and fails unless it exits 0.
func (m *Multi) ServerCmd(ctx context.Context, op, id string) error {
	res, err := m.Run(ctx, "server", op, id)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("tessera server %s %s: exit %d: %s%s", op, id, res.ExitCode, res.Stdout, res.Stderr)
	}
	return err
}

// Close stops the mounts, then the gateways, then the block servers, then meta (SIGTERM,
// bounded), and makes sure nothing stays mounted. Every contract violation
// (a daemon that had died by itself, exited non-zero, or left its mount) is
// in the error. It may be called more than once.
func (m *Multi) Close() error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	stopAll := func(ds []*Daemon) {
		for _, d := range ds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := d.Stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	stopAll(m.Mounts())
	stopAll(m.Gateways())
	stopAll(m.Servers())
	m.mu.Lock()
	metas := append([]*Daemon{m.meta}, m.mu.metas...)
	m.mu.Unlock()
	stopAll(metas)
	return errors.Join(errs...)
}
