package cachetier

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync/atomic"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/cachetier/memcache"
)

// ErrServerDown reports an operation skipped because its server is marked
// down. Lookups turn it into a miss.
var ErrServerDown = errors.New("cache server marked down")

// ErrTooLarge reports a block or attribute value too large for the tier.
var ErrTooLarge = errors.New("too large for the cache tier")

// Options tune a Pool. Zero fields take the default in brackets.
type Options struct {
	// ChunkSize is the largest piece of a block stored in one item; blocks
	// up to this size are stored inline in their header item. It must be
	// between 64 KiB and MaxBlockSize, and fit the servers' item limit
	// [512 KiB].
	ChunkSize int
	// BlockTTL and AttrTTL are memcached expiration times [0: none, the
	// items live until evicted].
	BlockTTL, AttrTTL time.Duration
	// Namespace prefixes attribute keys, for pools shared by several file
	// systems (inode numbers are per file system; blocks are universal)
	// [""]. At most 64 bytes, no spaces or control characters.
	Namespace string
	// BackoffMin is how long a failed server is skipped; each failed probe
	// doubles it up to BackoffMax [2s, 30s].
	BackoffMin, BackoffMax time.Duration
	// Now is the clock of the back-off [time.Now].
	Now func() time.Time
	// Client tunes each server's client (deadlines, connections). Its
	// MaxValue is set from ChunkSize.
	Client memcache.Options
}

// Pool is a set of memcached servers holding blocks and attributes under
// the key schema of the package doc. It is safe for concurrent use.
type Pool struct {
	opts    Options
	servers []*server
	attr    struct{ hits, misses atomic.Uint64 }
}

type server struct {
	addr    string
	seed    uint64 // rendezvous hashing seed: FNV-1a of addr
	client  *memcache.Client
	health  health
	errors  atomic.Uint64 // failed operations (any error but a skip)
	skipped atomic.Uint64 // operations skipped while down
}

// Open returns a pool of the servers in a "memcached://h1:p1,h2:p2" URL.
func Open(url string, opts Options) (*Pool, error) {
	addrs, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	return New(addrs, opts)
}

// New returns a pool of the servers at addrs ("host:port"). It does not
// connect until the first operation.
func New(addrs []string, opts Options) (*Pool, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cache tier: no servers")
	}
	if opts.ChunkSize == 0 {
		opts.ChunkSize = 512 << 10
	}
	if opts.ChunkSize < 64<<10 || opts.ChunkSize > MaxBlockSize {
		return nil, fmt.Errorf("cache tier: chunk size %d not in [64 KiB, 64 MiB]", opts.ChunkSize)
	}
	if opts.BlockTTL < 0 || opts.AttrTTL < 0 {
		return nil, fmt.Errorf("cache tier: negative TTL")
	}
	if len(opts.Namespace) > 64 || (opts.Namespace != "" && memcache.CheckKey(opts.Namespace) != nil) {
		return nil, fmt.Errorf("cache tier: namespace %q: want at most 64 bytes, no spaces or control characters", opts.Namespace)
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = 2 * time.Second
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = 30 * time.Second
	}
	opts.BackoffMax = max(opts.BackoffMax, opts.BackoffMin)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Client.MaxValue = opts.ChunkSize + headerSize
	p := &Pool{opts: opts}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			return nil, fmt.Errorf("cache tier: server %q listed twice", a)
		}
		seen[a] = true
		f := fnv.New64a()
		f.Write([]byte(a))
		s := &server{addr: a, seed: f.Sum64(), client: memcache.New(a, opts.Client)}
		s.health.policy = backoff.Policy{Base: opts.BackoffMin, Max: opts.BackoffMax}
		p.servers = append(p.servers, s)
	}
	return p, nil
}

// Close closes the pool's idle connections; operations under way finish.
func (p *Pool) Close() error {
	for _, s := range p.servers {
		s.client.Close()
	}
	return nil
}

// Servers returns the servers' addresses.
func (p *Pool) Servers() []string {
	out := make([]string, len(p.servers))
	for i, s := range p.servers {
		out[i] = s.addr
	}
	return out
}

// ServerStats describes one server of a pool.
type ServerStats struct {
	Addr      string
	Down      bool
	DownUntil time.Time // when the next probe may go (if Down)
	Errors    uint64    // failed operations
	Skipped   uint64    // operations skipped while down
}

// PoolStats are a pool's counters, for `tessera status`.
type PoolStats struct {
	Servers              []ServerStats
	AttrHits, AttrMisses uint64
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	st := PoolStats{AttrHits: p.attr.hits.Load(), AttrMisses: p.attr.misses.Load()}
	for _, s := range p.servers {
		down, until := s.health.state()
		st.Servers = append(st.Servers, ServerStats{Addr: s.addr, Down: down, DownUntil: until,
			Errors: s.errors.Load(), Skipped: s.skipped.Load()})
	}
	return st
}

// pick returns the server of a key whose hash is k: the one with the
// highest score mix(k ^ seed) (rendezvous hashing; see the package doc).
func (p *Pool) pick(k uint64) *server {
	best, bestScore := p.servers[0], mix64(k^p.servers[0].seed)
	for _, s := range p.servers[1:] {
		if sc := mix64(k ^ s.seed); sc > bestScore {
			best, bestScore = s, sc
		}
	}
	return best
}

// mix64 is the SplitMix64 finaliser: a bijection that spreads every input
// bit over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// run runs op on s if s's health admits it, and records the outcome: a
// *memcache.ConnError (outside ctx's end) counts against the server.
func (p *Pool) run(ctx context.Context, s *server, op func() error) error {
	ok, probe := s.health.admit(p.opts.Now())
	if !ok {
		s.skipped.Add(1)
		return fmt.Errorf("%s: %w", s.addr, ErrServerDown)
	}
	err := op()
	o := answered
	switch {
	case err == nil:
	case ctx.Err() != nil:
		o = abandoned
	case memcache.IsConnError(err):
		o = failed
	}
	if err != nil && o != abandoned && !errors.Is(err, errMiss) {
		s.errors.Add(1)
	}
	if s.health.report(p.opts.Now(), probe, o) {
		s.client.CloseIdle() // they are most likely dead too
	}
	return err
}

// exptime converts a TTL to memcached's expiration: seconds up to 30 days,
// a unix time beyond.
func (p *Pool) exptime(ttl time.Duration) int64 {
	const relMax = 30 * 24 * time.Hour
	switch {
	case ttl <= 0:
		return 0
	case ttl <= relMax:
		return int64((ttl + time.Second - 1) / time.Second)
	}
	return p.opts.Now().Add(ttl).Unix()
}
