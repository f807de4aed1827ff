package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandHelp is what -h prints above a command's flags: how the command
// line goes and, for the commands a newcomer meets first, examples.
type commandHelp struct {
	usage    string
	examples []string // a command line, then "  # what it does" on the same line
}

// helps are keyed by the flag set's name (the command, or "fileset create").
// Paths are the guide's (docs/guide/one-machine.md, cluster.md).
var helps = map[string]commandHelp{
	"up": {"tessera up --data DIR --mount DIR [flags]", []string{
		"tessera up --data /var/tmp/tessera --mount /mnt/tessera  # meta, 3 block servers, a gateway and a mount",
		"tessera up --data /var/tmp/tessera --mount /mnt/tessera --metrics 127.0.0.1:9400  # and the status page",
		"tessera up --data /var/tmp/tessera --mount /mnt/tessera --meta-listen 10.0.0.1:7400  # others may join",
	}},
	"meta": {"tessera meta --data DIR | --meta-db URL [flags]", []string{
		"tessera meta --data /srv/tessera --listen 10.0.0.1:7400 --cluster lab --tls-cert pki/meta.crt --tls-key pki/meta.key --tls-ca pki/ca.crt",
	}},
	"blockd": {"tessera blockd --data DIR --meta ADDR [flags]", []string{
		"tessera blockd --data /srv/blocks --id h1-b0 --listen 10.0.0.1:7401 --meta 10.0.0.1:7400 --tls-cert pki/h1-b0.crt --tls-key pki/h1-b0.key --tls-ca pki/ca.crt",
	}},
	"mount": {"tessera mount --meta ADDR [flags] MOUNTPOINT\n       tessera mount [flags] CLUSTER:/DIR MOUNTPOINT", []string{
		"tessera mount --meta 10.0.0.1:7400 --tls-cert pki/mount.crt --tls-key pki/mount.key --tls-ca pki/ca.crt /mnt/lab",
		"tessera mount lab:/projects/x /mnt/x  # the directory /projects/x of cluster lab (/etc/tessera/clusters or DNS)",
		"tessera mount --meta 10.0.0.1:7400 --cache-dir /var/cache/tessera --policy posix /mnt/lab",
	}},
	"gateway": {"tessera gateway --meta ADDR [flags]", nil},
	"status":  {"tessera status --data DIR | --meta ADDR [flags]", statusExamples},
	"gc":      {"tessera gc --data DIR | --meta ADDR [flags]", nil},
	"fsck":    {"tessera fsck --data DIR | --meta ADDR [flags]", nil},
	"server":  {"tessera server list | drain ID | undrain ID | remove ID  (--data DIR | --meta ADDR) [flags]", nil},
	"certs":   {"tessera certs init | issue NAME --role ROLE | token NAME --role ROLE [flags]", nil},
	"version": {"tessera version", nil},
	"completion": {"tessera completion bash", []string{
		"source <(tessera completion bash)  # completion in this shell",
		"tessera completion bash > /etc/bash_completion.d/tessera  # in every new shell (as root)",
	}},
	"fileset create": {"tessera fileset create PATH --home URL [flags]", []string{
		"tessera fileset create /mnt/tessera/shared --home file:///var/tmp/tessera-home  # read-only cache of a directory",
		"tessera fileset create /mnt/tessera/data --home s3://bucket/prefix --mode sw  # one writer, written back",
		"tessera fileset create /mnt/tessera/up --home tessera://10.0.0.9:7400/exports --mode lu",
	}},
	"fileset flush":    {"tessera fileset flush PATH [flags]", nil},
	"fileset evict":    {"tessera fileset evict PATH [flags]", nil},
	"fileset prefetch": {"tessera fileset prefetch PATH... | --list FILE [flags]", nil},
}

var statusExamples = []string{
	"tessera status --data /var/tmp/tessera  # the cluster of a tessera up on this machine",
	"tessera status --meta 10.0.0.1:7400 --tls-cert pki/admin.crt --tls-key pki/admin.key --tls-ca pki/ca.crt",
	"tessera status --data /var/tmp/tessera --json  # what the status page shows, as JSON",
}

// printHelp writes fs's -h: the usage line and examples when the command has
// them, then the flags.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	if h, ok := helps[fs.Name()]; ok {
		fmt.Fprintf(w, "usage: %s\n", h.usage)
		if len(h.examples) > 0 {
			fmt.Fprintln(w, "\nexamples:")
			for _, e := range h.examples {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			return
		}
		fmt.Fprintln(w, "\nflags:")
	}
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// helpHook, when set, is given every flag set that is asked for -h instead
// of printing it (tessera completion collects the flags so).
var helpHook func(fs *flag.FlagSet)

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return strings.TrimLeft(arg, "-") == "h" || strings.TrimLeft(arg, "-") == "help"
}
