package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"tessera/internal/client"
)

func parseMem(args ...string) (memFlags, error) {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	m := addMemFlags(fs)
	if err := parse(fs, args); err != nil {
		return m, err
	}
	return m, m.check()
}

// TestMemFlags: the defaults are the machine-sized ones, explicit values
// win, and bounds too small to work are refused naming the flag.
func TestMemFlags(t *testing.T) {
	m, err := parseMem()
	if err != nil || *m.cache != client.DefaultMemCacheBytes() || *m.dirty != client.DefaultDirtyBytes() {
		t.Fatalf("defaults: cache %d dirty %d, %v; want %d and %d", *m.cache, *m.dirty, err, client.DefaultMemCacheBytes(), client.DefaultDirtyBytes())
	}
	m, err = parseMem("--mem-cache", "33554432", "--dirty-bytes", "16777216")
	if err != nil || *m.cache != 32<<20 || *m.dirty != 16<<20 {
		t.Fatalf("explicit: cache %d dirty %d, %v", *m.cache, *m.dirty, err)
	}
	for _, args := range [][]string{{"--mem-cache", "5"}, {"--dirty-bytes", "1"}, {"--dirty-bytes", "-1"}} {
		_, err := parseMem(args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v; want a usage error naming %s", args, err, args[0])
		}
	}
}
