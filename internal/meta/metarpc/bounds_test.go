package metarpc_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// TestOversizedNamesRefusedOnPrefix: a lookup or a create of a 15 MiB name
// is refused on its length prefix (its method takes a few KiB), before the
// server reads it, with a short error; a name over 255 bytes but within
// the method's maximum reaches the API, whose ENAMETOOLONG quotes only the
// name's start. The issue saw each such lookup fully read and its name
// echoed whole (%q: up to four bytes per byte) into the reply.
func TestOversizedNamesRefusedOnPrefix(t *testing.T) {
	ctx := context.Background()
	addr, logs := serveOpts(t, newService(t), metarpc.ServeOptions{})
	c := dial(t, addr)
	huge := strings.Repeat("\x01", 15<<20)
	for _, tc := range []struct {
		what string
		call func(name string) error
	}{
		{"lookup", func(name string) error { _, err := c.Lookup(ctx, meta.RootIno, name); return err }},
		{"create", func(name string) error {
			_, err := c.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0o644})
			return err
		}},
	} {
		err := tc.call(huge)
		if err == nil || meta.Unavailable(err) {
			t.Fatalf("%s of a 15 MiB name: %v, want a refusal", tc.what, err)
		}
		if len(err.Error()) > 512 {
			t.Errorf("%s of a 15 MiB name: an error of %d bytes", tc.what, len(err.Error()))
		}
		if !strings.Contains(err.Error(), "larger than max") {
			t.Errorf("%s of a 15 MiB name: %.300v, want the transport's refusal of its size", tc.what, err)
		}
		err = tc.call(strings.Repeat("\x01", 3000))
		if !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Errorf("%s of a 3000-byte name: %.300v, want ENAMETOOLONG", tc.what, err)
		}
		if err != nil && (len(err.Error()) > metarpc.MaxWireError || !strings.Contains(err.Error(), "(3000 bytes)")) {
			t.Errorf("%s of a 3000-byte name: error of %d bytes, want the name's start and its length: %.400s", tc.what, len(err.Error()), err)
		}
	}
	if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatalf("after the refusals: %v", err)
	}
	if !strings.Contains(logs.String(), "refused a call") || !strings.Contains(logs.String(), "/tessera.meta.v1.FSService/Lookup") {
		t.Errorf("refusal not logged:\n%s", logs)
	}
}
