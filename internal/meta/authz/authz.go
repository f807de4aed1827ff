package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// Tree tells whether an inode lies under a directory; *meta.Service
// implements it (meta.Service.Within).
type Tree interface {
	Within(ctx context.Context, ino, dir meta.Ino) (bool, error)
}

// Service is what Wrap decorates: the meta API and its subtree test.
// *meta.Service implements it. When it also implements
// meta.SessionBinder, so does the decorator.
type Service interface {
	meta.API
	Tree
}

// Options configure the decorator.
type Options struct {
	// Log receives refused calls and administrative actions; nil
	// discards them.
	Log *slog.Logger
	// Now is the clock of the log's rate limit and of session
	// bookkeeping; nil means time.Now.
	Now func() time.Time
	// DenyLogEvery is the interval of the refusal log's rate limit, per
	// identity and method; 0 means ratelog.DefaultEvery.
	DenyLogEvery time.Duration
}

// Authorizer is the decorator: a meta.API and meta.SessionBinder that
// authorizes every call before making it on the Service it wraps.
type Authorizer struct {
	view // unbound: calls carry no session
	svc  Service
	log  *slog.Logger
	now  func() time.Time

	roots    rootCache
	sessions sessionOwners
	denials  denyLog
	known    knownServers
}

var (
	_ meta.API           = (*Authorizer)(nil)
	_ meta.SessionBinder = (*Authorizer)(nil)
	_ Service            = (*meta.Service)(nil)
)

// Wrap returns svc behind authorization.
func Wrap(svc Service, opts Options) *Authorizer {
	a := &Authorizer{svc: svc, log: opts.Log, now: opts.Now}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.denials.every = opts.DenyLogEvery
	a.denials.now = a.now
	a.view = view{a: a, api: svc}
	return a
}

// WithSession implements meta.SessionBinder: the returned API makes its
// calls on behalf of session id, which must belong to the caller.
func (a *Authorizer) WithSession(id meta.SessionID) meta.API {
	if id == 0 {
		return a
	}
	b, ok := a.svc.(meta.SessionBinder)
	if !ok {
		return a
	}
	return &view{a: a, api: b.WithSession(id), sid: id}
}

// caller is an authorized call's identity and its root directory's inode
// (0 when it is not confined).
type caller struct {
	id   auth.Identity
	root meta.Ino
}

// confined reports whether the caller sees a subtree.
func confined(id auth.Identity) bool { return id.Root != "" && id.Root != "/" }

// authorize checks that the call of method carries an identity allowed to
// make it, and resolves the identity's root.
func (a *Authorizer) authorize(ctx context.Context, method string) (caller, error) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		err := fmt.Errorf("meta %s: no identity: %w (%w)", method, auth.ErrUnauthenticated, syscall.EACCES)
		a.denials.log(a.log, auth.Identity{}, method, err)
		return caller{}, err
	}
	r, known := rules[method]
	if !known {
		return caller{}, a.deny(id, method, fmt.Errorf("%w: no rule for method %s", auth.ErrDenied, method))
	}
	if err := id.Check(r.perm); err != nil {
		return caller{}, a.deny(id, method, err)
	}
	c := caller{id: id}
	if !confined(id) {
		return c, nil
	}
	if r.scope == cluster {
		return caller{}, a.deny(id, method, fmt.Errorf("%w: %s is confined to %s and %s reaches the whole cluster",
			auth.ErrDenied, id, id.Root, method))
	}
	root, err := a.roots.resolve(ctx, a.svc, id.Root)
	if err != nil {
		err = fmt.Errorf("meta %s: root directory of %s: %w", method, id, err)
		a.denials.log(a.log, id, method, err)
		return caller{}, err
	}
	c.root = root
	return c, nil
}

// deny logs a refusal and returns it as an error that also matches EACCES.
func (a *Authorizer) deny(id auth.Identity, method string, why error) error {
	err := fmt.Errorf("meta %s: %w (%w)", method, why, syscall.EACCES)
	a.denials.log(a.log, id, method, err)
	return err
}

// goneIno is an inode number no inode ever has (they are handed out from
// meta.RootIno up and never reused).
const goneIno = ^meta.Ino(0)

// in maps an inode argument of c's call: RootIno is c's root, any other
// inode must lie under it. Unconfined callers' inodes pass unchanged. An
// inode that does not exist is passed on as goneIno: the Service answers
// for it in the order it checks its arguments (ENOTDIR for another one
// before ENOENT for this, or nothing for Reap), and an inode made outside
// meanwhile under the number the caller guessed is not reached.
func (a *Authorizer) in(ctx context.Context, c caller, method string, ino meta.Ino) (meta.Ino, error) {
	if c.root == 0 {
		return ino, nil
	}
	if ino == meta.RootIno || ino == c.root {
		return c.root, nil
	}
	ok, err := a.svc.Within(ctx, ino, c.root)
	if errors.Is(err, meta.ErrNotFound) {
		return goneIno, nil
	}
	if err != nil {
		return 0, fmt.Errorf("meta %s: %w", method, err)
	}
	if !ok {
		return 0, a.deny(c.id, method, fmt.Errorf("%w: inode %d is outside %s's root %s", auth.ErrDenied, ino, c.id, c.id.Root))
	}
	return ino, nil
}

// out maps an inode number of a reply to c: its root reads RootIno.
func (c caller) out(ino meta.Ino) meta.Ino {
	if c.root != 0 && ino == c.root {
		return meta.RootIno
	}
	return ino
}

// outInode maps the inode numbers of an Inode in a reply.
func (c caller) outInode(in *meta.Inode) { in.Ino = c.out(in.Ino) }

// rootCache resolves roots' paths to their directories' inodes, once.
type rootCache struct {
	mu sync.Mutex
	m  map[string]meta.Ino // root path -> inode
}

// resolve returns the directory path names, walking from meta.RootIno.
func (r *rootCache) resolve(ctx context.Context, api meta.API, path string) (meta.Ino, error) {
	r.mu.Lock()
	ino, ok := r.m[path]
	r.mu.Unlock()
	if ok {
		// Held as a chroot holds its directory; resolved again once
		// it is gone.
		if in, err := api.GetAttr(ctx, ino); err == nil && in.Nlink > 0 {
			return ino, nil
		}
	}
	ino, err := walk(ctx, api, path)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]meta.Ino{}
	}
	r.m[path] = ino
	r.mu.Unlock()
	return ino, nil
}

// walk looks the absolute path p up from meta.RootIno; it must name a
// directory.
func walk(ctx context.Context, api meta.API, p string) (meta.Ino, error) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return 0, fmt.Errorf("root %s is not a clean absolute path: %w", meta.Quote(p), meta.ErrInvalid)
	}
	ino := meta.RootIno
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		in, err := api.Lookup(ctx, ino, name)
		if err != nil {
			return 0, fmt.Errorf("root %s: %w", p, err)
		}
		if !in.IsDir() {
			return 0, fmt.Errorf("root %s: %s is not a directory: %w", meta.Quote(p), meta.Quote(name), meta.ErrNotDir)
		}
		ino = in.Ino
	}
	return ino, nil
}
