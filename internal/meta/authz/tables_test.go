package authz_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"tessera/internal/meta"
	"tessera/internal/meta/authz"
)

// concerns are meta's interfaces by name, as authz's tables name them.
var concerns = map[string]reflect.Type{
	"FS":              reflect.TypeFor[meta.FS](),
	"Cluster":         reflect.TypeFor[meta.Cluster](),
	"Sessions":        reflect.TypeFor[meta.Sessions](),
	"QuotaAPI":        reflect.TypeFor[meta.QuotaAPI](),
	"WritebackAPI":    reflect.TypeFor[meta.WritebackAPI](),
	"FilesetAPI":      reflect.TypeFor[meta.FilesetAPI](),
	"FilesetReadsAPI": reflect.TypeFor[meta.FilesetReadsAPI](),
	"EvictAPI":        reflect.TypeFor[meta.EvictAPI](),
	"VanishAPI":       reflect.TypeFor[meta.VanishAPI](),
	"GatewaysAPI":     reflect.TypeFor[meta.GatewaysAPI](),
}

// TestRulesPerInterface: each of authz's tables names exactly the methods
// of the interfaces it covers, and every interface of the API by concern
// and every optional one that carries calls (not SessionBinder,
// BlockLister: ListBlocks is WalkBlocks') has its table.
func TestRulesPerInterface(t *testing.T) {
	covered := map[string]bool{}
	for key, names := range authz.Tables() {
		var want []string
		for _, n := range strings.Split(key, ",") {
			it, ok := concerns[n]
			if !ok {
				t.Errorf("table %s: meta has no interface %s here", key, n)
				continue
			}
			covered[n] = true
			for i := range it.NumMethod() {
				want = append(want, it.Method(i).Name)
			}
		}
		slices.Sort(want)
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("table %s names %v; its interfaces have %v", key, names, want)
		}
	}
	for n := range concerns {
		if !covered[n] {
			t.Errorf("meta.%s has no table in authz", n)
		}
	}
	for _, it := range meta.OptionalInterfaces() {
		n := it.Name()
		if _, ok := concerns[n]; !ok && n != "SessionBinder" && n != "BlockLister" {
			t.Errorf("optional interface meta.%s has no table in authz (add it to concerns and a table)", n)
		}
	}
}
