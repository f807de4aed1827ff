package nfs

import (
	"crypto/sha256"
	"encoding/binary"

	"tessera/internal/auth"
)

// ClusterID is the cluster id file handles carry: the first 8 bytes of
// the SHA-256 of the cluster CA's certificate, the same for every server
// of the cluster and across restarts; 0 for a cluster without TLS
// (`tessera up --insecure`).
func ClusterID(creds *auth.Credentials) uint64 {
	if creds == nil || creds.CACert == nil {
		return 0
	}
	sum := sha256.Sum256(creds.CACert.Raw)
	return binary.BigEndian.Uint64(sum[:8])
}
