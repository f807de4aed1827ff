package admin

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/block/scrub"
	"tessera/internal/kv/memkv"
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

// TestStatusCountsBytesOnDisk: status reports what the stores take on disk
// (block files and their directories) beside the block bytes, per server
// and in sum.
func TestStatusCountsBytesOnDisk(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]*disk.Store{}
	for _, id := range []string{"b0", "b1"} {
		st, err := disk.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[id] = st
		if _, err := svc.RegisterServer(ctx, meta.Server{ID: id, Addr: id}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		data := bytes.Repeat([]byte{byte(i + 1)}, 1000)
		if err := stores["b0"].Put(ctx, block.Sum(data), data); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cluster{Meta: svc, Dial: func(s meta.Server) (BlockServer, error) { return stores[s.ID], nil }}
	r, err := Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := stores["b0"].OnDisk() + stores["b1"].OnDisk()
	// 10 files of 1,000 bytes take at least a file-system block each, and
	// their directories more.
	if r.OnDiskBytes != want || r.OnDiskBytes < 10*1000 || r.OnDiskBytes <= r.StoredBytes {
		t.Errorf("bytes on disk %d (stored %d), the stores say %d", r.OnDiskBytes, r.StoredBytes, want)
	}
	var out bytes.Buffer
	r.Print(&out)
	for _, line := range []string{
		fmt.Sprintf("bytes on disk: %d\n", want),
		fmt.Sprintf("server b0: addr=b0 state=up blocks=10 bytes=10000 on_disk=%d", stores["b0"].OnDisk()),
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("status lacks %q:\n%s", line, out.String())
		}
	}
}
