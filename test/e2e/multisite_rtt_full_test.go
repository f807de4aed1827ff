//go:build multisite_full

package e2e

import "tessera/test/cluster"

// sitesRTT under the multisite_full tag: the full rNFS Figure 6 matrix
// (60, 60, 120 ms). TestMultiSite passes there too, in about 7 minutes
// instead of 2 (the porcupine histories take two of them each).
var sitesRTT = cluster.Figure6RTT()
