package s3

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	vgwauth "github.com/versity/versitygw/auth"

	"tessera/internal/clock"
	"tessera/internal/meta"
)

// keyTTL is how long a key looked up (or found absent) is kept: a key
// removed stops working within it.
const keyTTL = 5 * time.Second

// maxCachedKeys bounds the cache (absent ids included: a client sending
// random ids costs one lookup each, not memory).
const maxCachedKeys = 4096

// lookupTimeout bounds one key lookup in the meta store.
const lookupTimeout = 10 * time.Second

// IAM finds access keys in the meta store for versitygw's SigV4 checks
// (its auth.IAMService); keys are made and removed by `tessera s3 keys`,
// never through S3's admin API.
type IAM struct {
	api   meta.API
	clock clock.Clock
	mu    sync.Mutex
	cache map[string]cachedKey
}

type cachedKey struct {
	key   Key
	err   error
	until time.Time
}

// NewIAM returns the key store of api.
func NewIAM(api meta.API, clk clock.Clock) *IAM {
	return &IAM{api: api, clock: clock.Or(clk), cache: make(map[string]cachedKey)}
}

// errNoKey is a lookup of an access key id that names no key.
var errNoKey = errors.New("no such access key")

// Key returns the key with access key id id.
func (i *IAM) Key(ctx context.Context, id string) (Key, error) {
	now := i.clock.Now()
	i.mu.Lock()
	c, ok := i.cache[id]
	i.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.key, c.err
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	k, err := GetKey(ctx, i.api, id)
	switch {
	case errors.Is(err, syscall.ENODATA):
		err = errNoKey
	case err != nil:
		return Key{}, err // not kept: the meta service may answer next time
	}
	i.mu.Lock()
	if len(i.cache) >= maxCachedKeys {
		clear(i.cache)
	}
	// id may be a view of the request's buffer (versitygw passes fiber's
	// zero-copy strings), which the server reuses for later requests: the
	// cache keeps a copy, or its key would change under it.
	i.cache[strings.Clone(id)] = cachedKey{key: k, err: err, until: now.Add(keyTTL)}
	i.mu.Unlock()
	return k, err
}

// GetUserAccount is versitygw's lookup of an access key. Every account
// gets versitygw's admin role, which turns its ACL and policy checks off:
// the backend authorizes with the key's identity.
func (i *IAM) GetUserAccount(access string) (vgwauth.Account, error) {
	k, err := i.Key(context.Background(), access)
	if errors.Is(err, errNoKey) {
		return vgwauth.Account{}, vgwauth.ErrNoSuchUser
	}
	if err != nil {
		return vgwauth.Account{}, fmt.Errorf("looking up an access key: %w", err)
	}
	return vgwauth.Account{Access: k.AccessKeyID, Secret: k.Secret, Role: vgwauth.RoleAdmin, UserID: int(k.Uid), GroupID: int(k.Gid)}, nil
}

// ResolveAccounts returns the ids of accessKeyIDs that name no key.
func (i *IAM) ResolveAccounts(accessKeyIDs []string) ([]string, error) {
	var missing []string
	for _, a := range accessKeyIDs {
		if _, err := i.GetUserAccount(a); errors.Is(err, vgwauth.ErrNoSuchUser) {
			missing = append(missing, a)
		} else if err != nil {
			return nil, err
		}
	}
	return missing, nil
}

var errKeysByCLI = errors.New("s3 keys are managed with `tessera s3 keys`, not through the S3 admin API")

// CreateAccount is refused: keys are made by `tessera s3 keys add`.
func (i *IAM) CreateAccount(vgwauth.Account) error { return errKeysByCLI }

// UpdateUserAccount is refused.
func (i *IAM) UpdateUserAccount(string, vgwauth.MutableProps) error { return errKeysByCLI }

// DeleteUserAccount is refused.
func (i *IAM) DeleteUserAccount(string) error { return errKeysByCLI }

// ListUserAccounts is refused.
func (i *IAM) ListUserAccounts() ([]vgwauth.Account, error) { return nil, errKeysByCLI }

// Shutdown has nothing to release.
func (i *IAM) Shutdown() error { return nil }

var _ vgwauth.IAMService = (*IAM)(nil)
