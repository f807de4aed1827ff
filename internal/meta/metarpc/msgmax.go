package metarpc

import (
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// The largest request each method may carry, computed from its message's
// descriptor: a scalar at its longest varint, a string or bytes field at
// the bound the API enforces on it (fieldMax, by field name), a repeated
// field at its most elements (countMax), a message field at its own
// maximum. A field without a bound makes the method unbounded: it gets
// MaxRecvMsg, the server-wide maximum (a commit's changes, an ingest's
// entries carry strings the API bounds only in total).
//
// piecesConn enforces these on each request's gRPC length prefix, before
// the transport opens the call's window to the message: an oversized
// request is refused with ResourceExhausted having cost at most one
// stream window. The byte budget (budget.go) charges a call its method's
// maximum, not MaxRecvMsg, before the read.

// fieldMax bounds string and bytes fields by name, in bytes: what the API
// refuses beyond (meta's checks), never less.
var fieldMax = map[protoreflect.Name]int{
	"name": meta.MaxNameLen, "new_name": meta.MaxNameLen, "old_name": meta.MaxNameLen, "after": meta.MaxNameLen,
	"target": meta.MaxTargetLen,
	"value":  meta.XattrValueMax,
	"hash":   block.HashSize, "old": block.HashSize, "new": block.HashSize, "base": block.HashSize,
	"inline": meta.InlineMax, "new_inline": meta.InlineMax,
	"home_path": meta.MaxHomePath, "token": meta.MaxToken,
}

// countMax bounds repeated fields by name.
var countMax = map[protoreflect.Name]int{
	"patches":    meta.MaxPatches,
	"superseded": meta.MaxSuperseded,
}

// methodSlack is added to every computed maximum: a name somewhat over
// its bound still reaches the API, which refuses it with its own errno
// (ENAMETOOLONG, ERANGE) rather than the transport's ResourceExhausted.
const methodSlack = 4 << 10

const unbounded = -1

// methodMaxima returns, for every method of the services gs serves, the
// largest request it may carry, by full method path ("/pkg.Service/Method"),
// when that is less than maxMsg.
func methodMaxima(gs *grpc.Server, maxMsg int64) map[string]int64 {
	out := map[string]int64{}
	for svc := range gs.GetServiceInfo() {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
		if err != nil {
			continue
		}
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if !ok {
			continue
		}
		for i := range sd.Methods().Len() {
			m := sd.Methods().Get(i)
			n := messageMax(m.Input(), map[protoreflect.FullName]bool{})
			if n == unbounded || n+methodSlack >= maxMsg {
				continue
			}
			out["/"+string(sd.FullName())+"/"+string(m.Name())] = n + methodSlack
		}
	}
	return out
}

// messageMax is the largest encoding of a message of md, or unbounded.
// seen guards against recursive messages.
func messageMax(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) int64 {
	if seen[md.FullName()] {
		return unbounded
	}
	seen[md.FullName()] = true
	defer delete(seen, md.FullName())
	var total int64
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.IsMap() {
			return unbounded
		}
		v := valueMax(f, seen)
		if v == unbounded {
			return unbounded
		}
		per := int64(protowire.SizeTag(f.Number())) + v
		if f.IsList() {
			n, ok := countMax[f.Name()]
			if !ok {
				return unbounded
			}
			per *= int64(n) // packed scalars take less than this
		}
		total += per
	}
	return total
}

// valueMax is the largest encoding of one value of f (without its tag).
func valueMax(f protoreflect.FieldDescriptor, seen map[protoreflect.FullName]bool) int64 {
	switch f.Kind() {
	case protoreflect.BoolKind:
		return 1
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return 4
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return 8
	case protoreflect.StringKind, protoreflect.BytesKind:
		n, ok := fieldMax[f.Name()]
		if !ok {
			return unbounded
		}
		return int64(protowire.SizeBytes(n))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		n := messageMax(f.Message(), seen)
		if n == unbounded {
			return unbounded
		}
		return int64(protowire.SizeBytes(int(n)))
	default: // varints: enums, (s)int32/64, uint32/64
		return 10 // the longest varint
	}
}
