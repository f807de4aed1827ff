package authz_test

import (
	"context"
	"syscall"
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

// confinedStatFS leaves the subtree's own directory out of StatFS, which
// counts the whole file system, so the model's usage matches.
type confinedStatFS struct{ withID }

func (c confinedStatFS) StatFS(ctx context.Context) (meta.StatFS, error) {
	st, err := c.withID.StatFS(ctx)
	st.Files--
	return st, err
}

// TestModelConfined runs the model test as a client rooted at /proj, a
// directory made with the attributes the model expects of a root: every
// inode number the model sees, RootIno included, goes through the mapping
// and the subtree check, and the results must match the model's.
func TestModelConfined(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (replay: set it here)", seed)
	metatest.RunModel(t, func(t *testing.T, opts meta.Options) meta.API {
		store := memkv.New()
		t.Cleanup(func() { store.Close() })
		s, err := meta.New(store, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Create(context.Background(), meta.CreateReq{Parent: meta.RootIno, Name: "proj",
			Mode: syscall.S_IFDIR | opts.RootMode, Uid: opts.RootUid, Gid: opts.RootGid})
		if err != nil {
			t.Fatal(err)
		}
		return confinedStatFS{withID{api: authz.Wrap(s, authz.Options{Now: opts.Now}), id: projRW}}
	}, seed, 1000)
}
