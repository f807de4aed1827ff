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

// TestUpMemFlags: tessera up's mount defaults to 16 MiB of cache and 32
// MiB of dirty data whatever the machine (its block servers' files are on
// this host), and explicit values still win.
func TestUpMemFlags(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		cache, dirty int64
	}{
		{nil, 16 << 20, 32 << 20},
		{[]string{"--mem-cache", "67108864", "--dirty-bytes", "16777216"}, 64 << 20, 16 << 20},
	} {
		fs := flag.NewFlagSet("up", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		m := addUpMemFlags(fs)
		if err := parse(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		if err := m.check(); err != nil || *m.cache != tc.cache || *m.dirty != tc.dirty {
			t.Errorf("%v: cache %d dirty %d, %v; want %d and %d", tc.args, *m.cache, *m.dirty, err, tc.cache, tc.dirty)
		}
	}
}
