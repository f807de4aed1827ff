package metarpc

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"tessera/internal/block"
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The decoders of both directions, fed arbitrary bytes: the server's
// (requests: what any peer may send) and the client's (replies, callbacks
// and error details: what a server may send). None may panic; a message a
// decoder accepts must survive encoding and decoding again unchanged; a
// message it refuses must be refused as meta.ErrInvalid. In CI they run on
// their seed corpus; `make fuzz` explores.

func sampleChanges() []meta.BlockChange {
	h := block.Sum([]byte("a"))
	return []meta.BlockChange{
		{Index: 0, InlineNew: true, NewInline: []byte("inline")},
		{Index: 3, Old: h, New: block.Sum([]byte("b")), Compose: &meta.Composition{Len: 9, Base: h,
			Patches: []meta.Patch{{Hash: block.Sum([]byte("p")), Off: 1, Len: 2}}}},
	}
}

func seedRequests(f *testing.F) {
	for _, m := range []proto.Message{
		commitOut(meta.CommitReq{Ino: 7, Changes: sampleChanges(), Size: 99, SetSize: true, Superseded: []block.Hash{block.Sum([]byte("s"))}}),
		&pb.DecomposeRequest{Hash: hashOut(block.Sum([]byte("d")))},
		&pb.ReadDirRequest{Dir: 1, After: "x", Limit: 10, Plus: true},
		&pb.CommitRequest{Superseded: [][]byte{{1, 2, 3}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x12, 0x05, 0x1a, 0x03, 1, 2, 3})
}

// refused checks that a decoding error is meta.ErrInvalid.
func refused(t *testing.T, what string, err error) {
	if !errors.Is(err, meta.ErrInvalid) {
		t.Fatalf("%s refused with %v, want meta.ErrInvalid", what, err)
	}
}

// FuzzDecodeRequest: the server's decoders of what a client sends.
func FuzzDecodeRequest(f *testing.F) {
	seedRequests(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var cr pb.CommitRequest
		if proto.Unmarshal(b, &cr) == nil {
			req, err := commitIn(&cr)
			if err != nil {
				refused(t, "commit", err)
			} else {
				again, err := commitIn(commitOut(req))
				if err != nil || !reflect.DeepEqual(again, req) {
					t.Fatalf("commit round trip: %+v, %v; want %+v", again, err, req)
				}
			}
		}
		var dr pb.DecomposeRequest
		if proto.Unmarshal(b, &dr) == nil {
			if h, err := hashIn("decompose.hash", dr.Hash); err != nil {
				refused(t, "decompose", err)
			} else if back, _ := hashIn("h", hashOut(h)); back != h {
				t.Fatalf("hash round trip %x -> %x", h, back)
			}
		}
		var rd pb.ReadDirRequest
		if proto.Unmarshal(b, &rd) == nil {
			if _, err := intIn("readdir.limit", rd.Limit); err != nil {
				refused(t, "readdir", err)
			}
		}
		var sa pb.SetAttrRequest
		if proto.Unmarshal(b, &sa) == nil {
			ino, req := setAttrIn(&sa)
			if ino2, req2 := setAttrIn(setAttrOut(ino, req)); ino2 != ino || req2 != req {
				t.Fatalf("setattr round trip %+v -> %+v", req, req2)
			}
		}
		var c pb.CreateRequest
		if proto.Unmarshal(b, &c) == nil {
			req := createIn(&c)
			if back := createIn(createOut(req)); back != req {
				t.Fatalf("create round trip %+v -> %+v", req, back)
			}
		}
	})
}

func seedReplies(f *testing.F) {
	rec := meta.Recipe{Change: 3, Size: 10, First: 0, Blocks: []block.Hash{block.Sum([]byte("x")), {}},
		Composed: map[block.Hash]meta.Composition{block.Sum([]byte("x")): {Len: 4, Patches: []meta.Patch{{Off: 0, Len: 4}}}}}
	in := meta.Inode{Attr: meta.Attr{Ino: 5, Mode: syscall.S_IFREG | 0644, Size: 6, Replicas: 2}, HasInline: true, Inline: []byte("inline")}
	st, _ := status.New(5, "x").WithDetails(&pb.Error{Errno: 2, Message: "nope", Conflict: &pb.Conflict{Ino: 3, Current: changesOut(sampleChanges())}})
	for _, m := range []proto.Message{
		inodeOut(in),
		recipeOut(rec),
		dirEntriesOut([]meta.DirEntry{{Name: "a", Ino: 2, Mode: syscall.S_IFDIR, Inode: &in}}, true),
		callbacksOut([]meta.Callback{{Seq: 1, Ino: 5, Kind: meta.CallbackUpdate, Inode: in, Changes: sampleChanges(), SetSize: true}}),
		progressOut(meta.MoverProgress{Round: 1, Lost: 1, LostBlocks: []meta.LostBlock{{Hash: block.Sum([]byte("l")), Inos: []meta.Ino{4}}}}),
		serverMapOut(meta.ServerMap{Epoch: 2, Replicas: 2, Servers: []meta.Server{{ID: "b0", Addr: "127.0.0.1:1", State: meta.StateUp}}}),
		refsOut([]meta.BlockRef{{Ino: 1, Index: 2, Hash: block.Sum([]byte("r"))}}, true),
		st.Proto(),
		&pb.Callback{Kind: 7},
		&pb.Attr{Replicas: 300},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x22, 0x00}) // an inode's inline bytes present and empty
}

// roundTrip decodes b as P with dec; an accepted value must encode and
// decode to itself.
func roundTrip[T any, P any, PP interface {
	*P
	proto.Message
}](t *testing.T, what string, b []byte, dec func(PP) (T, error), enc func(T) PP) {
	var m P
	if proto.Unmarshal(b, PP(&m)) != nil {
		return
	}
	v, err := dec(PP(&m))
	if err != nil {
		refused(t, what, err)
		return
	}
	again, err := dec(enc(v))
	if err != nil || !reflect.DeepEqual(again, v) {
		t.Fatalf("%s round trip: %+v, %v; want %+v", what, again, err, v)
	}
}

// FuzzDecodeReply: the client's decoders of what a server sends.
func FuzzDecodeReply(f *testing.F) {
	seedReplies(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, "inode", b, inodeIn, inodeOut)
		roundTrip(t, "recipe", b, recipeIn, recipeOut)
		roundTrip(t, "callbacks", b, callbacksIn, callbacksOut)
		roundTrip(t, "mover report", b, progressIn, progressOut)
		roundTrip(t, "server map", b, serverMapIn, serverMapOut)
		type page struct {
			ents []meta.DirEntry
			more bool
		}
		roundTrip(t, "readdir", b, func(r *pb.ReadDirReply) (page, error) {
			e, m, err := dirEntriesIn(r)
			return page{e, m}, err
		}, func(p page) *pb.ReadDirReply { return dirEntriesOut(p.ents, p.more) })
		type refs struct {
			refs []meta.BlockRef
			more bool
		}
		roundTrip(t, "list blocks", b, func(r *pb.ListBlocksReply) (refs, error) {
			e, m, err := refsIn(r)
			return refs{e, m}, err
		}, func(p refs) *pb.ListBlocksReply { return refsOut(p.refs, p.more) })
		var sp pb.Error
		if proto.Unmarshal(b, &sp) == nil {
			st, err := status.New(2, "x").WithDetails(&sp)
			if err == nil {
				e, ok := apiError(st)
				var errno syscall.Errno
				if !ok || e == nil {
					t.Fatalf("error detail %v not decoded", &sp)
				}
				if sp.Conflict == nil && (!errors.As(e, &errno) || errno <= 0 || errno > 4095) {
					t.Fatalf("error detail %v decoded to %v: want an errno in range", &sp, e)
				}
			}
		}
	})
}
