package metarpc

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"tessera/internal/meta"
)

// Wire bounds of the string fields the meta API does not bound itself:
// server and gateway registrations, fileset options, write-back records.
// They make every method but Commit bounded (methodMaxima), and
// checkWireFields refuses a request over them before its handler runs.
const (
	// LabelMax bounds identifiers and labels: server and gateway ids,
	// addresses, hosts, racks, sites, states, a fileset's mode options,
	// a write-back owner.
	LabelMax = 256
	// CauseMax bounds the text of a write-back failure and of the error
	// kept with a write-back record; a gateway cuts longer ones
	// (meta.Clip) before it sends them.
	CauseMax = meta.MaxCause
)

// wireMax bounds, by field name, string fields the API takes as they come.
var wireMax = map[protoreflect.Name]int{
	"id": LabelMax, "addr": LabelMax, "host": LabelMax, "rack": LabelMax, "site": LabelMax,
	"state": LabelMax, "mode": LabelMax, "prefetch": LabelMax, "conflicts": LabelMax, "owner": LabelMax,
	"dir": meta.MaxHomePath, "home": meta.MaxHomePath, "path": meta.MaxHomePath, "path2": meta.MaxHomePath,
	"err": CauseMax, "cause": CauseMax,
}

func init() {
	for name, n := range wireMax {
		if _, dup := fieldMax[name]; dup {
			panic("metarpc: field " + string(name) + " bounded twice")
		}
		fieldMax[name] = n
	}
	countMax["entries"] = meta.MaxIngestEntries
	countMax["cached"] = 2 * meta.MaxCachedRanges
}

// checkWireFields refuses a request whose string fields named in wireMax
// are longer than their bound, naming the field and its length (never its
// content).
func checkWireFields(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	return walkWireFields(m.ProtoReflect(), 0)
}

func walkWireFields(m protoreflect.Message, depth int) error {
	if depth > 8 {
		return nil // the meta protocol nests three deep; deeper is not ours to walk
	}
	var err error
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case f.IsList() && f.Kind() == protoreflect.MessageKind:
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = walkWireFields(l.Get(i).Message(), depth+1)
			}
		case f.IsMap():
		case f.Kind() == protoreflect.MessageKind:
			err = walkWireFields(v.Message(), depth+1)
		case f.Kind() == protoreflect.StringKind && !f.IsList():
			if n, ok := wireMax[f.Name()]; ok && len(v.String()) > n {
				err = badf("%s.%s: %d bytes, max %d", m.Descriptor().Name(), f.Name(), len(v.String()), n)
			}
		}
		return err == nil
	})
	return err
}
