package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"syscall"
	"testing"

	"tessera/internal/meta"
	"tessera/internal/policy"
)

// mapXattrs is one path's extended attributes in memory.
type mapXattrs struct {
	path string
	m    map[string]string
	sets int
}

func (x *mapXattrs) get(path, name string) (string, error) {
	v, ok := x.m[name]
	if path != x.path || !ok {
		return "", syscall.ENODATA
	}
	return v, nil
}

func (x *mapXattrs) set(path, name, value string) error {
	x.sets++
	x.m[name] = value
	return nil
}

func (x *mapXattrs) remove(path, name string) error {
	if _, ok := x.m[name]; !ok {
		return syscall.ENODATA
	}
	delete(x.m, name)
	return nil
}

func runPolicyCmd(t *testing.T, xa *mapXattrs, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := policyCommand(args, &out, xa)
	return out.String(), err
}

func TestPolicyCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{}, {"get"}, {"get", "a", "b"}, {"get", ""}, {"set", "a"}, {"set", "a", "b", "c"},
		{"list", "x"}, {"frob"}, {"-x"},
	} {
		xa := &mapXattrs{m: map[string]string{}}
		out, err := runPolicyCmd(t, xa, args...)
		if !errors.Is(err, errUsage) || !strings.HasSuffix(err.Error(), policyUsage) || strings.Contains(err.Error(), "\n") {
			t.Errorf("policy %q: %v, want one usage line", args, err)
		}
		if out != "" || xa.sets != 0 {
			t.Errorf("policy %q printed %q, made %d sets", args, out, xa.sets)
		}
	}
	out, err := runPolicyCmd(t, &mapXattrs{}, "-h")
	if err != nil || !strings.Contains(out, "tessera policy set PATH NAME") {
		t.Fatalf("-h: %v %q", err, out)
	}
}

func TestPolicyCommandBadName(t *testing.T) {
	xa := &mapXattrs{path: "/m/f", m: map[string]string{}}
	_, err := runPolicyCmd(t, xa, "set", "/m/f", "strict")
	want := `unknown policy "strict": valid policies are posix, seq-nocache, forced, relaxed, session, nfs, immutable`
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) {
		t.Fatalf("bad name: %v\nwant a usage error containing %s", err, want)
	}
	if xa.sets != 0 {
		t.Fatal("a bad name reached setxattr")
	}
}

func TestPolicyCommandGetSet(t *testing.T) {
	xa := &mapXattrs{path: "/m/f", m: map[string]string{}}
	out, err := runPolicyCmd(t, xa, "get", "/m/f")
	if err != nil || !strings.HasPrefix(out, "default\t") || !strings.Contains(out, `"session"`) {
		t.Fatalf("get with none: %v %q", err, out)
	}
	if _, err := runPolicyCmd(t, xa, "set", "/m/f", "nfs"); err != nil {
		t.Fatal(err)
	}
	if xa.m[meta.PolicyXattr] != "nfs" {
		t.Fatalf("xattrs after set: %v", xa.m)
	}
	nfs, _ := policy.Lookup("nfs")
	out, err = runPolicyCmd(t, xa, "get", "/m/f")
	if want := "nfs\t" + policy.Describe(nfs) + "\n"; err != nil || out != want {
		t.Fatalf("get = %q, %v; want %q", out, err, want)
	}
	xa.m[meta.PolicyXattr] = "future"
	if out, err = runPolicyCmd(t, xa, "get", "/m/f"); err != nil || !strings.HasPrefix(out, "future\t(not a policy") {
		t.Fatalf("get of an unknown stored name: %v %q", err, out)
	}
	for range 2 { // clearing twice is not an error
		if _, err := runPolicyCmd(t, xa, "set", "/m/f", "default"); err != nil {
			t.Fatal(err)
		}
		if _, ok := xa.m[meta.PolicyXattr]; ok {
			t.Fatal("set default did not clear the policy")
		}
	}
}

func TestPolicyCommandList(t *testing.T) {
	out, err := runPolicyCmd(t, &mapXattrs{}, "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(policy.Names()) {
		t.Fatalf("%d lines for %d policies:\n%s", len(lines), len(policy.Names()), out)
	}
	for i, p := range policy.All() {
		if f := strings.Fields(lines[i]); len(f) < 2 || f[0] != p.Name() || !strings.Contains(lines[i], policy.Describe(p)) {
			t.Errorf("line %q, want %s and its knobs", lines[i], p.Name())
		}
	}
	if !strings.Contains(out, "session ") || !strings.Contains(out, "(default)") {
		t.Errorf("the default is not marked:\n%s", out)
	}
}

func TestPolicyNotOnTessera(t *testing.T) {
	dir := t.TempDir()
	_, err := runPolicyCmdSys("get", dir)
	if err == nil || !strings.Contains(err.Error(), "not on a Tessera mount") {
		t.Fatalf("get on %s: %v", dir, err)
	}
	if _, err := runPolicyCmdSys("set", dir, "posix"); err == nil || !strings.Contains(err.Error(), "not on a Tessera mount") {
		t.Fatalf("set on %s: %v", dir, err)
	}
}

func runPolicyCmdSys(args ...string) (string, error) {
	var out bytes.Buffer
	err := policyCommand(args, &out, sysXattrs{})
	return out.String(), err
}

func TestPolicyFlag(t *testing.T) {
	parseWith := func(args ...string) (string, error) {
		fs := flag.NewFlagSet("mount", flag.ContinueOnError)
		p := addPolicyFlag(fs)
		err := parse(fs, args)
		return p.String(), err
	}
	if got, err := parseWith(); err != nil || got != policy.Default {
		t.Fatalf("no flag: %q %v, want %s", got, err, policy.Default)
	}
	if got, err := parseWith("--policy", "posix"); err != nil || got != "posix" {
		t.Fatalf("--policy posix: %q %v", got, err)
	}
	_, err := parseWith("--policy", "fast")
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "valid policies are posix, seq-nocache") {
		t.Fatalf("--policy fast: %v", err)
	}
	// mount and up refuse it while parsing, before touching anything.
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		run  func(context.Context, []string) error
		args []string
	}{
		{"mount", runMount, []string{"--meta", "127.0.0.1:1", "--policy", "fast", dir}},
		{"up", runUp, []string{"--data", dir, "--mount", dir, "--policy", "fast"}},
	} {
		err := c.run(context.Background(), c.args)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `unknown policy "fast"`) {
			t.Errorf("%s %q: %v", c.name, c.args, err)
		}
	}
}
