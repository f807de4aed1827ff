package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{
		"0": 0, "512": 512, "64K": 64 << 10, "10M": 10 << 20, "10m": 10 << 20, "1G": 1 << 30,
		"2T": 2 << 40, "10MiB": 10 << 20, "10MB": 10 << 20, "5B": 5, "15E": 15 << 60,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "B", "-1", "1.5G", "10X", "16E", "99999999999999999999", "1 G"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d; want an error", in, got)
		}
	}
}

func TestParseQuota(t *testing.T) {
	q, err := parseQuota([]string{"set", "/mnt/t/q", "--bytes", "10M", "--inodes", "1000"})
	if err != nil || q.op != "set" || q.path != "/mnt/t/q" || q.bytes != (sizeFlag{10 << 20, true}) || q.inodes != (sizeFlag{1000, true}) {
		t.Fatalf("set: %+v %v", q, err)
	}
	q, err = parseQuota([]string{"set", "--inodes=5", "/proj", "--meta", "127.0.0.1:7400"})
	if err != nil || q.path != "/proj" || q.bytes.set || q.inodes.n != 5 || *q.cf.meta.meta != "127.0.0.1:7400" {
		t.Fatalf("set with flags first: %+v %v", q, err)
	}
	if q, err = parseQuota([]string{"list"}); err != nil || q.path != "" {
		t.Fatalf("list: %+v %v", q, err)
	}
	for _, args := range [][]string{
		nil,
		{"frobnicate", "/x"},
		{"set", "/x"},                   // no limit given
		{"set", "/x", "--bytes", "ten"}, // bad size
		{"get"},                         // no PATH
		{"remove", "/a", "/b"},          // two
		{"list", "/a"},                  // list takes none
		{"get", "/x", "--bytes", "1M"},  // set's flag
	} {
		if _, err := parseQuota(args); err == nil {
			t.Errorf("parseQuota(%q): no error", args)
		}
	}
	if _, err := parseQuota([]string{"set", "/x"}); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--bytes") {
		t.Errorf("set without limits: %v; want a usage error naming --bytes", err)
	}
}

// TestQuotaRun: set keeps the limit it was not given, get and list show
// it, remove drops it, on a real service.
func TestQuotaRun(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	svc, err := meta.New(store, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "q", Mode: 0o40755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		q, err := parseQuota(args)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := q.run(ctx, &out, svc, d.Ino); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return out.String()
	}
	run("set", "/q", "--inodes", "100")
	run("set", "/q", "--bytes", "1G")
	got, err := svc.Quota(ctx, d.Ino)
	if err != nil || got.MaxBytes != 1<<30 || got.MaxInodes != 100 {
		t.Fatalf("after two sets: %+v %v; want 1 GiB and 100 inodes", got, err)
	}
	if out := run("get", "/q"); !strings.Contains(out, "of 1.0 GiB") || !strings.Contains(out, "0 of 100") {
		t.Errorf("get:\n%s", out)
	}
	if out := run("list"); !strings.Contains(out, "1073741824") {
		t.Errorf("list:\n%s", out)
	}
	run("remove", "/q")
	if _, err := svc.Quota(ctx, d.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("after remove: %v", err)
	}
	q, _ := parseQuota([]string{"get", "/q"})
	if err := q.run(ctx, &bytes.Buffer{}, svc, d.Ino); err == nil || !strings.Contains(err.Error(), "no quota") {
		t.Errorf("get without a quota: %v", err)
	}
}
