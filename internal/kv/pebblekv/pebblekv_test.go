package pebblekv_test

import (
	"strings"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/kvtest"
	"tessera/internal/kv/pebblekv"
)

func opener(opts pebblekv.Options) kvtest.Opener {
	return func(t *testing.T, dir string) kv.Store {
		s, err := pebblekv.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	kvtest.RunDurable(t, opener(pebblekv.Options{}))
}

func TestConformancePipelined(t *testing.T) {
	kvtest.RunDurable(t, opener(pebblekv.Options{PipelinedSync: true}))
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = pebblekv.Open(dir, pebblekv.Options{})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v; want an error naming %s", err, dir)
	}
}
