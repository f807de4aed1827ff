package admin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"tessera/internal/meta"
)

// TestStatusPrintsClusterAndSites: the cluster's name, its metas (in use,
// unreachable), the store's members, and per site the servers by state,
// the metas and the blocks under-replicated there, their bytes and age.
func TestStatusPrintsClusterAndSites(t *testing.T) {
	r := StatusReport{
		View: &ClusterView{Name: "lab", Replicated: true,
			Metas:   []MetaStatus{{Addr: "a:1", Site: "x", RTT: 1500 * time.Microsecond, Current: true}, {Addr: "b:1", Err: "refused"}},
			Members: []StoreMember{{Name: "e0", Addr: "http://e0:2379", Leader: true, Healthy: true, Rev: 9, DBSize: 4096, DBInUse: 1024}, {Name: "e1", Err: "timeout"}},
			Maintenance: &StoreMaintenance{CompactedRev: 77, CompactedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
				DefragAt: time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC), DefragMember: "e0", At: time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC)}},
		Mover: meta.MoverProgress{At: 100e9, UnderBySite: []meta.SiteCount{{Site: "y", N: 4, Bytes: 4096, Since: 58e9}}},
		Servers: []ServerStatus{
			{Server: meta.Server{ID: "b0", Site: "x", State: meta.StateUp}},
			{Server: meta.Server{ID: "b1", Site: "y", State: meta.StateDown}},
			{Server: meta.Server{ID: "b2", Site: "y", State: meta.StateDraining}},
		},
	}
	r.Sites = r.sites()
	var out bytes.Buffer
	r.Print(&out)
	for _, want := range []string{
		"cluster: lab\n",
		"meta a:1: site=x rtt=1.5ms state=in use\n",
		"meta b:1: site=- rtt=- state=unreachable: refused\n",
		"store members: 2 (1 healthy)\n",
		"store member e0: addr=http://e0:2379 leader=true rev=9 db=4096 in_use=1024 state=healthy\n",
		"store maintenance: compacted_rev=77 compacted=2026-11-29T12:00:00Z defragmented=2026-11-29T12:05:00Z (e0) last_round=2026-11-29T12:05:00Z\n",
		"store member e1: addr= leader=false rev=0 state=unhealthy: timeout\n",
		"site x: servers=1 up=1 draining=0 down=0 metas=1 under_replicated=0 under_bytes=0 lag=-\n",
		"site y: servers=2 up=0 draining=1 down=1 metas=0 under_replicated=4 under_bytes=4096 lag=42s\n",
		"server b0: addr= state=up blocks=0 bytes=0 site=x\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
