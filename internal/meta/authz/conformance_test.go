package authz_test

import (
	"testing"
	"time"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/authz"
	"tessera/internal/meta/metatest"
)

// authorized is the metatest factory of a Service behind the decorator,
// called by an admin: authorization must change nothing it allows.
func authorized(t *testing.T, opts meta.Options) meta.API {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return withID{api: authz.Wrap(s, authz.Options{Now: opts.Now}), id: admin}
}

func TestConformanceThroughAuthorization(t *testing.T) {
	metatest.Run(t, authorized)
}

func TestModelThroughAuthorization(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (replay: set it here)", seed)
	metatest.RunModel(t, authorized, seed, 1000)
}
