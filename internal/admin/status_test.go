package admin

import (
	"bytes"
	"strings"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/scrub"
	"tessera/internal/meta"
)

// TestStatusPrintsLostScrubAndReplicaWarning: status names lost blocks
// with their inodes, sums the servers' scrub progress, and warns when the
// replication factor is more than the servers that can hold copies.
func TestStatusPrintsLostScrubAndReplicaWarning(t *testing.T) {
	h := block.Sum([]byte("gone"))
	r := StatusReport{Replicas: 3,
		Mover: meta.MoverProgress{Round: 2, UnderReplicated: 4, Lost: 1, LostBlocks: []meta.LostBlock{{Hash: h, Inos: []meta.Ino{9, 11}}}},
		Servers: []ServerStatus{
			{Server: meta.Server{ID: "b0", State: meta.StateUp}, Scrub: &scrub.Progress{Rounds: 3, Blocks: 5, Bytes: 50, Corrupt: 1}},
			{Server: meta.Server{ID: "b1", State: meta.StateUp}, Scrub: &scrub.Progress{Rounds: 2, Blocks: 7, Bytes: 70}},
			{Server: meta.Server{ID: "b2", State: meta.StateDown}},
		}}
	var out bytes.Buffer
	r.Print(&out)
	for _, want := range []string{
		"warning: the replication factor 3 is more than the 2 block servers not down",
		"under-replicated: 4\n",
		"lost: 1\n",
		"lost block " + h.String() + ": no good copy on any server up; inodes 9 11",
		"scrub rounds: 2\n", "scrubbed blocks: 12\n", "scrubbed bytes: 120\n", "corrupt copies found: 1\n",
		"server b0: addr= state=up blocks=0 bytes=0 scrub_rounds=3 scrub_blocks=5 scrub_bytes=50 scrub_corrupt=1",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	r.Replicas = 2
	r.Print(&out)
	if strings.Contains(out.String(), "warning") {
		t.Errorf("a warning with R=2 over 2 servers up:\n%s", out.String())
	}
}
