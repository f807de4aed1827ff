// Package nfstest sends NFSv3 WRITE and COMMIT calls with the stability
// a test chooses, over the Go NFS client's connection (whose own File
// writes only FILE_SYNC), and returns what the server answered: the
// status, the count, the stability committed and the write verifier.
package nfstest

import (
	"fmt"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"
)

// Stabilities of a WRITE (RFC 1813 stable_how).
const (
	Unstable = 0
	DataSync = 1
	FileSync = 2
)

// WriteResult is a WRITE's reply.
type WriteResult struct {
	Status    uint32 // NFS3_OK (0) or the error
	Count     uint32
	Committed uint32
	Verf      [8]byte
}

// Write sends WRITE of data at off of the file fh with stability how, as
// auth's caller.
func Write(t *nfsc.Target, auth rpc.Auth, fh []byte, off uint64, data []byte, how uint32) (WriteResult, error) {
	type args struct {
		rpc.Header
		FH     []byte
		Offset uint64
		Count  uint32
		How    uint32
		Data   []byte
	}
	res, err := t.Call(&args{Header: header(auth, nfsc.NFSProc3Write), FH: fh, Offset: off, Count: uint32(len(data)), How: how, Data: data})
	if err != nil {
		return WriteResult{}, err
	}
	var r WriteResult
	if r.Status, err = xdr.ReadUint32(res); err != nil {
		return r, fmt.Errorf("write reply: %w", err)
	}
	var wcc nfsc.WccData
	if err := xdr.Read(res, &wcc); err != nil {
		return r, fmt.Errorf("write reply's wcc_data: %w", err)
	}
	if r.Status != nfsc.NFS3Ok {
		return r, nil
	}
	var ok struct {
		Count, Committed uint32
		Verf             [8]byte
	}
	if err := xdr.Read(res, &ok); err != nil {
		return r, fmt.Errorf("write reply: %w", err)
	}
	r.Count, r.Committed, r.Verf = ok.Count, ok.Committed, ok.Verf
	return r, nil
}

// Commit sends COMMIT of the whole file fh and returns the status and
// the write verifier.
func Commit(t *nfsc.Target, auth rpc.Auth, fh []byte) (uint32, [8]byte, error) {
	type args struct {
		rpc.Header
		FH     []byte
		Offset uint64
		Count  uint32
	}
	var verf [8]byte
	res, err := t.Call(&args{Header: header(auth, nfsc.NFSProc3Commit), FH: fh})
	if err != nil {
		return 0, verf, err
	}
	status, err := xdr.ReadUint32(res)
	if err != nil {
		return 0, verf, fmt.Errorf("commit reply: %w", err)
	}
	var wcc nfsc.WccData
	if err := xdr.Read(res, &wcc); err != nil {
		return status, verf, fmt.Errorf("commit reply's wcc_data: %w", err)
	}
	if status != nfsc.NFS3Ok {
		return status, verf, nil
	}
	if err := xdr.Read(res, &verf); err != nil {
		return status, verf, fmt.Errorf("commit reply: %w", err)
	}
	return status, verf, nil
}

func header(auth rpc.Auth, proc uint32) rpc.Header {
	return rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: proc, Cred: auth, Verf: rpc.AuthNull}
}
