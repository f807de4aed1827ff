package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/blockdial"
	"tessera/internal/wan"
)

// SitesOptions describe three (or more) emulated sites on this machine
// (issue 13): per site one etcd member, one `tessera meta --meta-db
// etcd://<local member>/tessera --site S`, block servers `tessera blockd
// --site S` and a FUSE mount `tessera mount --site S --meta <local
// meta>,<the others>`. Every connection between sites crosses a
// internal/wan link with the round-trip time of its pair.
type SitesOptions struct {
	Bin     string // the tessera binary
	EtcdBin string // the etcd server (etcdtest.Binary)
	Dir     string // base directory
	// Sites are the sites' names (default siteA, siteB, siteC).
	Sites []string
	// RTT between sites (default rNFS Figure 6: A-B 60 ms, A-C 60 ms,
	// B-C 120 ms).
	RTT [][]time.Duration
	// Rate caps each direction of every WAN link (bytes/s; 0: none).
	Rate           int64
	ServersPerSite int      // default 2
	MetaArgs       []string // more flags for every meta
	MountArgs      []string // more flags for every mount
	// NoMounts starts no mounts (AddMount adds them).
	NoMounts bool
	// EtcdNoWAN connects the etcd members without delay (the metadata
	// store as if its members were close together); the default makes
	// their peer traffic pay the WAN (etcdPeerLatency).
	EtcdNoWAN bool
	// MajorityWait is every meta's majority-wait (how long a write waits
	// for an etcd leader before it fails; 0: etcdkv's default).
	MajorityWait time.Duration
	// EtcdURLQuery is appended to every meta's etcd:// URL as more
	// parameters (e.g. "batch=0": etcdkv's URL parameters).
	EtcdURLQuery string
}

// Figure6RTT is the rNFS Figure 6 matrix of three sites.
func Figure6RTT() [][]time.Duration {
	const ms = time.Millisecond
	return [][]time.Duration{{0, 60 * ms, 60 * ms}, {60 * ms, 0, 120 * ms}, {60 * ms, 120 * ms, 0}}
}

// ScaleRTT returns rtt with every entry divided by div (the same shape at
// a fraction of the delays).
func ScaleRTT(rtt [][]time.Duration, div int) [][]time.Duration {
	out := make([][]time.Duration, len(rtt))
	for i := range rtt {
		for _, d := range rtt[i] {
			out[i] = append(out[i], d/time.Duration(div))
		}
	}
	return out
}

// Sites is a running multi-site cluster. StartSites registers its Close
// with t.Cleanup: processes are stopped by their ids, mounts unmounted.
//
// How sites reach each other: a site dials another site's meta through
// Mesh links (the mount's --meta list names the links); a block server
// registers one address, so every process of a site gets TESSERA_ROUTES
// (internal/up) mapping each remote block server to the link of its pair;
// etcd members peer through one link each (see etcdPeerLatency).
type Sites struct {
	opts  SitesOptions
	log   *logBuf
	pki   *PKI
	mesh  *wan.Mesh
	etcd  []*etcdMember
	metas []*Daemon
	// metaVia[i][j]: the address through which site i reaches site j's meta.
	metaVia [][]string
	servers [][]*Daemon
	routes  []string // per site: TESSERA_ROUTES

	mu     sync.Mutex
	mounts [][]*Daemon
	closed bool
	// isolated is 1 + the site Isolate cut off, 0 when none is.
	isolated int
}

// StartSites starts the sites and waits for every process; it fails the
// test (with the cluster's log) when something does not come up.
func StartSites(t testing.TB, opts SitesOptions) *Sites {
	t.Helper()
	s, err := startSites(opts)
	if s != nil {
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("sites: close: %v", err)
			}
		})
	}
	if err != nil {
		if s != nil {
			p := filepath.Join(os.TempDir(), "tessera-sites-"+strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".log")
			if werr := os.WriteFile(p, []byte(s.log.Since(0)), 0o644); werr == nil {
				t.Logf("whole sites output: %s", p)
			}
		}
		t.Fatalf("sites: %v", err)
	}
	return s
}

// NewSites is StartSites for programs (bench/cmd/multisite): the caller
// must Close the result, also when an error is returned with it.
func NewSites(opts SitesOptions) (*Sites, error) { return startSites(opts) }

func startSites(opts SitesOptions) (*Sites, error) {
	if opts.Bin == "" || opts.Dir == "" || opts.EtcdBin == "" {
		return nil, errors.New("cluster: Bin, EtcdBin and Dir are required")
	}
	if len(opts.Sites) == 0 {
		opts.Sites = []string{"siteA", "siteB", "siteC"}
	}
	if opts.RTT == nil {
		opts.RTT = Figure6RTT()
	}
	if opts.ServersPerSite == 0 {
		opts.ServersPerSite = 2
	}
	n := len(opts.Sites)
	mesh, err := wan.NewMesh(wan.MeshOptions{RTT: opts.RTT, Rate: opts.Rate})
	if err != nil {
		return nil, err
	}
	s := &Sites{opts: opts, log: newLogBuf(8 << 20), mesh: mesh,
		metaVia: make([][]string, n), servers: make([][]*Daemon, n), routes: make([]string, n), mounts: make([][]*Daemon, n)}
	if s.pki, err = newPKI(opts.Bin, filepath.Join(opts.Dir, "pki")); err != nil {
		return s, err
	}
	if err := s.startEtcd(); err != nil {
		return s, err
	}
	// Addresses first: every process of a site needs every route at start.
	metaAddr := make([]string, n)
	blockAddr := make([][]string, n)
	for i := range n {
		if metaAddr[i], err = freeAddr(); err != nil {
			return s, err
		}
		via, err := mesh.Expose(i, metaAddr[i])
		if err != nil {
			return s, err
		}
		for j := range n {
			s.metaVia[j] = append(s.metaVia[j], via[j])
		}
		for range opts.ServersPerSite {
			a, err := freeAddr()
			if err != nil {
				return s, err
			}
			via, err := mesh.Expose(i, a)
			if err != nil {
				return s, err
			}
			blockAddr[i] = append(blockAddr[i], a)
			for j := range n {
				if j != i {
					s.routes[j] += a + "=" + via[j] + ","
				}
			}
		}
	}
	// Meta certificates name every address a link listens on.
	hosts := []string{"127.0.0.1"}
	for i := range n {
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d", 10+i))
	}
	for i, site := range opts.Sites {
		if err := s.pki.Issue("meta-"+site, "meta", "--host", strings.Join(hosts, ",")); err != nil {
			return s, err
		}
		d := s.daemon(i, "meta "+site, MetaReadyPrefix, slices.Concat(
			[]string{"meta", "--listen", metaAddr[i], "--site", site, "--cluster", "sites",
				"--meta-db", s.metaDB(i)},
			s.pki.Args("meta-"+site), opts.MetaArgs))
		d.want = func(f map[string]string) error {
			if f["listen"] != metaAddr[i] {
				return fmt.Errorf("want listen=%s", metaAddr[i])
			}
			return nil
		}
		if err := d.start(); err != nil {
			return s, s.withLog(err)
		}
		s.metas = append(s.metas, d)
	}
	for i, site := range opts.Sites {
		for k, a := range blockAddr[i] {
			id := fmt.Sprintf("%s-b%d", site, k)
			if err := s.pki.Issue(id, "blockd"); err != nil {
				return s, err
			}
			dir := filepath.Join(opts.Dir, id)
			d := s.daemon(i, "blockd "+id, BlockdReadyPrefix, slices.Concat(
				[]string{"blockd", "--data", dir, "--meta", s.MetaList(i), "--id", id, "--listen", a,
					"--host", id, "--site", site}, s.pki.Args(id)))
			d.dataDir, d.id = dir, id
			if err := d.start(); err != nil {
				return s, s.withLog(err)
			}
			s.servers[i] = append(s.servers[i], d)
		}
	}
	if !opts.NoMounts {
		for i := range n {
			if _, err := s.AddMount(i); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// metaDB is the --meta-db URL of site i's meta: its own site's member.
func (s *Sites) metaDB(i int) string {
	var q []string
	if s.opts.MajorityWait > 0 {
		q = append(q, "majority-wait="+s.opts.MajorityWait.String())
	}
	if s.opts.EtcdURLQuery != "" {
		q = append(q, s.opts.EtcdURLQuery)
	}
	u := "etcd://" + s.etcd[i].clientAddr + "/tessera"
	if len(q) > 0 {
		u += "?" + strings.Join(q, "&")
	}
	return u
}

func (s *Sites) daemon(site int, name, prefix string, args []string) *Daemon {
	return &Daemon{
		name: name, bin: s.opts.Bin, args: args, prefix: prefix, log: s.log,
		env:          []string{blockdial.RoutesEnv + "=" + strings.TrimSuffix(s.routes[site], ",")},
		readyTimeout: time.Minute, stopTimeout: 30 * time.Second,
	}
}

func (s *Sites) withLog(err error) error {
	return fmt.Errorf("%w\n--- sites output (tail) ---\n%s", err, s.log.Tail(16<<10))
}

// MetaList is the --meta list of site i: its own meta first, then the
// links to the others'.
func (s *Sites) MetaList(i int) string {
	l := []string{s.metaVia[i][i]}
	for j, a := range s.metaVia[i] {
		if j != i {
			l = append(l, a)
		}
	}
	return strings.Join(l, ",")
}

// AddMount starts another `tessera mount --site S --meta MetaList(i)` at
// site i (opts.MountArgs, then args) and waits until it is mounted.
func (s *Sites) AddMount(i int, args ...string) (*Daemon, error) {
	s.mu.Lock()
	k := len(s.mounts[i])
	s.mu.Unlock()
	site := s.opts.Sites[i]
	mnt := filepath.Join(s.opts.Dir, fmt.Sprintf("%s-m%d", site, k))
	d := s.daemon(i, fmt.Sprintf("mount %s-m%d", site, k), MountReadyPrefix, slices.Concat(
		[]string{"mount", "--site", site, "--meta", s.MetaList(i)}, s.pki.Args("mount"), s.opts.MountArgs, args, []string{mnt}))
	d.mountDir = mnt
	err := d.start()
	s.mu.Lock()
	s.mounts[i] = append(s.mounts[i], d) // even on error: Close checks its mount point
	s.mu.Unlock()
	if err != nil {
		return nil, s.withLog(err)
	}
	return d, nil
}

// Names are the sites' names.
func (s *Sites) Names() []string { return s.opts.Sites }

// Meta returns site i's meta process.
func (s *Sites) Meta(i int) *Daemon { return s.metas[i] }

// Servers returns site i's block servers.
func (s *Sites) Servers(i int) []*Daemon { return s.servers[i] }

// Mount returns site i's first mount.
func (s *Sites) Mount(i int) *Daemon { return s.Mounts(i)[0] }

// Mounts returns site i's mounts.
func (s *Sites) Mounts(i int) []*Daemon {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mounts[i])
}

// Mesh returns the WAN links (byte counters, per-link cuts).
func (s *Sites) Mesh() *wan.Mesh { return s.mesh }

// LogMark, LogSince and LogTail read the output of every process.
func (s *Sites) LogMark() int64             { return s.log.Mark() }
func (s *Sites) LogSince(mark int64) string { return s.log.Since(mark) }
func (s *Sites) LogTail(n int) string       { return s.log.Tail(n) }

// Run executes `tessera ARGS... --meta <site i's list>` with the admin
// certificate, at site i (its routes).
func (s *Sites) Run(ctx context.Context, site int, args ...string) (Result, error) {
	if err := s.pki.Issue("admin", "admin"); err != nil {
		return Result{}, err
	}
	return runBinEnv(ctx, s.opts.Bin, []string{blockdial.RoutesEnv + "=" + strings.TrimSuffix(s.routes[site], ",")},
		slices.Concat(args, []string{"--meta", s.MetaList(site)}, s.pki.Args("admin"))...)
}

// Partition cuts site i off: every WAN link into and out of it refuses
// connections and closes open ones, and its etcd member is stopped
// (SIGSTOP): one advertised peer URL per member lets no link tell which
// site dials it, so a link alone cannot cut a member's outgoing traffic.
// The site's meta then sees a member that answers nothing, where a real
// partition would leave it answering serializable reads.
func (s *Sites) Partition(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.etcd[i]
	fmt.Fprintf(s.log, "=== sites: partition %s at %s\n", s.opts.Sites[i], time.Now().Format(logTime))
	if err := s.mesh.Partition(i, wan.Refuse); err != nil {
		return err
	}
	if err := m.peer.Cut(wan.Refuse); err != nil {
		return err
	}
	if !m.stopped {
		if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return fmt.Errorf("cluster: stop etcd %s: %w", m.name, err)
		}
		m.stopped = true
	}
	return nil
}

// Heal undoes Partition(i).
func (s *Sites) Heal(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.etcd[i]
	fmt.Fprintf(s.log, "=== sites: heal %s at %s\n", s.opts.Sites[i], time.Now().Format(logTime))
	if m.stopped {
		if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return fmt.Errorf("cluster: continue etcd %s: %w", m.name, err)
		}
		m.stopped = false
	}
	if err := m.peer.Heal(); err != nil {
		return err
	}
	return s.mesh.Heal(i)
}

// Close stops mounts, block servers, metas (SIGTERM, bounded), then etcd,
// then the links; nothing stays mounted. It may be called more than once.
func (s *Sites) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.isolated != 0 {
		_ = s.rejoinLocked(s.isolated - 1)
	}
	var mounts []*Daemon
	for _, ms := range s.mounts {
		mounts = append(mounts, ms...)
	}
	s.mu.Unlock()
	for i, m := range s.etcd {
		if m.stopped {
			_ = s.Heal(i)
		}
	}
	var errs []error
	var mu sync.Mutex
	stopAll := func(ds []*Daemon) {
		var wg sync.WaitGroup
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
	stopAll(mounts)
	var servers []*Daemon
	for _, ss := range s.servers {
		servers = append(servers, ss...)
	}
	stopAll(servers)
	stopAll(s.metas)
	s.stopEtcd()
	errs = append(errs, s.mesh.Close())
	return errors.Join(errs...)
}

// EtcdClientURL is site i's etcd member's client URL (plain HTTP on
// loopback; its /metrics too).
func (s *Sites) EtcdClientURL(i int) string { return "http://" + s.etcd[i].clientAddr }
