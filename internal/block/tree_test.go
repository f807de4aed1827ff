package block

import (
	"math/rand/v2"
	"testing"
)

// TestTreeSumMatchesSum: a Tree's hash is BLAKE3 of the content, at the
// lengths where the tree's shape turns (chunk and group edges, powers of
// two of groups and one past them).
func TestTreeSumMatchesSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 4<<20+3000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	lens := []int{0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 3000, groupSize - 1, groupSize, groupSize + 1,
		2 * groupSize, 3*groupSize - 5, 3 * groupSize, 4 * groupSize, 5*groupSize + 1024, 7 * groupSize,
		255 * groupSize, 256 * groupSize, 256*groupSize + 1, 4<<20 + 3000}
	for range 20 {
		lens = append(lens, r.IntN(len(data)+1))
	}
	for _, n := range lens {
		tr := NewTree(data[:n])
		if got, want := tr.Sum(), Sum(data[:n]); got != want {
			t.Fatalf("NewTree of %d bytes: %s, Sum %s", n, got.Short(), want.Short())
		}
		if tr.Len() != n {
			t.Fatalf("NewTree of %d bytes: Len %d", n, tr.Len())
		}
	}
}

// TestTreeUpdateRandomEdits is the property the client's commits rest on:
// after any sequence of overwrites, appends, writes past the end (a gap of
// zeros) and truncations, each applied with Update given the ranges
// written, the tree's hash equals BLAKE3 of the content, and the tree it
// was updated from still gives its own content's hash.
func TestTreeUpdateRandomEdits(t *testing.T) {
	const max = 1<<20 + 5000
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 99))
		var content []byte
		n := r.IntN(3 * groupSize)
		content = make([]byte, n)
		fill(r, content)
		tr := NewTree(content)
		for step := range 150 {
			prev, prevSum := tr, Sum(content)
			next := append([]byte(nil), content...)
			var changed [][2]int64
			for range 1 + r.IntN(4) {
				switch k := r.IntN(10); {
				case k < 5: // overwrite (possibly growing)
					off, l := r.IntN(len(next)+1), 1+r.IntN(8192)
					next = writeAt(next, off, l, r, max)
					changed = append(changed, [2]int64{int64(off), int64(off + l)})
				case k < 8: // append
					off, l := len(next), 1+r.IntN(20000)
					next = writeAt(next, off, l, r, max)
					changed = append(changed, [2]int64{int64(off), int64(off + l)})
				case k < 9: // a write past the end: zeros between
					off, l := len(next)+r.IntN(40000), 1+r.IntN(3000)
					next = writeAt(next, off, l, r, max)
					changed = append(changed, [2]int64{int64(off), int64(off + l)})
				default: // truncate: what a later write grows back differs
					l := r.IntN(len(next) + 1)
					next = next[:l]
					changed = append(changed, [2]int64{int64(l), max})
				}
			}
			tr = prev.Update(next, changed)
			if got, want := tr.Sum(), Sum(next); got != want {
				t.Fatalf("seed %d step %d: %d -> %d bytes, changed %v: Update gives %s, Sum %s",
					seed, step, len(content), len(next), changed, got.Short(), want.Short())
			}
			if prev.Sum() != prevSum {
				t.Fatalf("seed %d step %d: Update changed the tree it was called on", seed, step)
			}
			if fresh := NewTree(next); fresh.Sum() != tr.Sum() {
				t.Fatalf("seed %d step %d: NewTree %s, Update %s", seed, step, fresh.Sum().Short(), tr.Sum().Short())
			}
			content = next
		}
	}
}

// TestTreeUpdateTrustsRanges: Update rehashes only the groups the ranges
// touch; a change it was not told of is not seen (the caller vouches).
// This pins down that the test above exercises the incremental path.
func TestTreeUpdateTrustsRanges(t *testing.T) {
	data := make([]byte, 10*groupSize)
	fill(rand.New(rand.NewPCG(3, 4)), data)
	tr := NewTree(data)
	next := append([]byte(nil), data...)
	next[5*groupSize+7] ^= 1
	if tr.Hashed() != len(data) {
		t.Fatalf("NewTree hashed %d bytes of %d", tr.Hashed(), len(data))
	}
	if got := tr.Update(next, nil).Sum(); got != tr.Sum() {
		t.Fatalf("an untold change was rehashed: Update is not incremental")
	}
	up := tr.Update(next, [][2]int64{{5*groupSize + 7, 5*groupSize + 8}})
	if got, want := up.Sum(), Sum(next); got != want {
		t.Fatalf("told change: %s, want %s", got.Short(), want.Short())
	}
	if up.Hashed() != groupSize {
		t.Fatalf("a one-byte change rehashed %d bytes, want one group (%d)", up.Hashed(), groupSize)
	}
	longer := append(append([]byte(nil), data...), 1, 2, 3)
	grown := tr.Update(longer, nil)
	if grown.Sum() != Sum(longer) || grown.Hashed() != 3 {
		t.Fatalf("a 3-byte append: hashed %d bytes (want 3), sum right: %v", grown.Hashed(), grown.Sum() == Sum(longer))
	}
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// writeAt writes l random bytes at off into b (zeros in any gap), keeping
// b within max bytes.
func writeAt(b []byte, off, l int, r *rand.Rand, max int) []byte {
	if off+l > max {
		return b
	}
	for len(b) < off+l {
		b = append(b, 0)
	}
	fill(r, b[off:off+l])
	return b
}

func BenchmarkSum4MiB(b *testing.B) {
	data := make([]byte, 4<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Sum(data)
	}
}

func BenchmarkNewTree4MiB(b *testing.B) {
	data := make([]byte, 4<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		NewTree(data)
	}
}

// BenchmarkTreeUpdate4KiB: a 4 KiB page rewritten in a 4 MiB block.
func BenchmarkTreeUpdate4KiB(b *testing.B) {
	data := make([]byte, 4<<20)
	tr := NewTree(data)
	for b.Loop() {
		tr.Update(data, [][2]int64{{1 << 20, 1<<20 + 4096}})
	}
}
