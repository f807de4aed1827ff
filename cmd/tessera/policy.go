package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"

	"tessera/internal/meta"
	"tessera/internal/policy"
)

// policyUsage is the one line `tessera policy` prints for bad arguments.
const policyUsage = "want get PATH, set PATH NAME or list (see tessera policy -h)"

const policyHelp = `usage: tessera policy get PATH        the file's or directory's policy and its knobs
       tessera policy set PATH NAME   set it (new entries in a directory inherit it); NAME "default" clears it
       tessera policy list            every preset and its knobs
PATH is on a Tessera mount; no meta address is needed. A file with no policy of
its own follows the mount's --policy (default "session").`

// runPolicy is `tessera policy get PATH | set PATH NAME | list`.
func runPolicy(ctx context.Context, args []string) error {
	return policyCommand(args, os.Stdout, sysXattrs{})
}

// xattrs is how the policy command reaches a file's extended attributes;
// tests substitute a map.
type xattrs interface {
	// get returns the value of name; an error matching ENODATA if absent.
	get(path, name string) (string, error)
	set(path, name, value string) error
	remove(path, name string) error
}

// policyCommand runs the policy command on args, printing to out.
func policyCommand(args []string, out io.Writer, xa xattrs) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(out, policyHelp)
		return nil
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, policyUsage)
	}
	switch op, rest := args[0], args[1:]; {
	case op == "list" && len(rest) == 0:
		printPolicies(out)
		return nil
	case op == "get" && len(rest) == 1 && rest[0] != "":
		return policyGet(out, xa, rest[0])
	case op == "set" && len(rest) == 2 && rest[0] != "":
		return policySet(xa, rest[0], rest[1])
	}
	return fmt.Errorf("%w: %s", errUsage, policyUsage)
}

// clearName is the NAME that `policy set` takes to remove a file's policy.
const clearName = "default"

func policyGet(out io.Writer, xa xattrs, path string) error {
	name, err := xa.get(path, meta.PolicyXattr)
	switch {
	case errors.Is(err, syscall.ENODATA):
		fmt.Fprintf(out, "%s\tthe mount's --policy (%q unless it was given)\n", clearName, policy.Default)
		return nil
	case err != nil:
		return err
	}
	p, err := policy.Lookup(name)
	if err != nil {
		fmt.Fprintf(out, "%s\t(not a policy this tessera knows)\n", name)
		return nil
	}
	fmt.Fprintf(out, "%s\t%s\n", p.Name(), policy.Describe(p))
	return nil
}

func policySet(xa xattrs, path, name string) error {
	if name == clearName {
		if err := xa.remove(path, meta.PolicyXattr); err != nil && !errors.Is(err, syscall.ENODATA) {
			return err
		}
		return nil
	}
	if _, err := policy.Lookup(name); err != nil {
		return fmt.Errorf("%w: %v (or %s, to clear it)", errUsage, err, clearName)
	}
	return xa.set(path, meta.PolicyXattr, name)
}

func printPolicies(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, p := range policy.All() {
		mark := ""
		if p.Name() == policy.Default {
			mark = "  (default)"
		}
		fmt.Fprintf(tw, "%s\t%s%s\n", p.Name(), policy.Describe(p), mark)
	}
	tw.Flush()
}

// sysXattrs reaches extended attributes through the system calls, on
// Tessera mounts only: elsewhere a user.* attribute would be stored by the
// local file system and mean nothing.
type sysXattrs struct{}

// fuseMagic is the f_type statfs reports for FUSE mounts.
const fuseMagic = 0x65735546

func (sysXattrs) check(path string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	if st.Type != fuseMagic {
		return fmt.Errorf("%s is not on a Tessera mount", path)
	}
	return nil
}

func (x sysXattrs) get(path, name string) (string, error) {
	if err := x.check(path); err != nil {
		return "", err
	}
	buf := make([]byte, meta.MaxPolicyLen+1)
	n, err := syscall.Getxattr(path, name, buf)
	if err != nil {
		return "", &os.PathError{Op: "getxattr " + name, Path: path, Err: err}
	}
	return string(buf[:n]), nil
}

func (x sysXattrs) set(path, name, value string) error {
	if err := x.check(path); err != nil {
		return err
	}
	if err := syscall.Setxattr(path, name, []byte(value), 0); err != nil {
		return &os.PathError{Op: "setxattr " + name, Path: path, Err: err}
	}
	return nil
}

func (x sysXattrs) remove(path, name string) error {
	if err := x.check(path); err != nil {
		return err
	}
	if err := syscall.Removexattr(path, name); err != nil {
		return &os.PathError{Op: "removexattr " + name, Path: path, Err: err}
	}
	return nil
}

// policyFlag is a --policy flag: a preset name, checked as it is parsed.
type policyFlag struct{ name string }

func (f *policyFlag) String() string {
	if f == nil {
		return ""
	}
	return f.name
}

func (f *policyFlag) Set(v string) error {
	p, err := policy.Lookup(v)
	if err != nil {
		return err
	}
	f.name = p.Name()
	return nil
}

// addPolicyFlag defines --policy on fs; the value is a valid preset name.
func addPolicyFlag(fs *flag.FlagSet) *policyFlag {
	f := &policyFlag{name: policy.Default}
	fs.Var(f, "policy", "consistency policy `NAME` of files and directories that have none of their own: "+
		strings.Join(policy.Names(), ", ")+" (see tessera policy list)")
	return f
}
