package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"tessera/test/cluster"
)

// event is one JSON line of a --json admin command: a progress report or
// the final result (fields of both; unused ones stay zero).
type event struct {
	Event      string   `json:"event"`
	Op         string   `json:"op"`
	Phase      string   `json:"phase"`
	Done       int64    `json:"done"`
	Total      int64    `json:"total"`
	Bytes      int64    `json:"bytes"`
	TotalBytes int64    `json:"total_bytes"`
	Rate       *float64 `json:"rate"`
	OK         bool     `json:"ok"`
	Error      string   `json:"error"`
	Blocks     int64    `json:"blocks"`
	Problems   *int64   `json:"problems"`
	Scanned    int64    `json:"scanned"`
}

// jsonEvents parses a --json command's stdout: every line must be a JSON
// object, the last the result.
func jsonEvents(t *testing.T, what string, res cluster.Result) (progress []event, result event) {
	t.Helper()
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, res.ExitCode, res.Stdout, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	for i, l := range lines {
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%s: stdout line %d is not a JSON object (%v): %q", what, i+1, err, l)
		}
		switch {
		case i == len(lines)-1:
			if e.Event != "result" {
				t.Fatalf("%s: the last line is %q, want the result", what, l)
			}
			result = e
		case e.Event == "progress":
			if e.Rate == nil {
				t.Fatalf("%s: progress without a rate: %q", what, l)
			}
			progress = append(progress, e)
		default:
			t.Fatalf("%s: line %d is %q, want a progress report", what, i+1, l)
		}
	}
	return progress, result
}

// lastOf is the last progress report of phase (failing if there is none).
func lastOf(t *testing.T, what string, evs []event, phase string) event {
	t.Helper()
	var out *event
	for i := range evs {
		if evs[i].Phase == phase {
			out = &evs[i]
		}
	}
	if out == nil {
		t.Fatalf("%s: no progress report of phase %q in %+v", what, phase, evs)
	}
	return *out
}

// TestClusterProgress (issue 12 item 7): fsck, gc and server drain --wait
// against a real cluster (3 block servers, R=2, a 16-block file) report
// progress as plain lines on stderr when it is not a terminal, and with
// --json as JSON objects on stdout ending with the result.
func TestClusterProgress(t *testing.T) {
	m, _, _ := scrubCluster(t, 3)

	// The file's 16 blocks hold 8 distinct ones (dedup); gc also counts
	// copies the mover left behind, so the counts come from the results.
	evs, r := jsonEvents(t, "fsck --json", runTessera(t, m, "fsck", "--json"))
	if !r.OK || r.Op != "fsck" || r.Blocks == 0 || r.Problems == nil || *r.Problems != 0 {
		t.Errorf("fsck --json result %+v, want ok with the file's blocks checked and 0 problems", r)
	}
	if c := lastOf(t, "fsck --json", evs, "check"); c.Done != r.Blocks || c.Total != r.Blocks || c.Bytes == 0 || c.Bytes != c.TotalBytes {
		t.Errorf("fsck --json: last check report %+v, want all of the %d blocks and their bytes", c, r.Blocks)
	}
	res := runTessera(t, m, "fsck")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "fsck: clean") {
		t.Fatalf("fsck: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	n := r.Blocks
	for _, want := range []string{"fsck walk: ", fmt.Sprintf("fsck check: 0/%d blocks (0%%)", n),
		fmt.Sprintf("fsck check: %d/%d blocks (100%%), ", n, n)} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("fsck's stderr lacks %q:\n%s", want, res.Stderr)
		}
	}

	evs, r = jsonEvents(t, "gc --json", runTessera(t, m, "gc", "--json", "--grace", "1h"))
	if !r.OK || r.Op != "gc" || r.Scanned == 0 {
		t.Errorf("gc --json result %+v, want ok with every copy scanned", r)
	}
	if s := lastOf(t, "gc --json", evs, "scan"); s.Done != r.Scanned || s.Total != r.Scanned {
		t.Errorf("gc --json: last scan report %+v, want %d/%d copies", s, r.Scanned, r.Scanned)
	}
	res = runTessera(t, m, "gc", "--grace", "1h")
	var live, scanned int64
	if _, err := fmt.Sscanf(res.Stdout, "gc: %d live blocks, %d scanned", &live, &scanned); err != nil || res.ExitCode != 0 ||
		!strings.Contains(res.Stderr, fmt.Sprintf("gc scan: %d/%d blocks (100%%)", scanned, scanned)) {
		t.Errorf("gc: exit %d (%v)\nstdout:\n%s\nstderr:\n%s", res.ExitCode, err, res.Stdout, res.Stderr)
	}

	// Drain b0 and wait, with plain lines; then b1 with --json after b0
	// is back.
	waitFor(t, m, time.Minute, "settled", repaired(3))
	res = runTessera(t, m, "server", "drain", "b0", "--wait")
	var held, heldBytes, epoch int64 // the live blocks b0 held when the drain began
	if _, err := fmt.Sscanf(res.Stdout, "tessera server: drain b0 done: it holds no live block (%d blocks, %d bytes moved away); epoch %d",
		&held, &heldBytes, &epoch); err != nil || res.ExitCode != 0 {
		t.Fatalf("server drain b0 --wait: exit %d (%v)\nstdout:\n%s\nstderr:\n%s", res.ExitCode, err, res.Stdout, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	first, last := lines[0], lines[len(lines)-1]
	switch {
	case held == 0: // each block is on 2 of 3 servers: b0 holds none about once in 6,500 runs
		if first != "drain move: 0 blocks" {
			t.Errorf("drain's progress lines:\n%s\nwant \"drain move: 0 blocks\" (b0 held none)", res.Stderr)
		}
	case !strings.HasPrefix(first, fmt.Sprintf("drain move: 0/%d blocks (0%%)", held)) ||
		!strings.HasPrefix(last, fmt.Sprintf("drain move: %d/%d blocks (100%%)", held, held)):
		t.Errorf("drain's progress lines:\n%s\nwant from 0/%d to %d/%d (100%%)", res.Stderr, held, held, held)
	}
	if st, err := m.Status(t.Context()); err != nil || st.UnderReplicated != 0 || st.Server["b0"].State != "draining" {
		t.Errorf("status after drain --wait returned: %d under-replicated, b0 %q (%v); want 0, draining",
			st.UnderReplicated, st.Server["b0"].State, err)
	}
	must(t, m.ServerCmd(t.Context(), "undrain", "b0"))
	evs, r = jsonEvents(t, "server drain b1 --wait --json", runTessera(t, m, "server", "drain", "b1", "--wait", "--json"))
	if !r.OK || r.Op != "drain" || r.Blocks == 0 {
		t.Errorf("drain --json result %+v, want ok with the blocks b1 held", r)
	}
	if d := lastOf(t, "drain --json", evs, "move"); d.Done != d.Total || d.Total != r.Blocks || d.Bytes != d.TotalBytes {
		t.Errorf("drain --json: last report %+v, want all of the %d blocks moved", d, r.Blocks)
	}
	// Drained means what remove checks: no live block left on it.
	must(t, m.ServerCmd(t.Context(), "remove", "b1"))

	res = runTessera(t, m, "server", "drain", "b2", "--json")
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "--json needs --wait") {
		t.Errorf("server drain --json without --wait: exit %d, stderr %q; want refused saying it needs --wait", res.ExitCode, res.Stderr)
	}
}
