package e2e

import (
	"bytes"
	"path/filepath"
	"testing"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"tessera/internal/nfs/nfstest"
)

// nfsWriteAll writes data to fh from offset 0 in chunks of 512 KiB with
// stability how and returns the verifier of the replies (all the same).
func nfsWriteAll(t *testing.T, target *nfsc.Target, auth rpc.Auth, fh, data []byte, how uint32) [8]byte {
	t.Helper()
	return nfsWriteAt(t, target, auth, fh, 0, data, how)
}

// nfsWriteAt is nfsWriteAll from offset base.
func nfsWriteAt(t *testing.T, target *nfsc.Target, auth rpc.Auth, fh []byte, base uint64, data []byte, how uint32) [8]byte {
	t.Helper()
	const chunk = 512 << 10
	var verf [8]byte
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		r, err := nfstest.Write(target, auth, fh, base+uint64(off), data[off:end], how)
		if err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
		if r.Status != nfsc.NFS3Ok || int(r.Count) != end-off {
			t.Fatalf("write at %d: %+v, want status 0 and count %d", off, r, end-off)
		}
		if how == nfstest.Unstable && r.Committed != nfstest.Unstable || how != nfstest.Unstable && r.Committed != nfstest.FileSync {
			t.Fatalf("write at %d with stability %d answered committed %d", off, how, r.Committed)
		}
		if off > 0 && r.Verf != verf {
			t.Fatalf("write at %d: verifier %x, the writes before had %x (the server did not restart)", off, r.Verf, verf)
		}
		verf = r.Verf
	}
	return verf
}

// TestNFSUnstableWriteResentAfterKill9: a `tessera nfs` is killed with -9
// between UNSTABLE writes and their COMMIT. The restarted server's COMMIT
// answers another verifier, so the client sends the writes again (as NFS
// clients do); what reads back, over NFS and on the FUSE mount, is the
// data resent. A FILE_SYNC write made before the kill survives it.
func TestNFSUnstableWriteResentAfterKill9(t *testing.T) {
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
	auth := rpc.NewAuthUnix("e2e", 0, 0).Auth()
	a := nfsMountAddr(t, d.Field("nfs"), 0, 0)
	handle := func(target *nfsc.Target, name string) []byte {
		t.Helper()
		nfsWrite(t, target, name, nil)
		_, fh, err := target.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return fh
	}
	synced, pending := handle(a, "synced"), handle(a, "pending")
	syncData := randBytes(41, 2*mib+123)
	nfsWriteAll(t, a, auth, synced, syncData, nfstest.FileSync)
	data := randBytes(42, 3*mib+77)
	before := nfsWriteAll(t, a, auth, pending, data, nfstest.Unstable)

	must(t, d.Kill9())
	a.Close() // its client would dial the dead port again and again
	must(t, d.Start())
	b := nfsMountAddr(t, d.Field("nfs"), 0, 0)
	status, after, err := nfstest.Commit(b, auth, pending)
	if err != nil || status != nfsc.NFS3Ok {
		t.Fatalf("commit on the restarted server: status %d, %v", status, err)
	}
	if after == before {
		t.Fatalf("the restarted server's verifier %x is the killed one's: the client would not resend", after)
	}
	// The client resends what it wrote since its last COMMIT, and commits.
	if resent := nfsWriteAll(t, b, auth, pending, data, nfstest.Unstable); resent != after {
		t.Fatalf("resent writes answered verifier %x, the commit %x", resent, after)
	}
	if status, verf, err := nfstest.Commit(b, auth, pending); err != nil || status != nfsc.NFS3Ok || verf != after {
		t.Fatalf("commit of the resent writes: status %d, verifier %x, %v; want 0 and %x", status, verf, err, after)
	}
	if got := nfsRead(t, b, "pending"); !bytes.Equal(got, data) {
		t.Fatalf("over NFS after the resend: %d bytes, want the %d resent", len(got), len(data))
	}
	wantContent(t, filepath.Join(c.Mount(), "pending"), data)
	if got := nfsRead(t, b, "synced"); !bytes.Equal(got, syncData) {
		t.Fatalf("a FILE_SYNC write after kill -9: %d bytes read, want the %d written", len(got), len(syncData))
	}
	wantContent(t, filepath.Join(c.Mount(), "synced"), syncData)
}
