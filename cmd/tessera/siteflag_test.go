package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func TestSiteFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		bad  string // part of the error
	}{
		{nil, "", ""},
		{[]string{"--site", "eu-west.1"}, "eu-west.1", ""},
		{[]string{"--site", "a b"}, "", `character ' '`},
		{[]string{"--site", "a:1"}, "", `character ':'`},
		{[]string{"--site", strings.Repeat("x", 65)}, "", "1 to 64 characters"},
	} {
		fs := flag.NewFlagSet("mount", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := addSiteFlag(fs, "site")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := f.value()
		if tc.bad != "" {
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "--site") {
				t.Errorf("%v: %v, want a usage error naming --site and %s", tc.args, err, tc.bad)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
}
