package cluster

import (
	"strings"
	"testing"
)

func TestParseClusterStatus(t *testing.T) {
	out := `files: 3
under-replicated: 12
misplaced: 4
bytes to move: 1048576 (1.0 MiB)
mover rounds: 7
lost: 2
lost block abcd: no good copy on any server up; inodes 7 (find MOUNT -inum N)
scrub rounds: 3
scrubbed blocks: 15
scrubbed bytes: 983040
corrupt copies found: 1
servers: 3 (2 up)
server b0: addr=127.0.0.1:1 state=up blocks=10 bytes=655360 scrub_rounds=3 scrub_blocks=10 scrub_corrupt=1 scrub_running=false
server b1: addr=127.0.0.1:2 state=down blocks=0 bytes=0
server b2: addr=127.0.0.1:3 state=draining blocks=5 bytes=327680
`
	st, err := ParseClusterStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.UnderReplicated != 12 || st.Misplaced != 4 || st.BytesToMove != 1<<20 || st.MoverRounds != 7 ||
		st.Servers != 3 || st.ServersUp != 2 || len(st.Server) != 3 {
		t.Fatalf("parsed %+v", st)
	}
	if st.Lost != 2 || !strings.Contains(st.LostBlocks["abcd"], "inodes 7") || st.ScrubRounds != 3 || st.ScrubbedBlocks != 15 ||
		st.ScrubbedBytes != 983040 || st.CorruptFound != 1 {
		t.Errorf("lost and scrub: %+v", st)
	}
	if s := st.Server["b0"]; s.ScrubRounds != 3 || s.ScrubBlocks != 10 || s.ScrubCorrupt != 1 {
		t.Errorf("b0's scrub: %+v", s)
	}
	if s := st.Server["b2"]; s.State != "draining" || s.Blocks != 5 || s.Bytes != 327680 || s.Addr != "127.0.0.1:3" {
		t.Errorf("b2: %+v", s)
	}

	_, err = ParseClusterStatus("servers: 1 (1 up)\nserver b0: addr=x state=up\n")
	for _, want := range []string{`"under-replicated"`, `"mover rounds"`, "server line"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("status without %s: error %v", want, err)
		}
	}
}
