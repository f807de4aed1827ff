package main

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"

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
