package authz

import "tessera/internal/auth"

// scope says what a confined identity (one with a Root) may do with a
// method.
type scope int

const (
	// inTree: the method's inode arguments are checked against the root
	// and its replies mapped (or it names no inode).
	inTree scope = iota
	// cluster: the method reaches across the whole namespace or cluster;
	// a confined identity is refused it.
	cluster
)

// rule is what a method requires.
type rule struct {
	perm  auth.Permission
	scope scope
}

// The permission each method needs, one table per interface of the meta
// API (meta.FS, meta.Cluster, meta.Sessions and the optional ones), is
// generated (zz_view_gen.go: rules<Iface> and tables) from the
// //tessera:authz directive on each method in package meta, so a method's
// rule is declared next to it; a method without one fails generation.
// rules merges the tables. A method missing here is refused to everyone,
// and TestRulesPerInterface fails unless each table names exactly its
// interface's methods.
//
//go:generate go run tessera/internal/meta/wrapgen -type *view -recv v -ifaces api,QuotaAPI,WritebackAPI,FilesetAPI,FilesetReadsAPI,EvictAPI,VanishAPI,GatewaysAPI -style authz -o zz_view_gen.go

// rules is every table merged: the permission each method needs.
var rules = func() map[string]rule {
	m := map[string]rule{}
	for _, t := range tables {
		for name, r := range t.rules {
			if _, dup := m[name]; dup {
				panic("authz: method " + name + " in two tables")
			}
			m[name] = r
		}
	}
	return m
}()
