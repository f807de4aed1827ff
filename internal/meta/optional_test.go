package meta_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/meta/authz"
	"tessera/internal/meta/metarpc"
	"tessera/internal/meta/metawait"
	"tessera/internal/metrics"
	"tessera/internal/mountroot"
)

// decorator is one registered decorator of meta.API: how to wrap an API
// with it, and the types it is made of (package path "." type name), which
// TestEveryDecoratorIsRegistered matches against the source tree.
type decorator struct {
	name  string
	types []string
	wrap  func(meta.API) meta.API
	// unbound: a session-bound copy makes the optional calls without
	// the session (authz: none of them takes leases or is called back).
	unbound bool
}

// decorators lists every decorator of meta.API. A new one must be added
// here; TestEveryDecoratorIsRegistered fails until it is.
var decorators = []decorator{
	{"metrics", []string{"tessera/internal/metrics.metaAPI"}, func(a meta.API) meta.API {
		return metrics.MetaAPI(a, metrics.NewMetaCalls(prometheus.NewRegistry(), metrics.SideMeta))
	}, false},
	{"mountroot", []string{"tessera/internal/mountroot.API"}, func(a meta.API) meta.API {
		return mountroot.New(a, 5)
	}, false},
	{"metawait", []string{"tessera/internal/meta/metawait.API"}, func(a meta.API) meta.API {
		return metawait.New(a, metawait.Options{})
	}, false},
	{"authz", []string{"tessera/internal/meta/authz.Authorizer", "tessera/internal/meta/authz.view"}, func(a meta.API) meta.API {
		return authz.Wrap(a.(authz.Service), authz.Options{})
	}, true},
}

// notDecorators are types that look like decorators (a meta.API field
// and a Lookup method) but are views private to one package, which hands
// them only to code that makes API calls: they need not pass capabilities
// on.
var notDecorators = map[string]string{
	"tessera/internal/client.tierAPI":    "the client's attribute tier, inside its own API stack",
	"tessera/internal/client.nearbyMeta": "the FUSE layer's namespace view (Client.Meta): namespace calls only",
	"tessera/internal/client.sessionAPI": "the client's session-bound API, used by the client itself",
}

// recorder notes which optional method reached the API under the
// decorators, and on behalf of which session.
type recorder struct {
	method string
	sid    meta.SessionID
}

// bare implements meta.API only (its methods are not called by the test,
// but WalkBlocks: meta.ListBlocksOf's fallback), and authz.Tree.
type bare struct {
	meta.API
}

func (bare) Within(context.Context, meta.Ino, meta.Ino) (bool, error) { return true, nil }
func (bare) WalkBlocks(context.Context, func(meta.Ino, uint64, block.Hash) error) error {
	return nil
}

// full implements meta.API and every optional interface; each optional
// method records its name. Those methods are generated: a method added to
// an optional interface reaches the fake by `go generate` as it reaches
// the decorators.
//
//go:generate go run tessera/internal/meta/wrapgen -type *full -recv f -ifaces optional -style record -o zz_full_gen_test.go
type full struct {
	bare
	rec *recorder
	sid meta.SessionID
}

// note records that method reached the fake, with its session.
func (f *full) note(method string) { f.rec.method, f.rec.sid = method, f.sid }

func (f *full) WithSession(id meta.SessionID) meta.API { return &full{rec: f.rec, sid: id} }

// adminCtx carries an identity every decorator lets through (authz).
func adminCtx() context.Context {
	return auth.NewContext(context.Background(), auth.Identity{Name: "test", Role: auth.RoleAdmin})
}

// called is one call of callEach: its error and what rec saw of it.
type called struct {
	err     error
	reached recorder
}

// callEach calls every method of interface it on v with zero arguments
// (a context where one is taken) and returns, by method, each call's error
// and what rec (nil: none) recorded of it.
func callEach(t *testing.T, v any, it reflect.Type, rec *recorder) map[string]called {
	t.Helper()
	res := map[string]called{}
	rv := reflect.ValueOf(v)
	ctxType := reflect.TypeFor[context.Context]()
	for i := range it.NumMethod() {
		m := it.Method(i)
		fn := rv.MethodByName(m.Name)
		var args []reflect.Value
		for j := range m.Type.NumIn() {
			in := m.Type.In(j)
			if in == ctxType {
				args = append(args, reflect.ValueOf(adminCtx()))
			} else {
				args = append(args, reflect.Zero(in))
			}
		}
		if rec != nil {
			*rec = recorder{}
		}
		out := fn.Call(args)
		var c called
		if last := out[len(out)-1]; last.Type() == reflect.TypeFor[error]() && !last.IsNil() {
			c.err = last.Interface().(error)
		}
		if rec != nil {
			c.reached = *rec
		}
		res[m.Name] = c
	}
	return res
}

// TestOptionalInterfacesPassEveryDecorator wraps an API that has every
// optional interface in each decorator, and a session-bound copy of each,
// and checks that each method of each interface is there and reaches the
// API below (with the session); over an API that has none of them each
// method is still there and answers meta.ErrNotSupported (ListBlocks: a
// walk).
func TestOptionalInterfacesPassEveryDecorator(t *testing.T) {
	for _, d := range decorators {
		t.Run(d.name, func(t *testing.T) {
			rec := &recorder{}
			top := d.wrap(&full{rec: rec})
			sb, ok := top.(meta.SessionBinder)
			if !ok {
				t.Fatalf("%T does not implement meta.SessionBinder", top)
			}
			for _, api := range []struct {
				name string
				api  meta.API
				sid  meta.SessionID
			}{{"unbound", top, 0}, {"bound", sb.WithSession(7), 7}} {
				if d.unbound {
					api.sid = 0
				}
				for _, it := range meta.OptionalInterfaces() {
					if it == reflect.TypeFor[meta.SessionBinder]() {
						continue
					}
					if !reflect.TypeOf(api.api).Implements(it) {
						t.Errorf("%s %T does not implement %v", api.name, api.api, it)
						continue
					}
					for m, c := range callEach(t, api.api, it, rec) {
						if c.err != nil {
							t.Errorf("%s %v.%s: %v", api.name, it, m, c.err)
						}
						if c.reached != (recorder{m, api.sid}) {
							t.Errorf("%s %v.%s reached %q with session %d, want %q with %d", api.name, it, m, c.reached.method, c.reached.sid, m, api.sid)
						}
					}
				}
			}
			under := d.wrap(bare{})
			for _, it := range meta.OptionalInterfaces() {
				if !reflect.TypeOf(under).Implements(it) {
					t.Errorf("over a bare API, %T does not implement %v", under, it)
					continue
				}
				if it == reflect.TypeFor[meta.SessionBinder]() {
					if under.(meta.SessionBinder).WithSession(7) == nil {
						t.Errorf("over a bare API, WithSession returned nil")
					}
					continue
				}
				for m, c := range callEach(t, under, it, nil) {
					err := c.err
					if m == "ListBlocks" {
						if err != nil {
							t.Errorf("over a bare API, ListBlocks (a walk): %v", err)
						}
					} else if !errors.Is(err, meta.ErrNotSupported) {
						t.Errorf("over a bare API, %v.%s: %v, want ENOTSUP", it, m, err)
					}
				}
			}
		})
	}
}

// TestImplementationsOfferEveryOptionalInterface: the service and the RPC
// clients, which decorators wrap, have every capability.
func TestImplementationsOfferEveryOptionalInterface(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[*meta.Service](),
		reflect.TypeFor[*metarpc.Client](),
		reflect.TypeFor[*metarpc.Many](),
	} {
		for _, it := range meta.OptionalInterfaces() {
			if !typ.Implements(it) {
				t.Errorf("%v does not implement %v", typ, it)
			}
		}
	}
}

// typeName is a decorator's concrete type as decorators names it.
func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() + "." + t.Name()
}

// TestDecoratorsNameTheirTypes: what each registered wrap returns, bound
// or not, is one of the types it names.
func TestDecoratorsNameTheirTypes(t *testing.T) {
	for _, d := range decorators {
		top := d.wrap(&full{rec: &recorder{}})
		for _, v := range []meta.API{top, top.(meta.SessionBinder).WithSession(7)} {
			n := typeName(v)
			found := false
			for _, want := range d.types {
				found = found || n == want
			}
			if !found {
				t.Errorf("decorator %s returned a %s, not one of %v", d.name, n, d.types)
			}
		}
	}
}

// TestEveryInterfaceIsAPIOrOptional: every exported interface package meta
// declares that a caller may look for on an API (by its methods' shape:
// a context first) is a part of meta.API or listed by
// meta.OptionalInterfaces, so that the decorators pass it on (the test
// above, generated by wrapgen from that list): a new optional interface
// left off the list fails here, naming it.
func TestEveryInterfaceIsAPIOrOptional(t *testing.T) {
	known := map[string]bool{"API": true, "FS": true, "Cluster": true, "Sessions": true}
	for _, it := range meta.OptionalInterfaces() {
		known[it.Name()] = true
	}
	fset := token.NewFileSet()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(nd ast.Node) bool {
			ts, ok := nd.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			iface, ok := ts.Type.(*ast.InterfaceType)
			if !ok || !takesContext(iface) {
				return true
			}
			found++
			if !known[ts.Name.Name] {
				t.Errorf("%s: interface %s is neither a part of meta.API nor listed by meta.OptionalInterfaces (optional.go): decorators would hide it", fset.Position(ts.Pos()), ts.Name.Name)
			}
			return true
		})
	}
	if found == 0 {
		t.Fatal("no interface of package meta found")
	}
}

// takesContext reports whether some method of it takes a context.Context
// first.
func takesContext(it *ast.InterfaceType) bool {
	for _, m := range it.Methods.List {
		ft, ok := m.Type.(*ast.FuncType)
		if !ok || len(ft.Params.List) == 0 {
			continue
		}
		if sel, ok := ft.Params.List[0].Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Context" {
			return true
		}
	}
	return false
}
