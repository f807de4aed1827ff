//go:build !multisite_full

package e2e

import "tessera/test/cluster"

// sitesRTT is the WAN of the three-site tests in CI: the rNFS Figure 6
// matrix at a tenth of its delays (6, 6 and 12 ms), to keep the suite's
// time: at the full matrix every meta operation pays linearizable etcd
// round trips of 60 ms and more, and the two porcupine histories alone take
// four minutes. `-tags multisite_full` runs the same tests at the full
// matrix.
var sitesRTT = cluster.ScaleRTT(cluster.Figure6RTT(), 10)
