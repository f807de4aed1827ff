package chaos

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// checkReadback reads every acknowledged file on every mount, once, with
// the faults over: a failed or different read is a violation (the first
// pass counts: issue 23's EIO went away on later passes). A renamed file
// whose last rename's outcome is unknown may be under any of its names.
func (r *run) checkReadback() (files, mounts int) {
	all := r.hist.all()
	for m, d := range r.w.mounts {
		for _, f := range all {
			var errs []string
			ok := false
			for _, name := range slices.Backward(f.names) {
				b, err := os.ReadFile(filepath.Join(d.Mount(), dataDir, name))
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %s", name, errName(err)))
					continue
				}
				if len(b) != f.size || sha256.Sum256(b) != f.sum {
					errs = append(errs, fmt.Sprintf("%s: %d bytes, not the %d acknowledged (or other bytes)", name, len(b), f.size))
					continue
				}
				ok = true
				break
			}
			r.rec.op("final-read")
			if !ok {
				r.rec.violate("acked-readback", fmt.Sprintf("m%d at the end: %s", m, strings.Join(errs, "; ")))
			}
		}
	}
	return len(all), len(r.w.mounts)
}

// checkFsck runs `tessera fsck` against the cluster: "clean", or what it
// said.
func (r *run) checkFsck() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := r.w.multi.Run(ctx, "fsck")
	out := strings.TrimSpace(res.Stdout + "\n" + res.Stderr)
	switch {
	case err != nil:
		r.rec.violate("fsck", err.Error())
		return "FAIL"
	case res.ExitCode != 0 || !strings.Contains(res.Stdout, "fsck: clean"):
		r.rec.violate("fsck", fmt.Sprintf("exit %d: %s", res.ExitCode, tail(out, 2000)))
		return "FAIL"
	}
	r.logf("fsck: %s", tail(out, 300))
	return "clean"
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// invariants are every invariant a run checks, in the summary's order.
var invariants = []string{"acked-readback", "healthy-reads", "no-calm-errors", "linearizable", "cluster-recovers", "fsck", "daemons"}

// Summary is what a run did and found.
type Summary struct {
	Seed           uint64
	Duration       time.Duration
	Ops            map[string]int
	Faults         map[string]int
	Errors         map[string]int      // "OP ERRNO (calm|fault)"
	Violations     map[string]int      // by invariant
	Details        map[string][]string // the first few of each
	Files          int                 // acknowledged files read back at the end
	ReadbackMounts int
	Linear         string
	Fsck           string
	LogFile        string         // the cluster's output, kept
	LogSignatures  map[string]int // known error lines in it, counted
	Interrupted    bool           // ended early by its context: not a verdict
}

func (s *Summary) fill(r *recorder) {
	s.Ops, s.Faults, s.Errors = maps.Clone(r.ops), maps.Clone(r.faults), maps.Clone(r.errs)
	s.Violations, s.Details = maps.Clone(r.nviol), map[string][]string{}
	for k, v := range r.violations {
		s.Details[k] = slices.Clone(v)
	}
}

// OK reports whether every invariant held over a whole run.
func (s *Summary) OK() bool { return s.Violated() == 0 && !s.Interrupted }

// Violated is how many violations of any invariant the run saw.
func (s *Summary) Violated() int { return total(s.Violations) }

// Report is the violations' details, a line each.
func (s *Summary) Report() string {
	var b strings.Builder
	for _, inv := range invariants {
		for _, d := range s.Details[inv] {
			fmt.Fprintf(&b, "violation %s: %s\n", inv, d)
		}
		if n := s.Violations[inv]; n > len(s.Details[inv]) {
			fmt.Fprintf(&b, "violation %s: … %d more\n", inv, n-len(s.Details[inv]))
		}
	}
	return b.String()
}

// String is the one-line summary: operations done, faults injected,
// errors by kind, each invariant and its result, and the verdict.
func (s *Summary) String() string {
	var inv []string
	for _, name := range invariants {
		res := "ok"
		if n := s.Violations[name]; n > 0 {
			res = fmt.Sprintf("FAIL(%d)", n)
		}
		switch name {
		case "acked-readback":
			res += fmt.Sprintf("[%d files x %d mounts]", s.Files, s.ReadbackMounts)
		case "linearizable":
			res += "[" + s.Linear + "]"
		}
		inv = append(inv, name+"="+res)
	}
	verdict := "PASS"
	switch {
	case s.Violated() > 0:
		verdict = "FAIL"
	case s.Interrupted:
		verdict = "INTERRUPTED"
	}
	return fmt.Sprintf("chaos %s: seed %d, %v of faults; ops %d (%s); faults %d (%s); errors %d (%s); cluster log lines %s; invariants: %s",
		verdict, s.Seed, s.Duration, total(s.Ops), counts(s.Ops), total(s.Faults), counts(s.Faults),
		total(s.Errors), counts(s.Errors), counts(s.LogSignatures), strings.Join(inv, " "))
}

// logSignatures are error lines of the daemons worth counting: the
// summary's "errors by kind" as the processes saw them.
var logSignatures = map[string]string{
	"etcd future revision": "required revision is a future revision",
	"etcd compacted":       "required revision has been compacted",
	"etcdkv error":         "etcdkv:",
	"panic":                "panic:",
	"data race":            "DATA RACE",
}

// saveLog writes the cluster's output (as far as it is kept) to
// Dir/cluster.log and counts the signatures' lines in it.
func (r *run) saveLog() (string, map[string]int) {
	text := r.w.multi.LogTail(64 << 20)
	p := filepath.Join(r.cfg.Dir, "cluster.log")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		p = ""
	}
	found := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		for name, sig := range logSignatures {
			if strings.Contains(line, sig) {
				found[name]++
			}
		}
	}
	return p, found
}
