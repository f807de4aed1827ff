package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"tessera/test/lincheck"
)

// TestRefusedHistoryIsKept: a history porcupine refuses (a read of the
// initial value after a write of another one returned) fails the check and
// is written, with porcupine's picture of it, into the run's directory,
// and the violations say where it first goes wrong.
func TestRefusedHistoryIsKept(t *testing.T) {
	r := &run{cfg: Config{Dir: t.TempDir()}, rec: newRecorder(time.Second), lin: &linHistory{}}
	r.lin.add(porcupine.Operation{ClientId: 0, Input: lincheck.Input{File: 0, Write: true, Value: 7}, Output: uint64(0), Call: 0, Return: 10})
	r.lin.add(porcupine.Operation{ClientId: 1, Input: lincheck.Input{File: 0}, Output: uint64(linInitial), Call: 20, Return: 30})
	sum, ok := r.checkLinear(time.Minute)
	if ok || !strings.HasPrefix(sum, "FAIL") {
		t.Fatalf("checkLinear = %q, %v; want a failure", sum, ok)
	}
	for _, name := range []string{"history.jsonl", "history.html"} {
		b, err := os.ReadFile(filepath.Join(r.cfg.Dir, "linearizability", name))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	if !strings.Contains(strings.Join(r.rec.violations["linearizable"], "\n"), "linearizability") {
		t.Fatalf("the violations do not say where the history is: %q", r.rec.violations["linearizable"])
	}
	if !strings.Contains(strings.Join(r.rec.violations["linearizable"], "\n"), "f0 first goes wrong at 30ns") {
		t.Fatalf("the violations do not say where the history first goes wrong: %q", r.rec.violations["linearizable"])
	}
}
