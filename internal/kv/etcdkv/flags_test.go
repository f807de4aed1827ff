package etcdkv_test

import (
	"os"
	"strings"
	"testing"

	"tessera/internal/kv/etcdkv"
)

// TestScriptFlags: scripts/etcd.sh starts etcd with every flag of
// ServerFlags, so that the limits Update checks are the server's.
func TestScriptFlags(t *testing.T) {
	b, err := os.ReadFile("../../../scripts/etcd.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range etcdkv.ServerFlags {
		if !strings.Contains(string(b), f+" ") && !strings.Contains(string(b), f+"\n") {
			t.Errorf("scripts/etcd.sh does not pass %s", f)
		}
	}
}
