package authz_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"syscall"
	"testing"

	"tessera/internal/auth"
	"tessera/internal/meta"
	"tessera/internal/meta/authz"
)

// apiMethods lists meta.API's methods by reflection, so a method added to
// it is covered by every test below without anyone remembering.
func apiMethods() []reflect.Method {
	var ms []reflect.Method
	for _, typ := range []reflect.Type{reflect.TypeFor[meta.API](), reflect.TypeFor[meta.FilesetAPI](), reflect.TypeFor[meta.WritebackAPI](), reflect.TypeFor[meta.GatewaysAPI](), reflect.TypeFor[meta.EvictAPI](), reflect.TypeFor[meta.VanishAPI](), reflect.TypeFor[meta.FilesetReadsAPI](), reflect.TypeFor[meta.QuotaAPI]()} {
		for i := range typ.NumMethod() {
			ms = append(ms, typ.Method(i))
		}
	}
	return ms
}

// call calls method m of api with ctx and zero values for every other
// argument, and returns the error it returned.
func call(api meta.API, m reflect.Method, ctx context.Context) error {
	fn := reflect.ValueOf(api).MethodByName(m.Name)
	args := []reflect.Value{reflect.ValueOf(ctx)}
	for i := 1; i < fn.Type().NumIn(); i++ {
		args = append(args, reflect.Zero(fn.Type().In(i)))
	}
	out := fn.Call(args)
	err, _ := out[len(out)-1].Interface().(error)
	return err
}

func TestEveryMethodHasARule(t *testing.T) {
	var names []string
	for _, m := range apiMethods() {
		names = append(names, m.Name)
		if _, ok := authz.RuleOf(m.Name); !ok {
			t.Errorf("meta.API.%s has no entry in authz's table", m.Name)
		}
	}
	for _, name := range authz.RuleNames() {
		if !slices.Contains(names, name) {
			t.Errorf("authz's table names %s, which meta.API does not have", name)
		}
	}
}

// TestNoIdentityIsRefusedEverything: a context without an identity (a
// transport that did not authenticate) is refused every method, bound to a
// session or not.
func TestNoIdentityIsRefusedEverything(t *testing.T) {
	f := newFixture(t)
	info, err := f.a.OpenSession(as(rw))
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range []meta.API{f.a, f.a.WithSession(info.ID)} {
		for _, m := range apiMethods() {
			err := call(api, m, context.Background())
			if !errors.Is(err, auth.ErrUnauthenticated) || !errors.Is(err, syscall.EACCES) {
				t.Errorf("%s without an identity: %v; want ErrUnauthenticated", m.Name, err)
			}
		}
	}
}

// TestRolesGetExactlyTheirMethods calls every method as every role: those
// the role's permissions cover get past authorization (they may fail on
// their zero arguments), the others are refused.
func TestRolesGetExactlyTheirMethods(t *testing.T) {
	for _, role := range auth.Roles {
		id := auth.Identity{Name: "someone", Role: role, Via: "cert"}
		f := newFixture(t)
		for _, m := range apiMethods() {
			perm, _ := authz.RuleOf(m.Name)
			err := call(f.a, m, as(id))
			switch {
			case !role.Can(perm):
				denied(t, string(role)+" "+m.Name, err)
			case (m.Name == "RegisterServer" || m.Name == "RegisterGateway") && role != auth.RoleAdmin:
				// Bound to the identity's name: "" is not "someone".
				denied(t, string(role)+" "+m.Name+" of another server", err)
			default:
				allowed(t, string(role)+" "+m.Name, err)
			}
		}
	}
}
