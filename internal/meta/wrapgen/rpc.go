package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// What -style client and -style server read besides package meta: the
// protocol's generated Go package (its services' RPCs and its messages'
// fields) and the conversions the decorator's package writes by hand
// between meta's types and the messages.
//
// The convention that lets them generate a method's plumbing: the RPC of
// meta method M is the RPC named M in one of the protocol's services (or
// the one M's "//tessera:rpc NAME" directive names); its
// request carries M's parameters and its reply M's results. A parameter
// (or result) goes into the message
//
//   - whole, through a conversion function of the decorator's package whose
//     signature takes exactly M's parameter types and returns the request
//     message (setAttrOut(meta.Ino, meta.SetAttrReq) *pb.SetAttrRequest),
//     and back through one that takes the message and returns them
//     (setAttrIn, with or without a last error);
//   - else field by field: each parameter into the field of its name
//     (parent -> Parent; a message of one field takes a method's one
//     parameter whatever its name), results into the reply's fields in
//     order. A field's value is the parameter itself when the types are
//     the same, a conversion function of the decorator's package from one
//     type to the other when the types differ and there is one
//     (hashOut(block.Hash) []byte;
//     going in, one that takes the field's name first and returns an error
//     is preferred: intIn("read_dir.limit", int64) (int, error)), else a
//     plain conversion between numbers (meta.Ino and uint64).
//
// A method that fits none of these, an RPC that is a stream, and a method
// without an RPC fail generation, naming what is missing, unless the type
// has it written by hand.

// rpc is one unary (or streaming) RPC of the protocol.
type rpc struct {
	name, service string
	req, rep      string // "*pb.LookupRequest"
	stream        bool
}

// msgField is one field of a protocol message.
type msgField struct {
	name  string // the Go field's name
	proto string // the proto field's name (snake case)
	typ   string // as the decorator sees it: "uint64", "*pb.WBOp"
}

// conv is a function of the decorator's package: its name and signature.
type conv struct {
	name            string
	params, results []string
}

// proto is what the generator reads of the protocol and the conversions.
type proto struct {
	qual     string // the protocol package's name in the decorator ("pb")
	path     string // its import path
	rpcs     map[string]rpc
	order    map[string][]string // service -> its RPCs in order
	msgs     map[string][]msgField
	convs    []conv
	underlie map[string]string // meta's named basic types: "meta.Ino" -> "uint64"
}

// loadProto reads the protocol's package in pbDir (imported as qual) and
// the conversion functions of the decorator's package in dir (every
// non-test file but generated ones).
func loadProto(dir, pbDir, qual, path string, mp *metaPkg) (*proto, error) {
	p := &proto{qual: qual, path: path, rpcs: map[string]rpc{}, order: map[string][]string{},
		msgs: map[string][]msgField{}, underlie: map[string]string{}}
	for n, u := range mp.basic {
		p.underlie["meta."+n] = u
	}
	files, err := parseDir(pbDir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				switch t := ts.Type.(type) {
				case *ast.StructType:
					p.msgs["*"+qual+"."+ts.Name.Name] = p.fields(t)
				case *ast.InterfaceType:
					if svc, ok := strings.CutSuffix(ts.Name.Name, "Client"); ok && strings.HasSuffix(svc, "Service") {
						if err := p.service(svc, t); err != nil {
							return nil, err
						}
					}
				}
			}
		}
	}
	if len(p.rpcs) == 0 {
		return nil, fmt.Errorf("%s: no gRPC service clients found", pbDir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Type.TypeParams != nil {
				continue
			}
			c := conv{name: fd.Name.Name}
			c.params = types(fd.Type.Params)
			c.results = types(fd.Type.Results)
			p.convs = append(p.convs, c)
		}
	}
	return p, nil
}

// types lists a field list's types, one per name.
func types(l *ast.FieldList) []string {
	var out []string
	if l == nil {
		return out
	}
	for _, f := range l.List {
		for range max(1, len(f.Names)) {
			out = append(out, exprString(f.Type, ""))
		}
	}
	return out
}

// fields lists a message struct's exported fields.
func (p *proto) fields(t *ast.StructType) []msgField {
	var out []msgField
	for _, f := range t.Fields.List {
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			mf := msgField{name: n.Name, proto: n.Name, typ: exprString(f.Type, p.qual)}
			if f.Tag != nil {
				tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("protobuf")
				for _, part := range strings.Split(tag, ",") {
					if v, ok := strings.CutPrefix(part, "name="); ok {
						mf.proto = v
					}
				}
			}
			out = append(out, mf)
		}
	}
	return out
}

// service records the RPCs of one service's client interface.
func (p *proto) service(svc string, t *ast.InterfaceType) error {
	for _, m := range t.Methods.List {
		ft, ok := m.Type.(*ast.FuncType)
		if !ok || len(m.Names) != 1 {
			continue
		}
		name := m.Names[0].Name
		if prev, ok := p.rpcs[name]; ok {
			return fmt.Errorf("rpc %s is in both %s and %s", name, prev.service, svc)
		}
		r := rpc{name: name, service: svc, stream: true}
		ps, rs := ft.Params.List, ft.Results.List
		if len(ps) == 3 && len(rs) == 2 {
			if _, ok := ps[1].Type.(*ast.StarExpr); ok {
				r.req = exprString(ps[1].Type, p.qual)
				r.rep = exprString(rs[0].Type, p.qual)
				r.stream = false
			}
		}
		p.rpcs[name] = r
		p.order[svc] = append(p.order[svc], name)
	}
	return nil
}

// find returns the conversion taking params and returning results.
func (p *proto) find(params, results []string) (string, bool) {
	for _, c := range p.convs {
		if slices.Equal(c.params, params) && slices.Equal(c.results, results) {
			return c.name, true
		}
	}
	return "", false
}

// numeric are the types a plain conversion turns into one another.
var numeric = map[string]bool{"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "time.Duration": true}

// isNumber reports whether t is a number or a meta type over one.
func (p *proto) isNumber(t string) bool {
	if u, ok := p.underlie[t]; ok {
		t = u
	}
	return numeric[t]
}

// valueOut converts x of type from into a message field of type to.
func (p *proto) valueOut(x, from, to string) (string, error) {
	switch {
	case from == to:
		return x, nil
	case p.has1(from, to):
		n, _ := p.find([]string{from}, []string{to})
		return n + "(" + x + ")", nil
	case p.isNumber(from) && p.isNumber(to):
		return to + "(" + x + ")", nil
	}
	return "", fmt.Errorf("no conversion from %s to %s (write func(%s) %s)", from, to, from, to)
}

func (p *proto) has1(from, to string) bool {
	_, ok := p.find([]string{from}, []string{to})
	return ok
}

// valueIn converts message field x (of type from, named field for
// errors) into type to: the expression and whether it also returns an
// error.
func (p *proto) valueIn(x, field, from, to string) (string, bool, error) {
	if from == to {
		return x, false, nil
	}
	if n, ok := p.find([]string{"string", from}, []string{to, "error"}); ok {
		return fmt.Sprintf("%s(%q, %s)", n, field, x), true, nil
	}
	if n, ok := p.find([]string{from}, []string{to, "error"}); ok {
		return n + "(" + x + ")", true, nil
	}
	switch {
	case p.has1(from, to):
		n, _ := p.find([]string{from}, []string{to})
		return n + "(" + x + ")", false, nil
	case p.isNumber(from) && p.isNumber(to):
		return to + "(" + x + ")", false, nil
	}
	return "", false, fmt.Errorf("no conversion from %s to %s (write func(%s) (%s, error))", from, to, from, to)
}
