package gateway_test

import (
	"fmt"
	"testing"

	"tessera/internal/gateway"
	"tessera/internal/meta"
)

// TestRendezvous: every gateway owns a fair share of inodes, and when one
// leaves only the inodes it owned move, each to the one that came next
// in its order (what a mount asks when the owner is dead).
func TestRendezvous(t *testing.T) {
	names := []string{"gw-a", "gw-b", "gw-c"}
	const n = 3000
	owned := map[int]int{}
	for ino := meta.Ino(1); ino <= n; ino++ {
		order := gateway.Rendezvous(ino, names)
		owned[order[0]]++
		without := gateway.Rendezvous(ino, []string{names[order[0]], names[order[2]]}) // order[1] left
		want := 0                                                                      // the owner stays
		if got := without[0]; got != want {
			t.Fatalf("inode %d: owner %s changed when %s left", ino, names[order[0]], names[order[1]])
		}
		rest := gateway.Rendezvous(ino, []string{names[order[1]], names[order[2]]}) // the owner left
		if rest[0] != 0 {
			t.Fatalf("inode %d: with owner %s gone, %s owns it, want the next, %s", ino, names[order[0]], names[order[2]], names[order[1]])
		}
	}
	for i, c := range owned {
		if c < n/3*8/10 {
			t.Errorf("%s owns %d of %d inodes; want about a third", names[i], c, n)
		}
	}
	t.Log(fmt.Sprint(owned))
}
