package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// method is one method of an interface of package meta.
type method struct {
	name    string
	iface   string // the interface that declares it (FS, not API)
	params  []field
	results []ast.Expr
	authz   string // its //tessera:authz directive's words, "" without one
	rpc     string // its //tessera:rpc directive's name, "" without one
}

// rpcName is the name of m's RPC: its //tessera:rpc directive's, else its
// own.
func (m method) rpcName() string {
	if m.rpc != "" {
		return m.rpc
	}
	return m.name
}

// field is one parameter: its name and type.
type field struct {
	name string
	typ  ast.Expr
}

// metaPkg is what the generator reads of package meta.
type metaPkg struct {
	ifaces   map[string]*ast.InterfaceType
	optional []string          // OptionalInterfaces' list, in order
	basic    map[string]string // named types over a basic one: Ino -> uint64
	imports  map[string]string // package name -> import path
}

// loadMeta parses the non-test files of package meta in dir.
func loadMeta(dir string) (*metaPkg, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	p := &metaPkg{ifaces: map[string]*ast.InterfaceType{}, imports: map[string]string{}, basic: map[string]string{}}
	for _, f := range files {
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			p.imports[name] = path
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if it, ok := ts.Type.(*ast.InterfaceType); ok {
							p.ifaces[ts.Name.Name] = it
						}
						if id, ok := ts.Type.(*ast.Ident); ok && numeric[id.Name] {
							p.basic[ts.Name.Name] = id.Name
						}
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name == "OptionalInterfaces" && d.Recv == nil {
					p.optional = typeForNames(d.Body)
				}
			}
		}
	}
	if len(p.optional) == 0 {
		return nil, fmt.Errorf("package meta in %s: no OptionalInterfaces list found", dir)
	}
	return p, nil
}

// typeForNames returns the X of every reflect.TypeFor[X]() in body.
func typeForNames(body *ast.BlockStmt) []string {
	var names []string
	ast.Inspect(body, func(n ast.Node) bool {
		ix, ok := n.(*ast.IndexExpr)
		if !ok {
			return true
		}
		if sel, ok := ix.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "TypeFor" {
			if id, ok := ix.Index.(*ast.Ident); ok {
				names = append(names, id.Name)
			}
		}
		return true
	})
	return names
}

// parseDir parses the Go files of dir but tests.
func parseDir(dir string) ([]*ast.File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// expand resolves the interface names a run asks for ("api", "optional")
// to meta's interface names, in order, each once.
func (p *metaPkg) expand(names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(n string) error {
		if _, ok := p.ifaces[n]; !ok {
			return fmt.Errorf("-ifaces: package meta has no interface %s", n)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
		return nil
	}
	for _, n := range names {
		var list []string
		switch n {
		case "api":
			list = []string{"FS", "Cluster", "Sessions"}
		case "optional":
			for _, o := range p.optional {
				if o != "SessionBinder" {
					list = append(list, o)
				}
			}
		default:
			list = []string{n}
		}
		for _, l := range list {
			if err := add(l); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// methods returns the methods of interface name, embedded interfaces of
// package meta expanded, in declaration order.
func (p *metaPkg) methods(name string) ([]method, error) {
	it, ok := p.ifaces[name]
	if !ok {
		return nil, fmt.Errorf("package meta has no interface %s", name)
	}
	var out []method
	for _, m := range it.Methods.List {
		switch t := m.Type.(type) {
		case *ast.Ident: // an embedded interface of meta
			sub, err := p.methods(t.Name)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		case *ast.FuncType:
			mm := method{name: m.Names[0].Name, iface: name, authz: docDirective(m.Doc, "//tessera:authz "),
				rpc: docDirective(m.Doc, "//tessera:rpc ")}
			if mm.rpc != "" && !token.IsIdentifier(mm.rpc) {
				return nil, fmt.Errorf("%s.%s: //tessera:rpc %q: want one RPC name", name, mm.name, mm.rpc)
			}
			for i, f := range t.Params.List {
				if len(f.Names) == 0 {
					mm.params = append(mm.params, field{fmt.Sprintf("p%d", i), f.Type})
				}
				for _, n := range f.Names {
					mm.params = append(mm.params, field{n.Name, f.Type})
				}
			}
			if t.Results != nil {
				for _, f := range t.Results.List {
					for range max(1, len(f.Names)) {
						mm.results = append(mm.results, f.Type)
					}
				}
			}
			if err := check(mm); err != nil {
				return nil, err
			}
			out = append(out, mm)
		default:
			return nil, fmt.Errorf("interface %s: embeds %T, which wrapgen does not read", name, m.Type)
		}
	}
	return out, nil
}

// check refuses a method whose shape the generated code cannot pass on:
// the first parameter a context.Context, the last result an error.
func check(m method) error {
	ctxOK := len(m.params) > 0 && exprString(m.params[0].typ, "") == "context.Context"
	errOK := len(m.results) > 0 && exprString(m.results[len(m.results)-1], "") == "error"
	if !ctxOK || !errOK {
		return fmt.Errorf("%s.%s: want a context.Context first and an error last to generate a pass-through", m.iface, m.name)
	}
	return nil
}

// handWritten returns the methods defined on type typ (its name, without a
// star) in dir's files but skip, and the package that declares typ: its
// non-test files, or, when tests is set (an output file named *_test.go),
// its test files of the package that declares typ.
func handWritten(dir, typ, skip string, tests bool) (map[string]bool, string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	pkg := ""
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || n == skip || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") != tests {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, "", err
		}
		files = append(files, f)
		if declares(f, typ) {
			pkg = f.Name.Name
		}
	}
	if pkg == "" {
		return nil, "", fmt.Errorf("%s: no file declares type %s", dir, typ)
	}
	out := map[string]bool{}
	for _, f := range files {
		if f.Name.Name != pkg {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			rt := fd.Recv.List[0].Type
			if s, ok := rt.(*ast.StarExpr); ok {
				rt = s.X
			}
			if id, ok := rt.(*ast.Ident); ok && id.Name == typ {
				out[fd.Name.Name] = true
			}
		}
	}
	return out, pkg, nil
}

// declares reports whether f declares type typ.
func declares(f *ast.File, typ string) bool {
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok {
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == typ {
					return true
				}
			}
		}
	}
	return false
}

// docDirective returns the text after prefix of doc's line that starts with
// it, "" when none does.
func docDirective(doc *ast.CommentGroup, prefix string) string {
	if doc == nil {
		return ""
	}
	for _, c := range doc.List {
		if rest, ok := strings.CutPrefix(c.Text, prefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}
