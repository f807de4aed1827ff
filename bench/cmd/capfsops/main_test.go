package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSharedOffsetsInterleaveAndCover(t *testing.T) {
	r := run{layout: "shared", mnts: []string{"a", "b", "c"}, bs: 100}
	seen := map[int64]int{}
	for i := range 3 {
		for k := int64(0); k < 4; k++ {
			seen[r.offset(i, k)]++
		}
	}
	for off := int64(0); off < 1200; off += 100 {
		if seen[off] != 1 {
			t.Fatalf("offset %d written %d times, want once", off, seen[off])
		}
	}
	if got := (run{layout: "separate", bs: 100}).offset(2, 3); got != 300 {
		t.Fatalf("separate offset(2,3) = %d, want 300", got)
	}
}

func TestStampDetectsForeignData(t *testing.T) {
	r := run{bs: 64, seed: 9}
	a, b := r.content(0), r.content(1)
	if bytes.Equal(a, b) {
		t.Fatal("two clients got the same content: blocks would deduplicate")
	}
	sh, sep := run{bs: 64, seed: 9, layout: "shared"}, run{bs: 64, seed: 9, layout: "separate"}
	if bytes.Equal(sh.content(0), sep.content(0)) {
		t.Fatal("the shared and separate files of one client got the same content")
	}
	stamp(a, 128, 9)
	if !stampOK(a, 128, 9) {
		t.Fatal("own stamp not recognized")
	}
	if stampOK(a, 192, 9) || stampOK(a, 128, 8) || stampOK(make([]byte, 64), 128, 9) {
		t.Fatal("foreign offset, seed or a hole accepted")
	}
}

func TestReportRatiosAndMarks(t *testing.T) {
	dir := t.TempDir()
	hdr := "run\tpreset\tclients\tlayout\top\tbs\tMiB_s\tops\tsecs\tcapped\terrors\tbad_reqs\tmount_cpu_s\tmeta_cpu_s\tblockd_cpu_s\tmachine_busy_pct\tblockd_rchar_MiB\tblockd_wchar_MiB\n"
	rows := hdr +
		"1\trelaxed\t2\tshared\twrite\t65536\t100\t1\t1\t0\t0\t0\t1\t0\t0\t50\t400\t9\n" +
		"2\trelaxed\t2\tshared\twrite\t65536\t300\t1\t1\t0\t0\t0\t1\t0\t0\t50\t400\t9\n" +
		"3\trelaxed\t2\tshared\twrite\t65536\t200\t1\t1\t0\t0\t0\t1\t0\t0\t50\t400\t9\n" +
		"1\tposix\t2\tshared\twrite\t65536\t50\t1\t1\t1\t0\t3\t1\t0\t0\t50\t400\t9\n"
	cont := "run\tpreset\tclients\tbs\tops\tops_s\tsecs\terrors\tcommits\tconflicts\tredo_retries\tcommits_failed\tretries_s\tconflicts_s\n" +
		"1\trelaxed\t2\t4096\t10\t400\t1\t0\t10\t0\t0\t0\t0\t0\n" +
		"1\tposix\t2\t4096\t10\t100\t1\t0\t10\t5\t5\t2\t5.0\t5.0\n"
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var out strings.Builder
	if err := runReport([]string{"-rows", write("rows.tsv", rows), "-contend", write("c.tsv", cont)}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	// posix 50 against the relaxed median 200: 0.25; the posix cell is capped with 3 bad requests;
	// 400 MiB into the block servers for its 50 MiB written: 8.0.
	for _, want := range []string{"50.0*~3", "200.0", "0.25", "100 (5.0)", "8.0"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if m := median([]float64{3, math.NaN(), 1, 2, 10}); m != 2.5 {
		t.Errorf("median = %v, want 2.5 (NaN ignored)", m)
	}
}
