package disk_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/disk"
)

// loseFiles removes the block files of hs behind the store's back: what a
// crash of the machine may do to a small block's file, which Put does not
// fsync (its journal record is).
func loseFiles(t *testing.T, s *disk.Store, hs []block.Hash) {
	t.Helper()
	for _, h := range hs {
		if err := os.Remove(s.Path(h)); err != nil {
			t.Fatal(err)
		}
	}
}

func mustGet(t *testing.T, s *disk.Store, h block.Hash, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), h)
	if err != nil {
		t.Fatalf("Get %s: %v", h.Short(), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get %s: wrong content", h.Short())
	}
}

// A small block whose file was lost is put back from the journal at Open.
func TestJournalRestoresLostFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var datas [][]byte
	var hs []block.Hash
	for i := range 3 {
		d := blocktest.Data(uint64(i), 4000+i)
		datas, hs = append(datas, d), append(hs, put(t, s, d))
	}
	s.Close()
	loseFiles(t, s, hs)
	s = open(t, dir)
	for i, h := range hs {
		mustGet(t, s, h, datas[i])
	}
	if b, _, _ := s.Usage(context.Background()); b != 3 {
		t.Fatalf("Usage after replay: %d blocks, want 3", b)
	}
}

// A block larger than the journal takes is durable in its own file.
func TestJournalSkipsLargeBlocks(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	big := blocktest.Data(7, disk.JournalMax+1)
	put(t, s, big)
	s.Close()
	fi, err := os.Stat(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := os.ReadFile(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(j, big[:4096]) {
		t.Fatalf("the journal (%d bytes) holds a block of %d bytes", fi.Size(), len(big))
	}
}

// Replay stops at a torn record: the records before it are put back, the
// torn one (never acknowledged) is not, and the store opens.
func TestJournalStopsAtTornRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := blocktest.Data(1, 5000), blocktest.Data(2, 6000)
	ha, hb := put(t, s, a), put(t, s, b)
	s.Close()
	loseFiles(t, s, []block.Hash{ha, hb})
	name := filepath.Join(dir, "journal")
	j, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(j, b)
	if at < 0 {
		t.Fatal("block b is not in the journal")
	}
	j[at+len(b)/2] ^= 0xff
	if err := os.WriteFile(name, j, 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	mustGet(t, s, ha, a)
	if _, err := s.Get(context.Background(), hb); !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("Get of the torn record's block: %v, want ErrNotFound", err)
	}
}

// When a half is full the records go to the other and the full one is
// checkpointed in the background: its files are made durable and its
// records are not replayed any more.
func TestJournalCheckpointStartsOver(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.SetJournalRecs(4)
	var hs []block.Hash
	for i := range 10 {
		hs = append(hs, put(t, s, blocktest.Data(uint64(10+i), 3000)))
		if i == 4 && s.JournalHalf() != 1 {
			t.Fatalf("after 5 records of 4 a half, records go to half %d, want 1", s.JournalHalf())
		}
	}
	if h := s.JournalHalf(); h != 0 {
		t.Fatalf("after 10 records of 4 a half, records go to half %d, want 0", h)
	}
	s.WaitCheckpoint()
	s.Close()
	// Records 0-3 (half 0) and 4-7 (half 1) were checkpointed: their
	// files were fsync'd. 8 and 9 are half 0's records now. Lose all
	// ten files: only 8 and 9 come back from the journal.
	loseFiles(t, s, hs)
	s = open(t, dir)
	for i, h := range hs {
		_, err := s.Get(context.Background(), h)
		if i >= 8 {
			mustGet(t, s, h, blocktest.Data(uint64(10+i), 3000))
		} else if !errors.Is(err, block.ErrNotFound) {
			t.Fatalf("Get %d (checkpointed): %v, want ErrNotFound (not replayed)", i, err)
		}
	}
}

// A full half waits for its checkpoint (the kernel writes its files back
// meanwhile) until the other half fills, which hurries it; a store closed
// meanwhile leaves its records for the next Open.
func TestJournalCheckpointWaits(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.SetJournalRecs(4)
	s.SetCheckpointDelay(time.Hour)
	var hs []block.Hash
	for i := range 9 { // the ninth needs half 0 back: it hurries its checkpoint
		hs = append(hs, put(t, s, blocktest.Data(uint64(40+i), 2000)))
	}
	if h := s.JournalHalf(); h != 0 {
		t.Fatalf("after 9 records of 4 a half, records go to half %d, want 0", h)
	}
	s.Close() // half 1's checkpoint has not run: stopped
	loseFiles(t, s, hs)
	s = open(t, dir)
	for i, h := range hs {
		_, err := s.Get(context.Background(), h)
		if i >= 4 {
			mustGet(t, s, h, blocktest.Data(uint64(40+i), 2000))
		} else if !errors.Is(err, block.ErrNotFound) {
			t.Fatalf("Get %d (checkpointed when hurried): %v, want ErrNotFound", i, err)
		}
	}
}

// crashChildEnv names the store directory of TestJournalCrashChild.
const crashChildEnv = "TESSERA_DISK_CRASH_DIR"

// TestJournalCrashChild is the process TestJournalKill9 kills: it puts
// blocks and prints "acked I" after each Put returns; with
// TESSERA_DISK_CRASH_HANG=N it prints "written N" once the record of
// block N is written and hangs there, before its fdatasync.
func TestJournalCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("run by TestJournalKill9")
	}
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	hang, _ := strconv.Atoi(os.Getenv("TESSERA_DISK_CRASH_HANG"))
	n := 0
	s.SetBeforeJournalSync(func() {
		if n == hang && hang > 0 {
			fmt.Printf("written %d\n", n)
			select {}
		}
	})
	for ; n < 40; n++ {
		d := crashData(n)
		if err := s.Put(context.Background(), block.Sum(d), d); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("acked %d\n", n)
	}
	select {}
}

func crashData(i int) []byte { return blocktest.Data(uint64(100+i), 2000+37*i) }

// A block server killed with SIGKILL between writing a record and
// acknowledging it, or after acknowledging, opens again with every
// acknowledged block whole — even when the files the kernel had not
// written yet are lost too (removed here) — and the one in flight either
// whole or absent.
func TestJournalKill9(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang int
	}{{"after acks", 0}, {"between write and ack", 25}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestJournalCrashChild$")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("TESSERA_DISK_CRASH_HANG=%d", tc.hang))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			acked := -1
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 2 && f[0] == "acked" {
					acked, _ = strconv.Atoi(f[1])
				}
				if (tc.hang == 0 && acked == 30) || (len(f) == 2 && f[0] == "written") {
					break
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if acked < 0 {
				t.Fatal("the child acknowledged no Put")
			}
			if tc.hang > 0 && acked != tc.hang-1 {
				t.Fatalf("the child acknowledged up to %d, want %d", acked, tc.hang-1)
			}
			// Lose every acknowledged file (none was fsync'd: fewer
			// records than a generation holds).
			var hs []block.Hash
			for i := 0; i <= acked; i++ {
				h := block.Sum(crashData(i))
				x := h.String()
				if err := os.Remove(filepath.Join(dir, "blocks", x[0:2], x[2:4], x)); err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			}
			s := open(t, dir)
			for i, h := range hs {
				mustGet(t, s, h, crashData(i))
			}
			if tc.hang > 0 {
				d := crashData(tc.hang)
				got, err := s.Get(context.Background(), block.Sum(d))
				if err != nil && !errors.Is(err, block.ErrNotFound) {
					t.Fatalf("Get of the block in flight: %v", err)
				}
				if err == nil && !bytes.Equal(got, d) {
					t.Fatal("the block in flight came back with the wrong content")
				}
			}
			if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
				t.Fatalf("tmp/ after Open holds %d files, want none", len(left))
			}
			n := 0
			s.List(context.Background(), func(block.Info) error { n++; return nil })
			if b, _, _ := s.Usage(context.Background()); b != int64(n) {
				t.Fatalf("Usage counts %d blocks, List %d", b, n)
			}
		})
	}
}
