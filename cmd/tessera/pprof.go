package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on the default mux
)

// addPprofFlag adds --pprof ADDR to a role's flags.
func addPprofFlag(fs *flag.FlagSet) *string {
	return fs.String("pprof", "", "serve Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060")
}

// servePprof serves Go's profiles on addr in the background; "" does nothing.
func servePprof(addr string) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof %s: %w", addr, err)
	}
	go http.Serve(ln, nil)
	return nil
}
