//go:build bigoutage

package e2e

// `go test -tags bigoutage -run TestGatewayOutage ./test/e2e`: five times
// the CI workload.
func init() { outageScale = 5 }
