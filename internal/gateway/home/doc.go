// Package home is the gateway's view of a fileset's home: the remote store
// a fileset caches (issue 14, Panache's "home" cluster). It holds the one
// small interface every home implements (Store), its error classes, the URL
// forms (Open), and three implementations:
//
//   - file:///DIR — a POSIX directory (on a real site an NFS or cluster
//     file system mount). Every access goes through an os.Root, so no path,
//     and no symlink at home, reaches outside DIR: ".." is refused, and a
//     symlink pointing outward is listed and read as a symlink (Readlink)
//     but never followed (ErrPermission). WriteFile's temporary files
//     (".tessera-home-tmp.*") are not listed; the ones a killed writer left
//     are removed by the next WriteFile into their directory after a start
//     (unlocked and older than a minute: a live writer holds a flock).
//   - s3://BUCKET/PREFIX?endpoint=http://127.0.0.1:PORT&region=R — any
//     S3-compatible store, through minio-go. Directories are prefixes with a
//     marker object "DIR/"; the change token is a file's ETag, a digest of
//     the names under a directory (one listing); reads are ranged
//     GETs; WriteFile streams in one PUT, multipart past 16 MiB; WriteAt and
//     Truncate rewrite the object (read, change, PUT: atomic, but costly for
//     large objects); Rename is a server-side copy then a delete of each
//     object, NOT atomic (see Store.Rename). Credentials: access_key_file=F
//     in the URL (a file "ACCESS SECRET"), else AWS_ACCESS_KEY_ID and
//     AWS_SECRET_ACCESS_KEY (or MINIO_ROOT_USER/MINIO_ROOT_PASSWORD), else
//     ~/.aws/credentials. retries=N bounds the client's attempts per request
//     (default 3). No symlinks, no setattr (the optional interfaces are not
//     implemented).
//   - tessera://META_ADDR/PATH?cert=F&key=F&ca=F — a subtree of another
//     Tessera cluster through internal/vfs, the layer every Tessera front
//     end shares, over its client library (internal/client) with gRPC +
//     mutual TLS and blocks dialed by internal/blockdial; the change token
//     is the inode number and its change counter; meta_timeout=D (default
//     30s) is how long an unreachable meta service is waited for before a
//     retryable error. A symlink in the middle of a path is followed
//     within PATH (vfs.FS.Resolve). WriteFile writes under a temporary name
//     (vfs.TmpPrefix, not listed) and renames it into place. Everything is
//     implemented, Rename is atomic.
//
// # The contract
//
// Paths are slash-separated and relative to the home's root ("" or "." is
// the root; a leading "/" is ignored); a path with a ".." component, a NUL
// or an empty component between slashes is refused with ErrInvalidPath
// before anything is touched. Stat does not follow a final symlink.
//
// Attr carries what revalidation compares (Panache §4.2): Size, Mtime, Ctime
// (zero where the store has none: S3) and Token, an opaque string that
// changes whenever the object's content or attributes change. Equal tokens
// mean unchanged; a store without a reliable token derives one from what it
// has (file://: inode, size, mtime and ctime in nanoseconds).
//
// Atomicity. WriteFile replaces a file whole: a reader, and a Stat after a
// failure, see the old content or the new, never a mix (file://: a
// temporary file renamed over; s3://: one PUT or a completed multipart
// upload; tessera://: a temporary file committed, then renamed over).
// Create, Mkdir, Remove, Rmdir and Symlink are single operations. Rename is
// atomic on file:// and tessera://; on s3:// it copies each object then
// deletes the source, so a failure midway leaves every object under its
// old name or its new one or both (never neither), and the retry completes
// it (a target directory holding only copies of the source's objects is
// taken for such a partial rename and overwritten). A retry of a rename
// that had in fact completed reports ErrNotFound for the source: the
// caller checks the target. WriteAt and Truncate may be partly
// applied on file:// when they fail; all operations are idempotent to
// retry with the same arguments except Create and Mkdir (which then report
// ErrExist: a retry treats that as success).
//
// Errors. Every error is wrapped with the operation and path (*Error) and
// falls in one of two classes, Retryable(err) says which:
//
//   - permanent: the answer will not change by trying again —
//     ErrNotFound (ENOENT), ErrExist (EEXIST), ErrNotEmpty (ENOTEMPTY),
//     ErrNotDir, ErrIsDir, ErrInvalidPath, ErrUnsupported, ErrPermission;
//     check them with errors.Is (they are syscall.Errno values, so
//     ENOENT and ENOTEMPTY are told apart and map to FUSE unchanged);
//   - retryable: the home could not be reached or failed transiently
//     (connection refused or reset, timeouts, 5xx, throttling, EIO, ENOSPC,
//     a cancelled context): the operation may not have happened, or for
//     WriteAt/Truncate on file:// partly, and the gateway retries it with
//     backoff (write-back queue, issue 14 item 5).
//
// Concurrency: a Store is safe for concurrent use. Close releases its
// connections.
//
// The conformance suite is package hometest; every implementation passes
// it (home_test.go runs it against a temp dir, a Versity S3 Gateway and an
// in-process Tessera cluster).
package home
