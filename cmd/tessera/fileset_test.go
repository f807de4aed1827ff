package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestFilesetUsageErrors: bad command lines are refused before any
// cluster is reached, with errUsage and a message naming what was wrong.
func TestFilesetUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "want create"},
		{[]string{"frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"create", dir + "/x"}, "--home URL is required"},
		{[]string{"create", dir + "/x", "--home", "ftp://h/x"}, `scheme "ftp"`},
		{[]string{"create", dir + "/x", "--home", "file:///h", "--prefetch", "all"}, `prefetch "all"`},
		{[]string{"create", dir + "/x", "--home", "file:///h", "--conflicts", "mine"}, `conflicts "mine"`},
		{[]string{"status"}, "takes 1 PATH"},
		{[]string{"list", "extra"}, "takes 0 PATH"},
		{[]string{"prefetch"}, "PATH... or --list FILE"},
		{[]string{"prefetch", dir, "--gateways", "0"}, "--gateways 0"},
	} {
		err := runFileset(context.Background(), c.args)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fileset %q: %v; want a usage error saying %q", c.args, err, c.want)
		}
	}
}

// TestReadPathList: a --list file names one path a line; blank lines and
// comments are skipped, and a list naming nothing is refused.
func TestReadPathList(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/list"
	if err := os.WriteFile(p, []byte("# files\n/mnt/a\n\n  /mnt/b c  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readPathList(p)
	if err != nil || strings.Join(got, "|") != "/mnt/a|/mnt/b c" {
		t.Errorf("readPathList: %q, %v", got, err)
	}
	if err := os.WriteFile(p, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readPathList(p); err == nil || !strings.Contains(err.Error(), "names no path") {
		t.Errorf("an empty list: %v, want refused", err)
	}
	if _, err := readPathList(dir + "/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing list: %v", err)
	}
}
