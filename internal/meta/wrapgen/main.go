// Command wrapgen writes the pass-through methods of a decorator of the
// meta API from the interface declarations of package meta (apis.go and
// the optional interfaces of optional.go), so that a method added to an
// interface reaches every decorator by `go generate ./...` instead of by a
// hand edit in each.
//
// A decorator's package runs it from a //go:generate line:
//
//	//go:generate go run tessera/internal/meta/wrapgen -type *metaAPI -recv a -ifaces api,optional -lower FS -o zz_metaapi_gen.go
//
// Flags:
//
//	-type    the decorator's type ("*T" for a pointer receiver)
//	-recv    the receiver's name in the generated methods
//	-ifaces  the interfaces to implement, by name in package meta, comma
//	         separated; "api" stands for FS, Cluster and Sessions,
//	         "optional" for every optional interface OptionalInterfaces
//	         lists but SessionBinder (which returns the decorator itself)
//	-style   around (default), forward, client, server, authz, mountroot
//	         or record
//	-pb      with -style client or server: the protocol's generated Go
//	         package, as a directory below the decorator's (metapb)
//	-next    with -style around: the type of the API the hook hands each
//	         call (default meta.API: optional methods then go through
//	         meta.Forward, ErrNotSupported when the API lacks them; any
//	         other type is taken to have every method)
//	-lower   interfaces whose op names are the method's name in lower
//	         case ("getattr"; "all" for every one); the others' are in
//	         snake case ("set_server_state")
//	-o       the output file, in the decorator's directory (zz_*_gen.go;
//	         zz_*_gen_test.go for a decorator declared in a test file)
//
// What the decorator supplies is what differs. With -style around it is
// one method,
//
//	around(ctx context.Context, op string, call func(ctx context.Context, next NEXT) error) error
//
// that runs call (counting it, retrying it, failing it over) and hands it
// the API to make the call on; each generated method is one call of
// around. With -style forward (meta.Forward) each generated method passes
// the call to the receiver's Next when Next has the method's interface, and
// answers ErrNotSupported when not. A method the decorator's package
// already defines on the type (outside the output file) is left out: that
// is how a decorator writes by hand the few calls it treats differently.
//
// With -style client (metarpc.Client) each generated method sends its
// call over the RPC of the method's name: the type supplies call(ctx,
// method, rpc func(ctx, ...grpc.CallOption) error) error, ioErr(method,
// err) error and a field mc holding the services' stubs. With -style
// server (metarpc's server) each generated handler decodes its request,
// calls the method on the API on(ctx) returns and encodes the reply; the
// package supplies on(ctx) and statusOf(err) error, and, for an optional
// interface's handler (which answers the error when the API lacks the
// interface), unsupported(iface, method string) error. The RPC of a
// method is the one of its name, or the one a //tessera:rpc NAME line of
// its doc comment names (QuotaAPI.Quota travels as GetQuota). How parameters and
// results go into messages, and which conversions the package writes by
// hand, is rpc.go's convention. With -style authz (package authz's view)
// it writes the rule tables from each method's //tessera:authz directive
// and the view's methods (authz.go says how); with -style mountroot the
// methods of package mountroot's API that only map inode numbers
// (mountroot.go says which). With -style record (a test double) each
// generated method calls the receiver's note(method name) and returns
// zero results and a nil error.
//
// TestGeneratedFilesAreCurrent runs every //go:generate line of the module
// that names wrapgen again and fails when a file differs from what it
// would write.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	cfg, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrapgen:", err)
		os.Exit(2)
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrapgen:", err)
		os.Exit(1)
	}
	src, err := generate(dir, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrapgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(dir, cfg.out), src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "wrapgen:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	typ, recv, style, next, out, pb string
	ifaces, lower                   []string
	args                            []string // as given, for the header
}

// parseArgs reads the flags of one run.
func parseArgs(args []string) (config, error) {
	fs := flag.NewFlagSet("wrapgen", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var c config
	var ifaces, lower string
	fs.StringVar(&c.typ, "type", "", "the decorator's type (*T for a pointer receiver)")
	fs.StringVar(&c.recv, "recv", "", "the receiver's name")
	fs.StringVar(&ifaces, "ifaces", "", "interfaces to implement: names in package meta, api, optional")
	fs.StringVar(&c.style, "style", "around", "around, forward, client or server")
	fs.StringVar(&c.pb, "pb", "metapb", "with -style client or server: the protocol's Go package, a directory below the decorator's")
	fs.StringVar(&c.next, "next", "meta.API", "the type of the API around hands each call")
	fs.StringVar(&lower, "lower", "", "interfaces whose op names are lower case (all: every one)")
	fs.StringVar(&c.out, "o", "", "output file (zz_*_gen.go)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.typ == "" || c.recv == "" || ifaces == "" || c.out == "":
		return c, fmt.Errorf("-type, -recv, -ifaces and -o are required")
	case c.style != "around" && c.style != "forward" && c.style != "client" && c.style != "server" && c.style != "authz" && c.style != "mountroot" && c.style != "record":
		return c, fmt.Errorf("-style %q: want around, forward, client, server, authz, mountroot or record", c.style)
	case filepath.Base(c.out) != c.out || filepath.Ext(c.out) != ".go":
		return c, fmt.Errorf("-o %q: want a .go file name in the decorator's directory", c.out)
	}
	c.ifaces = splitList(ifaces)
	c.lower = splitList(lower)
	c.args = args
	return c, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
