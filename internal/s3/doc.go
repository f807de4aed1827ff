// Package s3 is Tessera's S3 endpoint (issue 25): Versity S3 Gateway's
// protocol layer (request routing, XML, SigV4 in headers and presigned
// URLs, aws-chunked bodies, Content-MD5 and x-amz-checksum-* checks, S3
// error documents) with a backend over internal/vfs, the file-system layer
// every front end shares. Design: docs/design/2026-11-29-s3.md.
//
// Buckets are the directories under the serving root (or under a key's
// own root), keys are paths (backend.go). Every call is made with the
// identity of the access key that signed the request: its uid and gid for
// vfs's permission checks, its root, and its role (a read-only key is
// refused every change). Keys are kept in the meta store (keys.go) and
// looked up by IAM (iam.go), which versitygw calls for SigV4.
//
// Objects (put.go, get.go): a PUT writes a temporary file, commits it,
// sets the object's record (record.go: ETag, content type, metadata) and
// renames it over the key, so readers see the old object or the whole
// new one. Listings (list.go) walk the tree in key order. Multipart
// uploads (multipart.go) keep their parts as files; complete and
// CopyObject commit the sources' block hashes into the new file
// (share.go, assemble.go) and copy only what does not fall on block
// boundaries.
//
// Serving (server.go): versitygw's embedded gateway, with TLS from
// certificate files, a bound on connections, and one on the requests in
// flight per client address (503 SlowDown past it).
package s3
