// Package blockdial dials block servers for every process that reads or
// writes blocks: a Dialer holds the process's credentials (a mount's
// "client-rw" certificate, the meta process's "meta", an admin's token)
// and one HTTP Transport, so idle connections are pooled per server.
// A block server on this host whose directory is readable is read straight
// from its files (the co-located fast path); RoutesEnv reroutes the
// connections of emulated WANs (routes.go). Mounts, the NFS server, the
// gateway's tessera:// home and the meta role use it (internal/up, cmd).
package blockdial
