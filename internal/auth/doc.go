// Package auth is who a caller of a Tessera port is and what it may do.
//
// Identities. Every caller of a meta RPC or a block server route has an
// Identity: a name, a Role and optionally a subtree (Root) it is confined
// to. A caller proves it with a client certificate issued by the cluster's
// CA (mutual TLS) or, for admin commands run by people, with a token
// (tokens.go). Transports (metarpc, the block server) authenticate once per
// call and put the Identity in the call's context (NewContext); the layers
// behind them authorize with FromContext and Role.Can. A context without an
// Identity has not been authenticated: authorization refuses it.
//
// Certificates. The cluster CA (ca.go) is an ECDSA P-256 key and a
// self-signed certificate. A certificate it issues names its holder in the
// subject's CommonName and carries the role, and the root when there is one,
// as URI SANs "tessera:role=ROLE" and "tessera:root=/PATH". Every role's
// certificate is both a server and a client certificate, with DNS and IP
// SANs for the hosts it listens on. Credentials (tls.go) turn a certificate,
// its key and the CA into the tls.Config of either side: TLS 1.3 only, the
// peer verified against the cluster CA alone.
//
// Roles (roles.go) and what each may do:
//
//	admin      everything: the namespace, block removal, server state
//	meta       the meta service toward block servers: read, write, remove, list
//	blockd     a block server toward meta: register itself and heartbeat, nothing else
//	client-rw  a mount: read and write the namespace and blocks
//	client-ro  a read-only mount: read the namespace and blocks
//	gateway    a fileset gateway: as client-rw, and record what it cached of home
package auth
