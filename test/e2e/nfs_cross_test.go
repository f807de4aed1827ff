package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/willscott/go-nfs-client/nfs/rpc"

	"tessera/internal/nfs/nfstest"
)

// TestNFSCrossProtocolPolicies: a `tessera nfs` process and the FUSE
// mount of tessera up are two clients of one cluster. Under the session
// (close-to-open) and posix policies, what one writes the other reads, as
// the policy promises: written over NFS (UNSTABLE then COMMIT, as an NFS
// client's close does, or FILE_SYNC) and read on FUSE, written on FUSE
// (closed) and read over NFS, new files and files the other side has
// read before.
func TestNFSCrossProtocolPolicies(t *testing.T) {
	c := startCluster(t)
	d, err := c.StartNFS("--squash", "none")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stopping tessera nfs: %v", err)
		}
	})
	nfs := nfsMountAddr(t, d.Field("nfs"), 0, 0)
	auth := rpc.NewAuthUnix("e2e", 0, 0).Auth()
	for i, pol := range []string{"session", "posix"} {
		t.Run(pol, func(t *testing.T) {
			dir := filepath.Join(c.Mount(), pol)
			must(t, os.Mkdir(dir, 0o777))
			setPolicy(t, dir, pol)
			seed := uint64(60 + 10*i)

			// Over NFS, read on FUSE.
			nfsWrite(t, nfs, pol+"/a", nil)
			_, fh, err := nfs.Lookup(pol + "/a")
			if err != nil {
				t.Fatal(err)
			}
			a1 := randBytes(seed, 2*mib+11)
			nfsWriteAll(t, nfs, auth, fh, a1, nfstest.Unstable)
			if status, _, err := nfstest.Commit(nfs, auth, fh); err != nil || status != 0 {
				t.Fatalf("commit: status %d, %v", status, err)
			}
			wantContent(t, filepath.Join(dir, "a"), a1)

			// On FUSE, read over NFS: a new file, then one NFS read
			// before.
			b1 := randBytes(seed+1, mib+3)
			writeFile(t, filepath.Join(dir, "b"), b1)
			if got := nfsRead(t, nfs, pol+"/b"); !bytes.Equal(got, b1) {
				t.Fatalf("over NFS, a file written on FUSE: %d bytes, want the %d written", len(got), len(b1))
			}
			a2 := randBytes(seed+2, mib+5)
			writeFile(t, filepath.Join(dir, "a"), a2)
			if got := nfsRead(t, nfs, pol+"/a"); !bytes.Equal(got, a2) {
				t.Fatalf("over NFS, a file rewritten on FUSE: %d bytes, want the %d written there", len(got), len(a2))
			}

			// Over NFS again (FILE_SYNC), a file FUSE read before.
			_, fhb, err := nfs.Lookup(pol + "/b")
			if err != nil {
				t.Fatal(err)
			}
			b2 := randBytes(seed+3, mib+3) // the same size: only the bytes tell
			nfsWriteAll(t, nfs, auth, fhb, b2, nfstest.FileSync)
			wantContent(t, filepath.Join(dir, "b"), b2)
		})
	}
}
