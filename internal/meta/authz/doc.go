// Package authz authorizes every call of the meta service: a meta.API
// decorator the meta role serves over its RPC instead of the bare Service.
//
// Contract. Each call's context carries the caller's auth.Identity, put
// there by the transport (auth.NewContext); a call without one is refused
// with an error wrapping auth.ErrUnauthenticated. Every method of meta.API
// and of its optional interfaces maps to one auth.Permission in the table
// of its interface (table.go: meta.FS, meta.Cluster, meta.Sessions, quotas,
// the write-back queue, filesets and gateways); a caller whose role
// lacks it is refused with an error wrapping auth.ErrDenied and
// syscall.EACCES, so a mount shows "Permission denied". A read-only mount
// (client-ro) may read, hold files open, keep a session and its callbacks,
// and Sync; nothing that changes the namespace. RegisterServer is for the
// blockd role and admins, and a blockd may register or heartbeat only the
// server whose ID is its certificate's name (Identity.Name == Server.ID).
// Sessions belong to the identity that opened them: another identity's
// session id is refused, so no caller can read or drop another's callbacks
// and opens.
//
// Subtrees. An identity with a Root ("/proj") sees that directory as its
// root: meta.RootIno in its requests means the directory, and the
// directory's inode number in every reply (attributes, directory entries,
// callbacks, a rename's replaced inode) reads meta.RootIno. Every other
// inode argument must lie under the directory (Tree.Within, which walks
// the parent pointers of meta's inode records), so neither a guessed inode
// number nor Link or Rename reaches outside, and the methods whose scope
// is the whole cluster (WalkBlocks, MoverProgress and the administrative
// ones) are refused to confined identities. The directory is resolved by
// path once per root and then held, as a chroot holds its directory: a
// later rename of it keeps the confinement on the directory; once it is
// removed the path is resolved again. A root that does not resolve to a
// directory refuses every call with an error naming it.
//
// Logging. Every refused call is logged (who, method, why) at a bounded
// rate per identity and method (package ratelog); every administrative
// action (SetServerState, SetReplicas, the registration of a new server) is
// logged with who made it. See docs/design/2026-11-24-authorization.md.
package authz
