package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// metaOf parses src as package meta's declarations.
func metaOf(t *testing.T, src string) *metaPkg {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package meta\n"+src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p := &metaPkg{ifaces: map[string]*ast.InterfaceType{}, imports: map[string]string{"context": "context"}, basic: map[string]string{}}
	for _, d := range f.Decls {
		for _, s := range d.(*ast.GenDecl).Specs {
			ts := s.(*ast.TypeSpec)
			p.ifaces[ts.Name.Name] = ts.Type.(*ast.InterfaceType)
		}
	}
	return p
}

// authzOf runs -style authz over mp's interface X for a view with no
// method by hand but the mappers named.
func authzOf(mp *metaPkg, mappers ...string) (string, error) {
	var b bytes.Buffer
	hand := map[string]bool{}
	for _, m := range mappers {
		hand[m] = true
	}
	g := &gen{cfg: config{typ: "*view", recv: "v", style: "authz"}, mp: mp, qual: "meta", used: map[string]bool{}, w: &b, hand: hand}
	_, _, err := g.authzFile([]string{"X"}, hand)
	return strings.Join(strings.Fields(b.String()), " "), err
}

// TestAuthzDirectiveRequired: a method without a //tessera:authz
// directive, or with one that does not parse, fails generation (there is
// no default rule); one with a directive gets its rule and a view method
// that checks its inode arguments and maps its inode results.
func TestAuthzDirectiveRequired(t *testing.T) {
	for _, bad := range []string{
		"", // none
		"//tessera:authz write",
		"//tessera:authz rw tree",
		"//tessera:authz write subtree",
		"//tessera:authz write tree loud",
	} {
		mp := metaOf(t, "type X interface {\n"+bad+"\n\tTouch(ctx context.Context, ino Ino) (Inode, error)\n}\n")
		if _, err := authzOf(mp); err == nil || !strings.Contains(err.Error(), "X.Touch") {
			t.Errorf("directive %q: got %v, want an error naming X.Touch", bad, err)
		}
	}
	mp := metaOf(t, "type X interface {\n\t//tessera:authz write tree: a note\n\tTouch(ctx context.Context, ino, dir Ino, name string) (Inode, error)\n}\n")
	s, err := authzOf(mp)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"Touch": {auth.WriteNamespace, inTree}, // a note`,
		`{[]string{"X"}, rulesX},`,
		`c, api, err := v.begin(ctx, "Touch")`,
		`if ino, err = v.a.in(ctx, c, "Touch", ino); err != nil { return r0, err }`,
		`if dir, err = v.a.in(ctx, c, "Touch", dir); err != nil { return r0, err }`,
		`r0, err = api.Touch(ctx, ino, dir, name) c.outInode(&r0)`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("generated code lacks %q:\n%s", want, s)
		}
	}
}

// TestAuthzRefusesUnmappedShapes: a tree method whose arguments or results
// may carry inode numbers the generator cannot map is refused: it must be
// written by hand, so no new method slips past confinement.
func TestAuthzRefusesUnmappedShapes(t *testing.T) {
	for _, sig := range []string{
		"Touch(ctx context.Context, req CreateReq) (Inode, error)",
		"Touch(ctx context.Context, ino Ino) ([]DirEntry, error)",
		"Touch(ctx context.Context, ino Ino) (Quota, error)",
	} {
		mp := metaOf(t, "type X interface {\n\t//tessera:authz read tree\n\t"+sig+"\n}\n")
		if _, err := authzOf(mp); err == nil || !strings.Contains(err.Error(), "by hand") {
			t.Errorf("%s: got %v, want a refusal saying to write it by hand", sig, err)
		}
		mp = metaOf(t, "type X interface {\n\t//tessera:authz admin cluster\n\t"+sig+"\n}\n")
		if _, err := authzOf(mp); err != nil {
			t.Errorf("%s as a cluster method (refused to confined callers): %v", sig, err)
		}
	}
}

// TestAuthzMapsThroughPerTypeMappers: a tree method's argument or result
// of a type with the view's in<T> / out<T> method goes through it (each
// element of a slice, on a copy of an argument's), a logged call's struct
// argument through log<T>, and an optional interface's method authorizes
// the caller only (it is made on the unbound service).
func TestAuthzMapsThroughPerTypeMappers(t *testing.T) {
	mp := metaOf(t, "type X interface {\n\t//tessera:authz read tree\n\tTouch(ctx context.Context, reqs []CreateReq) ([]Quota, error)\n"+
		"\t//tessera:authz admin cluster logged\n\tSet(ctx context.Context, q Quota, dir Ino) error\n}\n")
	mp.optional = []string{"X"}
	s, err := authzOf(mp, "inCreateReq", "outQuota", "logQuota")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`c, err := v.a.authorize(ctx, "Touch")`,
		`reqs = slices.Clone(reqs) for i := range reqs { if err = v.inCreateReq(ctx, c, "Touch", &reqs[i]); err != nil { return r0, err } }`,
		`r0, err = meta.Forward{Next: v.a.svc}.Touch(ctx, reqs) for i := range r0 { v.outQuota(ctx, c, "Touch", &r0[i]) }`,
		`v.a.admin(ctx, c.id, "Set", err, append([]any{"dir", uint64(dir)}, v.logQuota(q)...)...)`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("generated code lacks %q:\n%s", want, s)
		}
	}
}

// TestMountrootRefusesUnmappedShapes: mountroot's generated method maps
// meta.Ino arguments and, through the package's map<T> methods, arguments
// and results of type meta.T or []meta.T; a method with any other shape
// that may carry an inode number is refused, to be written by hand (or its
// type's mapper).
func TestMountrootRefusesUnmappedShapes(t *testing.T) {
	for _, sig := range []string{
		"Touch(ctx context.Context, req CreateReq) (Inode, error)",
		"Touch(ctx context.Context, ino Ino) ([]DirEntry, error)",
		"Touch(ctx context.Context, ino Ino) (Quota, error)",
	} {
		var b bytes.Buffer
		g := &gen{cfg: config{typ: "*API", recv: "a", style: "mountroot"}, mp: metaOf(t, "type X interface{ "+sig+" }"), qual: "meta", used: map[string]bool{}, w: &b,
			hand: map[string]bool{"mapInode": true}}
		ms, err := g.mp.methods("X")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.rootMethod(ms[0], false); err == nil || !strings.Contains(err.Error(), "by hand") {
			t.Errorf("%s: got %v, want a refusal saying to write it by hand", sig, err)
		}
	}
	var b bytes.Buffer
	g := &gen{cfg: config{typ: "*API", recv: "a", style: "mountroot"}, used: map[string]bool{}, w: &b, qual: "meta",
		mp:   metaOf(t, "type X interface{ Touch(ctx context.Context, ino, dir Ino, name string, reqs []CreateReq) (Inode, []Quota, error) }"),
		hand: map[string]bool{"mapInode": true, "mapQuota": true, "mapCreateReq": true}}
	ms, _ := g.mp.methods("X")
	if err := g.rootMethod(ms[0], true); err != nil {
		t.Fatal(err)
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	if want := "reqs = slices.Clone(reqs) for i := range reqs { a.mapCreateReq(&reqs[i]) } " +
		"r0, r1, err = a.fwd().Touch(ctx, a.m(ino), a.m(dir), name, reqs) a.mapInode(&r0) for i := range r1 { a.mapQuota(&r1[i]) } return r0, r1, a.e(err)"; !strings.Contains(s, want) {
		t.Errorf("generated %q, want %q", s, want)
	}
}
