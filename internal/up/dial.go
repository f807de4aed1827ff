package up

import (
	"tessera/internal/auth"
	"tessera/internal/blockdial"
)

// The block dialer lives in internal/blockdial; these names stay for the
// callers of internal/up.

// Dialer is blockdial.Dialer.
type Dialer = blockdial.Dialer

// NewDialer is blockdial.New.
func NewDialer(creds *auth.Credentials) *Dialer { return blockdial.New(creds) }

// RoutesEnv is blockdial.RoutesEnv.
const RoutesEnv = blockdial.RoutesEnv

// DialBlockServer is blockdial.DialBlockServer.
var DialBlockServer = blockdial.DialBlockServer

// DialAdmin is blockdial.DialAdmin.
var DialAdmin = blockdial.DialAdmin
