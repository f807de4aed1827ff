package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on the default mux
)

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
