//go:build multisite_wip

package e2e

import "tessera/test/cluster"

// sitesRTT under the multisite_wip tag: the full rNFS Figure 6 matrix
// (60, 60, 120 ms), which the meta service over etcd does not serve yet
// (see multisite_rtt_test.go).
var sitesRTT = cluster.Figure6RTT()
