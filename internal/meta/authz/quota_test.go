package authz_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// TestQuotaAuthorization: only an admin sets or removes a quota (and it
// is logged); any client reads one; a client confined to /proj reads the
// quotas of its own subtree (its root as RootIno) and no other, and may
// not list the cluster's.
func TestQuotaAuthorization(t *testing.T) {
	f := newFixture(t)
	tr := makeTree(f)
	q := meta.Quota{Dir: tr.sub, MaxBytes: 10 << 20}
	for _, id := range []auth.Identity{ro, rw, projRW} {
		if _, err := f.a.SetQuota(as(id), q); !errors.Is(err, auth.ErrDenied) || !errors.Is(err, syscall.EACCES) {
			t.Errorf("SetQuota as %s: %v; want ErrDenied", id.Name, err)
		}
	}
	if _, err := f.svc.Quota(as(admin), tr.sub); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("a refused SetQuota left a quota: %v", err)
	}
	if _, err := f.a.SetQuota(as(admin), q); err != nil {
		t.Fatalf("SetQuota as admin: %v", err)
	}
	if _, err := f.a.SetQuota(as(admin), meta.Quota{Dir: tr.proj, MaxInodes: 100}); err != nil {
		t.Fatalf("SetQuota of /proj as admin: %v", err)
	}
	if _, err := f.a.SetQuota(as(admin), meta.Quota{Dir: tr.secret, MaxInodes: 5}); err != nil {
		t.Fatalf("SetQuota of /secret as admin: %v", err)
	}
	if !strings.Contains(f.log.String(), "SetQuota") {
		t.Errorf("admin's SetQuota not logged:\n%s", f.log.String())
	}
	got, err := f.a.Quota(as(ro), tr.sub)
	if err != nil || got.Dir != tr.sub || got.MaxBytes != 10<<20 {
		t.Fatalf("Quota as ro: %+v %v", got, err)
	}
	if l, err := f.a.Quotas(as(rw)); err != nil || len(l) != 3 {
		t.Fatalf("Quotas as rw: %+v %v; want 3", l, err)
	}
	// Confined to /proj: its own subtree's, mapped; not /secret's, not the list.
	if got, err := f.a.Quota(as(projRW), tr.sub); err != nil || got.Dir != tr.sub {
		t.Errorf("Quota of /proj/sub as projRW: %+v %v", got, err)
	}
	if got, err := f.a.Quota(as(projRW), meta.RootIno); err != nil || got.Dir != meta.RootIno || got.MaxInodes != 100 {
		t.Errorf("Quota of its root as projRW: %+v %v; want /proj's, as RootIno", got, err)
	}
	if _, err := f.a.Quota(as(projRW), tr.secret); err == nil {
		t.Errorf("projRW read /secret's quota")
	}
	if _, err := f.a.Quotas(as(projRW)); !errors.Is(err, syscall.EACCES) {
		t.Errorf("Quotas as projRW: %v; want refused", err)
	}
	// QuotaOf (df): any reader, a confined one inside its tree only.
	if got, err := f.a.QuotaOf(as(ro), tr.b); err != nil || got.Dir != tr.sub {
		t.Errorf("QuotaOf /proj/sub/b as ro: %+v %v; want /proj/sub's", got, err)
	}
	if got, err := f.a.QuotaOf(as(projRW), tr.a); err != nil || got.Dir != meta.RootIno || got.MaxInodes != 100 {
		t.Errorf("QuotaOf /proj/a as projRW: %+v %v; want /proj's, as RootIno", got, err)
	}
	if _, err := f.a.QuotaOf(as(projRW), tr.s); err == nil {
		t.Errorf("projRW read the quota over /secret/s")
	}
	for _, id := range []auth.Identity{ro, rw, projRW} {
		if err := f.a.RemoveQuota(as(id), tr.sub); !errors.Is(err, auth.ErrDenied) {
			t.Errorf("RemoveQuota as %s: %v; want ErrDenied", id.Name, err)
		}
	}
	if err := f.a.RemoveQuota(as(admin), tr.sub); err != nil {
		t.Fatalf("RemoveQuota as admin: %v", err)
	}
	if _, err := f.a.Quota(as(ro), tr.sub); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("Quota after RemoveQuota: %v; want ErrNotFound", err)
	}
}

// TestQuotaAboveConfinedRoot: a confined caller's df (QuotaOf) inside a
// tree whose quota is on a directory above its root shows the quota's
// limits with its directory as 0, a number it could not use; an
// unconfined caller sees the directory. SetQuota's log names the quota's
// fields (through the generated view's logQuota).
func TestQuotaAboveConfinedRoot(t *testing.T) {
	f := newFixture(t)
	tr := makeTree(f)
	subRW := auth.Identity{Name: "sub-mount", Role: auth.RoleClientRW, Root: "/proj/sub", Via: "cert"}
	if _, err := f.a.SetQuota(as(admin), meta.Quota{Dir: tr.proj, MaxBytes: 1 << 30, MaxInodes: 7}); err != nil {
		t.Fatalf("SetQuota of /proj as admin: %v", err)
	}
	if log := f.log.String(); !strings.Contains(log, "max_inodes=7") || !strings.Contains(log, fmt.Sprintf("dir=%d", tr.proj)) {
		t.Errorf("SetQuota's log lacks the quota's fields:\n%s", log)
	}
	got, err := f.a.QuotaOf(as(subRW), tr.b)
	if err != nil || got.Dir != 0 || got.MaxInodes != 7 {
		t.Errorf("QuotaOf /proj/sub/b as %s under a quota on /proj: %+v %v; want its limits, directory 0", subRW.Name, got, err)
	}
	if got, err := f.a.QuotaOf(as(ro), tr.b); err != nil || got.Dir != tr.proj {
		t.Errorf("QuotaOf /proj/sub/b as ro: %+v %v; want /proj's", got, err)
	}
	// A quota on the cluster's root is above every confined root too: its
	// directory must not read as meta.RootIno, which to the caller is its
	// own root.
	if err := f.a.RemoveQuota(as(admin), tr.proj); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.SetQuota(as(admin), meta.Quota{Dir: meta.RootIno, MaxInodes: 9}); err != nil {
		t.Fatalf("SetQuota of / as admin: %v", err)
	}
	if got, err := f.a.QuotaOf(as(subRW), tr.b); err != nil || got.Dir != 0 || got.MaxInodes != 9 {
		t.Errorf("QuotaOf /proj/sub/b as %s under a quota on /: %+v %v; want its limits, directory 0", subRW.Name, got, err)
	}
	if strings.Contains(f.log.String(), "outside") {
		t.Errorf("mapping a reply logged a denial:\n%s", f.log.String())
	}
}
