package auth

import (
	"context"
	"fmt"
)

// Role is what a caller is to the cluster; see the package comment.
type Role string

// The roles, as written in certificates, tokens and flags.
const (
	RoleAdmin    Role = "admin"
	RoleMeta     Role = "meta"
	RoleBlockd   Role = "blockd"
	RoleClientRW Role = "client-rw"
	RoleClientRO Role = "client-ro"
	// RoleGateway is a caching gateway of filesets (issue 14): it reads
	// and writes the namespace and blocks and records what it cached.
	RoleGateway Role = "gateway"
)

// Roles lists every role, in the order help texts show them.
var Roles = []Role{RoleAdmin, RoleMeta, RoleBlockd, RoleClientRW, RoleClientRO, RoleGateway}

// ParseRole checks that s names a role.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown role %q (want one of admin, meta, blockd, client-rw, client-ro, gateway)", s)
}

// Permission is one kind of request a role may or may not make.
type Permission int

// The permissions. Transports map each of their methods or routes to one.
const (
	// ReadNamespace: lookups, attributes, directory listings, recipes,
	// xattrs, sessions and callbacks, statfs, the server map.
	ReadNamespace Permission = iota
	// WriteNamespace: creating, changing and removing files and
	// directories, commits.
	WriteNamespace
	// ReadBlocks: reading blocks and asking which are held.
	ReadBlocks
	// WriteBlocks: storing blocks.
	WriteBlocks
	// ManageBlocks: removing blocks, listing and checking a whole store
	// (gc, the mover, the reclaimer, fsck).
	ManageBlocks
	// RegisterServer: a block server adding itself to the map and
	// heartbeating.
	RegisterServer
	// Administer: draining and removing servers, the replication factor,
	// walking every block, anything not listed above.
	Administer
	// CacheHome: a gateway recording what it read from a fileset's home
	// (placeholders, cache state) and registering itself.
	CacheHome
)

var permissionNames = [...]string{
	ReadNamespace:  "read the namespace",
	WriteNamespace: "change the namespace",
	ReadBlocks:     "read blocks",
	WriteBlocks:    "write blocks",
	ManageBlocks:   "remove or list blocks",
	RegisterServer: "register a block server",
	Administer:     "administer the cluster",
	CacheHome:      "cache a fileset's home",
}

func (p Permission) String() string {
	if p < 0 || int(p) >= len(permissionNames) {
		return fmt.Sprintf("permission(%d)", int(p))
	}
	return permissionNames[p]
}

// grants is the one table of who may do what.
var grants = map[Role][]Permission{
	RoleAdmin:    {ReadNamespace, WriteNamespace, ReadBlocks, WriteBlocks, ManageBlocks, RegisterServer, Administer, CacheHome},
	RoleMeta:     {ReadNamespace, ReadBlocks, WriteBlocks, ManageBlocks},
	RoleBlockd:   {RegisterServer},
	RoleClientRW: {ReadNamespace, WriteNamespace, ReadBlocks, WriteBlocks},
	RoleClientRO: {ReadNamespace, ReadBlocks},
	RoleGateway:  {ReadNamespace, WriteNamespace, ReadBlocks, WriteBlocks, CacheHome},
}

// Can reports whether the role holds p.
func (r Role) Can(p Permission) bool {
	for _, g := range grants[r] {
		if g == p {
			return true
		}
	}
	return false
}

// Identity is an authenticated caller.
type Identity struct {
	Name string // the certificate's CommonName or the token's name
	Role Role
	// Root confines the caller to a subtree ("/proj"); "" or "/" is the
	// whole namespace.
	Root string
	// Via says how the caller proved it: "cert", "token" or "insecure".
	Via string
}

func (id Identity) String() string {
	s := id.Name + " (" + string(id.Role)
	if id.Root != "" && id.Root != "/" {
		s += " " + id.Root
	}
	return s + ")"
}

// Check returns nil when id may do p, else an error naming who and what.
func (id Identity) Check(p Permission) error {
	if id.Role.Can(p) {
		return nil
	}
	return fmt.Errorf("%w: %s may not %s", ErrDenied, id, p)
}

// Insecure is the identity of every caller of a port started with
// --insecure: plain TCP, no way to tell callers apart, so each is trusted as
// an admin (the behaviour before TLS, for loopback-only setups).
var Insecure = Identity{Name: "insecure", Role: RoleAdmin, Via: "insecure"}

type ctxKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity a transport put in ctx.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// TokenVerifier checks a bearer token (an admin command run by a person,
// without a certificate) and returns whose it is; an unknown, expired or
// malformed token is an error wrapping ErrUnauthenticated.
type TokenVerifier interface {
	Verify(token string) (Identity, error)
}
