package etcdkv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"tessera/internal/clock"
	"tessera/internal/kv"
)

var (
	_ kv.Store   = (*Store)(nil)
	_ kv.Watcher = (*Store)(nil)
	_ kv.Elector = (*Store)(nil)
	_ kv.Members = (*Store)(nil)
)

// Limits our scripts start etcd with (ServerFlags) and the defaults of
// Options, so that one meta transaction may write the reference counts of
// every block of a large commit.
const (
	DefaultMaxTxnOps       = 16384
	DefaultMaxRequestBytes = 32 << 20
	// DefaultReadCache is how many keys the read cache keeps by default.
	DefaultReadCache = 4096
)

// ServerFlags are the etcd server flags the project's scripts and tests
// start etcd with: the transaction limits above, and compaction of
// revisions older than ten minutes (watches from older revisions fail and
// resync) so that the history does not fill etcd's backend.
var ServerFlags = []string{
	fmt.Sprintf("--max-txn-ops=%d", DefaultMaxTxnOps),
	fmt.Sprintf("--max-request-bytes=%d", DefaultMaxRequestBytes),
	"--auto-compaction-mode=periodic",
	"--auto-compaction-retention=10m",
	"--quota-backend-bytes=8589934592",
}

// ErrTooLarge reports an Update whose transaction exceeds etcd's limits;
// nothing of it was written.
var ErrTooLarge = errors.New("etcdkv: transaction exceeds etcd's limits")

// ErrNoMajority reports an Update that found no etcd leader (the members it
// reaches are cut off from the majority) for Options.MajorityWait; nothing
// of it was written.
var ErrNoMajority = errors.New("etcdkv: no etcd leader reachable (cut off from the majority?)")

// Options configures a Store. Endpoints is required; zero values of the
// others take the defaults.
type Options struct {
	Endpoints []string // client URLs or host:port of the members
	Prefix    string   // etcd key prefix; "" is "/tessera/"
	TLS       *tls.Config
	// DialTimeout bounds Open's first connection (default 10s).
	DialTimeout time.Duration
	// MaxTxnOps and MaxRequestBytes are the server's --max-txn-ops and
	// --max-request-bytes; Update checks transactions against them.
	MaxTxnOps       int
	MaxRequestBytes int
	// MaxAttempts bounds how often Update runs fn on conflicts (default 32).
	MaxAttempts int
	// MajorityWait is how long an Update waits for the cluster to have a
	// leader it can reach before it fails with ErrNoMajority (default
	// 30s).
	MajorityWait time.Duration
	// SessionTTL is the lease of an election's session (default 10s): how
	// long a dead leader keeps its leadership.
	SessionTTL time.Duration
	// ScanPage is how many keys one Scan request asks for (default 256).
	ScanPage int
	// NoBatch turns group commit off: every Update sends its own Txn.
	// By default concurrent independent Updates share one Txn (see the
	// package comment; URL parameter batch=0 turns it off).
	NoBatch bool
	// InFlight is how many group-committed Txns may travel at once
	// (default 1; URL parameter batch=N): Updates gather while they do.
	InFlight int
	// LocalUpdateReads lets an Update read its snapshot from the member
	// the client talks to (no quorum round trip before fn runs): the
	// commit's compares fail if anything it read changed since, and an
	// Update that only read, or whose fn failed, checks its reads with a
	// read-only Txn of its compares and a linearizable Get before it
	// returns. Off by
	// default; URL parameter update-reads=local.
	LocalUpdateReads bool
	// ReadCache bounds the read cache (readcache.go): how many keys it
	// keeps (default DefaultReadCache; -1 turns it off).
	// The first run of an Update's fn reads a key from it when it holds
	// one; the commit's compares check it as any read.
	ReadCache int
	// Clock times the waits of reads at a revision a member has not
	// applied yet, and an Update's wait for a leader (nil: the machine's).
	Clock clock.Clock
}

func (o *Options) defaults() {
	if o.Prefix == "" {
		o.Prefix = "/tessera/"
	}
	if !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.MaxTxnOps <= 0 {
		o.MaxTxnOps = DefaultMaxTxnOps
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 32
	}
	if o.MajorityWait <= 0 {
		o.MajorityWait = 30 * time.Second
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 10 * time.Second
	}
	if o.ScanPage <= 0 {
		o.ScanPage = 256
	}
	if o.InFlight <= 0 {
		o.InFlight = 1
	}
	if o.ReadCache == 0 {
		o.ReadCache = DefaultReadCache
	}
}

// Store is a kv.Store over etcd; see the package comment.
type Store struct {
	cli    *clientv3.Client
	opts   Options
	data   string // etcd prefix of the store's keys: Prefix+"k/"
	closed atomic.Bool

	// sessions are the election sessions alive, closed by Close so that
	// other candidates win at once.
	mu       sync.Mutex
	sessions map[*leadership]struct{}

	// gc queues the Updates waiting for a group commit; ctx ends at Close
	// and bounds the committer's Txns.
	gc     committer
	ctx    context.Context
	cancel context.CancelFunc
	// lagged counts the reads a member refused because it had not
	// applied the snapshot's revision yet (tests).
	lagged atomic.Int64
	// resolved counts the commits lost in transport whose outcome the
	// store found out by asking etcd (resolve.go; tests).
	resolved atomic.Int64
	// hook, when set (tests), sees every commit Txn before it is sent:
	// the transactions it carries.
	hook func(batch []*prepared)
	// reqs count the unary requests sent to etcd (requests.go).
	reqs *requestCounts
	// rc is the read cache (readcache.go); nil when off.
	rc *readCache
}

// Open connects to the cluster and checks that it answers a linearizable
// read (a majority is up) before ctx ends.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts.defaults()
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcdkv: no endpoints")
	}
	reqs := new(requestCounts)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          opts.Endpoints,
		DialTimeout:        opts.DialTimeout,
		TLS:                opts.TLS,
		Logger:             zap.NewNop(),
		Context:            context.Background(),
		MaxCallSendMsgSize: opts.MaxRequestBytes + 1<<20,
		// A Scan page of large values may be big; etcd sends what it has.
		MaxCallRecvMsgSize: 1<<31 - 1,
		// Fail over to another endpoint when one stops answering.
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		DialOptions:          []grpc.DialOption{grpc.WithChainUnaryInterceptor(reqs.interceptor)},
	})
	if err != nil {
		return nil, fmt.Errorf("etcdkv: connect %v: %w", opts.Endpoints, err)
	}
	s := &Store{cli: cli, opts: opts, data: opts.Prefix + "k/", sessions: make(map[*leadership]struct{}), reqs: reqs,
		rc: newReadCache(opts.ReadCache)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if _, err := cli.Get(ctx, s.data, clientv3.WithCountOnly(), clientv3.WithLimit(1)); err != nil {
		s.cancel()
		cli.Close()
		return nil, fmt.Errorf("etcdkv: connect %v: %w", opts.Endpoints, err)
	}
	return s, nil
}

// Client is the etcd client the store uses, for code that needs etcd
// itself (leases of other processes, status).
func (s *Store) Client() *clientv3.Client { return s.cli }

// Prefix is the etcd prefix of the store's keys.
func (s *Store) Prefix() string { return s.opts.Prefix }

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	return ctx.Err()
}

// View implements kv.Store. When a read fails because etcd compacted the
// snapshot's revision away, fn runs again on a fresh snapshot (up to
// Options.MaxAttempts times): nothing of the failed run reached the
// caller but fn's own side effects, which kv.View's contract allows.
func (s *Store) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	for attempt := 1; ; attempt++ {
		if err := s.check(ctx); err != nil {
			return fmt.Errorf("etcdkv: view: %w", err)
		}
		t := &txn{s: s, ctx: ctx, serializable: kv.ConsistencyOf(ctx) == kv.Serializable}
		if !t.serializable {
			// A member without a leader says so at once instead of
			// letting a linearizable read wait.
			t.ctx = clientv3.WithRequireLeader(ctx)
		}
		err := fn(t)
		t.finish()
		if err == nil || !isCompacted(t.readErr) || attempt >= s.opts.MaxAttempts {
			return err
		}
	}
}

// Close implements kv.Store: leaderships end, watches close.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	s.mu.Lock()
	ls := make([]*leadership, 0, len(s.sessions))
	for l := range s.sessions {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = l.Resign(ctx)
		cancel()
	}
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcdkv: close: %w", err)
	}
	return nil
}
