package main

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"tessera/internal/reclaim"
	"tessera/internal/up"
)

func metaRoleConfig(args ...string) (up.MetaRole, error) {
	fs := flag.NewFlagSet("meta", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addMetaRoleFlags(fs)
	if err := fs.Parse(args); err != nil {
		return up.MetaRole{}, err
	}
	return f.config()
}

func TestMetaRoleGCFlags(t *testing.T) {
	rc, err := metaRoleConfig()
	if err != nil || rc.GCInterval != up.DefaultGCInterval || rc.GCGrace != up.DefaultGCGrace {
		t.Fatalf("defaults: %+v %v", rc, err)
	}
	rc, err = metaRoleConfig("--gc-interval", "0")
	if err != nil || rc.GCInterval >= 0 {
		t.Fatalf("--gc-interval 0 should turn the collector off: %+v %v", rc, err)
	}
	rc, err = metaRoleConfig("--gc-interval", "5m", "--gc-grace", "10m")
	if err != nil || rc.GCInterval != 5*time.Minute || rc.GCGrace != 10*time.Minute {
		t.Fatalf("--gc-interval 5m --gc-grace 10m: %+v %v", rc, err)
	}
	for _, args := range [][]string{{"--gc-grace", "0"}, {"--gc-grace", "-1s"}, {"--gc-interval", "-1s"}} {
		if _, err := metaRoleConfig(args...); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestMetaRoleReclaimFlags(t *testing.T) {
	rc, err := metaRoleConfig()
	if err != nil || rc.ReclaimAfter != reclaim.DefaultAfter || reclaim.DefaultAfter > time.Minute {
		t.Fatalf("defaults: %+v %v; want the reclaimer on, with a window of at most a minute", rc, err)
	}
	rc, err = metaRoleConfig("--reclaim-after", "0")
	if err != nil || rc.ReclaimAfter >= 0 {
		t.Fatalf("--reclaim-after 0 should turn the reclaimer off: %+v %v", rc, err)
	}
	rc, err = metaRoleConfig("--reclaim-after", "5s")
	if err != nil || rc.ReclaimAfter != 5*time.Second {
		t.Fatalf("--reclaim-after 5s: %+v %v", rc, err)
	}
	if _, err := metaRoleConfig("--reclaim-after", "-1s"); !errors.Is(err, errUsage) {
		t.Errorf("--reclaim-after -1s: %v, want a usage error", err)
	}
}
