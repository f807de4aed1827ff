package main

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"
)

func TestMetaTimeoutFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		bad  bool
	}{
		{nil, 60 * time.Second, false},
		{[]string{"--meta-timeout", "2s"}, 2 * time.Second, false},
		{[]string{"--meta-timeout", "0"}, -1, false},
		{[]string{"--meta-timeout", "-1s"}, 0, true},
	} {
		fs := flag.NewFlagSet("mount", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		m := addMetaTimeoutFlag(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := m.value()
		if tc.bad {
			if !errors.Is(err, errUsage) {
				t.Errorf("%v: %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
}
