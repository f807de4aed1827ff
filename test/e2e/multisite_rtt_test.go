//go:build !multisite_wip

package e2e

import "tessera/test/cluster"

// sitesRTT is the WAN of the three-site tests in CI: the rNFS Figure 6
// matrix at a tenth of its delays (6, 6 and 12 ms). At the full 60/60/120 ms
// every meta operation pays several linearizable etcd reads of 80-140 ms
// each, so that a block server's registration alone outlasts its 10 s
// deadline; `-tags multisite_wip` runs the same tests at the full matrix.
var sitesRTT = cluster.ScaleRTT(cluster.Figure6RTT(), 10)
