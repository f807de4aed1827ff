package main

import (
	"tessera/internal/auth"
	"tessera/internal/meta/metarpc"
)

// dialMeta dials the meta service with the mount's credentials (nil:
// plain TCP, a cluster run with --insecure).
func dialMeta(addr string, creds *auth.Credentials) (*metarpc.Client, error) {
	if creds == nil {
		return metarpc.Dial(addr, metarpc.DialOptions{})
	}
	return metarpc.Dial(addr, metarpc.DialOptions{Creds: creds})
}
