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
servers: 3 (2 up)
server b0: addr=127.0.0.1:1 state=up blocks=10 bytes=655360
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
