package meta_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryDecoratorIsRegistered scans the module's source for types that
// decorate meta.API — a struct with a meta.API field (named or embedded)
// and a Lookup(ctx, meta.Ino, ...) method — and fails on any that
// decorators (optional_test.go) does not list nor notDecorators excuses:
// a decorator nobody walks the optional interfaces through is how
// `tessera up --metrics` once lost the fileset calls.
func TestEveryDecoratorIsRegistered(t *testing.T) {
	found := scanDecorators(t, "../..")
	known := map[string]bool{}
	for _, d := range decorators {
		for _, n := range d.types {
			known[n] = true
			if !slices.Contains(found, n) && !strings.HasSuffix(n, ".Authorizer") {
				t.Errorf("decorator type %s is registered but the scan did not find it: the scan is broken", n)
			}
		}
	}
	for n := range notDecorators {
		known[n] = true
	}
	for _, n := range found {
		if !known[n] {
			t.Errorf("%s decorates meta.API but is not in decorators (internal/meta/optional_test.go): register it, and make it pass every optional interface on (meta.Forward)", n)
		}
	}
}

// scanDecorators returns "importpath.Type" of every decorator-looking
// type in the non-test Go files under root (the module's root).
func scanDecorators(t *testing.T, root string) []string {
	t.Helper()
	fset := token.NewFileSet()
	apiFields := map[string]bool{} // pkgdir.Type with a meta.API field
	lookups := map[string]bool{}   // pkgdir.Type with Lookup(ctx, Ino, ...)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, ".pb.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := "tessera/" + filepath.ToSlash(rel)
		inMeta := pkg == "tessera/internal/meta"
		isAPI := func(e ast.Expr) bool {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				return ok && id.Name == "meta" && x.Sel.Name == "API"
			case *ast.Ident:
				return inMeta && x.Name == "API"
			}
			return false
		}
		isIno := func(e ast.Expr) bool {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				return ok && id.Name == "meta" && x.Sel.Name == "Ino"
			case *ast.Ident:
				return inMeta && x.Name == "Ino"
			}
			return false
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					ts, ok := sp.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fld := range st.Fields.List {
						if isAPI(fld.Type) {
							apiFields[pkg+"."+ts.Name.Name] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Lookup" || len(d.Type.Params.List) < 2 {
					continue
				}
				if !isIno(d.Type.Params.List[1].Type) && !(len(d.Type.Params.List[0].Names) > 1 && isIno(d.Type.Params.List[0].Type)) {
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					lookups[pkg+"."+id.Name] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for n := range apiFields {
		if lookups[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
