package main

import (
	"flag"
	"io"
	"testing"

	"tessera/internal/nfs"
)

// TestNFSSquashDefault: tessera up --nfs on a loopback address trusts
// root (the all-in-one setup is one user's, and its export root is
// root's 0755 directory); anywhere else, and always for tessera nfs, root
// is squashed unless --squash says otherwise.
func TestNFSSquashDefault(t *testing.T) {
	for _, tc := range []struct {
		cmd    string // up or nfs
		listen string
		args   []string
		want   nfs.Squash
	}{
		{"up", "127.0.0.1:0", nil, nfs.SquashNone},
		{"up", "[::1]:2049", nil, nfs.SquashNone},
		{"up", "localhost:2049", nil, nfs.SquashNone},
		{"up", "127.0.0.1:0", []string{"--squash", "root"}, nfs.SquashRoot},
		{"up", "0.0.0.0:2049", nil, nfs.SquashRoot},
		{"up", "10.1.2.3:2049", nil, nfs.SquashRoot},
		{"up", ":2049", nil, nfs.SquashRoot},
		{"nfs", "127.0.0.1:0", nil, nfs.SquashRoot},
		{"nfs", "0.0.0.0:2049", []string{"--squash", "all"}, nfs.SquashAll},
	} {
		fs := flag.NewFlagSet(tc.cmd, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var nf nfsFlags
		if tc.cmd == "up" {
			nf = addNFSFlags(fs, "", upSquashHelp)
		} else {
			nf = addNFSFlags(fs, "root", "")
		}
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		c, err := nf.config(tc.listen)
		if err != nil {
			t.Fatalf("%s %s %v: %v", tc.cmd, tc.listen, tc.args, err)
		}
		if c.Squash != tc.want {
			t.Errorf("tessera %s on %s %v: squash %q, want %q", tc.cmd, tc.listen, tc.args, c.Squash, tc.want)
		}
	}
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	nf := addNFSFlags(fs, "", upSquashHelp)
	if err := fs.Parse([]string{"--squash", "some"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nf.config("127.0.0.1:0"); err == nil {
		t.Fatal("--squash some accepted")
	}
}
