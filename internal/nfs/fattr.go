package nfs

import (
	"bytes"
	"encoding/binary"

	gonfs "github.com/willscott/go-nfs"
)

// The gate's replies encode attributes here, field by field, not through
// go-nfs's reflective XDR encoder (WritePostOpAttrs: a reflected walk of
// the struct per GETATTR, LOOKUP, ACCESS, READ and every change's
// wcc_data: 19 times the CPU of this, BenchmarkLookupReply). The bytes are
// the same (TestAttrEncodingIsGoNFSs).

// fattrLen is the size of an encoded fattr3.
const fattrLen = 84

// appendFattr appends a, a fattr3, to b.
func appendFattr(b []byte, a *gonfs.FileAttribute) []byte {
	for _, v := range []uint32{uint32(a.Type), a.FileMode, a.Nlink, a.UID, a.GID} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = binary.BigEndian.AppendUint64(b, a.Filesize)
	b = binary.BigEndian.AppendUint64(b, a.Used)
	b = binary.BigEndian.AppendUint32(b, a.SpecData[0])
	b = binary.BigEndian.AppendUint32(b, a.SpecData[1])
	b = binary.BigEndian.AppendUint64(b, a.FSID)
	b = binary.BigEndian.AppendUint64(b, a.Fileid)
	for _, t := range []gonfs.FileTime{a.Atime, a.Mtime, a.Ctime} {
		b = binary.BigEndian.AppendUint32(b, t.Seconds)
		b = binary.BigEndian.AppendUint32(b, t.Nseconds)
	}
	return b
}

// putPostOpAttr writes a post_op_attr: a's attributes, or none if a is nil.
func putPostOpAttr(w *bytes.Buffer, a *gonfs.FileAttribute) {
	var b [4 + fattrLen]byte
	if a == nil {
		w.Write(b[:4])
		return
	}
	binary.BigEndian.PutUint32(b[:], 1)
	w.Write(appendFattr(b[:4], a))
}

// putFattr writes a's attributes (a fattr3, not optional).
func putFattr(w *bytes.Buffer, a *gonfs.FileAttribute) {
	var b [fattrLen]byte
	w.Write(appendFattr(b[:0], a))
}

// appendWcc appends a wcc_data: pre (nil: not known) and post (nil: not
// known).
func appendWcc(b []byte, pre *gonfs.FileCacheAttribute, post *gonfs.FileAttribute) []byte {
	if pre == nil {
		b = binary.BigEndian.AppendUint32(b, 0)
	} else {
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint64(b, pre.Filesize)
		for _, t := range []gonfs.FileTime{pre.Mtime, pre.Ctime} {
			b = binary.BigEndian.AppendUint32(b, t.Seconds)
			b = binary.BigEndian.AppendUint32(b, t.Nseconds)
		}
	}
	if post == nil {
		return binary.BigEndian.AppendUint32(b, 0)
	}
	return appendFattr(binary.BigEndian.AppendUint32(b, 1), post)
}
