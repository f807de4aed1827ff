package main

import (
	"context"
	"errors"
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
	} {
		err := runFileset(context.Background(), c.args)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fileset %q: %v; want a usage error saying %q", c.args, err, c.want)
		}
	}
}
