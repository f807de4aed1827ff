package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scratch writes a package of src in a scratch directory inside the
// module (so moduleRoot finds go.mod), removed when the test ends.
func scratch(t *testing.T, src string) string {
	t.Helper()
	root, _, err := moduleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "internal", "meta", "wrapgen", "testdata", "rpcscratch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Join(root, "internal", "meta", "wrapgen", "testdata")) })
	if err := os.WriteFile(filepath.Join(dir, "c.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const rpcScratch = `package rpcscratch

import (
	"tessera/internal/block"
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

type client struct{}
type srv struct{}

func inodeIn(p *pb.Inode) (meta.Inode, error) { return meta.Inode{}, nil }
func inodeOut(in meta.Inode) *pb.Inode { return nil }
func intIn(field string, v int64) (int, error) { return int(v), nil }
func hashIn(field string, b []byte) (block.Hash, error) { return block.Hash{}, nil }
func serverIn(p *pb.Server) meta.Server { return meta.Server{} }
func serverMapOut(m meta.ServerMap) *pb.ServerMap { return nil }
func progressOut(m meta.MoverProgress) *pb.MoverReport { return nil }
func quotaOut(q meta.Quota) *pb.Quota { return nil }
func quotaIn(p *pb.Quota) (meta.Quota, error) { return meta.Quota{}, nil }
`

// gen1 runs one generation in dir.
func gen1(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cfg, err := parseArgs(append(args, "-pb", "../../../metarpc/metapb"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := generate(dir, cfg)
	return strings.Join(strings.Fields(strings.ReplaceAll(string(out), "//", "")), " "), err
}

// TestRPCMethodsByConvention: the client's method of a meta method is one
// call of the RPC of its name, its parameters going into the request's
// fields of their names (converted between numbers), its reply through
// the package's conversion; the server's handler the other way round.
func TestRPCMethodsByConvention(t *testing.T) {
	dir := scratch(t, rpcScratch)
	s, err := gen1(t, dir, "-type", "*client", "-recv", "c", "-ifaces", "FS", "-style", "client", "-o", "zz_c_gen.go")
	if err == nil || !strings.Contains(err.Error(), "FS.SetAttr") {
		// SetAttr has two parameters and no field named req: without the
		// package's setAttrOut it cannot be generated, and the error says so.
		t.Fatalf("FS without setAttrOut: got %v, want an error naming FS.SetAttr", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hand.go"), []byte(`package rpcscratch

import (
	"context"

	"tessera/internal/meta"
)

func (c *client) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) { return meta.Inode{}, nil }
func (c *client) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) { return meta.Inode{}, nil }
func (c *client) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) { return nil, false, nil }
func (c *client) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) { return meta.Recipe{}, nil }
func (c *client) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) { return meta.Inode{}, nil }
func (c *client) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) { return nil, nil }
func (c *client) StatFS(ctx context.Context) (meta.StatFS, error) { return meta.StatFS{}, nil }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = gen1(t, dir, "-type", "*client", "-recv", "c", "-ifaces", "FS", "-style", "client", "-o", "zz_c_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`func (c *client) Lookup(ctx context.Context, parent meta.Ino, name string) (r0 meta.Inode, err error) {`,
		`rep, err = c.mc.Lookup(ctx, &pb.LookupRequest{Parent: uint64(parent), Name: name}, opts...)`,
		`if r0, err = inodeIn(rep); err != nil { return r0, c.ioErr("Lookup", err) }`,
		`_, err := c.mc.Rmdir(ctx, &pb.NameRequest{Parent: uint64(parent), Name: name}, opts...)`,
		`r0 = rep.Names`, // ListXattr: the reply's one field, no conversion
		`Written by hand, so left out here: SetAttr, Create, ReadDir, GetRecipe, Commit, GetXattr, StatFS.`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("client lacks %q:\n%s", want, s)
		}
	}
	s, err = gen1(t, dir, "-type", "*srv", "-recv", "s", "-ifaces", "FS", "-style", "server", "-o", "zz_s_gen.go")
	if err == nil || !strings.Contains(err.Error(), "FS.SetAttr") {
		t.Fatalf("server of FS without setAttrIn: got %v, want an error naming FS.SetAttr", err)
	}
	_, err = gen1(t, dir, "-type", "*srv", "-recv", "s", "-ifaces", "Cluster", "-style", "server", "-o", "zz_s_gen.go")
	if err == nil || !strings.Contains(err.Error(), "ListBlocks") {
		t.Fatalf("server without a ListBlocks handler: got %v, want an error naming the rpc no meta method serves", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "handsrv.go"), []byte(`package rpcscratch

import (
	"context"

	pb "tessera/internal/meta/metarpc/metapb"
)

func (s *srv) ListBlocks(ctx context.Context, r *pb.ListBlocksRequest) (*pb.ListBlocksReply, error) { return nil, nil }
func (s *srv) Hello(ctx context.Context, r *pb.HelloRequest) (*pb.HelloReply, error) { return nil, nil }
func (s *srv) ClusterStatus(ctx context.Context, r *pb.Empty) (*pb.ClusterStatusReply, error) { return nil, nil }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = gen1(t, dir, "-type", "*srv", "-recv", "s", "-ifaces", "Cluster", "-style", "server", "-o", "zz_s_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`_ pb.ClusterServiceServer = (*srv)(nil)`,
		`func (s *srv) SetReplicas(ctx context.Context, r *pb.SetReplicasRequest) (*pb.ServerMap, error) {`,
		`replicas, err := intIn("set_replicas.replicas", r.Replicas)`,
		`r0, err := s.on(ctx).SetReplicas(ctx, replicas)`,
		`return serverMapOut(r0), nil`,
		`sArg2 := serverIn(r) r0, err := s.on(ctx).RegisterServer(ctx, sArg2)`, // s is the receiver's
		`hash, err := hashIn("decompose.hash", r.Hash)`,
		`if err := s.on(ctx).Decompose(ctx, hash); err != nil { return nil, statusOf(err) } return &pb.Empty{}, nil`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("server lacks %q:\n%s", want, s)
		}
	}
}

// TestRPCMissingIsAnError: a meta method without an RPC of its name is
// refused unless written by hand (Cluster.WalkBlocks has none).
func TestRPCMissingIsAnError(t *testing.T) {
	dir := scratch(t, rpcScratch)
	if err := os.WriteFile(filepath.Join(dir, "hand.go"), []byte(`package rpcscratch

import (
	"context"

	"tessera/internal/block"
	"tessera/internal/meta"
)

func (c *client) Servers(ctx context.Context) (meta.ServerMap, error) { return meta.ServerMap{}, nil }
func (c *client) RegisterServer(ctx context.Context, s meta.Server) (meta.ServerMap, error) { return meta.ServerMap{}, nil }
func (c *client) SetServerState(ctx context.Context, id string, state meta.ServerState) (meta.ServerMap, error) { return meta.ServerMap{}, nil }
func (c *client) SetReplicas(ctx context.Context, replicas int) (meta.ServerMap, error) { return meta.ServerMap{}, nil }
func (c *client) MoverProgress(ctx context.Context) (meta.MoverProgress, error) { return meta.MoverProgress{}, nil }
func (c *client) Decompose(ctx context.Context, hash block.Hash) error { return nil }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := gen1(t, dir, "-type", "*client", "-recv", "c", "-ifaces", "Cluster", "-style", "client", "-o", "zz_c_gen.go")
	if err == nil || !strings.Contains(err.Error(), "Cluster.WalkBlocks: the protocol has no rpc WalkBlocks") {
		t.Fatalf("got %v, want an error saying the protocol has no rpc WalkBlocks", err)
	}
}

// TestRPCOptionalByDirective: an optional interface's methods are
// generated like the API's; a //tessera:rpc directive names an RPC other
// than the method's (QuotaAPI.Quota travels as GetQuota), and a handler
// answers ENOTSUP (the package's unsupported) when the API served lacks
// the interface.
func TestRPCOptionalByDirective(t *testing.T) {
	dir := scratch(t, rpcScratch)
	if err := os.WriteFile(filepath.Join(dir, "quota.go"), []byte(`package rpcscratch

import (
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

func quotaListIn(p *pb.QuotaList) ([]meta.Quota, error) { return nil, nil }
func quotaListOut(l []meta.Quota) *pb.QuotaList { return nil }
func quotaCheckIn(p *pb.QuotaCheck) (meta.QuotaCheck, error) { return meta.QuotaCheck{}, nil }
func quotaCheckOut(c meta.QuotaCheck) *pb.QuotaCheck { return nil }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := gen1(t, dir, "-type", "*client", "-recv", "c", "-ifaces", "QuotaAPI", "-style", "client", "-o", "zz_c_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Quota implements meta.QuotaAPI over rpc QuotaService.GetQuota.`,
		`err = c.call(ctx, "GetQuota", func(ctx context.Context, opts ...grpc.CallOption) (err error) { rep, err = c.mc.GetQuota(ctx, &pb.InoRequest{Ino: uint64(dir)}, opts...)`,
		`_ meta.QuotaAPI = (*client)(nil)`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("client lacks %q:\n%s", want, s)
		}
	}
	s, err = gen1(t, dir, "-type", "*srv", "-recv", "s", "-ifaces", "QuotaAPI", "-style", "server", "-o", "zz_s_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`_ pb.QuotaServiceServer = (*srv)(nil)`,
		`func (s *srv) GetQuota(ctx context.Context, r *pb.InoRequest) (*pb.Quota, error) { api, ok := s.on(ctx).(meta.QuotaAPI) if !ok { return nil, statusOf(unsupported("QuotaAPI", "Quota")) }`,
		`r0, err := api.Quota(ctx, meta.Ino(r.Ino))`,
		`return quotaCheckOut(r0), nil`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("server lacks %q:\n%s", want, s)
		}
	}
}
