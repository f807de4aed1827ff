package nfs

import (
	"bytes"
	"syscall"
	"testing"

	gonfs "github.com/willscott/go-nfs"
	"github.com/willscott/go-nfs-client/nfs/xdr"

	"tessera/internal/meta"
)

// TestAttrEncodingIsGoNFSs: the gate's own encoding of attributes, of
// uint32s and of opaques gives the bytes go-nfs's and go-nfs-client's
// reflective encoders give, for each kind of inode.
func TestAttrEncodingIsGoNFSs(t *testing.T) {
	for _, in := range []meta.Inode{
		{Attr: meta.Attr{Ino: 7, Mode: syscall.S_IFREG | 0o4755, Nlink: 2, Uid: 1000, Gid: 50, Size: 5 << 30, Mtime: 1_700_000_000_123_456_789}},
		{Attr: meta.Attr{Ino: 1, Mode: syscall.S_IFDIR | 0o1777, Nlink: 3, Mtime: -5}},
		{Attr: meta.Attr{Ino: 9, Mode: syscall.S_IFLNK | 0o777, Nlink: 1, Size: 4}},
		{Attr: meta.Attr{Ino: 10, Mode: syscall.S_IFCHR | 0o600, Nlink: 1, Rdev: 4<<8 | 1}},
		{Attr: meta.Attr{Ino: 11, Mode: syscall.S_IFIFO | 0o644, Nlink: 1}},
	} {
		a := attrOf(in)
		var want, got bytes.Buffer
		_ = gonfs.WritePostOpAttrs(&want, a)
		putPostOpAttr(&got, a)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("inode %d: post_op_attr %x, go-nfs's %x", in.Ino, got.Bytes(), want.Bytes())
		}
		want.Reset()
		got.Reset()
		_ = xdr.Write(&want, a)
		putFattr(&got, a)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("inode %d: fattr3 %x, go-nfs's %x", in.Ino, got.Bytes(), want.Bytes())
		}
	}
	for _, pre := range []*gonfs.FileCacheAttribute{nil, attrOf(meta.Inode{Attr: meta.Attr{Size: 9, Mtime: 1e9 + 5}}).AsCache()} {
		for _, post := range []*gonfs.FileAttribute{nil, attrOf(meta.Inode{Attr: meta.Attr{Ino: 3, Mode: syscall.S_IFREG | 0o600}})} {
			var want bytes.Buffer
			_ = gonfs.WriteWcc(&want, pre, post)
			if got := appendWcc(nil, pre, post); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("wcc_data (pre %v, post %v): %x, go-nfs's %x", pre != nil, post != nil, got, want.Bytes())
			}
		}
	}
	var none, want bytes.Buffer
	putPostOpAttr(&none, nil)
	_ = gonfs.WritePostOpAttrs(&want, nil)
	if !bytes.Equal(none.Bytes(), want.Bytes()) {
		t.Errorf("no attributes: %x, go-nfs's %x", none.Bytes(), want.Bytes())
	}
	for _, v := range []any{uint32(0), uint32(1 << 31), []byte{}, []byte{1}, []byte{1, 2, 3, 4}, []byte{1, 2, 3, 4, 5}, [8]byte{1, 2, 3}} {
		var got, want bytes.Buffer
		put(&got, v)
		_ = xdr.Write(&want, v)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%#v: %x, the encoder's %x", v, got.Bytes(), want.Bytes())
		}
	}
}

// BenchmarkLookupReply times the body of a LOOKUP reply: status, handle,
// the entry's and the directory's attributes.
func BenchmarkLookupReply(b *testing.B) {
	in := meta.Inode{Attr: meta.Attr{Ino: 7, Mode: syscall.S_IFREG | 0o644, Nlink: 1, Size: 1234, Mtime: 1_700_000_000_123_456_789}}
	dir := meta.Inode{Attr: meta.Attr{Ino: 1, Mode: syscall.S_IFDIR | 0o755, Nlink: 2}}
	fh := fileHandle{cluster: 42, export: 1, ino: 7, gen: 1}.encode()
	b.Run("gate", func(b *testing.B) {
		for range b.N {
			w := new(bytes.Buffer)
			put(w, uint32(nfsOK))
			put(w, fh)
			putPostOpAttr(w, attrOf(in))
			putPostOpAttr(w, attrOf(dir))
		}
	})
	b.Run("reflective", func(b *testing.B) {
		for range b.N {
			w := new(bytes.Buffer)
			_ = xdr.Write(w, uint32(nfsOK))
			_ = xdr.Write(w, fh)
			_ = gonfs.WritePostOpAttrs(w, attrOf(in))
			_ = gonfs.WritePostOpAttrs(w, attrOf(dir))
		}
	})
}
