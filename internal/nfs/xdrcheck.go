package nfs

import (
	"encoding/binary"
	"errors"
	"fmt"

	"tessera/internal/vfs"
)

// The RPC call of each record is checked here before go-nfs decodes it:
// go-nfs's XDR decoder allocates every opaque and string at the length
// the peer declares (up to 2 GiB) before reading it, so every
// variable-length field the server decodes is bounded here first, against
// its protocol limit and the bytes the record really holds.

// Protocol numbers and bounds.
const (
	progNFS   = 100003
	progMount = 100005

	procNFSRead = 6

	mountDump     = 2
	mountUmntAll  = 4
	mountExport   = 5
	procNFSFSInfo = 19

	authNone = 0
	authSys  = 1

	maxAuthBody   = 400  // RFC 5531: opaque_auth's body
	maxMachine    = 255  // AUTH_SYS machinename
	maxHandle     = 64   // NFSv3 file handles (NFS3_FHSIZE)
	maxName       = 255  // a file name (meta.MaxNameLen)
	maxPath       = 4096 // a symlink's target
	maxMountPath  = 1024 // MNTPATHLEN
	maxIO         = 1 << 20
	maxRecordSize = maxIO + 64<<10 // a 1 MiB WRITE and its headers
)

// call is what the gate needs of an RPC call: the program, procedure and
// credentials.
type call struct {
	prog, vers, proc uint32
	flavor           uint32
	cred             vfs.Cred // AUTH_SYS's uid, gid and groups
	// countAt is the offset in the record of a READ's count (0: none),
	// clamped to maxIO.
	countAt int
	// pathAt is the offset of a MOUNT path's length (0: none).
	pathAt int
	// argsAt is the offset of the procedure's arguments.
	argsAt int
}

var errTruncated = errors.New("the record ends inside a field")

// xr reads XDR from a record, bounds-checked.
type xr struct {
	b   []byte
	off int
}

func (r *xr) u32() (uint32, error) {
	if len(r.b)-r.off < 4 {
		return 0, errTruncated
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v, nil
}

func (r *xr) skip(n int) error {
	if n < 0 || len(r.b)-r.off < n {
		return errTruncated
	}
	r.off += n
	return nil
}

// opaque skips a variable-length opaque or string of at most max bytes
// and returns it.
func (r *xr) opaque(what string, max int) ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if n > uint32(max) {
		return nil, fmt.Errorf("%s of %d bytes (at most %d)", what, n, max)
	}
	start := r.off
	if err := r.skip(int(n+3) &^ 3); err != nil {
		return nil, err
	}
	return r.b[start : start+int(n)], nil
}

// parseCall checks the RPC call record b (without its record mark) and
// returns what the gate needs; an error names the first field out of
// bounds.
func parseCall(b []byte) (call, error) {
	r := &xr{b: b}
	var c call
	var hdr [5]uint32 // xid, msg type, rpc version, program, version
	for i := range hdr {
		v, err := r.u32()
		if err != nil {
			return c, err
		}
		hdr[i] = v
	}
	if hdr[1] != 0 {
		return c, fmt.Errorf("message type %d is not a call", hdr[1])
	}
	c.prog, c.vers = hdr[3], hdr[4]
	var err error
	if c.proc, err = r.u32(); err != nil {
		return c, err
	}
	if c.flavor, err = r.u32(); err != nil {
		return c, err
	}
	body, err := r.opaque("credentials", maxAuthBody)
	if err != nil {
		return c, err
	}
	if c.flavor == authSys {
		if c.cred, err = parseAuthSys(body); err != nil {
			return c, err
		}
	}
	if _, err := r.u32(); err != nil { // verifier flavor
		return c, err
	}
	if _, err := r.opaque("verifier", maxAuthBody); err != nil {
		return c, err
	}
	c.argsAt = r.off
	return c, checkArgs(r, &c)
}

// parseAuthSys reads AUTH_SYS credentials (RFC 5531 appendix A).
func parseAuthSys(b []byte) (vfs.Cred, error) {
	r := &xr{b: b}
	var c vfs.Cred
	if err := r.skip(4); err != nil { // stamp
		return c, err
	}
	if _, err := r.opaque("AUTH_SYS machine name", maxMachine); err != nil {
		return c, err
	}
	var err error
	if c.Uid, err = r.u32(); err != nil {
		return c, err
	}
	if c.Gid, err = r.u32(); err != nil {
		return c, err
	}
	n, err := r.u32()
	if err != nil {
		return c, err
	}
	if n > vfs.MaxGroups {
		return c, fmt.Errorf("AUTH_SYS with %d groups (at most %d)", n, vfs.MaxGroups)
	}
	for i := uint32(0); i < n; i++ {
		g, err := r.u32()
		if err != nil {
			return c, err
		}
		c.Groups = append(c.Groups, g)
	}
	return c, nil
}

// argSpecs are the arguments of each procedure up to its last
// variable-length field: h a file handle, n a file name, p a symlink
// target, m a mount path, s sattr3, u a uint32, U a uint64, d WRITE's
// data, c READ's count (clamped).
var argSpecs = map[uint32]map[uint32]string{
	progNFS: {
		1: "h", 2: "h", 3: "hn", 4: "h", 5: "h", 6: "hUc", 7: "hUuud", 8: "hn",
		9: "hn", 10: "hnsp", 11: "hn", 12: "hn", 13: "hn", 14: "hnhn", 15: "hhn",
		16: "h", 17: "h", 18: "h", 19: "h", 20: "h", 21: "hUu",
	},
	progMount: {1: "m", 3: "m"},
}

// checkArgs bounds the variable-length arguments of c's procedure.
func checkArgs(r *xr, c *call) error {
	spec := argSpecs[c.prog][c.proc]
	for _, k := range spec {
		var err error
		switch k {
		case 'h':
			_, err = r.opaque("file handle", maxHandle)
		case 'n':
			_, err = r.opaque("file name", maxName)
		case 'p':
			_, err = r.opaque("symlink target", maxPath)
		case 'm':
			c.pathAt = r.off
			_, err = r.opaque("mount path", maxMountPath)
		case 'd':
			_, err = r.opaque("write data", maxIO)
		case 'u':
			err = r.skip(4)
		case 'U':
			err = r.skip(8)
		case 'c':
			c.countAt = r.off
			err = r.skip(4)
		case 's':
			err = skipSattr(r)
		}
		if err != nil {
			return fmt.Errorf("program %d procedure %d: %w", c.prog, c.proc, err)
		}
	}
	return nil
}

// skipSattr skips a sattr3: mode, uid, gid (each a bool and a uint32),
// size (a bool and a uint64), atime and mtime (a how, and a time when the
// client gives it).
func skipSattr(r *xr) error {
	for _, width := range []int{4, 4, 4, 8} {
		set, err := r.u32()
		if err != nil {
			return err
		}
		if set != 0 {
			if err := r.skip(width); err != nil {
				return err
			}
		}
	}
	for range 2 {
		how, err := r.u32()
		if err != nil {
			return err
		}
		if how == 2 { // SET_TO_CLIENT_TIME
			if err := r.skip(8); err != nil {
				return err
			}
		}
	}
	return nil
}
